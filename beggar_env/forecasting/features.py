"""Features for the learned forecasters, from a batch of observations (a dict of fields
with a leading batch axis, as the vector env and ``Dataset.fields`` give them).

``public_features`` reads only what is on the table; ``counted_features`` adds what a
card-counter knows (``observation="counted"``); ``full_features`` reads every hand in order
(``observation="full"``, the oracle's view). All are float32 matrices, one row per
position. The progress through the game is never a feature: a forecaster cannot know it.
"""

import numpy as np

from ..core import DECK_SIZE, N_CLASSES

UNKNOWN, EMPTY = -2, -1


def _one_hot(values, n):
    out = np.zeros((len(values), n), np.float32)
    out[np.arange(len(values)), np.clip(values, 0, n - 1)] = 1
    return out


def _class_counts(cards):
    """How many cards of each class the last axis holds (ignoring -1 and -2)."""
    return np.stack([(cards == c).sum(axis=-1) for c in range(N_CLASSES)], axis=-1).astype(np.float32)


def public_features(obs):
    """Hand sizes and shares, the seat to play, the payment owed and to whom, who is still
    in, the pile's size and its cards by class, the last card, cards and tricks so far."""
    hands = obs["hand_sizes"].astype(np.float32)
    n, p = hands.shape
    pile = obs["pile"]
    size = obs["pile_size"].astype(np.int64)
    last = np.where(size > 0, pile[np.arange(n), np.maximum(size - 1, 0)], N_CLASSES)
    court = np.where(obs["court"] >= 0, obs["court"], p)
    return np.hstack(
        [
            hands,
            hands / DECK_SIZE,
            _one_hot(obs["turn"], p),
            _one_hot(obs["owed"], N_CLASSES),
            _one_hot(court, p + 1),
            obs["alive"].astype(np.float32),
            size[:, None].astype(np.float32),
            _class_counts(pile),
            _one_hot(last, N_CLASSES + 1),
            np.log1p(obs["cards"].astype(np.float32))[:, None],
            np.log1p(obs["tricks"].astype(np.float32))[:, None],
        ]
    )


def counted_features(obs):
    """The public features, and for each hand: its unseen dealt cards, its known cards by
    class, its next card (or unknown), and how far down its first known court card lies;
    the unseen cards by class, and how many classes are still unseen."""
    known = obs["known"]
    n, p, slots = known.shape
    hidden = (known == UNKNOWN).sum(axis=2).astype(np.float32)
    by_class = _class_counts(known).reshape(n, p * N_CLASSES)
    top = known[:, :, 0]
    next_card = np.where(top == UNKNOWN, N_CLASSES, np.where(top == EMPTY, N_CLASSES + 1, top))
    is_court = known > 0
    first_court = np.where(is_court.any(axis=2), is_court.argmax(axis=2), slots).astype(np.float32)
    unseen = obs["unseen"].astype(np.float32)
    return np.hstack(
        [
            public_features(obs),
            hidden,
            by_class,
            _one_hot(next_card.reshape(-1), N_CLASSES + 2).reshape(n, p * (N_CLASSES + 2)),
            first_court,
            unseen,
            (unseen > 0).sum(axis=1, keepdims=True).astype(np.float32),
        ]
    )


TOP = 8  # cards from the top of each hand, one-hot, in the full features
DEPTHS = (0, 8, 16, 26, 52)  # the stretches of a hand whose cards are counted by class


def full_features(obs):
    """The public features, and for each hand (``hands``: every card, from the top): its
    cards by class; its first :data:`TOP` cards one-hot over (none, numeral, J, Q, K, A); its
    cards by class in each stretch of :data:`DEPTHS` from the top (0-7, 8-15, 16-25, 26-51);
    how far down its first court card lies, and its first card of each court class."""
    hands = obs["hands"]
    n, p, slots = hands.shape
    by_class = _class_counts(hands).reshape(n, p * N_CLASSES)
    top = _one_hot((hands[:, :, :TOP] + 1).reshape(-1), N_CLASSES + 1).reshape(n, p * TOP * (N_CLASSES + 1))
    stretches = [_class_counts(hands[:, :, lo:hi]).reshape(n, p * N_CLASSES) for lo, hi in zip(DEPTHS, DEPTHS[1:])]
    depths = []
    for court in (hands > 0, *(hands == c for c in range(1, N_CLASSES))):
        depths.append(np.where(court.any(axis=2), court.argmax(axis=2), slots).astype(np.float32))
    return np.hstack([public_features(obs), by_class, top, *stretches, *depths])


FEATURES = {"public": public_features, "counted": counted_features, "full": full_features}

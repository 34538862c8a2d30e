"""The per-card event encoding a sequence model reads: one float vector per decision point of
``Beggar-v0``, a function of that step's observation alone (so that a recurrent model
stepping through the env needs no state but its own).

Each observation is taken just after a card is played (or at the start), so its pile shows
the card just played on top; when a trick ends the pile is gone and the winner leads. What
a step says, for ``p`` players (``docs/forecasting.md``, "The event encoding"):

* ``card``: the class of the card just played, one-hot over (none, numeral, J, Q, K, A):
  none at the start and when a pile was just taken;
* ``taken``: 1 when a pile was just taken (the pile is empty after the first card): the
  seat to play took it, and with it every card played since the last take and, unless the
  payer ran out, one more numeral (the card that ended the payment, never shown on top);
* ``turn`` (one-hot over the seats), ``owed`` (one-hot 0-4), ``court`` (one-hot over none
  and the seats), ``hand_sizes`` / 52, ``alive``, ``pile_size`` / 52, and the time:
  ln(1 + cards) / 8 and ln(1 + tricks) / 8.

The ``counted`` level adds what a card-counter knows: ``unseen`` over each class's total
(36 numerals, 4 of each court card) and, per seat, the known cards in hand by class over the class total,
the unknown ones / 52, and the first ``TOP_CARDS`` cards from the top one-hot over (none,
unknown, numeral, J, Q, K, A). The ``full`` level gives the same block from ``hands`` (no
card unknown, ``unseen`` all 0).
"""

import numpy as np

from .. import checks, core, task

LEVELS = ("public", "counted", "full")
TOP_CARDS = 4  # cards from the top of each hand, one-hot, in the counted and full encodings
CLASS_TOTALS = np.array([36, 4, 4, 4, 4], np.float32)  # numerals, J, Q, K, A in the deck
TIME_SCALE = 8.0  # ln(1 + 8,344) = 9.0: the time features stay near [0, 1]


def width(n_players: int, level: str = "public") -> int:
    """The length of one step's encoding."""
    p = checks.n_players(n_players)
    level = checks.choice("observation", level, LEVELS)
    public = 6 + 1 + p + 5 + (p + 1) + p + p + 1 + 2
    if level == "public":
        return public
    return public + core.N_CLASSES + p * (core.N_CLASSES + 1 + TOP_CARDS * (core.N_CLASSES + 2))


def encode(obs: dict, level: str = "public") -> np.ndarray:
    """The encoding (float32, ``(n, width)``) of a batch of observations (a dict of fields with
    a leading batch axis, as the vector env and ``Dataset.fields`` give them; one
    observation without it gives ``(width,)``) at ``level``: it reads only that level's
    fields."""
    level = checks.choice("observation", level, LEVELS)
    needed = {"public": "cards", "counted": "known", "full": "hands"}[level]
    if not isinstance(obs, dict) or needed not in obs:
        raise ValueError(f"obs: the {level} encoding needs observations with a {needed!r} field")
    single = np.ndim(obs["cards"]) == 0
    if single:
        obs = {name: np.asarray(value)[None] for name, value in obs.items()}
    hand_sizes = np.asarray(obs["hand_sizes"])
    n, p = hand_sizes.shape
    pile_size = np.asarray(obs["pile_size"]).astype(np.int64)
    pile = np.asarray(obs["pile"])
    cards = np.asarray(obs["cards"]).astype(np.float32)
    top = np.where(pile_size > 0, pile[np.arange(n), np.maximum(pile_size - 1, 0)] + 1, 0)
    parts = [
        _one_hot(top, 6),
        ((pile_size == 0) & (cards > 0)).astype(np.float32)[:, None],
        _one_hot(np.asarray(obs["turn"]), p),
        _one_hot(np.asarray(obs["owed"]), 5),
        _one_hot(np.asarray(obs["court"]) + 1, p + 1),
        hand_sizes.astype(np.float32) / core.DECK_SIZE,
        np.asarray(obs["alive"]).astype(np.float32),
        pile_size.astype(np.float32)[:, None] / core.DECK_SIZE,
        np.log1p(cards)[:, None] / TIME_SCALE,
        np.log1p(np.asarray(obs["tricks"]).astype(np.float32))[:, None] / TIME_SCALE,
    ]
    if level != "public":
        hands = np.asarray(obs["known"] if level == "counted" else obs["hands"])
        unseen = np.asarray(obs["unseen"]) if level == "counted" else np.zeros((n, core.N_CLASSES))
        parts.append(unseen.astype(np.float32) / CLASS_TOTALS)
        parts.append(_hand_block(hands))
    out = np.concatenate(parts, axis=1, dtype=np.float32)
    return out[0] if single else out


def _one_hot(index, size):
    return np.eye(size, dtype=np.float32)[np.asarray(index, np.int64)]


def _hand_block(hands):
    """Per seat: known cards by class / the class's total, unknown / 52, the top cards one-hot."""
    n, p, _ = hands.shape
    by_class = np.stack([(hands == c).sum(axis=2) for c in range(core.N_CLASSES)], axis=2) / CLASS_TOTALS
    unknown = (hands == task.UNKNOWN).sum(axis=2, keepdims=True) / core.DECK_SIZE
    tops = _one_hot(hands[:, :, :TOP_CARDS] + 2, core.N_CLASSES + 2)  # -1 none -> 1, -2 unknown -> 0
    tops = tops[..., [1, 0, 2, 3, 4, 5, 6]]  # (none, unknown, classes), as documented
    return np.concatenate([by_class, unknown, tops.reshape(n, p, -1)], axis=2).reshape(n, -1).astype(np.float32)

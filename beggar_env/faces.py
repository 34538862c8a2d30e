"""Card faces: each card's own rank and suit, carried beside the classes the rules play.

The rules need only a card's class (:class:`~beggar_env.core.Card`); at a real table every
card also shows its face, one of 52. A face is a card id of the standard deck,
``rank * 4 + suit`` (ranks 2..A as 0..12, suits C D H S as 0..3: ``core.CLASS_OF_CARD_ID``
gives its class). Faces change no game: they are a view of it, so every deal, dataset and
test set keeps its classes and outcomes.

Which card has which face, by a fixed rule:

* a random deal (``core.shuffled_deals``) is a shuffled standard deck, so its faces are
  the shuffled card ids themselves, dealt as the classes are (the same seed, the same faces);
* a given deal takes each card's face from its token when it names rank and suit
  (``"10H"``); every other card, in dealing order (hand after hand, each from the top),
  takes the least face not named anywhere in the deal nor taken before it: of its rank when
  the token has one (``"7"``, ``"K"``), else (``"-"``) of any numeral rank, once the cards
  with a rank have theirs (:func:`deal_faces`). Faces in order: 2C, 2D, 2H, 2S, 3C, ... AS.

During play the faces ride along with the cards: :func:`step_card` plays one card with
:func:`beggar_env.core.step_card` and moves its face as the engine moved the card, in
ring buffers laid out as the state's (``faces[p, k]`` is the face of ``s.hands[p, k]``,
``pile[k]`` of ``s.pile[k]``). The engine decides everything; this only follows.
"""

import numpy as np

from . import core, deals
from .core import Card
from .jit import jit

N_FACES = core.DECK_SIZE
NO_FACE = -1
FACE_NAMES = tuple(rank + suit for rank in deals.RANKS for suit in deals.SUITS)


def new_faces(n_games, n_players, capacity):
    """Face buffers for a batch: ``(hands (n, p, capacity), pile (n, capacity))``, int8."""
    return (
        np.full((n_games, n_players, capacity), NO_FACE, np.int8),
        np.full((n_games, capacity), NO_FACE, np.int8),
    )


def deal_faces(deal: "str | deals.Deal") -> np.ndarray:
    """The faces (int8, hand after hand, each from the top) of a given deal, by the rule
    above. Refuses a deal with more numerals than the standard deck (``parse_deal``
    refuses a card named twice and a fifth card of a rank)."""
    deal = deals.parse_deal(deal)
    tokens = [token for hand in deal.hands for token in hand]
    named = [_named_face(token) for token in tokens]
    free = [f for f in range(N_FACES) if f not in named]  # parse_deal refused a face named twice
    faces = np.array(named, np.int8)
    # Cards with a rank take a face of that rank before numerals of unknown rank take theirs.
    for k in sorted(range(len(tokens)), key=lambda k: tokens[k] == "-"):
        if faces[k] == NO_FACE:
            faces[k] = _take_face(free, tokens[k])
    return faces


def _take_face(free, token):
    rank = token.rstrip(deals.SUITS)
    for face in free:
        if (rank == "-" and core.CLASS_OF_CARD_ID[face] == Card.NUMERAL) or deals.RANKS[face // 4] == rank:
            free.remove(face)
            return face
    what = "numerals" if rank == "-" else f"cards of rank {rank}"
    raise ValueError(f"deal has more {what} than the standard deck: its cards cannot all have distinct faces")


def _named_face(token):
    rank, suit = token.rstrip(deals.SUITS), token[len(token.rstrip(deals.SUITS)) :]
    if not suit or rank == "-":
        return NO_FACE
    return deals.RANKS.index(rank) * 4 + deals.SUITS.index(suit)


def given_faces(faces_list, n_cards):
    """Pack the faces of given deals (one array each, as :func:`deal_faces` gives) into one
    int8 array ``(n_games, n_cards)``, the layout of ``deals.pack_deals``' cards."""
    packed = np.full((len(faces_list), n_cards), NO_FACE, np.int8)
    for i, faces in enumerate(faces_list):
        packed[i, : len(faces)] = faces
    return packed


@jit
def deal_into(s, faces, pile, deals_, given, i, deck):
    """Write the faces of game ``i`` of a batch's ``deals_`` (``core.given_deals`` or
    ``core.shuffled_deals``) into ``faces`` (seat, ring slot) and clear ``pile``, for the
    state ``s`` that ``core.deal`` has just dealt. ``given`` holds the given deals' faces
    (``(n_games, n_cards)``, :func:`given_faces`); ``deck`` is scratch for 52 card ids."""
    cards, hand_sizes, seed, first = deals_
    n_players = faces.shape[0]
    faces[:] = NO_FACE
    pile[:] = NO_FACE
    if cards.shape[0] > 0:
        start = 0
        for p in range(n_players):
            for k in range(hand_sizes[i, p]):
                faces[p, k] = given[i, start + k]
            start += hand_sizes[i, p]
    else:
        core.shuffle_deck(core.derive_key(seed, first + i), deck)
        for k in range(core.DECK_SIZE):
            faces[k % n_players, k // n_players] = deck[k]


@jit
def step_card(s, faces, pile):
    """Play one card of ``s`` (``core.step_card``) and move the faces as the engine moved
    the cards. Returns the face of the card played."""
    mask = s.pile.shape[0] - 1
    seat = s.turn
    face = faces[seat, s.head[seat] & mask]
    pile[s.pile_len] = face
    n_pile = s.pile_len + 1
    n_players = s.held.shape[0]
    taken = np.empty(n_players, np.int64)
    for p in range(n_players):
        taken[p] = s.taken[p]
    core.step_card(s)
    for p in range(n_players):
        if s.taken[p] != taken[p]:  # p took the pile: it lies under p's hand, in play order
            end = s.head[p] + s.held[p] - n_pile
            for k in range(n_pile):
                faces[p, (end + k) & mask] = pile[k]
                pile[k] = NO_FACE
    return face


@jit
def hand_faces(s, faces, p, out):
    """The faces of seat ``p``'s hand from the top into ``out`` (int8), NO_FACE after the
    last card; returns how many."""
    mask = s.pile.shape[0] - 1
    n = s.held[p]
    for k in range(out.shape[0]):
        out[k] = faces[p, (s.head[p] + k) & mask] if k < n else NO_FACE
    return n

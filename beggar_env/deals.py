"""Deals: the :class:`Deal` type, its two text notations, and random deals.

Compact notation (the record lists'): one string per player, leftmost card = top of the
hand, ``-`` a numeral, ``J Q K A`` court cards, players separated by ``/``, seat 0 first::

    ---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q

Rank notation: tokens ``2`` .. ``10``, ``J``, ``Q``, ``K``, ``A``, each optionally followed
by a suit (``C D H S`` or ``♣ ♦ ♥ ♠``), separated by spaces or commas::

    10H 2C JS / QD, 7, A

A deal is always played exactly as given: suits and numeral ranks never change a game.
"""

import re
from dataclasses import dataclass

import numpy as np

from . import core

RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUITS = "CDHS"
_SUIT_SYMBOLS = {"♣": "C", "♦": "D", "♥": "H", "♠": "S", "♧": "C", "♢": "D", "♡": "H", "♤": "S"}
_CLASS_OF_RANK = {rank: max(0, i - 8) for i, rank in enumerate(RANKS)}
_CLASS_OF_RANK["-"] = core.NUMERAL  # a numeral of unknown rank
_TOKEN = re.compile(r"^(?:(10|[2-9]|[JQKA])([CDHS]?)|(-)())$")  # '-': a numeral, no suit
_RANK_HINTS = set("0123456789,CDHScdhs") | set(_SUIT_SYMBOLS)
_EXPECTED = "expected 2-10, J, Q, K or A, optionally with a suit C, D, H, S"


@dataclass(frozen=True)
class Deal:
    """The hands of a deal, seat 0 first, each from its top card down.

    Each card is a token: ``"-"`` (a numeral of unknown rank), a rank ``"2"`` .. ``"10"``,
    ``"J"``, ``"Q"``, ``"K"``, ``"A"``, optionally followed by a suit letter (``"10H"``).
    Build one with :func:`parse_deal`, :func:`random_deal` or :meth:`from_classes`;
    ``str(deal)`` gives its text back (see :func:`format_deal`).
    """

    hands: tuple

    def __post_init__(self):
        hands = tuple(tuple(hand) for hand in self.hands)
        object.__setattr__(self, "hands", hands)
        _validate(hands)

    @property
    def n_players(self):
        return len(self.hands)

    @property
    def n_cards(self):
        return sum(len(hand) for hand in self.hands)

    @property
    def hand_sizes(self):
        return tuple(len(hand) for hand in self.hands)

    def classes(self):
        """The card classes (0 numeral, 1-4 J Q K A), all hands in one int8 array."""
        return np.array(
            [_CLASS_OF_RANK[token.rstrip(SUITS)] for hand in self.hands for token in hand],
            np.int8,
        )

    @classmethod
    def from_classes(cls, hands):
        """A deal from per-hand sequences of card classes (0 numeral, 1-4 J Q K A)."""
        tokens = []
        for seat, hand in enumerate(hands):
            for position, c in enumerate(hand, 1):
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c <= core.ACE:
                    raise ValueError(f"seat {seat}, card {position}: {c!r} is not a card class (0-4)")
            tokens.append(tuple(core.CLASS_SYMBOLS[int(c)] for c in hand))
        return cls(tuple(tokens))

    def __str__(self):
        return format_deal(self)


def parse_deal(text):
    """Parse a deal in compact or rank notation (see the module docstring).

    A :class:`Deal` is returned unchanged. Raises ``ValueError`` naming the seat, the card
    (counted from the top, from 1) and the offending text.
    """
    if isinstance(text, Deal):
        return text
    if not isinstance(text, str):
        raise TypeError(f"a deal must be a string or a Deal, not {type(text).__name__}")
    parts = text.split("/")
    _check_player_count(len(parts), text)
    stripped = [part.strip() for part in parts]
    rank_notation = any(ch in _RANK_HINTS for ch in text) or any(
        len(part.split()) > 1 for part in stripped
    )
    parse_hand = _parse_rank_hand if rank_notation else _parse_compact_hand
    return Deal(tuple(parse_hand(seat, part) for seat, part in enumerate(stripped)))


def _parse_compact_hand(seat, text):
    hand = []
    for position, symbol in enumerate(text, 1):
        token = symbol.upper()
        if token not in core.CLASS_SYMBOLS:
            raise ValueError(
                f"seat {seat}, card {position}: unknown symbol {symbol!r} in {text!r} "
                "(compact notation uses - J Q K A)"
            )
        hand.append(token)
    return tuple(hand)


def _parse_rank_hand(seat, text):
    for symbol, letter in _SUIT_SYMBOLS.items():
        text = text.replace(symbol, letter)
    hand = []
    for position, word in enumerate(re.split(r"[\s,]+", text.strip()) if text.strip() else [], 1):
        match = _TOKEN.match(word.upper())
        if not match:
            raise ValueError(f"seat {seat}, card {position}: unknown card {word!r} ({_EXPECTED})")
        hand.append(word.upper())
    return tuple(hand)


def _check_player_count(n_players, text):
    if not 2 <= n_players <= 4:
        raise ValueError(
            f"a deal needs 2 to 4 players separated by '/', got {n_players} in {text!r}"
        )


def _validate(hands):
    _check_player_count(len(hands), "/".join(" ".join(hand) for hand in hands))
    seen = {}
    rank_counts = {}
    for seat, hand in enumerate(hands):
        for position, token in enumerate(hand, 1):
            if not isinstance(token, str) or not _TOKEN.match(token):
                raise ValueError(f"seat {seat}, card {position}: unknown card {token!r} ({_EXPECTED})")
            rank, suit = token.rstrip(SUITS), token[len(token.rstrip(SUITS)):]
            if rank == "-":
                continue
            if suit:
                if token in seen:
                    first_seat, first_position = seen[token]
                    raise ValueError(
                        f"seat {seat}, card {position}: {token} appears twice "
                        f"(first at seat {first_seat}, card {first_position})"
                    )
                seen[token] = (seat, position)
            rank_counts[rank] = rank_counts.get(rank, 0) + 1
            if rank_counts[rank] > 4:
                raise ValueError(
                    f"seat {seat}, card {position}: a fifth {rank} "
                    "(a standard deck has four cards of each rank)"
                )
    if not any(hands):
        raise ValueError("a deal needs at least one card")


def format_deal(deal, notation=None):
    """The text of a deal: ``notation="compact"`` (classes only) or ``"ranks"``.

    By default, compact when that loses nothing (every card is ``-`` or a court card
    without a suit), rank notation otherwise, so ``parse_deal(format_deal(d)) == d``.
    """
    deal = parse_deal(deal)
    if notation is None:
        lossless = all(token in core.CLASS_SYMBOLS for hand in deal.hands for token in hand)
        notation = "compact" if lossless else "ranks"
    if notation == "compact":
        classes = iter(deal.classes())
        return "/".join(
            "".join(core.CLASS_SYMBOLS[next(classes)] for _ in hand) for hand in deal.hands
        )
    if notation == "ranks":
        return " / ".join(" ".join(hand) for hand in deal.hands)
    raise ValueError(f"notation must be 'compact' or 'ranks', not {notation!r}")


# ------------------------------------------------------------------- random deals


def as_seed(seed):
    """A uint64 stream seed from ``None`` (fresh entropy), an int or a numpy Generator."""
    if seed is None:
        return np.random.SeedSequence().generate_state(1, np.uint64)[0]
    if isinstance(seed, np.random.Generator):
        return seed.integers(0, 2**64, dtype=np.uint64)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.uint64(int(seed) % 2**64)
    raise TypeError(f"seed must be None, an int or a numpy.random.Generator, not {type(seed).__name__}")


def check_n_players(n_players):
    if isinstance(n_players, bool) or not isinstance(n_players, (int, np.integer)):
        raise TypeError(f"n_players must be an int, not {type(n_players).__name__}")
    if not 2 <= n_players <= 4:
        raise ValueError(f"n_players must be 2, 3 or 4, not {n_players}")
    return int(n_players)


def shuffled_decks(n_games, seed, first=0):
    """Card ids (rank * 4 + suit) of games ``first ..`` of the random stream ``seed``."""
    decks = np.empty((n_games, core.DECK_SIZE), np.int64)
    core.shuffled_decks(as_seed(seed) if not isinstance(seed, np.uint64) else seed, first, decks)
    return decks


def deal_from_deck(deck, n_players):
    """Deal a deck of card ids one card at a time from seat 0 (first card dealt on top)."""
    tokens = [RANKS[card_id // 4] + SUITS[card_id % 4] for card_id in deck]
    return Deal(tuple(tuple(tokens[seat::n_players]) for seat in range(n_players)))


def random_deals(n_games, n_players=2, seed=None):
    """``n_games`` shuffled standard decks dealt as RULES.md says.

    Game ``i`` is game ``i`` of ``simulate(n_games, n_players=..., seed=seed)`` for the
    same int seed, whatever the number of threads.
    """
    n_players = check_n_players(n_players)
    return [deal_from_deck(deck, n_players) for deck in shuffled_decks(n_games, seed)]


def random_deal(n_players=2, seed=None):
    """One shuffled standard deck dealt as RULES.md says (see :func:`random_deals`)."""
    return random_deals(1, n_players, seed)[0]

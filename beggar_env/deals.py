"""Deals: the :class:`Deal` type, its two text notations, and random deals.

Compact notation (the record lists'): one string per player, leftmost card = top of the
hand, ``-`` a numeral, ``J Q K A`` court cards, players separated by ``/``, seat 0 first::

    ---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q

Rank notation: tokens ``2`` .. ``10``, ``J``, ``Q``, ``K``, ``A``, each optionally followed
by a suit (``C D H S`` or ``♣ ♦ ♥ ♠``), separated by spaces or commas::

    10H 2C JS / QD, 7, A

A deal is always played exactly as given: suits and numeral ranks never change a game.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from . import checks, core
from .core import Card
from .jit import jit

RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUITS = "CDHS"
_SUIT_SYMBOLS = {"♣": "C", "♦": "D", "♥": "H", "♠": "S", "♧": "C", "♢": "D", "♡": "H", "♤": "S"}
_CLASS_OF_RANK = {rank: max(0, i - 8) for i, rank in enumerate(RANKS)}
_CLASS_OF_RANK["-"] = Card.NUMERAL  # a numeral of unknown rank
_TOKEN = re.compile(r"(?:10|[2-9]|[JQKA])[CDHS]?|-")  # '-': a numeral, no suit (always fullmatch)
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

    hands: tuple[tuple[str, ...], ...]

    def __post_init__(self):
        hands = tuple(tuple(hand) for hand in self.hands)
        object.__setattr__(self, "hands", hands)
        _validate(hands)

    @property
    def n_players(self) -> int:
        return len(self.hands)

    @property
    def n_cards(self) -> int:
        return sum(len(hand) for hand in self.hands)

    @property
    def hand_sizes(self) -> tuple[int, ...]:
        return tuple(len(hand) for hand in self.hands)

    def classes(self) -> np.ndarray:
        """The card classes (0 numeral, 1-4 J Q K A), all hands in one int8 array."""
        return np.array(
            [_CLASS_OF_RANK[token.rstrip(SUITS)] for hand in self.hands for token in hand],
            np.int8,
        )

    @classmethod
    def from_classes(cls, hands) -> "Deal":
        """A deal from per-hand sequences of card classes (0 numeral, 1-4 J Q K A)."""
        tokens = []
        for seat, hand in enumerate(hands):
            for position, c in enumerate(hand, 1):
                if not checks.is_integer(c) or not 0 <= c <= Card.ACE:
                    raise ValueError(
                        f"deal, seat {seat}, card {position}: {checks.excerpt(c)} is not a card class (0-4)"
                    )
            tokens.append(tuple(core.CLASS_SYMBOLS[int(c)] for c in hand))
        return cls(tuple(tokens))

    def __str__(self) -> str:
        return format_deal(self)


def parse_deal(text: "str | Deal") -> Deal:
    """Parse a deal in compact or rank notation (see the module docstring).

    A :class:`Deal` is returned unchanged. Raises ``ValueError`` naming the seat, the card
    (counted from the top, from 1) and the offending text.
    """
    if isinstance(text, Deal):
        return text
    if not isinstance(text, str):
        raise TypeError(f"a deal must be a string or a Deal, not {type(text).__name__} {checks.excerpt(text)}")
    parts = text.split("/")
    _check_player_count(len(parts), text)
    stripped = [part.strip() for part in parts]
    rank_notation = any(ch in _RANK_HINTS for ch in text) or any(len(part.split()) > 1 for part in stripped)
    parse_hand = _parse_rank_hand if rank_notation else _parse_compact_hand
    return Deal(tuple(parse_hand(seat, part) for seat, part in enumerate(stripped)))


def _parse_compact_hand(seat, text):
    hand = []
    for position, symbol in enumerate(text, 1):
        token = symbol.upper()
        if token not in core.CLASS_SYMBOLS:
            raise ValueError(
                f"deal, seat {seat}, card {position}: unknown symbol {symbol!r} in {checks.excerpt(text)} "
                "(compact notation uses - J Q K A)"
            )
        hand.append(token)
    return tuple(hand)


def _parse_rank_hand(seat, text):
    for symbol, letter in _SUIT_SYMBOLS.items():
        text = text.replace(symbol, letter)
    hand = []
    for position, word in enumerate(re.split(r"[\s,]+", text.strip()) if text.strip() else [], 1):
        if not _TOKEN.fullmatch(word.upper()):
            raise ValueError(f"deal, seat {seat}, card {position}: unknown card {checks.excerpt(word)} ({_EXPECTED})")
        hand.append(word.upper())
    return tuple(hand)


def _check_player_count(n_players, text):
    if not 2 <= n_players <= 4:
        raise ValueError(f"a deal needs 2 to 4 players separated by '/', got {n_players} in {checks.excerpt(text)}")


def _validate(hands):
    _check_player_count(len(hands), "/".join(" ".join(hand) for hand in hands))
    seen = {}
    rank_counts = {}
    for seat, hand in enumerate(hands):
        for position, token in enumerate(hand, 1):
            if not isinstance(token, str) or not _TOKEN.fullmatch(token):
                raise ValueError(
                    f"deal, seat {seat}, card {position}: unknown card {checks.excerpt(token)} ({_EXPECTED})"
                )
            rank, suit = token.rstrip(SUITS), token[len(token.rstrip(SUITS)) :]
            if rank == "-":
                continue
            if suit:
                if token in seen:
                    first_seat, first_position = seen[token]
                    raise ValueError(
                        f"deal, seat {seat}, card {position}: {token} appears twice "
                        f"(first at seat {first_seat}, card {first_position})"
                    )
                seen[token] = (seat, position)
            rank_counts[rank] = rank_counts.get(rank, 0) + 1
            if rank_counts[rank] > 4:
                raise ValueError(
                    f"deal, seat {seat}, card {position}: a fifth {rank} (a standard deck has four cards of each rank)"
                )
    if not any(hands):
        raise ValueError("a deal needs at least one card")


def format_deal(deal: "str | Deal", notation: str | None = None) -> str:
    """The text of a deal: ``notation="compact"`` (classes only) or ``"ranks"``.

    By default, compact when that loses nothing (every card is ``-`` or a court card
    without a suit), rank notation otherwise, so ``parse_deal(format_deal(d)) == d``.
    """
    deal = parse_deal(deal)
    if notation is not None:
        checks.choice("notation", notation, ("compact", "ranks"))
    if notation is None:
        lossless = all(token in core.CLASS_SYMBOLS for hand in deal.hands for token in hand)
        notation = "compact" if lossless else "ranks"
    if notation == "compact":
        classes = iter(deal.classes())
        return "/".join("".join(core.CLASS_SYMBOLS[next(classes)] for _ in hand) for hand in deal.hands)
    return " / ".join(" ".join(hand) for hand in deal.hands)


# ------------------------------------------------------------------- random deals


def shuffled_decks(n_games, seed, first=0):
    """Card ids (rank * 4 + suit) of games ``first ..`` of the random stream ``seed``."""
    decks = np.empty((n_games, core.DECK_SIZE), np.int64)
    core.shuffled_decks(checks.seed(seed), first, decks)
    return decks


def deal_from_deck(deck, n_players):
    """Deal a deck of card ids one card at a time from seat 0 (first card dealt on top)."""
    tokens = [RANKS[card_id // 4] + SUITS[card_id % 4] for card_id in deck]
    return Deal(tuple(tuple(tokens[seat::n_players]) for seat in range(n_players)))


BYTES_PER_DEAL = 4096  # a Deal of 52 tokens in Python objects: 3.4 KB kept, 3.8 KB at the peak (tracemalloc)


def random_deals(n_games: int, n_players: int = 2, seed=None) -> list[Deal]:
    """``n_games`` shuffled standard decks dealt as ``docs/RULES.md`` says.

    Game ``i`` is game ``i`` of ``simulate(n_games, n_players=..., seed=seed)`` for the
    same int seed, whatever the number of threads.
    """
    n_players = checks.n_players(n_players)
    n_games = checks.count("n_games", n_games)
    checks.memory(n_games * BYTES_PER_DEAL, f"n_games={n_games:,} deals", "ask for fewer deals at a time")
    return [deal_from_deck(deck, n_players) for deck in shuffled_decks(n_games, seed)]


def random_deal(n_players: int = 2, seed=None) -> Deal:
    """One shuffled standard deck dealt as ``docs/RULES.md`` says (see :func:`random_deals`)."""
    return random_deals(1, n_players, seed)[0]


# ------------------------------------------------------------------ packed deals
# The engine takes a batch of explicit deals as two arrays: the card classes of each
# deal, hand after hand (int8, zero-padded), and each deal's hand sizes (int32).


def pack_deals(deals) -> tuple[np.ndarray, np.ndarray]:
    """Explicit deals as engine arrays: (cards[n, width] int8, hand_sizes[n, players] int32).

    Deals are ``Deal`` objects or text; a list of compact-notation strings is parsed in
    bulk, at compiled speed. All deals must have one number of players.
    """
    if (
        isinstance(deals, (str, bytes, bytearray, Deal, dict))
        or not isinstance(deals, Iterable)
        or (isinstance(deals, np.ndarray) and deals.ndim != 1)
    ):
        raise TypeError(
            f"deals must be a sequence of deals (Deal or text), not {type(deals).__name__} {checks.excerpt(deals)}"
        )
    deals = list(deals)
    if not deals:
        raise ValueError("no deals given")
    packed = _pack_compact(deals) if all(type(d) is str for d in deals) else None
    if packed is not None:
        return packed
    deals = [_parse_one(i, deal) for i, deal in enumerate(deals)]
    n_players = deals[0].n_players
    for i, deal in enumerate(deals):
        _check_same_players(i, deal.n_players, n_players)
    width = max(deal.n_cards for deal in deals)
    cards = np.zeros((len(deals), max(width, 1)), np.int8)
    sizes = np.array([deal.hand_sizes for deal in deals], np.int32)
    for i, deal in enumerate(deals):
        cards[i, : deal.n_cards] = deal.classes()
    return cards, sizes


def _parse_one(i, deal):
    try:
        return parse_deal(deal)
    except (TypeError, ValueError) as error:
        raise type(error)(f"deals[{i}]: {error}") from None


def _check_same_players(i, n_players, first):
    if n_players != first:
        raise ValueError(f"deal {i} has {n_players} players, deal 0 has {first}: one batch plays one number of players")


_SLASH, _BAD = -2, -1
_COMPACT_CLASS = np.full(256, _BAD, np.int8)  # byte -> card class, _SLASH or _BAD
for _class, _symbol in enumerate(core.CLASS_SYMBOLS):
    _COMPACT_CLASS[ord(_symbol)] = _COMPACT_CLASS[ord(_symbol.lower())] = _class
_COMPACT_CLASS[ord("/")] = _SLASH


def _pack_compact(texts):
    """Plain compact-notation deals packed at compiled speed, or None when one is not
    plain (other characters, whitespace): then :func:`pack_deals` parses them one by one
    and reports the first error exactly as :func:`parse_deal` would."""
    try:
        blob = np.frombuffer("".join(texts).encode("ascii"), np.uint8)
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, texts), np.int64, count=len(texts)), out=offsets[1:])
    n_players = texts[0].count("/") + 1
    if not 2 <= n_players <= 4:
        return None
    width = int(np.diff(offsets).max(initial=1)) - (n_players - 1)  # a valid deal has n_players - 1 slashes
    cards = np.zeros((len(texts), max(width, 1)), np.int8)
    sizes = np.zeros((len(texts), n_players), np.int32)
    bad = _pack_compact_bytes(blob, offsets, _COMPACT_CLASS, cards, sizes)
    if bad < 0:
        return cards, sizes
    deal = parse_deal(texts[bad])  # raises the error of a deal that is not valid ...
    _check_same_players(bad, deal.n_players, n_players)  # ... or of one that does not match
    return None  # valid but not plain compact notation (say, with spaces): parse them all


@jit
def _pack_compact_bytes(blob, offsets, classes, cards, sizes):
    """Fill ``cards`` and ``sizes`` from compact notation; return the index of the first
    deal that is not a valid plain compact deal of ``sizes.shape[1]`` players, or -1."""
    n_players = sizes.shape[1]
    for i in range(offsets.shape[0] - 1):
        seat = 0
        n = 0
        courts = np.zeros(core.N_CLASSES, np.int64)
        for b in range(offsets[i], offsets[i + 1]):
            c = classes[blob[b]]
            if c == _SLASH:
                seat += 1
                if seat == n_players:
                    return i
            elif c == _BAD or n == cards.shape[1]:
                return i
            else:
                cards[i, n] = c
                n += 1
                sizes[i, seat] += 1
                courts[c] += 1
        if seat != n_players - 1 or n == 0:
            return i
        for c in range(Card.JACK, core.N_CLASSES):
            if courts[c] > 4:  # a fifth court card of a rank
                return i
    return -1


def check_packed(cards, hand_sizes) -> tuple[np.ndarray, np.ndarray]:
    """Arrays as :func:`pack_deals` makes them, checked and in the engine's types.

    Raises ``TypeError`` for arrays that are not of integers and ``ValueError`` for
    shapes or values that are not deals: nothing is silently truncated.
    """
    cards, hand_sizes = np.asarray(cards), np.asarray(hand_sizes)
    for name, array in (("cards", cards), ("hand_sizes", hand_sizes)):
        if not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"packed {name} must be an array of integers, not of {array.dtype}")
    if cards.ndim != 2 or hand_sizes.ndim != 2 or len(cards) != len(hand_sizes):
        raise ValueError("packed deals are cards[n_games, width] and hand_sizes[n_games, n_players]")
    checks.n_players(hand_sizes.shape[1])
    if cards.size and (cards.min() < Card.NUMERAL or cards.max() > Card.ACE):
        raise ValueError("packed cards must be card classes: 0 numeral, 1-4 J Q K A")
    width = cards.shape[1]
    if hand_sizes.size and (hand_sizes.min() < 0 or hand_sizes.max() > width):
        raise ValueError(f"packed hand_sizes must be between 0 and the width of cards ({width})")
    totals = hand_sizes.astype(np.int64).sum(axis=1)
    if (totals > width).any():
        raise ValueError(f"packed hand_sizes must add up to at most the width of cards ({width})")
    if (totals == 0).any():
        raise ValueError("a deal needs at least one card")
    return np.ascontiguousarray(cards, np.int8), np.ascontiguousarray(hand_sizes, np.int32)


# ---------------------------------------------------------------- deal indices
# Every deal of a deck, dealt as a game is (the cards in one row, cut into hands as even as
# possible, the first seats one more: 26/26 for two players), numbered in lexicographic
# order of that row. Two orders of the symbols are in use: the public volunteer-computing
# census of the 52-card deck (FraSanga/camicia: A < K < Q < J < numeral) and this project's
# census (numeral < J < Q < K < A, ``beggar cycles census --source every``).

STANDARD_DECK = "-" * 36 + "JJJJQQQQKKKKAAAA"
ORDERS = {"camicia": "AKQJ-", "census": "-JQKA"}  # each numbering's symbols, least first


STANDARD_COUNTS = (36, 4, 4, 4, 4)  # cards of each class in the standard deck: a deck holds at most these


def deck_counts(deck) -> np.ndarray:
    """Cards of each class (int64[5]) of a deck given in compact symbols (``"JQKA----"``):
    2 cards or more, part of the standard 52 (at most four of each court card, 36
    numerals), as a deal of it must be. The one rule for a deck, of the API and of every
    command."""
    if not isinstance(deck, str):
        raise TypeError(f"deck must be a string of compact symbols (- J Q K A), not {type(deck).__name__}")
    counts = np.zeros(core.N_CLASSES, np.int64)
    for symbol in deck:
        if symbol.upper() not in core.CLASS_SYMBOLS:
            raise ValueError(f"deck: unknown symbol {symbol!r} in {checks.excerpt(deck)} (compact symbols: - J Q K A)")
        counts[core.CLASS_SYMBOLS.index(symbol.upper())] += 1
    if counts.sum() < 2:
        raise ValueError(f"deck must have at least 2 cards, not {int(counts.sum())}")
    for symbol, count, most in zip(core.CLASS_SYMBOLS, counts.tolist(), STANDARD_COUNTS):
        if count > most:
            raise ValueError(
                f"deck: {count} {'numerals' if symbol == '-' else repr(symbol)} in {checks.excerpt(deck)}, more than "
                f"the standard deck's {most} (a deck is part of the standard 52 cards)"
            )
    return counts


def count_deals(counts) -> int:
    """How many arrangements the cards ``counts`` (per class) have, exactly (a Python int)."""
    result = math.factorial(int(sum(counts)))
    for k in counts:
        result //= math.factorial(int(k))
    return result


def dealt_sizes(n_cards, n_players) -> tuple[int, ...]:
    """Hand sizes as a game deals ``n_cards`` cards: as even as possible, the first seats one more."""
    return tuple(n_cards // n_players + (1 if p < n_cards % n_players else 0) for p in range(n_players))


def _order(order):
    checks.choice("order", order, tuple(ORDERS))
    return [core.CLASS_SYMBOLS.index(symbol) for symbol in ORDERS[order]]


def next_card(left, index, ways, n, ranks):
    """One step of unranking arrangement ``index`` of the ``n`` cards ``left`` (per class;
    ``ways`` arrangements in all), classes taken in the order ``ranks``: its top card's
    class, and the index and number of arrangements of the cards after it."""
    for c in ranks:
        with_c = ways * int(left[c]) // n  # the arrangements with c on top
        if index < with_c:
            return c, index, with_c
        index -= with_c
    raise ValueError(f"index {index:,} is past the {ways:,} arrangements")


def deal_index(deal: "str | Deal", order: str = "camicia") -> int:
    """The number of ``deal`` among the deals of its deck (:func:`deal_at` gives it back):
    a Python int from 0 to the deck's count of deals minus 1 (653,534,134,886,878,244,999
    for the standard deck). ``order``: ``"camicia"`` (the 52-card volunteer census's) or
    ``"census"`` (this project's). The deal must be dealt as a game is (26/26, 18/17/17, ...)."""
    deal = parse_deal(deal)
    ranks = _order(order)
    if deal.hand_sizes != dealt_sizes(deal.n_cards, deal.n_players):
        raise ValueError(
            f"deal: its hands hold {'/'.join(map(str, deal.hand_sizes))} cards; an index numbers the deals dealt as a "
            f"game is ({'/'.join(map(str, dealt_sizes(deal.n_cards, deal.n_players)))})"
        )
    row = deal.classes().tolist()
    left = [row.count(c) for c in range(core.N_CLASSES)]
    index, ways = 0, count_deals(left)
    for j, card in enumerate(row):
        for c in ranks:
            if c == card:
                break
            index += ways * left[c] // (len(row) - j)  # the deals with a smaller card here
        ways = ways * left[card] // (len(row) - j)
        left[card] -= 1
    return index


def deal_at(index: int, deck: str = STANDARD_DECK, n_players: int = 2, order: str = "camicia") -> Deal:
    """Deal number ``index`` of ``deck`` (compact symbols; default the standard 52 cards) for
    ``n_players``, dealt as a game is, in ``order`` (see :func:`deal_index`)."""
    n_players = checks.n_players(n_players)
    left = deck_counts(deck).tolist()
    ranks = _order(order)
    total = count_deals(left)
    index = checks.integer("index", index, 0, total - 1)
    row, ways, n = [], total, sum(left)
    for j in range(n):
        c, index, ways = next_card(left, index, ways, n - j, ranks)
        row.append(c)
        left[c] -= 1
    bounds = np.cumsum((0, *dealt_sizes(n, n_players)))
    return Deal.from_classes([row[a:b] for a, b in zip(bounds[:-1], bounds[1:])])

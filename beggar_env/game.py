"""Playing games: one at a time (:func:`play`, :func:`trace`) or many at once
(:func:`simulate`), all through the engine in :mod:`beggar_env.core`."""

from contextlib import contextmanager
from dataclasses import dataclass

import numba
import numpy as np

from . import core
from .deals import Deal, as_seed, check_n_players, parse_deal

BLOCK = 1 << 16  # games per compiled call in `simulate`: progress is reported between blocks
CHUNKS_PER_THREAD = 4  # parallel batches split games into this many chunks per thread


@dataclass(frozen=True)
class GameResult:
    """The result of one game.

    ``outcome`` is ``"win"``, ``"cycle"`` (the game never ends: the figures are taken at
    the first repeated trick-start position) or ``"limit"`` (the agreed limit stopped it:
    most cards in hand wins, ``winner`` is None for a draw). ``cards`` counts the cards
    played, ``tricks`` the piles taken; ``hand_sizes`` are the hands at the end. For a
    cycle, ``cycle_start_cards``/``cycle_start_tricks`` say how much was played before the
    cycle's first position and ``cycle_cards``/``cycle_tricks`` give its period.
    """

    outcome: str
    winner: int | None
    cards: int
    tricks: int
    hand_sizes: tuple
    cycle_start_cards: int | None = None
    cycle_start_tricks: int | None = None
    cycle_cards: int | None = None
    cycle_tricks: int | None = None

    @classmethod
    def from_record(cls, r):
        """From a result record of :func:`beggar_env.core.result_dtype`."""
        cycle = int(r["outcome"]) == core.CYCLE
        cycle_figure = {
            name: int(r[name]) if cycle else None
            for name in ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks")
        }
        return cls(
            outcome=core.OUTCOMES[int(r["outcome"])],
            winner=None if int(r["winner"]) < 0 else int(r["winner"]),
            cards=int(r["cards"]),
            tricks=int(r["tricks"]),
            hand_sizes=tuple(int(n) for n in r["hand_sizes"]),
            **cycle_figure,
        )


def check_limit(name, value):
    """An agreed limit as the engine takes it: None (no limit) or an int >= 0."""
    if value is None:
        return core.NO_LIMIT
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be None or an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, not {value}")
    return int(value)


def new_game(deal, *, max_cards=None, max_tricks=None, extra=0):
    """The engine state of a deal at its start: a recarray of ``1 + extra`` records, the
    game first (the extra records are scratch space of the same type)."""
    deal = parse_deal(deal)
    states = core.new_states(1 + extra, deal.n_players, core.capacity_for(deal.n_cards))
    core.init_state(
        states[0],
        deal.classes(),
        np.array(deal.hand_sizes, np.int32),
        check_limit("max_cards", max_cards),
        check_limit("max_tricks", max_tricks),
    )
    return states


def play(deal, *, max_cards=None, max_tricks=None, detect_cycles=True):
    """Play one deal (a :class:`Deal` or its text) to the end and return a :class:`GameResult`.

    ``max_cards``/``max_tricks`` set the agreed limit (RULES.md): once that many cards
    have been played (or piles taken) and the game goes on, most cards in hand wins. With
    ``detect_cycles=False`` a game that never ends runs forever.
    """
    states = new_game(deal, max_cards=max_cards, max_tricks=max_tricks, extra=2)
    result = core.new_results(1, states["hands"].shape[1])
    core.finish(states[0], bool(detect_cycles), result[0], states[1], states[2])
    return GameResult.from_record(result[0])


def trace(deal, *, max_cards=None, max_tricks=None):
    """Play a deal trick by trick, yielding one dict per trick.

    Each dict has ``trick`` (1-based), ``taker`` (the seat that took the pile), ``taken``
    (cards in the pile it took), ``cards`` (played so far) and ``hand_sizes`` after it.
    A game that is stopped mid-trick (the limit) ends with a dict whose ``taker`` is
    None and ``taken`` is 0; a game that never ends stops at its first repeat.
    """
    result = play(deal, max_cards=max_cards, max_tricks=max_tricks)
    states = new_game(deal, max_cards=max_cards, max_tricks=max_tricks)
    state = {name: states[name] for name in ("status", "cards", "tricks", "turn", "held")}
    while state["status"][0] == core.RUNNING and not (
        result.outcome == "cycle" and state["tricks"][0] == result.tricks
    ):
        cards, tricks = int(state["cards"][0]), int(state["tricks"][0])
        core.step_trick(states[0])
        took = int(state["tricks"][0]) > tricks
        yield {
            "trick": int(state["tricks"][0]) if took else None,
            "taker": int(state["turn"][0]) if took else None,  # the taker leads next, or has won
            "taken": int(state["cards"][0]) - cards if took else 0,  # a trick starts from an empty pile
            "cards": int(state["cards"][0]),
            "hand_sizes": tuple(int(n) for n in state["held"][0]),
        }


# ------------------------------------------------------------------------ batches


@contextmanager
def numba_threads(threads):
    """Run the enclosed compiled code on ``threads`` threads (None: all cores)."""
    available = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        threads = available
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be None or an int, not {type(threads).__name__}")
    if not 1 <= threads <= available:
        raise ValueError(f"threads must be between 1 and {available} (the cores numba may use), not {threads}")
    before = numba.get_num_threads()
    numba.set_num_threads(int(threads))
    try:
        yield int(threads)
    finally:
        numba.set_num_threads(before)


def pack_deals(deals):
    """Explicit deals as engine arrays: (cards[n, max_cards] int8, hand_sizes[n, players])."""
    deals = [parse_deal(deal) for deal in deals]
    if not deals:
        raise ValueError("no deals given")
    n_players = deals[0].n_players
    for i, deal in enumerate(deals):
        if deal.n_players != n_players:
            raise ValueError(
                f"deal {i} has {deal.n_players} players, deal 0 has {n_players}: "
                "one batch plays one number of players"
            )
    width = max(deal.n_cards for deal in deals)
    cards = np.zeros((len(deals), max(width, 1)), np.int8)
    sizes = np.array([deal.hand_sizes for deal in deals], np.int32)
    for i, deal in enumerate(deals):
        cards[i, : deal.n_cards] = deal.classes()
    return cards, sizes


def check_packed(cards, hand_sizes):
    """Arrays as :func:`pack_deals` makes them, checked; ``ValueError`` if they are not."""
    cards = np.ascontiguousarray(cards, dtype=np.int8)
    hand_sizes = np.ascontiguousarray(hand_sizes, dtype=np.int32)
    if cards.ndim != 2 or hand_sizes.ndim != 2 or len(cards) != len(hand_sizes):
        raise ValueError("packed deals are cards[n_games, width] and hand_sizes[n_games, n_players]")
    check_n_players(hand_sizes.shape[1])
    if (hand_sizes < 0).any() or (hand_sizes.sum(axis=1) > cards.shape[1]).any():
        raise ValueError("hand_sizes must be >= 0 and add up to at most the width of cards")
    if (hand_sizes.sum(axis=1) == 0).any():
        raise ValueError("a deal needs at least one card")
    if ((cards < core.NUMERAL) | (cards > core.ACE)).any():
        raise ValueError("cards must be card classes: 0 numeral, 1-4 J Q K A")
    return cards, hand_sizes


def simulate(
    deals_or_count,
    *,
    n_players=None,
    seed=None,
    threads=None,
    max_cards=None,
    max_tricks=None,
    detect_cycles=True,
    progress=None,
):
    """Play many games at compiled speed on all cores; return their results.

    ``deals_or_count`` is a number of random games (shuffled standard decks for
    ``n_players`` players, default 2, from ``seed``: game ``i`` is
    ``random_deals(n, n_players, seed)[i]``), or a sequence of deals (``Deal`` or text,
    all with one number of players), or the pair of arrays :func:`pack_deals` returns.
    Results are identical for a seed whatever ``threads`` is (None: all cores).
    ``progress``, if given, is called with the number of games finished after each block.

    Returns a numpy recarray, one record per game, with fields ``outcome`` (an index into
    ``beggar_env.OUTCOMES``: 1 win, 2 cycle, 3 limit), ``winner`` (-1: none), ``cards``,
    ``tricks``, ``hand_sizes`` and, for cycles (-1 otherwise), ``cycle_start_cards``,
    ``cycle_start_tricks``, ``cycle_cards``, ``cycle_tricks``.
    """
    max_cards = check_limit("max_cards", max_cards)
    max_tricks = check_limit("max_tricks", max_tricks)
    detect_cycles = bool(detect_cycles)
    if isinstance(deals_or_count, (int, np.integer)) and not isinstance(deals_or_count, bool):
        n_games = int(deals_or_count)
        if n_games < 0:
            raise ValueError(f"the number of games must be >= 0, not {n_games}")
        n_players = check_n_players(2 if n_players is None else n_players)
        key = as_seed(seed)
        capacity = core.capacity_for(core.DECK_SIZE)

        def run(lo, hi, results, work):
            core.finish_shuffled(key, lo, max_cards, max_tricks, detect_cycles, results, work)

    else:
        if isinstance(deals_or_count, (str, Deal)):
            raise TypeError("simulate takes a number of games or a sequence of deals; wrap one deal in a list")
        if isinstance(deals_or_count, tuple) and len(deals_or_count) == 2 and isinstance(deals_or_count[0], np.ndarray):
            cards, sizes = check_packed(*deals_or_count)
        else:
            cards, sizes = pack_deals(deals_or_count)
        if n_players is not None and check_n_players(n_players) != sizes.shape[1]:
            raise ValueError(f"n_players={n_players} but the deals have {sizes.shape[1]} players")
        n_games, n_players = sizes.shape
        capacity = core.capacity_for(int(sizes.sum(axis=1).max(initial=1)))

        def run(lo, hi, results, work):
            core.finish_dealt(cards[lo:hi], sizes[lo:hi], max_cards, max_tricks, detect_cycles, results, work)

    results = core.new_results(n_games, n_players)
    with numba_threads(threads) as n_threads:
        work = core.new_work(n_threads * CHUNKS_PER_THREAD, n_players, capacity)
        for lo in range(0, n_games, BLOCK):
            hi = min(lo + BLOCK, n_games)
            run(lo, hi, results[lo:hi], work)
            if progress is not None:
                progress(hi)
    return results

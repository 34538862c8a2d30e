"""Playing games: one at a time (:func:`play`, :func:`trace`) or many at once
(:func:`simulate`, :func:`simulate_blocks`), all through the engine in :mod:`beggar_env.core`.

Every compiled call plays a bounded number of cards (``core.CALL_BUDGET`` per chunk of
games) and returns, so Ctrl-C and progress reports work on any run, even a game that
never ends played without cycle detection.
"""

import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import checks, core, gpu
from .core import Outcome, Phase
from .deals import Deal, check_packed, pack_deals, parse_deal
from .distributed import check_backend, require_ray
from .jit import check_threads, parallel

CHUNKS_PER_THREAD = 4  # parallel batches split games into this many chunks per thread
BLOCK_GAMES = 1 << 18  # games per block of `simulate_blocks` (about 20 MB of results)
RAY_TASK_GAMES = 1 << 16  # games per task on a Ray worker
BACKENDS = ("local", "ray", "cuda")  # where simulate plays: this machine's cores, Ray workers, a GPU

Progress = Callable[[int, int], object]  # progress(done, total)


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
    hand_sizes: tuple[int, ...]
    cycle_start_cards: int | None = None
    cycle_start_tricks: int | None = None
    cycle_cards: int | None = None
    cycle_tricks: int | None = None

    CYCLE_FIELDS = ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks")

    @classmethod
    def from_record(cls, r) -> "GameResult":
        """From a result record of :func:`beggar_env.core.result_dtype`."""
        cycle = int(r["outcome"]) == Outcome.CYCLE
        return cls(
            outcome=core.OUTCOMES[int(r["outcome"])],
            winner=None if int(r["winner"]) == core.NO_SEAT else int(r["winner"]),
            cards=int(r["cards"]),
            tricks=int(r["tricks"]),
            hand_sizes=tuple(int(n) for n in r["hand_sizes"]),
            **{name: int(r[name]) if cycle else None for name in cls.CYCLE_FIELDS},
        )


_engine = core  # what `play` and `trace` run: the compiled engine, or its source as Python (`interpreted_engine`)


def new_game(deal, *, max_cards=None, max_tricks=None, extra=0):
    """The engine state of a deal at its start: a recarray of ``1 + extra`` records, the
    game first (the extra records are scratch space of the same type)."""
    deal = parse_deal(deal)
    states = core.new_states(1 + extra, deal.n_players, core.capacity_for(deal.n_cards)).view(np.recarray)
    _engine.init_state(
        states[0],
        deal.classes(),
        np.array(deal.hand_sizes, np.int32),
        checks.limit("max_cards", max_cards),
        checks.limit("max_tricks", max_tricks),
    )
    return states


@contextmanager
def interpreted_engine():
    """Within the block, :func:`play` and :func:`trace` run the engine's source as plain
    Python: one game (``beggar play``) finishes before numba could load its compiled code.
    Results are the same (tested). The compiled engine is back after the block, so that a
    process that called ``beggar play`` in-process does not play every later game as Python."""
    global _engine
    from .jit import interpreted

    before, _engine = _engine, interpreted(core)
    try:
        yield
    finally:
        _engine = before


def _finish(states, detect_cycles):
    """Play ``new_game``'s states to the end, a bounded number of cards per call."""
    result = core.new_results(1, states["hands"].shape[1])
    progress = core.new_progress(1).view(np.recarray)
    progress.phase[0] = Phase.START
    while progress.phase[0] != Phase.DONE:
        _engine.finish(states[0], detect_cycles, result[0], states[1], states[2], progress[0], core.CALL_BUDGET)
    return result


def play(
    deal: "str | Deal", *, max_cards: int | None = None, max_tricks: int | None = None, detect_cycles: bool = True
) -> GameResult:
    """Play one deal (a :class:`Deal` or its text) to the end and return a :class:`GameResult`.

    ``max_cards``/``max_tricks`` set the agreed limit (``docs/RULES.md``): once that many
    cards have been played (or piles taken) and the game goes on, most cards in hand wins.
    With ``detect_cycles=False`` a game that never ends runs until interrupted (Ctrl-C).
    """
    states = new_game(deal, max_cards=max_cards, max_tricks=max_tricks, extra=2)
    return GameResult.from_record(_finish(states, checks.boolean("detect_cycles", detect_cycles))[0])


class Trace:
    """One game played trick by trick: iterate for one dict per trick; ``result`` is the
    game's :class:`GameResult`.

    Each dict has ``trick`` (1-based), ``taker`` (the seat that took the pile), ``taken``
    (cards in the pile it took), ``cards`` (played so far) and ``hand_sizes`` after it.
    A game that is stopped mid-trick (the limit) ends with a dict whose ``trick`` and
    ``taker`` are None and ``taken`` is 0; a game that never ends stops at its first repeat.
    """

    def __init__(self, deal, *, max_cards=None, max_tricks=None):
        self._start = new_game(deal, max_cards=max_cards, max_tricks=max_tricks, extra=2)
        played = self._start.copy()
        self._record = _finish(played, True)
        self.result = GameResult.from_record(self._record[0])

    def __iter__(self) -> Iterator[dict]:
        states = self._start.copy()
        s, r = states[0], self._record[0]
        while not _engine.episode_over(s, r):
            cards, tricks = int(s.cards), int(s.tricks)
            _engine.step_trick(s)
            took = int(s.tricks) > tricks
            yield {
                "trick": int(s.tricks) if took else None,
                "taker": int(s.turn) if took else None,  # the taker leads next, or has won
                "taken": int(s.cards) - cards if took else 0,  # a trick starts from an empty pile
                "cards": int(s.cards),
                "hand_sizes": tuple(int(n) for n in s.held),
            }


def trace(deal: "str | Deal", *, max_cards: int | None = None, max_tricks: int | None = None) -> Trace:
    """Play a deal trick by trick: a :class:`Trace` (iterable of per-trick dicts, and the result)."""
    return Trace(deal, max_cards=max_cards, max_tricks=max_tricks)


# ------------------------------------------------------------------------ batches


@dataclass
class _Batch:
    """The games of a :func:`simulate` call, checked, and how to play a range of them."""

    n_games: int
    n_players: int
    capacity: int
    deals: Callable  # deals(lo, hi): the core deals of games lo .. hi - 1 (core.given_deals or shuffled_deals)
    max_cards: int
    max_tricks: int
    detect_cycles: bool

    @classmethod
    def of(cls, deals_or_count, n_players, seed, max_cards, max_tricks, detect_cycles):
        limits = (
            checks.limit("max_cards", max_cards),
            checks.limit("max_tricks", max_tricks),
            checks.boolean("detect_cycles", detect_cycles),
        )
        if checks.is_integer(deals_or_count):
            n_games = checks.count("the number of games", deals_or_count)
            n_players = checks.n_players(2 if n_players is None else n_players)
            key = checks.seed(seed)
            deals = lambda lo, hi: core.shuffled_deals(key, lo)
            return cls(n_games, n_players, core.capacity_for(core.DECK_SIZE), deals, *limits)
        cards, sizes = _deals_arrays(deals_or_count)
        if n_players is not None and checks.n_players(n_players) != sizes.shape[1]:
            raise ValueError(f"n_players={n_players} but the deals have {sizes.shape[1]} players")
        capacity = core.capacity_for(int(sizes.sum(axis=1).max(initial=1)))
        deals = lambda lo, hi: core.given_deals(cards[lo:hi], sizes[lo:hi])
        return cls(len(sizes), sizes.shape[1], capacity, deals, *limits)

    def new_work(self, n_threads):
        return core.new_work(n_threads * CHUNKS_PER_THREAD, self.n_players, self.capacity)

    def play(self, lo, hi, results, work, progress=None):
        """Play games ``lo .. hi - 1`` into ``results``; ``progress(games_done)`` between calls."""
        core.play_batch(
            self.deals(lo, hi), self.max_cards, self.max_tricks, self.detect_cycles, results, work, progress
        )

    def play_range(self, lo, hi, threads=None):
        """The results of games ``lo .. hi - 1``."""
        results = core.new_results(hi - lo, self.n_players)
        with parallel(threads) as n_threads:
            self.play(lo, hi, results, self.new_work(n_threads))
        return results

    def ray_blocks(self, block_games, address, progress, results=None):
        """:meth:`blocks` played by Ray workers (see :mod:`beggar_env.distributed`)."""
        from .distributed import Workers

        buffer = None if results is not None else core.new_results(min(block_games, self.n_games), self.n_players)
        blocks = [(lo, min(lo + block_games, self.n_games)) for lo in range(0, self.n_games, block_games)]
        tasks = [(a, min(a + RAY_TASK_GAMES, hi)) for lo, hi in blocks for a in range(lo, hi, RAY_TASK_GAMES)]
        if not tasks:
            return
        with Workers(_RangeJob(self), address=address) as workers:
            done = 0
            for (a, b), part in workers.ordered(tasks):
                lo = a // block_games * block_games
                hi = min(lo + block_games, self.n_games)
                block = results[lo:hi] if results is not None else buffer[: hi - lo]
                block[a - lo : b - lo] = part
                done += b - a
                if progress is not None:
                    progress(done, self.n_games)
                if b == hi:
                    yield lo, block

    def cuda_blocks(self, block_games, progress, results=None):
        """:meth:`blocks` played on the GPU (:mod:`beggar_env.gpu_game`): the same results."""
        from . import gpu_game

        buffer = None if results is not None else core.new_results(min(block_games, self.n_games), self.n_players)
        for lo in range(0, self.n_games, block_games):
            hi = min(lo + block_games, self.n_games)
            block = results[lo:hi] if results is not None else buffer[: hi - lo]
            report = None if progress is None else lambda done, lo=lo: progress(lo + done, self.n_games)
            gpu_game.play_batch(
                self.deals(lo, hi), self.max_cards, self.max_tricks, self.detect_cycles, block, self.capacity, report
            )
            yield lo, block

    def cuda_tally(self, progress):
        """:func:`tally` of every game, counted on the GPU launch by launch."""
        from . import gpu_game

        whole = None
        for lo in range(0, self.n_games, gpu.LAUNCH_GAMES):
            hi = min(lo + gpu.LAUNCH_GAMES, self.n_games)
            part = gpu_game.tally(
                self.deals(lo, hi), hi - lo, self.n_players, self.capacity, self.max_cards, self.max_tricks,
                self.detect_cycles,
            )  # fmt: skip
            whole = add_tallies(whole, part)
            if progress is not None:
                progress(hi, self.n_games)
        return whole if whole is not None else tally_of(core.new_results(0, self.n_players))

    def blocks(self, block_games, threads, progress, results=None):
        """Yield (lo, results of games lo .. lo + len - 1), block after block; with
        ``results`` given (all games), the blocks are its slices, else one reused buffer."""
        buffer = None if results is not None else core.new_results(min(block_games, self.n_games), self.n_players)
        with parallel(threads) as n_threads:
            work = self.new_work(n_threads)
            for lo in range(0, self.n_games, block_games):
                hi = min(lo + block_games, self.n_games)
                block = results[lo:hi] if results is not None else buffer[: hi - lo]
                report = None if progress is None else lambda done, lo=lo: progress(lo + done, self.n_games)
                self.play(lo, hi, block, work, report)
                yield lo, block


@dataclass
class _RangeJob:
    """A :class:`_Batch` as a job for :class:`beggar_env.distributed.Workers`: each task
    is a range of games, played on one thread."""

    batch: _Batch

    def warm(self):
        self.batch.play_range(0, min(1, self.batch.n_games), threads=1)

    def run(self, lo, hi):
        return self.batch.play_range(lo, hi, threads=1)


def _deals_arrays(deals):
    """The packed arrays of a sequence of deals, or of a (cards, hand_sizes) pair."""
    if isinstance(deals, (str, bytes, bytearray, Deal)):
        raise TypeError("simulate takes a number of games or a sequence of deals; wrap one deal in a list")
    if isinstance(deals, tuple) and len(deals) == 2 and all(isinstance(a, np.ndarray) for a in deals):
        return check_packed(*deals)
    if not isinstance(deals, Sequence) and not (isinstance(deals, np.ndarray) and deals.ndim == 1):
        raise TypeError(
            f"simulate takes a number of games (an int) or a sequence of deals, not {type(deals).__name__} "
            f"{checks.excerpt(deals)}"
        )
    return pack_deals(deals)


def simulate(
    deals_or_count: "int | Sequence[str | Deal] | tuple[np.ndarray, np.ndarray]",
    *,
    n_players: int | None = None,
    seed=None,
    threads: int | None = None,
    max_cards: int | None = None,
    max_tricks: int | None = None,
    detect_cycles: bool = True,
    progress: Progress | None = None,
    backend: str = "local",
    address: str | None = None,
) -> np.recarray:
    """Play many games at compiled speed on all cores; return their results.

    ``deals_or_count`` is a number of random games (shuffled standard decks for
    ``n_players`` players, default 2, from ``seed``: game ``i`` is
    ``random_deals(n, n_players, seed)[i]``), or a sequence of deals (``Deal`` or text,
    all with one number of players; compact notation is parsed in bulk), or the pair of
    arrays :func:`beggar_env.deals.pack_deals` returns. Results are identical for a seed
    whatever ``threads`` is (None: all cores). ``progress``, if given, is called as
    ``progress(games_done, n_games)`` a few times a second. ``backend="ray"`` plays them
    on Ray workers, one per CPU, of a local Ray or of the cluster at ``address`` (see
    :mod:`beggar_env.distributed`), with the same results; ``backend="cuda"`` plays them
    on an NVIDIA GPU, one game per thread (:mod:`beggar_env.gpu`; the extra
    ``beggar-env[cuda]``), with the same results too.

    Returns a numpy recarray, one record per game, with fields ``outcome`` (an index into
    ``beggar_env.OUTCOMES``: 1 win, 2 cycle, 3 limit), ``winner`` (-1: none), ``cards``,
    ``tricks``, ``hand_sizes`` and, for cycles (-1 otherwise), ``cycle_start_cards``,
    ``cycle_start_tricks``, ``cycle_cards``, ``cycle_tricks``. Raises ``MemoryError``
    (before playing) when they would not fit in memory: then use :func:`simulate_blocks`.

    Parameters
    ----------
    deals_or_count : a number of random games, a sequence of deals, or ``pack_deals``'s arrays.
    n_players : seats of the random games (None: 2; deals given carry their own).
    seed : the seed of the random games (None: a fresh one).
    threads : the compiled threads (None: all cores).
    max_cards, max_tricks : the limits of a game (None: none).
    detect_cycles : whether a game stops at its first repeat (a cycle).
    progress : ``progress(games_done, n_games)``, or None.
    backend : ``"local"``, ``"ray"`` or ``"cuda"``.
    address : the Ray cluster's address (None: a local Ray).
    """
    batch = _Batch.of(deals_or_count, n_players, seed, max_cards, max_tricks, detect_cycles)
    itemsize = core.result_dtype(batch.n_players).itemsize
    checks.memory(
        batch.n_games * itemsize,
        f"the results of {batch.n_games:,} games",
        "play fewer games, or summarise them block by block with simulate_blocks()",
    )
    results = core.new_results(batch.n_games, batch.n_players)
    for _ in _blocks(batch, batch.n_games or 1, threads, progress, results, backend, address):
        pass
    return results


def simulate_blocks(
    deals_or_count: "int | Sequence[str | Deal] | tuple[np.ndarray, np.ndarray]",
    *,
    block_games: int = BLOCK_GAMES,
    **options,
) -> Iterator[tuple[int, np.recarray]]:
    """The games of ``simulate(deals_or_count, **options)``, in order, ``block_games`` at a
    time, in constant memory: ``options`` are :func:`simulate`'s keywords (``n_players``,
    ``seed``, ``threads``, ``max_cards``, ``max_tricks``, ``detect_cycles``, ``progress``,
    ``backend``, ``address``), with its defaults.

    Yields ``(first, results)``: the results of games ``first .. first + len(results) - 1``.
    The results array is reused for the next block: copy what you keep. The arguments are
    checked at the call, before the first block.
    """
    given = inspect.signature(simulate).bind(deals_or_count, **options)  # simulate's keywords and its TypeError
    given.apply_defaults()
    o = given.arguments
    batch = _Batch.of(deals_or_count, o["n_players"], o["seed"], o["max_cards"], o["max_tricks"], o["detect_cycles"])
    block_games = checks.count("block_games", block_games, 1)
    return _blocks(batch, block_games, o["threads"], o["progress"], None, o["backend"], o["address"])


def _blocks(batch, block_games, threads, progress, results, backend, address):
    """The blocks of a batch, played here, on a GPU or on Ray."""
    checks.callback("progress", progress)
    backend = check_backend(backend, threads, address, BACKENDS)
    if backend == "local":
        return batch.blocks(block_games, check_threads(threads), progress, results)
    if backend == "cuda":
        gpu.check_options(threads, batch.detect_cycles, batch.max_cards, batch.max_tricks)
        gpu.require_cuda()
        return batch.cuda_blocks(block_games, progress, results)
    require_ray()
    return batch.ray_blocks(block_games, address, progress, results)


# ------------------------------------------------------------------------ tallies


def tally_of(results) -> dict:
    """What a summary of games needs of their result records (``simulate``'s): how many
    games took each number of cards and of tricks (``cards[k]``: games of ``k`` cards),
    games by outcome, wins by seat, and draws (a limit with no winner)."""
    n_players = results.dtype["hand_sizes"].shape[0]
    winners = results["winner"]
    return {
        "cards": np.bincount(results["cards"]),
        "tricks": np.bincount(results["tricks"]),
        "outcomes": np.bincount(results["outcome"], minlength=len(Outcome)),
        "wins": np.bincount(winners[winners != core.NO_SEAT], minlength=n_players),
        "draws": int(((results["outcome"] == Outcome.LIMIT) & (winners == core.NO_SEAT)).sum()),
    }


def add_tallies(a, b) -> dict:
    """Two tallies as one (None: none)."""
    if a is None:
        return b
    both = {}
    for name in ("cards", "tricks"):
        longer, shorter = sorted((a[name], b[name]), key=len, reverse=True)
        both[name] = longer.copy()
        both[name][: len(shorter)] += shorter
    return {
        **both,
        "outcomes": a["outcomes"] + b["outcomes"],
        "wins": a["wins"] + b["wins"],
        "draws": a["draws"] + b["draws"],
    }


def tally(deals_or_count, **options) -> dict:
    """:func:`tally_of` the games of ``simulate(deals_or_count, **options)`` (its keywords),
    in constant memory, block after block; on a GPU (``backend="cuda"``) counted on the
    device, so that nothing per game crosses to the host."""
    given = inspect.signature(simulate).bind(deals_or_count, **options)
    given.apply_defaults()
    o = given.arguments
    batch = _Batch.of(deals_or_count, o["n_players"], o["seed"], o["max_cards"], o["max_tricks"], o["detect_cycles"])
    if check_backend(o["backend"], o["threads"], o["address"], BACKENDS) == "cuda":
        checks.callback("progress", o["progress"])
        gpu.check_options(o["threads"], batch.detect_cycles, batch.max_cards, batch.max_tricks)
        gpu.require_cuda()
        return batch.cuda_tally(o["progress"])
    whole = None
    for _, block in _blocks(batch, BLOCK_GAMES, o["threads"], o["progress"], None, o["backend"], o["address"]):
        whole = add_tallies(whole, tally_of(block))
    return whole if whole is not None else tally_of(core.new_results(0, batch.n_players))

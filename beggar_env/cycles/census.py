"""The cycle census: play the trick map from many positions and name every cycle reached.

A *cycle* is a loop of trick-start positions (``docs/RULES.md``). It is named by its
*canonical key*: each of its positions written from the leader's seat on (the leader's
hand, then the next seat's, ..., as compact notation joined by ``/``: the position's deal
with the leader in seat 0), and the least of these in the order of the card classes,
the separator last (``-`` < ``J`` < ``Q`` < ``K`` < ``A`` < ``/``). So one key names a
cycle whichever position of it a game enters, and a cycle and its copy with the seats
turned have one key (:func:`seatings`: how many cycles, as sets of absolute positions, a
key names). Its period is counted in cards and in tricks.

Positions come from one of two sources, ``random`` (any split of a shuffled deck) and
``every`` (every deal of a deck), each counted by an index (:mod:`~beggar_env.cycles.positions`).
Each position is played by the engine to its end or its first repeat, in compiled ranges
(:mod:`~beggar_env.cycles.walk`: every deal of a deck is stepped from the one before, not
unranked); the census keeps, per range, how many games ended, the longest (cards, tricks,
its index), and, for each game that never ends, its cycle's key and period, in Python
integers; and the digest of each work unit (:mod:`~beggar_env.cycles.units`), listed in the
file's manifest, which ``beggar cycles verify`` checks (:mod:`~beggar_env.cycles.verify`).

A census may be written to a JSON file (``out``) as it runs, every half minute, and
continued from there (``resume``): the file is the census's, locked for the run and
replaced whole (:mod:`beggar_env.files`); ``beggar cycles census`` is this function.
"""

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, checks, core, deals, gpu
from ..core import Outcome
from ..distributed import check_backend, require_ray
from ..jit import jit, parallel
from . import backward, positions, records, units, walk
from .cycle_keys import cycle_key, key_text, play_to_cycle
from .units import UNIT

SOURCES = ("random", "every")
BACKENDS = ("local", "ray", "cuda")
CHUNK = 1 << 14  # positions per parallel task and compiled call
RAY_TASK_POSITIONS = 1 << 17  # positions per task of a census on Ray (a second or so of one core)
KIND = records.kind("census")
NO_ROWS = np.zeros((0, 2), np.int64)  # walk's ``each``, not wanted


# ------------------------------------------------------------------------ Python side


@dataclass
class Cycle:
    """A cycle the census reached: its canonical key, period, and how many positions reached it."""

    key: str
    cards: int
    tricks: int
    reached: int = 0


@dataclass
class Census:
    """What the positions of a census range gave: games, games that ended, the longest
    (cards, tricks, index of its position), every cycle reached, by key; and, from
    :func:`census`, the seed of its positions and the seconds spent on it (all the sessions
    of a resumed census together), which equality leaves out: two censuses are equal when
    their positions gave the same."""

    games: int = 0
    ended: int = 0
    longest_cards: int = 0
    longest_tricks: int = 0
    longest_index: int = -1
    cycles: dict = field(default_factory=dict)
    seconds: float = field(default=0.0, compare=False)
    seed: int | None = field(default=None, compare=False)
    units: list | None = field(default_factory=list, compare=False)  # digests (units.Digest); None: not kept
    unit: int = field(default=UNIT, compare=False)  # positions per unit

    def add(self, other: "Census"):
        """Merge the census of the positions right after this one's into it (its units'
        digests too; a census without them leaves the sum without them)."""
        self.games += other.games
        self.ended += other.ended
        self.seconds += other.seconds
        if other.units is None:
            self.units = None
        elif self.units is not None:
            for part in other.units:
                units.merged(self.units, part, self.unit)
        if (other.longest_cards, -other.longest_index) > (self.longest_cards, -self.longest_index):
            self.longest_cards, self.longest_tricks = other.longest_cards, other.longest_tricks
            self.longest_index = other.longest_index
        for key, cycle in other.cycles.items():
            mine = self.cycles.setdefault(key, Cycle(key, cycle.cards, cycle.tricks))
            mine.reached += cycle.reached

    @classmethod
    def from_record(cls, record: dict) -> "Census":
        """A census from its record (:func:`records.read_census`, ``beggar cycles census --out``'s JSON)."""
        longest = record["longest"]
        result = cls(record["games"], record["ended"], longest["cards"], longest["tricks"], longest["index"])
        result.seconds, result.seed = record["seconds"], record["seed"]
        for cycle in record["cycles"]:
            result.cycles[cycle["key"]] = Cycle(cycle["key"], cycle["cards"], cycle["tricks"], cycle["reached"])
        manifest = record.get("manifest")
        result.units = None if manifest is None else [units.Digest.from_record(u) for u in manifest["units"]]
        result.unit = units.UNIT if manifest is None else manifest["unit"]
        return result

    def record(self, settings: dict, done=None) -> dict:
        """The census as its file holds it: ``settings`` (``records.CENSUS_SETTINGS``), its seed, and
        ``done``, the positions played so far of an unfinished census (None: complete)."""
        return {
            "kind": KIND,
            "version": __version__,
            **settings,
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
            "done": done,
            "complete": done is None,
            "games": self.games,
            "ended": self.ended,
            "longest": {"cards": self.longest_cards, "tricks": self.longest_tricks, "index": self.longest_index},
            "cycles": [vars(c) for c in sorted(self.cycles.values(), key=lambda c: (c.cards, c.key))],
            **({} if self.units is None else {"manifest": self.manifest(settings)}),
        }

    def manifest(self, settings: dict) -> dict:
        """The manifest of its units (:func:`units.manifest`) for a census of ``settings``."""
        return units.manifest(self.units, self.unit, settings["first"] + records.census_positions(settings))

    def by_period(self) -> dict:
        """Distinct cycles by period: {(cards, tricks): number of cycles}."""
        table = {}
        for cycle in self.cycles.values():
            table[cycle.cards, cycle.tricks] = table.get((cycle.cards, cycle.tricks), 0) + 1
        return dict(sorted(table.items()))


def census(
    n_players,
    source="random",
    *,
    deck=deals.STANDARD_DECK,
    first=0,
    n=None,
    seed=None,
    threads=None,
    progress=None,
    partial=None,
    backend="local",
    address=None,
    out=None,
    resume=False,
    unit=None,
) -> Census:
    """The census of positions ``first .. first + n - 1`` of ``source`` (``"random"``,
    with ``seed``, default 0, or ``"every"``: ``n`` defaults to every deal of ``deck``,
    ``first`` may be any of them) for ``n_players`` players, on ``threads`` threads;
    ``progress(done, n)`` after each call, and ``partial(census so far, done)``
    (positions ``first .. first + done - 1``). ``backend="ray"`` plays ranges of positions
    on Ray workers, one per CPU, of a local Ray or of the cluster at ``address``
    (:mod:`beggar_env.distributed`), merged in order: the same census; ``backend="cuda"``
    plays them on an NVIDIA GPU (:mod:`~beggar_env.cycles.gpu_census`): the same census.

    ``out``: the census's JSON file (``.json`` added), locked for the run (a second run on it
    is refused at once: ``files.InUse``), written every half minute while it runs, when it is
    interrupted, and at the end. An existing file is only continued, with ``resume=True``:
    an unfinished census run with the same settings (and ``seed``: by default the file's)
    goes on from where it stopped; the census of the rest added to it is the whole.

    ``unit``: the positions of a work unit (default :data:`units.UNIT`; a resumed census's
    is its file's): the census keeps each unit's digest (``Census.units``, the file's
    manifest; not on the GPU, whose census has none yet).

    Parameters
    ----------
    n_players : hands of each position
    source : ``"random"`` or ``"every"``
    deck : the deck in compact notation
    first, n : the positions counted (``n`` None: every deal of ``deck``)
    seed : the random positions' seed (None: 0, or the resumed file's)
    threads : this machine's threads (None: all)
    progress : ``progress(done, n)`` after each call, or None
    partial : ``partial(census so far, done)`` after each call, or None
    backend : ``"local"``, ``"ray"`` or ``"cuda"``
    address : the Ray cluster's (None: a local Ray)
    out : the census's JSON file, or None
    resume : continue the unfinished census in ``out``
    unit : positions per work unit (None: :data:`units.UNIT`, or the resumed file's)
    """
    n_players = checks.n_players(n_players)
    source = checks.choice("source", source, SOURCES)
    counts = deals.deck_counts(deck)
    given_n = n
    first, n = _range(source, counts, deck, first, n)
    settings = dict(players=n_players, source=source, deck=deck, first=first, positions=None if given_n is None else n)
    checks.boolean("resume", resume)
    given_unit = None if unit is None else checks.count("unit", unit, 1)
    checks.callback("progress", progress)
    checks.callback("partial", partial)
    backend = check_backend(backend, threads, address, BACKENDS)
    if backend == "ray":
        require_ray()
    elif backend == "cuda":
        gpu.check_options(threads, True, core.NO_LIMIT, core.NO_LIMIT)  # a census detects cycles: never endless
        gpu.require_cuda()
    run = dict(threads=threads, backend=backend, address=address, progress=progress, partial=partial)
    if out is None:
        if resume:
            raise ValueError("resume needs the file to resume (out)")
        seed, size = int(checks.seed(0 if seed is None else seed)), given_unit or units.UNIT
        job = _RangeJob(n_players, source, deck, seed, size)
        return _played(job, counts, first, n, Census(unit=size), **run)
    with records.output(out) as path:  # a second run on the file is refused: the last writer would lose the census
        before, done, seed = _start(path, resume, settings, seed, given_unit)
        job = _RangeJob(n_players, source, deck, seed, before.unit)
        return _played(job, counts, first + done, n - done, before, records.Checkpoints(path, settings, done), **run)


def _range(source, counts, deck, first, n):
    """``first`` and ``n`` checked: Python ints, within the source."""
    if source == "every":
        total = deals.count_deals(counts)
        first = checks.integer("first", first, 0, total)
        if n is None and total - first > checks.MAX_COUNT:
            raise ValueError(
                f"the deck {checks.excerpt(deck)} has {total:,} deals, more than one census counts "
                f"(at most {checks.MAX_COUNT:,} positions): give n, and first"
            )
        n = checks.count("n", total - first if n is None else n)
        if first + n > total:
            raise ValueError(f"the deck {checks.excerpt(deck)} has {total:,} deals: first + n must be at most that")
        return first, n
    if n is None:
        raise ValueError("n: a random census needs a number of positions")
    first, n = checks.count("first", first), checks.count("n", n)
    if first + n > checks.MAX_COUNT:
        raise ValueError(f"first + n must be at most {checks.MAX_COUNT:,} (positions are counted in int64)")
    return first, n


def _start(path, resume, settings, seed, unit):
    """The census so far in ``path`` and its positions done, and the seed (``resume``), or
    an empty census (of units of ``unit`` positions); ``ValueError`` for a file that cannot
    be continued so."""
    if not os.path.exists(path):
        if resume:
            raise ValueError(f"resume: {path} does not exist")
        return Census(unit=unit or units.UNIT), 0, int(checks.seed(0 if seed is None else seed))
    if not resume:
        raise ValueError(f"{path} exists: continue an unfinished census (resume=True, --resume) or choose another file")
    record = records.read_census(path)
    if record["complete"]:
        raise ValueError(f"resume: {path} is complete: nothing to continue")
    differ = [name for name in records.CENSUS_SETTINGS if record[name] != settings[name]]
    if seed is not None and int(checks.seed(seed)) != record["seed"]:
        differ.append("seed")
    if unit is not None and "manifest" in record and unit != record["manifest"]["unit"]:
        differ.append("unit")
    if differ:
        raise ValueError(f"resume: {path} was run with other settings: {', '.join(differ)}")
    check_cycles_played(path, record)
    return Census.from_record(record), record["done"], record["seed"]


def check_cycles_played(path, record):
    """Each cycle a census file lists is the one its key's position reaches, of its period,
    played by the engine (what ``records.read_census`` cannot check): ``ValueError`` naming
    the file and the cycle."""
    for at, cycle in enumerate(record["cycles"]):
        reached = cycle_of(cycle["key"])
        if reached is None or (reached.key, reached.cards, reached.tricks) != (
            cycle["key"],
            cycle["cards"],
            cycle["tricks"],
        ):
            played = "its game ends" if reached is None else f"its game reaches the cycle {reached.key}"
            if reached is not None and reached.key == cycle["key"]:
                played = f"its period is {reached.cards} cards, {reached.tricks} tricks"
            raise ValueError(
                f"{path}: cycles[{at}]: the key {checks.excerpt(cycle['key'])} is no cycle of {cycle['cards']:,} "
                f"cards, {cycle['tricks']:,} tricks: {played}"
            )


def _played(job, counts, first, n, before, checkpoints=None, *, threads, backend, address, progress, partial):
    """``before`` and the census of ``job``'s positions ``first .. first + n - 1``, written
    to the checkpoints' file as it goes, when interrupted, and at the end."""
    started = time.perf_counter()
    result, done = Census(seed=job.seed, unit=job.unit, units=None if before.units is None else []), 0

    def so_far():
        whole = Census(seed=job.seed, unit=job.unit)
        whole.add(before)
        whole.add(result)
        whole.seconds = before.seconds + time.perf_counter() - started
        return whole

    def merged(part, m):
        nonlocal done
        result.add(part)
        done += m
        if progress is not None:
            progress(done, n)
        if partial is not None:
            partial(result, done)
        if checkpoints is not None and checkpoints.due():
            checkpoints.write(so_far(), done)

    try:
        if backend == "ray":
            _census_on_ray(job, first, n, address, merged)
        elif backend == "cuda":
            from . import gpu_census

            gpu_census.play(job, counts, first, n, lambda at, m, *figures: merged(_counted(at, m, *figures), m))
        else:
            _census_here(job, counts, first, n, threads, merged)
    except BaseException:
        if checkpoints is not None and done:
            checkpoints.write(so_far(), done)  # Ctrl-C or a failure: keep what was played
        raise
    whole = so_far()
    if checkpoints is not None:
        checkpoints.write(whole, done, complete=True)
    return whole


def _census_here(job, counts, first, n, threads, merged):
    deck_classes = np.repeat(np.arange(core.N_CLASSES, dtype=np.int8), counts)
    n_cards, seed = len(deck_classes), np.uint64(job.seed)
    with parallel(threads) as n_threads:
        work = core.new_work(4 * n_threads, job.n_players, core.capacity_for(n_cards))
        results = core.new_results(4 * n_threads, job.n_players)
        step = CHUNK * n_threads
        if job.source == "random":
            for lo, m in units.spans(first, n, step, job.unit):
                merged(_census_call(0, seed, deck_classes, counts, lo, 0, m, work, results, n_cards), m)
            return
        for prefix, rest, local, size in positions.blocks(counts, first, n):
            offset = first - local  # position = offset + local index
            for lo, m in units.spans(first, size, step, job.unit):
                merged(_census_call(1, seed, prefix, rest, lo - offset, offset, m, work, results, n_cards), m)
            first += size


@dataclass
class _RangeJob:
    """A census as a job for :class:`beggar_env.distributed.Workers`: each task is a range
    of positions, played on one thread."""

    n_players: int
    source: str
    deck: str
    seed: int
    unit: int = units.UNIT

    def warm(self):
        self.run(0, 1)

    def run(self, first, n):
        return census(
            self.n_players, self.source, deck=self.deck, first=first, n=n, seed=self.seed, threads=1, unit=self.unit
        )


def _census_on_ray(job, first, n, address, merged):
    from ..distributed import Workers

    tasks = list(units.spans(first, n, RAY_TASK_POSITIONS, job.unit))
    if not tasks:
        return
    with Workers(job, address=address) as workers:
        for (_, m), part in workers.ordered(tasks):
            part.seconds = 0.0  # the run's own clock counts
            merged(part, m)


def _census_call(source, seed, deck_classes, counts, lo, offset, m, work, results, n_cards):
    """The census of positions ``offset + lo .. offset + lo + m - 1``, ``lo`` local to the
    block (``deck_classes`` its prefix, ``counts`` its other cards), with its digest."""
    n_players = results["hand_sizes"].shape[1]
    n_chunks = work[0].shape[0]
    keys = np.zeros((m, n_cards + n_players - 1), np.int8)
    periods = np.zeros((m, 2), np.int64)
    stats = np.zeros((n_chunks, 5), np.int64)
    stats[:, walk.STAT_INDEX] = -1
    hashes = np.zeros(n_chunks, np.uint64)
    lengths = np.zeros((n_chunks, walk.LENGTH_BUCKETS), np.int64)
    walk.walk(source, seed, deck_classes, counts, lo, np.uint64(offset % 2**64), m, work, results, keys, periods, stats,
              hashes, lengths, NO_ROWS)  # fmt: skip
    cycled = np.flatnonzero(periods[:, 1])
    rows = stats[:, walk.STAT_CARDS :]  # each chunk's longest: cards, tricks, index in the block (-1: none)
    longest = [(cards, tricks, offset + int(index)) for cards, tricks, index in rows if index >= 0]
    never = [offset + lo + int(at) for at in cycled]
    ended, hash_sum = stats[:, walk.STAT_ENDED].sum(), int(hashes.sum())
    return _counted(offset + lo, m, ended, longest, keys[cycled], periods[cycled], never, hash_sum, lengths.sum(axis=0))


def _counted(first, m, ended, longest, keys, periods, never, hash_sum, lengths):
    """The census of positions ``first .. first + m - 1`` with its digest, from what
    compiled code counted, the CPU's or the GPU's (:func:`_part`'s figures; ``never``: the
    index of each game that never ends, in order; ``hash_sum``: its hash terms added up,
    ``lengths``: its histogram of lengths, :mod:`~beggar_env.cycles.units`)."""
    part = _part(m, ended, longest, keys, periods)
    digest = units.Digest(first, m, part.ended, units.trimmed(lengths), hash_sum % 2**64)
    digest.longest_cards, digest.longest_tricks = part.longest_cards, part.longest_tricks
    digest.longest_index = part.longest_index
    for index, key, (cards, tricks) in zip(never, keys, periods, strict=True):
        digest.never.append((index, key_text(key), int(cards), int(tricks)))
    part.units = [digest]
    return part


def _part(m, ended, longest, keys, periods):
    """The census of ``m`` positions from what compiled code counted, the CPU's or the GPU's:
    ``ended`` games that ended, ``longest`` rows (cards, tricks, index of the position; -1:
    none) of its chunks or blocks, and the ``keys`` and ``periods`` (cards, tricks) of the
    games that never end."""
    part = Census(games=m, ended=int(ended))
    for cards, tricks, index in longest:
        if index >= 0:
            part.add(Census(longest_cards=int(cards), longest_tricks=int(tricks), longest_index=int(index)))
    for key, (cards, tricks) in zip(keys, periods):
        text = key_text(key)
        cycle = part.cycles.setdefault(text, Cycle(text, int(cards), int(tricks)))
        cycle.reached += 1
    return part


@jit
def _deal_cycle(cards, sizes, work, results, key, scratch):
    """Play one deal in the engine (``work``: one row of ``core.new_work``); write its
    cycle's key to ``key`` when it never ends; return the result record's outcome."""
    states, progress = work
    s, r = states[0, 0], results[0]
    if play_to_cycle(s, cards, sizes, states[0, 1], states[0, 2], progress[0], r):
        cycle_key(s, r.cycle_tricks, key, scratch)
    return r.outcome


def cycle_of(deal) -> Cycle | None:
    """The cycle a deal's game reaches, played by the engine (``reached`` 1), or None
    when the game ends."""
    from ..deals import parse_deal

    deal = parse_deal(deal)
    work = core.new_work(1, deal.n_players, core.capacity_for(deal.n_cards))
    results = core.new_results(1, deal.n_players)
    key = np.zeros(deal.n_cards + deal.n_players - 1, np.int8)
    sizes = np.array(deal.hand_sizes, np.int32)
    if _deal_cycle(deal.classes(), sizes, work, results, key, np.empty_like(key)) != Outcome.CYCLE:
        return None
    return Cycle(key_text(key), int(results["cycle_cards"][0]), int(results["cycle_tricks"][0]), 1)


def seatings(key) -> int:
    """How many cycles, as sets of absolute positions (the hands in seat order and the
    leader's seat), one key names: 1 to the number of players. The key's position, its
    leader in seat 0, is played by the engine round its cycle; the cycle's positions with
    the seats turned by 1, 2, ... are cycles too, with the same key, and each is counted
    once (a turn that maps the cycle's positions onto themselves gives no other cycle).
    ``key``: a cycle's key, or any position on a cycle written from its leader's seat on;
    ``ValueError`` when its game ends or its position is not on the cycle it reaches."""
    cards, sizes, leader = backward.position_arrays(key, 0)
    n_players, n_cards = len(sizes), len(cards)
    state = backward.new_scratch_state(n_players, n_cards)
    start = position = _absolute(cards, sizes, leader)
    cycle = set()
    while position not in cycle:
        if sizes.max() == n_cards:
            raise ValueError(f"{key}: its game ends, so it names no cycle")
        cycle.add(position)
        after_cards, after_sizes = np.empty_like(cards), np.empty_like(sizes)
        leader = backward.trick_after(state, cards, sizes, leader, after_cards, after_sizes)
        cards, sizes = after_cards, after_sizes
        position = _absolute(cards, sizes, leader)
    if position != start:
        raise ValueError(f"{key}: its position is not on the cycle its game reaches")
    return len({frozenset(_turned(p, turn) for p in cycle) for turn in range(n_players)})


def _absolute(cards, sizes, leader):
    """A position as the hands in seat order (bytes each) and the leader's seat."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return tuple(cards[bounds[p] : bounds[p + 1]].tobytes() for p in range(len(sizes))), int(leader)


def _turned(position, turn):
    """The position with every hand, and the lead, moved ``turn`` seats on."""
    hands, leader = position
    n_players = len(hands)
    return tuple(hands[(p - turn) % n_players] for p in range(n_players)), (leader + turn) % n_players

"""New cycles by insertion: grow the cycles of a small deck, a card at a time, into cycles
of a larger one (up to the full deck), where backward play can then find their deals.

Andorno et al. (arXiv 2602.23406, 2026) name an "adaptive insertion" that builds balanced
cycles; no code of theirs is public, and this is the project's own reading of the words.
A cycle of a deck ``D`` is grown into cycles of ``D`` plus one card: in each position of the
cycle, a card of each class the target deck still has room for is put at each place of each
hand, and the position is played forward by the engine to its end or its first repeat.
Most such positions end; the ones that do not reach a cycle of the larger deck (the old
cycle with a card carried along, or a new shape), named by its canonical key
(:mod:`~beggar_env.cycles.census`). Level by level, up to the target deck, a *beam* of
cycles is kept: those whose deck is nearest the target's proportions (so that court cards
and numerals grow together rather than the courts first), ties broken by a seeded draw.

The same kernel explores a cycle's neighbours: every card moved to every other place
(``move``), every card taken out (``delete``), or two cards put in at once (``pairs``).

Positions are handled as key bytes (the hands from the leader's seat on, the separator
between), so an insertion is one byte put in, at any index: before a separator it goes at
the end of a hand, after one at the top of the next.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from numba import prange

from .. import checks, core, deals, files
from ..jit import jit, parallel
from . import census, cycle_keys, records

CHANGES = ("insert", "move", "delete", "pairs")  # a card put in, moved, taken out; two cards put in
INSERT, MOVE, DELETE, PAIRS = range(4)
GROWTH = (1, 0, -1, 2)  # cards a change adds
CAPACITY = 1 << 12  # cycles written per grown cycle and call (more: the call is repeated with room for all)
TRIES_PER_CALL = 1 << 15  # changed positions a compiled call plays per thread (a tenth of a second or so)


@jit
def unpack_key(key, cards, sizes):
    """Key bytes (hands from the leader's seat on, the separator between) as hands and sizes."""
    sizes[:] = 0
    n, p = 0, 0
    for b in key:
        if b == cycle_keys.SEPARATOR:
            p += 1
        else:
            cards[n] = b
            n += 1
            sizes[p] += 1


@jit
def _try(grown, i, game, out, scratch):
    """Play one changed position (``game``: hands, sizes and the engine's records to play it
    in); when it cycles, count it in ``out`` and write its cycle there if there is room."""
    cards, sizes, s, start, probe, f, r = game
    out_keys, out_periods, counts = out
    unpack_key(grown, cards, sizes)
    if not cycle_keys.play_to_cycle(s, cards, sizes, start, probe, f, r):
        return
    k = counts[i]
    if k < out_keys.shape[1]:
        out_periods[i, k, 0] = r.cycle_cards
        out_periods[i, k, 1] = r.cycle_tricks
        cycle_keys.cycle_key(s, r.cycle_tricks, out_keys[i, k], scratch)
    counts[i] = k + 1


@jit
def _insert(base, n, at, c, grown):
    """``base[:n]`` with class ``c`` put in at index ``at``, written to ``grown``."""
    grown[:at] = base[:at]
    grown[at] = c
    grown[at + 1 : n + 1] = base[at:n]


@jit(parallel=True)
def grow_level(keys, periods, room, mode, walkers, work, results, out_keys, out_periods, counts, begin, end):
    """For each cycle ``keys[i]`` (period ``periods[i]`` tricks), its positions ``begin`` to
    ``end - 1`` changed and played forward: with ``mode`` INSERT, a card of each class ``c``
    with ``room[i, c] >= 1`` put in at each place; MOVE, each card taken out and put back at
    each other place; DELETE, each card taken out; PAIRS, two cards put in (of classes with
    room for both) at each two places. The first ``out_keys.shape[1]`` of those that cycle go
    to ``out_keys[i]`` (their cycle's key) and ``out_periods[i]`` (cards, tricks);
    ``counts[i]`` is how many cycled in all. A call with ``begin`` 0 starts each cycle
    (``walkers[i]`` at its first position, ``counts[i]`` 0); the next calls, with the same
    arrays, carry on where it stopped (see :func:`_grow_call`).

    Parameters
    ----------
    keys, periods : the cycles' keys and periods (tricks).
    room : the cards of each class that may be put in, a row per cycle.
    mode : the change: ``INSERT``, ``MOVE``, ``DELETE`` or ``PAIRS``.
    walkers : a state per cycle, walking its positions across calls.
    work : the scratch states and progress records, a row per cycle.
    results : scratch result records, one per cycle.
    out_keys, out_periods, counts : what cycled, written in place.
    begin, end : the positions of each cycle changed in this call.
    """
    states, progress = work
    length = keys.shape[1]
    n_players = 1
    for b in keys[0]:
        n_players += b == cycle_keys.SEPARATOR
    grown_length = length + GROWTH[mode]
    for i in prange(keys.shape[0]):
        s, start, probe = states[i, 0], states[i, 1], states[i, 2]
        f, r, walker = progress[i], results[i], walkers[i]
        n_cards = length - (n_players - 1)
        cards = np.empty(n_cards + 2, np.int8)
        sizes = np.empty(n_players, np.int32)
        position = np.empty(length, np.int8)
        base = np.empty(length + 1, np.int8)
        grown = np.empty(grown_length, np.int8)
        scratch = np.empty(grown_length, np.int8)
        game, out = (cards, sizes, s, start, probe, f, r), (out_keys, out_periods, counts)
        if begin == 0:
            unpack_key(keys[i], cards, sizes)
            core.init_state(walker, cards, sizes, core.NO_LIMIT, core.NO_LIMIT)
            counts[i] = 0
        for _ in range(begin, min(end, periods[i])):
            cycle_keys.write_key(walker, position)
            if mode == INSERT:
                for at in range(length + 1):
                    for c in range(core.N_CLASSES):
                        if room[i, c] >= 1 and not (at > 0 and position[at - 1] == c):  # else: one place earlier
                            _insert(position, length, at, c, grown)
                            _try(grown, i, game, out, scratch)
            elif mode == PAIRS:
                for first in range(length + 1):
                    for c in range(core.N_CLASSES):
                        if room[i, c] < 1 or (first > 0 and position[first - 1] == c):
                            continue
                        _insert(position, length, first, c, base)
                        for at in range(first + 1, length + 2):  # the second card below the first
                            for c2 in range(core.N_CLASSES):
                                if room[i, c2] < 1 + (c2 == c) or (at - 1 > first and base[at - 1] == c2):
                                    continue
                                _insert(base, length + 1, at, c2, grown)
                                _try(grown, i, game, out, scratch)
            else:
                for d in range(length):
                    c = position[d]
                    if c == cycle_keys.SEPARATOR or (d > 0 and position[d - 1] == c):  # else: one place earlier
                        continue
                    base[:d] = position[:d]
                    base[d : length - 1] = position[d + 1 :]
                    if mode == DELETE:
                        _try(base[: length - 1], i, game, out, scratch)
                        continue
                    for at in range(length):
                        if at != d and not (at > 0 and base[at - 1] == c):
                            _insert(base, length - 1, at, c, grown)
                            _try(grown, i, game, out, scratch)
            core.step_trick(walker)


@dataclass
class Level:
    """One level of an exploration: the cards of the cycles it changed (``tried`` of them,
    ``positions`` positions in all), every distinct cycle the changed positions reached
    (key -> :class:`~beggar_env.cycles.census.Cycle`, ``reached``: how many changed
    positions), and the keys kept for the next level (new ones, at most the beam)."""

    cards: int
    tried: int
    positions: int
    found: dict = field(default_factory=dict)
    kept: list = field(default_factory=list)

    def record(self) -> dict:
        """The level as a growth's file holds it: the cycles kept, each whole."""
        return {
            "cards": self.cards,
            "tried": self.tried,
            "positions": self.positions,
            "found": len(self.found),
            "kept": [vars(self.found[key]) for key in self.kept],
        }


def key_bytes(key: str) -> np.ndarray:
    """A key's text as its bytes (compact symbols, ``/`` between hands)."""
    return np.array([cycle_keys.KEY_SYMBOLS.index(symbol) for symbol in key], np.int8)


def deck_of(key: str) -> np.ndarray:
    """Cards of each class (int64[5]) in a key."""
    return deals.deck_counts(key.replace("/", ""))


def distance(key: str, target: np.ndarray) -> float:
    """How far a key's deck is from the target's proportions at its size (the sum over
    classes of the difference from the target's share)."""
    counts = deck_of(key)
    return float(np.abs(counts - counts.sum() * target / target.sum()).sum())


def keep(cycles, target: np.ndarray, beam: int, seed: int, size: int) -> list:
    """The ``beam`` keys nearest the target's proportions, ties broken by a draw of ``seed``
    and the level's ``size`` (the same whatever order the keys came in)."""
    keys = sorted(cycles)
    if len(keys) <= beam:
        return keys
    draw = np.random.default_rng([seed, size]).random(len(keys))
    order = np.lexsort((draw, [distance(key, target) for key in keys]))
    return sorted(keys[j] for j in order[:beam])


def room(key, target, slack=None):
    """How many cards of each class may be put in (int64[5]): what the target deck has more
    of, and, with ``slack``, at most what keeps each class within ``slack`` cards above its
    share of the target at the new size."""
    counts = deck_of(key)
    free = target - counts
    if slack is not None:
        share = target * (counts.sum() + 1) / target.sum() + slack
        free = np.minimum(free, np.maximum(np.floor(share - counts).astype(np.int64), 0))
    return free


def tries(mode, length):
    """How many changed positions (at most) each position of a cycle is played in, by the
    length of its key (cards and separators)."""
    places = length + 1
    changes = (
        places * core.N_CLASSES,
        length * length,
        length,
        places * core.N_CLASSES * (places + 1) * core.N_CLASSES // 2,
    )
    return changes[mode]


def _batches(periods, changes, threads):
    """How :func:`grow_level` is called on cycles of ``periods`` (their positions), each
    position played in ``changes`` changed positions, on ``threads`` threads: on ``batch`` cycles at a
    time, ``window`` of their positions per call, so that a call plays at most about
    :data:`TRIES_PER_CALL` changed positions per thread (and never less than a position per
    thread)."""
    per_call = max(threads, TRIES_PER_CALL * threads // changes)  # positions
    longest = int(periods.max())
    batch = min(len(periods), max(threads, min(4 * threads, per_call), per_call // longest))
    return batch, max(1, per_call // batch)


def _grow_call(cycles, n_players, target, capacity, mode=INSERT, slack=None, threads=1):
    keys = [cycle.key for cycle in cycles]
    n_cards = len(keys[0].replace("/", ""))
    room_of = np.array([room(key, target, slack) for key in keys])
    key_rows = np.stack([key_bytes(key) for key in keys])
    periods = np.array([cycle.tricks for cycle in cycles], np.int64)
    rows = len(keys)
    capacity_cards = core.capacity_for(n_cards + max(GROWTH))
    work = core.new_work(rows, n_players, capacity_cards)
    results = core.new_results(rows, n_players)
    walkers = core.new_states(rows, n_players, capacity_cards)
    batch, window = _batches(periods, tries(mode, key_rows.shape[1]), threads)
    while True:
        out_keys = np.zeros((rows, capacity, key_rows.shape[1] + GROWTH[mode]), np.int8)
        out_periods = np.zeros((rows, capacity, 2), np.int64)
        counts = np.zeros(rows, np.int64)
        for a in range(0, rows, batch):  # a bounded amount of work per call, so that Ctrl-C is seen between calls
            b = min(rows, a + batch)
            arrays = (key_rows[a:b], periods[a:b], room_of[a:b], mode, walkers[a:b], (work[0][a:b], work[1][a:b]))
            for begin in range(0, int(periods[a:b].max()), window):
                grow_level(*arrays, results[a:b], out_keys[a:b], out_periods[a:b], counts[a:b], begin, begin + window)
        if counts.max() <= capacity:
            break
        capacity = int(counts.max())
    found = {}
    for i in range(rows):
        for k in range(counts[i]):
            text = cycle_keys.key_text(out_keys[i, k])
            cycle = found.setdefault(text, census.Cycle(text, int(out_periods[i, k, 0]), int(out_periods[i, k, 1])))
            cycle.reached += 1
    return found, int(periods.sum())


def _start_cycles(starts, n_players, target):
    level = {}
    for start in starts:
        cycle = census.cycle_of(start)
        if cycle is None:
            raise ValueError(f"start {checks.excerpt(start)}: its game ends, it reaches no cycle")
        hands = len(cycle.key.split("/"))
        if hands != n_players:
            raise ValueError(f"start {checks.excerpt(start)}: has {hands} hands, not {n_players}")
        if np.any(deck_of(cycle.key) > target):
            raise ValueError(f"start {checks.excerpt(start)}: has cards that the deck lacks")
        level[cycle.key] = cycle
    if not level:
        raise ValueError("starts: give at least one deal or cycle key")
    sizes = {len(key.replace("/", "")) for key in level}
    if len(sizes) != 1:
        raise ValueError(f"starts: every cycle must hold one number of cards, not {sorted(sizes)}")
    return [level[key] for key in sorted(level)]


def explore(
    starts,
    n_players=2,
    *,
    change="insert",
    deck=deals.STANDARD_DECK,
    beam=400,
    slack=None,
    levels=None,
    seed=0,
    threads=None,
    progress=None,
    out=None,
) -> list:
    """Change the cycles that ``starts`` reach (deals or cycles' keys, compact notation,
    ``n_players`` hands, one number of cards) one card at a time, level after level, and
    return the levels (:class:`Level`). ``change``:

    * ``"insert"``: a card of a class ``deck`` has more of put in at every place of every
      position (with ``slack``, only classes at most that many cards above their share of
      ``deck``), until the cycles hold the whole ``deck``;
    * ``"delete"``: every card of every position taken out, until no cycle is left;
    * ``"move"``: every card of every position put at every other place, until no new
      cycle is found;
    * ``"pairs"``: as ``"insert"``, two cards at a time (where one at a time stalls).

    Each level keeps at most ``beam`` of the cycles it found that no earlier level had,
    those nearest ``deck``'s proportions first (ties drawn with ``seed``); at most
    ``levels`` levels. ``progress(level)`` after each. ``out``: a JSON file of the levels
    and every cycle kept, checked before the first level and locked meanwhile.

    Parameters
    ----------
    starts : deals or cycles' keys in compact notation.
    n_players : hands of each.
    change : ``"insert"``, ``"delete"``, ``"move"`` or ``"pairs"``.
    deck : the deck the cycles grow towards (``"insert"``, ``"pairs"``).
    beam : the new cycles a level keeps, at most.
    slack : the cards of a class allowed above its share of ``deck`` (None: any).
    levels : the levels, at most (None: until done).
    seed : the seed that draws ties.
    threads : the compiled threads (None: all cores).
    progress : ``progress(level)``, or None.
    out : a JSON file of the levels, or None.
    """
    started = time.perf_counter()
    n_players = checks.n_players(n_players)
    change = checks.choice("change", change, CHANGES)
    beam, seed = checks.count("beam", beam, 1), checks.seed(seed)
    if levels is not None:
        levels = checks.count("levels", levels, 1)
    if slack is not None and not (isinstance(slack, (int, float)) and slack >= 0):
        raise ValueError(f"slack must be a number >= 0 or None, not {checks.excerpt(slack)}")
    checks.callback("progress", progress)
    target = deals.deck_counts(deck)
    cycles = _start_cycles(starts, n_players, target)
    with records.output(out) as path:
        done = _explore(cycles, n_players, CHANGES.index(change), target, beam, slack, levels, seed, threads, progress)
        settings = dict(starts=[str(start) for start in starts], change=change, deck=deck, players=n_players)
        settings.update(beam=beam, slack=slack, levels_limit=levels, seed=int(seed))
        seconds = round(time.perf_counter() - started, 2)
        records.write(path, "grow", {**settings, "seconds": seconds, "levels": [level.record() for level in done]})
    return done


def _explore(cycles, n_players, mode, target, beam, slack, levels, seed, threads, progress):
    seen, done = {cycle.key for cycle in cycles}, []
    with parallel(threads) as n_threads:
        while cycles and (levels is None or len(done) < levels):
            n_cards = len(cycles[0].key.replace("/", ""))
            if n_cards + GROWTH[mode] > target.sum():
                break
            found, positions = _grow_call(cycles, n_players, target, CAPACITY, mode, slack, n_threads)
            new = {key: cycle for key, cycle in found.items() if key not in seen}
            seen.update(new)
            size = n_cards + GROWTH[mode]
            level = Level(n_cards, len(cycles), positions, found, keep(new, target, beam, seed, size))
            done.append(level)
            if progress is not None:
                progress(level)
            cycles = [found[key] for key in level.kept]
    return done


def starts_of(path) -> list:
    """The cycles' keys a growth may start from in the file ``path``: a census's cycles, or
    the cycles a growth's last level kept; ``ValueError`` naming the file otherwise."""
    record = files.read_json(path, STARTS_SCHEMA, STARTS_BYTES)
    if "levels" in record:
        kept = [level["kept"] for level in record["levels"] if level["kept"]]
        starts = [cycle["key"] for cycle in kept[-1]] if kept else []
    else:
        starts = [cycle["key"] for cycle in record["cycles"]]
    if not starts:
        raise ValueError(f"{path} has no cycles to start from")
    return starts


STARTS_BYTES = 256 * 2**20  # the most of a census's or a growth's file read (as records.CENSUS_BYTES)
_CYCLES = {"type": "array", "items": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}}
_LEVELS = {"type": "array", "items": {"type": "object", "required": ["kept"], "properties": {"kept": _CYCLES}}}
STARTS_SCHEMA = {  # what starts_of reads: a growth's levels, or a census's cycles
    "type": "object",
    "anyOf": [
        {"required": ["levels"], "properties": {"levels": _LEVELS}},
        {"required": ["cycles"], "properties": {"cycles": _CYCLES}},
    ],
}

"""The compiled searchers: play the games of a range of work units and keep the few that
may enter the top lists.

A search is a seeded stream of work units, each a fixed run of games: a unit is one game
for ``random`` and one walk of ``walk_steps`` games for ``local``. Unit ``u`` depends on
nothing but the seed and ``u`` (counter-based streams, as ``core.derive_key``), so a range
of units gives the same games on any thread, process or machine, and the game numbered
``index = u * unit_games + step`` is the same in every run with that seed.

* ``random``: game ``index`` is the shuffled deck ``derive_key(seed, index)``, dealt as
  :func:`beggar_env.simulate` deals it: the games of ``simulate(n, seed=seed)``.
* ``local``: walk ``u`` starts from a shuffled deck (or from the given start deals, in
  turn) and makes ``walk_steps - 1`` moves: each swaps two cards of different classes,
  plays the new deal, and keeps it if it is no worse for the objective (hill climbing),
  or, with a temperature ``T``, if a uniform draw is below ``exp(gain / T)`` with ``T``
  falling linearly to 0 over the walk (simulated annealing); otherwise it swaps back.
  Every walk is a restart.

Each game's result is scored for every objective (``score``); a game whose score reaches
the threshold of an objective (the K-th best known, or 0) is copied to a small buffer,
and a compiled call returns when the buffer is full, when its card budget is spent, or
when its units are done. :class:`SearchJob` runs a range of units that way and returns
only the top K of what it found: the top K of a whole run is always among the union of
the top K of its ranges, whatever the ranges.
"""

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import prange

from .. import core
from ..core import NO_LIMIT, Outcome, Phase, deal_deck, derive_key, mix64
from ..deals import Deal, parse_deal
from ..game import CHUNKS_PER_THREAD
from ..jit import jit, parallel, serial_and_parallel
from .finds import OBJECTIVES, Find, TopLists


class Strategy(IntEnum):
    RANDOM = 0
    LOCAL = 1


class Objective(IntEnum):  # in the order of finds.OBJECTIVES
    CARDS = 0
    TRICKS = 1
    CYCLE = 2


STRATEGIES = tuple(strategy.name.lower() for strategy in Strategy)
assert OBJECTIVES == tuple(objective.name.lower() for objective in Objective)

NOT_ELIGIBLE = -1  # the score of a game that has no place in an objective's list
CYCLE_BONUS = 1 << 40  # `local` with objective "cycle": any cycle beats every game that ends
FOUND_PER_CHUNK = 64  # candidates a chunk may keep per compiled call
_WALK_SALT = np.uint64(0x5EA4C4A11E5)  # a walk's moves use a stream apart from its start deal's
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53: the top 53 bits of a uint64 as a float in [0, 1)

SETTINGS_DTYPE = np.dtype(
    [
        ("strategy", np.int8),
        ("objective", np.int8),
        ("seed", np.uint64),
        ("first", np.int64),  # the range's first unit
        ("unit_games", np.int64),  # games of a unit: 1 (random) or walk_steps (local)
        ("end_game", np.int64),  # the run's deal budget: the last unit is cut there
        ("temperature", np.float64),
    ],
    align=True,
)

WALKER_DTYPE = np.dtype(
    [
        ("step", np.int64),  # games played in the current unit
        ("rng", np.uint64),  # the walk's counter
        ("current", np.int64),  # fitness of the deal the walk stands on
        ("n_cards", np.int64),
        ("a", np.int64),  # the swap being tried
        ("b", np.int64),
    ],
    align=True,
)


# ------------------------------------------------------------------ scoring


# Scores, deals and the walks' steps are functions of numbers and arrays (no records), so
# that the GPU's kernels (beggar_env.search.gpu_searchers) compile these same functions from source.


@jit
def score_of(objective, outcome, cards, tricks):
    """A finished game's place in an objective's list: cards or tricks of a game that
    ends, the cards to the first repeat of one that never does; NOT_ELIGIBLE otherwise."""
    if objective == Objective.CYCLE:
        return cards if outcome == Outcome.CYCLE else NOT_ELIGIBLE
    if outcome != Outcome.WIN:
        return NOT_ELIGIBLE
    return cards if objective == Objective.CARDS else tricks


@jit
def fitness_of(objective, outcome, cards, tricks):
    """What a walk climbs: the score, with a game that ends as a stepping stone (its cards)
    towards one that never does."""
    if objective == Objective.CYCLE:
        return cards + (CYCLE_BONUS if outcome == Outcome.CYCLE else 0)
    return max(score_of(objective, outcome, cards, tricks), 0)


@jit
def score(objective, r):
    """:func:`score_of` a result record."""
    return score_of(objective, r.outcome, r.cards, r.tricks)


@jit
def fitness(objective, r):
    """:func:`fitness_of` a result record."""
    return fitness_of(objective, r.outcome, r.cards, r.tricks)


@jit
def is_candidate(outcome, cards, tricks, thresholds):
    """Whether a game may enter a list: its score reaches an objective's threshold."""
    for objective in range(thresholds.shape[0]):
        points = score_of(objective, outcome, cards, tricks)
        if points != NOT_ELIGIBLE and points >= thresholds[objective]:
            return True
    return False


# -------------------------------------------------------------------- walks


@jit
def _unit_length(settings, u):
    return min(settings.unit_games, settings.end_game - u * settings.unit_games)


@jit
def next_draw(rng):
    """A walk's counter after ``rng``, and its draw: (counter, draw)."""
    rng += _GOLDEN
    return rng, mix64(rng)


@jit
def walk_counter(key):
    """The counter of the walk whose start deal is shuffled by ``key``."""
    return mix64(key ^ _WALK_SALT)


@jit
def propose(rng, deal, n_cards):
    """Swap two cards of different classes of ``deal`` (it has at least two classes);
    (counter, the two places)."""
    n = np.uint64(n_cards)
    while True:
        rng, x = next_draw(rng)
        a = np.int64((x >> np.uint64(32)) % n)
        b = np.int64((x & np.uint64(0xFFFFFFFF)) % n)
        if deal[a] != deal[b]:
            break
    deal[a], deal[b] = deal[b], deal[a]
    return rng, a, b


@jit
def accepts(rng, fit, current, temperature, step, length):
    """Whether game ``step`` of a walk of ``length``, of fitness ``fit``, replaces the
    deal of fitness ``current``: no worse, or (annealing) a draw below ``exp(gain / T)``;
    (counter, verdict).

    Parameters
    ----------
    rng : the walk's counter
    fit : the new deal's fitness
    current : the fitness of the deal the walk stands on
    temperature : the walk's starting temperature
    step, length : the game's place in the walk, and the walk's games
    """
    if fit >= current:
        return rng, True
    cooled = temperature * (1.0 - step / length)
    if cooled <= 0.0:
        return rng, False
    rng, x = next_draw(rng)
    return rng, (x >> np.uint64(11)) * _TO_UNIT < math.exp((fit - current) / cooled)


@jit
def start_walk(seed, u, n_starts, starts, start_sizes, deal, sizes, deck):
    """Walk ``u``'s start deal into ``deal`` and ``sizes``: start deal ``u % n_starts``, or
    a shuffled deck; (its counter, its cards).

    Parameters
    ----------
    seed, u : the search's seed and the walk's unit
    n_starts, starts, start_sizes : the start deals (classes, hand sizes), if any
    deal, sizes : the walk's deal, written
    deck : a deck's room
    """
    key = derive_key(seed, u)
    if n_starts > 0:
        k = u % n_starts
        for j in range(deal.shape[0]):
            deal[j] = starts[k, j]
        for p in range(sizes.shape[0]):
            sizes[p] = start_sizes[k, p]
    else:
        core.shuffle_deck(key, deck)
        deal_deck(deck, deal, sizes)
    n_cards = 0
    for p in range(sizes.shape[0]):
        n_cards += sizes[p]
    return walk_counter(key), n_cards


# --------------------------------------------------------------- the kernel


@jit
def _keep(c, index, r, deal, sizes, found_index, found_results, found_deals, found_sizes, n_found):
    k = n_found[c]
    found_index[c, k] = index
    dst = found_results[c, k]
    dst.outcome = r.outcome
    dst.winner = r.winner
    dst.cards = r.cards
    dst.tricks = r.tricks
    dst.hand_sizes[:] = r.hand_sizes
    dst.cycle_start_cards = r.cycle_start_cards
    dst.cycle_start_tricks = r.cycle_start_tricks
    dst.cycle_cards = r.cycle_cards
    dst.cycle_tricks = r.cycle_tricks
    found_deals[c, k, :] = 0
    n = sizes.sum()
    found_deals[c, k, :n] = deal[:n]
    found_sizes[c, k, :] = sizes
    n_found[c] = k + 1


def _search(
    settings_array,
    n_units,
    thresholds,
    starts,
    start_sizes,
    deals,
    sizes,
    decks,
    walkers,
    work,
    progress,
    results,
    found_index,
    found_results,
    found_deals,
    found_sizes,
    n_found,
    budget,
):
    """Play units ``settings.first ..`` ``+ n_units - 1`` (``settings_array[0]``) in ``work.shape[0]`` contiguous
    chunks, about ``budget`` cards per chunk and call; call again until every chunk is
    done (``progress[c].done`` counts its units) and drain the found buffers between calls."""
    n_chunks = work.shape[0]
    for c in prange(n_chunks):
        settings = settings_array[0]  # a record passed to a parallel loop must come from an array
        f, w, s, r = progress[c], walkers[c], work[c, 0], results[c]
        lo, hi = core.chunk_bounds(c, n_chunks, n_units)
        left = budget
        while lo + f.done < hi and left > 0 and n_found[c] < found_index.shape[1]:
            u = settings.first + lo + f.done
            length = _unit_length(settings, u)
            if f.phase == Phase.DEAL:
                if settings.strategy == Strategy.RANDOM:
                    key = derive_key(settings.seed, u * settings.unit_games + w.step)
                    core.init_shuffled_state(s, key, NO_LIMIT, NO_LIMIT, decks[c])
                else:
                    if w.step == 0:
                        w.rng, w.n_cards = start_walk(
                            settings.seed, u, starts.shape[0], starts, start_sizes, deals[c], sizes[c], decks[c]
                        )
                    else:
                        w.rng, w.a, w.b = propose(w.rng, deals[c], w.n_cards)
                    core.init_state(s, deals[c], sizes[c], NO_LIMIT, NO_LIMIT)
                f.phase = Phase.START
            left = core.finish(s, True, r, work[c, 1], work[c, 2], f, left)
            if f.phase != Phase.DONE:
                continue
            if is_candidate(r.outcome, r.cards, r.tricks, thresholds):
                if settings.strategy == Strategy.RANDOM:
                    deal_deck(decks[c], deals[c], sizes[c])
                index = u * settings.unit_games + w.step
                _keep(c, index, r, deals[c], sizes[c], found_index, found_results, found_deals, found_sizes, n_found)
            if settings.strategy == Strategy.LOCAL:
                fit = fitness(settings.objective, r)
                keep = w.step == 0
                if not keep:
                    w.rng, keep = accepts(w.rng, fit, w.current, settings.temperature, w.step, length)
                if keep:
                    w.current = fit
                else:
                    deals[c, w.a], deals[c, w.b] = deals[c, w.b], deals[c, w.a]
            w.step += 1
            if w.step >= length:
                w.step = 0
                f.done += 1
            f.phase = Phase.DEAL


search_serial, search_parallel = serial_and_parallel(_search)


# ------------------------------------------------------------------ the job


def pack_starts(starts, n_players):
    """Start deals as (cards int8 [n, width], hand_sizes int32 [n, players]), checked."""
    deals = [parse_deal(deal) for deal in starts]
    width = max([core.DECK_SIZE] + [deal.n_cards for deal in deals])
    cards = np.zeros((len(deals), width), np.int8)
    sizes = np.zeros((len(deals), n_players), np.int32)
    for i, deal in enumerate(deals):
        if deal.n_players != n_players:
            raise ValueError(f"start deal {i} has {deal.n_players} players, the search {n_players}")
        classes = deal.classes()
        if len(set(classes.tolist())) < 2:
            raise ValueError(f"start deal {i} has cards of one class only: no swap changes it")
        cards[i, : len(classes)] = classes
        sizes[i] = deal.hand_sizes
    return cards, sizes


@dataclass
class RangeFinds:
    """What a range of units gave: the top K of its games per objective, and how many games."""

    lo: int
    hi: int
    games: int
    finds: list


@dataclass(frozen=True)
class SearchJob:
    """One seeded search, as ranges of work units that any process can run (picklable,
    small: workers build their own buffers)."""

    n_players: int
    strategy: str
    objective: str
    seed: int
    unit_games: int  # 1 for random, walk_steps for local
    end_game: int  # the deal budget (NO_LIMIT: none)
    temperature: float = 0.0
    starts: tuple = ()
    top: int = 10

    def units_for(self, n_games):
        """Units needed for the first ``n_games`` games."""
        return -(-n_games // self.unit_games)

    def games_in(self, lo, hi):
        """Games in units lo .. hi - 1 (the last unit of the budget may be cut)."""
        return max(0, min(hi * self.unit_games, self.end_game) - lo * self.unit_games)

    def warm(self):
        """Load (or compile) the searcher before any timed work: a few games of a twin job."""
        twin = SearchJob(self.n_players, self.strategy, self.objective, self.seed, 2, 4, 1.0, self.starts, 1)
        twin.run(0, 2, np.zeros(len(OBJECTIVES), np.int64), threads=1)

    def run(self, lo, hi, thresholds, threads=1, progress=None) -> RangeFinds:
        """Play units ``lo .. hi - 1``; return the top K per objective of their games that
        reach ``thresholds`` (int64 per objective), as :class:`~beggar_env.search.finds.Find`
        (``found_at`` unset). ``threads`` > 1 runs the parallel build on that many threads
        (None: all); ``progress(games)`` is called between compiled calls."""
        start_cards, start_sizes = pack_starts(self.starts, self.n_players)
        width = start_cards.shape[1]
        settings = np.zeros(1, SETTINGS_DTYPE)
        s = settings[0]
        s["strategy"] = STRATEGIES.index(self.strategy)
        s["objective"] = OBJECTIVES.index(self.objective)
        s["seed"] = np.uint64(self.seed)
        s["first"] = lo
        s["unit_games"] = self.unit_games
        s["end_game"] = self.end_game
        s["temperature"] = self.temperature
        found = TopLists(self.top)
        floor = np.asarray(thresholds, np.int64)
        if threads == 1:
            return self._run(
                search_serial, 1, settings, lo, hi, floor, found, width, start_cards, start_sizes, progress
            )
        with parallel(threads) as n_threads:
            return self._run(
                search_parallel,
                n_threads * CHUNKS_PER_THREAD,
                settings,
                lo,
                hi,
                floor,
                found,
                width,
                start_cards,
                start_sizes,
                progress,
            )

    def _run(self, kernel, n_chunks, settings, lo, hi, floor, found, width, start_cards, start_sizes, progress):
        n_units = hi - lo
        capacity = core.capacity_for(width)
        work, chunk_progress = core.new_work(n_chunks, self.n_players, capacity)
        results = core.new_results(n_chunks, self.n_players)
        walkers = np.zeros(n_chunks, WALKER_DTYPE)
        deals = np.zeros((n_chunks, width), np.int8)
        sizes = np.zeros((n_chunks, self.n_players), np.int32)
        decks = np.zeros((n_chunks, core.DECK_SIZE), np.int64)
        found_index = np.zeros((n_chunks, FOUND_PER_CHUNK), np.int64)
        found_results = np.zeros((n_chunks, FOUND_PER_CHUNK), core.result_dtype(self.n_players))
        found_deals = np.zeros((n_chunks, FOUND_PER_CHUNK, width), np.int8)
        found_sizes = np.zeros((n_chunks, FOUND_PER_CHUNK, self.n_players), np.int32)
        n_found = np.zeros(n_chunks, np.int64)
        thresholds = floor.copy()
        while core.batch_done(chunk_progress) < n_units:
            kernel(
                settings,
                n_units,
                thresholds,
                start_cards,
                start_sizes,
                deals,
                sizes,
                decks,
                walkers,
                work,
                chunk_progress,
                results,
                found_index,
                found_results,
                found_deals,
                found_sizes,
                n_found,
                core.CALL_BUDGET,
            )
            for c in range(n_chunks):
                for k in range(n_found[c]):
                    found.add(self.find(found_index[c, k], found_results[c, k], found_deals[c, k], found_sizes[c, k]))
            n_found[:] = 0
            thresholds = np.maximum(floor, found.thresholds())
            if progress is not None:
                progress(self._games_done(lo, n_units, chunk_progress, walkers))
        return RangeFinds(lo, hi, self.games_in(lo, hi), found.finds())

    def _games_done(self, lo, n_units, chunk_progress, walkers):
        n_chunks = len(walkers)
        games = 0
        for c in range(n_chunks):
            first, _ = core.chunk_bounds(c, n_chunks, n_units)
            done = int(chunk_progress["done"][c])
            games += self.games_in(lo + first, lo + first + done) + int(walkers["step"][c])
        return games

    def find(self, index, record, classes, sizes):
        """Game ``index``'s :class:`~beggar_env.search.finds.Find`, from its result record,
        its deal's classes and hand sizes (this machine's or the GPU's)."""
        hands, start = [], 0
        for size in sizes:
            hands.append(classes[start : start + size].tolist())
            start += size
        return Find.from_record(
            Deal.from_classes(hands),
            record,
            strategy=self.strategy,
            seed=self.seed,
            index=int(index),
        )

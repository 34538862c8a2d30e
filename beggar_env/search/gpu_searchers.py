"""Search on a GPU (``search(..., backend="cuda")``), beside the CPU's
:mod:`~beggar_env.search.searchers`: the same finds, with searchers' own scoring and walk
steps compiled for the GPU (:func:`beggar_env.gpu.kernels.twins_of`).

``random``: every game of a range is played on the device over the games kernel's frame
(:func:`beggar_env.gpu.kernels.games_kernel_of`), and only the games that may enter a top
list (:func:`~beggar_env.search.searchers.is_candidate` against the thresholds) come
back; a first small launch fills the lists, so that later ones send a handful.
``local``: one walk a GPU thread (:class:`Walks`).

The walks' steps are searchers' own functions; with a temperature, the GPU's ``exp``
(libdevice, within 1 ulp) may round otherwise than the CPU's, so a draw within an ulp of
``exp(gain / T)`` could part the walks on a real GPU (under the simulator both use the C
library's).

Imported by the search's driver only once :func:`beggar_env.gpu.require_cuda` found
numba-cuda and a GPU (or the simulator): importing ``numba.cuda`` needs them.
"""

import functools

import numba
import numpy as np
from numba import cuda  # a global, which the simulator swaps for its own in a running kernel

from .. import core, gpu
from ..core import DECK_SIZE, NO_LIMIT, Outcome, deal_deck
from ..gpu.kernels import (
    device,
    finish_now,
    games_kernel_of,
    init_state,
    kernel_jit,
    record_types,
    records,
    result_length,
    twins_of,
    write_row,
)
from . import searchers
from .finds import OBJECTIVES, TopLists
from .searchers import NOT_ELIGIBLE, RangeFinds, pack_starts

LAUNCH_WALKS = 1 << 16  # local search: walks on the GPU at once, one a thread
WALK_LAUNCH_GAMES = 1 << 24  # local search: about this many games per launch, all walks together
FIRST_LAUNCH = 1 << 14  # random search: games of a launch while the lists are not full
W_STEP, W_CURRENT, W_N_CARDS = range(3)  # a walk's int64 row (its counter is apart: uint64)
FOUND_PER_WALK = 8  # candidates a walk may keep per launch: a full buffer pauses the walk
WALK_STEPS = ("score_of", "fitness_of", "is_candidate", "next_draw", "walk_counter", "propose", "accepts", "start_walk")


def run(job, lo, hi, thresholds, progress=None) -> RangeFinds:
    """:meth:`SearchJob.run <beggar_env.search.searchers.SearchJob.run>` on the GPU: the
    same finds of ``job``'s units ``lo .. hi - 1``; ``progress(games)`` after each launch."""
    found = TopLists(job.top)
    floor = np.asarray(thresholds, np.int64)
    if job.strategy == "local":
        _walk(job, lo, hi, floor, found, progress)
    else:
        _play_random(job, lo, hi, floor, found, progress)
    return RangeFinds(lo, hi, job.games_in(lo, hi), found.finds())


def _play_random(job, lo, hi, floor, found, progress):
    end, a = lo + job.games_in(lo, hi), lo
    while a < end:
        thresholds = np.maximum(floor, found.thresholds())
        b = min(a + (gpu.LAUNCH_GAMES if thresholds[:2].all() else FIRST_LAUNCH), end)
        played, rows = candidate_rows(job.seed, a, b - a, job.n_players, thresholds)
        for k in candidates(rows, thresholds, job.top):
            deck = np.zeros((1, DECK_SIZE), np.int64)
            core.shuffled_decks(np.uint64(job.seed), a + played[k], deck)
            classes = np.zeros(DECK_SIZE, np.int8)
            sizes = np.zeros(job.n_players, np.int32)
            deal_deck(deck[0], classes, sizes)
            found.add(_row_find(job, a + int(played[k]), rows[k], classes, sizes))
        if progress is not None:
            progress(b - lo)
        a = b


def _walk(job, lo, hi, floor, found, progress):
    start_cards, start_sizes = pack_starts(job.starts, job.n_players)
    objective = OBJECTIVES.index(job.objective)
    before = 0  # games of the earlier launches' walks
    for a in range(lo, hi, LAUNCH_WALKS):
        b = min(a + LAUNCH_WALKS, hi)
        settings = (objective, job.seed, job.unit_games, job.end_game, job.temperature)
        walks = Walks(job.n_players, start_cards, start_sizes, a, b - a, settings)
        while not walks.done:
            for index, row, classes, sizes in walks.launch(np.maximum(floor, found.thresholds())):
                found.add(_row_find(job, index, row, classes, sizes))
            if progress is not None:
                progress(before + walks.played)
        before += walks.played


def _row_find(job, index, row, classes, sizes):
    record = core.new_results(1, job.n_players)
    gpu.rows_to_records(row[None], record)
    return job.find(index, record[0], classes, sizes)


def candidates(rows, thresholds, top):
    """The games of GPU result rows that may enter a top list: per objective, the ``top``
    best (higher score, then earlier game) of those that reach its threshold (as
    searchers' ``score`` and ``is_candidate``); their row numbers."""
    outcome, cards, tricks = rows[:, 0], rows[:, 2], rows[:, 3]
    won = outcome == Outcome.WIN
    scores = (
        np.where(won, cards, NOT_ELIGIBLE),
        np.where(won, tricks, NOT_ELIGIBLE),
        np.where(outcome == Outcome.CYCLE, cards, NOT_ELIGIBLE),
    )
    picked = set()
    for objective, points in enumerate(scores):
        eligible = np.flatnonzero((points != NOT_ELIGIBLE) & (points >= thresholds[objective]))
        order = np.lexsort((eligible, -points[eligible]))  # the higher score, then the earlier game
        picked.update(eligible[order[:top]].tolist())
    return sorted(picked)


# ------------------------------------------------------------------ random search


@functools.cache
def candidates_kernel(n_players, capacity, width, threads):
    """The games kernel keeping only the games that may enter a top list (searchers'
    ``is_candidate`` against the thresholds): ``out`` is (thresholds int64[3], n_kept
    int64[1], kept int64[room], rows int64[room, row]); game ``i`` adds ``i`` and its row at
    ``n_kept[0]`` (counted beyond the room, written within it)."""
    is_candidate = twins_of(searchers, ("score_of", "is_candidate"))["is_candidate"]

    @device
    def keep_candidate(i, r, out):
        thresholds, n_kept, kept, rows = out
        if is_candidate(r.outcome, r.cards, r.tricks, thresholds):
            slot = cuda.atomic.add(n_kept, 0, 1)
            if slot < kept.shape[0]:
                kept[slot] = i
                write_row(r, rows[slot])

    return games_kernel_of(n_players, capacity, width, threads, keep_candidate)


def candidate_rows(seed, first, n_games, n_players, thresholds, room=None):
    """Of random games ``first .. first + n_games - 1`` of the stream ``seed`` (cycles
    detected, no limit), those that may enter a top list (``is_candidate`` against
    ``thresholds``, one per objective), chosen on the device: their numbers in the launch
    and their result rows, in one launch (again, with room for all, when more than
    ``room``, by default :data:`beggar_env.gpu.KEPT_ROOM`, are kept).

    Parameters
    ----------
    seed, first : the random stream and the launch's first game
    n_games : the games of the launch
    n_players : seats at the table
    thresholds : the score each objective's list asks for
    room : the rows kept at first (None: :data:`beggar_env.gpu.KEPT_ROOM`)
    """
    room = gpu.KEPT_ROOM if room is None else room
    thresholds = cuda.to_device(np.asarray(thresholds, np.int64))
    n_kept = cuda.to_device(np.zeros(1, np.int64))
    kept = cuda.device_array(room, np.int64)
    rows = cuda.device_array((room, result_length(n_players)), np.int64)
    deals = core.shuffled_deals(np.uint64(seed), first)
    limits = (NO_LIMIT, NO_LIMIT, True)
    capacity, out = core.capacity_for(DECK_SIZE), (thresholds, n_kept, kept, rows)
    gpu.launch_games(candidates_kernel, deals, n_games, n_players, capacity, limits, out)
    count = int(n_kept.copy_to_host()[0])
    if count > room:
        return candidate_rows(seed, first, n_games, n_players, thresholds.copy_to_host(), count)
    order = np.argsort(kept.copy_to_host()[:count], kind="stable")  # in the order of the games
    return kept.copy_to_host()[:count][order], rows.copy_to_host()[:count][order]


# ------------------------------------------------------------------- local search


class Walks:
    """Local search's walks ``first .. first + n_walks - 1`` on the GPU, one a thread: each
    :meth:`launch` plays about :data:`WALK_LAUNCH_GAMES` games of them and returns the
    games that reached the thresholds. A walk pauses when its buffer of candidates is full
    and goes on at the next launch, so what it keeps does not depend on the launches: the
    CPU's chunks do the same. ``settings``: (objective, seed, unit_games, end_game,
    temperature), as the job's.

    Parameters
    ----------
    n_players : seats at the table
    starts, start_sizes : the start deals (classes, hand sizes), if any
    first, n_walks : the walks (units) of the range
    settings : (objective, seed, unit_games, end_game, temperature)
    """

    def __init__(self, n_players, starts, start_sizes, first, n_walks, settings):
        objective, seed, unit_games, end_game, temperature = settings
        width = starts.shape[1]
        self.kernel = walks_kernel(n_players, core.capacity_for(width), width)
        self.settings = (
            np.int8(objective),
            np.uint64(seed),
            np.int64(first),
            np.int64(unit_games),
            np.int64(end_game),
            np.float64(temperature),
        )
        self.first, self.unit_games, self.n_walks = first, unit_games, n_walks
        n_starts = len(starts)
        if n_starts == 0:  # no empty arrays on the device
            starts, start_sizes = np.zeros((1, width), np.int8), np.zeros((1, n_players), np.int32)
        self.starts = (np.int64(n_starts), cuda.to_device(starts), cuda.to_device(start_sizes))
        self.lengths = np.clip(end_game - (first + np.arange(n_walks)) * unit_games, 0, unit_games)
        self.steps = np.int64(max(1, WALK_LAUNCH_GAMES // n_walks))
        device_array = cuda.to_device
        self.deals = device_array(np.zeros((n_walks, width), np.int8))
        self.sizes = device_array(np.zeros((n_walks, n_players), np.int32))
        self.walks = device_array(np.zeros((n_walks, 3), np.int64))
        self.counters = device_array(np.zeros(n_walks, np.uint64))
        self.found = (
            device_array(np.zeros((n_walks, FOUND_PER_WALK), np.int64)),
            device_array(np.zeros((n_walks, FOUND_PER_WALK, result_length(n_players)), np.int64)),
            device_array(np.zeros((n_walks, FOUND_PER_WALK, width), np.int8)),
        )
        self.played = 0  # games played so far, all walks
        self.done = not self.lengths.any()

    def launch(self, thresholds):
        """Play on; the games that reached ``thresholds`` (int64 per objective) as
        (index, result row, deal's classes, hand sizes), and update :attr:`played` and
        :attr:`done`."""
        n_found = cuda.to_device(np.zeros(self.n_walks, np.int64))
        threads = gpu.threads_per_block()
        self.kernel[gpu.blocks_for(self.n_walks, threads), threads](
            *self.settings,
            cuda.to_device(np.asarray(thresholds, np.int64)),
            *self.starts,
            self.steps,
            self.deals,
            self.sizes,
            self.walks,
            self.counters,
            *self.found,
            n_found,
        )
        n_found = n_found.copy_to_host()
        finds = []
        if n_found.any():
            steps, rows, deals = (a.copy_to_host() for a in self.found)
            sizes = self.sizes.copy_to_host()
            for i in np.flatnonzero(n_found):
                for k in range(n_found[i]):
                    index = (self.first + int(i)) * self.unit_games + int(steps[i, k])
                    finds.append((index, rows[i, k], deals[i, k], sizes[i]))
        played = self.walks.copy_to_host()[:, W_STEP]
        self.played = int(played.sum())
        self.done = bool((played >= self.lengths).all())
        return finds


@functools.cache
def walks_kernel(n_players, capacity, width):
    """The kernel of local search (searchers._search's walks), one walk per thread:
    ``kernel[blocks, threads](objective, seed, first, unit_games, end_game, temperature,
    thresholds, n_starts, starts, start_sizes, steps, deals, sizes, walks, counters,
    found_step, found_rows, found_deals, n_found)``. Walk ``i`` is unit ``first + i``; a
    launch plays up to ``steps`` of its games and stops early when its buffer of
    candidates is full; ``deals``, ``sizes``, ``walks`` and ``counters`` hold where it
    stands for the next launch. The walk's steps are searchers' own.
    """
    state_type, result_type, progress_type = record_types(n_players, capacity)
    steps = twins_of(searchers, WALK_STEPS)
    start_walk, propose, accepts = steps["start_walk"], steps["propose"], steps["accepts"]
    is_candidate, fitness_of = steps["is_candidate"], steps["fitness_of"]

    @kernel_jit
    def kernel(
        objective,
        seed,
        first,
        unit_games,
        end_game,
        temperature,
        thresholds,
        n_starts,
        starts,
        start_sizes,
        steps,
        deals,
        sizes,
        walks,
        counters,
        found_step,
        found_rows,
        found_deals,
        n_found,
    ):
        i = cuda.grid(1)
        if i >= deals.shape[0]:
            return
        states = records(cuda.local.array(3, state_type))
        r = records(cuda.local.array(1, result_type))[0]
        f = records(cuda.local.array(1, progress_type))[0]
        deck = cuda.local.array(DECK_SIZE, numba.int8)
        deal, hand_sizes = deals[i], sizes[i]
        u = first + i
        length = min(unit_games, end_game - u * unit_games)
        step, current, n_cards, rng = walks[i, W_STEP], walks[i, W_CURRENT], walks[i, W_N_CARDS], counters[i]
        played = 0
        while step < length and played < steps and n_found[i] < found_step.shape[1]:  # as searchers._search
            a = b = -1
            if step == 0:
                rng, n_cards = start_walk(seed, u, n_starts, starts, start_sizes, deal, hand_sizes, deck)
            else:
                rng, a, b = propose(rng, deal, n_cards)
            init_state(states[0], deal, hand_sizes, NO_LIMIT, NO_LIMIT)
            finish_now(states[0], True, r, states[1], states[2], f)
            if is_candidate(r.outcome, r.cards, r.tricks, thresholds):
                k = n_found[i]
                found_step[i, k] = step
                write_row(r, found_rows[i, k])
                for j in range(width):
                    found_deals[i, k, j] = deal[j]
                n_found[i] = k + 1
            fit = fitness_of(objective, r.outcome, r.cards, r.tricks)
            keep = step == 0
            if not keep:
                rng, keep = accepts(rng, fit, current, temperature, step, length)
            if keep:
                current = fit
            else:
                deal[a], deal[b] = deal[b], deal[a]
            step += 1
            played += 1
        walks[i, W_STEP], walks[i, W_CURRENT], walks[i, W_N_CARDS] = step, current, n_cards
        counters[i] = rng

    return kernel

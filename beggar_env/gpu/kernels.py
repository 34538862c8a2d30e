"""The engine as CUDA kernels (numba-cuda), one game per thread, compiled from the CPU's own
source: :mod:`beggar_env.core`'s rules, the search walks' steps
(:mod:`beggar_env.search.searchers`) and the rollouts (:mod:`beggar_env.forecasting.rollouts`).

Imported only by :mod:`beggar_env.gpu` once it found numba-cuda and a GPU (or numba's CUDA
simulator, ``NUMBA_ENABLE_CUDASIM=1``): importing ``numba.cuda`` needs them.

Nothing of the rules is written again here. :func:`device_twins` compiles each compiled
function of those modules for the GPU from its own source, calling the other functions'
GPU twins (a module they reach as ``core.f`` is given as a module of twins), so the GPU
runs the CPU's code and a seed gives the same games. numba-cuda compiles core as written:
its state, result and progress records live in each thread's local memory
(``cuda.local.array`` of core's record types: the game, and cycle detection's start and
probe, about 0.9 KB a thread for 2 players), and ``core.finish_now`` plays a game to its
end. What is here is the GPU's own: how threads share out the work, the shared-memory
backlog of deals, and the result rows written for the host.

Each block of :func:`games_kernel` owns a contiguous range of games and plays it in rounds:
its threads deal a backlog of ready deals into shared memory (byte-sized cards), then each
thread takes the next ready deal (an atomic counter in shared memory) as soon as its game
ends, so one long game does not hold the others of its block back; the next round starts
when the backlog is spent. :func:`walks_kernel` plays local search, one walk a thread;
:func:`rollouts_kernel` the Bayes forecaster's rollouts, one position a thread.
"""

import functools
import types
from types import FunctionType

import numba
import numpy as np
from numba import cuda
from numba.core.registry import CPUDispatcher

from .. import core
from ..core import DECK_SIZE, NO_LIMIT, Outcome

LIMIT = int(Outcome.LIMIT)
# offsets in a result row (int64): as core.result_dtype, hand sizes last
R_OUTCOME, R_WINNER, R_CARDS, R_TRICKS, R_CYCLE_START_CARDS, R_CYCLE_START_TRICKS, R_CYCLE_CARDS, R_CYCLE_TRICKS = (
    range(8)
)
R_HAND_SIZES = 8
RESULT_FIELDS = ("outcome", "winner", "cards", "tricks") + core.result_dtype(2).names[5:]
SHARED_BYTES = 32 * 1024  # a block's backlog of deals stays below this


def result_length(n_players):
    return R_HAND_SIZES + n_players


def device_twins(module, names, known=(), modules=()):
    """``module``'s compiled functions ``names`` compiled for the GPU from their own source,
    calling each other's twins and those ``known`` (name: twin), with the modules
    ``modules`` (name: module of twins) in place of those it reaches as ``name.f``: the
    same code, so the same numbers."""
    namespace = dict(vars(module))
    namespace.update(known)
    namespace.update(modules)
    twins = dict(known)
    for name in names:
        f = getattr(module, name).py_func
        twin = FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
        namespace[name] = twins[name] = cuda.jit(device=True)(twin)
    return twins


def _compiled(module):
    """The names of ``module``'s compiled functions that a GPU can run (not the parallel ones)."""
    return [
        name
        for name, value in vars(module).items()
        if isinstance(value, CPUDispatcher)
        and value.__module__ == module.__name__
        and not value.targetoptions.get("parallel")
    ]


def _module_of(module, twins):
    twin_module = types.ModuleType(f"{module.__name__} on the GPU")
    vars(twin_module).update(vars(module))
    vars(twin_module).update(twins)
    return twin_module


_core = device_twins(core, _compiled(core))
_gpu_core = {"core": _module_of(core, _core)}
init_state, finish_now, derive_key, shuffle_deck, deal_deck = (
    _core[n] for n in ("init_state", "finish_now", "derive_key", "shuffle_deck", "deal_deck")
)
WALK_STEPS = ("score_of", "fitness_of", "is_candidate", "next_draw", "walk_counter", "propose", "accepts", "start_walk")


@functools.cache
def twins_of(module, names, reaches=()):
    """The GPU twins of an upper floor's functions ``names`` of ``module`` (search's walk
    steps, the rollouts, the census): the caller hands its own modules over, so that this
    floor imports nothing above it. They call core's twins and, for each ``(name, other,
    other_names)`` of ``reaches``, the twins of ``other``'s functions ``other_names``,
    which ``module`` reaches as ``name.f``."""
    modules = dict(_gpu_core)
    for name, other, other_names in reaches:
        modules[name] = _module_of(other, twins_of(other, other_names))
    return device_twins(module, names, _core, modules)


device = cuda.jit(device=True)

if numba.config.ENABLE_CUDASIM:

    def records(a):
        """The simulator's local arrays are numpy's: core reads records by attribute."""
        return a.view(np.recarray)

    def kernel_jit(function):
        """``cuda.jit`` of a kernel, whose threads the simulator runs as Python threads with
        numpy scalars: core's uint64 hashing wraps there, as it does (silently) on the GPU
        and the CPU, but numpy warns of overflow; numpy's error state belongs to each thread,
        so it is set in the kernel's body. The body keeps ``function``'s globals, where the
        simulator puts its ``cuda`` while the kernel runs."""
        errstate = np.errstate

        def wrapping(*args):
            with errstate(over="ignore"):
                return function(*args)

        code, closure = wrapping.__code__, wrapping.__closure__
        return cuda.jit(FunctionType(code, function.__globals__, function.__name__, None, closure))

else:

    @device
    def records(a):
        return a

    kernel_jit = cuda.jit


def record_types(n_players, capacity):
    """numba's types of core's state, result and progress records."""
    return (
        numba.from_dtype(core.state_dtype(n_players, capacity)),
        numba.from_dtype(core.result_dtype(n_players)),
        numba.from_dtype(core.PROGRESS_DTYPE),
    )


@device
def _write_row(r, row):
    """Result record ``r`` as a result row (the R_* offsets)."""
    row[R_OUTCOME] = r.outcome
    row[R_WINNER] = r.winner
    row[R_CARDS] = r.cards
    row[R_TRICKS] = r.tricks
    row[R_CYCLE_START_CARDS] = r.cycle_start_cards
    row[R_CYCLE_START_TRICKS] = r.cycle_start_tricks
    row[R_CYCLE_CARDS] = r.cycle_cards
    row[R_CYCLE_TRICKS] = r.cycle_tricks
    for p in range(r.hand_sizes.shape[0]):
        row[R_HAND_SIZES + p] = r.hand_sizes[p]


@device
def block_range(n_items):
    """This block's contiguous share of ``n_items`` (core.chunk_bounds)."""
    b = cuda.blockIdx.x
    n_blocks = cuda.gridDim.x
    return b * n_items // n_blocks, (b + 1) * n_items // n_blocks


def backlog_deals(threads, width, n_players):
    """Deals in a block's backlog: four per thread, within :data:`SHARED_BYTES`."""
    return max(1, min(4 * threads, SHARED_BYTES // (width + 2 * n_players)))


# ------------------------------------------------------------------- games


@device
def deal_backlog(given, given_cards, given_sizes, seed, first, round_lo, n_ready, ready, ready_sizes, deck):
    """The threads of a block deal games ``round_lo .. round_lo + n_ready - 1`` into the
    backlog ``ready``/``ready_sizes`` together: given deals copied, or random ones of the
    stream ``seed`` (game ``first + i``)."""
    for slot in range(cuda.threadIdx.x, n_ready, cuda.blockDim.x):
        i = round_lo + slot
        if given:
            for j in range(ready.shape[1]):
                ready[slot, j] = given_cards[i, j]
            for p in range(ready_sizes.shape[1]):
                ready_sizes[slot, p] = given_sizes[i, p]
        else:
            shuffle_deck(derive_key(seed, first + i), deck)
            deal_deck(deck, ready[slot], ready_sizes[slot])


def _games_kernel(n_players, capacity, width, threads, play_game):
    """A kernel that plays a launch's games, a block's range in rounds of a shared backlog
    (the module docstring), each finished game handed to ``play_game(i, r, out...)``, a
    device function that keeps what it needs of game ``i``'s result record ``r``."""
    backlog = backlog_deals(threads, width, n_players)
    state_type, result_type, progress_type = record_types(n_players, capacity)

    @kernel_jit
    def kernel(given, given_cards, given_sizes, seed, first, n_games, max_cards, max_tricks, detect_cycles, out):
        ready = cuda.shared.array((backlog, width), numba.int8)  # the backlog: byte-sized cards
        ready_sizes = cuda.shared.array((backlog, n_players), numba.int16)
        taken = cuda.shared.array(1, numba.int32)
        states = records(cuda.local.array(3, state_type))  # the game, cycle detection's start and probe
        r = records(cuda.local.array(1, result_type))[0]
        f = records(cuda.local.array(1, progress_type))[0]
        deck = cuda.local.array(DECK_SIZE, numba.int8)
        lo, hi = block_range(n_games)
        for round_lo in range(lo, hi, backlog):
            n_ready = min(backlog, hi - round_lo)
            deal_backlog(given, given_cards, given_sizes, seed, first, round_lo, n_ready, ready, ready_sizes, deck)
            if cuda.threadIdx.x == 0:
                taken[0] = 0
            cuda.syncthreads()
            slot = cuda.atomic.add(taken, 0, 1)
            while slot < n_ready:  # a thread whose game ended takes the next ready deal
                init_state(states[0], ready[slot], ready_sizes[slot], max_cards, max_tricks)
                finish_now(states[0], detect_cycles, r, states[1], states[2], f)
                play_game(round_lo + slot, r, out)
                slot = cuda.atomic.add(taken, 0, 1)
            cuda.syncthreads()

    return kernel


@device
def _keep_row(i, r, out):
    _write_row(r, out[i])


@functools.cache
def games_kernel(n_players, capacity, width, threads):
    """The kernel that plays a launch's games: ``kernel[blocks, threads](given, cards,
    sizes, seed, first, n_games, max_cards, max_tricks, detect_cycles, out)``; game ``i`` is
    ``cards[i]``/``sizes[i]`` when ``given``, else game ``first + i`` of the random stream
    ``seed``; ``out[i]`` its result row."""
    return _games_kernel(n_players, capacity, width, threads, _keep_row)


@functools.cache
def candidates_kernel(n_players, capacity, width, threads, searchers_module):
    """:func:`games_kernel` keeping only the games that may enter a top list (searchers'
    ``is_candidate`` against the thresholds, from ``searchers_module``): ``out`` is
    (thresholds int64[3], n_kept int64[1], kept int64[room], rows int64[room, row]); game
    ``i`` adds ``i`` and its row at ``n_kept[0]`` (counted beyond the room, written within it)."""
    is_candidate = twins_of(searchers_module, ("score_of", "is_candidate"))["is_candidate"]

    @device
    def keep_candidate(i, r, out):
        thresholds, n_kept, kept, rows = out
        if is_candidate(r.outcome, r.cards, r.tricks, thresholds):
            slot = cuda.atomic.add(n_kept, 0, 1)
            if slot < kept.shape[0]:
                kept[slot] = i
                _write_row(r, rows[slot])

    return _games_kernel(n_players, capacity, width, threads, keep_candidate)


CARD_BINS, TRICK_BINS = 4096, 1024  # the histograms of game lengths; longer games are listed apart


@functools.cache
def tally_kernel(n_players, capacity, width, threads):
    """:func:`games_kernel` counting, not keeping: ``out`` is (cards int64[CARD_BINS],
    tricks int64[TRICK_BINS], outcomes int64[4], wins int64[n_players], draws int64[1],
    n_long int64[1], long int64[room, 2]): games by cards and by tricks (a game longer than
    the bins adds its (cards, tricks) at ``n_long[0]`` instead), by outcome, wins by seat,
    draws (a limit with no winner), each an atomic add in global memory."""

    @device
    def count_game(i, r, out):
        cards, tricks, outcomes, wins, draws, n_long, long = out
        if r.cards < CARD_BINS and r.tricks < TRICK_BINS:
            cuda.atomic.add(cards, r.cards, 1)
            cuda.atomic.add(tricks, r.tricks, 1)
        else:
            slot = cuda.atomic.add(n_long, 0, 1)
            if slot < long.shape[0]:
                long[slot, 0] = r.cards
                long[slot, 1] = r.tricks
        cuda.atomic.add(outcomes, r.outcome, 1)
        if r.winner >= 0:
            cuda.atomic.add(wins, r.winner, 1)
        elif r.outcome == LIMIT:
            cuda.atomic.add(draws, 0, 1)

    return _games_kernel(n_players, capacity, width, threads, count_game)


# --------------------------------------------------------------- rollouts


@functools.cache
def rollouts_kernel(n_players, capacity, rollouts_module):
    """The kernel of rollouts.play_out (its ``roll_position``, from ``rollouts_module``): one
    position per thread, taken from the block's share as threads free up; ``counts[i]``,
    ``rollouts[i]`` and ``played[i]`` its results."""
    state_type, result_type, progress_type = record_types(n_players, capacity)
    roll_position = twins_of(rollouts_module, ("set_position", "roll_position"))["roll_position"]

    @kernel_jit
    def kernel(
        hands, unseen, pile, pile_size, table, alive, counters, max_cards, k, seed, first, counts, rollouts, played
    ):
        taken = cuda.shared.array(1, numba.int32)
        states = records(cuda.local.array(3, state_type))
        r = records(cuda.local.array(1, result_type))[0]
        f = records(cuda.local.array(1, progress_type))[0]
        bag = cuda.local.array(DECK_SIZE, numba.int8)
        positions = (hands, unseen, pile, pile_size, table, alive, counters)
        lo, hi = block_range(counts.shape[0])
        if cuda.threadIdx.x == 0:
            taken[0] = 0
        cuda.syncthreads()
        i = lo + cuda.atomic.add(taken, 0, 1)
        while i < hi:
            played[i] = roll_position(i, positions, max_cards, k, seed, first, counts, rollouts, bag, states, f, r)
            i = lo + cuda.atomic.add(taken, 0, 1)

    return kernel


# ------------------------------------------------------------ local search


W_STEP, W_CURRENT, W_N_CARDS = range(3)  # a walk's int64 row (its counter is apart: uint64)
FOUND_PER_WALK = 8  # candidates a walk may keep per launch: a full buffer pauses the walk


@functools.cache
def walks_kernel(n_players, capacity, width, searchers_module):
    """The kernel of local search (searchers._search's walks), one walk per thread:
    ``kernel[blocks, threads](objective, seed, first, unit_games, end_game, temperature,
    thresholds, n_starts, starts, start_sizes, steps, deals, sizes, walks, counters,
    found_step, found_rows, found_deals, n_found)``. Walk ``i`` is unit ``first + i``; a
    launch plays up to ``steps`` of its games and stops early when its buffer of
    candidates is full; ``deals``, ``sizes``, ``walks`` and ``counters`` hold where it
    stands for the next launch. The walk's steps are those of ``searchers_module``.
    """
    state_type, result_type, progress_type = record_types(n_players, capacity)
    steps = twins_of(searchers_module, WALK_STEPS)
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
                _write_row(r, found_rows[i, k])
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

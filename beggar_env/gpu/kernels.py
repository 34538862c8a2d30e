"""What every wing's CUDA kernels share (numba-cuda): the device twins of compiled code,
the records a thread plays in, result rows, launch geometry, and the games kernel's frame.

Imported only once :func:`beggar_env.gpu.require_cuda` found numba-cuda and a GPU (or
numba's CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``): importing ``numba.cuda`` needs them.

Nothing of the rules is written again for the GPU. :func:`device_twins` compiles each
compiled function of a module for the GPU from its own source, calling the other
functions' GPU twins (a module they reach as ``core.f`` is given as a module of twins), so
the GPU runs the CPU's code and a seed gives the same games. numba-cuda compiles core as
written: its state, result and progress records live in each thread's local memory
(``cuda.local.array`` of core's record types: the game, and cycle detection's start and
probe, about 0.9 KB a thread for 2 players), and ``core.finish_now`` plays a game to its
end.

Each wing's kernels live beside its CPU code, over the compiled steps both share:
``beggar_env.gpu_game`` (simulate and tally), ``search.gpu_searchers``,
``forecasting.gpu_rollouts``, ``cycles.gpu_census``; each twins its own steps here
(:func:`twins_of`), importing them itself.

Each block of a games kernel (:func:`games_kernel_of`) owns a contiguous range of games and
plays it in rounds: its threads deal a backlog of ready deals into shared memory
(byte-sized cards), then each thread takes the next ready deal (an atomic counter in
shared memory) as soon as its game ends, so one long game does not hold the others of its
block back; the next round starts when the backlog is spent. What a finished game leaves
is the caller's: a row, a count, a candidate.
"""

import functools
import types
from types import FunctionType

import numba
import numpy as np
from numba import cuda
from numba.core.registry import CPUDispatcher

from .. import core
from ..core import DECK_SIZE

# offsets in a result row (int64): as core.result_dtype, hand sizes last
R_OUTCOME, R_WINNER, R_CARDS, R_TRICKS, R_CYCLE_START_CARDS, R_CYCLE_START_TRICKS, R_CYCLE_CARDS, R_CYCLE_TRICKS = (
    range(8)
)
R_HAND_SIZES = 8
RESULT_FIELDS = ("outcome", "winner", "cards", "tricks") + core.result_dtype(2).names[5:]
SHARED_BYTES = 32 * 1024  # a block's backlog of deals stays below this


def result_length(n_players):
    """The int64 values of a result row of ``n_players`` players."""
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


@functools.cache
def twins_of(module, names, reaches=()):
    """The GPU twins of an upper floor's functions ``names`` of ``module`` (search's walk
    steps, the rollouts, the census), asked for by that wing's ``gpu_`` module, which imports
    its steps itself: this floor imports nothing above it. They call core's twins and, for
    each ``(name, other, other_names)`` of ``reaches``, the twins of ``other``'s functions
    ``other_names``, which ``module`` reaches as ``name.f``."""
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
def write_row(r, row):
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
    stream ``seed`` (game ``first + i``).

    Parameters
    ----------
    given : 1 when the deals are given, 0 for random ones
    given_cards, given_sizes : the given deals (classes, hand sizes), a row per game
    seed, first : the random stream and its first game
    round_lo : the round's first game, of the block's range
    n_ready : the deals of the round
    ready, ready_sizes : the backlog in shared memory, written
    deck : a deck's room, a thread's own
    """
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


def games_kernel_of(n_players, capacity, width, threads, play_game):
    """A kernel that plays a launch's games, a block's range in rounds of a shared backlog
    (the module docstring), each finished game handed to ``play_game(i, r, out)``, a
    device function that keeps what it needs of game ``i``'s result record ``r``:
    ``kernel[blocks, threads](given, cards, sizes, seed, first, n_games, max_cards,
    max_tricks, detect_cycles, out)``; game ``i`` is ``cards[i]``/``sizes[i]`` when
    ``given``, else game ``first + i`` of the random stream ``seed``."""
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

"""The rules of one card as a finite function, and its tables: what a step model learns and
what the queue machine (:mod:`~beggar_env.forecasting.machine`) reads.

One card of a game as the step sees it. In (before the rules act, the card already on the
pile): the card, the seat that played it, what was owed and to whom (court + 1, 0 for
none), who is in (bits), whose hand is now empty (bits). Out (after the rules acted): the
seat to play, what is owed and to whom, where the pile went (0: it stays; j + 1: under seat
j's hand), who is in, and the winner (0: the game goes on; j + 1: seat j has won). Each
input is one row of a table (:func:`codes`, a mixed radix of the inputs), so a step is a
table of :func:`n_inputs` rows.

* :func:`transitions`: the engine's card transitions of random games, in play order;
* :func:`tally`: the distinct transitions of many games, and how often each occurred
  (checking that the inputs determine the outputs: the step is a function);
* :func:`exact_table`: the engine's own step as a table, on the inputs some games meet.

Compiled with numba; needs no torch.
"""

import numpy as np
from numba import prange

from .. import checks, core
from ..core import Outcome
from ..jit import jit, parallel

OWED = core.N_CLASSES  # cards owed: 0 .. 4
MOST_CARDS = 100_000  # a rollout that has not ended after this many cards is scored as "no winner"

IN_NAMES = ("card", "turn", "owed", "court", "alive", "empty")
OUT_NAMES = ("turn", "owed", "court", "taker", "alive", "winner")


def in_sizes(n_players):
    """How many values each input takes."""
    p = n_players
    return (core.N_CLASSES, p, OWED, p + 1, 1 << p, 1 << p)


def out_sizes(n_players):
    """How many values each output takes (``alive`` is ``n_players`` bits)."""
    p = n_players
    return (p, OWED, p + 1, p + 1, 1 << p, p + 1)


_OUT_RADIX = np.array([out_sizes(p) for p in (2, 3, 4)], np.int64)  # by player count - 2


def n_inputs(n_players):
    """The number of distinct inputs of the step: the rows of a step's table
    (:meth:`~beggar_env.forecasting.step_model.StepModel.table`)."""
    return int(np.prod(in_sizes(n_players)))


@jit
def seat_bits(flags):
    """The seats whose flag is set, as the bits of one number (seat ``p``: bit ``p``)."""
    out = 0
    for p in range(flags.shape[0]):
        if flags[p]:
            out |= 1 << p
    return out


@jit
def input_code(card, turn, owed, court1, alive, empty, n_players):
    """The row of the table for one input (the inputs in ``IN_NAMES`` order, mixed radix).

    Parameters
    ----------
    card : the class of the card just played.
    turn : the seat that played it.
    owed : the cards owed before it (0 .. 4).
    court1 : the seat owed them, plus one (0: none).
    alive : the seats in, as bits (:func:`seat_bits`).
    empty : the seats whose hand is now empty, as bits.
    n_players : the seats at the table.
    """
    both = 1 << n_players
    return ((((card * n_players + turn) * OWED + owed) * (n_players + 1) + court1) * both + alive) * both + empty


@jit
def _before(s, row):
    """The step's input at a waiting state ``s``, as it will be once its card is on the pile."""
    t = s.turn
    row[0] = s.hands[t, s.head[t]]
    row[1] = t
    row[2] = s.owed
    row[3] = s.court + 1
    row[4] = seat_bits(s.alive)
    empty = 0
    for p in range(s.held.shape[0]):
        if s.held[p] - (1 if p == t else 0) == 0:
            empty |= 1 << p
    row[5] = empty


@jit
def _after(s, taken, out):
    """The step's output once the engine has played the card (``taken``: each hand's
    ``taken`` before it, to see where the pile went)."""
    out[0] = s.turn
    out[1] = s.owed
    out[2] = s.court + 1
    out[3] = 0
    for p in range(s.held.shape[0]):
        if s.taken[p] > taken[p]:
            out[3] = p + 1
    out[4] = seat_bits(s.alive)
    out[5] = s.winner + 1 if s.status == Outcome.WIN else 0


@jit
def _record_games(s, seed, first, n_games, inputs, outputs):
    """Play games ``first ..`` of the random stream ``seed`` card by card with the engine,
    writing each card's input and output rows until the rows are full; return the rows
    written."""
    n_players = s.held.shape[0]
    deck = np.empty(core.DECK_SIZE, np.int64)
    taken = np.zeros(n_players, np.int64)
    n = 0
    for g in range(n_games):
        core.init_shuffled_state(s, core.derive_key(seed, first + g), core.NO_LIMIT, core.NO_LIMIT, deck)
        while s.status == Outcome.RUNNING and s.cards < MOST_CARDS:
            if n == inputs.shape[0]:
                return n
            _before(s, inputs[n])
            taken[:] = s.taken
            core.step_card(s)
            _after(s, taken, outputs[n])
            n += 1
    return n


def transitions(n, n_players=2, seed=0, first=0):
    """``n`` card transitions of the engine (the step's inputs and outputs, int64 arrays of
    shape (n, 6) in ``IN_NAMES`` and ``OUT_NAMES`` order), from random games ``first ..`` of
    the stream ``seed``, every card of each game in play order (the last game cut off)."""
    n = checks.count("n", n, 1)
    n_players = checks.n_players(n_players)
    inputs = np.zeros((n, len(IN_NAMES)), np.int64)
    outputs = np.zeros((n, len(OUT_NAMES)), np.int64)
    state = core.new_states(1, n_players, core.capacity_for(core.DECK_SIZE))
    written = _record_games(state[0], np.uint64(checks.seed(seed)), first, n // 30 + 2, inputs, outputs)
    return inputs[:written], outputs[:written]


@jit(parallel=True)
def _tally_games(states, seed, n_games, counts, outputs, clashes):
    """Play games ``0 .. n_games - 1`` of the stream ``seed`` card by card with the engine, in
    ``states.shape[0]`` chunks: per chunk, how often each input occurred (``counts``), the
    output it had (``outputs``, by :func:`out_codes`) and how many times an input had another
    output than before (``clashes``: 0 for a function)."""
    n_chunks = states.shape[0]
    for c in prange(n_chunks):
        s = states[c]
        n_players = s.held.shape[0]
        deck = np.empty(core.DECK_SIZE, np.int64)
        taken = np.zeros(n_players, np.int64)
        before = np.zeros(len(IN_NAMES), np.int64)
        after = np.zeros(len(OUT_NAMES), np.int64)
        lo, hi = core.chunk_bounds(c, n_chunks, n_games)
        for g in range(lo, hi):
            core.init_shuffled_state(s, core.derive_key(seed, g), core.NO_LIMIT, core.NO_LIMIT, deck)
            while s.status == Outcome.RUNNING and s.cards < MOST_CARDS:
                _before(s, before)
                taken[:] = s.taken
                core.step_card(s)
                _after(s, taken, after)
                row = input_code(before[0], before[1], before[2], before[3], before[4], before[5], n_players)
                code = 0
                for j in range(len(OUT_NAMES)):
                    code = code * _OUT_RADIX[n_players - 2, j] + after[j]
                if counts[c, row] > 0 and outputs[c, row] != code:
                    clashes[c] += 1
                counts[c, row] += 1
                outputs[c, row] = code


def tally(n_games, n_players=2, seed=0, threads=None):
    """The distinct transitions of every card of ``n_games`` random games of the stream
    ``seed``: (inputs (m, 6), outputs (m, 6), how often each occurred), in table row order.
    ``RuntimeError`` if an input had two outputs (the step would not be a function)."""
    n_games = checks.count("n_games", n_games, 1)
    n_players = checks.n_players(n_players)
    with parallel(threads) as n_threads:
        n_chunks = 4 * n_threads
        states = core.new_states(n_chunks, n_players, core.capacity_for(core.DECK_SIZE))
        counts = np.zeros((n_chunks, n_inputs(n_players)), np.int64)
        outputs = np.zeros_like(counts)
        clashes = np.zeros(n_chunks, np.int64)
        _tally_games(states, np.uint64(checks.seed(seed)), n_games, counts, outputs, clashes)
    seen = counts > 0
    merged = outputs.max(axis=0)
    if clashes.any() or (seen & (outputs != merged)).any():
        raise RuntimeError("the step's inputs do not determine its outputs")  # the engine's rules changed?
    rows = np.flatnonzero(seen.any(axis=0))
    return decode(rows, n_players), decode_outputs(merged[rows], n_players), counts.sum(axis=0)[rows]


def _pack(rows, sizes):
    """Each row of digits as one number, in the mixed radix ``sizes`` (the first digit most
    significant)."""
    out = np.zeros(len(rows), np.int64)
    for value, size in zip(rows.T, sizes):
        out = out * size + value
    return out


def _unpack(values, sizes):
    """The rows of digits (n, len(sizes)) of :func:`_pack` numbers."""
    values = np.asarray(values, np.int64).copy()
    out = np.zeros((len(values), len(sizes)), np.int64)
    for j, size in reversed(list(enumerate(sizes))):
        out[:, j] = values % size
        values //= size
    return out


def codes(inputs, n_players):
    """Each input row's row of the table (vectorised :func:`input_code`)."""
    return _pack(inputs, in_sizes(n_players))


def out_codes(outputs, n_players):
    """Each output row as one number (mixed radix, as :func:`codes`)."""
    return _pack(outputs, out_sizes(n_players))


def decode_outputs(values, n_players):
    """The outputs (n, 6) of :func:`out_codes` numbers."""
    return _unpack(values, out_sizes(n_players))


def decode(rows, n_players):
    """The inputs (n, 6) of table rows (the inverse of :func:`codes`)."""
    return _unpack(rows, in_sizes(n_players))


def exact_table(n_games, n_players=2, seed=0):
    """The table of the engine's own step on the inputs that every card of ``n_games``
    random games of the stream ``seed`` meets (its other rows 0): what a step model learns
    when it is exact on them (for tests and to measure a learned table against)."""
    inputs, outputs, _ = tally(n_games, n_players, seed)
    table = np.zeros((n_inputs(n_players), len(OUT_NAMES)), np.int8)
    table[codes(inputs, n_players)] = outputs
    return table

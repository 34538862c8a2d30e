"""Playing positions out from what is on the table: the compiled core of the Bayes
forecaster (unseen cards dealt at random, many times) and of the oracle (every hand known).

A position is a decision point as ``Beggar-v0`` shows it: the public fields, and each hand
from the top as ``known`` gives it (a class, or ``UNKNOWN`` for a dealt card not yet seen,
``EMPTY`` after the last card; the oracle's ``hands`` are the same with no unknowns). The
unseen cards (``unseen``: how many of each class) are dealt to the unknown places in
uniformly random order, each arrangement played to its end by the engine with cycle
detection and the game's limit; the outcome labels are counted.

Why uniformly random: a uniform random deal, conditioned on the public history, is
uniform over the arrangements of the unseen cards in the unknown places (see
``docs/forecasting.md``), so the outcome frequencies converge to the Bayes posterior.
"""

import sys

import numpy as np
from numba import prange

from .. import core, gpu
from ..core import Outcome
from ..jit import jit, parallel

UNKNOWN, EMPTY = -2, -1
POSITIONS_PER_CALL = 64  # positions per chunk and compiled call: Ctrl-C and progress between calls


def table_arrays(obs, hands_field):
    """The arrays the kernel takes, from a batch of observations (a dict of fields)."""
    n = len(obs["cards"])
    return (
        np.ascontiguousarray(obs[hands_field], np.int8),
        np.ascontiguousarray(obs["unseen"] if "unseen" in obs else np.zeros((n, core.N_CLASSES)), np.int64),
        np.ascontiguousarray(obs["pile"], np.int8),
        np.ascontiguousarray(obs["pile_size"], np.int64),
        np.ascontiguousarray(np.stack([obs["turn"], obs["owed"], obs["court"]], axis=1), np.int64),
        np.ascontiguousarray(obs["alive"], np.uint8),
        np.ascontiguousarray(np.stack([obs["cards"], obs["tricks"]], axis=1), np.int64),
    )


BACKENDS = ("local", "cuda")  # where rollouts run: this machine's cores, or a GPU (beggar_env.gpu)


def play_out(obs, hands_field, k, seed, max_cards, threads=None, progress=None, backend="local"):
    """Outcome counts of each position: (counts[n, n_players + 1], rollouts[n], cards played).

    A position with unseen cards of at least two classes is played ``k`` times, each with
    a fresh random arrangement; one with fewer is fixed by what is seen and played once.
    ``backend="cuda"`` plays them on a GPU, one position per thread, with the same counts.
    """
    arrays = table_arrays(obs, hands_field)
    if backend == "cuda":
        return gpu.play_out(sys.modules[__name__], arrays, k, seed, max_cards, progress)  # roll_position here
    n, n_players = arrays[0].shape[:2]
    counts = np.zeros((n, n_players + 1), np.int64)
    rollouts = np.zeros(n, np.int64)
    with parallel(threads) as n_threads:
        states, _ = core.new_work(n_threads, n_players, core.capacity_for(core.DECK_SIZE))
        progress_records = core.new_progress(n_threads)
        results = core.new_results(n_threads, n_players)
        played = np.zeros(n_threads, np.int64)
        step = POSITIONS_PER_CALL * n_threads
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            _play_positions(
                tuple(a[lo:hi] for a in arrays),
                max_cards,
                k,
                np.uint64(seed),  # 0 .. 2**64 - 1: an int64 would overflow above 2**63
                lo,
                counts[lo:hi],
                rollouts[lo:hi],
                played,
                states,
                progress_records,
                results,
            )
            if progress is not None:
                progress(hi, n)
    return counts, rollouts, int(played.sum())


@jit
def set_position(s, hands, bag, pile, pile_size, table, alive, counters, max_cards):
    """State ``s`` at a position (a row of :func:`table_arrays`), the unknown places filled
    from ``bag`` in order; ``taken`` set so that the state counts the cards still unseen as
    the counted view counts them (each hand's dealt cards not yet played come first)."""
    n_players = s.held.shape[0]
    next_card = 0
    n_cards = 0
    for p in range(n_players):
        held = 0
        hidden = 0
        for t in range(hands.shape[1]):
            card = hands[p, t]
            if card == EMPTY:
                break
            if card == UNKNOWN:
                card = bag[next_card]
                next_card += 1
                hidden += 1
            s.hands[p, t] = card
            held += 1
        s.head[p] = 0
        s.held[p] = held
        s.taken[p] = held - hidden
        s.alive[p] = alive[p]
        n_cards += held
    for t in range(pile_size):
        s.pile[t] = pile[t]
    s.pile_len = pile_size
    s.n_cards = n_cards + pile_size
    s.n_alive = 0
    for p in range(n_players):
        s.n_alive += alive[p]
    s.turn, s.owed, s.court = table[0], table[1], table[2]
    s.cards, s.tricks = counters[0], counters[1]
    s.max_cards = max_cards
    s.max_tricks = core.NO_LIMIT
    s.status = Outcome.RUNNING
    s.winner = core.NO_SEAT
    for p in range(n_players):
        if s.held[p] == s.n_cards:  # over already: one hand holds every card
            s.status = Outcome.WIN
            s.winner = p


@jit
def roll_position(i, positions, max_cards, k, seed, first, counts, rollouts, bag, states, f, r):
    """Play position ``i`` of ``positions`` (the arrays of :func:`table_arrays`) into
    ``counts[i]`` and ``rollouts[i]`` (``states``: three scratch states, ``bag`` room for a
    deck); return the cards they played. The CPU and the GPU (beggar_env.gpu.kernels,
    compiled from this source) both play this."""
    hands, unseen, pile, pile_size, table, alive, counters = positions
    n_hidden = 0
    classes = 0
    for card in range(core.N_CLASSES):
        classes += unseen[i, card] > 0
        for _ in range(unseen[i, card]):
            bag[n_hidden] = card
            n_hidden += 1
    runs = k if classes >= 2 else 1  # one class: a single arrangement
    key = core.derive_key(seed, first + i)
    played = 0
    s = states[0]
    for j in range(runs):
        if runs > 1:
            core.shuffle(core.derive_key(key, j), bag, n_hidden)
        set_position(s, hands[i], bag, pile[i], pile_size[i], table[i], alive[i], counters[i], max_cards)
        core.finish_now(s, True, r, states[1], states[2], f)
        counts[i, core.outcome_label(r.winner, s.held.shape[0])] += 1
        played += r.cards - counters[i, 0]
    rollouts[i] = runs
    return played


@jit(parallel=True)
def _play_positions(positions, max_cards, k, seed, first, counts, rollouts, played, states, progress, results):
    n_chunks = states.shape[0]
    for c in prange(n_chunks):
        bag = np.empty(core.DECK_SIZE, np.int8)
        for i in range(c, counts.shape[0], n_chunks):  # strided: open positions come in runs
            played[c] += roll_position(
                i, positions, max_cards, k, seed, first, counts, rollouts, bag, states[c], progress[c], results[c]
            )

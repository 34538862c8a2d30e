"""The forecasting task, shared by the single and the vector env: the observation layout,
the scoring of forecasts, and the compiled reset and step kernels.

Every kernel works on a batch of games (the single env is a batch of one) and drives the
rules through :mod:`beggar_env.core` only. An observation is one flat int32 row; the
Gymnasium ``Dict`` observation is a set of views of that row (see :class:`Layout`).
"""

import math

import numba
import numpy as np
from numba import njit, prange

from . import core

PILE_SLOTS = 52  # env deals hold at most 52 cards
EMPTY = -1  # an unused pile or hand slot; also "nobody" for the court seat
INT32_MAX = np.iinfo(np.int32).max

REWARDS = ("accuracy", "brier", "log")
ACCURACY, BRIER, LOG = range(3)
LOG_FLOOR = 1e-6  # the log score of a forecast is clipped at log(1e-6), so it stays finite
CAPACITY = core.capacity_for(PILE_SLOTS)


class Layout:
    """Where each observation field lies in the flat int32 row.

    Public fields: ``hand_sizes``, ``pile`` (card classes in play order, -1 after the
    last card), ``pile_size``, ``turn`` (the seat to play), ``owed`` (cards still owed),
    ``court`` (the seat owed them, -1 if none), ``alive`` (1 for seats still in),
    ``cards`` and ``tricks`` (played so far). ``full`` adds ``hands``: every hand's classes
    from the top, -1 after its last card.
    """

    def __init__(self, n_players, full):
        p = n_players
        self.fields = [
            ("hand_sizes", (p,), 0, PILE_SLOTS),
            ("pile", (PILE_SLOTS,), EMPTY, core.ACE),
            ("pile_size", (), 0, PILE_SLOTS),
            ("turn", (), 0, p - 1),
            ("owed", (), 0, core.ACE),
            ("court", (), EMPTY, p - 1),
            ("alive", (p,), 0, 1),
            ("cards", (), 0, INT32_MAX),
            ("tricks", (), 0, INT32_MAX),
        ]
        if full:
            self.fields.append(("hands", (p, PILE_SLOTS), EMPTY, core.ACE))
        self.slices = {}
        start = 0
        for name, shape, _, _ in self.fields:
            size = math.prod(shape)
            self.slices[name] = (slice(start, start + size), shape)
            start += size
        self.size = start
        self._row_index = [  # (k, ...) gives a 0-d view where row[k] would give a scalar
            (name, (cut.start, Ellipsis) if shape == () else cut) for name, (cut, shape) in self.slices.items()
        ]
        self._matrices = [name for name, (_, shape) in self.slices.items() if len(shape) > 1]

    def space(self, batch_shape=()):
        """The Gymnasium ``Dict`` space of these observations."""
        from gymnasium import spaces

        return spaces.Dict(
            {
                name: spaces.Box(low, high, batch_shape + shape, np.int32)
                for name, shape, low, high in self.fields
            }
        )

    def split(self, rows):
        """The fields of flat rows (shape ``(..., size)``) as a dict of views."""
        lead = rows.shape[:-1]
        if lead:
            return {name: rows[..., cut].reshape(lead + shape) for name, (cut, shape) in self.slices.items()}
        # One row, on every env step: precomputed indices, a reshape only for 2-d fields.
        fields = {name: rows[index] for name, index in self._row_index}
        for name in self._matrices:
            fields[name] = fields[name].reshape(self.slices[name][1])
        return fields


@njit(cache=True)
def write_observation(s, out, full):
    """Write state ``s`` into the flat row ``out`` in :class:`Layout` order."""
    n_players = s.held.shape[0]
    mask = s.pile.shape[0] - 1
    k = 0
    for p in range(n_players):
        out[k + p] = s.held[p]
    k += n_players
    for j in range(PILE_SLOTS):
        out[k + j] = s.pile[j] if j < s.pile_len else EMPTY
    k += PILE_SLOTS
    out[k] = s.pile_len
    out[k + 1] = s.turn
    out[k + 2] = s.owed
    out[k + 3] = s.court
    k += 4
    for p in range(n_players):
        out[k + p] = s.alive[p]
    k += n_players
    out[k] = min(s.cards, INT32_MAX)
    out[k + 1] = min(s.tricks, INT32_MAX)
    k += 2
    if full:
        for p in range(n_players):
            head = s.head[p]
            for j in range(PILE_SLOTS):
                out[k + j] = s.hands[p, (head + j) & mask] if j < s.held[p] else EMPTY
            k += PILE_SLOTS


@njit(cache=True)
def score(label, probs, truth, kind):
    """The reward of a forecast of outcome ``truth`` (a seat, or n_players for none).

    With ``label >= 0`` the forecast is that label; otherwise it is ``probs``, which need
    not sum to 1 (they are normalised here). Accuracy counts the most probable outcome
    (the first, on ties); Brier is minus the squared error; log is the log probability
    of the truth, floored at ``LOG_FLOOR``. The best forecast scores 1, 0 and 0.
    """
    n = probs.shape[0]
    if label >= 0:
        hit = label == truth
        if kind == ACCURACY:
            return 1.0 if hit else 0.0
        if kind == BRIER:
            return 0.0 if hit else -2.0
        return 0.0 if hit else math.log(LOG_FLOOR)
    total = 0.0
    best = 0
    for k in range(n):
        total += probs[k]
        if probs[k] > probs[best]:
            best = k
    if kind == ACCURACY:
        return 1.0 if best == truth else 0.0
    if kind == BRIER:
        error = 0.0
        for k in range(n):
            d = probs[k] / total - (1.0 if k == truth else 0.0)
            error += d * d
        return -error
    return math.log(max(probs[truth] / total, LOG_FLOOR))


# --------------------------------------------------------------------------- kernels
# A batch of envs is: `states[i]`, the game of env i; `ahead[i]`, three scratch records
# (the game played ahead and finish's two); `results[i]`, the outcome of env i's game,
# known from its start; `envs[i]`, the env's own record (ENV_DTYPE).

DISABLED, NEXT_STEP, SAME_STEP = 0, 1, 2  # autoreset modes

ENV_DTYPE = np.dtype(
    [
        ("truth", np.int64),  # the true outcome: the winner's seat, or n_players for none
        ("seed", np.uint64),  # the env's stream of random deals ...
        ("episode", np.uint64),  # ... and the number of deals drawn from it
        ("reward", np.float64),  # of the last step
        ("terminated", np.uint8),  # by the last step
    ],
    align=True,
)


def new_envs(n_envs, n_players):
    """The arrays of a batch of envs (states, ahead, results, envs), ready to be dealt."""
    envs = np.zeros(n_envs, ENV_DTYPE)
    results = core.new_results(n_envs, n_players)
    states = core.new_states(n_envs, n_players, CAPACITY)
    ahead = core.new_work(n_envs, n_players, CAPACITY)
    if not numba.config.DISABLE_JIT:
        results = results.view(np.ndarray)
    else:
        envs = envs.view(np.recarray)
    return states, ahead, results, envs


@njit(cache=True)
def _prepare(states, ahead, results, envs, i, full, obs):
    """Env i's game has just been dealt: play it ahead to learn its outcome."""
    core.copy_state(states[i], ahead[i, 0])
    core.finish(ahead[i, 0], True, results[i], ahead[i, 1], ahead[i, 2])
    winner = results[i].winner
    envs[i].truth = winner if winner >= 0 else states[i].held.shape[0]
    envs[i].terminated = 0
    write_observation(states[i], obs[i], full)


@njit(cache=True)
def _deal_random(states, ahead, results, envs, i, max_cards, full, obs):
    deck = np.empty(core.DECK_SIZE, np.int64)
    key = core.stream_key(envs[i].seed, envs[i].episode)
    envs[i].episode += np.uint64(1)
    core.init_shuffled_state(states[i], key, max_cards, core.NO_LIMIT, deck)
    _prepare(states, ahead, results, envs, i, full, obs)


@njit(cache=True)
def reset_dealt(states, ahead, results, envs, i, cards, hand_sizes, max_cards, full, obs):
    """Deal env i an explicit deal (classes, hand after hand)."""
    core.init_state(states[i], cards, hand_sizes, max_cards, core.NO_LIMIT)
    _prepare(states, ahead, results, envs, i, full, obs)


def _reset_random(states, ahead, results, envs, mask, max_cards, full, obs):
    """Deal every env i with ``mask[i]`` the next deal of its random stream."""
    for i in prange(states.shape[0]):
        if mask[i]:
            _deal_random(states, ahead, results, envs, i, max_cards, full, obs)


def step_settings(reward_kind, by_trick, max_cards, full, autoreset):
    """The settings array that :func:`step` takes."""
    return np.array([reward_kind, by_trick, max_cards, full, autoreset], np.int64)


def _step(states, ahead, results, envs, labels, probs, settings, obs, final_obs, final_results):
    """Score each env's forecast, then advance its game by a card or a trick.

    ``settings`` is :func:`step_settings`'s array (one argument rather than five: each
    argument costs time on every call from Python).

    A game that never ends stops at its first repeated position (status CYCLE). An env
    whose game is over is scored and left as it is, unless ``autoreset`` deals it anew:
    NEXT_STEP on the step after it ended (no score: reward 0), SAME_STEP at once (its
    last observation and result are kept in ``final_obs`` and ``final_results``).
    """
    kind, by_trick, max_cards, full, autoreset = settings[0], settings[1], settings[2], settings[3], settings[4]
    for i in prange(states.shape[0]):
        e = envs[i]
        if autoreset == NEXT_STEP and e.terminated:
            _deal_random(states, ahead, results, envs, i, max_cards, full, obs)
            e.reward = 0.0
            continue
        e.reward = score(labels[i], probs[i], e.truth, kind)
        s = states[i]
        if s.status == core.RUNNING:
            if by_trick:
                core.step_trick(s)
            else:
                core.step_card(s)
            if s.status == core.RUNNING and results[i].outcome == core.CYCLE and s.tricks == results[i].tricks:
                s.status = core.CYCLE
        e.terminated = s.status != core.RUNNING
        write_observation(s, obs[i], full)
        if autoreset == SAME_STEP and e.terminated:
            final_obs[i, :] = obs[i]
            final_results[i] = results[i]
            _deal_random(states, ahead, results, envs, i, max_cards, full, obs)
            e.terminated = 1  # _deal_random cleared it; this step did end an episode


def compiled_for(kernel, args):
    """``kernel``'s compiled function for the types of ``args``, to be called with
    arguments of exactly those types.

    Calling it skips numba's per-call dispatch on argument types, most of the cost of a
    single env's step. With the JIT disabled, ``kernel`` itself.
    """
    if numba.config.DISABLE_JIT:
        return kernel
    return kernel.compile(tuple(numba.typeof(arg) for arg in args))


# One source, two builds: serial for a single env (no thread start-up per step),
# parallel for the vector env. `prange` is a plain range in the serial build.
step = njit(cache=True)(_step)
step_parallel = njit(cache=True, parallel=True)(_step)
reset_random = njit(cache=True)(_reset_random)
reset_random_parallel = njit(cache=True, parallel=True)(_reset_random)

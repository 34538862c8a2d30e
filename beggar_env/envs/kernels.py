"""The compiled reset and step kernels of ``Beggar-v0`` and its vector env.

Every kernel works on a batch of envs (the single env is a batch of one): ``states[i]``,
the game of env i; ``ahead[i]``, three scratch records (the game played ahead and finish's
two); ``progress[i]``, finish's progress record; ``results[i]``, the outcome of env i's
game, known from its start; ``envs[i]``, the env's own record (``task.ENV_DTYPE``);
``face_rows[i]``, its game's faces (``task.new_faces``: read and written with the faces
view only). The observation they write is the task's (:func:`beggar_env.task.write_view`).
"""

import numba
import numpy as np
from numba import prange

from .. import core, faces
from ..core import Outcome
from ..jit import jit, serial_and_parallel
from ..task import (
    CAPACITY,
    ENV_DTYPE,
    NO_CARDS,
    NO_HAND_SIZES,
    Autoreset,
    StepUnit,
    deal_faces,
    new_faces,
    score,
    step_faces,
    write_observation,
    write_view,
)


def new_envs(n_envs, n_players, shown=False):
    """The arrays of a batch of envs (states, ahead, progress, results, envs, face_rows),
    ready to be dealt; ``shown``: with the faces view."""
    envs = np.zeros(n_envs, ENV_DTYPE)
    results = core.new_results(n_envs, n_players)
    states = core.new_states(n_envs, n_players, CAPACITY)
    ahead, progress = core.new_work(n_envs, n_players, CAPACITY)
    if not numba.config.DISABLE_JIT:
        results = results.view(np.ndarray)
    else:
        envs = envs.view(np.recarray)
    return states, ahead, progress, results, envs, new_faces(n_envs, n_players, shown)


@jit
def _prepare(states, ahead, progress, results, envs, f, i, settings, obs):
    """Env i's game has just been dealt: play it ahead to learn its outcome. ``f``: its face rows."""
    core.copy_state(states[i], ahead[i, 0])
    core.finish_now(ahead[i, 0], True, results[i], ahead[i, 1], ahead[i, 2], progress[i])
    envs[i].truth = core.outcome_label(results[i].winner, states[i].held.shape[0])
    envs[i].terminated = 0
    envs[i].played = faces.NO_FACE
    write_view(states[i], obs[i], settings, f, envs[i].played)


@jit
def _deal_random(states, ahead, progress, results, envs, f, i, settings, obs):
    deck = np.empty(core.DECK_SIZE, np.int64)
    if settings.faces:
        dealt = (NO_CARDS, NO_HAND_SIZES, envs[i].seed, np.int64(envs[i].episode))
        core.deal(states[i], dealt, 0, settings.max_cards, core.NO_LIMIT, deck)
        deal_faces(states[i], f, dealt, NO_CARDS, 0, deck)
    else:
        key = core.derive_key(envs[i].seed, envs[i].episode)
        core.init_shuffled_state(states[i], key, settings.max_cards, core.NO_LIMIT, deck)
    envs[i].episode += np.uint64(1)
    _prepare(states, ahead, progress, results, envs, f, i, settings, obs)


@jit
def reset_dealt(states, ahead, progress, results, envs, face_rows, i, dealt, given, settings, obs):
    """Deal env i an explicit deal.

    Parameters
    ----------
    states, ahead, progress, results, envs, face_rows : the batch of envs (:func:`new_envs`)
    i : the env dealt
    dealt : the deal, as ``core.given_deals`` of ``deals.pack_deals([deal])`` gives it
    given : its faces, as ``faces.given_faces`` packs them (read with the faces view only)
    settings : :meth:`EnvConfig.settings`'s record
    obs : the flat observation rows, env ``i``'s written
    """
    s = settings[0]
    deck = np.empty(core.DECK_SIZE, np.int64)
    core.deal(states[i], dealt, 0, s.max_cards, core.NO_LIMIT, deck)
    if s.faces:
        deal_faces(states[i], face_rows[i], dealt, given, 0, deck)
    _prepare(states, ahead, progress, results, envs, face_rows[i], i, s, obs)


def _reset_random(states, ahead, progress, results, envs, face_rows, mask, settings, obs):
    """Deal every env i with ``mask[i]`` the next deal of its random stream."""
    for i in prange(states.shape[0]):
        if mask[i]:
            _deal_random(states, ahead, progress, results, envs, face_rows[i], i, settings[0], obs)


def _step(states, ahead, progress, results, envs, labels, probs, settings, obs, final_obs, final_results):
    """Score each env's forecast, then advance its game by a card or a trick (without the
    faces view; :func:`_step_faces` is its twin with it, kept apart so that the faces cost
    this one nothing).

    ``settings`` is :meth:`EnvConfig.settings`'s record (one argument rather than five:
    each argument costs time on every call from Python).

    A game that never ends stops at its first repeated position (status CYCLE, see
    ``core.episode_over``). An env whose game is over is scored and left as it is, unless
    autoreset deals it anew: NEXT_STEP on the step after it ended (no score: reward 0),
    SAME_STEP at once (its last observation and result are kept in ``final_obs`` and
    ``final_results``).
    """
    no_faces = np.empty((1, 1), np.int8)  # the face rows _deal_random takes; never read without faces
    for i in prange(states.shape[0]):
        cfg = settings[0]  # inside the loop: numba's parallel lowering fails on a record captured from outside
        e = envs[i]
        if cfg.autoreset == Autoreset.NEXT_STEP and e.terminated:
            _deal_random(states, ahead, progress, results, envs, no_faces, i, cfg, obs)
            e.reward = 0.0
            continue
        e.reward = score(labels[i], probs[i], e.truth, cfg.reward)
        s = states[i]
        if s.status == Outcome.RUNNING:
            if cfg.step_unit == StepUnit.TRICK:
                core.step_trick(s)
            else:
                core.step_card(s)
        e.terminated = core.episode_over(s, results[i])
        write_observation(s, obs[i], cfg)
        if cfg.autoreset == Autoreset.SAME_STEP and e.terminated:
            final_obs[i, :] = obs[i]
            final_results[i] = results[i]
            _deal_random(states, ahead, progress, results, envs, no_faces, i, cfg, obs)
            e.terminated = 1  # _deal_random cleared it; this step did end an episode


def _step_faces(
    states, ahead, progress, results, envs, face_rows, labels, probs, settings, obs, final_obs, final_results
):
    """:func:`_step` with the faces view: each game is stepped card by card with its faces
    (``task.step_faces``, to a trick's end with ``step_unit="trick"``), ``face_rows[i]``
    (:func:`new_envs`), and ``played`` kept in its env's record."""
    for i in prange(states.shape[0]):
        cfg = settings[0]
        e = envs[i]
        if cfg.autoreset == Autoreset.NEXT_STEP and e.terminated:
            _deal_random(states, ahead, progress, results, envs, face_rows[i], i, cfg, obs)
            e.reward = 0.0
            continue
        e.reward = score(labels[i], probs[i], e.truth, cfg.reward)
        s = states[i]
        if s.status == Outcome.RUNNING:
            e.played = step_faces(s, face_rows[i], cfg.step_unit == StepUnit.TRICK)
        e.terminated = core.episode_over(s, results[i])
        write_view(s, obs[i], cfg, face_rows[i], e.played)
        if cfg.autoreset == Autoreset.SAME_STEP and e.terminated:
            final_obs[i, :] = obs[i]
            final_results[i] = results[i]
            _deal_random(states, ahead, progress, results, envs, face_rows[i], i, cfg, obs)
            e.terminated = 1


# One source, two builds: serial for a single env (no thread start-up per step),
# parallel for the vector env.
step, step_parallel = serial_and_parallel(_step)
step_faces_view, step_faces_view_parallel = serial_and_parallel(_step_faces)
reset_random, reset_random_parallel = serial_and_parallel(_reset_random)

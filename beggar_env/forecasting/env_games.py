"""The test games played in the vector env, all at once, with a policy's action at each
step as its forecast: how ``protocol.evaluate_policy`` scores a policy, and how
``protocol.predict`` scores a forecaster with a memory (``recurrent = True``), each game
from its first step and in order."""

import time

import numpy as np

from ..deals import random_deals
from .forecaster_checks import check_actions


def play(policy, test, observation, forecast, progress=None):
    """Every test game played in the vector env, all at once (one env per game, from its
    first step, autoreset off), with ``policy``'s action at each step as its forecast:
    (forecasts of every test position, the seconds the policy took)."""
    import gymnasium as gym

    envs = gym.make_vec(
        "Beggar-v0",
        num_envs=test.games,
        n_players=test.n_players,
        observation=observation,
        forecast=forecast,
        max_cards=test.max_cards,
        autoreset_mode="Disabled",
    )
    obs, _ = envs.reset(options={"deals": random_deals(test.games, test.n_players, test.seed)})
    game = test.data.game
    probs = np.zeros((len(game), test.n_players + 1))
    first_row = np.searchsorted(game, np.arange(test.games))  # game g's rows: first_row[g] + cards
    n_rows = np.bincount(game, minlength=test.games)
    done = np.zeros(test.games, bool)
    seconds, scored = 0.0, 0
    while not done.all():
        started = time.perf_counter()
        actions = check_actions(policy(obs), test.games, test.n_players + 1, forecast)
        seconds += time.perf_counter() - started
        forecasts = np.eye(test.n_players + 1)[actions] if forecast == "label" else actions
        live = np.flatnonzero(~done & (obs["cards"] < n_rows))
        probs[first_row[live] + obs["cards"][live]] = forecasts[live]
        scored += len(live)
        if progress is not None:
            progress(scored, len(game))
        obs, _, terminated, _, _ = envs.step(actions)
        done |= terminated
    envs.close()
    return probs, seconds

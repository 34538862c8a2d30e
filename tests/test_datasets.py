"""Datasets: every sample is the env's observation at a decision point, labelled with the
eventual outcome of its game."""

import gymnasium as gym
import numpy as np
import pytest

import beggar_env
from beggar_env import datasets


def env_observations(deal, **options):
    """The observations a forecaster sees in Beggar-v0 (one per step), flattened."""
    env = gym.make("Beggar-v0", **options)
    obs, _ = env.reset(options={"deal": deal})
    rows, terminated = [], False
    while not terminated:
        rows.append(np.concatenate([np.ravel(obs[name]) for name in obs]))
        obs, _, terminated, _, _ = env.step(0)
    return np.array(rows, np.int32)


@pytest.mark.parametrize(
    "n_players, samples, observation",
    [(2, "card", "public"), (3, "trick", "full"), (4, "card", "full"), (2, "trick", "public")],
)
def test_samples_are_the_env_observations_of_the_same_deals(n_players, samples, observation):
    data = datasets.generate(12, n_players=n_players, samples=samples, observation=observation, seed=4)
    deals = beggar_env.random_deals(12, n_players, seed=4)
    for i, deal in enumerate(deals):
        expected = env_observations(deal, n_players=n_players, step_unit=samples, observation=observation)
        np.testing.assert_array_equal(data.observations[data.game == i], expected)


def test_labels_are_the_outcomes_of_the_games():
    data = datasets.generate(300, n_players=3, seed=8)
    results = beggar_env.simulate(300, n_players=3, seed=8)
    np.testing.assert_array_equal(np.bincount(data.game, minlength=300), results.cards)
    np.testing.assert_array_equal(data.winner, results.winner[data.game])
    np.testing.assert_array_equal(data.outcome, results.outcome[data.game])
    np.testing.assert_array_equal(data.game_cards, results.cards[data.game])
    np.testing.assert_array_equal(data.game_tricks, results.tricks[data.game])
    assert ((data.progress >= 0) & (data.progress < 1)).all()
    np.testing.assert_allclose(data.progress, data.fields["cards"] / data.game_cards)
    np.testing.assert_array_equal(data.label, np.where(results.winner[data.game] >= 0, results.winner[data.game], 3))


def test_random_points_are_decision_points_of_their_game():
    every = datasets.generate(40, samples="card", seed=2)
    some = datasets.generate(40, samples=5, seed=2)
    assert (np.bincount(some.game, minlength=40) == 5).all()
    for i in range(40):
        rows = every.observations[every.game == i]
        picked = some.observations[some.game == i]
        cards = some.fields["cards"][some.game == i]
        assert (np.diff(cards) >= 0).all()
        np.testing.assert_array_equal(picked, rows[cards])
    assert len(np.unique(some.fields["cards"])) > 40  # points differ between games


def test_the_limit_applies_like_in_the_env():
    data = datasets.generate(30, samples="trick", seed=6, max_cards=40)
    deal = beggar_env.random_deals(30, seed=6)[3]
    np.testing.assert_array_equal(
        data.observations[data.game == 3], env_observations(deal, step_unit="trick", max_cards=40)
    )
    assert (data.game_cards <= 40).all() and (data.outcome[data.game_cards == 40] == 3).all()


def test_deterministic_whatever_the_threads_and_seed_dependent():
    one = datasets.generate(500, samples=3, seed=11, threads=1)
    two = datasets.generate(500, samples=3, seed=11, threads=2)
    for name in datasets.Dataset.ARRAYS:
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    other = datasets.generate(500, samples=3, seed=12, threads=2)
    assert not np.array_equal(one.observations, other.observations)


def test_save_and_load_round_trip(tmp_path):
    data = datasets.generate(50, n_players=4, samples="trick", observation="full", seed=3)
    data.save(tmp_path / "d.npz")
    back = datasets.load(tmp_path / "d.npz")
    assert (back.n_players, back.observation, back.samples, back.seed) == (4, "full", "trick", 3)
    for name in datasets.Dataset.ARRAYS:
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name))
    assert back.fields["hands"].shape == (len(data), 4, 52)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"samples": "hand"}, "samples"),
        ({"samples": 0}, "samples"),
        ({"n_players": 5}, "n_players"),
        ({"observation": "x"}, "observation"),
        ({"max_cards": -2}, "max_cards"),
        ({"threads": 0}, "threads"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, word):
    with pytest.raises(ValueError, match=word):
        datasets.generate(5, **kwargs)
    with pytest.raises(ValueError, match="n_games"):
        datasets.generate(-1)

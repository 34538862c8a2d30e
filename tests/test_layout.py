"""One flat layout: a dataset row (in memory, in a ``.npz`` file, in Parquet shards, written
on Ray) is exactly what Gymnasium's own ``flatten`` makes of the env's ``Dict`` observation
at the same position, and ``FlattenObservation``, the SB3 adapter and the vector env agree,
for every observation level and player count, with the faces view and without. A model
trained on dataset rows can run on the flattened env with its features in place."""

import itertools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.wrappers import FlattenObservation

import beggar_env
from beggar_env import datasets, task

LEVELS = ("public", "counted", "full")
CASES = list(itertools.product((2, 3, 4), LEVELS))
FACES_CASES = [(n_players, observation, faces) for n_players, observation in CASES for faces in (False, True)]


def flattened_episode(deal, n_players, observation, faces=False):
    """Every observation of one episode, flattened by Gymnasium, and by FlattenObservation."""
    env = gym.make("Beggar-v0", n_players=n_players, observation=observation, faces=faces)
    flat = FlattenObservation(gym.make("Beggar-v0", n_players=n_players, observation=observation, faces=faces))
    obs, _ = env.reset(options={"deal": deal})
    wrapped, _ = flat.reset(options={"deal": deal})
    rows, terminated = [], False
    while not terminated:
        row = spaces.flatten(env.observation_space, obs)
        np.testing.assert_array_equal(wrapped, row)
        rows.append(row)
        obs, _, terminated, _, _ = env.step(0)
        wrapped, *_ = flat.step(0)
    return np.array(rows)


def column_names(space):
    """The slot names of a Dict space's flat rows, from the space alone (keys in its order)."""
    names = []
    for key, box in space.spaces.items():
        names += [key] if box.shape == () else [f"{key}_{'_'.join(map(str, i))}" for i in np.ndindex(box.shape)]
    return names


@pytest.mark.parametrize("n_players, observation, faces", FACES_CASES)
def test_a_dataset_row_is_gymnasiums_flatten_of_the_same_position(n_players, observation, faces):
    data = datasets.generate(3, n_players=n_players, observation=observation, seed=11, faces=faces)
    for i, deal in enumerate(beggar_env.random_deals(3, n_players, seed=11)):
        np.testing.assert_array_equal(
            data.observations[data.game == i], flattened_episode(deal, n_players, observation, faces)
        )
    space = gym.make("Beggar-v0", n_players=n_players, observation=observation, faces=faces).observation_space
    assert data.columns == column_names(space)
    assert data.observations.shape[1] == spaces.flatdim(space)


@pytest.mark.parametrize("n_players, observation, faces", FACES_CASES)
def test_the_vector_env_rows_are_the_flattened_single_env(n_players, observation, faces):
    envs = gym.make_vec("Beggar-v0", num_envs=3, n_players=n_players, observation=observation, faces=faces)
    obs, _ = envs.reset(seed=5)
    for _ in range(40):
        obs, *_ = envs.step(np.zeros(3, np.int64))
    for i in range(3):
        one = {name: value[i] for name, value in obs.items()}
        row = spaces.flatten(envs.single_observation_space, one)
        np.testing.assert_array_equal(envs.unwrapped._obs[i], row)  # the flat rows the kernels write
        in_layout_order = [np.ravel(one[name]) for name in task.Layout(n_players, observation, faces).slices]
        np.testing.assert_array_equal(np.concatenate(in_layout_order), row)


def test_the_sb3_adapter_flattens_as_gymnasium_does():
    pytest.importorskip("stable_baselines3")
    from beggar_env.envs import sb3

    for n_players, observation in CASES:
        venv = sb3.make(2, n_players=n_players, observation=observation)
        venv.seed(3)
        rows = venv.reset()
        dicts = sb3.make(2, n_players=n_players, observation=observation, flatten=False)
        dicts.seed(3)
        obs = dicts.reset()
        assert not np.array_equal(obs["hand_sizes"], np.zeros_like(obs["hand_sizes"]))
        space = gym.make("Beggar-v0", n_players=n_players, observation=observation).observation_space
        for i in range(2):
            np.testing.assert_array_equal(rows[i], spaces.flatten(space, {k: v[i] for k, v in obs.items()}))


UNSORTED = ("hand_sizes", "pile", "pile_size", "turn", "owed", "court", "alive", "cards", "tricks")  # before issue 36


@pytest.mark.parametrize("observation, extra", [("public", ()), ("full", ("hands",)), ("counted", ("known", "unseen"))])
def test_an_npz_saved_in_the_old_unsorted_order_is_read_back_in_place(tmp_path, observation, extra):
    data = datasets.generate(4, n_players=3, observation=observation, samples=3, seed=2)
    fields = data.fields
    old_rows = np.concatenate([fields[name].reshape(len(data), -1) for name in UNSORTED + extra], axis=1)
    assert not np.array_equal(old_rows, data.observations)  # the two orders differ
    arrays = {name: getattr(data, name) for name in datasets.Dataset.ARRAYS} | {"observations": old_rows}
    np.savez(tmp_path / "old.npz", **arrays, n_players=3, observation=observation, samples="card", seed=2)
    np.testing.assert_array_equal(datasets.load(tmp_path / "old.npz").observations, data.observations)
    data.save(tmp_path / "new.npz")
    np.testing.assert_array_equal(datasets.load(tmp_path / "new.npz").observations, data.observations)


def test_an_npz_whose_columns_are_not_the_layouts_is_refused(tmp_path):
    data = datasets.generate(2, seed=2)
    arrays = {name: getattr(data, name) for name in datasets.Dataset.ARRAYS}
    columns = np.array([f"x_{j}" for j in range(len(data.columns))])
    np.savez(tmp_path / "odd.npz", **arrays, n_players=2, observation="public", samples="card", seed=2, columns=columns)
    with pytest.raises(ValueError, match="columns"):
        datasets.load(tmp_path / "odd.npz")


def test_parquet_columns_are_the_layouts_and_are_read_by_name(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from beggar_env.datasets import shards

    shards.generate(tmp_path / "d", 6, n_players=3, observation="counted", seed=4)
    expected = datasets.generate(6, n_players=3, observation="counted", seed=4)
    (shard,) = sorted((tmp_path / "d" / "samples").rglob("*.parquet"))
    table = pq.read_table(shard)
    observed = [name for name in table.column_names if name in set(expected.columns)]
    assert observed == expected.columns
    pq.write_table(table.select(table.column_names[::-1]), shard)  # the same columns, backwards
    np.testing.assert_array_equal(datasets.load(tmp_path / "d").observations, expected.observations)


@pytest.mark.slow
def test_a_dataset_written_on_ray_has_the_same_layout(ray_cluster, tmp_path):
    pytest.importorskip("pyarrow")
    from beggar_env.datasets import shards

    shards.generate(tmp_path / "d", 4, n_players=2, observation="counted", seed=9, backend="ray", shard_games=2)
    back = datasets.load(tmp_path / "d")
    for i, deal in enumerate(beggar_env.random_deals(4, 2, seed=9)):
        np.testing.assert_array_equal(back.observations[back.game == i], flattened_episode(deal, 2, "counted"))

"""The clients researchers bring, each running a small real job on the env or the data:
Stable-Baselines3's make_vec_env, sb3-contrib's RecurrentPPO, TorchRL's GymEnv, Minari's
DataCollector (record_infos=True) and Hugging Face's load_dataset. Each test skips, naming
the client, where it is not installed; CI installs them all (.ci/clients.txt). Ray RLlib
needs Gymnasium 1.2.2 and has its own environment and test (tests/test_rllib.py)."""

import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import beggar_env  # noqa: F401 (registers Beggar-v0)
from beggar_env import datasets

pytestmark = pytest.mark.slow  # each client's real job: training, a child process, or seconds of imports


def child(code, timeout=600, env=None):
    """Run ``code`` in a fresh interpreter: its imports happen in the order it gives them."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout


def test_sb3_make_vec_env_trains_ppo_without_pillow():
    """make_vec_env asks every env for render_mode='rgb_array' (and falls back only on a
    TypeError): the env must be made without Pillow, which only its picture needs."""
    pytest.importorskip("stable_baselines3")
    out = child(
        """
        import sys; sys.modules["PIL"] = None
        import torch; torch.set_num_threads(1)
        import beggar_env
        from gymnasium.wrappers import FlattenObservation
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
        envs = make_vec_env("Beggar-v0", n_envs=2, seed=0, wrapper_class=FlattenObservation)
        model = PPO("MlpPolicy", envs, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(128)
        print(envs.num_envs, model.num_timesteps)
        """
    )
    assert out.split() == ["2", "128"]


def test_recurrent_ppo_learns_and_carries_its_state_through_an_episode(torch_threads):
    pytest.importorskip("sb3_contrib")
    from gymnasium.wrappers import FlattenObservation
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env

    envs = make_vec_env("Beggar-v0", n_envs=2, seed=0, wrapper_class=FlattenObservation)
    model = RecurrentPPO("MlpLstmPolicy", envs, n_steps=32, batch_size=64, n_epochs=1, seed=0).learn(64)
    env = FlattenObservation(gym.make("Beggar-v0"))
    obs, info = env.reset(seed=1)
    state, start, steps, terminated = None, np.ones(1, bool), 0, False
    while not terminated:
        action, state = model.predict(obs, state=state, episode_start=start, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(int(action))
        start[:] = False
        steps += 1
    assert model.num_timesteps == 64 and steps == info["cards"] > 0
    assert state[0].shape == (1, 1, model.policy.lstm_hidden_state_shape[-1])  # the LSTM's (h, c), carried


def test_torchrl_gym_env_after_importing_the_package_first():
    """TorchRL asks importlib.util.find_spec('gymnasium') at import: after `import
    beggar_env` (which waits for Gymnasium to register), the env must still be found.
    Seeded (the deals and torch's random actions): an unseeded deal could last more than
    the rollout's 1000 steps (about one game in a hundred)."""
    pytest.importorskip("torchrl")
    out = child(
        """
        import beggar_env
        import torch
        import torchrl
        from torchrl.envs import GymEnv
        from torchrl.envs.utils import check_env_specs
        torch.manual_seed(0)
        env = GymEnv("Beggar-v0")
        env.set_seed(0)
        check_env_specs(env)
        rollout = env.rollout(1000)
        print(int(rollout["next", "done"].sum()), rollout.batch_size[0], tuple(rollout["hand_sizes"].shape[1:]))
        """
    )
    done, steps, shape = out.splitlines()[-1].split(maxsplit=2)  # TorchRL logs on stdout before it
    assert done == "1" and 0 < int(steps) < 1000 and shape == "(2,)"  # one episode, to its end


def test_minari_records_every_steps_info_and_reads_it_back(tmp_path, monkeypatch):
    pytest.importorskip("minari")
    pytest.importorskip("jax", reason="Minari records datasets with jax: pip install 'minari[create]'")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    import minari

    from beggar_env.envs import minari as recording

    def most_cards(obs):
        return int(np.argmax(obs["hand_sizes"]))

    about = dict(author="the tests", author_email="tests@example.org", code_permalink="https://example.org/beggar")
    dataset = recording.record("beggar/most-cards-v0", most_cards, 3, seed=5, metadata=about, n_players=3)
    back = minari.load_dataset("beggar/most-cards-v0")
    assert {key: back.storage.metadata[key] for key in about} == {  # Minari keeps authors as sets
        **about,
        "author": {"the tests"},
        "author_email": {"tests@example.org"},
    }
    assert back.total_episodes == dataset.total_episodes == 3
    env = gym.make("Beggar-v0", n_players=3)  # the same episodes, played here
    for number, episode in enumerate(back.iterate_episodes()):
        assert episode.id == number
        obs, info = env.reset(seed=5 + number)
        rewards, terminated = [], False
        while not terminated:
            obs, reward, terminated, _, info = env.step(most_cards(obs))
            rewards.append(reward)
        assert np.array_equal(episode.rewards, rewards) and len(episode.infos["cards"]) == len(rewards) + 1
        assert list(episode.infos["outcome"][:-1]) == ["running"] * len(rewards)
        assert (episode.infos["outcome"][-1], episode.infos["winner"][-1]) == (info["outcome"], info["winner"])
        assert np.array_equal(episode.infos["hand_sizes"][-1], info["hand_sizes"])
    assert back.recover_environment().spec.id == "Beggar-v0"


def test_hugging_face_load_dataset_reads_the_shards_exactly(tmp_path):
    hf = pytest.importorskip("datasets", reason="Hugging Face datasets")
    if not hasattr(hf, "load_dataset"):
        pytest.skip("another package named datasets")
    pytest.importorskip("pyarrow")
    datasets.shards.generate(tmp_path / "d", 300, seed=3, split="train=0.8,test=0.2", shard_games=100)
    files = {name: str(tmp_path / "d" / "samples" / f"split={name}" / "*.parquet") for name in ("train", "test")}
    read = hf.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"))
    for name in ("train", "test"):
        expected = datasets.load(tmp_path / "d", split=name)
        table = read[name].with_format("numpy")
        assert len(table) == len(expected) > 0
        assert np.array_equal(table["label"], expected.label) and np.array_equal(table["game"], expected.game)
        assert np.array_equal(table["pile_0"], expected.fields["pile"][:, 0])


@pytest.mark.parametrize("missing", ["pyarrow", "PIL"])
def test_recording_says_what_minaris_arrow_storage_needs_before_it_records(missing, monkeypatch):
    """Minari imports pyarrow and Pillow only when it writes an episode, and declares neither."""
    pytest.importorskip("minari")
    from beggar_env.envs import minari as recording

    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError, match=f"needs {missing}: pip install 'minari.create,arrow.' pillow"):
        recording.record("beggar/x-v0", lambda obs: 0, 1)
    assert recording.require_minari("hdf5") is not None

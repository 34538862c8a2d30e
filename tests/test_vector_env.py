"""The native vector env, ``gym.make_vec("Beggar-v0", num_envs=N)``: it behaves exactly like
N single envs (and like ``SyncVectorEnv`` over them) in every autoreset mode, plays given
deals exactly, is deterministic whatever the number of threads, and checks its inputs."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numba
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import batch_space

import beggar_env
from beggar_env import core
from beggar_env.checks import seed as as_seed
from beggar_env.deals import parse_deal
from beggar_env.envs import BeggarVectorEnv

ROOT = Path(__file__).resolve().parents[1]
N_ENVS = 8
BEST_REWARD = {"accuracy": 1.0, "brier": 0.0, "log": 0.0}

# Eight 2-player deals for a vector env's first reset: cycles (jack loop, king loop,
# Casella 2024), a game over at reset, short wins, a Deal object and rank notation.
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"
START_DEALS = [
    "J--/-J-",
    "--J-/K-J-",
    "----/",
    CASELLA,
    "J/-J",
    "-/-",
    beggar_env.random_deal(2, seed=21),
    beggar_env.format_deal(beggar_env.random_deal(2, seed=22), "ranks"),
]


# ------------------------------------------------------------------------ helpers


def make_vec(num_envs=N_ENVS, **options):
    return gym.make_vec("Beggar-v0", num_envs=num_envs, **options)


def make_sync(num_envs=N_ENVS, autoreset_mode=AutoresetMode.NEXT_STEP, **options):
    return SyncVectorEnv([lambda: gym.make("Beggar-v0", **options)] * num_envs, autoreset_mode=autoreset_mode)


def env_seeds(seed, num_envs=N_ENVS):
    """The single-env seeds that deal what a vector env reset with ``seed`` deals."""
    keys = core.stream_keys(np.uint64(seed), num_envs)
    assert all(int(keys[i]) == int(core.stream_key(as_seed(seed), np.uint64(i))) for i in range(num_envs))
    return [int(key) for key in keys]


def random_actions(rng, num_envs, n_players, forecast):
    if forecast == "label":
        return rng.integers(0, n_players + 1, num_envs)
    weights = rng.integers(0, 3, (num_envs, n_players + 1)).astype(np.float32)  # zeros and ties too
    weights[weights.sum(axis=1) == 0, -1] = 1.0
    return weights


def one_action(actions, i, forecast):
    return int(actions[i]) if forecast == "label" else actions[i]


class NextStepSingles:
    """N single envs, autoreset the way SyncVectorEnv does it in NEXT_STEP mode."""

    def __init__(self, num_envs, forecast, **options):
        self.envs = [gym.make("Beggar-v0", forecast=forecast, **options) for _ in range(num_envs)]
        self.forecast = forecast
        self.pending = [False] * num_envs

    def reset(self, seeds, deals=None):
        self.pending = [False] * len(self.envs)
        return [
            env.reset(seed=seeds[i], options=None if deals is None else {"deal": deals[i]})
            for i, env in enumerate(self.envs)
        ]

    def step(self, actions):
        results = []
        for i, env in enumerate(self.envs):
            if self.pending[i]:
                obs, info = env.reset()
                results.append((obs, 0.0, False, False, info))
            else:
                results.append(env.step(one_action(actions, i, self.forecast)))
            self.pending[i] = results[-1][2] or results[-1][3]
        return results


def _equal(a, b):
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return np.array_equal(a, b)


def assert_obs_row(vec_obs, i, obs, where):
    assert vec_obs.keys() == obs.keys(), where
    for key, value in obs.items():
        assert isinstance(value, np.ndarray) and value.dtype == np.int32, (where, key)
        assert vec_obs[key].dtype == np.int32 and vec_obs[key].shape[1:] == value.shape, (where, key)
        assert np.array_equal(vec_obs[key][i], value), (where, key, i, vec_obs[key][i], value)


def assert_info_row(vec_info, i, info, where):
    """Env i's part of a vector info is exactly the single env's info."""
    for key, value in info.items():
        assert key in vec_info and f"_{key}" in vec_info, (where, key)
        assert vec_info[f"_{key}"][i], (where, "mask", key, i)
        assert _equal(vec_info[key][i], value), (where, key, i, vec_info[key][i], value)
    for key in vec_info:
        if not key.startswith("_"):
            assert f"_{key}" in vec_info, (where, key)
            assert bool(vec_info[f"_{key}"][i]) == (key in info), (where, "mask", key, i)
        else:
            assert key[1:] in vec_info, (where, key)


def assert_same_infos(a, b, where):
    """Two vector infos hold the same keys and masks, and the same values where masked."""
    assert a.keys() == b.keys(), (where, sorted(a), sorted(b))
    for key in a:
        if key.startswith("_"):
            assert a[key].dtype == np.bool_ and np.array_equal(a[key], b[key]), (where, key, a[key], b[key])
    for key in a:
        if key.startswith("_"):
            continue
        mask = a["_" + key]
        if isinstance(a[key], dict):
            assert isinstance(b[key], dict), (where, key)
            assert_same_infos(a[key], b[key], f"{where} {key}")
            continue
        assert len(a[key]) == len(b[key]) == len(mask), (where, key)
        if key == "final_obs":
            for i in np.flatnonzero(mask):
                assert a[key][i].keys() == b[key][i].keys(), (where, key, i)
                for name in a[key][i]:
                    assert np.array_equal(a[key][i][name], b[key][i][name]), (where, key, i, name)
                    assert np.shape(a[key][i][name]) == np.shape(b[key][i][name]), (where, key, i, name)
            continue
        assert a[key].dtype.kind == b[key].dtype.kind, (where, key, a[key].dtype, b[key].dtype)
        assert a[key].shape == b[key].shape, (where, key)
        for i in np.flatnonzero(mask):
            assert _equal(a[key][i], b[key][i]), (where, key, i, a[key][i], b[key][i])


def assert_same_obs(a, b, where):
    assert a.keys() == b.keys(), where
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, (where, key)
        assert np.array_equal(a[key], b[key]), (where, key)


def assert_same_step(a, b, where):
    """Two vector step results (obs, rewards, terminated, truncated, infos) are the same."""
    assert_same_obs(a[0], b[0], where)
    for k, name in ((1, "reward"), (2, "terminated"), (3, "truncated")):
        assert a[k].shape == b[k].shape and a[k].dtype.kind == b[k].dtype.kind, (where, name, a[k], b[k])
        assert np.array_equal(a[k], b[k]), (where, name, a[k], b[k])
    assert_same_infos(a[4], b[4], where)


def sync_reset(sync, seeds, deals=None):
    """Reset a SyncVectorEnv with one seed per env and, optionally, one deal per env."""
    result = sync.reset(seed=seeds)
    if deals is None:
        return result
    for i, deal in enumerate(deals):  # SyncVectorEnv passes one options dict to all: one env at a time
        mask = np.zeros(sync.num_envs, np.bool_)
        mask[i] = True
        obs, _ = sync.reset(seed=seeds, options={"reset_mask": mask, "deal": deal})
    return obs, None


def case_id(options, start):
    return "-".join(str(v) for v in options.values()) + "-" + start


# --------------------------------------------------- 1. N single envs, SyncVectorEnv

EQUIVALENCE_CASES = [
    (
        dict(n_players=2, step_unit="card", observation="public", forecast="label", reward="accuracy", max_cards=150),
        "int",
    ),
    (dict(n_players=2, step_unit="trick", observation="full", forecast="probs", reward="log"), "deals"),
    (dict(n_players=2, step_unit="card", observation="full", forecast="label", reward="brier"), "deals"),
    (dict(n_players=3, step_unit="card", observation="full", forecast="probs", reward="brier", max_cards=150), "list"),
    (dict(n_players=3, step_unit="trick", observation="public", forecast="label", reward="log"), "int"),
    (
        dict(n_players=4, step_unit="card", observation="public", forecast="probs", reward="accuracy", max_cards=150),
        "int",
    ),
    (dict(n_players=4, step_unit="trick", observation="full", forecast="label", reward="brier", max_cards=400), "list"),
]


@pytest.mark.parametrize("case", range(len(EQUIVALENCE_CASES)), ids=[case_id(o, s) for o, s in EQUIVALENCE_CASES])
def test_vector_env_equals_single_envs_and_sync_vector_env(case):
    options, start = EQUIVALENCE_CASES[case]
    n_steps = 500
    seed = 1000 + case
    seeds = env_seeds(seed)
    deals = START_DEALS if start == "deals" else None
    vec = make_vec(**options)
    singles = NextStepSingles(N_ENVS, **options)
    sync = make_sync(**options)
    forecast = options["forecast"]

    if start == "list":
        given = [seed * 10 + i for i in range(N_ENVS)]  # a list: env i's stream is as_seed(given[i])
        seeds = given
        vec_reset = vec.reset(seed=given)
    else:
        vec_reset = vec.reset(seed=seed, options=None if deals is None else {"deals": list(deals)})
    single_reset = singles.reset(seeds, deals)
    sync_obs, sync_info = sync_reset(sync, seeds, deals)
    for i, (obs, info) in enumerate(single_reset):
        assert_obs_row(vec_reset[0], i, obs, "reset")
        assert_info_row(vec_reset[1], i, info, "reset")
    assert_same_obs(vec_reset[0], sync_obs, "reset")
    if sync_info is not None:
        assert_same_infos(vec_reset[1], sync_info, "reset")

    rng = np.random.default_rng(seed)
    ends, outcomes = 0, set()
    for t in range(n_steps):
        actions = random_actions(rng, N_ENVS, options["n_players"], forecast)
        vec_step = vec.step(actions.copy())
        single_step = singles.step(actions)
        sync_step = sync.step(actions.copy())
        where = f"step {t}"
        assert vec_step[1].dtype == np.float64 and vec_step[2].dtype == np.bool_ and vec_step[3].dtype == np.bool_
        for i, (obs, reward, terminated, truncated, info) in enumerate(single_step):
            assert_obs_row(vec_step[0], i, obs, where)
            assert vec_step[1][i] == reward, (where, i, vec_step[1][i], reward)
            assert vec_step[2][i] == terminated and vec_step[3][i] == truncated, (where, i)
            assert_info_row(vec_step[4], i, info, where)
            if terminated:
                ends += 1
                outcomes.add(info["outcome"])
        assert_same_step(vec_step, sync_step, where)
        assert vec.observation_space.contains(vec_step[0])

    assert ends >= 2 * N_ENVS, f"only {ends} episodes ended: autoreset barely exercised"
    if start == "deals":
        assert "cycle" in outcomes
    if options.get("max_cards") and options["step_unit"] == "card":
        assert {"win", "limit"} <= outcomes


def test_a_vector_env_of_one_equals_the_single_env():
    vec = make_vec(1, n_players=3, observation="full")
    env = gym.make("Beggar-v0", n_players=3, observation="full")
    [seed] = env_seeds(5, 1)
    obs, info = vec.reset(seed=5)
    single_obs, single_info = env.reset(seed=seed)
    assert_obs_row(obs, 0, single_obs, "reset")
    assert_info_row(info, 0, single_info, "reset")
    for t in range(2000):
        obs, reward, terminated, _, info = vec.step(np.array([t % 4]))
        single = env.step(t % 4)
        assert_obs_row(obs, 0, single[0], t)
        assert reward[0] == single[1] and terminated[0] == single[2]
        assert_info_row(info, 0, single[4], t)
        if terminated[0]:
            break
    assert terminated[0]


# ------------------------------------------------------------- 2. explicit deals


@pytest.mark.parametrize("step_unit", ["card", "trick"])
def test_reference_deals_play_exactly_in_the_vector_env(vectors, step_unit):
    by_players = {}
    for row in vectors:
        by_players.setdefault(parse_deal(row["deal"]).n_players, []).append(row)
    assert by_players.get(2), "no 2-player reference deals"
    for n_players, rows in by_players.items():
        num_envs = len(rows) + 5  # the list cycled: some deals played by two envs at once
        rows = [rows[i % len(rows)] for i in range(num_envs)]
        expected = [beggar_env.play(row["deal"]) for row in rows]
        truth = np.array([n_players if r.winner is None else r.winner for r in expected])
        vec = make_vec(num_envs, n_players=n_players, step_unit=step_unit)
        obs, info = vec.reset(seed=0, options={"deals": [row["deal"] for row in rows]})
        assert (info["cards"] == 0).all() and (info["tricks"] == 0).all()
        for i, row in enumerate(rows):
            assert obs["hand_sizes"][i].tolist() == list(parse_deal(row["deal"]).hand_sizes)
        finals, lengths = [None] * num_envs, [0] * num_envs
        steps = 0
        while None in finals:
            obs, reward, terminated, truncated, info = vec.step(truth)
            steps += 1
            assert not truncated.any()
            running = np.array([f is None for f in finals])
            assert (reward[running] == 1.0).all()  # the truth earns the best reward at every step
            for i in np.flatnonzero(running & terminated):
                finals[i] = {key: info[key][i] for key in info if not key.startswith("_") and info["_" + key][i]}
                lengths[i] = steps
            for i in np.flatnonzero(running & ~terminated):
                assert "outcome" not in info or not info["_outcome"][i]
            assert steps <= 10_000
        for i, row in enumerate(rows):
            final, name = finals[i], row["name"]
            assert (final["outcome"], final["cards"], final["tricks"]) == (
                row["outcome"],
                row["cards"],
                row["tricks"],
            ), name
            assert final["winner"] == (-1 if row["winner"] is None else row["winner"]), name
            assert tuple(final["hand_sizes"]) == expected[i].hand_sizes, name
            if row["outcome"] == "cycle":
                assert (
                    final["cycle_start_cards"],
                    final["cycle_start_tricks"],
                    final["cycle_cards"],
                    final["cycle_tricks"],
                ) == (row["cycle_start_cards"], row["cycle_start_tricks"], row["cycle_cards"], row["cycle_tricks"]), (
                    name
                )
            else:
                assert "cycle_cards" not in final, name
            assert lengths[i] == (row["cards"] if step_unit == "card" else row["tricks"]), name


def test_explicit_deals_match_the_single_env_info_for_info():
    rows = [d for d in START_DEALS]
    vec = make_vec(len(rows), step_unit="trick", autoreset_mode=AutoresetMode.DISABLED)
    envs = [gym.make("Beggar-v0", step_unit="trick") for _ in rows]
    obs, info = vec.reset(options={"deals": rows})
    for i, env in enumerate(envs):
        single_obs, single_info = env.reset(options={"deal": rows[i]})
        assert_obs_row(obs, i, single_obs, "reset")
        assert_info_row(info, i, single_info, "reset")
    done = [False] * len(rows)
    while not all(done):
        obs, reward, terminated, _, info = vec.step(np.zeros(len(rows), np.int64))
        for i, env in enumerate(envs):
            if not done[i]:
                single = env.step(0)
                assert_obs_row(obs, i, single[0], "step")
                assert reward[i] == single[1] and terminated[i] == single[2]
                assert_info_row(info, i, single[4], "step")
                done[i] = single[2]


# ------------------------------------------------------------- 3. autoreset modes

SAME_STEP_CASES = [
    (dict(n_players=2, step_unit="trick", observation="full", forecast="probs", reward="log"), "deals"),
    (dict(n_players=3, step_unit="card", observation="public", forecast="label", reward="brier", max_cards=60), "int"),
    (dict(n_players=4, step_unit="trick", observation="public", forecast="probs", reward="accuracy"), "int"),
]


@pytest.mark.parametrize("mode", ["SameStep", AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("options, start", [pytest.param(o, s, id=case_id(o, s)) for o, s in SAME_STEP_CASES])
def test_same_step_autoreset_equals_sync_vector_env(options, start, mode):
    vec = make_vec(autoreset_mode=mode, **options)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    sync = make_sync(autoreset_mode=AutoresetMode.SAME_STEP, **options)
    seed = 31 + options["n_players"]
    seeds = env_seeds(seed)
    deals = START_DEALS if start == "deals" else None
    obs, info = vec.reset(seed=seed, options=None if deals is None else {"deals": list(deals)})
    sync_obs, sync_info = sync_reset(sync, seeds, deals)
    assert_same_obs(obs, sync_obs, "reset")
    if sync_info is not None:
        assert_same_infos(info, sync_info, "reset")
    rng = np.random.default_rng(seed)
    ends, cycles = 0, 0
    for t in range(300):
        actions = random_actions(rng, N_ENVS, options["n_players"], options["forecast"])
        result = vec.step(actions.copy())
        assert_same_step(result, sync.step(actions.copy()), f"step {t}")
        obs, reward, terminated, _, info = result
        if terminated.any():
            assert {"final_obs", "_final_obs", "final_info", "_final_info"} <= info.keys()
            assert np.array_equal(info["_final_obs"], terminated) and np.array_equal(info["_final_info"], terminated)
            final_info = info["final_info"]
            for i in np.flatnonzero(terminated):
                ends += 1
                cycles += final_info["outcome"][i] == "cycle"
                assert obs["cards"][i] == 0 and info["cards"][i] == 0  # already dealt anew
                final_obs = info["final_obs"][i]
                assert vec.single_observation_space.contains({k: np.asarray(v) for k, v in final_obs.items()})
                assert final_obs["cards"] == final_info["cards"][i]
                assert "outcome" not in info or not info["_outcome"][i]  # the new deal is running
            for i in np.flatnonzero(~terminated):
                assert info["final_obs"][i] is None and not final_info["_outcome"][i]
        else:
            assert "final_obs" not in info and "final_info" not in info
    assert ends >= N_ENVS
    if start == "deals":
        assert cycles >= 3


def test_same_step_final_obs_are_arrays_like_sync_vector_env():
    """final_obs[i] holds what the single env's step returned: int32 arrays, 0-d for scalars."""
    vec = make_vec(2, autoreset_mode="SameStep")
    sync = make_sync(2, autoreset_mode=AutoresetMode.SAME_STEP)
    vec.reset(options={"deals": ["-/-", "-A/-----"]})
    sync_reset(sync, [0, 0], ["-/-", "-A/-----"])
    for _ in range(2):
        a, b = vec.step(np.zeros(2, np.int64)), sync.step(np.zeros(2, np.int64))
    assert a[2][0] and b[2][0]
    for name, value in b[4]["final_obs"][0].items():
        theirs = a[4]["final_obs"][0][name]
        assert isinstance(theirs, np.ndarray) and theirs.dtype == value.dtype and theirs.shape == value.shape, name


def test_disabled_autoreset_keeps_ended_envs_and_resets_only_the_masked_ones():
    vec = make_vec(3, autoreset_mode=AutoresetMode.DISABLED)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.DISABLED
    long_deal = START_DEALS[6]
    vec.reset(seed=4, options={"deals": ["-/-", long_deal, "-A/-----"]})  # env 0 ends after 2 cards
    for _ in range(2):
        obs, reward, terminated, _, info = vec.step(np.array([1, 0, 0]))
    assert terminated.tolist() == [True, False, False]
    ended = {k: v[0].copy() for k, v in obs.items()}
    for _ in range(6):  # env 0 stays as it ended, and is still scored; the others play on
        obs, reward, terminated, _, info = vec.step(np.array([1, 0, 0]))
        assert terminated[0] and reward[0] == 1.0
        for key in ended:
            assert np.array_equal(obs[key][0], ended[key]), key
        assert info["_outcome"][0] and info["outcome"][0] == "win" and info["winner"][0] == 1
        assert info["cards"][0] == 2
    assert terminated[2] and not terminated[1] and info["cards"][1] == 8
    before = {k: v.copy() for k, v in obs.items()}

    mask = np.array([True, False, True])
    obs, info = vec.reset(options={"reset_mask": mask})
    for key in obs:  # env 1 is untouched
        assert np.array_equal(obs[key][1], before[key][1]), key
    assert obs["cards"][mask].tolist() == [0, 0] and (obs["hand_sizes"][mask] == 26).all()
    assert info["_cards"].tolist() == mask.tolist() and info["_tricks"].tolist() == mask.tolist()
    assert "outcome" not in info
    # Envs 0 and 2 now deal from their streams (seeded by reset(seed=4)): as a single env would.
    seeds = env_seeds(4, 3)
    for i in (0, 2):
        single_obs, _ = gym.make("Beggar-v0").reset(seed=seeds[i])
        assert_obs_row(obs, i, single_obs, f"env {i}")
    obs, reward, terminated, _, info = vec.step(np.zeros(3, np.int64))
    assert not terminated.any() and obs["cards"].tolist() == [1, 9, 1]

    with pytest.raises(ValueError, match="reset_mask"):
        vec.reset(options={"reset_mask": np.array([True, False])})
    with pytest.raises(ValueError, match="reset_mask"):
        vec.reset(options={"reset_mask": [1, 0, 1]})
    with pytest.raises(ValueError, match="first reset"):
        make_vec(3).reset(options={"reset_mask": mask})


@pytest.mark.parametrize(
    "options",
    [dict(n_players=2, max_cards=100, forecast="probs"), dict(n_players=4, step_unit="trick", observation="full")],
)
def test_disabled_autoreset_with_masked_resets_equals_sync_vector_env(options):
    vec = make_vec(autoreset_mode="Disabled", **options)
    sync = make_sync(autoreset_mode=AutoresetMode.DISABLED, **options)
    seeds = env_seeds(77)
    assert_same_obs(vec.reset(seed=77)[0], sync.reset(seed=seeds)[0], "reset")
    rng = np.random.default_rng(77)
    resets = 0
    for t in range(300):
        actions = random_actions(rng, N_ENVS, options["n_players"], options.get("forecast", "label"))
        result = vec.step(actions.copy())
        assert_same_step(result, sync.step(actions.copy()), f"step {t}")
        if result[2].any():
            mask = result[2].copy()
            resets += mask.sum()
            a, b = vec.reset(options={"reset_mask": mask}), sync.reset(options={"reset_mask": mask.copy()})
            assert_same_obs(a[0], b[0], f"reset {t}")
            assert_same_infos(a[1], b[1], f"reset {t}")
    assert resets >= N_ENVS


def test_next_step_autoreset_ignores_the_action_and_scores_zero():
    vec = make_vec(2, forecast="probs", reward="brier")
    vec.reset(seed=9, options={"deals": ["-/-", "-A/-----"]})  # won by seat 1 in 2 cards, seat 0 in 7
    truths = np.array([[0, 1, 0], [1, 0, 0]], np.float32)
    uniform = np.ones((2, 3), np.float32)  # scores -2/3 whatever the truth
    for _ in range(2):
        obs, reward, terminated, _, info = vec.step(truths)
        assert reward.tolist() == [0.0, 0.0]
    assert terminated.tolist() == [True, False] and info["outcome"][0] == "win" and not info["_outcome"][1]
    obs, reward, terminated, _, info = vec.step(uniform)
    assert reward[0] == 0.0 and np.isclose(reward[1], -2 / 3)
    assert not terminated.any() and "outcome" not in info
    assert obs["cards"].tolist() == [0, 3] and info["cards"].tolist() == [0, 3]
    assert obs["hand_sizes"][0].tolist() == [26, 26]
    obs, reward, terminated, _, info = vec.step(uniform)
    assert np.allclose(reward, -2 / 3) and obs["cards"].tolist() == [1, 4]


# ------------------------------------------------------------ 4. seeding, threads


def trajectory_hash(seed, num_envs=64, n_steps=300, **options):
    """A digest of a seeded vector env's observations, rewards and flags (autoresets included)."""
    options = {"max_cards": 120, "forecast": "probs", "reward": "brier", "observation": "full", **options}
    vec = make_vec(num_envs, **options)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    obs, _ = vec.reset(seed=seed)
    for _ in range(n_steps):
        for key in sorted(obs):
            digest.update(np.ascontiguousarray(obs[key]).tobytes())
        obs, reward, terminated, _, info = vec.step(random_actions(rng, num_envs, vec.config.n_players, "probs"))
        digest.update(reward.tobytes() + terminated.tobytes() + info["cards"].tobytes())
    return digest.hexdigest()


def test_same_seed_same_trajectory_and_different_seeds_differ():
    assert trajectory_hash(3) == trajectory_hash(3)
    assert trajectory_hash(3) != trajectory_hash(4)
    assert trajectory_hash(3, n_players=3, step_unit="trick") == trajectory_hash(3, n_players=3, step_unit="trick")
    full = make_vec(4, observation="full")
    a, b = full.reset(seed=[1, 2, 3, 4])[0]["hands"], full.reset(seed=[1, 2, 3, 5])[0]["hands"]
    assert np.array_equal(a[:3], b[:3]) and not np.array_equal(a[3], b[3])
    assert np.array_equal(full.reset(seed=[1, 2, 3, 4])[0]["hands"], a)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_copy_false_gives_the_same_observations_in_one_reused_buffer(mode):
    options = dict(observation="counted", n_players=3, autoreset_mode=mode)
    fresh, reused = make_vec(8, **options), make_vec(8, copy=False, **options)
    rng = np.random.default_rng(5)
    a, _ = fresh.reset(seed=9)
    b, _ = reused.reset(seed=9)
    first = b
    for step in range(600):
        if mode == "Disabled" and step % 50 == 49:  # deal anew the envs that ended, keep the others
            mask = fresh._envs["terminated"].astype(bool)
            if mask.any():
                a, _ = fresh.reset(options={"reset_mask": mask})
                b, _ = reused.reset(options={"reset_mask": mask})
        for name in a:
            assert np.array_equal(a[name], b[name]), (step, name)
        kept, snapshot = a, {name: value.copy() for name, value in a.items()}
        actions = rng.integers(0, 4, 8)
        a, ra, ta, _, ia = fresh.step(actions)
        b, rb, tb, _, ib = reused.step(actions)
        assert np.array_equal(ra, rb) and np.array_equal(ta, tb) and np.array_equal(ia["cards"], ib["cards"])
        assert all(np.array_equal(kept[name], snapshot[name]) for name in kept)  # copy=True: what was returned stays
    assert all(np.shares_memory(first[name], b[name]) for name in b)  # copy=False: one buffer throughout
    assert not any(np.shares_memory(kept[name], a[name]) for name in a)


def test_unseeded_resets_continue_the_stream_and_a_new_seed_restarts_it():
    full = make_vec(4, observation="full")
    first = full.reset(seed=12)[0]["hands"]
    second = full.reset()[0]["hands"]  # the next deal of each env's stream
    assert not np.array_equal(first, second)
    assert np.array_equal(full.reset(seed=12)[0]["hands"], first)
    env = gym.make("Beggar-v0", observation="full")
    keys = env_seeds(12, 4)
    env.reset(seed=keys[2])
    assert np.array_equal(env.reset()[0]["hands"], second[2])


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_threads():
    code = (
        "import json, sys, numba; sys.path.insert(0, 'tests'); from test_vector_env import trajectory_hash; "
        "print(json.dumps([numba.get_num_threads(), trajectory_hash(11), "
        "trajectory_hash(11, n_players=4, step_unit='trick')]))"
    )
    runs = {}
    for threads in ("1", None):
        env = dict(os.environ)
        env.pop("NUMBA_NUM_THREADS", None)
        if threads:
            env["NUMBA_NUM_THREADS"] = threads
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env
        )
        assert run.returncode == 0, run.stderr
        runs[threads] = json.loads(run.stdout.strip().splitlines()[-1])
    assert runs["1"][0] == 1
    assert runs["1"][1:] == runs[None][1:]
    assert runs[None][1:] == [trajectory_hash(11), trajectory_hash(11, n_players=4, step_unit="trick")]
    threads = numba.get_num_threads()
    if numba.config.NUMBA_NUM_THREADS > 1:  # in this process too, with the thread count changed
        try:
            numba.set_num_threads(1)
            one = trajectory_hash(11)
        finally:
            numba.set_num_threads(threads)
        assert one == runs[None][1]


# -------------------------------------------------------------- 5. spaces, errors


@pytest.mark.parametrize(
    "options",
    [{}, dict(n_players=3, observation="full", forecast="probs"), dict(n_players=4, step_unit="trick", reward="log")],
)
def test_make_vec_gives_the_native_env_with_batched_spaces(options):
    vec = make_vec(4, **options)
    assert type(vec) is BeggarVectorEnv and vec.num_envs == 4
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = gym.make("Beggar-v0", **options)
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space == batch_space(single.observation_space, 4)
    assert vec.action_space == batch_space(single.action_space, 4)
    vec.action_space.seed(0)
    obs, info = vec.reset(seed=0)
    assert vec.observation_space.contains(obs)
    for _ in range(50):
        obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
        assert vec.observation_space.contains(obs)
        assert reward.shape == terminated.shape == truncated.shape == (4,)
    for key in obs:  # new arrays every call
        assert not np.shares_memory(obs[key], vec.step(vec.action_space.sample())[0][key])


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled", AutoresetMode.DISABLED])
def test_autoreset_mode_is_in_the_metadata(mode):
    vec = make_vec(2, autoreset_mode=mode)
    assert vec.metadata["autoreset_mode"] == AutoresetMode(mode)
    assert vec.autoreset_mode == AutoresetMode(mode)
    assert BeggarVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # the class is unchanged


@pytest.mark.parametrize(
    "options, words, kind",
    [
        ({"num_envs": 0}, ["num_envs"], ValueError),
        ({"num_envs": -2}, ["num_envs"], ValueError),
        ({"num_envs": 2.0}, ["num_envs"], TypeError),
        ({"num_envs": True}, ["num_envs"], TypeError),
        ({"autoreset_mode": "Sometimes"}, ["autoreset_mode", "'NextStep'", "'SameStep'", "'Disabled'"], ValueError),
        ({"n_players": 5}, ["n_players"], ValueError),
        ({"step_unit": "hand"}, ["step_unit"], ValueError),
        ({"reward": "l2"}, ["reward"], ValueError),
        ({"forecast": "guess"}, ["forecast"], ValueError),
        ({"max_cards": 2**63}, ["max_cards", "9,223,372,036,854,775,807"], ValueError),
        ({"render_mode": 1}, ["render_mode", "'ansi'"], TypeError),
        ({"copy": "no"}, ["copy", "True or False"], TypeError),
    ],
)
def test_bad_options_raise_clear_errors_naming_them(options, words, kind):
    options = {"num_envs": 2, **options}
    with pytest.raises(kind) as error:
        gym.make_vec("Beggar-v0", **options)
    for word in words:
        assert word in str(error.value)


def test_bad_actions_raise_value_errors():
    vec = make_vec(4)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(4, np.int64))
    vec.reset(seed=0)
    for bad in (
        np.zeros(3, np.int64),
        np.zeros((4, 1), np.int64),
        np.array([0, 1, 2, 3]),
        np.array([0, -1, 0, 0]),
        np.zeros(4, np.float32),
        [0, 0, 0],
    ):
        with pytest.raises(ValueError, match="label"):
            vec.step(bad)
    probs = make_vec(4, forecast="probs")
    probs.reset(seed=0)
    ok = np.ones((4, 3), np.float32)
    for bad, word in (
        (np.ones((4, 2)), "shape"),
        (np.ones((3, 3)), "shape"),
        (np.ones(4), "shape"),
        (np.vstack([ok[:3], np.zeros((1, 3))]), "all zero"),
        (np.vstack([ok[:3], [[1, -1, 1]]]), ">= 0"),
        (np.vstack([ok[:3], [[np.nan, 1, 1]]]), "finite"),
        (np.vstack([ok[:3], [[1.5e308, 1.5e308, 0]]]), "add up to a finite number"),
    ):
        with pytest.raises(ValueError, match=word):
            probs.step(bad)
    obs, *_ = probs.step(ok)  # the env is still usable after the errors
    assert obs["cards"].tolist() == [1, 1, 1, 1]


def test_bad_reset_options_raise_value_errors():
    vec = make_vec(4)
    with pytest.raises(ValueError, match="one deal per env"):
        vec.reset(options={"deals": ["-/-"] * 3})
    with pytest.raises(ValueError, match="one deal per env"):
        vec.reset(options={"deals": ["-/-"] * 5})
    with pytest.raises(TypeError, match="one per env"):
        vec.reset(options={"deals": "-/-"})
    with pytest.raises(TypeError, match="list of 4 deals"):
        vec.reset(options={"deals": {0: "-/-", 1: "-/-", 2: "-/-", 3: "-/-"}})
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=-5)
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=[0, 1, 2, -5])
    with pytest.raises(ValueError, match="unknown") as error:
        vec.reset(options={"deal": "-/-"})
    assert "'deal'" in str(error.value) and "deals" in str(error.value)
    with pytest.raises(ValueError, match="3 players"):
        vec.reset(options={"deals": ["-/-/-"] * 4})
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=[1, 2, 3])
    obs, info = vec.reset(options={"deals": ["-/-", "--/-", "-A/-----", "J--/-J-"]})
    assert obs["hand_sizes"].tolist() == [[1, 1], [2, 1], [2, 5], [3, 3]]

"""beggar_env.envs.sb3.SB3VecEnv: Stable-Baselines3 on the native vector env, checked step by step
against SB3's own DummyVecEnv over single Beggar-v0 envs seeded alike; and the PPO example.

Stable-Baselines3 and torch are an optional extra (``[rl]``) that CI does not install: the
tests that need them skip, and the ones here that do not (the core install never imports
them; a clear error without them) always run.
"""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import beggar_env  # noqa: F401 (registers Beggar-v0)

REPO = Path(__file__).resolve().parents[1]
SKIP = "Stable-Baselines3 and torch are not installed (pip install -e '.[rl]'; CI leaves them out)"
NEVER_ENDS = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"  # Casella's 2024 deal: a cycle


@pytest.fixture(scope="module")
def sb3(torch_threads):
    pytest.importorskip("torch", reason=SKIP)
    pytest.importorskip("stable_baselines3", reason=SKIP)
    from beggar_env.envs import sb3

    return sb3


def dummy(n, flatten=True, **options):
    """SB3's reference: DummyVecEnv over n single Beggar-v0 envs (flattened by Gymnasium)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    def one():
        env = gym.make("Beggar-v0", **options)
        return gym.wrappers.FlattenObservation(env) if flatten else env

    return DummyVecEnv([one for _ in range(n)])


def assert_same(got, want, where=""):
    """Equal values of equal types, arrays with equal dtypes, dicts with equal keys."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype, f"{where}: {got!r} vs {want!r}"
        np.testing.assert_array_equal(got, want, err_msg=where)
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


def random_actions(rng, n, options):
    n_outcomes = options.get("n_players", 2) + 1
    if options.get("forecast") == "probs":
        return (rng.random((n, n_outcomes)) + 0.01).astype(np.float32)
    return rng.integers(0, n_outcomes, n)


CASES = [
    pytest.param(dict(n_players=2, observation="counted"), True, 2500, id="2p-counted-card-flat"),
    pytest.param(dict(n_players=3, observation="full", step_unit="trick"), False, 600, id="3p-full-trick-dict"),
    pytest.param(
        dict(n_players=4, step_unit="trick", forecast="probs", reward="brier"), True, 600, id="4p-public-probs-flat"
    ),
    pytest.param(dict(n_players=2, observation="counted", max_cards=40, reward="log"), False, 400, id="2p-limit-dict"),
]


@pytest.mark.parametrize("options, flatten, steps", CASES)
def test_steps_match_dummy_vec_env(sb3, options, flatten, steps):
    """Observations, rewards, dones, infos (terminal observations included) and reset
    infos, step after step over many episodes, through a reset mid-way and a reseed."""
    n = 6
    ours, ref = sb3.make(n, flatten=flatten, **options), dummy(n, flatten, **options)
    assert ours.observation_space == ref.observation_space and ours.action_space == ref.action_space
    rng = np.random.default_rng(1)
    ended = 0
    for phase, seed in enumerate((11, None, 12)):  # seeded, then a plain reset (the streams go on), reseeded
        if seed is not None:
            assert ours.seed(seed) == ref.seed(seed)
        assert_same(ours.reset(), ref.reset(), f"reset {phase}")
        assert_same(ours.reset_infos, ref.reset_infos, f"reset infos {phase}")
        for t in range(steps // 3):
            actions = random_actions(rng, n, options)
            got, want = ours.step(actions), ref.step(actions)
            assert_same(got, want, f"phase {phase} step {t}")
            assert_same(ours.reset_infos, ref.reset_infos, f"phase {phase} step {t}: reset infos")
            ended += int(want[2].sum())
    assert ended >= 10  # the comparison crossed many episode ends


def test_given_deals_and_cycle_infos_match(sb3):
    """set_options({"deal": ...}) plays the deal at the next reset; a never-ending deal ends
    with its cycle figures in the info, as the single env gives them."""
    n = 3
    ours, ref = sb3.make(n), dummy(n)
    for env in (ours, ref):
        env.seed(5)
        env.set_options({"deal": NEVER_ENDS})
    assert_same(ours.reset(), ref.reset())
    cycles = 0
    for t in range(600):
        actions = np.full(n, t % 3)
        got, want = ours.step(actions), ref.step(actions)
        assert_same(got, want, f"step {t}")
        cycles += sum(info.get("outcome") == "cycle" for info in want[3])
    assert cycles == n  # every env played the deal to its cycle, then random deals


@pytest.mark.slow
def test_ppo_learns_the_same_model(sb3):
    """PPO, seeded alike, trains to bit-identical weights on the adapter and on
    DummyVecEnv: SB3 sees the same data through both."""
    import torch
    from stable_baselines3 import PPO

    weights = []
    for env in (sb3.make(4, observation="counted"), dummy(4, observation="counted")):
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=2, seed=7, device="cpu")
        model.learn(256)
        weights.append(torch.nn.utils.parameters_to_vector(model.policy.parameters()).detach())
    assert torch.equal(weights[0], weights[1])


def test_sb3_evaluation_and_monitor_match(sb3):
    """SB3's evaluate_policy through VecMonitor: the same episode rewards and lengths."""
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecMonitor

    class MostCards:  # a fixed policy, so that only the envs differ
        def predict(self, obs, state=None, episode_start=None, deterministic=True):
            return obs[:, 4:6].argmax(axis=1), None  # hand_sizes, after alive (2), cards, court

    runs = []
    for env in (sb3.make(4), dummy(4)):
        env.seed(3)
        runs.append(evaluate_policy(MostCards(), VecMonitor(env), n_eval_episodes=12, return_episode_rewards=True))
    assert runs[0] == runs[1] and len(runs[0][0]) == 12


def test_attributes_wrappers_and_render_match(sb3):
    from stable_baselines3.common.monitor import Monitor

    n = 3
    ours, ref = sb3.make(n, render_mode="ansi"), dummy(n, render_mode="ansi")
    assert ours.get_attr("render_mode") == ref.get_attr("render_mode") == ["ansi"] * n
    assert ours.get_attr("observation_space", [0, 2]) == ref.get_attr("observation_space", [0, 2])
    assert ours.get_attr("action_space", 1) == ref.get_attr("action_space", 1)
    assert ours.env_is_wrapped(gym.wrappers.FlattenObservation) == ref.env_is_wrapped(gym.wrappers.FlattenObservation)
    assert ours.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor) == [False] * n
    assert sb3.make(n, flatten=False).env_is_wrapped(gym.wrappers.FlattenObservation) == [False] * n
    for env in (ours, ref):
        env.seed(0)
        env.reset()
        for _ in range(20):
            env.step(np.zeros(n, np.int64))
    assert ours.env_method("render", indices=[1, 2]) == ref.env_method("render", indices=[1, 2])
    assert "cards played" in ours.env_method("render")[0]
    ours.set_attr("render_mode", "ansi")


def test_flatten_obs_is_flatten_observation(sb3):
    env = sb3.make(5, observation="counted")
    envs = gym.make_vec("Beggar-v0", num_envs=5, observation="counted")
    obs, _ = envs.reset(seed=2)
    flat = env.flatten_obs(obs)
    space = envs.single_observation_space
    want = np.stack([gym.spaces.flatten(space, {k: v[i] for k, v in obs.items()}) for i in range(5)])
    assert_same(flat, want)


def test_check_env_accepts_the_single_env(sb3):
    """SB3's env checker on what the adapter reproduces, the flattened single env (SB3 has
    no VecEnv checker)."""
    from stable_baselines3.common.env_checker import check_env

    check_env(gym.wrappers.FlattenObservation(gym.make("Beggar-v0", observation="counted")), warn=False)


def test_clear_errors(sb3):
    with pytest.raises(TypeError, match="Gymnasium vector env"):
        sb3.SB3VecEnv(gym.make("Beggar-v0"))
    with pytest.raises(ValueError, match="autoreset_mode='SameStep'.*'NextStep'"):
        sb3.SB3VecEnv(gym.make_vec("Beggar-v0", num_envs=2))
    with pytest.raises(ValueError, match="sets autoreset_mode"):
        sb3.make(2, autoreset_mode="SameStep")
    env = sb3.make(2)
    with pytest.raises(ValueError, match="for all envs"):
        env.set_attr("render_mode", None, indices=[0])
    with pytest.raises(NotImplementedError, match="'close'"):
        env.env_method("close")
    with pytest.raises(RuntimeError, match="step_async"):
        env.step_wait()
    env.set_options([{"deal": NEVER_ENDS}, {}])
    with pytest.raises(ValueError, match="for every env"):
        env.reset()


def test_logit_actions_step_the_env_with_their_softmax(sb3):
    """LogitActions steps the env with softmax(logits): the same observations and rewards
    as the probabilities handed to the unwrapped env; the rewards are the log score."""
    n = 4
    wrapped = sb3.LogitActions(sb3.make(n, forecast="probs", reward="log"))
    plain = sb3.make(n, forecast="probs", reward="log")
    assert wrapped.action_space.shape == (3,) and wrapped.action_space.low.min() == -20
    for env in (wrapped, plain):
        env.seed(9)
    assert_same(wrapped.reset(), plain.reset())
    rng = np.random.default_rng(0)
    for t in range(300):
        logits = rng.normal(0, 3, (n, 3)).astype(np.float32)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        got, want = wrapped.step(logits), plain.step(probs.astype(np.float32))
        assert_same(got[0], want[0], f"step {t}")
        np.testing.assert_allclose(got[1], want[1], atol=1e-5)
        assert (got[1] <= 0).all() and (got[1] >= np.log(1e-6) - 1e-6).all()
    np.testing.assert_allclose(sb3.softmax([[0.0, np.log(3.0), -np.inf]]), [[0.25, 0.75, 0.0]])


def test_mapped_observations_are_the_function_of_each_observation(sb3):
    """MappedObservations hands the policy fn(obs), for the step's and the terminal
    observations, exactly as fn maps the unwrapped env's."""
    from beggar_env.forecasting import features

    n, fn = 3, features.counted_features
    mapped = sb3.MappedObservations(sb3.make(n, observation="counted", flatten=False), fn)
    plain = sb3.make(n, observation="counted", flatten=False)
    assert mapped.observation_space.shape == (fn(plain.reset()).shape[1],)
    for env in (mapped, plain):
        env.seed(4)
    np.testing.assert_array_equal(mapped.reset(), fn(plain.reset()))
    ended = 0
    for t in range(800):
        actions = np.full(n, t % 3)
        (obs, rewards, dones, infos), want = mapped.step(actions), plain.step(actions)
        np.testing.assert_array_equal(obs, fn(want[0]), err_msg=f"step {t}")
        np.testing.assert_array_equal(rewards, want[1])
        for i in np.flatnonzero(dones):
            last = {k: np.asarray(v)[None] for k, v in want[3][i]["terminal_observation"].items()}
            np.testing.assert_array_equal(infos[i]["terminal_observation"], fn(last)[0])
            ended += 1
    assert ended >= 3
    with pytest.raises(TypeError, match="Dict observations"):
        sb3.MappedObservations(sb3.make(n), fn)
    with pytest.raises(ValueError, match="forecast='probs'"):
        sb3.LogitActions(sb3.make(n))
    with pytest.raises(ValueError, match="matrix of 1 rows"):
        sb3.MappedObservations(sb3.make(n, flatten=False), lambda obs: np.zeros(5))


# ------------------------------------------------------------ without SB3 or torch


def run_python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.slow
def test_core_never_imports_torch_or_sb3():
    code = (
        "import sys, numpy as np, gymnasium as gym, beggar_env\n"
        "from beggar_env import envs, datasets, forecasting\n"
        "envs = gym.make_vec('Beggar-v0', num_envs=2, observation='counted'); envs.reset(seed=0)\n"
        "envs.step(np.zeros(2, np.int64))\n"
        "print(sorted({'torch', 'stable_baselines3'} & set(sys.modules)))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.slow
def test_adapter_without_sb3_says_what_to_install():
    code = "import sys\nsys.modules['stable_baselines3'] = None\nimport beggar_env.envs.sb3\n"
    result = run_python(code)
    assert result.returncode != 0
    hint = "pip install '.[rl]' in a checkout of beggar-env (once published: pip install 'beggar-env[rl]')"
    assert f"ImportError: beggar_env.envs.sb3 needs Stable-Baselines3 and torch: {hint}" in result.stderr


# ------------------------------------------------------------------- the example


def load_example():
    spec = importlib.util.spec_from_file_location("ppo_forecaster", REPO / "studies" / "ppo_forecaster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_ppo_example_quick_writes_a_protocol_report(sb3, tmp_path):
    """The quick mode, run as a user runs it, trains, evaluates on the protocol's test set
    and writes the report; seeded, so running it again (here in-process) gives the same."""
    from beggar_env.forecasting import protocol as evaluate
    from beggar_env.forecasting.report import TEST_SEED

    result = subprocess.run(
        [sys.executable, str(REPO / "studies" / "ppo_forecaster.py"), "--quick", "--out", str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"all: accuracy 0\.\d{3} \[", result.stdout)
    load_example().main(["--quick", "--out", str(tmp_path / "b.json")])
    reports = [json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json")]
    report = reports[0]
    test = evaluate.TestSet.generate(2, report["games"], seed=TEST_SEED)
    assert report["n_players"] == 2 and report["positions"] == len(test.labels)
    assert set(report["slices"]) == set(test.slices)
    assert 0 <= report["slices"]["all"]["accuracy"]["value"] <= 1
    assert report["training"]["steps"] > 0 and report["training"]["torch_threads"] == 1
    for r in reports:
        r.pop("forecasts_per_s")
        r["training"].pop("seconds")
        r["training"].pop("command")
    assert reports[0] == reports[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        ["--reward", "log", "--inputs", "features"],
        ["--algorithm", "recurrent", "--observation", "public", "--reward", "log", "--inputs", "features"],
    ],
    ids=["ppo-log", "recurrent-ppo-log"],
)
def test_ppo_example_calibrated_and_recurrent_rows(sb3, options, tmp_path):
    """The logit policies' forecasts, played by the protocol in the vector env, are the
    softmax of the model's deterministic action on the same observations; a recurrent
    policy's state starts afresh at each game, so two identical games get identical
    forecasts even after other games ran through it."""
    from beggar_env.deals import format_deal, random_deals
    from beggar_env.envs.sb3 import softmax
    from beggar_env.forecasting import features

    example = load_example()
    args = example.parse_args(["--quick", *options])
    model, envs, _ = example.train(args)
    policy = example.forecaster(model, envs, args)
    deal = format_deal(random_deals(1, 2, 5)[0], "compact")
    play = gym.make_vec("Beggar-v0", num_envs=2, observation=args.observation, forecast="probs")
    obs, _ = play.reset(options={"deals": [deal, deal]})
    forecasts = []
    for _ in range(30):
        probs = policy(obs)
        assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1)
        forecasts.append(probs)
        obs, *_ = play.step(probs)
    np.testing.assert_allclose(forecasts[5][0], forecasts[5][1], atol=1e-6)  # the same game, the same forecast
    again = example.forecaster(model, envs, args)
    obs, _ = play.reset(options={"deals": [deal, deal]})
    np.testing.assert_allclose(again(obs), forecasts[0], atol=1e-6)
    if args.algorithm == "ppo":
        x = envs.normalize_obs(features.FEATURES[args.observation](obs))
        action, _ = model.predict(x, deterministic=True)
        np.testing.assert_allclose(again(obs), softmax(action), atol=1e-6)
    first = policy(play.reset(options={"deals": [deal, deal]})[0])  # new games: a recurrent state starts afresh
    np.testing.assert_allclose(first, forecasts[0], atol=1e-6)
    command = [sys.executable, str(REPO / "studies" / "ppo_forecaster.py"), "--quick", *options]
    result = subprocess.run([*command, "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["training"]["reward"] == "log" and report["forecaster"] == example.row_name(args)
    assert 0 <= report["slices"]["all"]["accuracy"]["value"] <= 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", str(0x7E57 - 3)], "leave out the test seed 32343"),
        (["--steps", "0"], "--steps must be at least 1"),
        (["--out", "/no/such/folder/r.json"], "no such folder"),
    ],
)
def test_ppo_example_refuses_bad_arguments(args, message, capsys):
    """Checked before any work (and without SB3): a training seed range that holds the
    test seed would train on the test games."""
    with pytest.raises(SystemExit) as exit_info:
        load_example().parse_args(args)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_stepping_with_no_actions_names_them_and_the_env_steps_on(sb3):
    """``step(None)`` gave step_wait's RuntimeError ("call step_async first"), as if the
    caller had forgotten a call."""
    env = sb3.make(2)
    env.reset()
    with pytest.raises(TypeError, match="actions must be the 2 envs' actions"):
        env.step(None)
    with pytest.raises(ValueError, match="actions"):
        env.step(np.array([7, 7]))  # a refused action is not tried again at the next step
    obs, rewards, dones, infos = env.step(np.zeros(2, np.int64))
    assert obs.shape[0] == 2 and len(infos) == 2

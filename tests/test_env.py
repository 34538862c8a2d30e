"""Beggar-v0: the Gymnasium contract, the game it plays, its rewards, copies and errors."""

import copy
import itertools
import json
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from conftest import require_vector
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import FlattenObservation, RecordEpisodeStatistics

import beggar_env
from beggar_env import task

BEST_REWARD = {"accuracy": 1.0, "brier": 0.0, "log": 0.0}


def run_episode(env, policy, **reset_kwargs):
    obs, info = env.reset(**reset_kwargs)
    steps = [(obs, None, False, info)]
    terminated = False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(policy(obs, info))
        assert truncated is False
        steps.append((obs, reward, terminated, info))
    return steps


def true_label(result, n_players):
    return n_players if result.winner is None else result.winner


@pytest.mark.parametrize(
    "n_players, step_unit, observation, forecast, reward, render_mode",
    list(
        itertools.product(
            (2, 3, 4),
            ("card", "trick"),
            task.OBSERVATIONS,
            ("label", "probs"),
            ("accuracy", "brier", "log"),
            (None, "ansi", "rgb_array"),
        )
    ),
)
def test_check_env_passes_for_every_combination(n_players, step_unit, observation, forecast, reward, render_mode):
    env = gym.make(
        "Beggar-v0",
        n_players=n_players,
        step_unit=step_unit,
        observation=observation,
        forecast=forecast,
        reward=reward,
        render_mode=render_mode,
    )
    check_env(env.unwrapped, skip_render_check=render_mode is None)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    if render_mode == "ansi":
        assert isinstance(env.render(), str)
    elif render_mode == "rgb_array":
        frame = env.render()
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8


@pytest.mark.slow
def test_registration_without_prior_import():
    code = "import gymnasium as gym; e = gym.make('beggar_env:Beggar-v0'); print(e.unwrapped.config.n_players)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "2"


@pytest.mark.parametrize("step_unit", ["card", "trick"])
def test_every_vector_replays_exactly_and_the_truth_earns_the_best_reward(vector, step_unit):
    vector = require_vector(vector)
    expected = beggar_env.play(vector["deal"])
    for reward in ("accuracy", "brier", "log"):
        for forecast in ("label", "probs"):
            env = gym.make("Beggar-v0", step_unit=step_unit, reward=reward, forecast=forecast)
            label = true_label(expected, 2)
            action = label if forecast == "label" else np.eye(3, dtype=np.float32)[label]
            steps = run_episode(env, lambda obs, info: action, options={"deal": vector["deal"]})
            final = steps[-1][3]
            assert (final["outcome"], final["cards"], final["tricks"]) == (
                vector["outcome"],
                vector["cards"],
                vector["tricks"],
            )
            assert final["winner"] == (-1 if vector["winner"] is None else vector["winner"])
            if vector["outcome"] == "cycle":
                assert (
                    final["cycle_start_cards"],
                    final["cycle_start_tricks"],
                    final["cycle_cards"],
                    final["cycle_tricks"],
                ) == (
                    vector["cycle_start_cards"],
                    vector["cycle_start_tricks"],
                    vector["cycle_cards"],
                    vector["cycle_tricks"],
                )
            assert all(r == BEST_REWARD[reward] for _, r, _, _ in steps[1:])
            if step_unit == "card":
                assert len(steps) - 1 == vector["cards"]
            else:
                assert len(steps) - 1 == vector["tricks"]  # every game here ends at a taking


def test_wrong_forecasts_score_the_worst_and_probs_are_normalised():
    deal = "-A/-----"  # seat 0 wins
    for reward, worst in (("accuracy", 0.0), ("brier", -2.0), ("log", np.log(1e-6))):
        env = gym.make("Beggar-v0", reward=reward)
        steps = run_episode(env, lambda obs, info: 1, options={"deal": deal})
        assert all(np.isclose(r, worst) for _, r, _, _ in steps[1:])
    env = gym.make("Beggar-v0", forecast="probs", reward="brier")
    env.reset(options={"deal": deal})
    _, reward, _, _, _ = env.step(np.array([2.0, 1.0, 1.0]))  # normalised to 0.5, 0.25, 0.25
    assert np.isclose(reward, -(0.5**2 + 0.25**2 + 0.25**2))
    env = gym.make("Beggar-v0", forecast="probs", reward="log")
    env.reset(options={"deal": deal})
    assert np.isclose(env.step(np.array([0.25, 0.5, 0.25]))[1], np.log(0.25))
    assert np.isclose(env.step(np.array([0.0, 1.0, 0.0]))[1], np.log(1e-6))


def test_the_observation_follows_the_game():
    env = gym.make("Beggar-v0", n_players=3, observation="full")
    obs, _ = env.reset(seed=5)
    assert obs["hand_sizes"].tolist() == [18, 17, 17] and int(obs["pile_size"]) == 0
    previous = obs
    for _ in range(200):
        obs, _, terminated, _, info = env.step(0)
        assert int(obs["cards"]) == int(previous["cards"]) + 1 == info["cards"]
        assert obs["hand_sizes"].sum() + obs["pile_size"] == 52
        pile = obs["pile"]
        assert (pile[: obs["pile_size"]] >= 0).all() and (pile[obs["pile_size"] :] == -1).all()
        for seat in range(3):
            hand = obs["hands"][seat]
            assert (hand[: obs["hand_sizes"][seat]] >= 0).all() and (hand[obs["hand_sizes"][seat] :] == -1).all()
        if obs["pile_size"] > previous["pile_size"]:  # the card played is the top of the mover's hand
            assert pile[obs["pile_size"] - 1] == previous["hands"][previous["turn"]][0]
        if obs["owed"] > 0:
            assert obs["court"] >= 0 and obs["court"] != obs["turn"]
        else:
            assert obs["court"] == -1
        previous = obs
        if terminated:
            break


def test_observations_are_new_arrays_every_call():
    env = gym.make("Beggar-v0")
    first, _ = env.reset(seed=0)
    kept = {k: v.copy() for k, v in first.items()}
    second, *_ = env.step(0)
    for key in first:
        assert not np.shares_memory(first[key], second[key])
        np.testing.assert_array_equal(first[key], kept[key])


def test_a_game_over_at_reset_ends_at_the_first_step():
    env = gym.make("Beggar-v0")
    _, info = env.reset(options={"deal": "----/"})
    assert info["outcome"] == "win" and info["winner"] == 0
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 1.0 and info["cards"] == 0


def test_max_cards_is_the_agreed_limit():
    deal = "---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q"
    expected = beggar_env.play(deal, max_cards=100)
    env = gym.make("Beggar-v0", max_cards=100)
    steps = run_episode(env, lambda obs, info: 0, options={"deal": deal})
    assert len(steps) - 1 == 100
    final = steps[-1][3]
    assert (final["outcome"], final["winner"]) == ("limit", expected.winner)
    assert tuple(final["hand_sizes"]) == expected.hand_sizes


def trajectory(seed, **kwargs):
    env = gym.make("Beggar-v0", **kwargs)
    rng = np.random.default_rng(0)
    rows = []
    for episode in range(3):
        steps = run_episode(env, lambda obs, info: int(rng.integers(0, 3)), seed=seed if episode == 0 else None)
        rows.append([(int(o["cards"]), o["hand_sizes"].tolist(), r) for o, r, _, _ in steps])
    return rows


@pytest.mark.slow
def test_seeded_runs_are_identical_in_one_process_and_across_processes():
    assert trajectory(7) == trajectory(7)
    assert trajectory(7) != trajectory(8)
    code = (
        "import json, sys; sys.path.insert(0, 'tests'); from test_env import trajectory; "
        "print(json.dumps(trajectory(7)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]),
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == json.loads(json.dumps(trajectory(7)))


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
@pytest.mark.parametrize("step_unit", ["card", "trick"])
def test_copies_mid_episode_carry_on_identically(clone, step_unit):
    env = gym.make("Beggar-v0", step_unit=step_unit, n_players=3, observation="full")
    env.reset(seed=12)
    for _ in range(5):
        env.step(0)
    twin = clone(env)
    for _ in range(10_000):
        a, b = env.step(1), twin.step(1)
        for key in a[0]:
            np.testing.assert_array_equal(a[0][key], b[0][key])
        assert a[1:4] == b[1:4]
        assert a[4].keys() == b[4].keys()
        for key in a[4]:
            np.testing.assert_array_equal(a[4][key], b[4][key])
        if a[2]:
            break
    assert a[2] and "outcome" in a[4]


def test_flatten_observation_and_episode_statistics():
    env = RecordEpisodeStatistics(FlattenObservation(gym.make("Beggar-v0", observation="full")))
    obs, _ = env.reset(seed=3)
    assert obs.ndim == 1 and env.observation_space.contains(obs)
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(0)
        steps += 1
        assert env.observation_space.contains(obs)
        if terminated:
            break
    assert info["episode"]["l"] == steps == info["cards"]


@pytest.mark.filterwarnings("ignore:.*render_mode='video'")  # gymnasium's own warning before ours
@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n_players": 5}, ["n_players", "2, 3 or 4"]),
        ({"step_unit": "hand"}, ["step_unit", "'card'", "'trick'"]),
        ({"observation": "secret"}, ["observation", "'public'", "'full'"]),
        ({"forecast": "guess"}, ["forecast", "'label'", "'probs'"]),
        ({"reward": "l2"}, ["reward", "'accuracy'", "'brier'", "'log'"]),
        ({"max_cards": -1}, ["max_cards"]),
        ({"render_mode": "video"}, ["render_mode", "'ansi'", "'rgb_array'"]),
    ],
)
def test_bad_options_name_the_option_and_the_allowed_values(kwargs, words):
    with pytest.raises(ValueError) as error:
        gym.make("Beggar-v0", **kwargs)
    for word in words:
        assert word in str(error.value)


def test_bad_deals_and_actions_raise_clear_errors():
    env = gym.make("Beggar-v0")
    with pytest.raises(ValueError, match="3 players"):
        env.reset(options={"deal": "-/-/-"})
    with pytest.raises(ValueError, match="at most 52"):
        env.reset(options={"deal": "-" * 30 + "/" + "-" * 30})
    with pytest.raises(ValueError, match="unknown"):
        env.reset(options={"dael": "-/-"})
    with pytest.raises(RuntimeError, match="reset"):
        gym.make("Beggar-v0").unwrapped.step(0)
    env.reset(seed=0)
    for bad in (3, -1, 1.5, "0"):
        with pytest.raises(ValueError, match="label"):
            env.unwrapped.step(bad)
    probs_env = gym.make("Beggar-v0", forecast="probs").unwrapped
    probs_env.reset(seed=0)
    for bad, word in (
        ([0, 0, 0], "all zero"),
        ([1, -1, 1], ">= 0"),
        ([np.nan, 1, 1], "finite"),
        ([1, 1], "shape"),
        ([1.5e308, 1.5e308, 0], "add up to a finite number"),  # the sum overflows: was scored as weights of 0
    ):
        with pytest.raises(ValueError, match=word):
            probs_env.step(np.array(bad, dtype=np.float64))
    env = gym.make("Beggar-v0").unwrapped
    run_episode(env, lambda obs, info: 0, options={"deal": "-/-"})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_deals_given_as_deal_objects_and_rank_notation_play_exactly():
    deal = beggar_env.random_deal(2, seed=21)
    expected = beggar_env.play(deal)
    for given in (deal, str(deal), beggar_env.format_deal(deal, "compact")):
        steps = run_episode(gym.make("Beggar-v0"), lambda obs, info: 0, options={"deal": given})
        assert steps[-1][3]["cards"] == expected.cards and steps[-1][3]["winner"] == expected.winner


@pytest.mark.slow
def test_help_on_the_env_works_after_importing_the_package_alone():
    code = (
        "import pydoc, beggar_env; text = pydoc.render_doc(beggar_env.envs.BeggarEnv, renderer=pydoc.plaintext); "
        "print('## Observation space' in text and '## Version history' in text, "
        "all(f'observation=\"{level}\"' in text for level in ('public', 'counted', 'full')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["True", "True"], run.stderr


@pytest.mark.slow
def test_rgb_array_env_plays_without_pillow_and_only_its_picture_asks_for_it():
    """SB3's make_vec asks for render_mode='rgb_array' whatever the training needs: the env
    must be made and played without Pillow; render() alone says how to install it."""
    code = (
        "import sys; sys.modules['PIL'] = None; import gymnasium as gym, beggar_env\n"
        "env = gym.make('Beggar-v0', render_mode='rgb_array'); env.reset(seed=1)\n"
        "print(env.step(0)[4]['cards'])\n"
        "try:\n    env.render()\n"
        "except ImportError as e:\n    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "1" and "pip install 'beggar-env[render]'" in run.stdout


@pytest.mark.slow
def test_check_env_passes_on_the_default_install_without_pillow():
    """Without Pillow the env lists only the modes it can draw, so Gymnasium's checker,
    which renders every mode listed, passes; with Pillow it lists (and checks) both."""
    code = (
        "import sys; sys.modules['PIL'] = None; import gymnasium as gym, beggar_env\n"
        "from gymnasium.utils.env_checker import check_env\n"
        "check_env(gym.make('Beggar-v0')); check_env(gym.make('Beggar-v0', render_mode='ansi').unwrapped)\n"
        "print(gym.make('Beggar-v0').metadata['render_modes'], gym.make_vec('Beggar-v0', 2).metadata['render_modes'])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1].split() == ["['human',", "'ansi']", "['ansi']"]  # after human's tables
    pytest.importorskip("PIL")
    check_env(gym.make("Beggar-v0").unwrapped)  # the env itself: on a wrapper, Gymnasium warns "use env.unwrapped"
    assert gym.make("Beggar-v0").metadata["render_modes"] == ["human", "ansi", "rgb_array"]


@pytest.mark.slow
def test_asking_where_gymnasium_is_before_importing_it_does_not_lose_the_registration():
    """TorchRL calls importlib.util.find_spec("gymnasium") when it is imported; the env must
    still be registered when Gymnasium itself is imported afterwards."""
    code = (
        "import importlib.util, beggar_env\n"
        "importlib.util.find_spec('gymnasium'); importlib.util.find_spec('gymnasium')\n"
        "import gymnasium as gym; print(gym.make('Beggar-v0').unwrapped.config.n_players)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["2"], run.stderr


@pytest.mark.slow
def test_importing_the_package_does_not_import_gymnasium_and_registers_when_it_is():
    code = (
        "import sys, beggar_env; beggar_env.play('-/-'); print('gymnasium' in sys.modules); "
        "import gymnasium as gym; print(gym.make('Beggar-v0').unwrapped.config.n_players)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["False", "2"], run.stderr

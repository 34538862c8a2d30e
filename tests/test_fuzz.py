"""Every public entry point, driven with arbitrary values: each argument in turn gets a value
drawn by hypothesis (None, bools, ints of every size, floats with nan and inf, strings, bytes,
containers, numpy scalars and arrays, objects) while the others keep good ones. A call must
succeed or raise TypeError or ValueError (MemoryError for more than memory holds) whose
message names the argument: never another error, never a message that leaves the user to
guess which argument was wrong.

Counts that are valid but large are left out (they are work, not bad input; their bounds
have tests of their own), as are backend="ray" (it starts Ray) and callables given as
callbacks (their own errors are their author's).
"""

import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import beggar_env
from beggar_env import checks, core, datasets, deals
from beggar_env.forecasting import forecasters, protocol
from beggar_env.search import search

SHORT = "-A--Q/----K-J"

WORTH_TRYING = st.sampled_from(
    [
        -(2**64),
        -(2**63),
        -1,
        0,
        1,
        2,
        3,
        4,
        5,
        52,
        2**31 - 1,
        2**31,
        2**53 + 1,
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64,
        2**70,
        np.int64(3),
        np.int64(-1),
        np.uint64(2**64 - 1),
        np.int8(2),
        np.float32(1.5),
        np.float64("nan"),
        np.bool_(True),
        np.bool_(False),
        np.array([1, 2]),
        np.array([]),
        np.array("card"),
        np.zeros((2, 2)),
        object(),
        type,
        "",
        "card",
        "trick",
        "public",
        "counted",
        "full",
        "label",
        "probs",
        "log",
        "local",
        "-A/-Q",
        "False",
        "5",
        "2**64",
        "５",
        "\x00",
        b"-A/-Q",
        [],
        [1],
        ["-A/-Q"],
        [None],
        (),
        {},
        {"deal": 1},
        frozenset([1]),
        slice(1),
        1j,
    ]
)
ARBITRARY = st.one_of(
    WORTH_TRYING,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.lists(st.integers(-3, 60), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(-2, 5), max_size=2),
)
COUNTS = {  # count arguments, and the most of them the call may take before it is real work
    "deals_or_count": 1000,
    "n_games": 1000,
    "block_games": 10**6,
    "games": 1000,
    "deals": 1000,
    "top": 10**6,
    "walk_steps": 1000,
    "k": 64,
    "num_envs": 64,
    "batch_size": 10**7,
    "shard_games": 10**7,
    "samples": 16,
    "max_cards": None,
    "max_tricks": None,
    "episodes": 4,
    "bootstrap": 1000,
}
WORDS = {  # an argument may be named so in a message
    "deals_or_count": ("number of games", "deals", "simulate takes"),
    "text": ("deal",),
    "deal": ("deal",),
    "deals": ("deal",),
    "players": ("n_players", "players"),
    "n_players": ("n_players", "players"),
    "num_envs": ("num_envs",),
    "directory": ("folder",),
    "path": ("file", "folder", "path"),
    "forecaster": ("forecaster", "predict_proba"),
    "test": ("test",),
    "env": ("env", "Beggar-v0"),
}


def named(name, message):
    return any(word in message for word in (name, *WORDS.get(name, ())))


def costly(name, value):
    """Whether ``value`` is a valid count large enough to be real work."""
    if name not in COUNTS or not checks.is_integer(value) or isinstance(value, bool):
        return False
    most = COUNTS[name]
    return most is not None and most < int(value) <= checks.MAX_COUNT


def call_simulate_blocks(**kwargs):
    return next(iter(beggar_env.simulate_blocks(**kwargs)), None)


def call_env(**kwargs):
    import gymnasium as gym

    env = gym.make("Beggar-v0", **kwargs)
    env.reset(seed=1)
    env.step(0 if env.unwrapped.config.forecast == "label" else np.ones(env.unwrapped.config.n_outcomes))


def call_reset(seed, options):
    import gymnasium as gym

    gym.make("Beggar-v0").reset(seed=seed, options=options)


def call_step(action):
    import gymnasium as gym

    env = gym.make("Beggar-v0")
    env.reset(seed=1)
    env.step(action)


def call_probs_step(action):
    import gymnasium as gym

    env = gym.make("Beggar-v0", forecast="probs")
    env.reset(seed=1)
    env.step(action)


def call_vector(**kwargs):
    import gymnasium as gym

    envs = gym.make_vec("Beggar-v0", **kwargs)
    envs.reset(seed=1)
    envs.close()


def call_vector_reset(seed, options):
    import gymnasium as gym

    gym.make_vec("Beggar-v0", num_envs=2).reset(seed=seed, options=options)


def call_vector_step(actions):
    import gymnasium as gym

    envs = gym.make_vec("Beggar-v0", num_envs=2)
    envs.reset(seed=1)
    envs.step(actions)


def call_load(path, split):
    return datasets.load(path, split=split)


def call_shards(directory, **kwargs):
    datasets.shards.generate(directory, **kwargs)


def call_batches(directory, split, columns, batch_size):
    list(datasets.batches(directory, split=split, columns=columns, batch_size=batch_size))


def call_search(**kwargs):
    search(**kwargs)


def call_bayes(**kwargs):
    forecasters.BayesMC(**kwargs)


def call_prior(**kwargs):
    forecasters.SeatPrior(**kwargs)


def call_stream_key(seed, index):
    core.stream_key(seed, index)


TEST = None


def shared_test_set():
    global TEST
    if TEST is None:
        TEST = protocol.TestSet.generate(2, 3)
    return TEST


def call_test_set(**kwargs):
    protocol.TestSet.generate(**kwargs)


def call_evaluate(forecaster, test, bootstrap):
    protocol.evaluate(
        forecaster, shared_test_set() if isinstance(test, str) and test == "TEST" else test, bootstrap=bootstrap
    )


def call_calibrated(n_players, smoothing):
    forecasters.CalibratedMostCards(n_players, smoothing).fit(shared_test_set().data)


def call_uniform(n_players):
    forecasters.Uniform(n_players).predict_proba(shared_test_set().data.fields)


def call_read_info(directory):
    datasets.read_info(directory)


def call_job(**kwargs):
    datasets.shards.Job.of(**kwargs)


def call_every_step_info(env):
    import gymnasium as gym

    from beggar_env.envs import EveryStepInfo

    EveryStepInfo(gym.make("Beggar-v0") if isinstance(env, str) and env == "ENV" else env).reset(seed=1)


# (name, call, good arguments); an argument's good value "TMP" is replaced by a fresh path
ENTRY_POINTS = [
    ("play", beggar_env.play, dict(deal=SHORT, max_cards=None, max_tricks=None, detect_cycles=True)),
    ("trace", lambda **kw: list(beggar_env.trace(**kw)), dict(deal=SHORT, max_cards=None, max_tricks=None)),
    (
        "simulate",
        beggar_env.simulate,
        dict(
            deals_or_count=5,
            n_players=2,
            seed=1,
            threads=None,
            max_cards=None,
            max_tricks=None,
            detect_cycles=True,
            progress=None,
            backend="local",
            address=None,
        ),
    ),
    ("simulate_blocks", call_simulate_blocks, dict(deals_or_count=5, seed=1, block_games=2, progress=None)),
    ("parse_deal", deals.parse_deal, dict(text=SHORT)),
    ("format_deal", deals.format_deal, dict(deal=SHORT, notation="compact")),
    ("random_deal", deals.random_deal, dict(n_players=2, seed=1)),
    ("random_deals", deals.random_deals, dict(n_games=3, n_players=2, seed=1)),
    ("pack_deals", deals.pack_deals, dict(deals=[SHORT, "-/-"])),
    ("stream_key", call_stream_key, dict(seed=1, index=2)),
    (
        "datasets.generate",
        datasets.generate,
        dict(n_games=3, n_players=2, observation="public", samples="card", seed=1, threads=None, max_cards=None),
    ),
    ("datasets.load", call_load, dict(path="NPZ", split=None)),
    ("datasets.batches", call_batches, dict(directory="SHARDS", split=None, columns=None, batch_size=100)),
    (
        "shards.generate",
        call_shards,
        dict(directory="TMP", n_games=2, samples=1, seed=1, split=None, game_weights=False, shard_games=1),
    ),
    (
        "search",
        call_search,
        dict(
            players=2,
            objective="cards",
            strategy="random",
            deals=2,
            minutes=0.05,
            seed=1,
            top=10,
            threads=None,
            walk_steps=2,
            temperature=0.0,
            out=None,
            resume=False,
            progress=None,
        ),
    ),
    (
        "Beggar-v0",
        call_env,
        dict(n_players=2, step_unit="card", observation="public", forecast="label", reward="accuracy", max_cards=None),
    ),
    ("Beggar-v0 reset", call_reset, dict(seed=1, options=None)),
    ("Beggar-v0 step", call_step, dict(action=1)),
    ("Beggar-v0 step, probs", call_probs_step, dict(action=[1.0, 1.0, 1.0])),
    ("make_vec", call_vector, dict(num_envs=2, n_players=2, observation="public", copy=True)),
    ("vector reset", call_vector_reset, dict(seed=1, options=None)),
    ("vector step", call_vector_step, dict(actions=np.zeros(2, np.int64))),
    ("BayesMC", call_bayes, dict(n_players=2, k=4, alpha=0.5, seed=0, max_cards=None, threads=None)),
    ("SeatPrior", call_prior, dict(n_players=2, games=10, seed=0, max_cards=None)),
    ("TestSet.generate", call_test_set, dict(n_players=2, games=3, seed=5, max_cards=None, threads=None)),
    ("evaluate", call_evaluate, dict(forecaster=forecasters.MostCards(2), test="TEST", bootstrap=10)),
    ("CalibratedMostCards", call_calibrated, dict(n_players=2, smoothing=1.0)),
    ("Uniform", call_uniform, dict(n_players=2)),
    ("read_info", call_read_info, dict(directory="SHARDS")),
    (
        "Job.of",
        call_job,
        dict(n_games=5, n_players=2, observation="public", samples="card", seed=1, split="a=0.5,b=0.5"),
    ),
    ("EveryStepInfo", call_every_step_info, dict(env="ENV")),
]
CASES = [(name, call, good, arg) for name, call, good in ENTRY_POINTS for arg in good]
PATHS = ("NPZ", "SHARDS", "TMP")
FRESH = itertools.count()  # numbers of fresh folders


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The stored datasets the calls read, in a folder that is also the working folder:
    a relative name that a call takes for a new file or folder lands there."""
    folder = tmp_path_factory.mktemp("stored")
    npz = datasets.generate(3, seed=1).save(folder / "d.npz")
    datasets.shards.generate(folder / "shards", 3, seed=1)
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield {"NPZ": npz, "SHARDS": str(folder / "shards"), "folder": folder}
    finally:
        os.chdir(before)


@pytest.mark.parametrize("name, call, good, arg", CASES, ids=[f"{c[0]}:{c[3]}" for c in CASES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=ARBITRARY)
def test_arbitrary_values_are_refused_by_name_or_work(name, call, good, arg, value, stored):
    assume(not costly(arg, value))
    assume(not (arg == "progress" and callable(value)))  # a callback's own errors are its author's
    assume(not (arg == "test" and checks.is_integer(value) and 2 <= value <= 4))  # the published test set: work
    assume(not (arg == "backend" and isinstance(value, str) and value == "ray"))
    kwargs = dict(good)
    for key, given_value in kwargs.items():
        if isinstance(given_value, str) and given_value in PATHS:
            kwargs[key] = stored.get(given_value) or str(stored["folder"] / f"new-{next(FRESH)}")
    kwargs[arg] = value
    try:
        call(**kwargs)
    except (TypeError, ValueError, MemoryError, FileNotFoundError) as error:
        assert named(arg, str(error)), f"{name}({arg}={value!r}): {type(error).__name__}: {error}"

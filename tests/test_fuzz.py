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
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import beggar_env
from beggar_env import checks, cli, core, datasets, deals, files
from beggar_env.forecasting import forecasters, protocol
from beggar_env.forecasting.report import TEST_SEED, check_report
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


# ---------------------------------------------- files and commands given hostile input
# A report, a model file, a census or growth to continue, forecasts: each drawn hostile
# (Hypothesis mutations of a valid one, and the cases that once broke them) must end in a
# result, or in one line with the promised exit status (2: bad input, 1: a failure while
# working) and nothing damaged: the files given unchanged, no temporary or lock file left.

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "docs" / "results"
DELETE = "<delete>"  # a mutation that takes the value out
HOSTILE_JSON = st.one_of(
    st.sampled_from(
        [
            DELETE,
            None,
            True,
            0,
            1,
            -1,
            -5,
            2.0,
            1.5,
            1e308,
            -1e308,
            5e-324,
            2**64,
            "",
            "oracle",
            "seat prior",
            "a | b",
            "a\nb",
            "x" * 300,
            [],
            [0.5],
            [1, 2, 3],
            {},
            {"value": 0.5},
            float("nan"),
            float("inf"),
        ]
    ),  # fmt: skip
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.lists(st.floats(-1, 2), max_size=45),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def places(value, path=()):
    """Every place in a JSON value: the paths (keys and indices) to it and to each part."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):  # a curve's first entries stand for the rest
            found += places(item, (*path, i))
    return found


def mutate(record, mutations):
    """``record`` with each (path, value) of ``mutations`` applied (a value of DELETE takes it out)."""
    record = json.loads(json.dumps(record))
    for path, value in mutations:
        if not path:
            record = value
            continue
        parent = record
        try:
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(value, str) and value == DELETE:
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):  # an earlier mutation took the place away
            pass
    return record


def mutations_of(record, most=3):
    return st.lists(st.tuples(st.sampled_from(places(record)), HOSTILE_JSON), min_size=1, max_size=most)


def one_line(error, path):
    """A one-line error message that names the file."""
    message = str(error)
    assert "\n" not in message and str(path) in message, message


def leftovers(folder):
    return [p.name for p in Path(folder).iterdir() if p.name.endswith((files.TEMPORARY_SUFFIX, ".lock"))]


# ------------------------------------------------------------------- report files


@pytest.fixture(scope="module")
def study():
    """The published study (2 players), and a report it accepts."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from beggar_env.forecasting import study as published

    results = published.results.read_results(PUBLISHED / "results.json")
    results["players"] = {"2": results["players"]["2"]}
    report = json.loads((PUBLISHED / "sequences" / "gru_public_outcome_2p.json").read_text())
    return published, results, {**report, "forecaster": "mine"}


REPORT_CASES = [  # issue 27's: each broke the folder for good, gave a traceback, or a wrong table
    [(("forecaster",), 123)],
    [(("forecaster",), None)],
    [(("forecaster",), "x" * 100_000)],
    [(("forecaster",), "a |\n| oracle | 1.000")],
    [(("forecaster",), "oracle")],
    [(("forecaster",), "seat prior")],
    [(("slices", "all", "accuracy", "ci95"), [0.5])],
    [(("by_cards", "accuracy"), [0.5] * 3)],
    [(("n_players",), 3)],
    [(("n_players",), 2.0)],
    [(("slices",), {})],
    [(("slices", "all", "accuracy", "value"), -5)],
    [(("slices", "all", "accuracy", "value"), float("nan"))],
    [(("forecasts_per_s",), float("inf"))],
]


def check_added(published, results, report, path):
    """Add the report at ``path``: refused in one line naming it, or a row that is a whole
    report of the study's test set, named apart from the study's rows, that the tables show."""
    more = {**results, "players": {"2": {**results["players"]["2"]}}}
    more["players"]["2"]["reports"] = list(results["players"]["2"]["reports"])
    try:
        published.results.add_reports(more, [path])
    except ValueError as error:
        one_line(error, path)
        return False
    row = more["players"]["2"]["reports"][-2]
    check_report(json.loads(json.dumps(row)), "the row")
    assert row["forecaster"] not in [r["forecaster"] for r in results["players"]["2"]["reports"][:9]]
    assert f"| {row['forecaster']} |" in published.tables.tables_text(more)
    return True


@pytest.mark.parametrize("case", range(len(REPORT_CASES)))
def test_the_named_hostile_reports_are_refused_in_one_line(study, tmp_path, case):
    published, results, report = study
    path = tmp_path / "report.json"
    path.write_text(json.dumps(mutate(report, REPORT_CASES[case])))
    assert not check_added(published, results, report, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_reports_are_refused_in_one_line_or_make_a_whole_row(study, tmp_path, data):
    published, results, report = study
    path = tmp_path / "report.json"
    path.write_text(json.dumps(mutate(report, data.draw(mutations_of(report)))))
    check_added(published, results, report, path)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 20_000), noise=st.binary(max_size=8))
def test_a_truncated_or_garbled_report_is_one_line(study, tmp_path, cut, noise):
    published, results, report = study
    text = json.dumps(report).encode()
    path = tmp_path / "report.json"
    path.write_bytes(text[:cut] + noise + text[cut + len(noise) :])
    check_added(published, results, report, path)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_redraw_with_a_mutated_report_ends_well_and_damages_nothing(study, tmp_path_factory, data, capsys):
    """The command itself, drawing the pictures: exit 0 with the row in every file, or one
    line, exit status 2, and every file of the folder as it was."""
    published, results, report = study
    out = tmp_path_factory.mktemp("study")
    (out / "results.json").write_text(published.results.results_text(results))
    path = out.parent / f"{out.name}-report.json"
    path.write_text(
        json.dumps(mutate(report, data.draw(st.one_of(st.sampled_from(REPORT_CASES), mutations_of(report)))))
    )
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    status = cli.main(["baselines", "--redraw", "--out", str(out), "--forecaster", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status in (0, 2), err
    if status == 2:
        assert len(err) == 1 and str(path) in err[0], err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    else:
        name = json.loads(path.read_text())["forecaster"]
        assert f"| {name} |" in (out / "tables.md").read_text() and len(list(out.glob("*.png"))) == 5
    assert not leftovers(out)


# -------------------------------------------------------------------- model files


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    pytest.importorskip("torch")
    from beggar_env.forecasting import sequence_models

    forecaster = sequence_models.SequenceForecaster(
        2, "public", "gru", hidden=8, layers=1, context=8, games=20, epochs=1, lanes=4, window=8, val_games=5
    )
    forecaster.model = forecaster.new_model()
    path = forecaster.save(tmp_path_factory.mktemp("model") / "model.pt")
    return sequence_models, forecaster, Path(path).read_bytes()


def loads_or_says_why(sequence_models, path):
    """``load``: a forecaster whose model has the shapes its settings make, or one line
    (ValueError, TypeError) naming the file, within seconds (nothing huge allocated)."""
    started = time.perf_counter()
    try:
        loaded = sequence_models.SequenceForecaster.load(path)
    except (ValueError, TypeError) as error:
        one_line(error, path)
        loaded = None
    else:
        assert loaded.model is not None and loaded.settings().keys() == set(sequence_models.SequenceForecaster.SETTINGS)
    assert time.perf_counter() - started < 10
    return loaded


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 4000), at=st.integers(0, 4000), noise=st.binary(max_size=16))
def test_a_truncated_or_garbled_model_file_loads_or_is_one_line(model_file, tmp_path, cut, at, noise):
    sequence_models, _, data = model_file
    path = tmp_path / "model.pt"
    garbled = data[:at] + noise + data[at + len(noise) :]
    path.write_bytes(garbled[: max(cut, len(garbled) // 2)] if cut % 2 else garbled)
    loads_or_says_why(sequence_models, path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_model_file_with_hostile_settings_or_weights_loads_or_is_one_line(model_file, tmp_path, data):
    sequence_models, forecaster, _ = model_file
    torch = sequence_models.torch
    saved = {"settings": forecaster.settings(), "history": []}
    saved = mutate(saved, data.draw(mutations_of(saved, most=2)))
    if isinstance(saved, dict):
        state = dict(forecaster.model.state_dict())
        if data.draw(st.booleans()):
            name = data.draw(st.sampled_from(sorted(state)))
            shape = data.draw(st.lists(st.integers(0, 9), max_size=3))
            state[name] = torch.zeros(
                shape, dtype=data.draw(st.sampled_from([torch.float32, torch.float64, torch.int64]))
            )
        saved["state"] = state
    path = tmp_path / "model.pt"
    torch.save(saved, path)
    loaded = loads_or_says_why(sequence_models, path)
    if loaded is not None:
        assert loaded.settings() == saved["settings"]


# ---------------------------------------------------------------------- forecasts


ROWS = st.lists(
    st.one_of(st.floats(), st.integers(-3, 3), st.sampled_from([1e308, 1.5e308, -0.0, 5e-324])), min_size=3, max_size=3
)


class Forecasts:
    """A forecaster whose forecasts are uniform but where ``rows`` say otherwise."""

    observation = "public"
    name = "hostile"

    def __init__(self, rows, dtype):
        self.rows, self.dtype = rows, dtype

    def predict_proba(self, obs):
        probs = np.full((len(obs["cards"]), 3), 1 / 3)
        for at, row in self.rows:
            probs[at % len(probs)] = row
        with np.errstate(over="ignore"):  # float32 of 1e308 is inf: a hostile forecast, meant
            return probs.astype(self.dtype)


def probabilities(rows):
    """The rule, written apart: finite real numbers in [0, 1], summing to 1 within 1e-4."""
    rows = np.asarray(rows, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(
            np.isfinite(rows).all() and (rows >= 0).all() and (rows <= 1).all() and (abs(rows.sum(1) - 1) <= 1e-4).all()
        )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 10**6), ROWS), min_size=1, max_size=3),
    dtype=st.sampled_from(["float64", "float32", "complex128", "object", "U8"]),
)
def test_evaluate_scores_probabilities_and_refuses_anything_else_naming_the_row(rows, dtype):
    """[1.5e308, 1.5e308, 0] was scored (log loss 13.8: the sum overflowed), complex
    numbers and strings were taken: a report only of probabilities, else one line."""
    test = shared_test_set()
    forecaster = Forecasts(rows, dtype)
    try:
        with np.errstate(all="ignore"):
            sent = forecaster.predict_proba(test.observations("public"))
    except (OverflowError, ValueError):
        return  # numpy cannot even make those forecasts
    try:
        report = protocol.evaluate(forecaster, test, bootstrap=5)
    except ValueError as error:
        assert "predict_proba must return" in str(error) and "\n" not in str(error), error
        assert dtype in ("complex128", "U8") or not probabilities(sent.astype(np.float64))
        return
    assert dtype in ("float64", "float32", "object") and probabilities(sent.astype(np.float64))
    check_report(json.loads(json.dumps({**report, "test_seed": TEST_SEED})), "the report")


# ------------------------------------------------------------------- beggar cycles

CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"  # a deal that never ends
LOCAL_4081 = "-J----Q---A---J---QKA--Q--/K------J-------K-Q-KA-JA--"  # 4,081 cards
SMALL_DECK = "JJKK" + "-" * 7  # 1,980 deals, some of them cycles
GROWN_DECK = "JJQQKKAA" + "-" * 10  # the census below's cycles (16 cards) grow to it
NUMBERS = st.sampled_from(["0", "1", "3", "20", "-1", "+5", " 7 ", "1e3", "", "x", "5.0", "٣", "5_0", "9" * 23])


def options(good, bad, most=4):
    """Command-line options: mostly ``good`` ones (``(flag, value)``), or with ``bad`` ones too."""
    return st.one_of(
        st.lists(st.sampled_from(good), max_size=most),
        st.lists(st.sampled_from(good) | bad, min_size=1, max_size=most),
    )


def run_command(args, given, folder, capsys):
    """``beggar ARGS`` in this process: a result (0), or one line with exit status 2 or 1
    and the files ``given`` as they were; no temporary or lock file left in ``folder``."""
    before = {path: path.read_bytes() for path in given if path.is_file()}
    capsys.readouterr()
    status = cli.main(args)
    err = [
        line for line in capsys.readouterr().err.splitlines() if line.strip() and "preparing the compiled" not in line
    ]
    event(f"{args[1]}: exit status {status}")
    assert status in (0, 1, 2), (args, err)
    if status:
        assert len(err) == 1 and err[0].startswith("beggar") and "Traceback" not in err[0], (args, err)
        assert {path: path.read_bytes() for path in given if path.is_file()} == before, args
    assert not leftovers(folder), (args, leftovers(folder))
    return status


def flags(pairs):
    """Arguments from (flag, value or None) pairs, a flag without its value where None."""
    return [part for flag, value in pairs for part in ((flag,) if value is None else (flag, value))]


@pytest.fixture(scope="module")
def census_files(tmp_path_factory):
    """A finished census of every deal of SMALL_DECK, one unfinished, a census whose cycles
    grow to GROWN_DECK, and a growth's record."""
    from beggar_env.cycles import census, records

    folder = tmp_path_factory.mktemp("cycles")
    census.census(2, "every", deck=SMALL_DECK, out=folder / "whole.json")
    whole = records.read_census(folder / "whole.json")
    part = census.census(2, "every", deck=SMALL_DECK, n=1000)
    unfinished = {**part.record({k: whole[k] for k in records.CENSUS_SETTINGS}, 1000), "seed": whole["seed"]}
    (folder / "unfinished.json").write_text(json.dumps(unfinished))
    records.read_census(folder / "unfinished.json")  # a census that --resume continues
    cycles = REPO / "docs" / "cycles"
    return {
        "whole": whole,
        "unfinished": unfinished,
        "16 cards": json.loads((cycles / "every-2x-8-2p.json").read_text()),
        "grown": json.loads((cycles / "grow-16-to-18.json").read_text()),
    }


def hostile_file(path, record, data):
    """``record`` written to ``path``, often as it is, else mutated, or garbage."""
    how = data.draw(st.sampled_from(["as it is", "mutated", "mutated", "garbage"]))
    if how == "garbage":
        path.write_bytes(data.draw(st.binary(max_size=40)))
    else:
        most = 0 if how == "as it is" else 2
        path.write_text(
            json.dumps(
                mutate(
                    record, data.draw(st.lists(st.tuples(st.sampled_from(places(record)), HOSTILE_JSON), max_size=most))
                )
            )
        )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_cycles_census_with_hostile_arguments_and_files_ends_well(census_files, tmp_path_factory, data, capsys):
    from beggar_env.cycles import records

    folder = tmp_path_factory.mktemp("census")
    out = folder / "c.json"
    base = data.draw(st.sampled_from(["whole", "unfinished", "unfinished", None]))
    if base is not None:
        hostile_file(out, census_files[base], data)
    good = [
        ("--source", "every"),
        ("--out", str(out)),
        ("--out", str(out)),
        ("--resume", None),
        ("--resume", None),
        ("--players", "3"),
        ("--positions", "500"),
        ("--first", "3"),
        ("--seed", "1"),
        ("--threads", "1"),
    ]
    bad = st.sampled_from(
        [
            ("--source", "all"),
            ("--deck", "JQZ"),
            ("--deck", ""),
            ("--deck", "-" * 3),
            ("--players", "5"),
            ("--out", str(folder)),
            ("--threads", "100000"),
            ("--source", "random"),
        ]
    ) | st.tuples(st.sampled_from(["--positions", "--first", "--seed"]), NUMBERS)
    args = ["cycles", "census", "--no-progress", *flags(data.draw(options(good, bad)))]
    if "--source" not in args:
        args += ["--source", "every"]
    if "--deck" not in args:
        args += ["--deck", SMALL_DECK]
    if "random" in args and "--positions" not in args:
        args += ["--positions", "500"]
    for at, value in enumerate(args[:-1]):
        if value in ("--positions", "--first") and args[at + 1] == "9" * 23 and "random" in args:
            args[at + 1] = "500"  # a valid count of a random census is work, not bad input
    status = run_command(args, [out], folder, capsys)
    if status == 0 and str(out) in args:
        records.read_census(out)  # what it wrote (or continued) is a whole census


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_cycles_grow_with_a_hostile_census_file_ends_well(census_files, tmp_path_factory, data, capsys):
    from beggar_env.cycles import insertion

    folder = tmp_path_factory.mktemp("grow")
    given = folder / "given.json"
    hostile_file(given, census_files[data.draw(st.sampled_from(["16 cards", "grown", "whole"]))], data)
    out = folder / "g.json"
    good = [
        ("--change", "insert"),
        ("--change", "move"),
        ("--change", "delete"),
        ("--slack", "1"),
        ("--out", str(out)),
        ("--out", str(out)),
        ("--seed", "1"),
        ("--beam", "3"),
    ]
    bad = st.sampled_from(
        [
            ("--change", "swap"),
            ("--deck", "JQ"),
            ("--deck", "JQZ"),
            ("--slack", "-1"),
            ("--slack", "nan"),
            ("--players", "3"),
            ("--out", str(folder)),
            ("--census", str(folder / "none.json")),
        ]
    ) | st.tuples(st.sampled_from(["--beam", "--seed", "--levels"]), NUMBERS)
    args = ["cycles", "grow", "--no-progress", "--census", str(given), *flags(data.draw(options(good, bad)))]
    for flag, value in (("--levels", "1"), ("--beam", "5"), ("--deck", GROWN_DECK)):
        if flag not in args:
            args += [flag, value]
    if args[args.index("--levels") + 1] == "9" * 23:
        args[args.index("--levels") + 1] = "1"  # a valid number of levels is work, not bad input
    status = run_command(args, [given], folder, capsys)
    if status == 0 and str(out) in args:
        try:  # what it wrote is a growth a next one may start from
            insertion.starts_of(out)
        except ValueError as error:
            assert "no cycles to start from" in str(error)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_cycles_reconstruct_and_extend_with_hostile_arguments_end_well(tmp_path_factory, data, capsys):
    folder = tmp_path_factory.mktemp("backward")
    mode = data.draw(st.sampled_from(["reconstruct", "extend"]))
    good_deal = CASELLA if mode == "reconstruct" else LOCAL_4081
    deal = data.draw(st.sampled_from([good_deal, good_deal, good_deal, "-A/--", "-A/-Z", "", "/", "JQ"]))
    good = [("--out", str(folder / "r.json")), ("--max-nodes", "500")]
    good += [("--tsv", str(folder / "r.tsv"))] if mode == "reconstruct" else [("--offsets", "2"), ("--beam", "3")]
    bad = st.sampled_from([("--out", str(folder)), ("--out", str(folder / "r.txt"))]) | st.tuples(
        st.sampled_from(["--max-nodes", "--offsets", "--beam"]), NUMBERS
    )
    args = ["cycles", mode, "--no-progress", "--deal", deal, *flags(data.draw(options(good, bad, most=3)))]
    for flag, small in (("--max-nodes", "500"), ("--offsets", "2")):
        if flag in args and args[args.index(flag) + 1] == "9" * 23:
            args[args.index(flag) + 1] = small  # a valid budget is work, not bad input
        if flag not in args and (flag == "--max-nodes" or mode == "extend"):
            args += [flag, small]
    run_command(args, [], folder, capsys)

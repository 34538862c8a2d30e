"""The benchmark surface: one call evaluates any forecaster (or policy) into a report that
prints as a row of the published tables and saves as a submission file; no forecaster
sees more than its declared level; paired comparisons, per-outcome calibration, the
learned baselines' validation on whole held-out games, the Bayes forecaster's K."""

import json

import numpy as np
import pytest
from conftest import beggar_in_process

from beggar_env import datasets
from beggar_env.forecasting import Forecaster, evaluate, forecasters, phases, protocol
from beggar_env.forecasting.metrics import METRICS
from beggar_env.forecasting.report import EXTRA_KEYS, TEST_SEED, Report
from beggar_env.forecasting.study.run import sweep_rows

LEVELS = {
    "public": {"hand_sizes", "pile", "pile_size", "turn", "owed", "court", "alive", "cards", "tricks"},
}
LEVELS["counted"] = LEVELS["public"] | {"known", "unseen"}
LEVELS["full"] = LEVELS["public"] | {"hands"}


@pytest.fixture(scope="module")
def test_set():
    return protocol.TestSet.generate(2, 40, seed=TEST_SEED)


class MostCardsByHand:
    """A forecaster written from the docs alone: an observation level and predict_proba."""

    observation = "public"
    name = "my most cards"

    def predict_proba(self, obs):
        hands = obs["hand_sizes"]
        probs = np.zeros((len(hands), 3))
        probs[np.arange(len(hands)), hands.argmax(axis=1)] = 0.8
        probs[:, :2] += 0.1
        return probs


@pytest.mark.parametrize("level", ["public", "counted", "full"])
def test_a_forecaster_reads_exactly_the_fields_of_its_level(test_set, level):
    seen = {}

    class Spy(Forecaster):
        observation = level
        name = "spy"

        def predict_proba(self, obs):
            seen.update(obs)
            return np.full((len(obs["cards"]), 3), 1 / 3)

    evaluate(Spy(2), test_set, bootstrap=10)
    assert set(seen) == LEVELS[level]  # a public forecaster cannot see known, unseen or hands
    assert not {"known", "unseen", "hands"} & set(seen) or level != "public"


def test_one_call_evaluates_and_prints_a_row_beside_the_published_ones(test_set, tmp_path):
    report = evaluate(MostCardsByHand(), test_set, bootstrap=50)
    assert isinstance(report, Report) and report["forecaster"] == "my most cards"
    assert (report["protocol_version"], report["test_seed"], report["observation"]) == (2, TEST_SEED, "public")
    header, rule, row = str(report).splitlines()
    assert header.startswith(
        "| forecaster | given | accuracy (95% CI) | log loss (95% CI) | inference (open): accuracy (95% CI) | "
        "inference (open): log loss (95% CI) | inference (open): gap closed"
    )
    assert "| simulation (determined): accuracy (95% CI) |" in header
    figure = report["slices"]["all"]["accuracy"]
    assert row.startswith(
        f"| my most cards | - | {figure['value']:.3f} ({figure['ci95'][0]:.3f}-{figure['ci95'][1]:.3f}) |"
    )
    path = report.save(tmp_path / "mine")
    assert path == str(tmp_path / "mine.json") and Report.load(path) == json.loads(json.dumps(report))
    mine = forecasters.MostCards(2)  # the library's own rule gives the same accuracy: argmax of the hands
    assert evaluate(mine, test_set, bootstrap=50)["slices"]["all"]["accuracy"]["value"] == figure["value"]


def test_a_report_of_another_protocol_version_or_format_is_refused(test_set, tmp_path):
    report = evaluate(MostCardsByHand(), test_set, bootstrap=10)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**report, "protocol_version": 1}))
    with pytest.raises(ValueError, match="protocol version 1.*evaluate the forecaster again"):
        Report.load(old)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"forecaster": "x"}))
    with pytest.raises(ValueError, match="not a beggar-env forecast report"):
        Report.load(other)


def test_a_policy_is_evaluated_by_the_same_call(test_set):
    def most_cards(obs):
        return obs["hand_sizes"].argmax(axis=1)

    most_cards.observation = "public"
    acted = evaluate(most_cards, test_set, bootstrap=10)
    offline = evaluate(forecasters.MostCards(2), test_set, bootstrap=10)
    assert acted["forecaster"] == "most_cards"
    assert acted["slices"]["all"]["accuracy"] == offline["slices"]["all"]["accuracy"]


def test_the_published_test_set_is_the_default_one(monkeypatch):
    made = []
    monkeypatch.setattr(protocol, "PUBLISHED_GAMES", 30)
    monkeypatch.setattr(protocol, "_PUBLISHED", {})
    real = protocol.TestSet.generate
    monkeypatch.setattr(protocol.TestSet, "generate", classmethod(lambda cls, *a, **k: made.append(a) or real(*a, **k)))
    report = evaluate(MostCardsByHand(), 2, bootstrap=10)
    assert report["games"] == 30 and report["test_seed"] == TEST_SEED and made == [(2, 30)]
    evaluate(MostCardsByHand(), 2, bootstrap=10)
    assert made == [(2, 30)]  # kept for the next call


def test_paired_differences_resample_the_same_games(test_set):
    a = evaluate(forecasters.MostCards(2), test_set, bootstrap=200)
    b = evaluate(forecasters.Uniform(2), test_set, bootstrap=200)
    difference = protocol.compare(a, b, bootstrap=200)
    for name in ("all", "open", "cards 0-25"):
        for metric in METRICS:
            expected = a["slices"][name][metric]["value"] - b["slices"][name][metric]["value"]
            figure = difference[name][metric]
            assert figure["difference"] == pytest.approx(expected)
            assert figure["ci95"][0] <= figure["difference"] <= figure["ci95"][1]
    same = protocol.compare(a, a)["all"]["log_loss"]
    assert same == {"difference": 0.0, "ci95": [0.0, 0.0]}
    with pytest.raises(TypeError, match="compare takes two reports"):
        protocol.compare(dict(a), b)


def test_each_outcome_is_calibrated_and_the_oracle_perfectly(test_set):
    oracle = evaluate(forecasters.Oracle(2), test_set, bootstrap=10)["calibration"]
    assert oracle["classwise_ece"] == 0.0
    for curve in oracle["by_outcome"].values():
        assert curve["probability"] == curve["frequency"]  # at 0 and 1, each bin's forecast is what happens
    uniform = evaluate(forecasters.Uniform(2), test_set, bootstrap=10)["calibration"]
    share = np.mean(test_set.labels == 0)
    seat0 = uniform["by_outcome"]["seat 0"]
    assert seat0["probability"] == [pytest.approx(1 / 3)] and seat0["frequency"] == [pytest.approx(share)]


def test_the_bayes_floor_is_its_log_loss_where_the_table_determines_the_outcome(test_set):
    reports = [evaluate(forecasters.BayesMC(2, k=k), test_set, bootstrap=10) for k in (4, 16)]
    rows = sweep_rows(reports, test_set)
    assert [row["k"] for row in rows] == [4, 16]
    for row in rows:
        assert row["floor"] == pytest.approx(-np.log((row["k"] + 0.5) / (row["k"] + 1.5)))
        assert row["log_loss_determined"] == pytest.approx(row["floor"])  # played once, counted K times


@pytest.mark.slow
def test_early_stopping_validates_on_whole_games_never_trained_on():
    data = datasets.generate(200, observation="counted", samples=8, seed=101)
    held = forecasters.held_out_games(data)
    assert 0.05 < held.mean() < 0.15
    assert not set(data.game[held]) & set(data.game[~held])  # no game on both sides
    seen = {}

    def record(model, X, y, X_val, y_val):
        seen.update(train=len(X), val=len(X_val))
        model.fit(X, y)

    learned = forecasters.Learned(2, forecasters.logistic_regression(2).model, "public", early_stopping=record)
    learned.fit(data)
    assert seen == {"train": int((~held).sum()), "val": int(held.sum())}
    for make in (forecasters.gradient_boosting, forecasters.mlp):
        model = make(2, "counted", max_iter=5).fit(data)
        assert model.predict_proba(data.fields).shape == (len(data), 3)


@pytest.mark.slow
def test_a_submitted_forecaster_joins_the_tables(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from beggar_env.forecasting.study import results as study
    from beggar_env.forecasting.study import settings

    test = protocol.TestSet.generate(2, settings.QUICK.test_games)
    path = evaluate(MostCardsByHand(), test, bootstrap=10).save(tmp_path / "mine.json")
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "baselines", "--forecaster", path, "--players", "2", "--out", "x")
    assert run.returncode == 2 and "a report of 150 2-player test games" in run.stderr  # not the full protocol (2,000)
    results = {"protocol": vars(settings.QUICK) | {"bayes_sweep": []}, "players": {"2": {"reports": []}}}
    results["players"]["2"]["reports"] = [
        evaluate(f, test, bootstrap=10) for f in (forecasters.SeatPrior(2, games=1000), forecasters.BayesMC(2, k=4))
    ]
    study.add_reports(results, [path])
    names = [report["forecaster"] for report in results["players"]["2"]["reports"]]
    assert names == ["seat prior", "my most cards", "Bayes (Monte Carlo, K=4)"]


class Fixed:
    """A forecaster whose forecasts are ``rows`` (the first rows; the rest uniform)."""

    observation = "public"
    name = "fixed"

    def __init__(self, *rows):
        self.rows = rows

    def predict_proba(self, obs):
        n = len(obs["cards"])
        probs = np.full((n, 3), 1 / 3, dtype=object if any(isinstance(v, str) for r in self.rows for v in r) else None)
        for i, row in enumerate(self.rows):
            probs[i] = row
        return probs


@pytest.mark.parametrize(
    "rows, row",
    [
        ([[1.5e308, 1.5e308, 0]], 0),  # the sum overflows: scored as log loss 13.8, once
        ([[1 / 3] * 3, [0.5, 0.5, 0.5]], 1),  # sums to 1.5
        ([[1 / 3] * 3, [1 / 3] * 3, [0.2, 0.2, 0.2]], 2),  # sums to 0.6
        ([[1.2, -0.2, 0]], 0),  # sums to 1, yet not probabilities
        ([[float("nan"), 0.5, 0.5]], 0),
        ([[float("inf"), 0, 0]], 0),
    ],
)
def test_forecasts_that_are_not_probabilities_are_refused_naming_the_row(test_set, rows, row):
    with pytest.raises(ValueError, match=rf"predict_proba must return probabilities in \[0, 1\].* row {row} is"):
        evaluate(Fixed(*rows), test_set, bootstrap=5)


@pytest.mark.parametrize("forecasts", [np.full((1, 3), 1 / 3 + 0j), np.array([["0.5", "0.5", "0"]])])
def test_forecasts_that_are_not_real_numbers_are_refused(test_set, forecasts):
    class Odd(Fixed):
        def predict_proba(self, obs):
            return np.resize(forecasts, (len(obs["cards"]), 3))

    with pytest.raises(ValueError, match="predict_proba must return real numbers"):
        evaluate(Odd(), test_set, bootstrap=5)


def test_probabilities_within_rounding_of_1_are_scored(test_set):
    near = np.float32([0.2, 0.3, 0.5])  # float32 rows: sums off 1 by ~1e-8
    report = evaluate(Fixed(near, near * (1 + 5e-5)), test_set, bootstrap=5)
    assert 0 <= report["slices"]["all"]["log_loss"]["value"] < 13


@pytest.mark.parametrize(
    "name, error",
    [(123, TypeError), (b"mine", TypeError), ("", ValueError), ("a | b", ValueError), ("x" * 81, ValueError)],
)
def test_a_name_is_a_cell_of_the_tables(test_set, name, error):
    with pytest.raises(error, match="name"):
        evaluate(forecasters.MostCards(2), test_set, bootstrap=5, name=name)
    with pytest.raises(error, match="name"):
        evaluate(forecasters.MostCards(2).act, test_set, bootstrap=5, name=name)


def test_a_policys_probability_weights_are_normalised_but_an_overflow_is_refused(test_set):
    report = evaluate(lambda obs: np.tile([2.0, 1.0, 1.0], (len(obs["cards"]), 1)), test_set, forecast="probs")
    assert report["slices"]["all"]["log_loss"]["value"] > 0
    with pytest.raises(ValueError, match="a policy must return finite weights >= 0 with a finite sum"):
        evaluate(lambda obs: np.tile([1.5e308, 1.5e308, 0], (len(obs["cards"]), 1)), test_set, forecast="probs")


def test_a_report_file_is_checked_whole_in_one_line(test_set, tmp_path):
    path = evaluate(MostCardsByHand(), test_set, bootstrap=10).save(tmp_path / "mine.json")
    assert Report.load(path)["forecaster"] == "my most cards"
    saved = json.loads(open(path).read())
    for mutate, words in (
        (lambda r: r.update(n_players=2.0), "$.n_players: 2.0 is not of type 'integer'"),
        (lambda r: r["slices"]["all"]["accuracy"].update(value=-5), "$.slices.all.accuracy.value"),
        (lambda r: r["by_cards"].update(brier=[0.1]), "$.by_cards.brier"),
        (lambda r: r.update(forecaster="a\nb"), "$.forecaster"),
        (lambda r: r["reliability"]["size"].append(1), "$.reliability"),
    ):
        broken = json.loads(json.dumps(saved))
        mutate(broken)
        (tmp_path / "broken.json").write_text(json.dumps(broken))
        with pytest.raises(ValueError) as caught:
            Report.load(tmp_path / "broken.json")
        message = str(caught.value)
        assert "broken.json" in message and words in message and "\n" not in message, message


# ------------------------------------------------- the test set as each forecaster finds it


class Zeroes:
    """A counted forecaster that writes into its observation (it zeroes the unseen counts)."""

    observation = "counted"
    name = "zeroes"

    def predict_proba(self, obs):
        obs["unseen"][:] = 0
        return np.full((len(obs["cards"]), 3), 1 / 3)


def test_a_forecaster_cannot_change_the_test_set_for_the_next_one():
    """A forecaster that zeroed obs['unseen'] once made MostCards(2) score 0.499 instead of
    0.655 and emptied the open slice, silently: the positions are read-only."""
    test = protocol.TestSet.generate(2, 30, seed=TEST_SEED)
    fresh = protocol.TestSet.generate(2, 30, seed=TEST_SEED)  # an independent copy to compare with
    open_before = test.slices["open"].sum()
    with pytest.raises(ValueError, match="read-only"):
        evaluate(Zeroes(), test, bootstrap=10, reference=False)
    obs = test.observations("counted")
    with pytest.raises(ValueError):
        obs["unseen"].flags.writeable = True  # a view of read-only arrays stays read-only
    with pytest.raises(ValueError, match="read-only"):
        test.data.winner[:] = 0  # the labels' source
    assert open_before > 0 and test.slices["open"].sum() == open_before
    assert all(np.array_equal(obs[name], fresh.observations("counted")[name]) for name in obs)
    mine = evaluate(forecasters.MostCards(2), test, bootstrap=10, reference=False)
    theirs = evaluate(forecasters.MostCards(2), fresh, bootstrap=10, reference=False)
    assert mine["slices"] == theirs["slices"]
    writable = {name: np.array(value) for name, value in obs.items()}  # a copy is the forecaster's own
    writable["unseen"][:] = 0
    assert test.slices["open"].sum() == open_before


# ---------------------------------------------------------- unclear errors, made clear


def test_a_forecaster_whose_n_players_is_not_a_count_is_a_type_error(test_set):
    class Stringly(MostCardsByHand):
        n_players = "2"  # once: "the forecaster is for 2 players, the test set 2"

    with pytest.raises(TypeError, match=r"n_players must be an int \(2, 3 or 4\), not str '2'"):
        evaluate(Stringly(), test_set, bootstrap=10)
    with pytest.raises(TypeError, match="n_players must be an int"):
        evaluate(Stringly(), 2, bootstrap=10)  # before minutes spent on the published test set

    class Three(MostCardsByHand):
        n_players = 3

    with pytest.raises(ValueError, match="n_players is 3, but the test set is of 2-player games"):
        evaluate(Three(), test_set, bootstrap=10)


def test_a_recurrent_forecaster_without_reset_state_is_a_type_error_naming_it(test_set):
    class Forgetful(MostCardsByHand):
        recurrent = True  # once an AttributeError from deep inside

        def act(self, obs, forecast="label"):
            return self.predict_proba(obs)

    with pytest.raises(TypeError, match=r"recurrent=True.*needs reset_state\(\).*Forgetful lacks"):
        evaluate(Forgetful(), test_set, bootstrap=10)


def test_a_report_carries_a_few_short_keys_of_its_own_and_no_more(test_set, tmp_path):
    saved = json.loads(json.dumps(evaluate(MostCardsByHand(), test_set, bootstrap=10, reference=False)))
    path = tmp_path / "mine.json"
    for extra, words in (
        ({"x" * 1000: 1}, "$: a key of the report's own must be a short lowercase name"),  # once in results.json
        ({"Training": {}}, "not 'Training'"),
        ({"training": "x" * 5000}, "$.training: a key of the report's own must hold at most 4,096 characters"),
        ({f"extra_{i}": i for i in range(EXTRA_KEYS + 1)}, "at most 8 keys of the report's own"),
    ):
        path.write_text(json.dumps({**saved, **extra}))
        with pytest.raises(ValueError) as caught:
            Report.load(path)
        assert words in str(caught.value) and "\n" not in str(caught.value) and len(str(caught.value)) < 400
    kept = {"training": {"steps": 5_000_000}, "command": "python train.py"}  # as the published PPO rows carry
    path.write_text(json.dumps({**saved, **kept}))
    assert Report.load(path)["training"] == kept["training"]


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_report_path_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    """A link to /dev/zero was read until memory ran out, a FIFO blocked for ever (the
    bounded read is files.read_json's; Report.load reads through it)."""
    import os
    import threading

    path = tmp_path / "report.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    caught = []

    def load():
        try:
            Report.load(path)
        except Exception as error:  # noqa: BLE001 (the kind is checked below)
            caught.append(error)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive() and kind == "fifo":  # let the blocked reader go before failing
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert not reader.is_alive(), f"Report.load of a {kind} did not return within 10 s"
    assert len(caught) == 1 and isinstance(caught[0], ValueError), caught
    assert str(path) in str(caught[0]) and "\n" not in str(caught[0])


# ------------------------------------------------------------------- progress


@pytest.fixture
def small_reference(monkeypatch):
    """The published test set and the reference at a test's size."""
    monkeypatch.setattr(protocol, "PUBLISHED_GAMES", 25)
    monkeypatch.setattr(protocol, "_PUBLISHED", {})
    monkeypatch.setattr(protocol, "REFERENCE_PRIOR_GAMES", 2000)
    monkeypatch.setattr(protocol, "REFERENCE_K", 4)


PHASES = [
    "test set: 25 games of 2 players",
    "forecasts: my most cards",
    "reference: seat prior, its games",
    "reference: seat prior",
    "reference: Bayes (Monte Carlo, K=4)",
    "report: intervals and calibration",
]


def test_a_progress_callback_sees_every_phase_from_start_to_end(small_reference):
    calls = []
    evaluate(MostCardsByHand(), 2, bootstrap=10, progress=lambda *call: calls.append(call))
    phases = list(dict.fromkeys(phase for phase, _, _ in calls))
    assert phases == PHASES
    for phase in phases:
        seen = [(done, total) for name, done, total in calls if name == phase]
        assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] > 0, (phase, seen)


def test_progress_false_prints_nothing_and_a_bar_shows_every_phase(small_reference, capfd, monkeypatch):
    evaluate(MostCardsByHand(), 2, bootstrap=10, progress=False)  # compiled first: nothing of numba's below
    protocol._PUBLISHED.clear()
    capfd.readouterr()
    evaluate(MostCardsByHand(), 2, bootstrap=10, progress=False)
    evaluate(MostCardsByHand(), 2, bootstrap=10)  # None: a bar only where stderr is a terminal, not here
    assert capfd.readouterr() == ("", "")
    protocol._PUBLISHED.clear()
    monkeypatch.setattr(phases.Phases, "DELAY", 0)  # every phase shown, however short
    monkeypatch.setattr(phases, "_stderr_is_a_terminal", lambda: True)
    evaluate(MostCardsByHand(), 2, bootstrap=10)
    out, err = capfd.readouterr()
    assert out == "" and all(phase in err for phase in PHASES), err
    with pytest.raises(TypeError, match="progress must be None"):
        evaluate(MostCardsByHand(), 2, bootstrap=10, progress="yes")


# ------------------------------------------------------- what a forecaster was given


def test_a_report_says_what_its_forecaster_was_given(test_set, tmp_path):
    """``given`` comes from the forecaster's attribute (in the vocabulary's order); a
    forecaster without one, as a user's own, is given nothing; it shows in the row."""

    class Engined(MostCardsByHand):
        name = "engined"
        given = ["teacher", "rules engine"]

    mine = evaluate(MostCardsByHand(), test_set, bootstrap=10, reference=False)
    assert mine["given"] == [] and mine.row()[1] == "-"
    engined = evaluate(Engined(), test_set, bootstrap=10, reference=False)
    assert engined["given"] == ["rules engine", "teacher"] and engined.row()[1] == "rules engine, teacher"
    assert Report.load(engined.save(tmp_path / "engined.json"))["given"] == ["rules engine", "teacher"]
    oracle = evaluate(forecasters.Oracle(2), test_set, bootstrap=10, reference=False)
    assert oracle["given"] == ["rules engine"]

    class Taught(forecasters.MostCards):
        given = ("teacher",)

    acted = evaluate(Taught(2).act, test_set, bootstrap=10, reference=False)  # a policy: its object's given
    assert acted["given"] == ["teacher"]


@pytest.mark.parametrize(
    "given, error, words",
    [
        ("rules engine", TypeError, "must be a list"),
        (["a rules engine"], ValueError, "must hold distinct words of"),
        (["teacher", "teacher"], ValueError, "must hold distinct words of"),
    ],
)
def test_a_given_outside_the_vocabulary_is_refused_before_any_work(given, error, words):
    class Odd(MostCardsByHand):
        pass

    Odd.given = given
    with pytest.raises(error, match=f"the forecaster's given attribute {words}"):
        evaluate(Odd(), 2, bootstrap=10)  # before minutes spent on the published test set


def test_a_forecaster_is_given_progress_for_its_capability_not_its_class(test_set):
    """``predict`` hands ``progress`` to a forecaster that declares ``reports_progress``,
    whatever its class, and to no other."""
    calls = []

    class Slow(MostCardsByHand):
        reports_progress = True

        def predict_proba(self, obs, progress=None):
            progress(1, len(obs["cards"]))
            return super().predict_proba(obs)

    protocol.predict(Slow(), test_set, lambda done, total: calls.append((done, total)))
    n = len(test_set.labels)
    assert calls == [(1, n), (n, n)]
    protocol.predict(MostCardsByHand(), test_set, lambda done, total: calls.append((done, total)))
    assert calls[2:] == [(n, n)]  # no progress= for one without the capability

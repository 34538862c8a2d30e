"""The benchmark surface: one call evaluates any forecaster (or policy) into a report that
prints as a row of the published tables and saves as a submission file; no forecaster
sees more than its declared level; paired comparisons, per-outcome calibration, the
learned baselines' validation on whole held-out games, the Bayes forecaster's K."""

import json

import numpy as np
import pytest
from conftest import beggar_in_process

from beggar_env import datasets
from beggar_env.forecasting import Forecaster, evaluate, forecasters, protocol
from beggar_env.forecasting.baselines import _sweep_rows

LEVELS = {
    "public": {"hand_sizes", "pile", "pile_size", "turn", "owed", "court", "alive", "cards", "tricks"},
}
LEVELS["counted"] = LEVELS["public"] | {"known", "unseen"}
LEVELS["full"] = LEVELS["public"] | {"hands"}


@pytest.fixture(scope="module")
def test_set():
    return protocol.TestSet.generate(2, 40, seed=protocol.TEST_SEED)


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
    assert isinstance(report, protocol.Report) and report["forecaster"] == "my most cards"
    assert (report["protocol_version"], report["test_seed"], report["observation"]) == (2, protocol.TEST_SEED, "public")
    header, rule, row = str(report).splitlines()
    assert header.startswith(
        "| forecaster | accuracy (95% CI) | log loss (95% CI) | inference (open): accuracy (95% CI) | "
        "inference (open): log loss (95% CI) | inference (open): gap closed"
    )
    assert "| simulation (determined): accuracy (95% CI) |" in header
    figure = report["slices"]["all"]["accuracy"]
    assert row.startswith(
        f"| my most cards | {figure['value']:.3f} ({figure['ci95'][0]:.3f}-{figure['ci95'][1]:.3f}) |"
    )
    path = report.save(tmp_path / "mine")
    assert path == str(tmp_path / "mine.json") and protocol.Report.load(path) == json.loads(json.dumps(report))
    mine = forecasters.MostCards(2)  # the library's own rule gives the same accuracy: argmax of the hands
    assert evaluate(mine, test_set, bootstrap=50)["slices"]["all"]["accuracy"]["value"] == figure["value"]


def test_a_report_of_another_protocol_version_or_format_is_refused(test_set, tmp_path):
    report = evaluate(MostCardsByHand(), test_set, bootstrap=10)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**report, "protocol_version": 1}))
    with pytest.raises(ValueError, match="protocol version 1.*evaluate the forecaster again"):
        protocol.Report.load(old)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"forecaster": "x"}))
    with pytest.raises(ValueError, match="not a beggar-env forecast report"):
        protocol.Report.load(other)


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
    assert report["games"] == 30 and report["test_seed"] == protocol.TEST_SEED and made == [(2, 30)]
    evaluate(MostCardsByHand(), 2, bootstrap=10)
    assert made == [(2, 30)]  # kept for the next call


def test_paired_differences_resample_the_same_games(test_set):
    a = evaluate(forecasters.MostCards(2), test_set, bootstrap=200)
    b = evaluate(forecasters.Uniform(2), test_set, bootstrap=200)
    difference = protocol.compare(a, b, bootstrap=200)
    for name in ("all", "open", "cards 0-25"):
        for metric in protocol.METRICS:
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
    rows = _sweep_rows(reports, test_set)
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


def test_a_submitted_forecaster_joins_the_tables(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from beggar_env.forecasting import baselines

    test = protocol.TestSet.generate(2, baselines.QUICK.test_games)
    path = evaluate(MostCardsByHand(), test, bootstrap=10).save(tmp_path / "mine.json")
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "baselines", "--forecaster", path, "--players", "2", "--out", "x")
    assert run.returncode == 2 and "a report of 150 2-player test games" in run.stderr  # not the full protocol (2,000)
    results = {"protocol": vars(baselines.QUICK) | {"bayes_sweep": []}, "players": {"2": {"reports": []}}}
    results["players"]["2"]["reports"] = [
        evaluate(f, test, bootstrap=10) for f in (forecasters.SeatPrior(2, games=1000), forecasters.BayesMC(2, k=4))
    ]
    baselines.add_reports(results, [path])
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
    assert protocol.Report.load(path)["forecaster"] == "my most cards"
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
            protocol.Report.load(tmp_path / "broken.json")
        message = str(caught.value)
        assert "broken.json" in message and words in message and "\n" not in message, message

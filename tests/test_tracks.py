"""The protocol's two tracks and its horizon: the determined positions are the complement of
the open ones and score as a direct computation says; the horizon bins agree with the test
games replayed one by one; the gap closed per track on known inputs; the report schema
takes the new figures and refuses them malformed; a report of the earlier layout still
loads, its determined figures derived exactly and marked without intervals."""

import copy
import json

import numpy as np
import pytest

import beggar_env as bg
from beggar_env.deals import random_deals
from beggar_env.forecasting import evaluate, forecasters, metrics, protocol
from beggar_env.forecasting.report import (
    FORMAT_VERSION,
    REPORT_KEYS_V1,
    TEST_SEED,
    Report,
    _gap_cell,
    check_report,
)
from beggar_env.forecasting.report_rules import REPORT_RULES


@pytest.fixture(scope="module")
def test_set():
    return protocol.TestSet.generate(2, 40, seed=TEST_SEED)


@pytest.fixture(scope="module")
def report(test_set):
    return evaluate(forecasters.MostCards(2), test_set, bootstrap=200)


def direct_scores(probs, labels):
    """Accuracy and log loss of each position, computed here without the protocol."""
    accuracy = np.array([float(np.argmax(p) == y) for p, y in zip(probs, labels)])
    log_loss = np.array([-np.log(max(p[y] / sum(p), 1e-6)) for p, y in zip(probs, labels)])
    return {"accuracy": accuracy, "log_loss": log_loss}


def test_determined_is_the_complement_of_open_and_scores_as_computed_directly(test_set, report):
    masks = test_set.slices
    unseen = test_set.data.fields["unseen"]
    classes_left = np.array([sum(1 for count in row if count > 0) for row in unseen])
    assert (masks["determined"] == (classes_left <= 1)).all() and (masks["determined"] == ~masks["open"]).all()
    assert 0 < masks["determined"].sum() < len(masks["determined"])  # both tracks are there in 40 games
    probs = forecasters.MostCards(2).predict_proba(test_set.observations("public"))
    scores = direct_scores(probs, test_set.labels)
    for name in ("open", "determined"):
        figures = report["slices"][name]
        assert figures["positions"] == masks[name].sum()
        assert figures["games"] == len(np.unique(test_set.data.game[masks[name]]))
        for metric, values in scores.items():
            assert figures[metric]["value"] == pytest.approx(values[masks[name]].mean(), abs=1e-12)
            low, high = figures[metric]["ci95"]
            assert low <= figures[metric]["value"] <= high
    every = report["slices"]["all"]
    for metric in ("accuracy", "log_loss", "brier"):  # the two tracks make up all positions
        parts = sum(
            report["slices"][s][metric]["value"] * report["slices"][s]["positions"] for s in ("open", "determined")
        )
        assert parts == pytest.approx(every[metric]["value"] * every["positions"], rel=1e-12)


def test_the_determined_positions_are_determined(test_set):
    """Every rollout of the Bayes forecaster gives the true outcome where the track says the
    counted view fixes it (so Bayes scores 1 there, at the floor of its smoothing)."""
    bayes = forecasters.BayesMC(2, k=8, seed=3)
    determined = test_set.slices["determined"]
    obs = {name: field[determined] for name, field in test_set.observations("counted").items()}
    counts = bayes.counts(obs)
    assert (counts.max(axis=1) == 8).all() and (counts.argmax(axis=1) == test_set.labels[determined]).all()


def replayed_horizon(test_set):
    """Each test position's tricks and cards still to be played, from the test deals
    replayed with ``beggar_env.trace``: the cards played when each pile is taken."""
    tricks, cards = [], []
    for deal in random_deals(test_set.games, test_set.n_players, test_set.seed):
        ends = [trick["cards"] for trick in bg.trace(deal)]
        length = bg.play(deal).cards
        for played in range(length):  # a position: `played` cards so far, the next one to play
            taken = sum(1 for end in ends if end <= played)
            tricks.append(len(ends) - taken)
            cards.append(length - played)
    return {"tricks": np.array(tricks), "cards": np.array(cards)}


def test_the_horizon_is_what_replaying_the_test_games_gives(test_set, report):
    replayed = replayed_horizon(test_set)
    assert (test_set.horizon["tricks"] == replayed["tricks"]).all()
    assert (test_set.horizon["cards"] == replayed["cards"]).all()
    assert replayed["tricks"].min() == 1 and replayed["cards"].min() == 1  # the last trick, the last card
    probs = forecasters.MostCards(2).predict_proba(test_set.observations("public"))
    scores = direct_scores(probs, test_set.labels)
    edges = {"tricks": [1, 2, 4, 8, 16, 32, 64, np.inf], "cards": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, np.inf]}
    for unit, left in replayed.items():
        curve = report["by_horizon"][unit]
        assert curve["bins"] == metrics.horizon_names(unit) and len(curve["bins"]) == len(edges[unit]) - 1
        for i, (low, high) in enumerate(zip(edges[unit], edges[unit][1:])):
            inside = (left >= low) & (left < high)
            assert curve["positions"][i] == inside.sum()
            for metric, values in scores.items():
                if inside.any():
                    assert curve[metric][i] == pytest.approx(values[inside].mean(), abs=1e-12)
                else:
                    assert curve[metric][i] is None
    assert sum(curve["positions"]) == len(left)


def test_a_trick_the_limit_cuts_short_counts_as_one():
    limited = protocol.TestSet.generate(2, 30, max_cards=60)
    tricks, cards = limited.horizon["tricks"], limited.horizon["cards"]
    assert tricks.min() == 1 and cards.min() == 1 and limited.data.game_cards.max() == 60
    stopped = limited.data.fields["tricks"] == limited.data.game_tricks  # in a trick the limit cut short
    assert stopped.any() and (tricks[stopped] == 1).all()


def test_the_gap_closed_per_track_on_known_inputs(test_set):
    """A forecast that is Bayes's on the open positions and the prior's on the determined
    ones closes the whole gap on one track and none on the other; a mixture closes what the
    means say, inside its interval."""
    labels = test_set.labels
    n = len(labels)
    prior = np.tile([0.5, 0.4, 0.1], (n, 1))
    best = np.full((n, 3), 0.05)
    best[np.arange(n), labels] = 0.9
    open_ = test_set.slices["open"]
    half = np.where(open_[:, None], best, prior)
    reports = {
        name: protocol.report(name, probs, test_set, 1.0, bootstrap=300)
        for name, probs in (("prior", prior), ("best", best), ("half", half))
    }
    gaps = protocol.gap_intervals(reports["half"], reports["prior"], reports["best"], bootstrap=300)
    for metric in ("accuracy", "log_loss", "brier"):
        assert gaps["open"][metric] == {"value": 1.0, "ci95": [1.0, 1.0]}
        assert gaps["determined"][metric] == {"value": 0.0, "ci95": [0.0, 0.0]}
        means = {name: r.scores[metric].mean() for name, r in reports.items()}
        expected = (means["half"] - means["prior"]) / (means["best"] - means["prior"])
        low, high = gaps["all"][metric]["ci95"]
        assert gaps["all"][metric]["value"] == pytest.approx(expected) and low <= expected <= high
    figures = protocol.reference_figures(reports["half"], reports["prior"], reports["best"], bootstrap=300)
    assert figures["versus_bayes"]["open"]["log_loss"]["difference"] == pytest.approx(0, abs=1e-15)
    determined = ~open_
    difference = np.log(0.9) - np.log(np.where(labels == 0, 0.5, np.where(labels == 1, 0.4, 0.1)))
    assert figures["versus_bayes"]["determined"]["log_loss"]["difference"] == pytest.approx(
        difference[determined].mean()
    )
    values = metrics.reference_values(reports["half"], reports["prior"], reports["best"])  # from the figures alone
    for name in metrics.GAP_SLICES:
        for metric in ("accuracy", "log_loss"):
            assert values["gap_closed"][name][metric]["value"] == pytest.approx(
                figures["gap_closed"][name][metric]["value"]
            )
            assert values["gap_closed"][name][metric]["ci95"] is None
    same = protocol.gap_intervals(reports["prior"], reports["prior"], reports["prior"], bootstrap=50)
    assert same["all"]["accuracy"] == {"value": None, "ci95": None}  # no gap to close: undefined, not NaN


def test_evaluate_gives_each_track_its_gap_closed_against_the_published_reference(test_set, report):
    prior, bayes = test_set.reference()
    assert (prior["forecaster"], bayes["forecaster"]) == ("seat prior", "Bayes (Monte Carlo, K=256)")
    assert report["reference"]["prior"] == "seat prior" and report["reference"]["bayes"] == bayes["forecaster"]
    assert bayes["slices"]["determined"]["accuracy"]["value"] == 1.0
    for name in metrics.GAP_SLICES:
        gap = report["reference"]["gap_closed"][name]["log_loss"]
        assert gap["value"] == pytest.approx(metrics.gap_closed(report, prior, bayes, name)["log_loss"])
        assert gap["ci95"][0] <= gap["value"] <= gap["ci95"][1]
    row = report.row()
    assert row[6] == _gap_cell(report["reference"]["gap_closed"]["open"]) and " to " in row[6]
    assert evaluate(forecasters.MostCards(2), test_set, bootstrap=20, reference=False)["reference"] is None
    assert test_set.reference() is test_set.reference()  # evaluated once


def saved(report, tmp_path, name="mine.json"):
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


BROKEN = {  # what the schema and check_report refuse in the new parts of a report
    "determined positions that do not add up": (
        lambda r: r["slices"]["determined"].update(positions=r["slices"]["determined"]["positions"] - 1),
        "slices['determined']",
    ),
    "no determined slice": (lambda r: r["slices"].pop("determined"), "determined"),
    "a derived determined slice in a new report": (lambda r: r["slices"]["determined"].update(derived=True), "slices"),
    "no horizon": (lambda r: r.pop("by_horizon"), "by_horizon"),
    "a horizon of other bins": (lambda r: r["by_horizon"]["tricks"].update(bins=["0", "1"]), "by_horizon"),
    "horizon bins that do not add up": (lambda r: r["by_horizon"]["cards"]["positions"].__setitem__(0, 10**6), "cards"),
    "a figure missing from a bin": (lambda r: r["by_horizon"]["tricks"]["accuracy"].__setitem__(0, None), "tricks"),
    "a horizon accuracy above 1": (lambda r: r["by_horizon"]["tricks"]["accuracy"].__setitem__(1, 1.5), "by_horizon"),
    "a gap closed's interval upside down": (
        lambda r: r["reference"]["gap_closed"]["open"]["log_loss"].update(ci95=[0.9, 0.1]),
        "upside down",
    ),
    "a track missing from the gap closed": (lambda r: r["reference"]["gap_closed"].pop("determined"), "reference"),
    "a difference to Bayes as text": (
        lambda r: r["reference"]["versus_bayes"]["open"]["accuracy"].update(difference="0.1"),
        "reference",
    ),
    "another layout": (lambda r: r.update(format_version=4), "format_version"),
    "no given": (lambda r: r.pop("given"), "given"),
    "a given outside the vocabulary": (lambda r: r.update(given=["the engine"]), "$.given"),
    "a given twice": (lambda r: r.update(given=["teacher", "teacher"]), "$.given"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_the_schema_refuses_malformed_tracks_and_horizons_in_one_line(report, tmp_path, case):
    good = json.loads(json.dumps(report))
    assert Report.load(saved(good, tmp_path, "good.json"))["format_version"] == FORMAT_VERSION
    mutate, words = BROKEN[case]
    broken = copy.deepcopy(good)
    mutate(broken)
    with pytest.raises(ValueError) as caught:
        Report.load(saved(broken, tmp_path))
    message = str(caught.value)
    assert "mine.json" in message and words in message and "\n" not in message, message


def layout_1(report):
    """``report`` as the earlier layout wrote it: no determined slice, horizon, reference nor format_version."""
    old = {key: value for key, value in json.loads(json.dumps(report)).items() if key in REPORT_KEYS_V1}
    del old["slices"]["determined"]
    return old


def test_a_report_of_the_earlier_layout_loads_with_its_determined_figures_derived(report, tmp_path):
    loaded = Report.load(saved(layout_1(report), tmp_path))
    assert loaded["format_version"] == 1 and loaded["by_horizon"] is None and loaded["reference"] is None
    assert loaded["given"] == []  # "most cards": a published row's name, given nothing
    derived, measured = loaded["slices"]["determined"], report["slices"]["determined"]
    assert derived["derived"] and derived["positions"] == measured["positions"] and derived["games"] is None
    for metric in ("accuracy", "log_loss", "brier"):  # exact, to rounding
        assert derived[metric]["value"] == pytest.approx(measured[metric]["value"], rel=1e-12, abs=1e-15)
        assert derived[metric]["ci95"] is None and derived[metric]["game_weighted"] is None
    assert derived["ece"] is None
    row = loaded.row()
    assert row[7].endswith("(n/a)") and row[9] == "-"  # no interval, no gap closed: it had no reference
    again = Report.load(loaded.save(tmp_path / "again.json"))  # saved upgraded, read again the same
    assert again == json.loads(json.dumps(loaded))
    forged = json.loads(json.dumps(loaded))
    forged["slices"]["determined"]["accuracy"]["value"] = 0.99  # a derived figure that all and open do not give
    with pytest.raises(ValueError, match=r"determined'\]\.accuracy\.value: .* a derived figure must be derived"):
        Report.load(saved(forged, tmp_path, "forged.json"))
    broken = layout_1(report)
    broken["slices"]["open"]["accuracy"]["value"] = "high"
    with pytest.raises(ValueError, match=r"mine\.json: \$\.slices\.open\.accuracy\.value"):
        Report.load(saved(broken, tmp_path))


def test_a_study_written_before_the_tracks_is_refused_in_one_line(tmp_path):
    pytest.importorskip("sklearn", reason="the baselines need scikit-learn: pip install '.[baselines]'")
    from beggar_env.forecasting.study.results import check_results

    results = {"protocol": {}, "players": {"2": {"reports": [{"forecaster": "seat prior", "gap_closed": {}}]}}}
    with pytest.raises(ValueError, match="written before the two tracks .* run the study again") as caught:
        check_results(results, "results.json")
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------- each rule of check_report


def _open_accuracy(r):
    return r["slices"]["open"]["accuracy"]


def _rename_outcome(r):
    by_outcome = r["calibration"]["by_outcome"]
    by_outcome["seat 9"] = by_outcome.pop("seat 0")


BROKEN_FOR_RULE = {  # a report broken in exactly the way one rule refuses (the schema takes each)
    "check_finite_numbers": lambda r: r["reference"]["gap_closed"]["open"]["accuracy"].update(value=float("inf")),
    "check_whole_numbers": lambda r: r.update(protocol_version=2.0),  # JSON Schema's const takes 2.0 for 2
    "check_slice_counts": lambda r: r["slices"]["all"].update(games=r["games"] - 1),
    "check_intervals": lambda r: _open_accuracy(r).update(ci95=_open_accuracy(r)["ci95"][::-1]),
    "check_tracks_add_up": lambda r: r["slices"]["determined"].update(
        positions=r["slices"]["determined"]["positions"] - 1
    ),
    "check_derived_figures": None,  # a layout-1 report's derived figure: its own test above
    "check_outcomes": _rename_outcome,
    "check_curves": lambda r: r["reliability"]["size"].__setitem__(0, r["reliability"]["size"][0] + 1),
    "check_horizon": lambda r: r["by_horizon"]["cards"]["positions"].__setitem__(0, 10**6),
    "check_reference": lambda r: r["reference"]["gap_closed"]["open"]["log_loss"].update(value=None, ci95=[0.1, 0.2]),
}


def test_every_rule_has_a_broken_report():
    assert list(BROKEN_FOR_RULE) == [rule.__name__ for rule in REPORT_RULES]


@pytest.mark.parametrize("rule", [name for name, mutate in BROKEN_FOR_RULE.items() if mutate is not None])
def test_each_rule_refuses_a_report_broken_its_way_naming_the_rule(report, tmp_path, rule):
    broken = json.loads(json.dumps(report))
    assert check_report(copy.deepcopy(broken), "good.json")  # every rule takes the report as evaluate made it
    BROKEN_FOR_RULE[rule](broken)
    with pytest.raises(ValueError) as caught:
        if rule == "check_finite_numbers":  # no JSON file holds infinity: a row checked in memory
            check_report(broken, "mine.json")
        else:
            Report.load(saved(broken, tmp_path))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'mine.json'}: " if rule != "check_finite_numbers" else "mine.json: ")
    assert message.endswith(f"({rule})") and "\n" not in message, message


# ------------------------------------------------------- an older report's given


def layout_2(report, name):
    """``report`` as layout 2 wrote it (before ``given``), named ``name``."""
    old = {key: value for key, value in json.loads(json.dumps(report)).items() if key != "given"}
    return {**old, "format_version": 2, "forecaster": name}


@pytest.mark.parametrize(
    "name, given",
    [
        ("learned step, rolled out (K=256)", ["hand-built machine"]),
        ("Bayes (Monte Carlo, K=1024)", ["rules engine"]),
        ("oracle", ["rules engine"]),
        ("GRU (public stream, distilled from Bayes)", ["teacher"]),
        ("transformer (counted stream)", []),
        ("PPO (counted)", []),
    ],
)
def test_an_older_report_is_given_what_its_published_name_says(report, tmp_path, name, given):
    loaded = Report.load(saved(layout_2(report, name), tmp_path))
    assert loaded["given"] == given and loaded["format_version"] == 2  # its layout kept: where it came from
    again = Report.load(loaded.save(tmp_path / "again.json"))  # saved upgraded, read again the same
    assert again == json.loads(json.dumps(loaded))


def test_an_older_report_of_another_name_is_refused_in_one_line(report, tmp_path):
    for old in (layout_2(report, "my own forecaster"), {**layout_1(report), "forecaster": "my own forecaster"}):
        with pytest.raises(ValueError) as caught:
            Report.load(saved(old, tmp_path))
        message = str(caught.value)
        assert message.startswith(f"{tmp_path / 'mine.json'}: $.given: ") and "\n" not in message, message
        assert "'my own forecaster' is not one of the published rows: evaluate the forecaster again" in message

"""`beggar baselines`: the study's pipeline on a tiny protocol, its outputs, and its errors."""

import copy
import json
import subprocess
import sys
import warnings
from dataclasses import replace

import numpy as np
import pytest
from conftest import beggar, beggar_in_process, without_notice

pytest.importorskip("sklearn", reason="the baselines need scikit-learn: pip install '.[baselines]'")
pytest.importorskip("matplotlib", reason="the baselines' pictures need matplotlib: pip install '.[baselines]'")

import beggar_env  # noqa: E402
from beggar_env.forecasting import forecasters as fc  # noqa: E402
from beggar_env.forecasting import protocol as ev  # noqa: E402
from beggar_env.forecasting import report as rp  # noqa: E402
from beggar_env.forecasting.metrics import GAP_SLICES  # noqa: E402
from beggar_env.forecasting.study import figures, folder, settings, tables  # noqa: E402
from beggar_env.forecasting.study.results import add_reports, read_results, results_text  # noqa: E402
from beggar_env.forecasting.study.run import run as run_study  # noqa: E402
from beggar_env.forecasting.study.run import run_players, sequence_row  # noqa: E402

TINY = replace(
    settings.QUICK,
    test_games=30,
    train_games=300,
    prior_games=20_000,
    stats_games=20_000,
    bayes_k=16,
    bootstrap=50,
    trees=10,
    epochs=5,
)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("baselines")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = run_study((2, 3), TINY, seed=1)
    written = folder.write(results, out, "beggar baselines (tiny, from the tests)")
    return results, out, written, caught


@pytest.mark.slow
def test_the_capped_training_budgets_warn_of_nothing(study):
    """The protocol caps the MLP's epochs and the trees on purpose: scikit-learn's warning
    that the optimiser stopped at its cap is no news to the user of `beggar baselines`."""
    caught = study[3]
    assert not [w for w in caught if "converge" in str(w.message) or "Maximum iterations" in str(w.message)]


@pytest.mark.slow
def test_every_forecaster_is_evaluated_for_every_player_count(study):
    results = study[0]
    assert set(results["players"]) == {"2", "3"}
    for n, block in results["players"].items():
        names = [r["forecaster"] for r in block["reports"]]
        assert names[0] == "uniform" and names[-1] == "oracle" and any(name.startswith("Bayes") for name in names)
        by_name = {r["forecaster"]: r for r in block["reports"]}
        assert by_name["oracle"]["slices"]["all"]["accuracy"]["value"] == 1.0
        bayes = next(r for r in block["reports"] if r["forecaster"].startswith("Bayes"))
        for name in GAP_SLICES:  # the gap closed on all positions and on each track, with intervals
            prior_gap = by_name["seat prior"]["reference"]["gap_closed"][name]["log_loss"]
            bayes_gap = bayes["reference"]["gap_closed"][name]["log_loss"]
            assert prior_gap["value"] == 0 and bayes_gap["value"] == 1 and bayes_gap["ci95"] == [1, 1]
            assert bayes["reference"]["versus_bayes"][name]["accuracy"] == {"difference": 0, "ci95": [0, 0]}
        assert bayes["slices"]["determined"]["accuracy"]["value"] == 1  # the table fixes the outcome there
        assert bayes["slices"]["all"]["log_loss"]["value"] < by_name["seat prior"]["slices"]["all"]["log_loss"]["value"]
        test_games = beggar_env.simulate(TINY.test_games, n_players=int(n), seed=rp.TEST_SEED)
        assert block["positions"] == test_games.cards.sum()  # every card step of every test game


@pytest.mark.slow
def test_game_statistics_match_simulate(study):
    results = study[0]
    stats = results["players"]["3"]["game_statistics"]
    runs = beggar_env.simulate(TINY.stats_games, n_players=3, seed=1)
    assert stats["games"] == TINY.stats_games and stats["cards"]["mean"] == pytest.approx(runs.cards.mean())
    assert stats["cards"]["p50"] == np.percentile(runs.cards, 50)
    assert [s["wins"] for s in stats["seats"]] == [int((runs.winner == seat).sum()) for seat in range(3)]
    assert sum(stats["histogram_cards"]) == TINY.stats_games


@pytest.mark.slow
def test_outputs_are_written(study):
    results, out, written = study[:3]
    saved = json.loads((out / "results.json").read_text())
    assert saved["command"].startswith("beggar baselines") and saved["protocol"]["test_games"] == 30
    assert saved["players"]["2"]["reports"][0]["slices"]["all"]["positions"] == results["players"]["2"]["positions"]
    tables = (out / "tables.md").read_text()
    assert "## 2 players" in tables and "| oracle | 1.000 (1.000-1.000)" in tables and "## Game statistics" in tables
    bayes = next(r for r in results["players"]["2"]["reports"] if r["forecaster"].startswith("Bayes"))
    by_slice = [bayes["slices"][name]["accuracy"] for name in bayes["slices"]]
    cells = [f"{s['value']:.3f} ({s['ci95'][0]:.3f}-{s['ci95'][1]:.3f})" for s in by_slice]  # every slice's interval
    game_weighted = f"{bayes['slices']['all']['accuracy']['game_weighted']:.3f}"
    assert f"| {bayes['forecaster']} | {' | '.join(cells)} | {game_weighted} |" in tables
    assert (
        "| progress Q1 | progress Q2 | progress Q3 | progress Q4 | open | determined | all, game-weighted |" in tables
    )
    assert "The two tracks, each row against the seat prior and Bayes" in tables and "by horizon" in tables
    assert "| most cards - seat prior | " in tables and "The Bayes forecaster by its rollouts per position" in tables
    assert "| " + " | ".join(rp.Report(bayes).row()) + " |" in tables  # the row print(report) gives
    assert {p.name for p in written} == {
        *(
            f"{kind}_{n}p.png"
            for kind in ("by_cards", "reliability", "reliability_by_outcome", "horizon")
            for n in (2, 3)
        ),
        "game_lengths.png",
    }
    assert all(10_000 < p.stat().st_size < 120_000 for p in written)  # drawn, and small (a palette, optimised)


@pytest.mark.slow
def test_policy_reports_are_added_as_rows(study, tmp_path):
    results = study[0]
    test = ev.TestSet.generate(2, TINY.test_games)
    policy = ev.evaluate_policy(
        beggar_env.forecasting.forecasters.MostCards(2).act, test, name="a policy", observation="public", bootstrap=20
    )
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy))
    more = copy.deepcopy(results)
    add_reports(more, [path])
    names = [r["forecaster"] for r in more["players"]["2"]["reports"]]
    assert names[-2:] == ["a policy", "oracle"] and len(names) == len(results["players"]["2"]["reports"]) + 1
    added = more["players"]["2"]["reports"][-2]
    assert added["slices"]["all"]["accuracy"] == policy["slices"]["all"]["accuracy"]
    # made against another reference (K=256, not the tiny study's K=16): its gap closed is the study's, no interval
    assert added["reference"]["bayes"] == "Bayes (Monte Carlo, K=16)" and policy["reference"]["bayes"].endswith("256)")
    assert added["reference"]["gap_closed"]["open"]["log_loss"]["ci95"] is None
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**policy, "games": 7}))
    with pytest.raises(ValueError, match="test set"):
        add_reports(copy.deepcopy(results), [wrong])
    old = tmp_path / "old.json"  # a report from before the curves were part of it
    old.write_text(json.dumps({k: v for k, v in policy.items() if k not in ("by_cards", "reliability")}))
    with pytest.raises(ValueError, match="lacks reliability, by_cards"):
        add_reports(copy.deepcopy(results), [old])


def test_a_policy_report_is_checked_before_the_study_runs(tmp_path, monkeypatch, capsys):
    report = {key: 0 for key in rp.REPORT_KEYS_V1 if key != "by_cards"}
    report.update(format=rp.REPORT_FORMAT, protocol_version=rp.PROTOCOL_VERSION, test_seed=rp.TEST_SEED)
    (tmp_path / "old.json").write_text(json.dumps(report))
    (tmp_path / "other.json").write_text(json.dumps({**report, "by_cards": {}, "n_players": 2, "games": 7}))
    (tmp_path / "bad.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    for name, word in (("old.json", "lacks by_cards"), ("other.json", "7 2-player test games"), ("bad.json", "JSON")):
        run = beggar_in_process(capsys, "baselines", "--policy", str(tmp_path / name), "--out", "x")
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and word in run.stderr, run.stderr
        assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "args, word",
    [
        (["--out", __file__], "is a file"),
        (["--policy", "/no/such.json"], "--forecaster"),
        (["--forecaster", "/no/such.json"], "--forecaster"),
        (["--players", "5"], "--players"),
    ],
)
def test_bad_input_gives_one_line(capsys, args, word):
    run = beggar_in_process(capsys, "baselines", *args)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and word in run.stderr


def test_the_study_names_its_rows_without_making_them(monkeypatch):
    """`study_names` (which a submitted report's name is checked against) lists the rows
    that `forecasters.baselines` makes, in its order, without constructing the ten."""
    made = [forecaster.name for forecaster in fc.baselines(3, bayes_k=settings.FULL.bayes_k)]
    monkeypatch.setattr(fc, "baselines", None)
    assert settings.study_names(settings.FULL) == made


@pytest.mark.slow
@pytest.mark.parametrize("missing, named", [("sklearn", "scikit-learn"), ("matplotlib", "matplotlib")])
def test_a_missing_extra_is_one_line_before_any_work(tmp_path, missing, named):
    """Without its extra the study used to fail with a traceback: after a second without
    scikit-learn, after the whole study without matplotlib (while drawing)."""
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from beggar_env.cli import main\n"
        f"sys.exit(main(['baselines', '--quick', '--out', {str(tmp_path / 'out')!r}]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and len(without_notice(run.stderr).strip().splitlines()) == 1, run.stderr
    assert named in run.stderr and "pip install 'beggar-env[baselines]'" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_redraw_draws_the_pictures_again_from_results_json(study):
    _, out, written = study[:3]
    for path in written:
        path.unlink()
    run = beggar("baselines", "--redraw", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert (
        all(path.is_file() for path in written) and f"tables.md and {len(written)} pictures written again" in run.stdout
    )
    missing = beggar("baselines", "--redraw", "--out", str(out / "none"))
    assert (
        missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1 and "results.json" in missing.stderr
    )


@pytest.mark.slow
def test_redraw_adds_a_submitted_row_without_running_the_study_again(study, tmp_path):
    import shutil

    out = tmp_path / "study"
    shutil.copytree(study[1], out)
    before = json.loads((out / "results.json").read_text())

    class Mine(beggar_env.forecasting.forecasters.MostCards):
        name = "mine"

    report = ev.evaluate(Mine(2), ev.TestSet.generate(2, TINY.test_games), bootstrap=20)
    path = report.save(tmp_path / "mine.json")
    command = ["baselines", "--redraw", "--out", str(out), "--forecaster", path]
    for _ in range(2):  # again: the row is replaced, not repeated
        run = beggar(*command)
        assert run.returncode == 0, run.stderr
    after = json.loads((out / "results.json").read_text())
    names = [r["forecaster"] for r in after["players"]["2"]["reports"]]
    assert names == [r["forecaster"] for r in before["players"]["2"]["reports"]][:-1] + ["mine", "oracle"]
    mine = after["players"]["2"]["reports"][-2]
    assert mine["slices"]["all"]["accuracy"]["value"] == report["slices"]["all"]["accuracy"]["value"]
    assert mine["reference"]["prior"] == "seat prior" and after["players"]["3"] == before["players"]["3"]
    tables = (out / "tables.md").read_text()
    assert "| mine |" in tables and tables.count("Rows added by") == 1
    other = ev.evaluate(Mine(2), ev.TestSet.generate(2, TINY.test_games + 1), bootstrap=20).save(tmp_path / "o.json")
    wrong = beggar(*command[:-1], other)
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1 and "test set" in wrong.stderr


@pytest.mark.slow
def test_sequences_add_the_gru_row_as_trained_alone(torch_threads):
    """``--sequences`` (``run(..., sequences=True)``) adds the GRU on the public stream to a
    player count's rows, the same figures as that forecaster trained and evaluated alone
    (its training is seeded), and the command line says what it needs without torch."""
    pytest.importorskip("torch", reason="the sequence rows need torch: pip install '.[rl]'")
    block = run_players(2, TINY, seed=1, sequences=True)
    row = next(r for r in block["reports"] if r["forecaster"] == "GRU (public stream)")
    alone = sequence_row(2, TINY, seed=1)
    assert alone.seed == 2 and alone.games == 200 and alone.hidden == 16  # the quick settings, seed + 1
    report = ev.evaluate(alone.fit(), ev.TestSet.generate(2, TINY.test_games), bootstrap=TINY.bootstrap)
    for metric in ("accuracy", "log_loss"):
        assert row["slices"]["all"][metric]["value"] == pytest.approx(report["slices"]["all"][metric]["value"])
    published = sequence_row(3, settings.FULL, seed=0)
    assert (published.seed, published.games, published.epochs, published.hidden) == (1, 20_000, 3, 128)


@pytest.mark.slow
def test_sequences_without_torch_is_one_line(tmp_path):
    code = (  # torch unfindable (a None in sys.modules would break scipy's check for torch arrays)
        "import sys, importlib.abc\n"
        "class NoTorch(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError('No module named torch')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from beggar_env.cli import main\n"
        f"sys.exit(main(['baselines', '--quick', '--sequences', '--out', {str(tmp_path / 'out')!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "needs torch" in result.stderr and "beggar-env[rl]" in result.stderr
    assert len(without_notice(result.stderr).strip().splitlines()) == 1


# ------------------------------------------------------------ nothing lost, no wrong answer


def snapshot(folder):
    """Every file in ``folder`` (hidden ones too: temporary files, locks) and its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def mine(study, tmp_path_factory):
    """A valid report of the tiny study's 2-player test set, as a dict."""

    class Mine(beggar_env.forecasting.forecasters.MostCards):
        name = "mine"

    return json.loads(json.dumps(ev.evaluate(Mine(2), ev.TestSet.generate(2, TINY.test_games), bootstrap=20)))


def copy_of(study, tmp_path):
    import shutil

    out = tmp_path / "study"
    shutil.copytree(study[1], out)
    return out


def redraw_in_process(capsys, out, *reports):
    capsys.readouterr()
    args = ["baselines", "--redraw", "--out", str(out), *(a for r in reports for a in ("--forecaster", str(r)))]
    status = beggar_env.cli.main(args)
    return status, capsys.readouterr().err.strip().splitlines()


def mutated(report, path, value):
    """``report`` with the value at ``path`` (keys and indices) replaced (deleted: ``DELETE``)."""
    report = copy.deepcopy(report)
    parent = report
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return report


DELETE = object()
HOSTILE_REPORTS = {  # issue 27's attacks: each once broke the folder for good, gave a traceback or a wrong table
    "a number for a name": (("forecaster",), 123),
    "null for a name": (("forecaster",), None),
    "a 100,000-character name": (("forecaster",), "x" * 100_000),
    "a name that injects a row": (("forecaster",), "mine |\n| oracle | 1.000"),
    "a name with a control character": (("forecaster",), "mine\x1b[2J"),
    "a name with spaces around it": (("forecaster",), " mine "),
    "the oracle's name": (("forecaster",), "oracle"),
    "the seat prior's name": (("forecaster",), "seat prior"),
    "the Bayes row's name": (("forecaster",), "Bayes (Monte Carlo, K=16)"),
    "an interval of one end": (("slices", "all", "accuracy", "ci95"), [0.5]),
    "an interval upside down": (("slices", "all", "accuracy", "ci95"), [0.9, 0.1]),
    "by_cards of the wrong length": (("by_cards", "accuracy"), [0.5] * 7),
    "relabelled 3 players": (("n_players",), 3),
    "2.0 players": (("n_players",), 2.0),
    "no slices": (("slices",), {}),
    "a slice missing": (("slices", "open"), DELETE),
    "an accuracy of -5": (("slices", "all", "accuracy", "value"), -5),
    "an accuracy above 1": (("slices", "open", "accuracy", "value"), 1.5),
    "a negative log loss": (("slices", "all", "log_loss", "value"), -0.1),
    "a log loss above the floor's": (("slices", "all", "log_loss", "value"), 14.0),
    "a probability above 1": (("reliability", "confidence", 0), 2.0),
    "bins that do not add up": (("reliability", "size", 0), 1),
    "another player count's outcomes": (("calibration", "by_outcome", "seat 2"), {"probability": [0.5]}),
    "no forecasts per second": (("forecasts_per_s",), 0),
    "other positions": (("positions",), 12),
}
TEXTS = {  # files that are not reports at all
    "NaN": lambda text: text.replace('"value": 0.', '"value": NaN, "was": 0.', 1),
    "1e400": lambda text: text.replace('"forecasts_per_s": ', '"forecasts_per_s": 1e400, "was": ', 1),
    "not JSON": lambda text: text[: len(text) // 2],
    "a list": lambda text: f"[{text}]",
    "empty": lambda text: "",
    "two megabytes": lambda text: text[:-1] + ', "padding": "' + " " * 2_000_000 + '"}',
}


@pytest.mark.slow
@pytest.mark.parametrize("case", [*HOSTILE_REPORTS, *TEXTS])
def test_a_hostile_report_is_one_line_and_leaves_the_folder_as_it_was(study, mine, tmp_path, capsys, case):
    """Each of these once wrote results.json before drawing failed (every later --redraw
    failed too), gave a traceback, or put a wrong row in the tables: now one line, exit
    status 2, every file of the folder as it was, and a good report is added after it."""
    out = copy_of(study, tmp_path)
    before = snapshot(out)
    path = tmp_path / "hostile.json"
    if case in HOSTILE_REPORTS:
        path.write_text(json.dumps(mutated(mine, *HOSTILE_REPORTS[case])))
    else:
        path.write_text(TEXTS[case](json.dumps(mine)))
    status, err = redraw_in_process(capsys, out, path)
    assert status == 2 and len(err) == 1 and str(path) in err[0], err
    assert snapshot(out) == before


@pytest.mark.slow
def test_every_report_is_checked_before_any_row_is_added(study, mine, tmp_path, capsys):
    out = copy_of(study, tmp_path)
    before = snapshot(out)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(mine))
    bad.write_text(json.dumps(mutated(mine, ("forecaster",), "oracle")))
    status, err = redraw_in_process(capsys, out, good, bad)
    assert status == 2 and len(err) == 1 and "bad.json" in err[0] and snapshot(out) == before


@pytest.mark.slow
def test_a_drawing_that_fails_writes_nothing(study, mine, tmp_path, monkeypatch):
    """results.json used to be replaced before the pictures were drawn: a drawing that
    failed left results that no later --redraw could draw."""
    out = copy_of(study, tmp_path)
    before = snapshot(out)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(mine))

    def broken(fig, rect=None):
        raise RuntimeError("matplotlib failed")

    monkeypatch.setattr(figures, "png", broken)
    with pytest.raises(RuntimeError, match="matplotlib failed"):
        folder.redraw(out, [path], "a command")
    assert snapshot(out) == before


@pytest.mark.slow
def test_a_write_that_fails_puts_back_the_files_it_replaced(study, mine, tmp_path, monkeypatch):
    out = copy_of(study, tmp_path)
    before = snapshot(out)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(mine))
    real, calls = folder.files.write_bytes, []

    def full_disk(target, data):
        calls.append(target)
        if len(calls) == 4:  # the fourth file: the disk is full (the files put back after it are written)
            raise OSError(28, f"writing {target} failed: No space left on device")
        real(target, data)

    monkeypatch.setattr(folder.files, "write_bytes", full_disk)
    with pytest.raises(OSError, match="No space left"):
        folder.redraw(out, [path], "a command")
    assert len(calls) == 4 + 3 and snapshot(out) == before


@pytest.mark.slow
def test_a_redraw_while_another_run_writes_the_folder_is_refused_and_loses_nothing(study, mine, tmp_path, capsys):
    from test_failures import Holder

    out = copy_of(study, tmp_path)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(mine))
    before = snapshot(out)
    with Holder(out / "results.json"):
        status, err = redraw_in_process(capsys, out, path)
        assert status == 2 and len(err) == 1 and "being written by another run" in err[0], err
        assert snapshot(out) == {**before, ".results.json.lock": (out / ".results.json.lock").read_bytes()}
    assert snapshot(out) == before


@pytest.mark.slow
def test_two_redraws_at_once_never_lose_a_row(study, mine, tmp_path):
    """Two `--redraw --forecaster` on one folder at once lost a row 4 times in 10, both
    exiting 0: now the second is refused (exit 2, one line) while the first holds
    results.json, and every row of a run that exited 0 is in it."""
    for trial in range(2):
        out = copy_of(study, tmp_path / str(trial))
        reports = []
        for name in ("mine A", "mine B"):
            reports.append(tmp_path / f"{trial}-{name}.json")
            reports[-1].write_text(json.dumps({**mine, "forecaster": name}))
        runs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "beggar_env.cli",
                    "baselines",
                    "--redraw",
                    "--out",
                    str(out),
                    "--forecaster",
                    str(report),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for report in reports
        ]
        ends = [(run.wait(timeout=300), run.stderr.read()) for run in runs]
        names = [r["forecaster"] for r in json.loads((out / "results.json").read_text())["players"]["2"]["reports"]]
        for (status, err), name in zip(ends, ("mine A", "mine B")):
            assert status in (0, 2) and "Traceback" not in err, err
            if status == 0:
                assert name in names and f"| {name} |" in (out / "tables.md").read_text()
            else:
                assert len(err.strip().splitlines()) == 1 and "another run" in err, err
        assert any(status == 0 for status, _ in ends)
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no lock nor temporary file left


@pytest.mark.slow
def test_a_hostile_results_json_is_one_line_and_left_as_it_is(study, tmp_path, capsys):
    out = copy_of(study, tmp_path)
    results = json.loads((out / "results.json").read_text())
    for broken in (
        "{",
        json.dumps({**results, "players": {"2": {**results["players"]["2"], "positions": "many"}}}),
        json.dumps({**results, "protocol": {**results["protocol"], "test_games": -1}}),
        json.dumps({**results, "players": {"5": results["players"]["2"]}}),
    ):
        (out / "results.json").write_text(broken)
        before = snapshot(out)
        status, err = redraw_in_process(capsys, out)
        assert status == 2 and len(err) == 1 and "results.json" in err[0], err
        assert snapshot(out) == before


def test_results_json_is_compact_and_the_published_one_gives_the_published_tables():
    """results.json is written without indentation (the published one: 611 KB so, where
    indented it would be about 1.05 MB), and the published results.json, read and checked as
    --redraw reads it, gives the published tables.md byte for byte."""
    published = beggar_env.__file__.replace("beggar_env/__init__.py", "docs/results/")
    text = open(published + "results.json").read()
    results = read_results(published + "results.json")
    assert text == results_text(results) and text.count("\n") == 1
    assert len(text) < 0.7 * len(json.dumps(results, indent=1))
    assert tables.tables_text(results) == open(published + "tables.md").read()
    more = copy.deepcopy(results)  # the published reports are rows it accepts
    for name in ("ppo_2p.json", "sequences/gru_public_outcome_3p.json"):
        add_reports(more, [published + name])


PUBLISHED = beggar_env.__file__.replace("beggar_env/__init__.py", "docs/results/")
STEP_ROW, STEP_ROW_BEFORE = "Bayes over a hand-built machine, learned rule table", "learned step, rolled out"


def test_a_study_written_before_rows_said_what_they_were_given_upgrades_to_the_published_one(tmp_path):
    """The published results.json was written before rows said what they were given, its
    step row named "learned step, rolled out (K=256)": read as --redraw reads it, each row is
    given what its name says and the step row takes its name now, which gives the published
    results.json byte for byte; a row of a name the upgrade does not know is refused."""
    text = open(PUBLISHED + "results.json").read()
    older = json.loads(text)
    for block in older["players"].values():
        for row in block["reports"]:
            del row["given"]
            row["forecaster"] = row["forecaster"].replace(STEP_ROW, STEP_ROW_BEFORE)
    path = tmp_path / "results.json"
    path.write_text(results_text(older))
    upgraded = read_results(path)
    assert results_text(upgraded) == text
    given = {row["forecaster"]: row["given"] for row in upgraded["players"]["2"]["reports"]}
    assert given[f"{STEP_ROW} (K=256)"] == ["hand-built machine"] and given["oracle"] == ["rules engine"]
    assert given["Bayes (Monte Carlo, K=256)"] == ["rules engine"] and given["GRU (counted stream)"] == []
    assert given["GRU (public stream, distilled from Bayes)"] == ["teacher"]
    older["players"]["3"]["reports"][4]["forecaster"] = "a row of its own"
    path.write_text(results_text(older))
    with pytest.raises(ValueError, match=r"reports\[4\]: \$.given: .*'a row of its own'") as caught:
        read_results(path)
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_redraw_writes_a_study_of_the_earlier_layout_again_as_the_published_one(tmp_path):
    """`beggar baselines --redraw` of the published study as it was before rows said what they
    were given writes its results.json as this layout holds it (the published one, byte for
    byte) and the published tables.md: the command that made them."""
    older = json.loads(open(PUBLISHED + "results.json").read())
    for block in older["players"].values():
        for row in block["reports"]:
            del row["given"]
            row["forecaster"] = row["forecaster"].replace(STEP_ROW, STEP_ROW_BEFORE)
    (tmp_path / "results.json").write_text(results_text(older))
    folder.redraw(tmp_path)
    assert (tmp_path / "results.json").read_text() == open(PUBLISHED + "results.json").read()
    assert (tmp_path / "tables.md").read_text() == open(PUBLISHED + "tables.md").read()


def test_the_best_learned_row_is_given_neither_the_engine_nor_a_machine():
    """The headline of a player count's tables names the best row by the log-loss gap it
    closes among those given neither the rules engine nor a hand-built machine: not the step
    row (Bayes over a hand-built machine, 1.00), which would be were it a learned model."""
    block = read_results(PUBLISHED + "results.json")["players"]["2"]
    assert tables.best_learned(block).startswith(
        "The best learned row (given neither the rules engine nor a hand-built machine): GRU over each hand (full), "
        "log loss 0.543, closing 0.26 (0.23 to 0.30) of the log-loss gap"
    )
    step = next(row for row in block["reports"] if row["given"] == ["hand-built machine"])
    step["given"] = []
    assert f": {step['forecaster']}, log loss 0.123, closing 1.00" in tables.best_learned(block)


def test_an_added_row_goes_among_the_learned_rows_or_the_references(tmp_path):
    """A learned model's row is added after the rows added before it, before the references
    added at the end (the step row); a reference's (given the engine or a machine) just
    before the oracle."""
    results = read_results(PUBLISHED + "results.json")
    results["players"] = {"2": results["players"]["2"]}
    before = [row["forecaster"] for row in results["players"]["2"]["reports"]]
    report = json.loads(open(PUBLISHED + "sequences/gru_public_outcome_2p.json").read())
    paths = []
    for name, given in (("mine", []), ("mine, distilled", ["teacher"]), ("mine, on the engine", ["rules engine"])):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({**report, "forecaster": name, "given": given}))
    add_reports(results, paths)
    names = [row["forecaster"] for row in results["players"]["2"]["reports"]]
    assert names == [*before[:-2], "mine", "mine, distilled", before[-2], "mine, on the engine", "oracle"]
    assert before[-2] == f"{STEP_ROW} (K=256)"


def test_every_row_of_a_picture_is_drawn_in_a_style_of_its_own():
    """The pictures drew one row per colour of a list of 20 and silently left out the rest
    (the 2-player tables have 23 rows): each row now has its own colour and line style, and a
    picture of more rows than it can tell apart is refused, not cut."""
    published = beggar_env.__file__.replace("beggar_env/__init__.py", "docs/results/results.json")
    rows = max(len(block["reports"]) for block in read_results(published)["players"].values())
    assert rows > 20
    styles = figures.palette(rows)
    assert len(styles) == rows and len(set(styles)) == rows
    assert len(set(figures.palette(60))) == 60
    with pytest.raises(ValueError, match="61 rows"):
        figures.palette(61)

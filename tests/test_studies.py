"""The studies (the scripts that write published rows) run as their commands run them, in
their quick mode, and write what the tables and the study can take."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

STUDIES = Path(__file__).resolve().parents[1] / "studies"
pytestmark = pytest.mark.slow  # each trains in a child process


def run(name, *args):
    result = subprocess.run([sys.executable, str(STUDIES / name), *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_sequence_study_writes_a_report_the_tables_can_take(tmp_path):
    pytest.importorskip("torch", reason="the sequence forecasters need torch (pip install 'beggar-env[rl]')")
    from beggar_env.forecasting import Report

    out = run("sequence_forecasters.py", "--quick", "--rows", "gru:public:outcome", "--out", str(tmp_path))
    assert re.search(r"2 players, GRU \(public stream\): accuracy 0\.\d+, log loss \d\.\d+", out)
    report = Report.load(tmp_path / "gru_public_outcome_2p.json")
    assert report["observation"] == "public" and report["train_games"] == 200 and len(report["history"]) == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "| 2 | GRU (public stream) |" in summary and "| 200 |" in summary


def test_forward_study_writes_reports_the_tables_can_take_and_its_curve_ends_at_the_engine(tmp_path):
    pytest.importorskip("torch", reason="the forward forecasters need torch (pip install 'beggar-env[rl]')")
    import json

    from beggar_env.forecasting import Report

    out = run("forward_forecasters.py", "--quick", "--rows", "step", "curve", "hands", "--out", str(tmp_path))
    row = r"2 players, Bayes over a hand-built machine, learned rule table \(K=16\)"
    assert re.search(row + r": all 0\.\d+ / \d\.\d+; open", out)
    step = Report.load(tmp_path / "step_rolled_2p.json")
    assert step["step"]["held_out_transitions"] == 100_000 and 0 <= step["step"]["exact_match"] <= 1
    assert step["slices"]["open"]["positions"] + step["slices"]["determined"]["positions"] == step["positions"]
    hands = Report.load(tmp_path / "hands_2p.json")
    assert hands["observation"] == "full" and len(hands["history"]) == 1
    curve = json.loads((tmp_path / "curve_2p.json").read_text())
    budgets = [point["budget"] for point in curve["points"]]
    assert budgets[0] == 0 and budgets[-1] is None
    # played to the end by the engine, a determined position's outcome is known: right at every one
    assert curve["points"][-1]["determined"]["accuracy"] == 1.0
    assert (tmp_path / "curve_2p.png").stat().st_size > 1000


def test_stream_study_length_split_trains_on_the_short_games_alone_as_the_engine_played_them(tmp_path):
    pytest.importorskip("torch", reason="the stream model needs torch (pip install 'beggar-env[rl]')")
    import importlib.util
    import json

    import numpy as np

    from beggar_env.forecasting import face_streams

    spec = importlib.util.spec_from_file_location("stream_forecaster", STUDIES / "stream_forecaster.py")
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    args = study.parse_args(["train", "--out", str(tmp_path), "--max-cards", "60"])
    kind, face, size, offsets = study.epoch_games(args, 4)
    assert len(offsets) - 1 == study.GAMES_PER_EPOCH
    everything = face_streams.random_games(4 * study.GAMES_PER_EPOCH, 2, seed=args.seed * 1_000_003 + 4)
    k, f, z, o = everything
    plays = np.add.reduceat((k < 2).astype(np.int64), o[:-1])
    ended = (k[o[1:] - 1] >= 4) & (k[o[1:] - 1] < 6)
    short = np.flatnonzero((plays <= 60) & ended)  # the engine's games of at most 60 cards, in order
    for j, g in enumerate(short[:50]):
        for mine, theirs in ((kind, k), (face, f), (size, z)):
            assert (mine[offsets[j] : offsets[j + 1]] == theirs[o[g] : o[g + 1]]).all()
    assert np.add.reduceat((kind < 2).astype(np.int64), offsets[:-1]).max() <= 60
    small = ["--width", "16", "--layers", "1", "--heads", "2", "--window", "32", "--length", "32", "--batch", "4"]
    run("stream_forecaster.py", "train", "--epochs", "1", "--steps", "2", "--max-cards", "60", *small,
        "--out", str(tmp_path))  # fmt: skip
    assert json.loads((tmp_path / "history.json").read_text())["settings"]["max_cards"] == 60


def test_stream_study_resumes_its_training_and_measures_its_rollouts(tmp_path):
    pytest.importorskip("torch", reason="the stream model needs torch (pip install 'beggar-env[rl]')")
    import json

    small = ["--width", "16", "--layers", "1", "--heads", "2", "--window", "32", "--length", "32", "--batch", "4"]
    small += ["--steps", "2", "--own-first", "2", "--long-from", "2", "--long-length", "48", "--out", str(tmp_path)]
    run("stream_forecaster.py", "train", "--epochs", "3", *small)  # schedule over 3 epochs, as the whole run
    first = (tmp_path / "history.json").read_text()
    (tmp_path / "history.json").unlink()
    run("stream_forecaster.py", "train", "--epochs", "3", *small)  # nothing left: resumed at its end
    again = json.loads((tmp_path / "history.json").read_text())
    assert again["history"] == json.loads(first)["history"] and len(again["history"]) == 3
    run("stream_forecaster.py", "train", "--epochs", "6", "--cpu-hours", "1e-6", *small)  # out of budget: no epoch
    assert json.loads((tmp_path / "history.json").read_text())["history"] == again["history"]
    run("stream_forecaster.py", "exactness", "--games", "8", "--max-tokens", "50", *small[:10], "--out", str(tmp_path))
    exactness = json.loads((tmp_path / "exactness.json").read_text())
    assert exactness["positions"] == 8 and 0 <= exactness["winner_accuracy"] <= 1
    split = exactness["by_cards_left"].values()
    assert sum(part["positions"] for part in split) == 8
    games = exactness["by_game_cards"]
    assert sum(part["positions"] for part in games.values()) == 8
    short_remainders = exactness["by_cards_left"]["at most 146"]["positions"]
    assert games["at most 146"]["positions"] <= short_remainders  # a short game's remainder is short
    assert exactness["whole_game_exact"] <= exactness["whole_game_exact_any_size"]  # sizes can only add mistakes
    run("stream_forecaster.py", "exactness", "--fresh", "--games", "3", "--max-tokens", "20", *small[:10], "--out",
        str(tmp_path))  # fmt: skip
    fresh = json.loads((tmp_path / "exactness-fresh.json").read_text())
    assert fresh["rollout"].startswith("a fresh window") and fresh["positions"] == 3
    assert fresh["cached_from_the_same_points"]["cards_left_mean"] == fresh["cards_left_mean"]
    run("stream_forecaster.py", "forecast", "--determined", "6", "--open", "3", "--k", "2", "--max-tokens", "60",
        *small[:10], "--out", str(tmp_path))  # fmt: skip
    forecast = json.loads((tmp_path / "forecast.json").read_text())
    assert forecast["given"] == [] and forecast["hazard_per_card"] == exactness["per_card_error"]
    assert [forecast["tracks"][t]["positions"] for t in ("determined", "open")] == [6, 3]
    bayes = forecast["tracks"]["determined"]["bayes"]["accuracy"]["value"]
    assert bayes == 1.0  # the determined positions are those Bayes is certain of
    assert 0 <= forecast["all"]["model"]["accuracy"] <= 1

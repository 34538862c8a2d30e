"""The examples run as a user runs them and print what they promise."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
pytestmark = pytest.mark.slow  # each runs a whole example in a child process


def run(name, *args):
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_forecast_episode_shows_the_final_table():
    out = run("forecast_episode.py", "42")
    assert "52 cards" in out and "pile (0): empty" in out
    assert re.search(r"accuracy 0\.\d\d over \d+ steps; win for seat [01]", out)


def test_vector_example_counts_its_steps():
    out = run("vector_million_steps.py", "256")
    steps = int(re.search(r"([\d,]+) env-steps", out).group(1).replace(",", ""))
    assert steps >= 1_000_000 and steps % 256 == 0


@pytest.mark.parametrize("games", ["2000"])
def test_predictor_beats_chance_late_in_games(games):
    out = run("train_predictor.py", games)
    late = float(re.search(r"progress 0\.75-1\.00: accuracy (0\.\d+)", out).group(1))
    assert late > 0.8  # near the end, hand sizes tell the winner


def test_sequence_example_writes_a_report_the_tables_can_take(tmp_path):
    pytest.importorskip("torch", reason="the sequence forecasters need torch (pip install 'beggar-env[rl]')")
    from beggar_env.forecasting import Report

    out = run("sequence_forecasters.py", "--quick", "--rows", "gru:public:outcome", "--out", str(tmp_path))
    assert re.search(r"2 players, GRU \(public stream\): accuracy 0\.\d+, log loss \d\.\d+", out)
    report = Report.load(tmp_path / "gru_public_outcome_2p.json")
    assert report["observation"] == "public" and report["train_games"] == 200 and len(report["history"]) == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "| 2 | GRU (public stream) |" in summary and "| 200 |" in summary


def test_forward_example_writes_reports_the_tables_can_take_and_its_curve_ends_at_the_engine(tmp_path):
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

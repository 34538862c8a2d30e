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

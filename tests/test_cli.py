"""The `beggar` command, run as a user runs it: in a subprocess."""

import json
import subprocess
import sys

import numpy as np
import pytest

import beggar_env

KLEBER = "---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q"
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"


def beggar(*args):
    return subprocess.run(
        [sys.executable, "-m", "beggar_env.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_play_reports_the_record_game():
    run = beggar("play", KLEBER)
    assert run.returncode == 0, run.stderr
    assert "seat 0 wins after 5790 cards and 805 tricks" in run.stdout


def test_play_reports_casella_as_a_cycle_with_its_figures():
    run = beggar("play", CASELLA, "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["outcome"], out["winner"], out["cards"], out["tricks"]) == ("cycle", None, 474, 66)
    assert (out["cycle_start_cards"], out["cycle_start_tricks"]) == (34, 4)
    assert (out["cycle_cards"], out["cycle_tricks"]) == (440, 62)
    text = beggar("play", CASELLA).stdout
    assert "474 cards, 66 tricks" in text and "34 cards, 4 tricks" in text and "440 cards, 62 tricks" in text


def test_play_json_matches_the_api():
    deal = str(beggar_env.random_deal(3, seed=11))
    out = json.loads(beggar("play", deal, "--json", "--max-cards", "60").stdout)
    expected = beggar_env.play(deal, max_cards=60)
    assert out["outcome"] == expected.outcome and out["winner"] == expected.winner
    assert (out["cards"], out["tricks"], tuple(out["hand_sizes"])) == (
        expected.cards, expected.tricks, expected.hand_sizes)


def test_trace_accounts_for_every_trick():
    deal = "-A-A-K-K-Q-Q-J-J----------/----------J-J-Q-Q-K-K-A-A-"
    out = json.loads(beggar("play", deal, "--trace", "--json").stdout)
    trace = out["trace"]
    assert len(trace) == out["tricks"] == 21
    assert [t["trick"] for t in trace] == list(range(1, 22))
    assert sum(t["taken"] for t in trace) == out["cards"] == 151
    assert all(sum(t["hand_sizes"]) == 52 for t in trace)  # the pile is empty after a taking
    assert trace[-1]["hand_sizes"] == [52, 0]
    text = beggar("play", deal, "--trace").stdout.splitlines()
    assert sum(line.startswith("trick") for line in text) == 21


def test_trace_of_a_limited_game_ends_mid_trick():
    out = json.loads(beggar("play", KLEBER, "--trace", "--json", "--max-cards", "10").stdout)
    assert out["outcome"] == "limit" and out["cards"] == 10
    assert out["trace"][-1]["cards"] == 10


def test_simulate_summary_and_raw_results(tmp_path):
    path = tmp_path / "runs.npz"
    run = beggar("simulate", "--games", "3000", "--players", "3", "--seed", "5", "--out", str(path))
    assert run.returncode == 0, run.stderr
    assert "3000 games, 3 players, seed 5" in run.stdout
    for word in ("mean", "median", "p95", "seat 2", "95% CI", "cycles", "games/s"):
        assert word in run.stdout
    saved = np.load(path)
    expected = beggar_env.simulate(3000, n_players=3, seed=5)
    for field in ("winner", "cards", "tricks", "outcome"):
        np.testing.assert_array_equal(saved[field], expected[field])
    raw = json.loads(beggar("simulate", "--games", "50", "--players", "3", "--seed", "5", "--json").stdout)
    assert raw["results"]["cards"] == expected.cards[:50].tolist()  # game i does not depend on n
    assert set(raw["results"]["outcome"]) <= {"win", "cycle", "limit"}


def test_simulate_is_reproducible_from_its_printed_seed():
    first = beggar("simulate", "--games", "500", "--json")
    seed = json.loads(first.stdout)["seed"]
    again = beggar("simulate", "--games", "500", "--seed", str(seed), "--json")
    assert json.loads(first.stdout)["results"] == json.loads(again.stdout)["results"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["play", "-X/-"], ["seat 0", "card 2", "'X'"]),
        (["play", "-----"], ["2 to 4 players"]),
        (["play", "QS QS / 2C"], ["QS", "twice"]),
        (["play"], ["deal is required"]),
        (["play", "-/-", "--bogus"], ["--bogus"]),
        (["play", "-/-", "--max-cards", "-3"], ["--max-cards"]),
        (["simulate", "--games", "0"], ["--games"]),
        (["simulate", "--games", "many"], ["--games", "many"]),
        (["simulate", "--players", "5"], ["--players"]),
        (["simulate", "--threads", "4096"], ["threads"]),
        (["simulate", "--games", "10", "--out", "/no/such/folder/x.npz"], ["--out"]),
        (["fly"], ["fly"]),
    ],
)
def test_bad_input_gives_one_line_and_status_2(args, words):
    run = beggar(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    for word in words:
        assert word in lines[0]


def test_dataset_command_saves_what_the_api_generates(tmp_path):
    from beggar_env import datasets

    path = tmp_path / "data.npz"
    run = beggar("dataset", "--games", "200", "--players", "3", "--samples", "4", "--seed", "9", "--out", str(path))
    assert run.returncode == 0, run.stderr
    assert "800 samples of 200 games" in run.stdout and "samples/s" in run.stdout
    saved = datasets.load(path)
    expected = datasets.generate(200, n_players=3, samples=4, seed=9)
    np.testing.assert_array_equal(saved.observations, expected.observations)
    np.testing.assert_array_equal(saved.winner, expected.winner)


@pytest.mark.parametrize("args, word", [
    (["dataset", "--games", "5", "--samples", "all", "--out", "x.npz"], "--samples"),
    (["dataset", "--games", "5"], "--out"),
    (["dataset", "--games", "5", "--observation", "secret", "--out", "x.npz"], "--observation"),
])
def test_dataset_bad_input(args, word):
    run = beggar(*args)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and word in run.stderr

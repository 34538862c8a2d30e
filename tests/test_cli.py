"""The `beggar` command, run as a user runs it: in a subprocess (the slow tests); its
refusals of bad input, which read only the exit status and the output, in this process."""

import json

import numpy as np
import pytest
from conftest import beggar, beggar_in_process, without_notice

import beggar_env

KLEBER = "---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q"
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"


@pytest.mark.slow
def test_play_reports_the_record_game():
    run = beggar("play", KLEBER)
    assert run.returncode == 0, run.stderr
    assert "seat 0 wins after 5790 cards and 805 tricks" in run.stdout


@pytest.mark.slow
def test_play_reports_casella_as_a_cycle_with_its_figures():
    run = beggar("play", CASELLA, "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["outcome"], out["winner"], out["cards"], out["tricks"]) == ("cycle", None, 474, 66)
    assert (out["cycle_start_cards"], out["cycle_start_tricks"]) == (34, 4)
    assert (out["cycle_cards"], out["cycle_tricks"]) == (440, 62)
    text = beggar("play", CASELLA).stdout
    assert "474 cards, 66 tricks" in text and "34 cards, 4 tricks" in text and "440 cards, 62 tricks" in text


@pytest.mark.slow
def test_play_json_matches_the_api():
    deal = str(beggar_env.random_deal(3, seed=11))
    out = json.loads(beggar("play", deal, "--json", "--max-cards", "60").stdout)
    expected = beggar_env.play(deal, max_cards=60)
    assert out["outcome"] == expected.outcome and out["winner"] == expected.winner
    assert (out["cards"], out["tricks"], tuple(out["hand_sizes"])) == (
        expected.cards,
        expected.tricks,
        expected.hand_sizes,
    )


@pytest.mark.slow
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


@pytest.mark.slow
def test_trace_of_a_limited_game_ends_mid_trick():
    out = json.loads(beggar("play", KLEBER, "--trace", "--json", "--max-cards", "10").stdout)
    assert out["outcome"] == "limit" and out["cards"] == 10
    assert out["trace"][-1]["cards"] == 10


@pytest.mark.slow
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


@pytest.mark.slow
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
        (["simulate", "--games", "10", "--out", "x.txt"], ["--out", "x.txt", ".npz"]),  # not x.txt.npz, silently
        (["search", "--deals", "10", "--out", "x.txt"], ["--out", "x.txt", ".jsonl"]),
        (["fly"], ["fly"]),
    ],
)
def test_bad_input_gives_one_line_and_status_2(capsys, args, words):
    run = beggar_in_process(capsys, *args)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.slow
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


@pytest.mark.parametrize(
    "args, word",
    [
        (["dataset", "--games", "5", "--samples", "all", "--out", "x.npz"], "--samples"),
        (["dataset", "--games", "5"], "--out"),
        (["dataset", "--games", "5", "--observation", "secret", "--out", "x.npz"], "--observation"),
    ],
)
def test_dataset_bad_input(capsys, args, word):
    run = beggar_in_process(capsys, *args)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and word in run.stderr


# ------------------------------------------------------------- issue 7 items


@pytest.mark.parametrize(
    "args",
    [
        ["play", KLEBER, "--max-cards", "9223372036854775808"],
        ["play", KLEBER, "--max-tricks", "18446744073709551616"],
        ["simulate", "--games", "10", "--max-cards", "9223372036854775808"],
        ["dataset", "--games", "10", "--max-cards", "99999999999999999999", "--out", "x.npz"],
    ],
)
def test_limits_beyond_the_engine_are_refused_in_one_line(capsys, args):
    run = beggar_in_process(capsys, *args)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "9,223,372,036,854,775,807" in run.stderr


@pytest.mark.slow
def test_the_largest_limit_plays_as_no_limit():
    run = beggar("play", KLEBER, "--max-cards", "9223372036854775807", "--json")
    assert json.loads(run.stdout)["cards"] == 5790


@pytest.mark.slow
def test_out_gets_its_suffix_and_the_real_path_is_printed(tmp_path):
    run = beggar("simulate", "--games", "1", "--seed", "3", "--out", str(tmp_path / "runs"))
    assert run.returncode == 0, run.stderr
    assert f"raw results saved to {tmp_path / 'runs.npz'}" in run.stdout
    assert run.stdout.startswith("1 game, 2 players, seed 3\n")
    assert [p.name for p in tmp_path.iterdir()] == ["runs.npz"]
    run = beggar("dataset", "--games", "1", "--samples", "1", "--seed", "3", "--out", str(tmp_path / "one.npz"))
    assert "1 sample of 1 game" in run.stdout and f"saved to {tmp_path / 'one.npz'}" in run.stdout
    run = beggar("dataset", "--games", "1", "--samples", "1", "--seed", "3", "--out", str(tmp_path / "one"))
    assert f"saved to {tmp_path / 'one'} as Parquet" in run.stdout  # a dataset without .npz is a folder of shards


@pytest.mark.parametrize(
    "command, outs",
    [
        (["simulate", "--games", "10"], ["{tmp}/", "{tmp}", "{tmp}/missing/x.npz"]),
        (
            ["dataset", "--games", "10"],
            ["{tmp}/missing/x.npz", "{tmp}/missing/dataset"],
        ),  # an empty folder takes shards
    ],
)
def test_an_out_folder_is_refused_before_any_work(capsys, tmp_path, command, outs):
    for out in outs:
        run = beggar_in_process(capsys, *command, "--out", out.format(tmp=tmp_path))
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert "--out" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_memory_beyond_what_is_available_is_refused_in_one_line(monkeypatch, capsys, tmp_path):
    from beggar_env import checks, cli

    monkeypatch.setattr(checks, "available_memory", lambda: 2**20)
    assert (
        cli.main(["dataset", "--games", "2000", "--seed", "1", "--out", str(tmp_path / "d.npz"), "--no-progress"]) == 2
    )
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "needs" in err[0] and "MiB" in err[0] and "fewer" in err[0]
    assert cli.main(["simulate", "--games", "100000", "--seed", "1", "--json", "--no-progress"]) == 2
    assert "--out" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_simulate_summarises_in_blocks_what_it_would_save(tmp_path):
    summary = beggar("simulate", "--games", "300000", "--players", "4", "--seed", "8")
    saved = beggar("simulate", "--games", "300000", "--players", "4", "--seed", "8", "--out", str(tmp_path / "r.npz"))
    assert summary.stdout.splitlines()[:-1] == saved.stdout.splitlines()[:-2]  # all but the speed and the path


@pytest.mark.slow
def test_version_and_usage():
    version = beggar("--version")
    assert version.returncode == 0 and version.stdout.startswith(f"beggar {beggar_env.__version__} (numba ")
    bare = beggar()
    assert bare.returncode == 2 and bare.stdout == ""
    for word in ("usage: beggar", "play", "simulate", "dataset", "--version"):
        assert word in bare.stderr


@pytest.mark.slow
def test_warmup_runs_every_part_and_says_where_the_cache_is(capsys):
    from beggar_env import cli, jit, warmup

    assert cli.main(["warmup", "--players", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [part.name for part in warmup.parts((3,))]
    started = [line.removesuffix(" ...") for line in lines[:-1] if line.endswith(" ...")]  # as each part starts
    ended = [line.rsplit(":", 1)[0] for line in lines[:-1] if line.endswith(" s")]  # and its time when it ends
    assert sorted(started) == sorted(ended) == sorted(names) and len(names) >= 5 and len(lines) == 2 * len(names) + 1
    assert started[0] == ended[0] == "simulate, 3 players"  # the engine first, which the others load
    for name in names:  # announced, then timed
        assert lines.index(f"{name} ...") < [line.rsplit(":", 1)[0] for line in lines].index(name)
    assert all(name.endswith("3 players") for name in names) and "cycles, 3 players" in names
    assert lines[-1].startswith("every part is compiled") and str(jit.CACHE_FOLDER) in lines[-1]
    assert not warmup.cache_is_empty()


def subcommands(parser, words=("beggar",)):
    """Every command and subcommand parser below ``parser``, with the words that name it."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield (*words, name), command
                yield from subcommands(command, (*words, name))


def test_every_command_has_a_description_and_every_option_with_a_default_says_it_in_its_help():
    import argparse

    from beggar_env.cli import commands

    quiet = (None, False, [], argparse.SUPPRESS)  # nothing to say: no value, a flag, a repeatable option
    found = dict(subcommands(commands.build_parser()))
    assert ("beggar", "cycles", "census") in found and ("beggar", "cycles", "grow") in found
    for words, command in found.items():
        assert command.description, " ".join(words)
        for action in command._actions:
            if action.default not in quiet and action.help is not None and action.option_strings:
                assert "default" in action.help, f"{' '.join(words)} {action.option_strings[0]}: {action.help}"


@pytest.mark.parametrize(
    "args, words",
    [
        (["play", "-A/-Q", "--max-card", "10"], "unrecognised arguments: '--max-card 10'"),
        (["simulate", "--games", "+5"], "not a whole number: '+5'"),
        (["simulate", "--games", " 7 "], "not a whole number: ' 7 '"),
        (["simulate", "--games", "5_0"], "not a whole number: '5_0'"),
        (["simulate", "--games", "-3"], "must be between 1 and 9,223,372,036,854,775,807, not -3"),
        (["search", "--out", "f", "--minutes", "+1"], "not a number: '+1'"),
        (["search", "--out", "f", "--minutes", " 1"], "not a number: ' 1'"),
        (["cycles", "grow", "--deal", "-A/-Q", "--slack", "inf"], "not a number: 'inf'"),
        (["cycles", "grow", "--deal", "-A/-Q", "--slack", "1e999"], "must be a number >= 0, not '1e999'"),
        (["simulate", "--players", " 3"], "--players: must be 2, 3 or 4, not ' 3'"),
        (["simulate", "--players", "3 "], "--players: must be 2, 3 or 4, not '3 '"),
        (["warmup", "--players", "2", "+3"], "--players: must be 2, 3 or 4, not '+3'"),
        (["simulate", "--games", "9" * 5000], "--games: not a number of at most 4,300 digits: '999999999"),
        (["simulate", "--games", "9" * 4300], "not a number of about 4,300 digits"),
        (["cycles", "census", "--source", "every", "--deck", "AAAAAAAA--"], "--deck: 8 'A' in 'AAAAAAAA--', more than"),
        (["cycles", "grow", "--deal", "-A/-Q", "--deck", "--", "--beam", "x"], "--beam: not a whole number: 'x'"),
    ],
)
def test_a_bad_command_line_is_one_line_in_the_words_it_was_given(args, words, capsys):
    from beggar_env import cli

    assert cli.main(args) == 2
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and words in err[0] and len(err[0]) < 200, err


def test_a_deck_may_start_with_a_numeral():
    from beggar_env.cli import commands

    args = commands.parse_args(["cycles", "census", "--source", "every", "--deck", "-JQK", "--players", "3"])
    assert (args.deck, args.players) == ("-JQK", 3)
    args = commands.parse_args(["cycles", "grow", "--deal", "--J-/K-J-", "--deck", "--JJKK--"])
    assert (args.deal, args.deck) == (["--J-/K-J-"], "--JJKK--")


def test_play_in_process_leaves_the_compiled_engine_in_place(capsys):
    """``beggar play`` runs its one game as Python (faster than loading compiled code); a
    process that called it in-process must not play every later game as Python (the whole
    fast suite once ran several times slower after one such call)."""
    from beggar_env import core, game

    run = beggar_in_process(capsys, "play", "-A/-----")
    assert run.returncode == 0 and "seat" in run.stdout
    assert game._engine is core
    run = beggar_in_process(capsys, "play", "--trace", "-A/-----")
    assert run.returncode == 0 and game._engine is core

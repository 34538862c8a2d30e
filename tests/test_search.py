"""`beggar_env.search` and `beggar search`: what a search reports is checked against
`simulate` (random search plays its games), replayed by the engine and by the independent
reference, the same on any number of threads, and kept whole across resumptions and Ctrl-C."""

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest
from conftest import beggar, beggar_in_process, beggar_process, hands_of, without_notice
from reference import play_reference

import beggar_env
from beggar_env.search import finds, search

RECORDS = ("Paulhus 1999", "Kleber 1999", "Rucklidge 2014", "Nessler 2022")
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"


def comparable(report):
    """A report's lists without the times they were found at."""
    return {objective: [replace(f, found_at=None) for f in entries] for objective, entries in report.lists.items()}


def top_from_simulate(n_games, players, seed, k):
    """The top k of each objective computed from simulate()'s results: (index, score)."""
    runs = beggar_env.simulate(n_games, n_players=players, seed=seed)
    index = np.arange(n_games)
    scores = {
        "cards": np.where(runs.outcome == 1, runs.cards, -1),
        "tricks": np.where(runs.outcome == 1, runs.tricks, -1),
        "cycle": np.where(runs.outcome == 2, runs.cards, -1),
    }
    top = {}
    for objective, score in scores.items():
        order = np.lexsort((index, -score))
        top[objective] = [(int(i), int(score[i])) for i in order[:k] if score[i] >= 0]
    return top


@pytest.mark.slow
@pytest.mark.parametrize("players", [2, 3, 4])
def test_random_search_keeps_the_top_games_of_simulate(players):
    n, k = 30_000, 6
    report = search(players, deals=n, seed=11 + players, top=k)
    expected = top_from_simulate(n, players, 11 + players, k)
    for objective, entries in report.lists.items():
        assert [(f.index, f.score(objective)) for f in entries] == expected[objective], objective
    deals = beggar_env.random_deals(n, players, seed=11 + players)
    for find in report.lists["cards"]:
        assert find.deal == beggar_env.format_deal(deals[find.index], "compact")
        assert (find.strategy, find.seed, find.players) == ("random", 11 + players, players)
    assert report.deals == report.deals_done == n


def test_every_find_replays_in_the_engine_and_in_the_reference():
    report = search(3, strategy="local", objective="tricks", deals=6_000, walk_steps=300, seed=5, top=8)
    listed = [f for entries in report.lists.values() for f in entries]
    assert len(listed) >= 16
    for find in listed:
        expected = {key: getattr(find, key) for key in find.game()}
        assert {key: getattr(beggar_env.play(find.deal), key) for key in expected} == expected
        assert {key: play_reference(hands_of(find.deal))[key] for key in expected} == expected


def test_lists_are_ranked_distinct_and_hold_only_their_outcomes():
    report = search(4, strategy="local", deals=8_000, walk_steps=200, seed=3, top=10)
    for objective, entries in report.lists.items():
        keys = [f.rank_key(objective) for f in entries]
        assert keys == sorted(keys)
        assert len({f.deal for f in entries}) == len(entries)
        assert all(f.outcome == ("cycle" if objective == "cycle" else "win") for f in entries)


@pytest.mark.parametrize("strategy", ["random", "local"])
def test_a_seeded_search_finds_the_same_deals_on_any_number_of_threads(strategy):
    options = dict(strategy=strategy, deals=12_345, walk_steps=400, seed=99, top=7)
    one = search(2, threads=1, **options)
    two = search(2, threads=2, **options)
    assert comparable(one) == comparable(two)
    assert one.deals == two.deals == 12_345


def test_local_search_climbs():
    """From the worst-placed deals a hill climb keeps only deals no shorter than before."""
    report = search(2, strategy="local", deals=4_000, walk_steps=4_000, seed=1, top=3)
    first_walk = [f for f in report.lists["cards"] if f.index < 4_000]
    assert first_walk and first_walk[0].cards > 1_000  # the best of a 4,000-game climb


def test_known_records_fed_as_starts_are_reported_with_their_published_lengths(vectors):
    records = {v["name"]: v for v in vectors if v["name"] in RECORDS}
    assert sorted(records) == sorted(RECORDS)
    starts = [records[name]["deal"] for name in RECORDS]
    report = search(2, strategy="local", starts=starts, deals=4 * 50, walk_steps=50, seed=2, top=4)
    got = {f.deal: (f.cards, f.tricks, f.winner, f.index) for f in report.lists["cards"]}
    for walk, name in enumerate(RECORDS):
        v = records[name]
        assert got[v["deal"]] == (v["cards"], v["tricks"], v["winner"], walk * 50), name
    assert report.lists["cards"][0].cards == 8344 and report.lists["tricks"][0].tricks == 1164


def test_local_search_takes_any_deck_and_keeps_its_cards():
    start = "-A--Q-K/----K-J-"  # 15 cards: not a standard deck
    report = search(2, strategy="local", starts=[start], deals=3_000, walk_steps=1_000, seed=7, top=5)
    listed = [f for entries in report.lists.values() for f in entries]
    assert listed
    for find in listed:
        assert sorted(find.deal) == sorted(start) and find.deal.index("/") == start.index("/")
        expected = {key: getattr(find, key) for key in find.game()}
        assert {key: play_reference(hands_of(find.deal))[key] for key in expected} == expected


def test_a_never_ending_start_enters_the_cycle_list_with_its_figures():
    report = search(2, strategy="local", objective="cycle", starts=[CASELLA], deals=30, walk_steps=30, seed=4, top=3)
    casella = next(f for f in report.lists["cycle"] if f.deal == CASELLA)
    assert (casella.outcome, casella.winner, casella.cards, casella.tricks) == ("cycle", None, 474, 66)
    assert (casella.cycle_start_cards, casella.cycle_start_tricks, casella.cycle_cards, casella.cycle_tricks) == (
        34,
        4,
        440,
        62,
    )


# ------------------------------------------------------------ the file, resume


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_the_file_holds_the_lists_and_the_run(tmp_path):
    path = tmp_path / "finds.jsonl"
    report = search(2, deals=5_000, seed=8, top=3, out=path)
    lines = read_lines(path)
    assert lines[0] == finds.FORMAT
    runs = [line for line in lines if line["kind"] == "run"]
    assert len(runs) == 1 and runs[0]["seed"] == 8 and runs[0]["deals_done"] == 5_000
    deals = [line for line in lines if line["kind"] == "deal"]
    for objective, entries in report.lists.items():
        written = [d for d in deals if d["objective"] == objective]
        assert [(d["rank"], d["deal"], d["cards"], d["index"]) for d in written] == [
            (rank, f.deal, f.cards, f.index) for rank, f in enumerate(entries, 1)
        ]
        assert all(
            d["score"] == beggar_env.play(d["deal"]).__dict__[objective if objective != "cycle" else "cards"]
            for d in written
        )
    assert report.path == str(path)


@pytest.mark.parametrize(
    "strategy, first, total, walk_steps",
    [("random", 7_000, 16_000, 1), ("local", 2_500, 6_000, 1_000)],  # local: the first run cuts a walk
)
def test_resume_continues_to_the_same_finds_as_one_run(tmp_path, strategy, first, total, walk_steps):
    path = tmp_path / "finds.jsonl"
    options = dict(strategy=strategy, walk_steps=walk_steps, seed=21, top=5)
    search(2, deals=first, out=path, **options)
    resumed = search(2, deals=total, out=path, resume=True, **{k: v for k, v in options.items() if k != "seed"})
    whole = search(2, deals=total, **options)
    assert comparable(resumed) == comparable(whole)
    assert resumed.seed == 21 and resumed.deals_done == total
    run = next(line for line in read_lines(path) if line["kind"] == "run")
    assert (run["sessions"], run["deals_done"]) == (2, total)
    assert run["deals_tried"] >= total


def test_an_existing_file_is_continued_only_when_asked(tmp_path):
    path = tmp_path / "finds.jsonl"
    search(2, deals=100, seed=1, out=path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="exists: resume it"):
        search(2, deals=100, seed=1, out=path)
    assert path.read_bytes() == before
    report = search(3, deals=100, seed=2, out=path, resume=True)  # another run, same file
    lines = read_lines(path)
    assert {(line["players"], line["seed"]) for line in lines if line["kind"] == "run"} == {(2, 1), (3, 2)}
    assert {line["players"] for line in lines if line["kind"] == "deal"} == {2, 3}
    assert report.deals == 100


def test_a_report_gives_the_files_lists_and_this_runs_own(tmp_path):
    path = tmp_path / "finds.jsonl"
    first = search(2, deals=3_000, seed=1, top=4, out=path)
    second = search(2, deals=3_000, seed=2, top=4, out=path, resume=True)
    alone = search(2, deals=3_000, seed=2, top=4)
    assert comparable(replace(second, lists=second.found)) == comparable(alone)
    merged = sorted(first.lists["cards"] + alone.lists["cards"], key=lambda f: f.rank_key("cards"))[:4]
    assert [(f.seed, f.index) for f in second.lists["cards"]] == [(f.seed, f.index) for f in merged]


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "not a beggar search file"),
        ('{"kind": "header"}\n', "not a beggar search file"),
        (json.dumps(finds.FORMAT) + "\n{oops\n", ":2: not JSON"),
        (json.dumps(finds.FORMAT) + '\n{"kind": "thing"}\n', ":2: unknown kind"),
        (
            json.dumps(finds.FORMAT) + '\n{"kind": "run", "players": "2", "strategy": "random", "seed": 1}\n',
            ":2: players",
        ),
        (json.dumps(finds.FORMAT) + '\n{"kind": "run", "strategy": "random", "seed": 1}\n', ":2: a run line without"),
        (
            json.dumps(finds.FORMAT) + '\n{"kind": "run", "players": 2, "strategy": "random", "seed": 1, "x": 0}\n',
            "unknown field",
        ),
        (
            json.dumps(finds.FORMAT) + '\n{"kind": "run", "players": 2, "strategy": "local", "seed": 1, '
            '"temperature": NaN}\n',
            ":2: not JSON .NaN is not a JSON number",
        ),
        (
            json.dumps(finds.FORMAT) + '\n{"kind": "run", "players": 2, "strategy": "local", "seed": 1, '
            '"seconds": 1e400}\n',
            ":2: not JSON .1e400 is beyond the range of a float",
        ),
    ],
)
def test_a_damaged_file_is_refused_naming_the_line(tmp_path, content, message):
    path = tmp_path / "finds.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        search(2, deals=10, out=path, resume=True)
    assert path.read_text() == content


def test_a_wrong_result_in_a_file_is_never_written_back(tmp_path):
    path = tmp_path / "finds.jsonl"
    search(2, deals=2_000, seed=3, top=2, out=path)
    lines = path.read_text().splitlines()
    doctored = [json.loads(line) for line in lines]
    entry = next(line for line in doctored if line["kind"] == "deal" and line["objective"] == "cards")
    entry["cards"] += 1
    entry["score"] += 1
    path.write_text("".join(json.dumps(line) + "\n" for line in doctored))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="the file records .*but it plays"):  # on reading, before any work
        search(2, deals=2_100, out=path, resume=True)
    assert path.read_bytes() == before


@pytest.mark.slow
def test_a_minutes_budget_stops_the_search():
    started = time.perf_counter()
    report = search(2, minutes=0.04, seed=6)
    assert 2.0 < report.seconds < 6.0 and time.perf_counter() - started < 10
    assert report.deals > 10_000
    assert report.deals_done <= report.deals


def test_progress_reports_deals_best_and_time_left():
    seen = []
    search(2, deals=300_000, seed=2, progress=seen.append)
    assert seen and seen[-1].deals == 300_000
    assert [s.deals for s in seen] == sorted(s.deals for s in seen)
    assert seen[-1].best["cards"] is not None and seen[-1].remaining == 0
    from beggar_env.cli import search as search_command

    line = search_command.search_line(seen[-1])
    assert "300,000 deals" in line and f"cards {seen[-1].best['cards'].cards:,}" in line and "0:00:00 left" in line


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(players=5), ValueError, "n_players must be 2, 3 or 4"),
        (dict(objective="longest"), ValueError, "objective must be one of"),
        (dict(strategy="genetic"), ValueError, "strategy must be one of"),
        (dict(deals=0), ValueError, "deals must be between 1 and 9,223,372,036,854,775,807"),
        (dict(deals=1.5), TypeError, "deals must be an int"),
        (dict(minutes=0), ValueError, "minutes must be > 0"),
        (dict(minutes="1"), TypeError, "minutes must be a number"),
        (dict(top=0), ValueError, "top must be between 1 and"),
        (dict(walk_steps=0), ValueError, "walk_steps must be between 1 and 9,223,372,036,854,775,807"),
        (dict(temperature=-1), ValueError, "temperature must be >= 0"),
        (dict(backend="spark"), ValueError, "backend must be one of"),
        (dict(threads=0), ValueError, "threads must be between 1"),
        (dict(starts=[CASELLA]), ValueError, "start deals are for strategy 'local'"),
        (dict(starts=CASELLA, strategy="local"), TypeError, "wrap one deal in a list"),
        (dict(starts=["-A/-Q/-"], strategy="local"), ValueError, "start deal 0 has 3 players"),
        (dict(starts=["--/--"], strategy="local"), ValueError, "one class only"),
        (dict(starts=["-X/--"], strategy="local"), ValueError, "unknown symbol 'X'"),
        (dict(resume=True), ValueError, "resume needs the file"),
        (dict(backend="ray", threads=2), ValueError, "threads is for the local backend"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(kwargs, error, message):
    kwargs = {"players": 2, "deals": 10, **kwargs}
    with pytest.raises(error, match=message):
        search(kwargs.pop("players"), **kwargs)


# ----------------------------------------------------------------- the command


@pytest.mark.slow
def test_the_command_reports_and_saves_what_the_api_finds(tmp_path):
    run = beggar(
        "search", "--players", "3", "--deals", "20000", "--seed", "7", "--top", "4", "--out", "f", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    report = search(3, deals=20_000, seed=7, top=4)
    best = report.lists["cards"][0]
    assert "3 players, random, seed 7: 20,000 deals played" in run.stdout
    assert f"longest by cards: {best.cards:,} cards, {best.tricks:,} tricks, win  {best.deal}" in run.stdout
    assert "top 4 deals per objective in f.jsonl" in run.stdout
    written = [line for line in read_lines(tmp_path / "f.jsonl") if line["kind"] == "deal"]
    assert [(d["deal"], d["index"]) for d in written if d["objective"] == "cards"] == [
        (f.deal, f.index) for f in report.lists["cards"]
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--deals", "0"], "--deals: must be between 1 and 9,223,372,036,854,775,807"),
        (["--minutes", "-2"], "--minutes: must be a number > 0"),
        (["--minutes", "soon"], "--minutes: not a number"),
        (["--temperature", "-1"], "--temperature: must be a number >= 0"),
        (["--objective", "longest"], "--objective: invalid choice"),
        (["--strategy", "local", "--start", "-A/-Q/-"], "start deal 0 has 3 players"),
        (["--start", "-A/-Q"], "start deals are for strategy 'local'"),
        (["--ray", "--threads", "2"], "--threads is for a local run"),
    ],
)
def test_bad_command_lines_get_one_line_and_status_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "search", "--out", "f.jsonl", *args)
    assert run.returncode == 2 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "f.jsonl").exists()


@pytest.mark.parametrize(
    "start, message", [("-X/-Q", "--start: deal, seat 0, card 2: unknown symbol 'X'"), ("-/-/-/-/-", "2 to 4")]
)
def test_a_bad_start_is_refused_before_the_file_is_locked(tmp_path, monkeypatch, capsys, start, message):
    def exclusive(path):
        raise AssertionError(f"{path} locked before the start deals were checked")

    monkeypatch.setattr(beggar_env.files, "exclusive", exclusive)
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "search", "--strategy", "local", "--start", start, "--out", "f.jsonl")
    assert run.returncode == 2 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_command_refuses_to_overwrite_a_results_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "f.jsonl").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "search", "--deals", "10", "--out", "f.jsonl")
    assert run.returncode == 2 and "f.jsonl exists: resume it (resume=True, --resume)" in run.stderr
    assert (tmp_path / "f.jsonl").read_text() == "mine\n"


@pytest.mark.slow
def test_without_ray_the_ray_option_says_how_to_install_it(tmp_path):
    code = "import sys; sys.modules['ray'] = None; from beggar_env.cli import main; sys.exit(main(sys.argv[1:]))"
    for command in (["search", "--deals", "10", "--out", "f.jsonl"], ["simulate", "--games", "10"]):
        run = subprocess.run(
            [sys.executable, "-c", code, *command, "--ray"], capture_output=True, text=True, cwd=tmp_path, timeout=300
        )
        assert run.returncode == 2, run.stderr
        assert (
            without_notice(run.stderr).strip().count("\n") == 0
            and "pip install 'beggar-env[distributed]'" in run.stderr
        )
    assert list(tmp_path.iterdir()) == []


def test_without_ray_the_api_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    for call in (lambda: search(2, deals=10, backend="ray"), lambda: beggar_env.simulate(10, backend="ray")):
        with pytest.raises(ImportError, match=r"pip install 'beggar-env\[distributed\]'"):
            call()


@pytest.mark.slow
def test_ctrl_c_keeps_the_file_whole_and_resume_goes_on(tmp_path):
    search(2, deals=10, seed=0)  # the compiled searcher is in the cache
    process = beggar_process("search", "--seed", "3", "--out", "f.jsonl", "--no-progress", cwd=tmp_path)
    path = tmp_path / "f.jsonl"
    deadline = time.time() + 120
    while not path.exists() and time.time() < deadline:  # the first finds are written after a few seconds
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "beggar: interrupted" in stderr
    assert time.perf_counter() - sent < 5
    assert [p.name for p in tmp_path.iterdir()] == ["f.jsonl"]  # no partial file left
    store = finds.FindsFile.read(path)
    store.verify()
    (run,) = store.runs
    assert run.deals_done > 0 and run.deals_tried >= run.deals_done
    best = store.table(2).best("cards")
    again = beggar("search", "--out", "f.jsonl", "--resume", "--deals", str(run.deals_done + 50_000), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    (resumed,) = finds.FindsFile.read(path).runs
    assert (resumed.seed, resumed.sessions, resumed.deals_done) == (3, 2, run.deals_done + 50_000)
    assert finds.FindsFile.read(path).table(2).best("cards").cards >= best.cards

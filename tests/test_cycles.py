"""The cycle census and the balanced never-ending deals.

The census of every deal of small decks is checked against a brute force written here:
every arrangement made by plain recursion, every game played by the independent reference
(``tests/reference.py``), its cycle's positions rebuilt from the reference's events, and
the canonical key taken as ``docs/cycles.md`` defines it. The deals ``docs/cycles.md``
publishes (``docs/cycles-deals.tsv``) are replayed into their cycles."""

import copy
import csv
import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import beggar, beggar_in_process, one_line, without_notice
from reference import play_reference

import beggar_env
from beggar_env import deals
from beggar_env.cycles import census, positions, reconstruct, records

REPO = Path(__file__).resolve().parents[1]
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"


def arrangements(counts):
    """Every arrangement of a deck (counts per class), in lexicographic order, by recursion."""
    if not any(counts):
        yield ()
        return
    for c, k in enumerate(counts):
        if k:
            rest = list(counts)
            rest[c] -= 1
            for tail in arrangements(rest):
                yield (c, *tail)


def dealt(order, n_players):
    sizes = [len(order) // n_players + (p < len(order) % n_players) for p in range(n_players)]
    hands, at = [], 0
    for size in sizes:
        hands.append(list(order[at : at + size]))
        at += size
    return hands


def key_of(hands, leader):
    turned = hands[leader:] + hands[:leader]
    return [c for hand in turned for c in (*hand, 5)][:-1]  # 5: the separator, after every class


def trick_positions(hands, events):
    """Every trick-start position of a reference game, as keys: the first, then the one after
    each trick, rebuilt from the reference's events."""
    hands, pile, keys = [list(hand) for hand in hands], [], [key_of(hands, 0)]
    for event in events:
        if event[0] == "play":
            pile.append(hands[event[1]].pop(0))
        else:
            hands[event[1]].extend(pile)
            pile.clear()
            keys.append(key_of(hands, event[1]))
    return keys


def reference_cycle_key(hands, result, events):
    """The least key over the cycle's positions, rebuilt from the reference's events."""
    keys = trick_positions(hands, events)[result["cycle_start_tricks"] :]
    return "".join("-JQKA/"[c] for c in min(keys))


def brute_force_census(deck, n_players):
    counts = [deck.count(s) for s in "-JQKA"]
    games = ended = longest = 0
    cycles = {}
    for order in arrangements(counts):
        hands = dealt(order, n_players)
        events = []
        result = play_reference(hands, events=events)
        games += 1
        if result["outcome"] == "cycle":
            key = reference_cycle_key(hands, result, events)
            cycles.setdefault(key, [result["cycle_cards"], result["cycle_tricks"], 0])[2] += 1
        else:
            ended += 1
            longest = max(longest, result["cards"])
    return games, ended, longest, cycles


@pytest.mark.parametrize(
    "deck, players",
    [
        pytest.param("JJKK" + "-" * 7, 2, marks=pytest.mark.slow),  # 5 to 8 s each (most deals cycle, played out)
        pytest.param("JJKK" + "-" * 7, 3, marks=pytest.mark.slow),
        pytest.param("JJKK" + "-" * 7, 4, marks=pytest.mark.slow),
        ("JJQQK" + "-" * 6, 2),
    ],
)
def test_the_census_of_every_deal_matches_a_brute_force(deck, players):
    games, ended, longest, cycles = brute_force_census(deck, players)
    got = census.census(players, "every", deck=deck)
    assert (got.games, got.ended, got.longest_cards) == (games, ended, longest)
    assert {k: [c.cards, c.tricks, c.reached] for k, c in got.cycles.items()} == cycles
    assert games == positions.arrangements(deck) and cycles


def test_cycles_are_found_and_named_alike_from_every_position():
    cycle = census.cycle_of(CASELLA)
    assert (cycle.cards, cycle.tricks) == (440, 62)
    positions, same = reconstruct.cycle_positions(CASELLA)
    assert same == cycle and len(positions) == 62
    for cards, sizes, leader in positions[::7]:
        deal = reconstruct.deal_of(cards, sizes, leader)
        assert census.cycle_of(deal).key == cycle.key
    assert census.cycle_of("-A/--") is None


def test_a_random_census_is_the_same_on_any_number_of_threads():
    one = census.census(2, "random", deck="JJKK" + "-" * 7, n=20_000, seed=3, threads=1)
    two = census.census(2, "random", deck="JJKK" + "-" * 7, n=20_000, seed=3, threads=2)
    assert one == two and one.games == 20_000 and one.cycles


def test_casellas_deal_is_found_from_its_own_cycle_among_every_balanced_deal_that_reaches_it():
    found = reconstruct.reconstruct(CASELLA)
    assert found.complete and CASELLA in found.deals
    for deal in found.deals:
        assert beggar_env.parse_deal(deal).hand_sizes == (26, 26)
        assert beggar_env.play(deal).outcome == "cycle"
    assert len(found.deals) == len(set(found.deals)) >= 10


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: census.census(5, "every", deck="JQ--"), ValueError, "n_players must be 2, 3 or 4"),
        (lambda: census.census(2, "sideways", deck="JQ--"), ValueError, "source must be one of"),
        (lambda: census.census(2, "random", deck="JQ--"), ValueError, "needs a number of positions"),
        (lambda: census.census(2, "every", deck="JQX"), ValueError, "unknown symbol 'X'"),
        (lambda: census.census(2, "every", deck=7), TypeError, "deck must be a string"),
        (lambda: census.census(2, "every", deck="JQ--", n=13), ValueError, "has 12 deals"),
        (lambda: reconstruct.reconstruct("-A/--"), ValueError, "reaches no cycle"),
        (lambda: reconstruct.reconstruct(CASELLA, max_nodes=0), ValueError, "max_nodes must be"),
    ],
)
def test_bad_input_is_refused_naming_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.fixture
def no_lock(monkeypatch):
    """Any lock taken fails the test: bad input is refused before an output is locked."""

    def exclusive(path):
        raise AssertionError(f"{path} locked before the input was checked")

    monkeypatch.setattr(beggar_env.files, "exclusive", exclusive)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda out: reconstruct.reconstruct("-A/--", out=out), "reaches no cycle"),
        (lambda out: reconstruct.reconstruct("-X/--", out=out), "unknown symbol 'X'"),
        (lambda out: reconstruct.reconstruct(CASELLA, tsv=out.with_suffix(".tsv"), max_nodes=0), "max_nodes"),
        (lambda out: reconstruct.extend("-A/-Z", out=out), "unknown symbol 'Z'"),
    ],
)
def test_a_bad_deal_is_refused_before_the_output_is_locked(tmp_path, no_lock, call, message):
    with pytest.raises(ValueError, match=message):
        call(tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("deal, message", [("-A/--", "reaches no cycle"), ("-X/--", "unknown symbol 'X'")])
def test_the_reconstruct_command_refuses_a_bad_deal_in_one_line_before_locking(
    tmp_path, no_lock, capsys, deal, message
):
    run = beggar_in_process(capsys, "cycles", "reconstruct", "--deal", deal, "--out", str(tmp_path / "r.json"))
    one_line(run, 2, message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_command_writes_its_census_and_refuses_bad_input_in_one_line(tmp_path):
    run = beggar(
        "cycles", "census", "--source", "every", "--deck", "JJKK" + "-" * 7, "--out", "c", "--no-progress",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["kind"] == "beggar-cycles-census" and record["games"] == 1980
    assert sorted(c["key"] for c in record["cycles"]) == sorted(census.census(2, "every", deck="JJKK" + "-" * 7).cycles)
    run = beggar(
        "cycles", "extend", "--deal", LOCAL_4081, "--offsets", "5", "--max-nodes", "3000", "--out", "e",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / "e.json").read_text())
    assert record["kind"] == "beggar-cycles-extend" and record["cards"] == 4081 and record["starts"] == 5
    for args in (
        ["cycles", "census", "--deck", "JQZ", "--source", "every"],
        ["cycles", "reconstruct", "--deal", "-A/--"],
        ["cycles", "extend", "--deal", "-A/--", "--offsets", "0"],
        ["cycles", "extend", "--deal", "-A/-Z"],
    ):
        bad = beggar(*args, cwd=tmp_path, timeout=600)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def published_deals():
    """Every row of the tables of never-ending deals that docs/cycles.md publishes."""
    rows = []
    for path in sorted((REPO / "docs").glob("cycles-deals*.tsv")):
        rows += list(csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"))
    return rows


def test_every_deal_in_docs_replays_into_its_cycle():
    """Each published deal is balanced (the standard deck, dealt as a game is), the engine
    plays it into the cycle named, and the independent reference finds that it never ends,
    entering its cycle where the table says."""
    rows = published_deals()
    standard = sorted(beggar_env.parse_deal(deals.STANDARD_DECK + "/").classes())
    by_players = {}
    for row in rows:
        deal = beggar_env.parse_deal(row["deal"])
        by_players[deal.n_players] = by_players.get(deal.n_players, 0) + 1
        assert sorted(deal.classes()) == standard, row["deal"]
        assert deal.hand_sizes == tuple(map(int, row["hand_sizes"].split("/")))
        assert list(deal.hand_sizes) == list(reconstruct.dealt_sizes(52, deal.n_players)), row["deal"]
        cycle = census.cycle_of(row["deal"])
        assert cycle is not None, row["deal"]
        assert (cycle.key, cycle.cards, cycle.tricks) == (
            row["cycle"],
            int(row["cycle_cards"]),
            int(row["cycle_tricks"]),
        )
        bounds = [0, *itertools.accumulate(deal.hand_sizes)]
        hands = [list(deal.classes()[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        result = play_reference(hands)
        assert result["outcome"] == "cycle", row["deal"]
        assert (result["cycle_start_cards"], result["cycle_start_tricks"], result["cycle_cards"]) == (
            int(row["cycle_start_cards"]),
            int(row["cycle_start_tricks"]),
            int(row["cycle_cards"]),
        )
    assert CASELLA in {row["deal"] for row in rows}
    assert by_players[2] >= 30 and by_players[4] >= 4, by_players
    text = (REPO / "docs" / "cycles.md").read_text(encoding="utf-8")
    assert "cycles-deals.tsv" in text and "cycles-deals-4p.tsv" in text


LOCAL_4081 = "-JJ----AA--KA---------KQ--/----K-----KJQ-----QJ--QA--"  # docs/search.md's longest find


@pytest.mark.slow
def test_longer_games_behind_a_game_are_longer_and_pass_through_its_positions():
    """Each game extend reports is balanced, as long as the reference plays it, longer
    than the original, and reaches one of the original game's positions (turned to seat 0)
    later in its game than the original did."""
    found = reconstruct.extend(LOCAL_4081, offsets=60, max_nodes=3000)
    assert (found.cards, found.tricks) == (4081, 571) and found.starts == 60
    assert len(found.games) > 10 and found.games[0][0] > 4081
    assert [g[0] for g in found.games] == sorted((g[0] for g in found.games), reverse=True)
    original = {
        (reconstruct.deal_of(*p).classes().tobytes(), reconstruct.deal_of(*p).hand_sizes): k
        for k, p in enumerate(reconstruct.game_positions(LOCAL_4081))
    }
    for cards, tricks, deal in found.games[:: max(1, len(found.games) // 8)]:
        parsed = beggar_env.parse_deal(deal)
        assert parsed.hand_sizes == (26, 26)
        bounds = [0, *itertools.accumulate(parsed.hand_sizes)]
        hands = [list(parsed.classes()[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        result = play_reference(hands)
        assert (result["outcome"], result["cards"], result["tricks"]) == ("win", cards, tricks)
        assert tricks > 571
        later = [
            (k, original[key])
            for k, p in enumerate(reconstruct.game_positions(deal))
            if (key := (reconstruct.deal_of(*p).classes().tobytes(), reconstruct.deal_of(*p).hand_sizes)) in original
        ]
        assert later and all(k > at for k, at in later), deal


def test_extend_refuses_bad_settings():
    with pytest.raises(ValueError, match="offsets"):
        reconstruct.extend(LOCAL_4081, offsets=0)
    with pytest.raises(ValueError, match="beam"):
        reconstruct.extend(LOCAL_4081, beam=0)


@pytest.mark.slow
def test_a_census_resumed_from_its_partial_record_is_the_whole(tmp_path):
    """``partial`` gives the census of the positions done so far; written as the command's
    checkpoint, ``--resume`` continues it, and the merged census is the one-run census."""
    deck = "JJQQK" + "-" * 7  # 23,760 deals: two calls on one thread
    parts = []
    census.census(2, "every", deck=deck, n=20000, threads=1, partial=lambda part, done: parts.append((part, done)))
    assert [done for _, done in parts] == [16384, 20000] and parts[-1][0].games == 20000
    part = parts[-1][0]
    record = {
        "kind": "beggar-cycles-census", "version": beggar_env.__version__, "players": 2, "source": "every",
        "deck": deck, "first": 0, "positions": None, "seed": 3, "seconds": 1.0, "done": 20000, "complete": False,
        "games": part.games, "ended": part.ended,
        "longest": {"cards": part.longest_cards, "tricks": part.longest_tricks, "index": part.longest_index},
        "cycles": [vars(c) for c in part.cycles.values()],
    }  # fmt: skip
    (tmp_path / "c.json").write_text(json.dumps(record))
    run = beggar(
        "cycles", "census", "--source", "every", "--deck", deck, "--out", "c", "--resume", cwd=tmp_path, timeout=600
    )
    assert run.returncode == 0, run.stderr
    got = json.loads((tmp_path / "c.json").read_text())
    whole = census.census(2, "every", deck=deck)
    assert got["complete"] and got["seed"] == 3
    assert (got["games"], got["ended"], got["longest"]["cards"]) == (whole.games, whole.ended, whole.longest_cards)
    assert {c["key"]: c["reached"] for c in got["cycles"]} == {k: c.reached for k, c in whole.cycles.items()}
    for args in (["--deck", deck, "--resume"], ["--deck", deck, "--out", "c", "--resume"], ["--out", "c", "--resume"]):
        bad = beggar("cycles", "census", "--source", "every", *args, cwd=tmp_path, timeout=600)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


# ----------------------------------------------------------- counts past int64


def unranked(counts, index):
    """Arrangement ``index`` of a deck (counts per class), in lexicographic order: the
    plain way, one class at a time, in Python integers."""
    counts, order = list(counts), []
    for _ in range(sum(counts)):
        for c, k in enumerate(counts):
            if k:
                counts[c] -= 1
                ways = math.factorial(sum(counts)) // math.prod(math.factorial(j) for j in counts)
                if index < ways:
                    order.append(c)
                    break
                index -= ways
                counts[c] += 1
    return order


STANDARD_COUNTS = (36, 4, 4, 4, 4)


def test_the_standard_deck_has_its_exact_number_of_deals():
    expected = math.comb(52, 4) * math.comb(48, 4) * math.comb(44, 4) * math.comb(40, 4)
    assert positions.arrangements(deals.STANDARD_DECK) == expected == 653_534_134_886_878_245_000
    forty = "J" * 4 + "Q" * 4 + "K" * 4 + "A" * 4 + "-" * 24  # was negative in int64
    assert positions.arrangements(forty) == math.factorial(40) // (math.factorial(24) * math.factorial(4) ** 4) > 0


def census_by_hand(counts, first, n):
    """games, ended, longest cards and its index of positions ``first ..`` of ``every``,
    each unranked here and played by the engine's ``play``."""
    longest, index, ended = 0, -1, 0
    for i in range(first, first + n):
        order = unranked(counts, i)
        symbols = "".join("-JQKA"[c] for c in order)
        half = (len(order) + 1) // 2
        result = beggar_env.play(symbols[:half] + "/" + symbols[half:])
        if result.outcome == "win":
            ended += 1
            if result.cards > longest:
                longest, index = result.cards, i
    return n, ended, longest, index


@pytest.mark.parametrize("first", [0, 2**63 + 12_345, 10**20, positions.arrangements(deals.STANDARD_DECK) - 40])
def test_deals_of_the_standard_deck_past_int64_are_the_ones_their_index_names(first):
    got = census.census(2, "every", first=first, n=40, threads=1)
    assert (got.games, got.ended, got.longest_cards, got.longest_index) == census_by_hand(STANDARD_COUNTS, first, 40)


def test_a_range_across_two_of_the_compiled_codes_blocks_is_played_in_order():
    counts = deals.deck_counts(deals.STANDARD_DECK)
    prefix, rest, local, size = next(positions.blocks(counts, 10**20, 1))
    boundary = 10**20 - local + size  # the first position of the next block
    assert len(list(positions.blocks(counts, boundary - 20, 40))) == 2
    got = census.census(2, "every", first=boundary - 20, n=40, threads=1)
    assert (got.games, got.ended, got.longest_cards, got.longest_index) == census_by_hand(
        STANDARD_COUNTS, boundary - 20, 40
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: census.census(2, "every"), "more than one census counts"),
        (lambda: census.census(2, "every", first=2**70, n=1, deck="JQ--"), "first must be between 0 and 12"),
        (lambda: census.census(2, "random", first=2**63 - 1, n=2), "first [+] n must be at most"),
        (lambda: census.census(2, "random", first=2**63, n=1), "first must be between"),
        (lambda: census.census(2, "every", deck="JQ--", resume=True), "resume needs the file"),
        (lambda: census.census(2, "every", deck="JQ--", resume=1), "resume must be True or False"),
    ],
)
def test_counts_that_do_not_fit_are_refused_not_wrapped(call, message):
    with pytest.raises(ValueError if "True or False" not in message else TypeError, match=message):
        call()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--source", "every"], "give --positions N (and --first I)"),
        (["--source", "random"], "--positions N: a random census needs a number of positions"),
        (["--positions", "2", "--first", str(2**63)], "--first must be between"),
        (["--positions", "2", "--first", str(2**63 - 2)], "first + n must be at most"),
        (["--source", "every", "--deck", "JQ--", "--positions", "13"], "has 12 deals"),
        (["--source", "every", "--deck", "JQZ"], "--deck: unknown symbol 'Z'"),
        (["--source", "every", "--deck", "JQ--", "--resume"], "--resume needs --out"),
    ],
)
def test_the_census_command_refuses_in_one_line_naming_its_flags(args, words, capsys):
    from beggar_env import cli

    assert cli.main(["cycles", "census", "--no-progress", *args]) == 2
    err = without_notice(capsys.readouterr().err).splitlines()
    assert len(err) == 1 and words in err[0], err


# ------------------------------------------------------------ the census's file

SMALL_DECK = "JJQQK" + "-" * 7  # 23,760 deals: two compiled calls on one thread


def test_a_census_writes_its_file_and_refuses_to_replace_it(tmp_path):
    path = tmp_path / "c.json"
    got = census.census(2, "every", deck=SMALL_DECK, out=path, threads=1)
    record = records.read_census(path)
    assert census.Census.from_record(record) == got == census.census(2, "every", deck=SMALL_DECK)
    assert record["complete"] and record["done"] is None and record["games"] == 23_760
    before = path.read_bytes()
    with pytest.raises(ValueError, match="exists: continue an unfinished census"):
        census.census(2, "every", deck=SMALL_DECK, out=path)
    with pytest.raises(ValueError, match="is complete: nothing to continue"):
        census.census(2, "every", deck=SMALL_DECK, out=path, resume=True)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_an_interrupted_census_keeps_what_it_played_and_resumes_to_the_whole(tmp_path):
    path = tmp_path / "c.json"

    def stop(done, n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        census.census(2, "random", deck=SMALL_DECK, n=40_000, seed=7, threads=1, out=path, progress=stop)
    record = records.read_census(path)
    assert not record["complete"] and record["done"] == record["games"] == census.CHUNK
    with pytest.raises(ValueError, match="other settings: positions"):
        census.census(2, "random", deck=SMALL_DECK, n=40_001, seed=7, out=path, resume=True)
    with pytest.raises(ValueError, match="other settings: seed"):
        census.census(2, "random", deck=SMALL_DECK, n=40_000, seed=8, out=path, resume=True)
    resumed = census.census(2, "random", deck=SMALL_DECK, n=40_000, out=path, resume=True, threads=1)
    whole = census.census(2, "random", deck=SMALL_DECK, n=40_000, seed=7)
    assert resumed == whole and resumed.seed == 7 and records.read_census(path)["complete"]


def a_partial_record(tmp_path):
    """An unfinished census's file (the first 16,384 positions of ``SMALL_DECK``), its path."""
    parts = []
    keep = lambda part, done: parts.append(copy.deepcopy(part))  # noqa: E731
    census.census(2, "every", deck=SMALL_DECK, n=20_000, threads=1, partial=keep)
    record = parts[0].record(dict(players=2, source="every", deck=SMALL_DECK, first=0, positions=None), 16_384)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(record))
    return path, record


def test_a_resumed_census_is_the_whole_and_a_second_writer_is_refused(tmp_path):
    path, _ = a_partial_record(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from beggar_env import files\n"
         "with files.exclusive(sys.argv[1]):\n print('held', flush=True); input()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        before = path.read_bytes()
        with pytest.raises(beggar_env.files.InUse, match="is being written by another run"):
            census.census(2, "every", deck=SMALL_DECK, out=path, resume=True)
        assert path.read_bytes() == before
    finally:
        holder.communicate("\n", timeout=60)
    got = census.census(2, "every", deck=SMALL_DECK, out=path, resume=True)
    assert got == census.census(2, "every", deck=SMALL_DECK) and records.read_census(path)["complete"]


def mutations():
    """Ways to spoil an unfinished census's record, and the words that name what is wrong."""
    yield lambda r: r.update(done=True), "True is not of type 'integer', 'null'"
    yield lambda r: r.update(done=-1), "$.done"
    yield lambda r: r.update(done=r["done"] + 1), "done (16,385) must equal games (16,384)"
    yield lambda r: r.update(complete=True), "complete is True but done is 16384"
    yield lambda r: r.update(games="many"), "$.games"
    yield lambda r: r.update(ended=r["ended"] + 1), "add up to no games"
    yield lambda r: r.pop("longest"), "'longest' is a required property"
    yield lambda r: r["longest"].update(index=-2), "$.longest.index"
    yield lambda r: r.update(cycles={}), "$.cycles"
    yield lambda r: r.update(cycles=[{"key": "J/Z", "cards": 1, "tricks": 1, "reached": 1}]), "$.cycles[0].key"
    yield lambda r: r.update(kind="beggar-cycles-grow"), "$.kind"
    yield lambda r: r.update(seed=2**64), "$.seed"
    yield lambda r: r.update(players=2.0), "$.players"
    yield lambda r: r.update(seconds=float("nan")), "cannot be read as JSON"
    # what a resume trusts (issue 36): the range, the cycles, the longest game, the clock
    beyond = 23_761  # SMALL_DECK has 23,760 deals
    yield lambda r: r.update(done=beyond, games=beyond, ended=r["ended"] + beyond - 16_384), "at most its 23,760"
    yield lambda r: r.update(positions=100), "games (16,384) must be at most its 100 positions"
    yield lambda r: r.update(done=None, complete=True), "a complete census plays all its 23,760 positions, not 16,384"
    yield lambda r: r.update(first=23_000, positions=1_000), "run past the 23,760 positions of its source"
    yield lambda r: r.update(seconds=10**11), "$.seconds"
    yield (
        lambda r: r["cycles"].append(r["cycles"][0]) or r.update(ended=r["ended"] - r["cycles"][0]["reached"]),
        ("cycles[3]: the cycle '--J-/Q-K-Q-J-' is listed twice"),
    )
    yield lambda r: r["longest"].update(index=16_384), "longest: index 16,384 is not one of the positions played"
    yield lambda r: r["longest"].update(tricks=0), "longest: 96 cards in 0 tricks is no game"
    yield lambda r: r.update(ended=0, cycles=[{**r["cycles"][0], "reached": 16_384}]), "no game ended, so its index"
    yield lambda r: r["cycles"][0].update(cards=10**30), "$.cycles[0].cards"
    yield lambda r: r["cycles"][0].update(key="--J-/Q-K-/Q-J-"), "is no position of 2 players"
    yield lambda r: r["cycles"][0].update(key="--J-/Q-K-Q-JA"), "does not hold the deck's cards"

    # A file of before the work units (no manifest): its cycles are replayed from their keys.
    def older(change):
        return lambda r: (r.pop("manifest", None), change(r))

    yield (
        older(lambda r: r["cycles"][0].update(key="JJQQK-/------")),
        "is no cycle of 34 cards, 6 tricks: its game ends",
    )
    yield older(lambda r: r["cycles"][0].update(key="-Q-K-Q-J-/--J")), "its game reaches the cycle --J-/Q-K-Q-J-"
    yield older(lambda r: r["cycles"][0].update(cards=36)), "is no cycle of 36 cards, 6 tricks: its period is 34 cards"
    # With a manifest, its units' never-ending games must give the cycles listed.
    yield lambda r: r["cycles"][0].update(cards=36), "its units' never-ending games do not give the cycles listed"
    yield lambda r: r.update(deck="JJJJJQQK----"), "more than the standard deck's 4"


@pytest.mark.parametrize("spoil, words", list(mutations()))
def test_a_spoilt_file_is_refused_in_one_line_naming_what_is_wrong(tmp_path, spoil, words, capsys):
    from beggar_env import cli

    path, record = a_partial_record(tmp_path)
    spoil(record)
    path.write_text(json.dumps(record))
    before = path.read_bytes()
    with pytest.raises(ValueError, match=re.escape(words)):
        census.census(2, "every", deck=SMALL_DECK, out=path, resume=True)
    status = cli.main(["cycles", "census", "--source", "every", "--deck", SMALL_DECK, "--out", str(path), "--resume"])
    err = without_notice(capsys.readouterr().err).splitlines()
    assert status == 2 and len(err) == 1 and words in err[0], err
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_a_census_file_timed_beyond_a_float_is_refused_and_none_is_ever_written(tmp_path):
    path, record = a_partial_record(tmp_path)
    path.write_text(json.dumps({**record, "seconds": 0.5}).replace('"seconds": 0.5', '"seconds": 1e400'))
    with pytest.raises(ValueError, match="1e400 is beyond the range of a float"):
        census.census(2, "every", deck=SMALL_DECK, out=path, resume=True)


@pytest.mark.slow
def test_every_cycle_of_every_published_census_is_the_one_its_key_reaches_of_its_period():
    published = [path for path in (REPO / "docs" / "cycles").glob("*.json") if "census" in path.read_text()[:80]]
    assert len(published) > 20
    for path in published:
        census.check_cycles_played(path, records.read_census(path))  # what a resume checks


# ------------------------------------------- cycles by key and by set of positions


def absolute_positions(hands, events):
    """Every trick-start position of a reference game as the hands in seat order and the
    leader's seat (no turning), rebuilt from the reference's events."""
    hands, pile = [list(hand) for hand in hands], []
    seen = [(tuple(map(tuple, hands)), 0)]
    for event in events:
        if event[0] == "play":
            pile.append(hands[event[1]].pop(0))
        else:
            hands[event[1]].extend(pile)
            pile.clear()
            seen.append((tuple(map(tuple, hands)), event[1]))
    return seen


def seats_turned(position, turn):
    hands, leader = position
    return hands[-turn:] + hands[:-turn] if turn else hands, (leader + turn) % len(hands)


def brute_force_cycles_by_positions(deck, n_players):
    """Per cycle key, the cycles (frozen sets of absolute positions) that every deal's game
    reaches, played by the reference, and those with their seat-turned copies (list operations)."""
    reached = {}
    for order in arrangements([deck.count(s) for s in "-JQKA"]):
        hands = dealt(order, n_players)
        events = []
        result = play_reference(hands, events=events)
        if result["outcome"] == "cycle":
            cycle = frozenset(absolute_positions(hands, events)[result["cycle_start_tricks"] :])
            reached.setdefault(reference_cycle_key(hands, result, events), set()).add(cycle)
    named = {
        key: {frozenset(seats_turned(p, turn) for p in cycle) for cycle in cycles for turn in range(n_players)}
        for key, cycles in reached.items()
    }
    return reached, named


@pytest.mark.parametrize(
    "deck, players, by_key, by_positions, reached_by_positions",
    [
        ("JJKK" + "-" * 7, 2, 2, 3, 3),
        ("JJKK" + "-" * 7, 3, 3, 9, 7),
        ("JJKK" + "-" * 7, 4, 4, 14, 10),
        ("JJ" + "-" * 7, 4, 3, 10, 7),
        ("JJ----", 3, 1, 3, 1),
    ],
)
def test_seatings_count_a_keys_cycles_by_set_of_positions_as_a_brute_force_does(
    deck, players, by_key, by_positions, reached_by_positions
):
    """A key names one to n_players cycles as sets of absolute positions (its seat-turned
    copies); ``seatings`` counts them as the reference's games, turned by list operations,
    do. The deals need not reach every copy."""
    reached, named = brute_force_cycles_by_positions(deck, players)
    got = census.census(players, "every", deck=deck, threads=1)
    assert set(got.cycles) == set(named)
    assert {key: census.seatings(key) for key in got.cycles} == {key: len(cycles) for key, cycles in named.items()}
    assert (len(named), sum(map(len, named.values()))) == (by_key, by_positions)
    assert all(reached[key] <= named[key] for key in reached)
    assert sum(map(len, reached.values())) == reached_by_positions


def deals_reaching_each_seating(key, n_players):
    """How many deals (seat 0 leading, hands of the dealt sizes) reach each of a key's
    cycles as sets of absolute positions, by backward play: the whole in-tree of the key's
    cycle, its dealt positions counted by leader (a seat-turned copy's deals are the
    positions led from the other seat)."""
    import numpy as np

    cycle, _ = reconstruct.cycle_positions(key)
    want = reconstruct.dealt_sizes(len(cycle[0][0]), n_players)
    on_cycle = {(c.tobytes(), tuple(s), int(seat)) for c, s, seat in cycle}
    level = tuple(np.array(column) for column in zip(*cycle))
    by_leader = [0] * n_players
    first = True
    while len(level[0]):
        for cards, sizes, leader in zip(*level):
            if [sizes[(leader + k) % n_players] for k in range(n_players)] == list(want):
                by_leader[leader] += 1
        level = reconstruct._expand(level)
        if first:
            level, first = reconstruct._off_cycle(level, on_cycle), False
    return [by_leader[-turn % n_players] for turn in range(census.seatings(key))]


@pytest.mark.parametrize(
    "name, by_key, by_positions, splits",
    [
        ("every-2x-8-2p", 168, 316, {}),
        ("every-2x-10-2p", 82, 144, {}),
        ("every-2x-16-2p", 1, 2, {"-----------Q-AJ-/KAQ-K-J-": [17, 19]}),
        ("every-2x-20-2p", 1, 2, {"--------Q-A--KA--K-J-/Q----J-": [23, 23]}),
    ],
)
def test_the_published_cycles_by_set_of_positions_are_each_reached_by_the_deals(name, by_key, by_positions, splits):
    """docs/cycles.md's counts by key and by set of positions; walked back whole, each cycle
    as a set of positions holds deals, and a key's copies together hold the deals the census
    found reaching it (24 cards: 17 and 19 of the 36; 28 cards: 23 and 23 of the 46)."""
    record = json.loads((REPO / "docs" / "cycles" / f"{name}.json").read_text())  # written before "done" was
    reached = {cycle["key"]: deals_reaching_each_seating(cycle["key"], record["players"]) for cycle in record["cycles"]}
    assert (len(reached), sum(map(len, reached.values()))) == (by_key, by_positions)
    assert {key: sorted(reached[key]) for key in splits} == splits
    assert {cycle["key"]: sum(reached[cycle["key"]]) for cycle in record["cycles"]} == {
        cycle["key"]: cycle["reached"] for cycle in record["cycles"]
    }
    assert all(all(counts) for counts in reached.values())


def test_seatings_refuses_a_position_off_a_cycle_and_the_census_prints_both_counts(capsys):
    from beggar_env import cli

    assert census.seatings(census.cycle_of(CASELLA).key) == 2
    with pytest.raises(ValueError, match="not on the cycle"):
        census.seatings(CASELLA)  # it enters its cycle after 34 cards
    with pytest.raises(ValueError, match="its game ends"):
        census.seatings("-A/--")
    deck = "JJKK" + "-" * 7
    assert cli.main(["cycles", "census", "--source", "every", "--deck", deck, "--players", "3", "--no-progress"]) == 0
    assert "distinct cycles: 3 by key (9 by set of positions); by period: " in capsys.readouterr().out


def test_every_published_census_file_reads_as_a_complete_census():
    """Censuses written before they could be continued have no done nor complete: complete."""
    paths = sorted((REPO / "docs" / "cycles").glob("every-*.json")) + sorted(
        (REPO / "docs" / "cycles").glob("random-*")
    )
    assert len(paths) > 20
    for path in paths:
        record = records.read_census(path)
        assert record["complete"] and record["done"] is None, path
        assert census.Census.from_record(record).games == record["games"]

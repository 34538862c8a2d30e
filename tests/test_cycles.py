"""The cycle census and the balanced never-ending deals.

The census of every deal of small decks is checked against a brute force written here:
every arrangement made by plain recursion, every game played by the independent reference
(``tests/reference.py``), its cycle's positions rebuilt from the reference's events, and
the canonical key taken as ``docs/cycles.md`` defines it. The deals ``docs/cycles.md``
publishes (``docs/cycles-deals.tsv``) are replayed into their cycles."""

import csv
import itertools
import json
from pathlib import Path

import pytest
from conftest import beggar
from reference import play_reference

import beggar_env
from beggar_env.search import census, reconstruct

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
    assert games == census.arrangements(deck) and cycles


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
    standard = sorted(beggar_env.parse_deal(census.STANDARD_DECK + "/").classes())
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

"""The census's walk (``beggar_env.cycles.walk``): every deal stepped from the one before,
against every deal unranked from its index and played with cycle detection from its first
card (``walk.ranked``, the census's way before the walk), position by position; a published
census made again, to the file; and the plain C census of ``benchmarks/c_census`` against
the project's on the same range."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from beggar_env import core, deals
from beggar_env.cycles import census, positions, units, walk
from beggar_env.cycles.cycle_keys import key_text

REPO = Path(__file__).resolve().parents[1]
C_CENSUS = REPO / "benchmarks" / "c_census" / "census.c"


def walked(deck, players, first, n, threads_rows=4):
    """Per position of the ``every`` source: (cards, tricks, period cards, period tricks, key) by the walk."""
    counts = deals.deck_counts(deck)
    (prefix, rest, local, m), *more = positions.blocks(counts, first, n)
    assert not more and m == n
    n_cards = int(sum(counts))
    work = core.new_work(threads_rows, players, core.capacity_for(n_cards))
    results = core.new_results(threads_rows, players)
    keys = np.zeros((n, n_cards + players - 1), np.int8)
    periods = np.zeros((n, 2), np.int64)
    stats = np.zeros((threads_rows, 5), np.int64)
    stats[:, walk.STAT_INDEX] = -1
    hashes = np.zeros(threads_rows, np.uint64)
    lengths = np.zeros((threads_rows, walk.LENGTH_BUCKETS), np.int64)
    each = np.zeros((n, 2), np.int64)
    walk.walk(1, np.uint64(0), prefix, rest, local, np.uint64(first - local), n, work, results, keys, periods, stats,
              hashes, lengths, each)  # fmt: skip
    rows = [_row(each[i], periods[i], keys[i]) for i in range(n)]
    return rows, stats, int(hashes.sum()), lengths.sum(axis=0)


def ranked(deck, players, first, n):
    """The same, each position unranked from its index and played with cycle detection from the start."""
    counts = deals.deck_counts(deck)
    (prefix, rest, local, _), *_ = positions.blocks(counts, first, n)
    n_cards = int(sum(counts))
    work = core.new_work(4, players, core.capacity_for(n_cards))
    results = core.new_results(4, players)
    keys = np.zeros((n, n_cards + players - 1), np.int8)
    periods = np.zeros((n, 2), np.int64)
    each = np.zeros((n, 2), np.int64)
    indices = np.arange(local, local + n, dtype=np.int64)
    walk.ranked(1, np.uint64(0), prefix, rest, indices, work, results, keys, periods, each)
    return [_row(each[i], periods[i], keys[i]) for i in range(n)]


def _row(each, period, key):
    cycled = period[1] != 0
    return (int(each[0]), int(each[1]), int(period[0]), int(period[1]), key_text(key) if cycled else None)


@pytest.mark.parametrize(
    "deck, players, first, n",
    [
        ("JJKK" + "-" * 7, 2, 0, 1980),  # every deal, two cycles
        ("JJKK" + "-" * 7, 3, 0, 1980),
        ("JJQQK" + "-" * 7, 4, 0, 23_760),
        ("JJQQKKAA--------", 2, 20_000_000, 30_000),  # 16 cards: never-ending deals among them
        ("JJQQKKAA------------", 2, 137_660_000, 30_000),  # 20 cards: the longest game, deal 137,674,713
        ("JJQQKKAA--------------", 2, 344_120_000, 30_000),  # 22 cards: the longest, deal 344,132,502
        ("JJQQKKAA--------------", 2, 805_820_400 - 20_000, 20_000),  # the last deals
    ],
)
def test_the_walk_plays_every_position_as_the_unranking_census_did(deck, players, first, n):
    rows, stats, total, lengths = walked(deck, players, first, n)
    assert rows == ranked(deck, players, first, n)
    ended = [r for r in rows if r[4] is None]
    assert stats[:, walk.STAT_GAMES].sum() == n and stats[:, walk.STAT_ENDED].sum() == len(ended)
    assert total % 2**64 == sum(units.hash_term(first + i, r[0]) for i, r in enumerate(rows)) % 2**64
    assert list(lengths[: max(r[0] for r in ended).bit_length() + 1]) == [
        sum(1 for r in ended if r[0].bit_length() == b) for b in range(max(r[0] for r in ended).bit_length() + 1)
    ]


def test_the_longest_games_of_the_published_20_and_22_card_censuses_are_walked_to():
    published = (("JJQQKKAA------------", 137_674_713, 459), ("JJQQKKAA--------------", 344_132_502, 543))
    for deck, index, cards in published:
        got = census.census(2, "every", deck=deck, first=index - 5000, n=10_000, threads=2)
        assert (got.longest_index, got.longest_cards) == (index, cards)


def test_the_next_arrangement_is_the_next_deal_in_census_order():
    counts = deals.deck_counts("JJQK---")
    cards, left = np.zeros(7, np.int8), np.zeros(5, np.int64)
    positions.arrangement(np.array(counts, np.int64), 0, cards, 0, left)
    total = deals.count_deals(counts)
    for index in range(1, total):
        assert walk.next_arrangement(cards, 0) >= 0
        expected = np.zeros(7, np.int8)
        positions.arrangement(np.array(counts, np.int64), index, expected, 0, left)
        assert list(cards) == list(expected)
    assert walk.next_arrangement(cards, 0) == -1 and list(cards) == list(expected)


def test_the_compiled_hash_term_is_the_documented_one():
    for index, cards in ((0, 0), (1, 52), (2**40 + 3, 1257), (2**64 - 1, 8344)):
        assert int(walk.hash_term(np.uint64(index), cards)) == units.hash_term(index, cards)
    assert units.mix64(0) == 0 and units.mix64(1) == int(core.mix64(np.uint64(1)))


def test_a_published_census_made_again_is_the_file():
    """``every-2x-4-2p.json`` (1,247,400 deals) made again by the walk: the same census."""
    path = REPO / "docs" / "cycles" / "every-2x-4-2p.json"
    published = json.loads(path.read_text())
    again = census.census(2, "every", deck=published["deck"]).record(
        {name: published[name] for name in ("players", "source", "deck", "first", "positions")}
    )
    for name in ("games", "ended", "longest", "cycles"):
        assert again[name] == published[name], name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["every-2x-8-2p", "every-2x-10-2p"])
def test_the_published_censuses_with_cycles_made_again_are_their_files(name):
    """16 and 18 cards (32 and 110 million deals; 168 and 82 cycles): a minute or more."""
    published = json.loads((REPO / "docs" / "cycles" / f"{name}.json").read_text())
    again = census.census(2, "every", deck=published["deck"])
    record = again.record({k: published[k] for k in ("players", "source", "deck", "first", "positions")})
    for field in ("games", "ended", "longest", "cycles"):
        assert record[field] == published[field], field


def c_census(tmp_path, *args):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc) on PATH")
    program = tmp_path / "census"
    subprocess.run([compiler, "-O2", "-o", str(program), str(C_CENSUS)], check=True, capture_output=True)
    out = subprocess.run([str(program), *map(str, args)], check=True, capture_output=True, text=True).stdout
    games, ended, cards, tricks, index, _ = out.split()
    return int(games), int(ended), int(cards), int(tricks), int(index)


@pytest.mark.parametrize(
    "deck, players, first, n",
    [
        ("JJQQKKAA--------", 2, 20_000_000, 30_000),
        ("JJQQKKAA--------------------", 2, 2_634_100_000, 30_000),  # 28 cards: its longest game, 1,257 cards
        ("JJQQK" + "-" * 7, 3, 0, 23_760),
    ],
)
def test_the_plain_c_census_agrees_with_the_project(tmp_path, deck, players, first, n):
    got = census.census(players, "every", deck=deck, first=first, n=n, threads=1)
    assert c_census(tmp_path, deck, players, first, n) == (
        got.games, got.ended, got.longest_cards, got.longest_tricks, got.longest_index
    )  # fmt: skip

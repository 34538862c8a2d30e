"""Deal indices (``beggar_env.deals.deal_index`` / ``deal_at``, ``beggar play --index``):
the public 52-card census's own test vectors (``tests/data/camicia-indices.tsv``, copied
from FraSanga/camicia), a plain enumeration of small decks in both orders, the census's
compiled numbering, round trips of any deck, and refusals in one line."""

import csv
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import without_notice
from hypothesis import given
from hypothesis import strategies as st

from beggar_env import cli, deals
from beggar_env.cycles import positions

REPO = Path(__file__).resolve().parents[1]
VECTORS = REPO / "tests" / "data" / "camicia-indices.tsv"


def camicia_vectors():
    lines = [line for line in VECTORS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


@pytest.mark.parametrize("row", camicia_vectors(), ids=lambda row: row["description"])
def test_the_public_censuss_own_vectors_both_ways(row):
    assert deals.deal_at(int(row["index"])) == deals.parse_deal(row["deal"])
    assert deals.deal_index(row["deal"]) == int(row["index"])


def test_the_vectors_file_holds_the_public_censuss_eleven_rows():
    assert len(camicia_vectors()) == 11


@pytest.mark.parametrize("order", sorted(deals.ORDERS))
@pytest.mark.parametrize("deck, players", [("JQK--", 2), ("JJA---", 3), ("AKQ-", 4), ("JQ-", 2)])
def test_small_decks_are_numbered_as_a_plain_sort_of_every_arrangement(deck, players, order):
    rank = {symbol: i for i, symbol in enumerate(deals.ORDERS[order])}
    rows = sorted(set(itertools.permutations(deck)), key=lambda row: [rank[s] for s in row])
    sizes = deals.dealt_sizes(len(deck), players)
    for index, row in enumerate(rows):
        text, hands, at = "".join(row), [], 0
        for size in sizes:
            hands.append(text[at : at + size])
            at += size
        deal = deals.parse_deal("/".join(hands))
        assert deals.deal_at(index, deck, players, order) == deal
        assert deals.deal_index(deal, order) == index
    with pytest.raises(ValueError, match="index must be between 0 and"):
        deals.deal_at(len(rows), deck, players, order)


def test_the_census_order_is_the_cycle_censuss_own_numbering():
    deck = "JJQQKA" + "-" * 10
    counts = deals.deck_counts(deck)
    row, left = np.empty(len(deck), np.int8), np.empty(len(counts), np.int64)
    for index in np.random.default_rng(1).integers(0, deals.count_deals(counts), 200):
        positions.arrangement(counts, int(index), row, 0, left)
        assert deals.deal_at(int(index), deck, 2, "census").classes().tolist() == row.tolist()


@given(st.integers(0, deals.count_deals(deals.deck_counts(deals.STANDARD_DECK)) - 1), st.sampled_from([2, 3, 4]))
def test_every_index_of_the_standard_deck_comes_back(index, players):
    for order in deals.ORDERS:
        deal = deals.deal_at(index, n_players=players, order=order)
        assert deal.n_cards == 52 and deals.deal_index(deal, order) == index


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: deals.deal_at(-1), ValueError, "index must be between 0 and 653,534,134,886,878,244,999"),
        (lambda: deals.deal_at(653534134886878245000), ValueError, "not 653534134886878245000"),
        (lambda: deals.deal_at(1.0), TypeError, "index must be an int"),
        (lambda: deals.deal_at(0, order="sideways"), ValueError, "order must be one of 'camicia', 'census'"),
        (lambda: deals.deal_at(0, deck="JQZ"), ValueError, "unknown symbol 'Z'"),
        (lambda: deals.deal_index("-A/-Q--"), ValueError, "hold 2/4 cards; an index numbers the deals dealt as a game"),
        (lambda: deals.deal_at(10**5000), ValueError, "index must be between .* not a number of about 5,000 digits"),
        (
            lambda: deals.deal_at(-(10**1000)),
            ValueError,
            r"index must be .*, not -1000000000000000000\.\.\.00000 \(1,001",
        ),
        (lambda: deals.deal_at(0, deck=""), ValueError, "deck must have at least 2 cards, not 0"),
        (lambda: deals.deal_at(0, deck="JJJJJ"), ValueError, "deck: 5 'J' in 'JJJJJ', more than the standard deck's 4"),
        (lambda: deals.deal_at(0, deck="-" * 37), ValueError, "deck: 37 numerals in"),
    ],
)
def test_bad_indices_are_refused_naming_what_is_wrong(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_beggar_play_index_plays_the_deal_it_numbers(capsys):
    kleber = next(row for row in camicia_vectors() if row["description"] == "Kleber 1999")
    assert cli.main(["play", "--index", kleber["index"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"deal {int(kleber['index']):,} (camicia order): {kleber['deal']}"
    assert out[1] == "seat 0 wins after 5790 cards and 805 tricks"
    census_index = deals.deal_index(kleber["deal"], "census")
    assert cli.main(["play", "--index", str(census_index), "--order", "census"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == out[1]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--index", "653534134886878245000"], "--index must be between 0 and 653,534,134,886,878,244,999"),
        (["--index", "-1"], "must be >= 0, not -1"),
        (["--index", "1e3"], "not a whole number"),
        (["--index", "3", "-A/-Q"], "give a deal or --index N, not both"),
        (["-A/-Q", "--deck", "JQ"], "--deck is for --index"),
        (["--index", "0", "--deck", "JQX"], "--deck: unknown symbol"),
        (["--index", "0", "--order", "field"], "invalid choice: 'field'"),
        (["--index", "1", "--deck", ""], "--deck: must have at least 2 cards, not 0"),  # not the 52-card deck
        (["--index", "1", "--deck", "--"], "--index must be between 0 and 0, not 1"),  # '--' has one deal
        (["--index", "1", "--deck=--"], "--index must be between 0 and 0, not 1"),
        (["--index", "0", "--deck", "JJJJJ"], "--deck: 5 'J' in 'JJJJJ', more than the standard deck's 4"),
        (["--index", "0", "--players", " 3"], "--players: must be 2, 3 or 4, not ' 3'"),
        (["--index", "1" * 5000], "not a number of at most 4,300 digits: '1111111111"),
        (["--index", "1" * 4000], "not 11111111111111111111...11111 (4,000 digits)"),
    ],
)
def test_beggar_play_refuses_a_bad_index_in_one_line(args, words, capsys):
    assert cli.main(["play", *args]) == 2
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and words in err[0] and len(err[0]) < 200 and "--deal" not in err[0], err


def test_the_deck_dash_dash_is_the_two_numerals_it_names(capsys):
    for args in (["--deck", "--"], ["--deck=--"]):
        assert cli.main(["play", "--index", "0", *args, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["deal"] == str(deals.deal_at(0, "--")) == "-/-"
    from beggar_env.cli import commands

    for mode in (["census", "--source", "every"], ["grow", "--deal", "-A/-Q"]):
        assert commands.parse_args(["cycles", *mode, "--deck", "--", "--players", "3"]).deck == "--"


@pytest.mark.parametrize("deck", ["", "--JJJJJ", "AAAAAAAA--", "-" * 37, "JQX"])
def test_one_rule_for_a_deck_in_every_command_and_the_api(deck, capsys):
    from beggar_env.cycles import census, insertion

    with pytest.raises(ValueError) as refused:
        deals.deck_counts(deck)
    words = str(refused.value).removeprefix("deck: ").removeprefix("deck ")
    for call in (
        lambda: deals.deal_at(0, deck),
        lambda: census.census(2, "every", deck=deck),
        lambda: insertion.explore(["-A/-Q"], deck=deck),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            call()
    for args in (["play", "--index", "0"], ["cycles", "census", "--source", "every"], ["cycles", "grow"]):
        assert cli.main([*args, "--deck", deck]) == 2
        err = without_notice(capsys.readouterr().err).strip().splitlines()
        assert len(err) == 1 and f"--deck: {words}" in err[0], (args, err)


def test_the_published_table_of_record_indices_is_the_scripts():
    """docs/cli.md's table of the record deals' indices is what examples/deal_indices.py prints."""
    run = subprocess.run(
        [sys.executable, str(REPO / "examples" / "deal_indices.py")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout.strip()
    assert table.count("\n") >= 5 and table in (REPO / "docs" / "cli.md").read_text(encoding="utf-8")

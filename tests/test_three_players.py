"""Three-player deals that never end: found by the census of every deal, confirmed by the
independent reference, and found again from the other side by backward play from the
two-player cycles seated at a three-player table (``studies/three_player_deals.py``)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from reference import play_reference

from beggar_env import deals
from beggar_env.cycles import census

REPO = Path(__file__).resolve().parents[1]
DECK_16 = "JJQQKKAA--------"  # two of each court card and 8 numerals


def hands_of(deal):
    """A deal's hands as lists of classes, as the reference takes them."""
    sizes, classes = deal.hand_sizes, deal.classes().tolist()
    bounds = [sum(sizes[:p]) for p in range(len(sizes) + 1)]
    return [classes[bounds[p] : bounds[p + 1]] for p in range(len(sizes))]


def test_three_player_deals_of_16_cards_that_never_end_are_confirmed_by_the_reference():
    """A range of the census around the first one docs/cycles.md names: every deal the census
    says never ends, the reference plays into a cycle too, one seat empty; every other ends."""
    first, n = 720_000, 2_000
    found = census.census(3, "every", deck=DECK_16, first=first, n=n, threads=1)
    never = found.games - found.ended
    assert found.games == n and never > 0
    cycling = 0
    for index in range(first, first + n):
        result = play_reference(hands_of(deals.deal_at(index, DECK_16, 3, order="census")))
        if result["outcome"] == "cycle":
            cycling += 1
            assert 0 in result["hand_sizes"], (index, result)
    assert cycling == never


@pytest.mark.slow
def test_backward_play_from_two_player_cycles_finds_every_three_player_deal_the_census_finds(tmp_path):
    """Every deal of the 16-card deck for three players, by the census (15,744 never end),
    and the study's backward walks from the 168 cycles of the two-player census: the same
    cycles, each reached by the same number of deals."""
    out = census.census(3, "every", deck=DECK_16, out=tmp_path / "every-2x-8-3p.json", threads=2)
    assert out.games - out.ended > 0
    study = REPO / "studies" / "three_player_deals.py"
    args = ["--out", str(tmp_path / "backward.json"), "--compare", str(tmp_path / "every-2x-8-3p.json")]
    run = subprocess.run([sys.executable, str(study), *args], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    deck = json.loads((tmp_path / "backward.json").read_text())["decks"]["16"]
    assert deck["complete"] and deck["two_player_cycles"] == 168
    assert deck["compared"]["same_cycles_and_counts"] and deck["deals"] == out.games - out.ended

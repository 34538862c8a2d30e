"""Backward play (``beggar_env.search.backward``): every predecessor plays forward, in the
engine, to its position; and on small decks the predecessors are exactly those a brute
force over every position of the deck finds (play each one trick forward, invert the map)."""

import itertools
import random

import numpy as np
import pytest

import beggar_env
from beggar_env.search import backward


def key(position):
    deal, leader = position
    return beggar_env.format_deal(deal, "compact"), leader


def positions_of_game(deal):
    """Every trick-start position of a game, from its deal (seat 0 leads) to its end or first repeat."""
    positions = [(beggar_env.parse_deal(deal), 0)]
    seen = {key(positions[0])}
    while True:
        deal, leader = positions[-1]
        if max(deal.hand_sizes) == deal.n_cards:
            return positions
        after = backward.play_trick(deal, leader)
        if key(after) in seen:
            return positions
        seen.add(key(after))
        positions.append(after)


def check_predecessors_reach(position):
    """Every predecessor of ``position`` plays forward, in the engine, to it; return how many."""
    found = backward.predecessors(*position)
    assert len({key(p) for p in found}) == len(found), "a predecessor is listed twice"
    for before in found:
        assert key(backward.play_trick(*before)) == key(position), (before, position)
    return len(found)


def test_every_predecessor_in_the_record_games_plays_forward_to_its_position(vectors):
    records = [v for v in vectors if v["name"].split()[-1].isdigit() or "Casella" in v["name"]]
    assert len(records) >= 5
    for vector in records:
        positions = positions_of_game(vector["deal"])
        for earlier, later in itertools.pairwise(positions):
            assert key(earlier) in {key(p) for p in backward.predecessors(*later)}, (vector["name"], later)
        assert sum(check_predecessors_reach(p) for p in positions) >= len(positions) - 1


@pytest.mark.parametrize("players", [2, 3, 4])
def test_every_predecessor_in_random_games_plays_forward_to_its_position(players):
    for deal in beggar_env.random_deals(4, players, seed=players):
        positions = positions_of_game(deal)[:150]
        for earlier, later in itertools.pairwise(positions):
            assert key(earlier) in {key(p) for p in backward.predecessors(*later)}
        for position in positions:
            check_predecessors_reach(position)


# ------------------------------------------------------------ the brute force on small decks


def all_positions(deck, n_players):
    """Every position of a deck (a string of compact symbols): every arrangement, every
    split into ``n_players`` hands, every leader holding cards, with two hands or more holding
    cards, and every won position (one hand holds all; it leads)."""
    for order in sorted(set(itertools.permutations(deck))):
        for cuts in itertools.combinations_with_replacement(range(len(deck) + 1), n_players - 1):
            bounds = (0, *cuts, len(deck))
            hands = ["".join(order[a:b]) for a, b in itertools.pairwise(bounds)]
            deal = beggar_env.parse_deal("/".join(hands))
            holders = [seat for seat, hand in enumerate(hands) if hand]
            for leader in holders:
                yield deal, leader


def brute_force_predecessors(deck, n_players):
    """position -> set of positions that reach it after one trick, by playing every
    position of the deck one trick forward in the engine."""
    inverse = {}
    for deal, leader in all_positions(deck, n_players):
        if max(deal.hand_sizes) == deal.n_cards:
            continue  # the game is over: no trick is played from here
        after = backward.play_trick(deal, leader)
        inverse.setdefault(key(after), set()).add(key((deal, leader)))
    return inverse


@pytest.mark.parametrize("deck, players", [("JQKA--", 2), ("JQ-K---", 2), ("JK---", 3), ("JQ--", 4), ("JJQ--", 3)])
def test_predecessors_are_exactly_those_of_a_brute_force_over_every_position(deck, players):
    inverse = brute_force_predecessors(deck, players)
    checked = with_some = 0
    for position in all_positions(deck, players):
        expected = inverse.get(key(position), set())
        got = {key(p) for p in backward.predecessors(*position)}
        assert got == expected, (key(position), sorted(got ^ expected))
        checked += 1
        with_some += bool(expected)
    assert with_some > 10 and checked > with_some


def test_batch_counts_match_the_one_position_call():
    rng = random.Random(5)
    rows = []
    for deal in beggar_env.random_deals(50, 2, seed=3):
        positions = positions_of_game(deal)
        rows.append(positions[rng.randrange(len(positions))])
    cards = np.array([p[0].classes() for p in rows])
    sizes = np.array([p[0].hand_sizes for p in rows])
    leaders = np.array([p[1] for p in rows])
    got = backward.counts(cards, sizes, leaders)
    assert list(got) == [len(backward.predecessors(*p)) for p in rows]


@pytest.mark.parametrize(
    "deal, leader, error, message",
    [
        ("-A/--", 2, ValueError, "leader must be between 0 and 1"),
        ("-A/--", "0", TypeError, "leader must be an int"),
        ("/--", 0, ValueError, "seat 0 holds no cards"),
        ("-A/-X", 0, ValueError, "unknown symbol"),
        (5, 0, TypeError, "a deal must be a string or a Deal"),
    ],
)
def test_bad_positions_are_refused_naming_what_is_wrong(deal, leader, error, message):
    with pytest.raises(error, match=message):
        backward.predecessors(deal, leader)
    with pytest.raises(error, match=message):
        backward.play_trick(deal, leader)


def test_a_won_position_has_no_trick_to_play():
    with pytest.raises(ValueError, match="one seat holds every card"):
        backward.play_trick("--A/", 0)

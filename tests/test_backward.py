"""Backward play (``beggar_env.cycles.backward``): every predecessor plays forward, in the
engine, to its position; and on small decks the predecessors are exactly those a brute
force over every position of the deck finds (play each one trick forward, invert the map)."""

import itertools
import random

import numpy as np
import pytest

import beggar_env
from beggar_env.cycles import backward


def key(position):
    deal, leader = position
    return beggar_env.format_deal(deal, "compact"), leader


def array_key(cards, sizes, leader):
    return bytes(cards.astype(np.int8)), tuple(int(n) for n in sizes), int(leader)


def positions_of_game(deal):
    """Every trick-start position of a game as engine arrays, from its deal (seat 0 leads)
    to its end or its first repeat, played by the engine."""
    deal = beggar_env.parse_deal(deal)
    cards, sizes = deal.classes(), np.array(deal.hand_sizes, np.int32)
    state = backward.new_scratch_state(len(sizes), len(cards))
    positions, seen, leader = [], set(), 0
    while array_key(cards, sizes, leader) not in seen:
        positions.append((cards, sizes, leader))
        seen.add(array_key(cards, sizes, leader))
        if sizes.max() == len(cards):
            break
        after_cards, after_sizes = np.empty_like(cards), np.empty_like(sizes)
        leader = backward.trick_after(state, cards, sizes, leader, after_cards, after_sizes)
        cards, sizes = after_cards, after_sizes
    return positions


def check_predecessors_reach(position, state):
    """Every predecessor of ``position`` (arrays) plays forward, in the engine, to it;
    return the keys of the predecessors."""
    found = backward.predecessor_arrays(*position)
    keys = {array_key(*row) for row in zip(*found)}
    assert len(keys) == len(found[0]), "a predecessor is listed twice"
    for cards, sizes, leader in zip(*found):
        after_cards, after_sizes = np.empty_like(cards), np.empty_like(sizes)
        after = backward.trick_after(state, cards, sizes, leader, after_cards, after_sizes)
        assert array_key(after_cards, after_sizes, after) == array_key(*position), (cards, sizes, leader)
    return keys


def check_game(deal, max_positions=None):
    """Every position's predecessors play forward to it, and each position's own
    predecessor in the game is among them; return how many positions were checked."""
    positions = positions_of_game(deal)[:max_positions]
    state = backward.new_scratch_state(len(positions[0][1]), len(positions[0][0]))
    before = None
    for position in positions:
        keys = check_predecessors_reach(position, state)
        if before is not None:
            assert array_key(*before) in keys, (deal, position)
        before = position
    return len(positions)


@pytest.mark.slow
def test_every_predecessor_in_the_record_games_plays_forward_to_its_position(vectors):
    records = [v for v in vectors if v["name"].split()[-1].isdigit() or "Casella" in v["name"]]
    assert len(records) >= 5
    assert (
        sum(check_game(vector["deal"]) for vector in records) > 3800
    )  # every trick of the records, and Casella's cycle


@pytest.mark.parametrize("players", [2, 3, pytest.param(4, marks=pytest.mark.slow)])
def test_every_predecessor_in_random_games_plays_forward_to_its_position(players):
    assert sum(check_game(deal, 400) for deal in beggar_env.random_deals(20, players, seed=players)) > 20 * 20


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


@pytest.mark.slow
def test_batch_counts_match_the_one_position_call():
    rng = random.Random(5)
    rows = []
    for deal in beggar_env.random_deals(200, 2, seed=3):
        positions = positions_of_game(deal)
        rows.append(positions[rng.randrange(len(positions))])
    cards, sizes, leaders = (np.array(column) for column in zip(*rows))
    got = backward.counts(cards, sizes, leaders)
    assert list(got) == [len(backward.predecessor_arrays(*p)[0]) for p in rows]
    assert 0 < got.sum()


def plain_replay_count(cards, sizes, leader):
    """Predecessors counted by the plain replay alone: every suffix length and first
    player through ``backward._replays``, without the tail filter or the one-pass marking."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    owner, stack, _ = backward._scratch(len(cards))
    empty = np.empty((0, len(cards)), np.int8), np.empty((0, len(sizes)), np.int32), np.empty(0, np.int32)
    found = 0
    for length in range(1, int(sizes[leader]) + 1):
        for first in range(len(sizes)):
            found = backward._replays(cards, starts, sizes, leader, length, first, owner, stack, *empty, found)
    return found


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_fast_paths_count_what_the_plain_replay_counts(players):
    """The tail filter (a hand that took a payment ends in a court card and its honour in
    numerals) and the one-pass marking used when every other seat holds cards against the
    replay of every suffix from every first player, on positions of random games and
    random positions of any split."""
    from beggar_env import deals
    from beggar_env.cycles import positions

    rows = []
    for deal in beggar_env.random_deals(30, players, seed=11):
        rows += positions_of_game(deal)[::3]
    deck = np.repeat(np.arange(5, dtype=np.int8), deals.deck_counts(deals.STANDARD_DECK))
    cards, sizes = np.empty((3000, 52), np.int8), np.empty((3000, players), np.int32)
    positions.random_positions(np.uint64(4), deck, 0, cards, sizes)
    rows += [(c, s, 0) for c, s in zip(cards, sizes)]
    got = backward.counts(*(np.array(column) for column in zip(*rows)))
    want = [plain_replay_count(*row) for row in rows]
    assert list(got) == want
    assert sum(want) > 100 and want.count(0) > 100


def test_the_tail_filter():
    tail = lambda hand: backward.payment_tail(beggar_env.parse_deal(hand + "/-").classes(), 0, len(hand))  # noqa: E731
    assert [tail(h) for h in ("K---", "AJ-", "-Q--", "J-", "A----", "--", "-", "--J", "Q-")] == [
        4,
        2,
        3,
        2,
        5,
        0,
        0,
        0,
        0,
    ]


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

"""The engine against the independent reference (tests/reference.py) on many deals.

Standard shuffled decks for 2, 3 and 4 players (fixed seeds), and small non-standard
compact deals (empty hands included), which end in cycles and eliminations often; with
and without agreed limits; `play` and `simulate` (explicit deals and seeded streams,
one thread and two) must agree with the reference on every field.
"""

import random
from collections import Counter

import numba
import numpy as np
import pytest
from conftest import hands_of, record_dict, result_dict
from reference import play_reference

import beggar_env
from beggar_env import core, parse_deal
from beggar_env.game import new_game

SYMBOLS = "-JQKA"
MAX_SMALL_CARDS = 16  # small deals: many, quickly


def compact(hands):
    return "/".join("".join(SYMBOLS[c] for c in hand) for hand in hands)


def random_small_hands(rng, n_players, max_hand):
    """Random hands of card classes, at most four of each court card, not all empty.

    Half the deals are uniform (sizes 0..max_hand, a numeral share that varies from deal
    to deal); the other half are "balanced": equal hands of 3 to 8 cards with one or two
    court cards each, mostly jacks, which end in cycles far more often; sometimes
    one hand is emptied, so that a seat is out at once and the others play on.
    """
    max_hand = min(max_hand, MAX_SMALL_CARDS // n_players)
    if rng.random() < 0.5:
        while True:
            sizes = [rng.randint(0, max_hand) for _ in range(n_players)]
            if rng.random() < 0.15:  # an empty hand more often than chance gives
                sizes[rng.randrange(n_players)] = 0
            if sum(sizes):
                break
        numeral_share = rng.uniform(0.2, 0.85)
        courts_left = {1: 4, 2: 4, 3: 4, 4: 4}
        hands = []
        for size in sizes:
            hand = []
            for _ in range(size):
                available = [c for c, left in courts_left.items() if left]
                if not available or rng.random() < numeral_share:
                    hand.append(0)
                else:
                    c = rng.choice(available)
                    courts_left[c] -= 1
                    hand.append(c)
            hands.append(hand)
        return hands
    size = rng.choice({2: (3, 6, 8), 3: (4, 5), 4: (3, 4)}[n_players])
    per_hand = 1 if rng.random() < 0.8 else 2
    deck_courts = [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    jacks_first = rng.random() < 0.6
    hands = []
    for _ in range(n_players):
        hand = [0] * size
        for position in rng.sample(range(size), per_hand):
            if jacks_first and 1 in deck_courts:
                c = 1
            else:
                c = rng.choice(deck_courts)
            deck_courts.remove(c)
            hand[position] = c
        hands.append(hand)
    if n_players > 2 and rng.random() < 0.2:
        hands[rng.randrange(n_players)] = []
    return hands


def random_limits(rng, scale):
    """max_cards/max_tricks for one game: often none, sometimes tiny, sometimes near `scale`."""
    kind = rng.random()
    limits = {}
    if kind < 0.35:
        return limits
    if kind < 0.7:
        limits["max_cards"] = rng.choice([0, 1, 2, 3, rng.randint(0, 2 * scale)])
    if kind >= 0.55:
        limits["max_tricks"] = rng.choice([0, 1, 2, rng.randint(0, max(1, scale // 6))])
    return limits


def assert_same(got, expected, context):
    assert got == expected, f"{context}\n engine:    {got}\n reference: {expected}"


def check_batch(deals, records, limits=None):
    limits = limits or {}
    for deal, record in zip(deals, records):
        expected = play_reference(hands_of(deal), **limits)
        assert_same(record_dict(record), expected, f"simulate deal {beggar_env.format_deal(deal)!r} {limits}")


# ------------------------------------------------------------ standard decks


STANDARD = [(2, 4000, 20240601), (3, 2500, 7), (4, 2500, 1999)]


@pytest.mark.parametrize("n_players,n_games,seed", STANDARD)
def test_standard_deals_no_limit(n_players, n_games, seed):
    deals = beggar_env.random_deals(n_games, n_players, seed)
    assert all(d.n_players == n_players and d.n_cards == 52 for d in deals)
    records = beggar_env.simulate(deals, threads=1)
    check_batch(deals, records)
    # The seeded stream plays exactly the same games.
    streamed = beggar_env.simulate(n_games, n_players=n_players, seed=seed, threads=1)
    assert [record_dict(r) for r in streamed] == [record_dict(r) for r in records]
    # And so does `play`, one game at a time.
    for deal, record in zip(deals[:150], records):
        assert result_dict(beggar_env.play(deal)) == record_dict(record)


@pytest.mark.parametrize("n_players,n_games,seed", STANDARD)
@pytest.mark.parametrize(
    "limits",
    [
        dict(max_cards=0),
        dict(max_cards=1),
        dict(max_cards=7),
        dict(max_cards=120),
        dict(max_cards=400),
        dict(max_tricks=0),
        dict(max_tricks=1),
        dict(max_tricks=15),
        dict(max_cards=300, max_tricks=30),
    ],
    ids=lambda limits: ",".join(f"{k}={v}" for k, v in limits.items()),
)
def test_standard_deals_with_limits(n_players, n_games, seed, limits):
    n_games = min(n_games, 300)
    deals = beggar_env.random_deals(n_games, n_players, seed)
    records = beggar_env.simulate(n_games, n_players=n_players, seed=seed, threads=1, **limits)
    check_batch(deals, records, limits)


def test_standard_deals_play_with_random_limits():
    rng = random.Random(31337)
    for n_players in (2, 3, 4):
        for deal in beggar_env.random_deals(150, n_players, seed=n_players * 1000 + 1):
            limits = random_limits(rng, 300)
            got = result_dict(beggar_env.play(deal, **limits))
            assert_same(got, play_reference(hands_of(deal), **limits), f"play {deal} {limits}")


# ------------------------------------------------------- small odd deals


def small_deals(seed, n_players, n_games, max_hand):
    rng = random.Random(seed)
    return [compact(random_small_hands(rng, n_players, max_hand)) for _ in range(n_games)]


SMALL = [
    (2, 1500, 4, 101),
    (3, 1500, 4, 102),
    (4, 1500, 3, 103),
    (2, 600, 8, 104),
    (3, 600, 5, 105),
    (4, 600, 4, 106),
]


@pytest.mark.parametrize("n_players,n_games,max_hand,seed", SMALL)
def test_small_deals(n_players, n_games, max_hand, seed):
    texts = small_deals(seed, n_players, n_games, max_hand)
    deals = [beggar_env.parse_deal(t) for t in texts]
    assert [beggar_env.format_deal(d) for d in deals] == texts
    records = beggar_env.simulate(deals, threads=1)
    outcomes = Counter()
    for text, deal, record in zip(texts, deals, records):
        expected = play_reference(hands_of(text))
        assert_same(record_dict(record), expected, f"simulate {text!r}")
        outcomes[expected["outcome"]] += 1
    # `play` agrees too (one game at a time: a different entry into the engine).
    for text, record in zip(texts[:300], records):
        assert result_dict(beggar_env.play(text)) == record_dict(record), text
    # These deals must exercise the paths they are here for.
    assert outcomes["cycle"] >= 5, outcomes
    assert outcomes["win"] >= n_games // 10, outcomes


@pytest.mark.parametrize("n_players,n_games,max_hand,seed", SMALL)
def test_small_deals_with_limits(n_players, n_games, max_hand, seed):
    texts = small_deals(seed + 1000, n_players, n_games, max_hand)
    rng = random.Random(seed)
    outcomes = Counter()
    for text in texts:
        limits = random_limits(rng, 4 * max_hand * n_players)
        expected = play_reference(hands_of(text), **limits)
        assert_same(result_dict(beggar_env.play(text, **limits)), expected, f"play {text!r} {limits}")
        outcomes[expected["outcome"], expected["winner"] is None] += 1
    assert outcomes["limit", True] > 0 and outcomes["limit", False] > 0, outcomes  # draws and wins
    # Batch limits through simulate.
    deals = [beggar_env.parse_deal(t) for t in texts[:400]]
    for limits in (dict(max_cards=0), dict(max_cards=5), dict(max_cards=40), dict(max_tricks=3), dict(max_tricks=12)):
        check_batch(deals, beggar_env.simulate(deals, threads=1, **limits), limits)


def cycling_deals(seed, n_players, count):
    """`count` small deals that the reference says never end (rejection sampling)."""
    rng = random.Random(seed)
    found = []
    while len(found) < count:
        hands = random_small_hands(rng, n_players, 6)
        if play_reference(hands)["outcome"] == "cycle":
            found.append(hands)
    return found


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_cycles_and_limits_around_them(n_players):
    """Deals that never end: the cycle figures agree, and a limit at, just before and
    just after the first repeat decides between "cycle" and "limit" as the conventions say."""
    found = cycling_deals(4000 + n_players, n_players, 250)
    texts = [compact(hands) for hands in found]
    records = beggar_env.simulate(texts, threads=1)
    for hands, text, record in zip(found, texts, records):
        assert_same(record_dict(record), play_reference(hands), f"simulate {text!r}")
    if n_players > 2:
        assert any(not hand for hands in found for hand in hands)  # a seat out from the start
    for hands, text in zip(found[:120], texts):
        free = play_reference(hands)
        c, t = free["cards"], free["tricks"]
        cases = [
            (dict(max_cards=c), "cycle"),
            (dict(max_cards=c + 1), "cycle"),
            (dict(max_cards=c - 1), "limit"),
            (dict(max_tricks=t), "cycle"),
            (dict(max_tricks=t - 1), "limit"),
            (dict(max_cards=c, max_tricks=t), "cycle"),
            (dict(max_cards=free["cycle_start_cards"]), "limit"),
        ]
        for limits, outcome in cases:
            expected = play_reference(hands, **limits)
            assert expected["outcome"] == outcome, (text, limits, expected)
            assert_same(result_dict(beggar_env.play(text, **limits)), expected, f"play {text!r} {limits}")
        assert result_dict(beggar_env.play(text, max_cards=c)) == free


def _eliminated_mid_game(text):
    """Seats that held cards at the start and were out at the end (the engine, stepped
    card by card: its `alive` flags), for a deal that ends in a win."""
    states = new_game(text)
    while states["status"][0] == core.Outcome.RUNNING:
        core.step_card(states[0])
    dealt = parse_deal(text).hand_sizes
    return [seat for seat, alive in enumerate(states["alive"][0]) if not alive and dealt[seat]]


def test_eliminations_are_exercised():
    """3- and 4-player small deals agree with the reference, and many of them really do
    eliminate players mid-game (counted from the engine's state, not assumed)."""
    rng = random.Random(555)
    with_eliminations = 0
    for _ in range(1500):
        n_players = rng.choice((3, 4))
        hands = random_small_hands(rng, n_players, 5)
        text = compact(hands)
        expected = play_reference(hands)
        assert_same(result_dict(beggar_env.play(text)), expected, text)
        if expected["outcome"] == "win" and _eliminated_mid_game(text):
            with_eliminations += 1
    assert with_eliminations > 100, with_eliminations


# Worked by hand from docs/RULES.md and the conventions (independent of both implementations):
# deal, limits, (outcome, winner, cards, tricks, hand_sizes).
WORKED = [
    ("J//-", {}, ("win", 0, 2, 1, (2, 0, 0))),  # seat 1 must pay with no cards: out, seat 2 pays
    ("A/-/", {}, ("win", 0, 2, 1, (2, 0, 0))),  # seats 1 and 2 run out paying: seat 0 is left, takes the pile
    ("/--/-", {}, ("win", 1, 3, 1, (0, 3, 0))),  # seat 0 is out before the first card
    ("//-/-", {}, ("win", 3, 2, 1, (0, 0, 0, 2))),
    ("K/--/-", {}, ("win", 0, 4, 1, (4, 0, 0))),  # seat 1 out mid-payment: seat 2 owes the rest
    ("-K/-/--", {}, ("win", 0, 5, 1, (5, 0, 0))),
    ("K-/-/----", {}, ("win", 0, 8, 2, (7, 0, 0))),
    ("Q-/-/-/", {}, ("win", 0, 3, 1, (4, 0, 0, 0))),
    ("-/-/-/-", {}, ("win", 3, 4, 1, (0, 0, 0, 4))),
    ("J/J/J/J", {}, ("win", 3, 4, 1, (0, 0, 0, 4))),
    ("A/J/Q/K", {}, ("win", 3, 4, 1, (0, 0, 0, 4))),
    ("AAAA/KKKK/QQQQ/JJJJ", {}, ("win", 3, 16, 1, (0, 0, 0, 16))),
    ("J--/-J-", dict(max_cards=7), ("limit", 1, 7, 2, (1, 3))),
    ("J--/-J-", dict(max_cards=8), ("cycle", None, 8, 3, (4, 2))),
    ("J--/-J-", dict(max_tricks=2), ("limit", 1, 5, 2, (2, 4))),
    ("--------/--------", dict(max_cards=8), ("limit", None, 8, 0, (4, 4))),
    ("----/----", dict(max_cards=8), ("win", 1, 8, 1, (0, 8))),  # the win comes within the limit
    ("----/----", dict(max_cards=7), ("limit", 1, 7, 0, (0, 1))),
    ("--/---", dict(max_cards=0), ("limit", 1, 0, 0, (2, 3))),
    ("/--/-", dict(max_cards=0), ("limit", 1, 0, 0, (0, 2, 1))),  # seat 0 already out
    ("/---", dict(max_cards=0), ("win", 1, 0, 0, (0, 3))),  # one holder: won before any limit
    # docs/RULES.md's worked examples: a game whose last elimination or taking falls on
    # exactly the limit's card is a win, not a limit.
    ("-/-", dict(max_cards=2), ("win", 1, 2, 1, (0, 2))),
    ("-/-", dict(max_cards=1), ("limit", 1, 1, 0, (0, 1))),
    ("-A/-----", dict(max_cards=7), ("win", 0, 7, 1, (7, 0))),
    ("-A/-----", dict(max_cards=6), ("limit", 1, 6, 0, (0, 1))),
    ("/--J-/K-J-", {}, ("cycle", None, 16, 4, (0, 4, 4))),  # seat 0 out at once; see the next test
]


def test_with_seat_0_empty_cycle_counting_starts_after_it_is_out():
    # docs/RULES.md: the three-player deal with seat 0 empty cycles exactly as the
    # two-player "king loop" --J-/K-J- does, its cycle starting after 0 cards, 0 tricks.
    three, two = beggar_env.play("/--J-/K-J-"), beggar_env.play("--J-/K-J-")
    figures = ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks", "cards", "tricks")
    assert [getattr(three, name) for name in figures] == [0, 0, 16, 4, 16, 4]
    assert [getattr(two, name) for name in figures] == [0, 0, 16, 4, 16, 4]
    assert result_dict(three) == play_reference(hands_of("/--J-/K-J-"))


@pytest.mark.parametrize("text,limits,expected", WORKED, ids=[f"{text} {limits}" for text, limits, _ in WORKED])
def test_worked_examples(text, limits, expected):
    keys = ("outcome", "winner", "cards", "tricks", "hand_sizes")
    ref = play_reference(hands_of(text), **limits)
    assert tuple(ref[k] for k in keys) == expected, "reference"
    got = result_dict(beggar_env.play(text, **limits))
    assert tuple(got[k] for k in keys) == expected, "engine"
    assert got == ref


def test_edge_cases_under_many_limits():
    texts = [t for t, _, _ in WORKED] + ["-/-", "/-", "-/", "J/J", "-J/--", "A//", "-/-/-", "----J/---/--/-"]
    for text in texts:
        free = play_reference(hands_of(text))
        for max_cards in range(free["cards"] + 2):
            for limits in (dict(max_cards=max_cards), dict(max_tricks=max_cards // 3)):
                expected = play_reference(hands_of(text), **limits)
                assert_same(result_dict(beggar_env.play(text, **limits)), expected, f"{text!r} {limits}")


def test_one_holder_has_already_won():
    for text, seat in (("/---", 1), ("--//", 0), ("///JQ", 3), ("/A/", 1)):
        for limits in ({}, dict(max_cards=0), dict(max_tricks=0)):
            got = result_dict(beggar_env.play(text, **limits))
            assert got["outcome"] == "win" and got["winner"] == seat, (text, limits, got)
            assert got["cards"] == got["tricks"] == 0
            assert got == play_reference(hands_of(text), **limits)


def test_detect_cycles_off_with_a_limit():
    """Without cycle detection a limit must stop every game; games that do not cycle
    come out the same as with detection."""
    deals = [beggar_env.parse_deal(t) for t in small_deals(77, 2, 400, 4)]
    limit = 500
    records = beggar_env.simulate(deals, threads=1, max_cards=limit, detect_cycles=False)
    cycles = 0
    for deal, record in zip(deals, records):
        expected = play_reference(hands_of(deal), max_cards=limit)
        got = record_dict(record)
        if expected["outcome"] == "cycle":
            cycles += 1
            assert got["outcome"] == "limit" and got["cards"] == limit, deal
            assert [got[f] for f in ("cycle_start_cards", "cycle_cards")] == [None, None]
        else:
            assert_same(got, expected, str(deal))
    assert cycles > 0


# ---------------------------------------------------------------- threads


needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba may use only one thread here")


def _same_records(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    for name in a.dtype.names:
        assert np.array_equal(a[name], b[name]), name


@needs_two_threads
@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_threads_identical_seeded(n_players):
    one = beggar_env.simulate(20000, n_players=n_players, seed=424242 + n_players, threads=1)
    two = beggar_env.simulate(20000, n_players=n_players, seed=424242 + n_players, threads=2)
    _same_records(one, two)
    limited1 = beggar_env.simulate(5000, n_players=n_players, seed=9, threads=1, max_cards=150)
    limited2 = beggar_env.simulate(5000, n_players=n_players, seed=9, threads=2, max_cards=150)
    _same_records(limited1, limited2)


@needs_two_threads
def test_threads_identical_explicit_deals():
    for n_players in (2, 3, 4):
        deals = small_deals(900 + n_players, n_players, 3000, 6)
        _same_records(beggar_env.simulate(deals, threads=1), beggar_env.simulate(deals, threads=2))


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_simulate_matches_play(n_players):
    seed = 8675309 + n_players
    records = beggar_env.simulate(400, n_players=n_players, seed=seed)
    deals = beggar_env.random_deals(400, n_players, seed)
    for deal, record in zip(deals, records):
        assert record_dict(record) == result_dict(beggar_env.play(deal)), str(deal)
    # Game i of a longer stream is game i of a shorter one.
    longer = beggar_env.simulate(600, n_players=n_players, seed=seed)
    _same_records(longer[:400], records)


def test_simulate_outcome_codes():
    assert beggar_env.OUTCOMES == ("running", "win", "cycle", "limit")
    records = beggar_env.simulate(["J--/-J-", "-/-", "--------/--------"], max_cards=8)
    assert isinstance(records, np.recarray)
    assert [beggar_env.OUTCOMES[o] for o in records.outcome] == ["cycle", "win", "limit"]
    assert list(records.winner) == [-1, 1, -1]
    assert list(records.cycle_start_cards) == [2, -1, -1]

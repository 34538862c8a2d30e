"""Properties of the engine and of the deal notations, with hypothesis.

Cards are conserved card by card; runs are deterministic; notations round-trip; bad
input is refused with the right exception and a message that says where; random deals
are standard decks dealt as docs/RULES.md says.
"""

import random
from collections import Counter

import numpy as np
import pytest
from conftest import hands_of, result_dict
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import play_reference

import beggar_env
from beggar_env import Deal, core, format_deal, parse_deal
from beggar_env.game import new_game

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SYMBOLS = "-JQKA"
RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUITS = "CDHS"
SUIT_SYMBOLS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
ALT_SUIT_SYMBOLS = {"C": "♧", "D": "♢", "H": "♡", "S": "♤"}
MAX_CARDS = 16  # small deals: many examples, quickly


# ------------------------------------------------------------------ strategies


@st.composite
def class_hands(draw, max_total=MAX_CARDS):
    """2 to 4 hands of card classes (at most four of each court card), not all empty."""
    n_players = draw(st.integers(2, 4))
    numeral_weight = draw(st.integers(1, 4))
    pool = [0] * (numeral_weight * 4) + [1, 2, 3, 4]
    cards = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_total))
    counts = Counter(cards)
    assume(all(counts[c] <= 4 for c in (1, 2, 3, 4)))
    cuts = sorted(draw(st.lists(st.integers(0, len(cards)), min_size=n_players - 1, max_size=n_players - 1)))
    bounds = [0, *cuts, len(cards)]
    return [cards[bounds[i] : bounds[i + 1]] for i in range(n_players)]


def compact(hands):
    return "/".join("".join(SYMBOLS[c] for c in hand) for hand in hands)


@st.composite
def limits(draw):
    out = {}
    if draw(st.booleans()):
        out["max_cards"] = draw(st.integers(0, 120))
    if draw(st.integers(0, 3)) == 0:
        out["max_tricks"] = draw(st.integers(0, 20))
    return out


@st.composite
def rank_deals(draw):
    """A Deal in rank notation: suited cards (distinct), unsuited ranks, or a mix,
    never more than four of a rank; 2 to 4 hands, empty hands allowed, not all empty."""
    n_players = draw(st.integers(2, 4))
    suited = draw(st.lists(st.sampled_from([r + s for r in RANKS for s in SUITS]), unique=True, max_size=20))
    unsuited = draw(st.lists(st.sampled_from(RANKS), max_size=10))
    tokens = suited + unsuited
    assume(tokens)
    per_rank = Counter(token.rstrip(SUITS) for token in tokens)
    assume(max(per_rank.values()) <= 4)
    tokens = draw(st.permutations(tokens))
    cuts = sorted(draw(st.lists(st.integers(0, len(tokens)), min_size=n_players - 1, max_size=n_players - 1)))
    bounds = [0, *cuts, len(tokens)]
    return Deal(tuple(tuple(tokens[bounds[i] : bounds[i + 1]]) for i in range(n_players)))


# ----------------------------------------------------------- conservation


def _state(states):
    """The fields of the game record (record 0) as plain Python values."""
    return {
        name: (states[name][0].tolist() if np.ndim(states[name][0]) else int(states[name][0]))
        for name in (
            "hands",
            "head",
            "held",
            "pile",
            "pile_len",
            "status",
            "winner",
            "cards",
            "tricks",
            "n_cards",
            "turn",
        )
    }


def _classes_in_play(s):
    """Every card class in the hands (read from the ring buffers) and the pile."""
    capacity = len(s["pile"])
    counts = Counter()
    for seat, held in enumerate(s["held"]):
        for k in range(held):
            counts[s["hands"][seat][(s["head"][seat] + k) % capacity]] += 1
    counts.update(s["pile"][: s["pile_len"]])
    return counts


@SETTINGS
@given(hands=class_hands(), limit=st.integers(0, 400))
def test_cards_are_conserved_card_by_card(hands, limit):
    text = compact(hands)
    n_cards = sum(len(hand) for hand in hands)
    dealt = Counter(c for hand in hands for c in hand)
    states = new_game(text, max_cards=limit)
    s = _state(states)
    assert s["n_cards"] == n_cards
    assert s["cards"] == 0 and s["tricks"] == 0
    steps = 0
    while True:
        assert all(held >= 0 for held in s["held"]), s["held"]
        assert 0 <= s["pile_len"] <= s["cards"]
        assert sum(s["held"]) + s["pile_len"] == n_cards
        assert _classes_in_play(s) == dealt
        assert 0 <= s["turn"] < len(hands)
        if s["status"] != core.Outcome.RUNNING:
            break
        before = s
        core.step_card(states[0])
        s = _state(states)
        steps += 1
        assert s["cards"] == before["cards"] + 1  # one card per step
        assert s["tricks"] in (before["tricks"], before["tricks"] + 1)
        assert steps <= limit
    # How it stopped.
    assert s["status"] in (core.Outcome.WIN, core.Outcome.LIMIT)
    if s["status"] == core.Outcome.WIN:
        assert s["held"][s["winner"]] == n_cards and s["pile_len"] == 0
    else:
        assert s["cards"] == limit
    # Stepping card by card ends where `play` does (no cycle detection, same limit)...
    played = beggar_env.play(text, max_cards=limit, detect_cycles=False)
    assert (played.cards, played.tricks, played.hand_sizes) == (s["cards"], s["tricks"], tuple(s["held"]))
    assert played.outcome == core.OUTCOMES[s["status"]]
    # ... and where the reference does, unless the reference saw a cycle first.
    expected = play_reference(hands, max_cards=limit)
    if expected["outcome"] != "cycle":
        assert result_dict(played) == expected


@SETTINGS
@given(hands=class_hands(), limit=limits())
def test_engine_matches_reference(hands, limit):
    text = compact(hands)
    expected = play_reference(hands, **limit)
    assert result_dict(beggar_env.play(text, **limit)) == expected
    (record,) = beggar_env.simulate([text], threads=1, **limit)
    assert record["cards"] == expected["cards"] and record["tricks"] == expected["tricks"]
    assert tuple(record["hand_sizes"]) == expected["hand_sizes"]


@SETTINGS
@given(hands=class_hands())
def test_trace_conserves_cards(hands):
    deal = Deal.from_classes(hands)
    result = beggar_env.play(deal)
    steps = list(beggar_env.trace(deal))
    taken = [step for step in steps if step["taker"] is not None]
    assert len(taken) == result.tricks
    for step in taken:
        assert sum(step["hand_sizes"]) == deal.n_cards
    if steps:
        assert steps[-1]["cards"] == result.cards
        assert steps[-1]["hand_sizes"] == result.hand_sizes
    else:
        assert result.cards == 0


# ------------------------------------------------------------ determinism


@SETTINGS
@given(hands=class_hands(), limit=limits())
def test_play_is_deterministic(hands, limit):
    text = compact(hands)
    deal = parse_deal(text)
    first = beggar_env.play(text, **limit)
    assert beggar_env.play(text, **limit) == first
    assert beggar_env.play(deal, **limit) == first
    assert beggar_env.play(Deal.from_classes(hands), **limit) == first


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), n_players=st.integers(2, 4))
def test_seeded_runs_are_deterministic(seed, n_players):
    a = beggar_env.simulate(50, n_players=n_players, seed=seed, threads=1)
    b = beggar_env.simulate(50, n_players=n_players, seed=seed)
    for name in a.dtype.names:
        assert np.array_equal(a[name], b[name])
    assert beggar_env.random_deals(5, n_players, seed) == beggar_env.random_deals(5, n_players, seed)
    assert beggar_env.random_deal(n_players, seed) == beggar_env.random_deals(3, n_players, seed)[0]


# --------------------------------------------------------------- notation


@SETTINGS
@given(hands=class_hands(max_total=52))
def test_compact_round_trip(hands):
    text = compact(hands)
    deal = parse_deal(text)
    assert deal.hand_sizes == tuple(len(h) for h in hands)
    assert [int(c) for c in deal.classes()] == [c for h in hands for c in h]
    assert format_deal(deal) == text
    assert parse_deal(format_deal(deal)) == deal
    assert parse_deal(format_deal(deal, "compact")) == deal
    assert parse_deal(format_deal(deal, "ranks")) == deal
    assert parse_deal(text.lower()) == deal
    assert parse_deal(" / ".join(f"  {part} " for part in text.split("/"))) == deal
    assert Deal.from_classes(hands) == deal
    assert str(deal) == text
    assert parse_deal(deal) is deal


@SETTINGS
@given(deal=rank_deals(), symbols=st.sampled_from([None, SUIT_SYMBOLS, ALT_SUIT_SYMBOLS]), commas=st.booleans())
def test_rank_round_trip(deal, symbols, commas):
    text = format_deal(deal)
    assert parse_deal(text) == deal
    assert parse_deal(format_deal(deal, "ranks")) == deal
    assert parse_deal(str(deal)) == deal
    # Suit symbols instead of letters, commas instead of spaces, lower case.
    variant = " / ".join((", " if commas else "  ").join(hand) for hand in deal.hands)
    if symbols:
        variant = "".join(symbols.get(ch, ch) for ch in variant)
    assert parse_deal(variant) == deal
    assert parse_deal(" / ".join(" ".join(hand) for hand in deal.hands).lower()) == deal
    # The compact text of the deal is its classes.
    compact_text = format_deal(deal, "compact")
    assert [int(c) for c in parse_deal(compact_text).classes()] == [int(c) for c in deal.classes()]
    assert parse_deal(compact_text).hand_sizes == deal.hand_sizes


def test_round_trip_of_random_deals():
    for n_players in (2, 3, 4):
        for deal in beggar_env.random_deals(20, n_players, seed=5):
            text = format_deal(deal)
            assert parse_deal(text) == deal
            with_symbols = "".join(SUIT_SYMBOLS.get(ch, ch) for ch in text)
            assert parse_deal(with_symbols) == deal
            assert beggar_env.play(text) == beggar_env.play(format_deal(deal, "compact"))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="-JQKAjqka0123456789CDHSXZ10 ,/♣♥\t", max_size=30))
def test_parse_never_raises_anything_but_value_error(text):
    try:
        deal = parse_deal(text)
    except ValueError:
        return
    assert 2 <= deal.n_players <= 4
    assert deal.n_cards > 0
    assert parse_deal(format_deal(deal)) == deal


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "text, where",
    [
        ("-X/-", "seat 0, card 2"),
        ("--/-J-Z", "seat 1, card 4"),
        ("-/-/--B", "seat 2, card 3"),
        ("2C 3Z / 4D", "seat 0, card 2"),
        ("2C / 4D 11H", "seat 1, card 2"),
        ("2C / 4D / 5H / 1", "seat 3, card 1"),
        ("AS 2C / 3D AS", "seat 1, card 2"),
        ("10H / 2C 10H", "seat 1, card 2"),
        ("A♠ / A♠", "seat 1, card 1"),
        ("A A / A A A", "seat 1, card 3"),
        ("AAA/AA", "seat 1, card 2"),
        ("JJJJJ/-", "seat 0, card 5"),
        ("7C 7D 7H 7S / 7", "seat 1, card 1"),
    ],
)
def test_invalid_deals_name_seat_and_card(text, where):
    with pytest.raises(ValueError) as info:
        parse_deal(text)
    assert where in str(info.value)
    with pytest.raises(ValueError):
        beggar_env.play(text)


def test_duplicate_message_names_both_places():
    with pytest.raises(ValueError, match=r"seat 1, card 2: AS appears twice \(first at seat 0, card 1\)"):
        parse_deal("AS 2C / 3D AS")


@pytest.mark.parametrize("text", ["---", "2C 3D", "-/-/-/-/-", "2/3/4/5/6", "", "-//-//-"])
def test_wrong_number_of_players(text):
    with pytest.raises(ValueError, match="2 to 4 players"):
        parse_deal(text)


@pytest.mark.parametrize("text", ["/", "//", "///", " / ", " , / "])
def test_empty_deal(text):
    with pytest.raises(ValueError):
        parse_deal(text)


def test_invalid_deal_objects():
    with pytest.raises(ValueError, match="seat 1, card 1"):
        Deal((("-",), ("X",)))
    with pytest.raises(ValueError):
        Deal((("-",),))
    with pytest.raises(ValueError):
        Deal(((), ()))
    with pytest.raises(ValueError):
        Deal.from_classes([[4, 4, 4], [4, 4]])
    for bad in (5, -1, 1.0, True):  # -1 must not wrap round to an ace
        with pytest.raises(ValueError, match="seat 0, card 2"):
            Deal.from_classes([[0, bad], [0]])
    with pytest.raises(ValueError, match="'-C'"):
        parse_deal("-C 2H / 3D")


@pytest.mark.parametrize("bad", [123, 1.5, None, b"-/-", ["-", "-"], ("-", "-")])
def test_non_text_deals_raise_type_error(bad):
    with pytest.raises(TypeError):
        parse_deal(bad)
    with pytest.raises(TypeError):
        beggar_env.play(bad)
    with pytest.raises(TypeError):
        format_deal(bad)


def test_simulate_refuses_a_bare_deal():
    with pytest.raises(TypeError):
        beggar_env.simulate("-/-")
    with pytest.raises(TypeError):
        beggar_env.simulate(parse_deal("-/-"))


@pytest.mark.parametrize(
    "value, error",
    [
        (-1, ValueError),
        (-(10**6), ValueError),
        (1.5, TypeError),
        (10.0, TypeError),
        (True, TypeError),
        (False, TypeError),
        ("3", TypeError),
    ],
)
@pytest.mark.parametrize("name", ["max_cards", "max_tricks"])
def test_bad_limits(name, value, error):
    with pytest.raises(error):
        beggar_env.play("-/-", **{name: value})
    with pytest.raises(error):
        beggar_env.simulate(["-/-"], **{name: value})
    with pytest.raises(error):
        beggar_env.simulate(3, **{name: value})


def test_numpy_int_limits_are_ints():
    assert beggar_env.play("----/----", max_cards=np.int64(3)) == beggar_env.play("----/----", max_cards=3)
    assert beggar_env.play("----/----", max_tricks=np.int32(0)).cards == 0


def test_mixed_player_counts_in_one_batch():
    with pytest.raises(ValueError):
        beggar_env.simulate(["-/-", "-/-/-"])


# ------------------------------------------------------------ random deals


STANDARD_DECK = sorted(r + s for r in RANKS for s in SUITS)


def _check_standard(deal, n_players):
    assert deal.n_players == n_players
    assert sorted(t for hand in deal.hands for t in hand) == STANDARD_DECK
    expected = tuple(52 // n_players + (1 if seat < 52 % n_players else 0) for seat in range(n_players))
    assert deal.hand_sizes == expected


def test_random_deal_sizes():
    assert beggar_env.random_deal(2, seed=1).hand_sizes == (26, 26)
    assert beggar_env.random_deal(3, seed=1).hand_sizes == (18, 17, 17)
    assert beggar_env.random_deal(4, seed=1).hand_sizes == (13, 13, 13, 13)
    assert beggar_env.random_deal(3).hand_sizes == (18, 17, 17)
    assert beggar_env.random_deal().n_players == 2


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_random_deal_seeds(n_players):
    # An int seed: reproducible, and different seeds give different deals.
    a = beggar_env.random_deal(n_players, seed=12345)
    _check_standard(a, n_players)
    assert beggar_env.random_deal(n_players, seed=12345) == a
    assert beggar_env.random_deal(n_players, seed=12346) != a
    assert beggar_env.random_deal(n_players, 12345) == a
    assert beggar_env.random_deal(n_players, seed=np.int64(12345)) == a
    # A Generator: reproducible from the generator's seed; it advances.
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    b1, b2 = beggar_env.random_deal(n_players, seed=g1), beggar_env.random_deal(n_players, seed=g2)
    _check_standard(b1, n_players)
    assert b1 == b2
    assert beggar_env.random_deal(n_players, seed=g1) != b1
    # None: fresh entropy each time.
    c1, c2 = beggar_env.random_deal(n_players), beggar_env.random_deal(n_players, seed=None)
    _check_standard(c1, n_players)
    _check_standard(c2, n_players)
    assert c1 != c2


def test_random_deals_deal_one_card_at_a_time_from_seat_0():
    from beggar_env import deals

    for n_players in (2, 3, 4):
        decks = deals.shuffled_decks(10, 99)
        for deck, deal in zip(decks, beggar_env.random_deals(10, n_players, 99)):
            tokens = [RANKS[card // 4] + SUITS[card % 4] for card in deck]
            assert sorted(tokens) == STANDARD_DECK
            for seat in range(n_players):
                assert list(deal.hands[seat]) == tokens[seat::n_players]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(n_players=1), ValueError),
        (dict(n_players=5), ValueError),
        (dict(n_players=2.0), TypeError),
        (dict(n_players=True), TypeError),
        (dict(seed="7"), TypeError),
        (dict(seed=1.5), TypeError),
        (dict(seed=True), TypeError),
        (dict(seed=random.Random(1)), TypeError),
        (dict(seed=-5), ValueError),
        (dict(seed=2**64), ValueError),
    ],
)
def test_random_deal_bad_arguments(kwargs, error):
    with pytest.raises(error):
        beggar_env.random_deal(**kwargs)


def test_reference_engine_independence_smoke():
    """The reference and the engine agree on a few hand-picked deals given as classes."""
    for hands in ([[0], [0]], [[1, 0, 0], [0, 1, 0]], [[], [4], [0, 0, 0, 0]], [[0, 3], [], [], [0, 0, 0]]):
        assert result_dict(beggar_env.play(Deal.from_classes(hands))) == play_reference(hands)
        assert play_reference(hands_of(parse_deal(compact(hands)))) == play_reference(hands)

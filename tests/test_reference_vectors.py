"""Every deal in tests/data/vectors.tsv reproduces exactly, through `play`,
`simulate`, `trace` and the independent reference, with and without a limit."""

from collections import defaultdict

from conftest import (
    CYCLE_FIELDS,
    hands_of,
    record_dict,
    require_vector,
    result_dict,
    vector_expected,
)
from reference import play_reference

import beggar_env


def _fixed(result):
    """The fields of a result dict that vectors.tsv fixes."""
    return {key: result[key] for key in ("outcome", "winner", "cards", "tricks", *CYCLE_FIELDS)}


def _check_end_hands(result, n_cards):
    sizes = result["hand_sizes"]
    assert sum(sizes) <= n_cards
    if result["outcome"] == "win":
        assert sizes[result["winner"]] == n_cards
        assert sum(sizes) == n_cards
    if result["outcome"] == "cycle":
        assert sum(sizes) == n_cards  # a cycle is seen at a trick start: the pile is empty


def test_vectors_file(vectors):
    assert len(vectors) >= 18
    names = {v["name"] for v in vectors}
    assert "Casella 2024 (non-terminating)" in names
    for v in vectors:
        assert v["outcome"] in ("win", "cycle")
        if v["outcome"] == "cycle":
            assert v["winner"] is None
            assert None not in [v[f] for f in CYCLE_FIELDS]
            assert v["cycle_start_cards"] + v["cycle_cards"] == v["cards"]
            assert v["cycle_start_tricks"] + v["cycle_tricks"] == v["tricks"]
        else:
            assert v["winner"] is not None
            assert [v[f] for f in CYCLE_FIELDS] == [None] * 4


def test_play(vector):
    vector = require_vector(vector)
    result = result_dict(beggar_env.play(vector["deal"]))
    assert _fixed(result) == vector_expected(vector)
    _check_end_hands(result, beggar_env.parse_deal(vector["deal"]).n_cards)


def test_reference(vector):
    vector = require_vector(vector)
    result = play_reference(hands_of(vector["deal"]))
    assert _fixed(result) == vector_expected(vector)
    _check_end_hands(result, beggar_env.parse_deal(vector["deal"]).n_cards)


def test_reference_agrees_with_play_on_every_field(vector):
    vector = require_vector(vector)
    assert play_reference(hands_of(vector["deal"])) == result_dict(beggar_env.play(vector["deal"]))


def test_simulate(vectors):
    by_players = defaultdict(list)
    for v in vectors:
        by_players[beggar_env.parse_deal(v["deal"]).n_players].append(v)
    for group in by_players.values():
        for deals in ([v["deal"] for v in group], [beggar_env.parse_deal(v["deal"]) for v in group]):
            records = beggar_env.simulate(deals, threads=1)
            assert len(records) == len(group)
            for v, record in zip(group, records):
                got = record_dict(record)
                assert _fixed(got) == vector_expected(v), v["name"]
                assert got == result_dict(beggar_env.play(v["deal"])), v["name"]


def test_simulate_one_at_a_time(vector):
    vector = require_vector(vector)
    (record,) = beggar_env.simulate([vector["deal"]], threads=1)
    assert _fixed(record_dict(record)) == vector_expected(vector)


def _limits_beyond(vector):
    cards, tricks = vector["cards"], vector["tricks"]
    return [
        dict(max_cards=cards),
        dict(max_cards=cards + 1),
        dict(max_cards=10**9),
        dict(max_tricks=tricks),
        dict(max_tricks=tricks + 1),
        dict(max_cards=cards, max_tricks=tricks),
        dict(max_cards=2**62, max_tricks=2**62),
    ]


def test_limit_larger_than_the_game_changes_nothing(vector):
    vector = require_vector(vector)
    deal = vector["deal"]
    unlimited = result_dict(beggar_env.play(deal))
    for limits in _limits_beyond(vector):
        assert result_dict(beggar_env.play(deal, **limits)) == unlimited, limits
        assert play_reference(hands_of(deal), **limits) == unlimited, limits
        (record,) = beggar_env.simulate([deal], threads=1, **limits)
        assert record_dict(record) == unlimited, limits


def test_limit_inside_the_game_stops_it(vector):
    vector = require_vector(vector)
    deal = vector["deal"]
    n_cards = beggar_env.parse_deal(deal).n_cards
    cards, tricks = vector["cards"], vector["tricks"]
    cases = [dict(max_cards=0), dict(max_tricks=0), dict(max_cards=cards - 1), dict(max_cards=cards // 2)]
    if tricks >= 1:
        cases.append(dict(max_tricks=tricks - 1))
    for limits in cases:
        got = result_dict(beggar_env.play(deal, **limits))
        assert got["outcome"] == "limit", limits
        assert got == play_reference(hands_of(deal), **limits), limits
        (record,) = beggar_env.simulate([deal], threads=1, **limits)
        assert record_dict(record) == got, limits
        assert [got[f] for f in CYCLE_FIELDS] == [None] * 4
        if "max_cards" in limits:
            assert got["cards"] == limits["max_cards"]
            assert got["tricks"] <= tricks
        else:
            assert got["tricks"] == limits["max_tricks"]
            assert got["cards"] < cards
        sizes = got["hand_sizes"]
        assert sum(sizes) <= n_cards
        best = max(sizes)
        if sizes.count(best) == 1:
            assert got["winner"] == sizes.index(best)
        else:
            assert got["winner"] is None
    # max_cards=0 and max_tricks=0 stop before any card: the hands as dealt.
    start = result_dict(beggar_env.play(deal, max_cards=0))
    assert start["cards"] == start["tricks"] == 0
    assert start["hand_sizes"] == beggar_env.parse_deal(deal).hand_sizes


def test_trace(vector):
    vector = require_vector(vector)
    deal = beggar_env.parse_deal(vector["deal"])
    steps = list(beggar_env.trace(deal))
    taken = [step for step in steps if step["taker"] is not None]
    assert len(taken) == vector["tricks"]
    assert [step["trick"] for step in taken] == list(range(1, vector["tricks"] + 1))
    assert steps[-1]["cards"] == vector["cards"]
    assert sum(step["taken"] for step in steps) == vector["cards"]  # every card played is taken once
    for step in taken:
        assert sum(step["hand_sizes"]) == deal.n_cards  # a trick starts from an empty pile
    assert steps[-1]["hand_sizes"] == beggar_env.play(deal).hand_sizes
    if vector["outcome"] == "win":
        assert steps[-1]["taker"] == vector["winner"]

"""observation="counted": what a perfect card-counter knows, checked against an independent
counter (tests/card_counter.py) fed only the public history of the independent reference
(tests/reference.py), over thousands of 2-4 player deals and every reference vector."""

import random
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from card_counter import CardCounter
from conftest import hands_of, require_vector
from reference import play_reference
from test_reference import compact, random_small_hands

import beggar_env
from beggar_env import datasets, task


def counter_views(hands):
    """The counter's (known, unseen, hand sizes) before every card of the deal, and after
    the last, as the env's observations give them one per card step."""
    events = []
    play_reference(hands, events=events)
    composition = [0] * 5
    for card in (card for hand in hands for card in hand):
        composition[card] += 1
    counter = CardCounter([len(hand) for hand in hands], composition)
    views = []

    def snapshot():
        views.append((counter.known(), list(counter.unseen), [len(hand) for hand in counter.hands]))

    snapshot()
    for k, event in enumerate(events):
        counter.see(event)
        if k + 1 == len(events) or events[k + 1][0] == "play":  # a card and the takings it caused
            snapshot()
    return views


def env_views(deal, n_players):
    env = gym.make("Beggar-v0", n_players=n_players, observation="counted")
    obs, info = env.reset(options={"deal": deal})
    views, terminated = [], "outcome" in info  # a game over at its deal: no card is played
    while True:
        views.append((obs["known"].tolist(), obs["unseen"].tolist(), obs["hand_sizes"].tolist()))
        if terminated:
            return views
        obs, _, terminated, _, _ = env.step(0)


def check_deal(deal, n_players):
    hands = hands_of(deal)
    expected, got = counter_views(hands), env_views(deal, n_players)
    assert len(got) == len(expected)
    for k, (mine, theirs) in enumerate(zip(got, expected)):
        assert mine == theirs, f"{deal} after {k} cards"


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_random_deals_match_the_independent_counter(n_players):
    for deal in beggar_env.random_deals(60, n_players, seed=100 + n_players):
        check_deal(deal, n_players)


@pytest.mark.slow
def test_small_deals_with_eliminations_and_cycles_match_the_independent_counter():
    rng = random.Random(7)
    seen = Counter()
    for _ in range(1500):
        n_players = rng.randint(2, 4)
        deal = compact(random_small_hands(rng, n_players, 8))
        seen[beggar_env.play(deal).outcome] += 1
        check_deal(deal, n_players)
    assert seen["cycle"] > 20 and seen["win"] > 500, seen


def test_reference_vectors_match_the_independent_counter(vector):
    vector = require_vector(vector)
    check_deal(vector["deal"], 2)


def test_a_counted_hand_is_its_dealt_cards_unseen_then_the_piles_it_took():
    # Built by hand: -A/----- : seat 0 plays -, seat 1 plays -, seat 0 plays A, seat 1 pays
    # four numerals and seat 0 takes the pile of 7 cards in play order: - - A - - - -.
    views = env_views("-A/-----", 2)
    assert views[0][0][0][:3] == [-2, -2, -1] and views[0][1] == [6, 0, 0, 0, 1]
    assert views[2][1] == [4, 0, 0, 0, 1]  # two numerals seen, the ace not yet
    last_known, last_unseen, _ = views[-1]
    assert last_known[0][:8] == [0, 0, 4, 0, 0, 0, 0, -1] and last_unseen == [0] * 5


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_counted_datasets_and_vector_envs_give_the_same_observations(n_players):
    data = datasets.generate(8, n_players=n_players, observation="counted", samples="card", seed=3)
    layout = task.Layout(n_players, "counted")
    assert data.fields["known"].shape == (len(data), n_players, 52) and data.fields["unseen"].shape == (len(data), 5)
    envs = gym.make_vec("Beggar-v0", num_envs=8, n_players=n_players, observation="counted", autoreset_mode="Disabled")
    obs, _ = envs.reset(options={"deals": [str(d) for d in beggar_env.random_deals(8, n_players, seed=3)]})
    for i in range(8):
        first = data.observations[np.flatnonzero(data.game == i)[0]]
        for name in ("known", "unseen", "hand_sizes"):
            assert np.array_equal(layout.split(first)[name], obs[name][i])
    fresh = data.fields["unseen"][data.fields["cards"] == 0]
    assert (fresh == [36, 4, 4, 4, 4]).all()  # nothing seen before the first card
    assert (data.fields["unseen"].sum(axis=1) == (data.fields["known"] == -2).sum(axis=(1, 2))).all()

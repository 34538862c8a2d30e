"""Card faces ride along with the cards: at every card of random and given games, each
hand's and the pile's faces have the classes the engine holds there, and no face is lost
or doubled; the faces change no game."""

import numpy as np
import pytest

from beggar_env import core, deals, faces


def _play(deal_args, i, n_players, given=None):
    capacity = core.capacity_for(52)
    s = core.new_states(1, n_players, capacity)[0]
    hands, pile = (a[0] for a in faces.new_faces(1, n_players, capacity))
    deck = np.empty(core.DECK_SIZE, np.int64)
    core.deal(s, deal_args, i, core.NO_LIMIT, core.NO_LIMIT, deck)
    faces.deal_into(s, hands, pile, deal_args, given if given is not None else np.zeros((0, 1), np.int8), i, deck)
    return s, hands, pile


def _check(s, hands, pile):
    mask = s["pile"].shape[0] - 1
    seen = []
    for p in range(s["held"].shape[0]):
        for k in range(s["held"][p]):
            slot = (s["head"][p] + k) & mask
            assert core.CLASS_OF_CARD_ID[hands[p, slot]] == s["hands"][p, slot]
            seen.append(int(hands[p, slot]))
    for k in range(s["pile_len"]):
        assert core.CLASS_OF_CARD_ID[pile[k]] == s["pile"][k]
        seen.append(int(pile[k]))
    assert len(seen) == len(set(seen)) == s["n_cards"]


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_faces_follow_the_cards_of_random_games(n_players):
    deal_args = core.shuffled_deals(np.uint64(7))
    for i in range(6):
        s, hands, pile = _play(deal_args, i, n_players)
        reference = core.new_states(1, n_players, s["pile"].shape[0])[0]
        core.deal(reference, deal_args, i, core.NO_LIMIT, core.NO_LIMIT, np.empty(52, np.int64))
        _check(s, hands, pile)
        played = 0
        while s["status"] == core.Outcome.RUNNING and played < 3000:
            card = s["hands"][s["turn"], s["head"][s["turn"]] & (s["pile"].shape[0] - 1)]
            face = faces.step_card(s, hands, pile)
            core.step_card(reference)
            assert core.CLASS_OF_CARD_ID[face] == card
            assert core.same_position(s, reference) and s["status"] == reference["status"]
            _check(s, hands, pile)
            played += 1


def test_random_faces_are_the_shuffled_deck():
    deal_args = core.shuffled_deals(np.uint64(3), 5)
    s, hands, _ = _play(deal_args, 2, 2)
    deck = deals.shuffled_decks(1, 3, 7)[0]
    assert list(hands[0, :26]) == list(deck[0::2]) and list(hands[1, :26]) == list(deck[1::2])


def test_given_faces_keep_named_cards_and_fill_the_rest_by_rank():
    got = faces.deal_faces("10H 7 - K / AS -")
    names = [faces.FACE_NAMES[f] for f in got]
    assert names == ["10H", "7C", "2C", "KC", "AS", "2D"]  # ranked cards first, then numerals in dealing order


@pytest.mark.parametrize(
    ("deal", "message"),
    [("AS AS / K", "AS appears twice"), ("A A A A / A", "fifth A"), ("/".join(["-" * 19, "-" * 18]), "numerals")],
)
def test_given_faces_refuse_what_a_deck_cannot_hold(deal, message):
    with pytest.raises(ValueError, match=message):
        faces.deal_faces(deal)


def test_given_deals_play_with_their_faces():
    deal = deals.random_deal(2, seed=11)
    cards, sizes = deals.pack_deals([deal])
    given = faces.given_faces([faces.deal_faces(deal)], cards.shape[1])
    s, hands, pile = _play(core.given_deals(cards, sizes), 0, 2, given)
    assert [faces.FACE_NAMES[f] for f in hands[0, : sizes[0, 0]]] == list(deal.hands[0])
    while s["status"] == core.Outcome.RUNNING and s["cards"] < 2000:
        faces.step_card(s, hands, pile)
        _check(s, hands, pile)

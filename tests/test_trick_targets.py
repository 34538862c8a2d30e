"""The trick-by-trick targets of the looped model (``forecasting.trick_targets``) against the
engine played a trick at a time with ``core.step_trick`` (card classes only, no faces)."""

import numpy as np
import pytest

from beggar_env import core
from beggar_env.forecasting import trick_targets as tt


def engine_hands(s):
    """Each seat's hand as classes from the top, -1 after the last card (p, 52)."""
    hands, head, held = s["hands"], s["head"], s["held"]
    out = np.full((len(held), tt.N_CARDS), -1, np.int8)
    for p in range(len(held)):
        out[p, : held[p]] = hands[p, (head[p] + np.arange(held[p])) % hands.shape[1]]
    return out


def engine_trajectory(n_players, seed, game):
    """The engine's positions trick by trick (hands, leader), and the winner."""
    s = core.new_states(1, n_players, tt.CAPACITY)[0]
    core.deal(s, core.shuffled_deals(np.uint64(seed), game), 0, core.NO_LIMIT, 5_000, np.empty(52, np.int64))
    rows = [(engine_hands(s), int(s["turn"]))]
    while s["status"] == core.Outcome.RUNNING:
        core.step_trick(s)
        rows.append((engine_hands(s), int(s["winner"] if s["status"] == core.Outcome.WIN else s["turn"])))
    return rows, int(s["winner"])


@pytest.mark.parametrize("n_players", [2, 3])
def test_trajectories_are_the_engines_tricks(n_players):
    traj = tt.game_tricks(6, n_players, seed=11)
    for g in range(6):
        rows, winner = engine_trajectory(n_players, 11, g)
        lo, hi = traj.offsets[g], traj.offsets[g + 1]
        assert hi - lo == len(rows)
        assert traj.winner[g] == winner
        hands = tt.hands_of(traj.seat[lo:hi], traj.depth[lo:hi], n_players)
        for j, (expected, leader) in enumerate(rows):
            np.testing.assert_array_equal(hands[j], expected)
            assert traj.leader[lo + j] == leader


def test_every_card_in_one_place():
    traj = tt.game_tricks(20, 2, seed=3)
    assert (traj.seat >= 0).all() and (traj.depth >= 0).all()
    for row in range(0, len(traj.seat), 7):
        for p in range(2):
            depths = np.sort(traj.depth[row][traj.seat[row] == p])
            np.testing.assert_array_equal(depths, np.arange(len(depths)))  # a queue: 0 .. held - 1


def test_targets_k_tricks_on_and_after_the_end():
    traj = tt.game_tricks(30, 2, seed=5)
    rows, left = tt.trick_starts(traj)
    assert (left >= 1).all()
    t = tt.targets(traj, rows, 6)
    assert t["seat"].shape == (len(rows), 7, 52) and t["over"].shape == (len(rows), 7)
    np.testing.assert_array_equal(t["tricks_left"], left)
    np.testing.assert_array_equal(t["over"], np.arange(7)[None] >= left[:, None])
    np.testing.assert_array_equal(t["seat"][:, 0], traj.seat[rows])
    inside = left > 6
    np.testing.assert_array_equal(t["depth"][inside, 6], traj.depth[rows[inside] + 6])
    ended = t["over"][:, -1]
    assert ended.any()
    assert (t["seat"][ended, -1] == t["winner"][ended, None]).all()  # the winner holds every card
    assert (t["leader"][ended, -1] == t["winner"][ended]).all()


def test_targets_refuse_a_game_end():
    traj = tt.game_tricks(3, 2, seed=5)
    with pytest.raises(ValueError, match="trick start"):
        tt.targets(traj, [traj.offsets[1] - 1], 2)


def test_the_same_for_a_seed():
    a, b = tt.game_tricks(5, 2, seed=8, first=3), tt.game_tricks(5, 2, seed=8, first=3)
    for x, y in zip(a[:5], b[:5], strict=True):
        np.testing.assert_array_equal(x, y)

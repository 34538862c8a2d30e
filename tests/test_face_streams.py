"""The faces stream of engine games, against the engine and against the queue read off the
stream itself: every play after a card's first appearance is the card that followed the
seat's previous card the last time it was played, or, when that ended a trick, the first
card of the next pile the seat took (docs/results.md, "Playing the game forward")."""

import numpy as np
import pytest

from beggar_env import core, game
from beggar_env.forecasting import face_streams as fs


def _games(n, players, seed):
    kind, face, size, offsets = fs.random_games(n, players, seed=seed)
    return [(kind[a:b], face[a:b], size[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


@pytest.mark.parametrize("players", [2, 3])
def test_streams_replay_the_engine(players):
    seed = 21
    for i, (kind, face, size) in enumerate(_games(20, players, seed)):
        states = core.new_states(1, players, core.capacity_for(52))
        s = states[0]
        core.deal(s, core.shuffled_deals(np.uint64(seed)), i, core.NO_LIMIT, core.NO_LIMIT, np.empty(52, np.int64))
        assert kind[0] == fs.bos(players)
        t = 1
        while s["status"] == core.Outcome.RUNNING:
            seat, tricks = s["turn"], s["tricks"]
            card = s["hands"][seat, s["head"][seat] & (s["pile"].shape[0] - 1)]
            core.step_card(s)
            assert kind[t] == fs.play(seat, players) and core.CLASS_OF_CARD_ID[face[t]] == card
            t += 1
            if s["tricks"] != tricks:
                assert fs.take(0, players) <= kind[t] < fs.end(0, players)
                taker = kind[t] - fs.take(0, players)
                assert size[t] == s["held"][taker]
                t += 1
        assert kind[t] == fs.end(s["winner"], players) and t + 1 == len(kind)


def test_every_copyable_play_follows_the_queue_rules():
    copied = 0
    for kind, face, _ in _games(300, 2, 5):
        plays_of = {}  # face -> positions of its plays so far
        previous_of_seat = {}  # seat -> position of its latest play
        for t in range(1, len(kind)):
            if kind[t] >= 2:
                continue
            seat, f = int(kind[t]), int(face[t])
            if f in plays_of:
                p = previous_of_seat[seat]
                before = plays_of[int(face[p])][:-1]  # the plays of the seat's previous card before it
                assert face[t] == _predicted(kind, face, seat, p, before[-1] if before else None)
                copied += 1
            plays_of.setdefault(f, []).append(t)
            previous_of_seat[seat] = t
    assert copied > 300 * 100


def _predicted(kind, face, seat, p, q):
    """The face that follows the seat's card played at ``p`` (played before at ``q``, or
    never), read off the stream before ``p``."""
    if q is not None and kind[q + 1] < 2:  # it was followed by a card of its trick
        return face[q + 1]
    after = q + 1 if q is not None else 0  # it ended a trick the seat took (or was its last dealt card)
    for w in range(after + 1, p):
        if kind[w] == 2 + seat:  # the next pile the seat took: its first card
            start = w - 1
            while kind[start - 1] < 2:
                start -= 1
            return face[start]
    raise AssertionError("no pile to copy from")


def test_under_is_the_card_beneath():
    kind = np.array([6, 0, 1, 0, 2, 0, 1])
    face = np.array([52, 5, 9, 44, 52, 7, 8])
    assert list(fs.under(kind, face, 2)) == [52, 52, 5, 9, 52, 52, 7]


def test_first_appearances_by_segment():
    face = np.array([3, 52, 3, 4, 3, 4], np.int8)
    assert list(fs.first_appearances(face, np.array([0, 3, 6]))) == [1, 0, 0, 1, 1, 0]


def test_streams_keep_the_games_outcomes():
    kind, _, _, offsets = fs.random_games(50, 2, seed=8)
    ends = kind[offsets[1:] - 1] - fs.end(0, 2)
    results = game.simulate(50, n_players=2, seed=8, threads=1)
    assert list(ends) == list(results.winner)
    plays = [int((kind[a:b] < 2).sum()) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    assert plays == list(results.cards)


@pytest.mark.parametrize("players", [2, 3])
def test_the_env_faces_view_gives_the_same_streams(players):
    import gymnasium as gym

    from beggar_env.deals import random_deals

    n, seed = 6, 12
    envs = gym.make_vec("Beggar-v0", num_envs=n, n_players=players, faces=True, autoreset_mode="Disabled")
    obs, _ = envs.reset(options={"deals": random_deals(n, players, seed)})
    reader = fs.Reader(players)
    streams = reader.start(obs)
    done = np.zeros(n, bool)
    while not done.all():
        obs, _, terminated, _, _ = envs.step(np.zeros(n, np.int64))
        added = reader.add(obs, terminated)
        for g in np.flatnonzero(~done):
            streams[g] += added[g]
        done |= terminated
    envs.close()
    kind, face, size, offsets = fs.random_games(n, players, seed=seed)
    for g in range(n):
        expected = list(
            zip(
                kind[offsets[g] : offsets[g + 1]],
                face[offsets[g] : offsets[g + 1]],
                size[offsets[g] : offsets[g + 1]],
                strict=True,
            )
        )
        assert [tuple(map(int, token)) for token in streams[g]] == [tuple(map(int, token)) for token in expected]

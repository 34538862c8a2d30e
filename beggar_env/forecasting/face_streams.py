"""Whole games as streams of tokens with the cards' faces: what a stream model reads and
writes (:mod:`~beggar_env.forecasting.stream_model`). No torch here.

A game is the token ``BOS``, then one token per event a player at the table sees:

* ``PLAY(seat)`` with the face of the card played (0..51, :mod:`beggar_env.faces`);
* ``TAKE(seat)`` when ``seat`` takes the pile, with the size of its hand after it;
* ``END(seat)`` when ``seat`` has won (every card is in its hand).

Each token is three small integers: its ``kind`` (``PLAY`` seats first, then ``TAKE`` and
``END`` seats, then ``BOS``), its ``face`` (:data:`NO_FACE` but on plays) and its ``size``
(:data:`NO_SIZE` but on takes). With real faces each card is its own token, so playing the
game forward is copying: a card played again is the one that followed the seat's previous
card when that was played, or, when that ended a trick, the first card of the next pile
the seat took (docs/results.md, "Playing the game forward").
"""

import numpy as np

from .. import checks, core, faces
from ..jit import jit

NO_FACE = faces.N_FACES  # the face input of a token that is not a play
NO_SIZE = core.DECK_SIZE + 1  # the size input of a token that is not a take
N_SIZES = core.DECK_SIZE + 1  # hand sizes 0..52
CAPACITY = core.capacity_for(core.DECK_SIZE)


def n_kinds(n_players: int) -> int:
    """Kinds of token for ``n_players``: plays, takes and ends by seat, then BOS."""
    return 3 * n_players + 1


def play(seat, n_players):
    return seat


def take(seat, n_players):
    return n_players + seat


def end(seat, n_players):
    return 2 * n_players + seat


def bos(n_players):
    return 3 * n_players


@jit
def _game_tokens(s, hand_faces, pile_faces, kind, face, size, start, cap, n_players):
    """Play the dealt state ``s`` to its end (or ``cap`` tokens), writing its tokens from
    ``start``; returns where the next game begins."""
    t = start
    kind[t], face[t], size[t] = 3 * n_players, NO_FACE, NO_SIZE
    t += 1
    while s.status == core.Outcome.RUNNING and t + 3 <= start + cap:
        seat = s.turn
        tricks = s.tricks
        f = faces.step_card(s, hand_faces, pile_faces)
        kind[t], face[t], size[t] = seat, f, NO_SIZE
        t += 1
        if s.tricks != tricks:  # the pile was taken: the taker is the seat to lead
            taker = s.winner if s.status == core.Outcome.WIN else s.turn
            kind[t], face[t], size[t] = n_players + taker, NO_FACE, s.held[taker]
            t += 1
        if s.status == core.Outcome.WIN:
            kind[t], face[t], size[t] = 2 * n_players + s.winner, NO_FACE, NO_SIZE
            t += 1
    return t


@jit
def _random_games(s, hand_faces, pile_faces, deals, n_games, cap, kind, face, size, offsets):
    n_players = s.held.shape[0]
    deck = np.empty(core.DECK_SIZE, np.int64)
    no_faces = np.zeros((0, 1), np.int8)
    t = 0
    for i in range(n_games):
        offsets[i] = t
        core.deal(s, deals, i, core.NO_LIMIT, core.NO_LIMIT, deck)
        faces.deal_into(s, hand_faces, pile_faces, deals, no_faces, i, deck)
        t = _game_tokens(s, hand_faces, pile_faces, kind, face, size, t, cap, n_players)
    offsets[n_games] = t


def random_games(n_games: int, n_players: int = 2, seed=0, first: int = 0, cap: int = 20_000):
    """The token streams of random games ``first .. first + n_games - 1`` of the stream
    ``seed`` (the deals of ``core.shuffled_deals``, with their faces): ``(kind, face, size,
    offsets)``, game ``i`` in ``[offsets[i], offsets[i + 1])``. A game longer than ``cap``
    tokens is cut there (no ``END``)."""
    n_games = checks.integer("n_games", n_games, 1)
    n_players = checks.n_players(n_players)
    cap = checks.integer("cap", cap, 4)
    seed = checks.seed(seed)
    first = checks.integer("first", first, 0)
    estimate = n_games * 400
    while True:
        kind = np.empty(estimate + cap, np.int8)
        face, size = np.empty_like(kind), np.empty_like(kind)
        offsets = np.empty(n_games + 1, np.int64)
        done = _fill(np.uint64(seed), first, n_games, n_players, cap, kind, face, size, offsets)
        if done:
            end_ = offsets[-1]
            return kind[:end_].copy(), face[:end_].copy(), size[:end_].copy(), offsets
        estimate *= 2


def _fill(seed, first, n_games, n_players, cap, kind, face, size, offsets):
    """Fill the buffers if they hold every game (True), else say they do not (False)."""
    # Each game needs at most ``cap`` tokens; a chunk of games at a time keeps the check cheap.
    t, i = 0, 0
    while i < n_games:
        room = (kind.shape[0] - t) // cap
        if room == 0:
            return False
        m = min(room, n_games - i)
        part = np.empty(m + 1, np.int64)
        hands, pile = (a[0] for a in faces.new_faces(1, n_players, CAPACITY))
        s = core.new_states(1, n_players, CAPACITY)[0]
        deals = core.shuffled_deals(seed, first + i)
        _random_games(s, hands, pile, deals, m, cap, kind[t:], face[t:], size[t:], part)
        offsets[i : i + m + 1] = part + t
        t += part[m]
        i += m
    return True


def under(kind, face, n_players):
    """The face each token was played on (the card beneath it on the pile), ``NO_FACE``
    where there is none (the pile's first card, a token that is not a play), along the last
    axis of ``(…, n)`` tokens: the face of the token before when both are plays (a take
    leaves the pile empty)."""
    kind, face = np.asarray(kind), np.asarray(face)
    out = np.full(face.shape, NO_FACE, np.int64)
    plays = kind < n_players
    both = plays[..., 1:] & plays[..., :-1]
    out[..., 1:] = np.where(both, face[..., :-1], NO_FACE)
    return out


@jit
def next_own_plays(kind, n_players):
    """Per token of each row of ``(rows, n)`` tokens: where the same seat plays next when the
    token is a play (the next play of that seat in the row), else -1."""
    out = np.full(kind.shape, -1, np.int64)
    for row in range(kind.shape[0]):
        latest = np.full(n_players, -1, np.int64)
        for t in range(kind.shape[1] - 1, -1, -1):
            seat = kind[row, t]
            if 0 <= seat < n_players:
                out[row, t] = latest[seat]
                latest[seat] = t
    return out


@jit
def first_appearances(face, offsets):
    """1 for each play whose face has not been played before in its game (or window: the
    segments between ``offsets``), else 0."""
    out = np.zeros(face.shape[0], np.int8)
    seen = np.zeros(faces.N_FACES + 1, np.int64)
    for g in range(offsets.shape[0] - 1):
        stamp = g + 1
        for t in range(offsets[g], offsets[g + 1]):
            f = face[t]
            if f < NO_FACE:
                if seen[f] != stamp:
                    out[t] = 1
                    seen[f] = stamp
    return out


class Reader:
    """The tokens of games watched step by step in the env with ``faces=True`` and
    ``step_unit="card"`` (a batch of games, one row each, as the vector env gives them): what
    a player at the table writes down, and so what a stream model reads at a test position.

    :meth:`start` takes the first observations; each :meth:`add` the observations after a
    card, and returns, per game, the tokens that card added (a play, then a take and an end
    when it caused them). A take shows as an empty pile after a card; its taker is the seat
    to lead (or, when the game ended, the winner), its size that seat's hand."""

    def __init__(self, n_players: int):
        self.p = checks.n_players(n_players)

    def start(self, obs):
        self.turn = np.array(obs["turn"], np.int64)
        return [[(bos(self.p), NO_FACE, NO_SIZE)] for _ in range(len(self.turn))]

    def add(self, obs, ended):
        """``ended``: which games the card ended (the env's ``terminated``)."""
        p = self.p
        out = []
        sizes = np.asarray(obs["hand_sizes"])
        for g in range(len(self.turn)):
            tokens = [(play(self.turn[g], p), int(obs["played"][g]), NO_SIZE)]
            if obs["pile_size"][g] == 0:
                taker = int(np.argmax(sizes[g])) if ended[g] else int(obs["turn"][g])
                tokens.append((take(taker, p), NO_FACE, int(sizes[g, taker])))
                if ended[g]:
                    tokens.append((end(taker, p), NO_FACE, NO_SIZE))
            out.append(tokens)
        self.turn = np.array(obs["turn"], np.int64)
        return out

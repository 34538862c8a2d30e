"""Whole games trick by trick, each card followed by its face: what a step-supervised looped
model (:mod:`~beggar_env.forecasting.looped_steps`) reads and is supervised on. No torch
here.

A game's *trajectory* is its position at every trick start: row 0 the deal, row ``j`` the
position after ``j`` tricks (the pile is empty then: every card lies in a hand), the last
row the position after the trick that ended the game. A position is, for each of the 52
cards (by face, :mod:`beggar_env.faces`): the seat whose hand holds it and its depth from
the top of that hand (0: played next); and the seat to lead. Each card's class is its
face's (``core.CLASS_OF_CARD_ID``), so the hands as card classes follow from it
(:func:`hands_of`).

The targets of a trick-start position, ``k`` tricks on (:func:`targets`), are the row ``k``
after it, or the game's last row once the game has ended (``over``), with the game's
winner. The engine decides every move (``faces.step_card``); this only records.
"""

from typing import NamedTuple

import numpy as np

from .. import checks, core, faces
from ..jit import jit

N_CARDS = core.DECK_SIZE
CAPACITY = core.capacity_for(core.DECK_SIZE)
NO_WINNER = -1  # a game stopped at the trick cap (or a cycle) has none


class Trajectories(NamedTuple):
    """Games trick by trick: game ``g``'s positions are rows ``offsets[g] .. offsets[g + 1] - 1``
    of ``seat``, ``depth`` (each (rows, 52), int8, by face) and ``leader`` (rows,); ``winner``
    (games,) is each game's winner (:data:`NO_WINNER`: stopped at ``max_tricks``)."""

    seat: np.ndarray
    depth: np.ndarray
    leader: np.ndarray
    offsets: np.ndarray
    winner: np.ndarray
    n_players: int


@jit
def _record(s, hand_faces, seat, depth, leader, row):
    """Write the position of ``s`` (a trick start, or the game's end) into ``row``."""
    mask = s.pile.shape[0] - 1
    for p in range(s.held.shape[0]):
        for k in range(s.held[p]):
            f = hand_faces[p, (s.head[p] + k) & mask]
            seat[row, f] = p
            depth[row, f] = k
    leader[row] = s.winner if s.status == core.Outcome.WIN else s.turn


@jit
def _play_trick(s, hand_faces, pile_faces):
    """Play cards (moving their faces) until the pile is taken or the game ends."""
    before = s.tricks
    while s.status == core.Outcome.RUNNING and s.tricks == before:
        faces.step_card(s, hand_faces, pile_faces)


@jit
def _games(s, hand_faces, pile_faces, deals, n_games, max_tricks, seat, depth, leader, offsets, winner):
    """Play ``n_games`` games into the buffers; False when they cannot hold them all."""
    deck = np.empty(core.DECK_SIZE, np.int64)
    no_faces = np.zeros((0, 1), np.int8)
    row = 0
    for i in range(n_games):
        offsets[i] = row
        core.deal(s, deals, i, core.NO_LIMIT, max_tricks, deck)
        faces.deal_into(s, hand_faces, pile_faces, deals, no_faces, i, deck)
        if row + max_tricks + 1 > seat.shape[0]:
            return False
        _record(s, hand_faces, seat, depth, leader, row)
        row += 1
        while s.status == core.Outcome.RUNNING:
            _play_trick(s, hand_faces, pile_faces)
            _record(s, hand_faces, seat, depth, leader, row)
            row += 1
        winner[i] = s.winner if s.status == core.Outcome.WIN else NO_WINNER
    offsets[n_games] = row
    return True


def game_tricks(n_games: int, n_players: int = 2, seed=0, first: int = 0, max_tricks: int = 5_000) -> Trajectories:
    """The trajectories of random games ``first .. first + n_games - 1`` of the stream ``seed``
    (the deals of ``core.shuffled_deals``, with their faces).

    Parameters
    ----------
    n_games : the games.
    n_players : the seats at the table.
    seed, first : the random stream and its first game.
    max_tricks : a game still running after this many tricks is stopped (no winner).
    """
    n_games = checks.count("n_games", n_games, 1)
    n_players = checks.n_players(n_players)
    max_tricks = checks.integer("max_tricks", max_tricks, 1)
    rows = n_games * 96 + max_tricks + 1
    while True:
        seat = np.full((rows, N_CARDS), -1, np.int8)
        depth, leader = np.full_like(seat, -1), np.full(rows, -1, np.int8)
        offsets, winner = np.zeros(n_games + 1, np.int64), np.full(n_games, NO_WINNER, np.int8)
        hands, pile = (a[0] for a in faces.new_faces(1, n_players, CAPACITY))
        s = core.new_states(1, n_players, CAPACITY)[0]
        deals = core.shuffled_deals(checks.seed(seed), checks.integer("first", first, 0))
        if _games(s, hands, pile, deals, n_games, max_tricks, seat, depth, leader, offsets, winner):
            end = offsets[-1]
            return Trajectories(seat[:end], depth[:end], leader[:end], offsets, winner, n_players)
        rows *= 2


def trick_starts(traj: Trajectories):
    """Every trick-start position of the games that ended with a winner, before their end:
    ``(rows, tricks_left)``, each position's row and the tricks left in its game."""
    game = np.repeat(np.arange(len(traj.winner)), np.diff(traj.offsets))
    last = traj.offsets[1:][game] - 1
    rows = np.arange(len(game))
    keep = (rows < last) & (traj.winner[game] != NO_WINNER)
    return rows[keep], (last - rows)[keep]


def targets(traj: Trajectories, rows, k: int) -> dict:
    """The positions ``0 .. k`` tricks after the trick-start positions ``rows``.

    Returns ``seat``, ``depth`` ((n, k + 1, 52), int64), ``leader`` and ``over`` ((n, k + 1):
    the seat to lead, whether the game has ended by then: its last position is repeated
    after its end), ``winner`` (n,) and ``tricks_left`` (n,).
    """
    rows = np.asarray(rows, np.int64)
    k = checks.integer("k", k, 0)
    game = np.searchsorted(traj.offsets, rows, side="right") - 1
    last = traj.offsets[game + 1] - 1
    if np.any(rows >= last) or np.any(traj.winner[game] == NO_WINNER):
        raise ValueError("targets: every row must be a trick start before the end of a game with a winner")
    ahead = rows[:, None] + np.arange(k + 1)
    at = np.minimum(ahead, last[:, None])
    return {
        "seat": traj.seat[at].astype(np.int64),
        "depth": traj.depth[at].astype(np.int64),
        "leader": traj.leader[at].astype(np.int64),
        "over": ahead >= last[:, None],
        "winner": traj.winner[game].astype(np.int64),
        "tricks_left": (last - rows).astype(np.int64),
    }


def hands_of(seat, depth, n_players: int):
    """Each seat's hand as card classes from the top (``(..., n_players, 52)``, int8, -1 after
    the last card), from each card's seat and depth (``(..., 52)``, by face)."""
    seat, depth = np.asarray(seat), np.asarray(depth)
    lead = seat.shape[:-1]
    hands = np.full((*lead, n_players, N_CARDS), -1, np.int8)
    index = np.indices(seat.shape)
    ok = (seat >= 0) & (seat < n_players) & (depth >= 0)
    classes = np.broadcast_to(core.CLASS_OF_CARD_ID, seat.shape)
    where = tuple(i[ok] for i in index[:-1]) + (seat[ok], depth[ok])
    hands[where] = classes[ok]
    return hands

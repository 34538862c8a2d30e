"""Backward play: the trick-start positions that reach a given one after exactly one trick.

A *position* is what decides a game's future at the start of a trick (``docs/RULES.md``):
every hand as a sequence of card classes, and the seat that leads, with an empty pile.
Here it is a deal (its hands, seat 0 first, each from its top card) and a leader seat.

The argument (``docs/cycles.md`` has it in full): the player who leads a trick is the one
who took the last pile (or the winner, after the game's last trick), and the pile went
under their hand in play order, so that pile is a suffix of the leader ``W``'s hand. For
every suffix length and every seat that may have led it, :func:`predecessors` replays the
suffix card by card under the rules, which say who played each card; it keeps the replays
that end exactly on the suffix's last card with ``W`` taking the pile (a completed payment
to ``W``, or, at the game's end, every other player out), and gives each player's cards of
the trick back to the top of their hand. With three or four players, a seat whose hand is
empty afterwards may have run out during the trick (and be skipped from then on) or have
played one more card: both are replayed.

The kernels are compiled with numba, like the engine; playing forward is the engine's
(:func:`play_trick`, the tests, the census), never a second implementation.
"""

import numpy as np
from numba import prange

from .. import checks, core
from ..core import Card
from ..deals import Deal, parse_deal
from ..jit import jit, parallel

PREDECESSORS_GUESS = 64  # rows of output a position is first given; more are made when needed


# ------------------------------------------------------------------ compiled kernels


@jit
def _next_in(alive, seat, n_players):
    seat = (seat + 1) % n_players
    while not (alive >> seat) & 1:
        seat = (seat + 1) % n_players
    return seat


@jit
def _write_predecessor(
    cards, starts, sizes, w, length, pile_start, leader, owner, out_cards, out_sizes, out_leaders, k
):
    """Row ``k`` of the output: each seat's cards of the trick (``owner``), then the rest of its hand."""
    n_players = sizes.shape[0]
    at = 0
    for p in range(n_players):
        held = 0
        for i in range(length):
            if owner[i] == p:
                out_cards[k, at] = cards[pile_start + i]
                at += 1
                held += 1
        keep = sizes[p] - length if p == w else sizes[p]
        for i in range(keep):
            out_cards[k, at] = cards[starts[p] + i]
            at += 1
        out_sizes[k, p] = held + keep
    out_leaders[k] = leader


@jit
def _several_hold(sizes, w, length, owner):
    """Whether the predecessor has cards in more than one hand (one seat holding every
    card has already won: no trick starts there)."""
    holders = 0
    for p in range(sizes.shape[0]):
        held = sizes[p] - length if p == w else sizes[p]
        for i in range(length):
            if owner[i] == p:
                held += 1
        if held > 0:
            holders += 1
    return holders > 1


@jit
def _replays(cards, starts, sizes, w, length, leader, owner, stack, out_cards, out_sizes, out_leaders, found):
    """Every way the last ``length`` cards of ``w``'s hand can have been one trick led by
    ``leader`` and taken by ``w``; write each predecessor from row ``found``; return the new count.

    A depth-first walk over the replay: the only choice is, for a seat other than ``w``
    whose hand is empty afterwards, whether it plays the next card or is out when asked
    (a saved branch in ``stack``: pile index, turn, owed, court, alive bits, seats in).
    """
    n_players = sizes.shape[0]
    pile_start = starts[w] + sizes[w] - length
    i, turn, owed, court, alive, n_alive = 0, leader, 0, -1, (1 << n_players) - 1, n_players
    depth = 0
    resumed = False
    while True:
        ended = False
        accept = False
        t = turn
        if resumed:  # the saved branch's other choice: the seat is out
            out = True
            resumed = False
        else:
            keep = sizes[t] - length if t == w else sizes[t]
            may_be_out = t != w and keep == 0 and i > 0
            if i < length and may_be_out:
                stack[depth, 0], stack[depth, 1], stack[depth, 2] = i, turn, owed
                stack[depth, 3], stack[depth, 4], stack[depth, 5] = court, alive, n_alive
                depth += 1
                out = False
            elif i < length:
                out = False
            elif may_be_out:
                out = True
            else:  # the suffix is spent and the trick goes on: not this way
                out = False
                ended = True
        if not ended and out:
            alive &= ~(1 << t)
            n_alive -= 1
            turn = _next_in(alive, t, n_players)
            if n_alive == 1:  # the last seat in takes the pile and wins
                ended = True
                accept = i == length and turn == w
        elif not ended:
            card = cards[pile_start + i]
            owner[i] = t
            i += 1
            if card != Card.NUMERAL:
                owed = card
                court = t
                turn = _next_in(alive, t, n_players)
            elif owed > 0:
                owed -= 1
                if owed == 0:  # paid in full: the court player takes the pile
                    ended = True
                    accept = i == length and court == w
            else:
                turn = _next_in(alive, t, n_players)
        if ended:
            if accept and _several_hold(sizes, w, length, owner):
                if found < out_cards.shape[0]:  # else counted, not written: the caller makes room
                    _write_predecessor(
                        cards,
                        starts,
                        sizes,
                        w,
                        length,
                        pile_start,
                        leader,
                        owner,
                        out_cards,
                        out_sizes,
                        out_leaders,
                        found,
                    )
                found += 1
            if depth == 0:
                return found
            depth -= 1
            i, turn, owed = stack[depth, 0], stack[depth, 1], stack[depth, 2]
            court, alive, n_alive = stack[depth, 3], stack[depth, 4], stack[depth, 5]
            resumed = True


@jit
def payment_tail(cards, start, size):
    """For a hand (``cards[start : start + size]``) that took the last trick's pile while
    the game goes on: the shortest suffix that pile can be, or 0 when it can be none.

    While cards are held in two hands or more, no trick ended with every other player out
    (those would hold nothing), so the trick was a payment completed to this hand's court
    card: the pile ends with that court card and then exactly its honour in numerals (one
    owed numeral is paid per card, whoever pays it: a seat that runs out passes what is
    still owed to the next). So the hand must end with a court card of honour ``v``
    followed by ``v`` numerals, and the pile holds at least those ``v + 1`` cards.
    """
    numerals = 0
    while numerals < size and cards[start + size - 1 - numerals] == Card.NUMERAL:
        numerals += 1
    if numerals == 0 or numerals == size or cards[start + size - 1 - numerals] != numerals:
        return 0
    return numerals + 1


_N_STATES = 4 * 5 * 5  # a replay's state: seat to play, numerals owed, court player (or none)


@jit
def _every_other_holds(sizes, w):
    for p in range(sizes.shape[0]):
        if p != w and sizes[p] == 0:
            return False
    return True


@jit
def _deterministic(cards, starts, sizes, w, shortest, owner, stack, dp, out_cards, out_sizes, out_leaders):
    """:func:`predecessors_into` when every seat other than the leader ``w`` holds cards.

    Then no seat is out during the trick, so a replay is settled by where it starts
    (suffix length, leader) and its state at each card: the seat to play, the numerals
    owed and the court player. One pass from the hand's last card back to its top marks,
    for each card and state, whether the replay from there is accepted (the trick ends on
    the last card, a payment completed to ``w``); each (suffix, leader) marked is then
    replayed and written by :func:`_replays`. Work in the hand's length, not its square.
    """
    n_players = sizes.shape[0]
    size = sizes[w]
    top = starts[w]
    n_courts = n_players + 1  # court player + 1; 0: none yet
    for state in range(_N_STATES):
        dp[0, state] = False  # after the last card: the trick had to end on it
    nxt = 0
    found = 0
    for j in range(size - 1, -1, -1):
        here = 1 - nxt
        card = cards[top + j]
        for t in range(n_players):
            t_next = (t + 1) % n_players
            for owed in range(5):
                for court in range(n_courts if owed > 0 else 1):
                    if card != Card.NUMERAL:
                        ok = dp[nxt, (t_next * 5 + card) * n_courts + t + 1]
                    elif owed == 1:
                        ok = j == size - 1 and court - 1 == w
                    elif owed > 1:
                        ok = dp[nxt, (t * 5 + owed - 1) * n_courts + court]
                    else:
                        ok = dp[nxt, t_next * 5 * n_courts]
                    dp[here, (t * 5 + owed) * n_courts + court] = ok
        length = size - j
        if length >= shortest:
            for first in range(n_players):
                if dp[here, first * 5 * n_courts]:
                    found = _replays(
                        cards, starts, sizes, w, length, first, owner, stack, out_cards, out_sizes, out_leaders, found
                    )
        nxt = here
    return found


@jit
def predecessors_into(cards, sizes, leader, out_cards, out_sizes, out_leaders, owner, stack, dp):
    """The predecessors of one position (``cards``: classes hand after hand, ``sizes``,
    ``leader``), written as rows of ``out_*``; return how many there are (rows beyond the
    output's length are counted, not written). ``owner``, ``stack`` and ``dp`` are scratch
    space for ``len(cards)`` cards (:func:`_scratch`).

    Parameters
    ----------
    cards, sizes, leader : the position: classes hand after hand, each hand's size, the seat to lead.
    out_cards, out_sizes, out_leaders : the predecessors' rows, written in place.
    owner, stack, dp : scratch space for ``len(cards)`` cards.
    """
    n_players = sizes.shape[0]
    starts = np.zeros(n_players, np.int64)
    for p in range(1, n_players):
        starts[p] = starts[p - 1] + sizes[p - 1]
    shortest = 1
    if sizes[leader] < cards.shape[0]:  # a game goes on: the last trick was a payment to the leader
        shortest = payment_tail(cards, starts[leader], sizes[leader])
        if shortest == 0:
            return 0
    found = 0
    if _every_other_holds(sizes, leader):
        return _deterministic(
            cards, starts, sizes, leader, shortest, owner, stack, dp, out_cards, out_sizes, out_leaders
        )
    for length in range(shortest, sizes[leader] + 1):
        for first in range(n_players):
            found = _replays(
                cards, starts, sizes, leader, length, first, owner, stack, out_cards, out_sizes, out_leaders, found
            )
    return found


@jit
def _scratch(n_cards):
    return (
        np.empty(max(n_cards, 1), np.int64),
        np.empty((max(n_cards, 1) + 4, 6), np.int64),
        np.empty((2, _N_STATES), np.bool_),
    )


@jit(parallel=True)
def count_predecessors(cards, sizes, leaders, counts):
    """``counts[i]``: how many predecessors position ``i`` of a batch has (``cards[i]``,
    ``sizes[i]``, ``leaders[i]``), on every core."""
    n = cards.shape[0]
    n_chunks = min(n, 64)
    for c in prange(n_chunks):
        lo, hi = core.chunk_bounds(c, n_chunks, n)
        owner, stack, dp = _scratch(cards.shape[1])
        out_cards = np.empty((0, cards.shape[1]), np.int8)
        out_sizes = np.empty((0, sizes.shape[1]), np.int32)
        out_leaders = np.empty(0, np.int32)
        for i in range(lo, hi):
            counts[i] = predecessors_into(
                cards[i], sizes[i], leaders[i], out_cards, out_sizes, out_leaders, owner, stack, dp
            )


@jit
def expand(cards, sizes, leaders, out_cards, out_sizes, out_leaders, parents):
    """The predecessors of every position of a batch, in order, written from row 0 of
    ``out_*`` with ``parents`` (the row of the batch each came from); return how many
    there are in all (beyond the output's length, counted, not written).

    Parameters
    ----------
    cards, sizes, leaders : the batch of positions, a row each.
    out_cards, out_sizes, out_leaders : the predecessors' rows, written in place.
    parents : the row of the batch each predecessor came from, written in place.
    """
    owner, stack, dp = _scratch(cards.shape[1])
    total = 0
    for i in range(cards.shape[0]):
        room = out_cards.shape[0] - total
        if room > 0:
            n = predecessors_into(
                cards[i],
                sizes[i],
                leaders[i],
                out_cards[total:],
                out_sizes[total:],
                out_leaders[total:],
                owner,
                stack,
                dp,
            )
            for k in range(total, min(total + n, out_cards.shape[0])):
                parents[k] = i
        else:
            n = predecessors_into(
                cards[i], sizes[i], leaders[i], out_cards[:0], out_sizes[:0], out_leaders[:0], owner, stack, dp
            )
        total += n
    return total


# ------------------------------------------------------------------------ Python API


def position_arrays(deal, leader):
    """A position's engine arrays: card classes hand after hand (int8), hand sizes (int32),
    and the leader; ``ValueError`` for a leader who is not a seat holding cards."""
    deal = parse_deal(deal)
    leader = checks.integer("leader", leader, 0, deal.n_players - 1)
    if len(deal.hands[leader]) == 0:
        raise ValueError(f"leader: seat {leader} holds no cards, so it cannot lead a trick")
    return deal.classes(), np.array(deal.hand_sizes, np.int32), leader


_SYMBOLS = np.array(list(core.CLASS_SYMBOLS))


def _position(cards, sizes, leader):
    """``(Deal, leader)`` from a position's engine arrays."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    symbols = _SYMBOLS[cards]
    return Deal(tuple(tuple(symbols[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))), int(leader)


def predecessor_arrays(cards, sizes, leader):
    """:func:`predecessors` on engine arrays (unchecked: as :func:`position_arrays` gives
    them): ``(cards[k, n_cards], sizes[k, players], leaders[k])``."""
    rows = PREDECESSORS_GUESS
    owner, stack, dp = _scratch(len(cards))
    while True:
        out_cards = np.zeros((rows, len(cards)), np.int8)
        out_sizes = np.zeros((rows, len(sizes)), np.int32)
        out_leaders = np.zeros(rows, np.int32)
        n = predecessors_into(cards, sizes, leader, out_cards, out_sizes, out_leaders, owner, stack, dp)
        if n <= rows:
            return out_cards[:n], out_sizes[:n], out_leaders[:n]
        rows = n


def predecessors(deal: "str | Deal", leader: int = 0) -> list[tuple[Deal, int]]:
    """Every trick-start position that reaches position (``deal``, ``leader``) after
    exactly one trick: a list of ``(Deal, leader)`` in the same seats, in a fixed order.

    A position where one seat holds every card is where a game ended: its predecessors are
    the positions whose trick ends the game (``leader`` is then that seat). A position
    none can reach gives an empty list (most random ones: ``docs/cycles.md``).
    """
    found = predecessor_arrays(*position_arrays(deal, leader))
    return [_position(*row) for row in zip(*found)]


@jit
def trick_after(s, cards, sizes, leader, out_cards, out_sizes):
    """Play one trick from a position in the engine (``core.step_trick``) and write the
    position after it to ``out_cards`` and ``out_sizes``; return its leader (after the
    game's last trick: the winner, who holds every card). ``s`` is a scratch state record
    for that many players and cards; the position must have two hands or more with cards.

    The engine deals seat 0 to lead, so the seats are turned for it: seat ``leader``
    plays as seat 0, and the result is turned back.

    Parameters
    ----------
    s : a scratch state record (:func:`new_scratch_state`).
    cards, sizes, leader : the position: classes hand after hand, each hand's size, the seat to lead.
    out_cards, out_sizes : the position after the trick, written in place.
    """
    n_players = sizes.shape[0]
    starts = np.zeros(n_players + 1, np.int64)
    for p in range(n_players):
        starts[p + 1] = starts[p] + sizes[p]
    turned_cards = np.empty(starts[n_players], np.int8)
    turned_sizes = np.empty(n_players, np.int32)
    at = 0
    for k in range(n_players):
        p = (leader + k) % n_players
        turned_sizes[k] = sizes[p]
        for i in range(starts[p], starts[p + 1]):
            turned_cards[at] = cards[i]
            at += 1
    core.init_state(s, turned_cards, turned_sizes, core.NO_LIMIT, core.NO_LIMIT)
    core.step_trick(s)
    mask = s.pile.shape[0] - 1
    at = 0
    for p in range(n_players):
        k = (p - leader) % n_players
        out_sizes[p] = s.held[k]
        for j in range(s.held[k]):
            out_cards[at] = s.hands[k, (s.head[k] + j) & mask]
            at += 1
    return (s.turn + leader) % n_players


def new_scratch_state(n_players, n_cards):
    """A scratch state record for :func:`trick_after`."""
    return core.new_states(1, n_players, core.capacity_for(n_cards))[0]


def play_trick(deal: "str | Deal", leader: int = 0) -> tuple[Deal, int]:
    """The position one trick after (``deal``, ``leader``), played by the engine (see
    :func:`trick_after`), as ``(Deal, leader)``; after the game's last trick the winner
    holds every card and leads (see :func:`predecessors`)."""
    cards, sizes, leader = position_arrays(deal, leader)
    if sizes.max() == len(cards):
        raise ValueError(
            f"{parse_deal(deal)}: one seat holds every card, so the game is over and there is no trick to play"
        )
    out_cards, out_sizes = np.empty_like(cards), np.empty_like(sizes)
    after = trick_after(new_scratch_state(len(sizes), len(cards)), cards, sizes, leader, out_cards, out_sizes)
    return _position(out_cards, out_sizes, after)


def counts(cards, sizes, leaders, threads=None) -> np.ndarray:
    """How many predecessors each position of a batch has (engine arrays, as :func:`position_arrays`
    gives one: ``cards[n, n_cards]``, ``sizes[n, players]``, ``leaders[n]``), on ``threads`` threads."""
    result = np.zeros(len(cards), np.int64)
    with parallel(threads):
        count_predecessors(
            np.ascontiguousarray(cards, np.int8),
            np.ascontiguousarray(sizes, np.int32),
            np.ascontiguousarray(leaders, np.int32),
            result,
        )
    return result

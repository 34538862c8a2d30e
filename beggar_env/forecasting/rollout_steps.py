"""The rollouts' compiled steps, which the CPU (:mod:`~beggar_env.forecasting.rollouts`)
and the GPU (:mod:`~beggar_env.forecasting.gpu_rollouts`, compiled from this source) both
play: a position set up with its unseen cards dealt from a bag, and a position played out
``k`` times, each arrangement to its end by the engine with cycle detection and the game's
limit, its outcome labels counted.

A position is a row of :func:`beggar_env.forecasting.rollouts.table_arrays`, checked there
before any of this reads it.
"""

from .. import core
from ..core import Outcome
from ..jit import jit

UNKNOWN, EMPTY = -2, -1


@jit
def set_position(s, hands, bag, pile, pile_size, table, alive, counters, max_cards):
    """State ``s`` at a position (a row of the table arrays), the unknown places filled from
    ``bag`` in order; ``taken`` set so that the state counts the cards still unseen as the
    counted view counts them (each hand's dealt cards not yet played come first).

    Parameters
    ----------
    s : a core state record, written
    hands : the position's hands from the top (classes, ``UNKNOWN``, ``EMPTY``)
    bag : the unseen cards, in the order they fill the unknown places
    pile, pile_size : the pile's classes and its cards
    table : (turn, owed, court)
    alive : 1 for each seat still in
    counters : (cards, tricks) played so far
    max_cards : the game's agreed limit
    """
    n_players = s.held.shape[0]
    next_card = 0
    n_cards = 0
    for p in range(n_players):
        held = 0
        hidden = 0
        for t in range(hands.shape[1]):
            card = hands[p, t]
            if card == EMPTY:
                break
            if card == UNKNOWN:
                card = bag[next_card]
                next_card += 1
                hidden += 1
            s.hands[p, t] = card
            held += 1
        s.head[p] = 0
        s.held[p] = held
        s.taken[p] = held - hidden
        s.alive[p] = alive[p]
        n_cards += held
    for t in range(pile_size):
        s.pile[t] = pile[t]
    s.pile_len = pile_size
    s.n_cards = n_cards + pile_size
    s.n_alive = 0
    for p in range(n_players):
        s.n_alive += alive[p]
    s.turn, s.owed, s.court = table[0], table[1], table[2]
    s.cards, s.tricks = counters[0], counters[1]
    s.max_cards = max_cards
    s.max_tricks = core.NO_LIMIT
    s.status = Outcome.RUNNING
    s.winner = core.NO_SEAT
    for p in range(n_players):
        if s.held[p] == s.n_cards:  # over already: one hand holds every card
            s.status = Outcome.WIN
            s.winner = p


@jit
def roll_position(i, positions, max_cards, k, seed, first, counts, rollouts, bag, states, f, r):
    """Play position ``i`` of ``positions`` (the arrays of :func:`~beggar_env.forecasting.rollouts.table_arrays`) into
    ``counts[i]`` and ``rollouts[i]`` (``states``: three scratch states, ``bag`` room for a
    deck); return the cards they played.

    Parameters
    ----------
    i : the position, a row of ``positions``
    positions : the arrays of the table (hands, unseen, pile, pile_size, table, alive, counters)
    max_cards : the game's agreed limit
    k : rollouts of an open position
    seed, first : the rollouts' stream, and the number of ``positions``' first row in it
    counts, rollouts : the results, row ``i`` written
    bag : a deck's room
    states : three scratch states (the game, cycle detection's start and probe)
    f, r : scratch progress and result records
    """
    hands, unseen, pile, pile_size, table, alive, counters = positions
    n_hidden = 0
    classes = 0
    for card in range(core.N_CLASSES):
        classes += unseen[i, card] > 0
        for _ in range(unseen[i, card]):
            bag[n_hidden] = card
            n_hidden += 1
    runs = k if classes >= 2 else 1  # one class: a single arrangement
    key = core.derive_key(seed, first + i)
    played = 0
    s = states[0]
    for j in range(runs):
        if runs > 1:
            core.shuffle(core.derive_key(key, j), bag, n_hidden)
        set_position(s, hands[i], bag, pile[i], pile_size[i], table[i], alive[i], counters[i], max_cards)
        core.finish_now(s, True, r, states[1], states[2], f)
        counts[i, core.outcome_label(r.winner, s.held.shape[0])] += 1
        played += r.cards - counters[i, 0]
    rollouts[i] = runs
    return played

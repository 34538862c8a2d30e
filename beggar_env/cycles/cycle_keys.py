"""Cycle keys, and the compiled steps that reach a cycle and name it: a position placed
from its source, played to its end or its first repeat, its cycle's canonical key
written. The census plays them on the CPU (:mod:`~beggar_env.cycles.census`) and on the
GPU (:mod:`~beggar_env.cycles.gpu_census`, compiled from this source), insertion on the
CPU.

A cycle's *canonical key* (``docs/cycles.md``): each of its positions written from the
leader's seat on (the leader's hand, then the next seat's, ..., as compact notation joined
by ``/``), and the least of these in the order of the card classes, the separator last
(``-`` < ``J`` < ``Q`` < ``K`` < ``A`` < ``/``).
"""

from .. import core
from ..core import Outcome
from ..jit import jit
from . import positions

SEPARATOR = 5  # between hands in a key (after the five classes)
KEY_SYMBOLS = core.CLASS_SYMBOLS + "/"


@jit
def write_key(s, out):
    """The position of trick-start state ``s`` from its leader's seat on, as key bytes."""
    n_players = s.held.shape[0]
    mask = s.pile.shape[0] - 1
    at = 0
    for k in range(n_players):
        p = (s.turn + k) % n_players
        if k > 0:
            out[at] = SEPARATOR
            at += 1
        for j in range(s.held[p]):
            out[at] = s.hands[p, (s.head[p] + j) & mask]
            at += 1


@jit
def _less(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return a[i] < b[i]
    return False


@jit
def cycle_key(s, period, key, scratch):
    """Walk ``period`` tricks from ``s`` (a position on a cycle; it comes back to it) and
    write the cycle's canonical key to ``key`` (``scratch``: a key's room)."""
    write_key(s, key)
    for _ in range(period):
        core.step_trick(s)
        write_key(s, scratch)
        if _less(scratch, key):
            for i in range(key.shape[0]):
                key[i] = scratch[i]


@jit
def play_to_cycle(s, cards, sizes, start, probe, f, r):
    """Deal ``cards`` (hands of ``sizes``, seat 0 leading) into state ``s`` and play it in
    the engine to its end or its first repeat, the result in ``r`` (``start``, ``probe``,
    ``f``: :func:`core.finish`'s scratch); True when it cycles, ``s`` then left on the cycle
    for :func:`cycle_key`.

    Parameters
    ----------
    s : a core state record, the game
    cards, sizes : the deal's classes and hand sizes
    start, probe, f : :func:`core.finish`'s scratch records
    r : the result record, written
    """
    core.init_state(s, cards, sizes, core.NO_LIMIT, core.NO_LIMIT)
    core.finish_now(s, True, r, start, probe, f)
    if r.outcome != Outcome.CYCLE:
        return False
    s.status = Outcome.RUNNING
    return True


@jit
def place(source, seed, deck, fixed, counts, index, cards, sizes, left):
    """Position ``index`` of the source (0 random, 1 every) into ``cards`` and ``sizes``;
    for ``every``, the arrangement ``index`` of the cards ``counts`` after the ``fixed``
    first cards of ``deck`` (a block's prefix: :func:`positions.blocks`); ``left``: room
    for the counts.

    Parameters
    ----------
    source : 0 random, 1 every
    seed : the random positions' stream
    deck : the deck's classes (random), or a block's prefix (every)
    fixed : the cards of ``deck`` placed first (every)
    counts : the other cards' counts, by class (every)
    index : the position's number
    cards, sizes : the position, written
    left : room for the counts
    """
    if source == 0:
        positions.random_position(core.derive_key(seed, index), deck, cards, sizes)
    else:
        for j in range(fixed):
            cards[j] = deck[j]
        positions.arrangement(counts, index, cards, fixed, left)
        positions.dealt_sizes(cards.shape[0], sizes.shape[0], sizes)


def key_text(key) -> str:
    """A key's bytes as text: the cycle's least position, leader first, in compact notation."""
    return "".join(KEY_SYMBOLS[int(b)] for b in key)

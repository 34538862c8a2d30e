"""The census's compiled walk: a range of positions played in order, each chunk of it
placed once and then stepped, and each range's digest counted as it goes
(:mod:`~beggar_env.cycles.units`).

For the ``every`` source, deal ``i + 1`` is the next arrangement of deal ``i`` in census
order (lexicographic over the card classes: :func:`next_arrangement`), so a chunk unranks
only its first deal (:func:`positions.arrangement`) and steps from there; a ``random``
position is placed from its key, as before. Each position is dealt into one state record
and played by the engine (``core.advance``) for up to :data:`PLAIN_CARDS` cards; a game
still running then (none of the decks counted so far: their longest games are about a
thousand cards) is dealt again and played by ``core.finish`` with cycle detection
(:func:`cycle_keys.play_to_cycle`), as every position was before. Either way a game that
ends has the same cards and tricks, so the walk's census is the ranked one's, bit for bit
(``tests/test_census_walk.py`` compares them position by position).

:func:`ranked` is the other way, kept for checking: each position placed from its index
(unranked) and played with cycle detection from the start, as the census did before the
walk; ``beggar cycles verify`` replays claimed games with it.
"""

import numpy as np
from numba import prange

from .. import core
from ..core import Outcome
from ..jit import jit
from .cycle_keys import cycle_key, place, play_to_cycle

PLAIN_CARDS = 1 << 15  # cards played without cycle detection before a game is played again with it
LENGTH_BUCKETS = 64  # a game of c cards counts in bucket c.bit_length() (docs/cycles.md: work units)
STAT_GAMES, STAT_ENDED, STAT_CARDS, STAT_TRICKS, STAT_INDEX = range(5)  # a chunk's row of stats


@jit
def next_arrangement(cards, fixed):
    """Step ``cards[fixed:]`` to the next arrangement of its cards in lexicographic order of
    the classes (the next deal in census order) and return the first place it changed; -1,
    and nothing changed, at the last."""
    n = cards.shape[0]
    k = n - 2
    while k >= fixed and cards[k] >= cards[k + 1]:
        k -= 1
    if k < fixed:
        return -1
    j = n - 1
    while cards[j] <= cards[k]:
        j -= 1
    cards[k], cards[j] = cards[j], cards[k]
    lo, hi = k + 1, n - 1
    while lo < hi:
        cards[lo], cards[hi] = cards[hi], cards[lo]
        lo += 1
        hi -= 1
    return k


@jit
def hash_term(index, cards):
    """One position's term of a range's hash: ``mix64(mix64(index) ^ cards)`` over uint64
    (``index`` taken modulo 2**64); the hash is the sum of the terms modulo 2**64."""
    return core.mix64(core.mix64(np.uint64(index)) ^ np.uint64(cards))


@jit
def length_bucket(cards):
    """The bucket of a game of ``cards`` cards: ``cards.bit_length()`` (0 for none, 1 for 1,
    2 for 2-3, 3 for 4-7, ...)."""
    b = 0
    while cards > 0:
        cards >>= 1
        b += 1
    return b


@jit(parallel=True)
def walk(source, seed, deck, counts, first, offset, n, work, results, keys, periods, stats, hashes, lengths, each):
    """Play positions ``first .. first + n - 1`` of a source (0 random, 1 every: then ``deck``
    is a block's prefix and ``counts`` its other cards, :func:`positions.blocks`) in chunks,
    one per row of ``work`` (``core.new_work``'s) and ``results``. Per chunk ``c``:
    ``stats[c]`` games, ended, longest cards, its tricks, its index (local, -1: none);
    ``hashes[c]`` the sum of its positions' :func:`hash_term` (index ``offset + i``, modulo
    2**64); ``lengths[c, b]`` its ended games of :func:`length_bucket` ``b``. Per position
    ``i`` (from ``first``) that never ends, ``keys[i]`` its cycle's key and ``periods[i]``
    (cards, tricks); others get period (0, 0). ``each`` (empty, or a row per position):
    cards and tricks of each game (of a game that never ends: to its first repeat).

    Parameters
    ----------
    source : 0 random, 1 every
    seed : the random positions' stream
    deck, counts : the deck's classes (or a block's prefix) and its other cards' counts
    first, n : the positions played (local to the block)
    offset : a position's number is ``offset + `` its local one (uint64, for the hash)
    work : ``core.new_work``'s (states, progress), a row per chunk
    results : scratch result records, one per chunk
    keys, periods : each position's cycle key and period, written
    stats, hashes, lengths : each chunk's figures, added to
    each : each position's cards and tricks, written when it has rows
    """
    states, progress = work
    n_chunks = states.shape[0]
    n_cards = keys.shape[1] - states[0, 0].held.shape[0] + 1
    fixed = deck.shape[0] if source == 1 else 0
    for c in prange(n_chunks):
        lo, hi = core.chunk_bounds(c, n_chunks, n)
        s, start, probe = states[c, 0], states[c, 1], states[c, 2]
        f, r = progress[c], results[c]
        cards = np.empty(n_cards, np.int8)
        sizes = np.empty(s.held.shape[0], np.int32)
        scratch = np.empty(keys.shape[1], np.int8)
        left = np.empty(core.N_CLASSES, np.int64)
        if lo < hi:
            place(source, seed, deck, fixed, counts, first + lo, cards, sizes, left)
        total = np.uint64(0)
        for i in range(lo, hi):
            if source == 0 and i > lo:
                place(source, seed, deck, fixed, counts, first + i, cards, sizes, left)
            core.init_state(s, cards, sizes, core.NO_LIMIT, core.NO_LIMIT)
            core.advance(s, PLAIN_CARDS)
            ended = s.status != Outcome.RUNNING or not play_to_cycle(s, cards, sizes, start, probe, f, r)
            if ended:  # (a game still running after PLAIN_CARDS is played again, with cycle detection)
                played, tricks = s.cards, s.tricks
                stats[c, STAT_ENDED] += 1
                lengths[c, length_bucket(played)] += 1
                periods[i, 1] = 0
                if played > stats[c, STAT_CARDS]:
                    stats[c, STAT_CARDS] = played
                    stats[c, STAT_TRICKS] = tricks
                    stats[c, STAT_INDEX] = first + i
            else:
                played, tricks = r.cards, r.tricks
                periods[i, 0] = r.cycle_cards
                periods[i, 1] = r.cycle_tricks
                cycle_key(s, r.cycle_tricks, keys[i], scratch)
            total += hash_term(offset + np.uint64(first + i), played)
            if each.shape[0] > 0:
                each[i, 0] = played
                each[i, 1] = tricks
            if source == 1 and i + 1 < hi:
                next_arrangement(cards, fixed)
        stats[c, STAT_GAMES] += hi - lo
        hashes[c] += total


@jit(parallel=True)
def ranked(source, seed, deck, counts, indices, work, results, keys, periods, each):
    """Play the positions ``indices`` (local to a block, as :func:`walk`'s) each placed from
    its index and played with cycle detection from its first card, the census's way before
    the walk: per position, ``each`` cards and tricks (to the end, or to the first repeat),
    ``periods`` (cards, tricks; (0, 0) for a game that ends) and ``keys`` its cycle's key."""
    states, progress = work
    n_chunks = states.shape[0]
    n_cards = keys.shape[1] - states[0, 0].held.shape[0] + 1
    fixed = deck.shape[0] if source == 1 else 0
    for c in prange(n_chunks):
        lo, hi = core.chunk_bounds(c, n_chunks, indices.shape[0])
        s, start, probe = states[c, 0], states[c, 1], states[c, 2]
        f, r = progress[c], results[c]
        cards = np.empty(n_cards, np.int8)
        sizes = np.empty(s.held.shape[0], np.int32)
        scratch = np.empty(keys.shape[1], np.int8)
        left = np.empty(core.N_CLASSES, np.int64)
        for i in range(lo, hi):
            place(source, seed, deck, fixed, counts, indices[i], cards, sizes, left)
            periods[i, 0] = 0
            periods[i, 1] = 0
            if play_to_cycle(s, cards, sizes, start, probe, f, r):
                periods[i, 0] = r.cycle_cards
                periods[i, 1] = r.cycle_tricks
                cycle_key(s, r.cycle_tricks, keys[i], scratch)
            each[i, 0] = r.cards
            each[i, 1] = r.tricks

"""Where a census's positions come from, each counted by an index so that any range of
indices is the same work anywhere:

* ``random``: position ``i`` is a deck (the standard one, or any given cards) shuffled by
  ``core.derive_key(seed, i)`` and cut at random into hands of any sizes, seat 0 holding
  at least one card and some other seat at least one; seat 0 leads;
* ``every``: position ``i`` is the ``i``-th arrangement (in lexicographic order of card
  classes) of a deck, dealt as a game is (``docs/RULES.md``: hands as even as possible, the
  first seats holding one more); so the indices ``0 .. arrangements - 1`` are every deal of
  that deck.

Counts and indices are Python integers: the standard deck has
653,534,134,886,878,245,000 deals, past int64, and the compiled code only ever sees what
fits (:func:`blocks`).
"""

import numpy as np
from numba import prange

from .. import checks, core
from ..deals import count_deals, deck_counts, next_card
from ..jit import jit


def arrangements(deck) -> int:
    """How many deals a deck has (its arrangements: the size of the ``every`` source), a
    Python int, exact for any deck (653,534,134,886,878,245,000 for the standard one)."""
    return count_deals(deck_counts(deck))


def blocks(counts, first, n):
    """The positions ``first .. first + n - 1`` of the ``every`` source, as blocks the
    compiled code can count: (prefix, rest, local first, m), where the arrangements
    ``local first .. local first + m - 1`` of the cards ``rest`` (few enough that their
    count times their number fits int64), after the fixed cards ``prefix``, are those
    positions in order. A deck whose deals fit has one block, of an empty prefix."""
    left = np.array(counts, np.int64)
    prefix, index, ways = [], first, count_deals(left)
    while ways * int(left.sum()) > checks.MAX_COUNT:  # too many for int64: fix the top card
        c, index, ways = next_card(left, index, ways, int(left.sum()), range(core.N_CLASSES))
        prefix.append(c)
        left[c] -= 1
    m = min(n, ways - index)
    yield np.array(prefix, np.int8), left, index, m
    if m < n:
        yield from blocks(counts, first + m, n - m)


@jit
def multinomial(counts):
    """How many arrangements a deck with ``counts[c]`` cards of class ``c`` has, in int64:
    for the decks :func:`blocks` hands it, whose count times their size fits."""
    total = 0
    result = np.int64(1)
    for c in range(counts.shape[0]):
        for k in range(1, counts[c] + 1):
            total += 1
            result = result * total // k
    return result


@jit
def arrangement(counts, index, out, start, left):
    """The ``index``-th arrangement of the deck ``counts`` in lexicographic order of card
    classes, written to ``out[start:]`` (top card first); ``left``: room for the counts
    (no array is made here, so that a GPU runs it as it is)."""
    for c in range(counts.shape[0]):
        left[c] = counts[c]
    n = out.shape[0] - start
    ways = multinomial(left)
    for j in range(n):
        for c in range(left.shape[0]):
            if left[c] == 0:
                continue
            with_c = ways * left[c] // (n - j)  # arrangements of the rest once c is placed here
            if index < with_c:
                out[start + j] = c
                left[c] -= 1
                ways = with_c
                break
            index -= with_c


@jit
def dealt_sizes(n_cards, n_players, sizes):
    """Hand sizes as a game deals ``n_cards`` cards: as even as possible, the first seats one more."""
    for p in range(n_players):
        sizes[p] = n_cards // n_players + (1 if p < n_cards % n_players else 0)


@jit
def random_position(key, deck, cards, sizes):
    """Position of key ``key``: ``deck`` (classes) shuffled, cut into hands of random
    sizes (seat 0 and some other seat holding cards), written to ``cards`` and ``sizes``."""
    n = deck.shape[0]
    n_players = sizes.shape[0]
    for k in range(n):
        cards[k] = deck[k]
    core.shuffle(key, cards, n)
    z = core.mix64(key ^ np.uint64(0xC0FFEE))
    cut = 1 + np.int64(z % np.uint64(n - 1))  # seat 0: 1 .. n - 1 cards
    left = n - cut
    sizes[0] = cut
    for p in range(1, n_players - 1):
        z = core.mix64(z + np.uint64(p))
        sizes[p] = np.int64(z % np.uint64(left + 1))
        left -= sizes[p]
    sizes[n_players - 1] = left


@jit(parallel=True)
def random_positions(seed, deck, first, cards, sizes):
    """Positions ``first .. first + len(cards) - 1`` of the ``random`` source (seat 0 leads)."""
    for i in prange(cards.shape[0]):
        random_position(core.derive_key(seed, first + i), deck, cards[i], sizes[i])

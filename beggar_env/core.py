"""The rules engine: the one implementation of ``docs/RULES.md`` that everything else drives.

A game's whole state is one numpy record (see :func:`state_dtype`); a batch of games is
an array of them. Hands are ring buffers of card classes, the pile is a plain array in
play order. The functions here are written in plain Python over those records and
compiled with numba; set ``NUMBA_DISABLE_JIT=1`` to step through them as Python.

Three ways to advance a game, all built on :func:`step_card`:

* :func:`step_card` plays one card and settles everything it causes (a completed
  payment is taken, a player who must play with an empty hand is out, the game ends,
  the agreed limit is reached), so the state always waits for the next card;
* :func:`step_trick` plays cards until the pile is taken or the game ends;
* :func:`finish` plays towards the end within a budget of cards, detecting cycles
  (Brent's algorithm over trick-start positions, then a replay to find where the cycle
  starts), and writes a result record once it gets there. It can stop after any number
  of cards and resume later with the same outcome, so that no compiled call runs long
  (Ctrl-C and progress reports work between calls).

Card classes (:class:`Card`): 0 numeral, 1 jack, 2 queen, 3 king, 4 ace; a court
card's class is its honour (the number of cards it demands).
"""

import functools
from enum import IntEnum

import numba
import numpy as np
from numba import prange

from . import checks
from .jit import jit


class Card(IntEnum):
    """Card classes: all that matters to play. A court card's value is its honour."""

    NUMERAL = 0
    JACK = 1
    QUEEN = 2
    KING = 3
    ACE = 4


class Outcome(IntEnum):
    """A game's status; the last three are the outcomes of a finished game."""

    RUNNING = 0
    WIN = 1  # one player holds every card
    CYCLE = 2  # the game never ends (stopped at its first repeated trick-start position)
    LIMIT = 3  # the agreed limit stopped it: most cards in hand wins, a tie is a draw


N_CLASSES = len(Card)
CLASS_SYMBOLS = "-JQKA"  # compact notation, by card class
OUTCOMES = tuple(outcome.name.lower() for outcome in Outcome)  # names by Outcome code

NO_LIMIT = np.iinfo(np.int64).max
NO_SEAT = -1  # "nobody": no court player, no winner

# Standard deck: card id = rank * 4 + suit, ranks 2..A as 0..12, suits C D H S as 0..3.
DECK_SIZE = 52
CLASS_OF_CARD_ID = np.array([max(0, id_ // 4 - 8) for id_ in range(DECK_SIZE)], np.int8)


def capacity_for(n_cards):
    """Ring-buffer length for a game of ``n_cards`` cards: a power of two, at least 64.

    One size for every deal of up to 64 cards means one compilation per player count.
    """
    return max(64, 1 << (max(n_cards, 1) - 1).bit_length())


@functools.cache  # one dtype object per shape: numba's dispatcher types arrays fastest so
def state_dtype(n_players, capacity):
    """The numpy record type of one game's state."""
    return np.dtype(
        [
            ("hands", np.int8, (n_players, capacity)),  # ring buffers of card classes
            ("head", np.uint32, (n_players,)),  # index of each hand's top card (unsigned: no wraparound checks)
            ("held", np.int32, (n_players,)),  # cards in each hand
            ("taken", np.int64, (n_players,)),  # cards each hand has taken from piles, so far
            ("alive", np.uint8, (n_players,)),  # 1 until eliminated
            ("pile", np.int8, (capacity,)),  # in play order
            ("pile_len", np.int32),
            ("n_alive", np.int32),
            ("n_cards", np.int32),  # cards in the game, constant
            ("turn", np.int32),  # seat that plays the next card
            ("owed", np.int32),  # cards still owed to `court` (0: none)
            ("court", np.int32),  # seat that laid the last court card, or NO_SEAT
            ("status", np.int8),  # an Outcome
            ("winner", np.int8),
            ("cards", np.int64),  # cards played so far
            ("tricks", np.int64),  # piles taken so far
            ("max_cards", np.int64),  # the agreed limit (NO_LIMIT: none)
            ("max_tricks", np.int64),
        ],
        align=True,
    )


@functools.cache
def result_dtype(n_players):
    """The numpy record type of one game's result (see :func:`finish`)."""
    return np.dtype(
        [
            ("outcome", np.int8),  # Outcome.WIN, CYCLE or LIMIT
            ("winner", np.int8),  # seat, or NO_SEAT (a cycle, or a draw at the limit)
            ("cards", np.int64),
            ("tricks", np.int64),
            ("hand_sizes", np.int64, (n_players,)),
            ("cycle_start_cards", np.int64),  # -1 unless outcome is CYCLE
            ("cycle_start_tricks", np.int64),
            ("cycle_cards", np.int64),
            ("cycle_tricks", np.int64),
        ],
        align=True,
    )


class Phase(IntEnum):
    """Where :func:`finish` is in a game (kept in a :data:`PROGRESS_DTYPE` record)."""

    DEAL = 0  # the game is still to be dealt (batch loops deal it, then START)
    START = 1
    RUN_OUT = 2  # play to the end or the limit, no cycle detection
    WARM_UP = 3  # play to the first trick where positions are compared
    SEARCH = 4  # Brent's search for a repeated position
    AHEAD = 5  # move the probe one period ahead of the start
    MEET = 6  # walk both until they meet: the cycle's start
    DONE = 7


PROGRESS_DTYPE = np.dtype(
    [
        ("phase", np.int8),  # a Phase
        ("done", np.int64),  # batch loops: games finished in this chunk
        ("power", np.int64),  # Brent's search
        ("lam", np.int64),
        ("period", np.int64),  # tricks in the cycle, once found
        ("steps", np.int64),
        ("max_cards", np.int64),  # the game's own limits, while cycle detection lifts them
        ("max_tricks", np.int64),
    ],
    align=True,
)


def new_states(n_games, n_players, capacity):
    """Zeroed state records, to be filled by one of the ``init_*`` functions.

    A plain array, which compiled functions take fastest; a recarray when the JIT is
    disabled, so that the same code reads ``s.field`` in Python. Python code outside the
    compiled functions reads fields as ``states["field"]``.
    """
    states = np.zeros(n_games, state_dtype(n_players, capacity))
    return states.view(np.recarray) if numba.config.DISABLE_JIT else states


def new_progress(n_rows):
    """:func:`finish`'s progress records, one per game or chunk played at a time."""
    progress = np.zeros(n_rows, PROGRESS_DTYPE)
    return progress.view(np.recarray) if numba.config.DISABLE_JIT else progress


def new_work(n_rows, n_players, capacity):
    """Scratch space for ``n_rows`` games played at once: three state records per row (the
    game, and :func:`finish`'s start and probe) and one progress record per row."""
    return new_states(3 * n_rows, n_players, capacity).reshape(n_rows, 3), new_progress(n_rows)


def new_results(n_games, n_players):
    """Result records (a recarray), filled by :func:`finish`."""
    return np.zeros(n_games, result_dtype(n_players)).view(np.recarray)


# --------------------------------------------------------------------------- set-up


@jit
def init_state(s, cards, hand_sizes, max_cards, max_tricks):
    """Deal ``cards`` (classes, hand after hand, each from the top) into state ``s``."""
    n_players = s.hands.shape[0]
    start = 0
    for p in range(n_players):
        for k in range(hand_sizes[p]):
            s.hands[p, k] = cards[start + k]
        start += hand_sizes[p]
    _reset_counters(s, hand_sizes, max_cards, max_tricks)


@jit
def init_shuffled_state(s, key, max_cards, max_tricks, deck):
    """Deal a standard deck shuffled by ``key`` into ``s``, one card at a time from seat 0.

    ``deck`` is scratch space for 52 card ids; on return it holds the shuffled deck
    (``deck[k]`` went to seat ``k % n_players``, the first card dealt is the top).
    """
    n_players = s.hands.shape[0]
    shuffle_deck(key, deck)
    s.held[:] = 0
    for k in range(DECK_SIZE):
        p = k % n_players
        s.hands[p, s.held[p]] = CLASS_OF_CARD_ID[deck[k]]
        s.held[p] += 1
    _reset_counters(s, s.held, max_cards, max_tricks)


@jit
def _reset_counters(s, hand_sizes, max_cards, max_tricks):
    n_players = s.hands.shape[0]
    n_cards = 0
    holders = 0
    for p in range(n_players):
        s.head[p] = 0
        s.held[p] = hand_sizes[p]
        s.taken[p] = 0
        s.alive[p] = 1
        n_cards += hand_sizes[p]
        if hand_sizes[p] > 0:
            holders += 1
    s.pile_len = 0
    s.n_alive = n_players
    s.n_cards = n_cards
    s.turn = 0
    s.owed = 0
    s.court = NO_SEAT
    s.status = Outcome.RUNNING
    s.winner = NO_SEAT
    s.cards = 0
    s.tricks = 0
    s.max_cards = max_cards
    s.max_tricks = max_tricks
    if holders == 1:  # one player already holds every card
        for p in range(n_players):
            if hand_sizes[p] > 0:
                s.status = Outcome.WIN
                s.winner = p
    else:
        _settle(s)  # seat 0 may have to lead from an empty hand


# ------------------------------------------------------------------ random numbers
# A counter-based generator (SplitMix64), so that game i of a seeded batch is the same
# whichever thread plays it.

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@jit
def mix64(z):
    """SplitMix64's finaliser: a bijective scramble of a uint64."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@jit
def derive_key(seed, index):
    """The key of item ``index`` of the stream seeded by ``seed``, in compiled code (both
    taken as uint64, whatever their integer type)."""
    return mix64(np.uint64(seed) + _GOLDEN * (np.uint64(index) + np.uint64(1)))


def stream_key(seed, index):
    """The key of item ``index`` of the stream seeded by ``seed`` (ints 0 .. 2**64-1 of any
    type: a Python int and a ``numpy.uint64`` of one value give one key), a ``numpy.uint64``."""
    return derive_key(checks.seed(seed), np.uint64(checks.integer("index", index, 0, checks.MAX_SEED)))


@jit
def stream_keys(seed, n, first=0):
    """The keys of items ``first .. first + n - 1`` of the stream seeded by ``seed`` (a uint64)."""
    keys = np.empty(n, np.uint64)
    for i in range(n):
        keys[i] = derive_key(seed, first + i)
    return keys


@jit
def shuffle_deck(key, deck):
    """Fill ``deck`` with the card ids 0..51 in the order shuffled by ``key`` (Fisher-Yates)."""
    for k in range(DECK_SIZE):
        deck[k] = k
    shuffle(key, deck, DECK_SIZE)


@jit
def deal_deck(deck, deal, sizes):
    """Card classes of a shuffled deck dealt one at a time from seat 0 (as
    :func:`init_shuffled_state`), hand after hand into ``deal``, hand sizes into ``sizes``."""
    n_players = sizes.shape[0]
    n = 0
    for p in range(n_players):
        sizes[p] = 0
        for k in range(p, DECK_SIZE, n_players):
            deal[n] = CLASS_OF_CARD_ID[deck[k]]
            n += 1
            sizes[p] += 1


@jit
def shuffle(key, values, n):
    """Shuffle ``values[:n]`` in place in the order given by ``key`` (Fisher-Yates)."""
    z = np.uint64(key)
    for k in range(n - 1, 0, -1):
        z += _GOLDEN
        j = mix64(z) % np.uint64(k + 1)  # bias below 2**-58: immaterial
        values[k], values[j] = values[j], values[k]


# -------------------------------------------------------------------------- rules


@jit
def _next_alive(alive, seat):
    n_players = alive.shape[0]
    seat += 1
    if seat == n_players:
        seat = 0
    while not alive[seat]:
        seat += 1
        if seat == n_players:
            seat = 0
    return seat


@jit
def _put_pile_under(hands, head, held, taken, pile, pile_len, taker):
    mask = pile.shape[0] - 1
    end = head[taker] + held[taker]
    for k in range(pile_len):
        hands[taker, (end + k) & mask] = pile[k]
    held[taker] += pile_len
    taken[taker] += pile_len


@jit
def dealt_left(s, p):
    """How many of the cards dealt to seat ``p`` are still in its hand, unseen: a hand is
    its dealt cards not yet played, then the piles it took, in the order taken (so the
    dealt cards left are those beyond the cards taken)."""
    return max(0, s.held[p] - s.taken[p])


@jit
def _eliminate_empty(s):
    """While the seat that must play has no cards, it is out (RULES 7).

    The next seat still in owes whatever was owed, to the same court player; when one
    seat is left it takes the pile (a trick) and wins.
    """
    while s.held[s.turn] == 0:
        out = s.turn
        s.alive[out] = 0
        s.n_alive -= 1
        s.turn = _next_alive(s.alive, out)
        if s.n_alive == 1:
            _put_pile_under(s.hands, s.head, s.held, s.taken, s.pile, s.pile_len, s.turn)
            s.pile_len = 0
            s.tricks += 1
            s.owed = 0
            s.court = NO_SEAT
            s.status = Outcome.WIN
            s.winner = s.turn
            return


@jit
def _stop_at_limit(s):
    """The agreed limit is reached: most cards in hand wins, a tie is a draw."""
    s.status = Outcome.LIMIT
    best = -1
    s.winner = NO_SEAT
    for p in range(s.held.shape[0]):
        if s.held[p] > best:
            best = s.held[p]
            s.winner = p
        elif s.held[p] == best:
            s.winner = NO_SEAT


@jit
def _settle(s):
    """Settle a state that waits for a card: eliminations, then the limit."""
    if s.status == Outcome.RUNNING:
        _eliminate_empty(s)
    if s.status == Outcome.RUNNING and (s.cards >= s.max_cards or s.tricks >= s.max_tricks):
        _stop_at_limit(s)


@jit
def _stop_at(count, budget, limit):
    return limit if budget >= limit - count else count + budget


@jit
def _advance(s, card_budget, trick_budget):
    """Play up to ``card_budget`` cards (at least one), stopping early after
    ``trick_budget`` takings.

    Every card is settled before the next (see :func:`step_card`). The hot scalars live
    in locals: records share memory with the hands, so the compiler could not otherwise
    keep them in registers.
    """
    if s.status != Outcome.RUNNING:
        return
    hands, head, held, taken, alive, pile = s.hands, s.head, s.held, s.taken, s.alive, s.pile
    mask = pile.shape[0] - 1
    n_cards = s.n_cards
    turn, owed, court, pile_len = s.turn, s.owed, s.court, s.pile_len
    cards, tricks = s.cards, s.tricks
    stop_cards = _stop_at(cards, card_budget, s.max_cards)
    stop_tricks = _stop_at(tricks, trick_budget, s.max_tricks)
    while True:
        h = head[turn]
        card = hands[turn, h]
        head[turn] = (h + 1) & mask
        held[turn] -= 1
        pile[pile_len] = card
        pile_len += 1
        cards += 1
        if card != Card.NUMERAL:  # a court card: the next player pays its honour
            owed = card
            court = turn
            turn = _next_alive(alive, turn)
        elif owed > 0:  # a numeral paid
            owed -= 1
            if owed == 0:  # paid in full: the court player takes the pile
                _put_pile_under(hands, head, held, taken, pile, pile_len, court)
                turn = court
                court = NO_SEAT
                pile_len = 0
                tricks += 1
                if held[turn] == n_cards:
                    s.status = Outcome.WIN
                    s.winner = turn
                    break
                if tricks >= stop_tricks:
                    break
        else:
            turn = _next_alive(alive, turn)
        if held[turn] == 0:  # rare: let the record-level rule act
            s.turn, s.owed, s.court, s.pile_len, s.tricks = turn, owed, court, pile_len, tricks
            _eliminate_empty(s)
            turn, owed, court, pile_len, tricks = s.turn, s.owed, s.court, s.pile_len, s.tricks
            if s.status != Outcome.RUNNING:
                break
        if cards >= stop_cards:
            break
    s.turn, s.owed, s.court, s.pile_len, s.cards, s.tricks = turn, owed, court, pile_len, cards, tricks
    if s.status == Outcome.RUNNING and (cards >= s.max_cards or tricks >= s.max_tricks):
        _stop_at_limit(s)


@jit
def step_card(s):
    """Play one card and settle everything it causes. ``s.status`` must be RUNNING.

    Settling means: a completed payment is taken by the court player, a player who must
    then play from an empty hand is out, the game ends when one player holds every card,
    and the agreed limit stops the game once ``max_cards`` cards (or ``max_tricks``
    takings) are reached and the game goes on.
    """
    _advance(s, 1, NO_LIMIT)


@jit
def step_trick(s):
    """Play cards until the pile is taken or the game ends."""
    _advance(s, NO_LIMIT, 1)


@jit
def advance(s, card_budget):
    """Play up to ``card_budget`` cards (at least one, while the game runs); return how
    many were played."""
    before = s.cards
    _advance(s, card_budget, NO_LIMIT)
    return s.cards - before


# ------------------------------------------------------------- whole games, cycles


@jit
def copy_state(src, dst):
    """Copy one state record into another of the same type."""
    n_players, capacity = src.hands.shape
    for p in range(n_players):  # element loops: numba's slice copies cost more here
        for k in range(capacity):
            dst.hands[p, k] = src.hands[p, k]
        dst.head[p] = src.head[p]
        dst.held[p] = src.held[p]
        dst.taken[p] = src.taken[p]
        dst.alive[p] = src.alive[p]
    for k in range(capacity):
        dst.pile[k] = src.pile[k]
    dst.pile_len = src.pile_len
    dst.n_alive = src.n_alive
    dst.n_cards = src.n_cards
    dst.turn = src.turn
    dst.owed = src.owed
    dst.court = src.court
    dst.status = src.status
    dst.winner = src.winner
    dst.cards = src.cards
    dst.tricks = src.tricks
    dst.max_cards = src.max_cards
    dst.max_tricks = src.max_tricks


@jit
def same_position(s, t):
    """Whether two trick-start states have the same hands (as classes) and leader."""
    if s.turn != t.turn:
        return False
    n_players = s.held.shape[0]
    for p in range(n_players):
        if s.held[p] != t.held[p]:
            return False
    mask = s.pile.shape[0] - 1
    for p in range(n_players):
        hs = s.head[p]
        ht = t.head[p]
        for k in range(s.held[p]):
            if s.hands[p, (hs + k) & mask] != t.hands[p, (ht + k) & mask]:
                return False
    return True


# Almost every game ends long before this many tricks, so positions are only compared
# after it; the replay in `finish` still finds exactly where a cycle starts.
CYCLE_CHECKS_FROM_TRICK = 1024


@jit
def _trick(s):
    """Play one trick (or to the end); return the cards it took."""
    before = s.cards
    _advance(s, NO_LIMIT, 1)
    return s.cards - before


@jit
def _ended_without_limit(s, r, start, f):
    """The game ended while cycle detection had lifted its limits: keep the result if it
    lies within them, else replay from the start with the limits."""
    if s.cards <= f.max_cards and s.tricks <= f.max_tricks:
        _write_result(s, r)
        f.phase = Phase.DONE
    else:
        copy_state(start, s)  # `start` holds the game's own limits
        f.phase = Phase.RUN_OUT


@jit
def finish(s, detect_cycles, r, start, probe, f, budget):
    """Play state ``s`` towards its end within about ``budget`` cards; return what is
    left of the budget (<= 0 when it ran out).

    ``f`` is a progress record (:data:`PROGRESS_DTYPE`): set ``f.phase = Phase.START``
    for a new game, then call until ``f.phase == Phase.DONE``; the result record ``r``
    is then written. A game stopped by the budget resumes exactly where it stopped.
    ``start`` and ``probe`` are scratch records of ``s``'s type, kept between calls.

    With ``detect_cycles``, a game whose trick-start position repeats ends with outcome
    CYCLE at the first repeat (``s`` is left there); the limit in ``s`` still applies
    when it comes first.
    """
    while budget > 0:
        phase = f.phase
        if phase == Phase.START:
            r.cycle_start_cards = -1
            r.cycle_start_tricks = -1
            r.cycle_cards = -1
            r.cycle_tricks = -1
            if detect_cycles and s.status == Outcome.RUNNING:
                f.max_cards = s.max_cards
                f.max_tricks = s.max_tricks
                copy_state(s, start)
                s.max_cards = NO_LIMIT
                s.max_tricks = NO_LIMIT
                f.phase = Phase.WARM_UP
            else:
                f.phase = Phase.RUN_OUT
        elif phase == Phase.RUN_OUT:
            if s.status == Outcome.RUNNING:
                budget -= advance(s, budget)
            if s.status != Outcome.RUNNING:
                _write_result(s, r)
                f.phase = Phase.DONE
        elif phase == Phase.WARM_UP:
            before = s.cards
            if s.tricks < CYCLE_CHECKS_FROM_TRICK:
                _advance(s, budget, CYCLE_CHECKS_FROM_TRICK - s.tricks)
            budget -= s.cards - before
            if s.status != Outcome.RUNNING:
                _ended_without_limit(s, r, start, f)
            elif s.tricks >= CYCLE_CHECKS_FROM_TRICK:
                copy_state(s, probe)
                f.power = 1
                f.lam = 0
                f.phase = Phase.SEARCH
        elif phase == Phase.SEARCH:  # Brent: `probe` holds the position `lam` tricks back
            while budget > 0:
                budget -= _trick(s)
                if s.status != Outcome.RUNNING:
                    _ended_without_limit(s, r, start, f)
                    break
                f.lam += 1
                if same_position(s, probe):  # the period is `lam` tricks
                    f.period = f.lam
                    copy_state(start, s)
                    s.max_cards = NO_LIMIT
                    s.max_tricks = NO_LIMIT
                    copy_state(s, probe)
                    f.steps = 0
                    f.phase = Phase.AHEAD
                    break
                if f.lam == f.power:
                    copy_state(s, probe)
                    f.power *= 2
                    f.lam = 0
        elif phase == Phase.AHEAD:  # walk the probe `period` tricks ahead of the start
            while budget > 0 and f.steps < f.period:
                budget -= _trick(probe)
                f.steps += 1
            if f.steps == f.period:
                f.phase = Phase.MEET
        elif phase == Phase.MEET:  # walk both until they meet: where the cycle starts
            while budget > 0 and not same_position(s, probe):
                budget -= _trick(s) + _trick(probe)
            if same_position(s, probe):
                if probe.cards <= f.max_cards and probe.tricks <= f.max_tricks:
                    r.cycle_start_cards = s.cards
                    r.cycle_start_tricks = s.tricks
                    r.cycle_cards = probe.cards - s.cards
                    r.cycle_tricks = f.period
                    copy_state(probe, s)
                    s.status = Outcome.CYCLE
                    s.max_cards = f.max_cards
                    s.max_tricks = f.max_tricks
                    _write_result(s, r)
                    f.phase = Phase.DONE
                else:
                    copy_state(start, s)  # the limit comes first: play up to it
                    f.phase = Phase.RUN_OUT
        else:  # DONE (or DEAL, which batch loops handle)
            break
    return budget


@jit
def finish_now(s, detect_cycles, r, start, probe, f):
    """:func:`finish` a new game in one call, without a budget (for games known to be short)."""
    f.phase = Phase.START
    finish(s, detect_cycles, r, start, probe, f, NO_LIMIT)


@jit
def _write_result(s, r):
    r.outcome = s.status
    r.winner = s.winner
    r.cards = s.cards
    r.tricks = s.tricks
    for p in range(s.held.shape[0]):
        r.hand_sizes[p] = s.held[p]


@jit
def episode_over(s, r):
    """Whether the episode of game ``s``, whose result ``r`` is known, is over: the game
    has ended, or it has reached its first repeated position (then ``s`` is marked CYCLE).

    This is the end rule of the envs, the datasets and traces: a game that never ends
    stops at the first repeat, as :func:`finish` reports it.
    """
    if s.status == Outcome.RUNNING and r.outcome == Outcome.CYCLE and s.tricks == r.tricks:
        s.status = Outcome.CYCLE
    return s.status != Outcome.RUNNING


@jit
def outcome_label(winner, n_players):
    """The forecast label of an outcome: the winner's seat, or ``n_players`` for no winner
    (``winner`` is NO_SEAT: a cycle, or a draw at the limit)."""
    return winner if winner >= 0 else n_players


@jit
def outcome_labels(winners, n_players):
    """:func:`outcome_label` of each winner in an array."""
    labels = np.empty(winners.shape[0], np.int64)
    for i in range(winners.shape[0]):
        labels[i] = outcome_label(winners[i], n_players)
    return labels


# ---------------------------------------------------------------------- batches
# The batch functions split the games into `work.shape[0]` contiguous chunks, one per
# parallel task; `work[c]` holds chunk c's scratch records (the game, start, probe) and
# `progress[c]` how far the chunk has got. Each call plays about `budget` cards per
# chunk and returns; call again until every chunk is done (see `batch_done`).

CALL_BUDGET = 1 << 22  # cards per chunk and compiled call: a few hundredths of a second


@jit
def chunk_bounds(c, n_chunks, n_items):
    """The first and one-past-last items of chunk ``c`` of ``n_chunks`` contiguous chunks."""
    return c * n_items // n_chunks, (c + 1) * n_items // n_chunks


def batch_done(progress):
    """Games finished so far by the calls of a batch function with these progress records."""
    return int(progress["done"].sum())


_NO_CARDS = np.zeros((0, 1), np.int8)
_NO_HAND_SIZES = np.zeros((0, 1), np.int32)


def given_deals(cards, hand_sizes):
    """The deals of a batch given one by one: game ``i`` is ``cards[i]`` (classes, hand
    after hand) dealt in hands of ``hand_sizes[i]`` (the arrays of ``deals.pack_deals``)."""
    return (cards, hand_sizes, np.uint64(0), np.int64(0))


def shuffled_deals(seed, first=0):
    """The deals of a batch of random games: game ``i`` is game ``first + i`` of the random
    stream ``seed``, a shuffled standard deck dealt one card at a time from seat 0."""
    return (_NO_CARDS, _NO_HAND_SIZES, np.uint64(seed), np.int64(first))


@jit
def deal(s, deals, i, max_cards, max_tricks, deck):
    """Deal game ``i`` of a batch's ``deals`` (:func:`given_deals` or :func:`shuffled_deals`)
    into ``s``; ``deck`` is scratch space for 52 card ids."""
    cards, hand_sizes, seed, first = deals
    if cards.shape[0] > 0:
        init_state(s, cards[i], hand_sizes[i], max_cards, max_tricks)
    else:
        init_shuffled_state(s, derive_key(seed, first + i), max_cards, max_tricks, deck)


@jit(parallel=True)
def finish_batch(deals, max_cards, max_tricks, detect_cycles, results, work, progress, budget):
    """Play the games of ``deals`` (one per result record) towards their end, ``budget``
    cards per chunk and call."""
    for c in prange(work.shape[0]):
        s, f = work[c, 0], progress[c]
        deck = np.empty(DECK_SIZE, np.int64)
        lo, hi = chunk_bounds(c, work.shape[0], results.shape[0])
        left = budget
        while lo + f.done < hi and left > 0:
            i = lo + f.done
            if f.phase == Phase.DEAL:
                deal(s, deals, i, max_cards, max_tricks, deck)
                f.phase = Phase.START
            left = finish(s, detect_cycles, results[i], work[c, 1], work[c, 2], f, left)
            if f.phase == Phase.DONE:
                f.done += 1
                f.phase = Phase.DEAL


def play_batch(deals, max_cards, max_tricks, detect_cycles, results, work, progress=None):
    """Play every game of ``deals`` to its end into ``results``, in budgeted calls of
    :func:`finish_batch` (Ctrl-C works between them); ``work`` is :func:`new_work`'s, one row
    per chunk. ``progress(games_done)`` after each call."""
    states, chunk_progress = work
    chunk_progress[:] = 0
    while batch_done(chunk_progress) < len(results):
        finish_batch(deals, max_cards, max_tricks, detect_cycles, results, states, chunk_progress, CALL_BUDGET)
        if progress is not None:
            progress(batch_done(chunk_progress))


@jit(parallel=True)
def shuffled_decks(seed, first, decks):
    """The shuffled decks (card ids) of games ``first ..`` of the random stream ``seed``."""
    for i in prange(decks.shape[0]):
        shuffle_deck(derive_key(seed, first + i), decks[i])

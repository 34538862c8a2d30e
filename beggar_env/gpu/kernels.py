"""The rules of :mod:`beggar_env.core` as CUDA device code (numba-cuda), one game per thread.

Imported only by :mod:`beggar_env.gpu` once it found numba-cuda and a GPU (or numba's CUDA
simulator, ``NUMBA_ENABLE_CUDASIM=1``): importing ``numba.cuda`` needs them.

A thread holds three game states in local memory, as :func:`core.finish` does (the game,
and cycle detection's start and probe): row ``k`` of ``h`` (int8: the hands' ring buffers,
``capacity`` cards each, then the pile) and of ``m`` (int64: the counters, laid out by the
``M_*`` offsets below, then each seat's head, held and alive). The functions mirror core's
line by line, with the same names; the random deals come from core's own ``derive_key``,
``shuffle`` and ``shuffle_deck``, compiled for the GPU from their source (:func:`device_twins`),
so a seed deals the same games on both engines.

Each block owns a contiguous range of games and plays it in rounds: its threads deal a
backlog of ready deals into shared memory (byte-sized cards), then each thread takes the
next ready deal (an atomic counter in shared memory) as soon as its game ends, so one long
game does not hold the others of its block back; the next round starts when the backlog
is spent.
"""

import functools
from types import FunctionType

import numba
from numba import cuda

from .. import core
from ..core import CYCLE_CHECKS_FROM_TRICK, DECK_SIZE, NO_LIMIT, NO_SEAT

# core's enums as plain ints (device code compares them with int64 fields)
RUNNING, WIN, CYCLE, LIMIT = (int(o) for o in core.Outcome)
NUMERAL = int(core.Card.NUMERAL)
RUN_OUT, WARM_UP, SEARCH, AHEAD, MEET, DONE = (
    int(p)
    for p in (
        core.Phase.RUN_OUT,
        core.Phase.WARM_UP,
        core.Phase.SEARCH,
        core.Phase.AHEAD,
        core.Phase.MEET,
        core.Phase.DONE,
    )
)

# offsets in a state's int64 row
M_TURN, M_OWED, M_COURT, M_PILE_LEN, M_CARDS, M_TRICKS, M_STATUS, M_WINNER = range(8)
M_N_ALIVE, M_N_CARDS, M_MAX_CARDS, M_MAX_TRICKS = range(8, 12)
M_SEATS = 12  # then head[p], held[p], alive[p]: M_SEATS + p, + n_players + p, + 2 * n_players + p

# offsets in a result row (int64): as core.result_dtype, hand sizes last
R_OUTCOME, R_WINNER, R_CARDS, R_TRICKS, R_CYCLE_START_CARDS, R_CYCLE_START_TRICKS, R_CYCLE_CARDS, R_CYCLE_TRICKS = (
    range(8)
)
R_HAND_SIZES = 8
RESULT_FIELDS = ("outcome", "winner", "cards", "tricks") + core.result_dtype(2).names[5:]

GAME, START, PROBE = 0, 1, 2  # a thread's three states
SHARED_BYTES = 32 * 1024  # a block's backlog of deals stays below this


def meta_length(n_players):
    return M_SEATS + 3 * n_players


def result_length(n_players):
    return R_HAND_SIZES + n_players


def device_twins(module, names):
    """``module``'s compiled functions ``names`` compiled for the GPU from their own source,
    calling each other's twins: the same code, so the same numbers."""
    namespace = dict(vars(module))
    twins = {}
    for name in names:
        f = getattr(module, name).py_func
        twin = FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
        namespace[name] = twins[name] = cuda.jit(device=True)(twin)
    return twins


_twins = device_twins(core, ("mix64", "derive_key", "shuffle", "shuffle_deck"))
derive_key, shuffle, shuffle_deck = _twins["derive_key"], _twins["shuffle"], _twins["shuffle_deck"]
CLASS_OF_CARD_ID = core.CLASS_OF_CARD_ID

device = cuda.jit(device=True)


# ----------------------------------------------------------------- one state


@device
def n_players_of(m):
    return (m.shape[1] - M_SEATS) // 3


@device
def capacity_of(h, m):
    return h.shape[1] // (n_players_of(m) + 1)


@device
def _next_alive(m, k, seat):
    n = n_players_of(m)
    seat += 1
    if seat == n:
        seat = 0
    while m[k, M_SEATS + 2 * n + seat] == 0:
        seat += 1
        if seat == n:
            seat = 0
    return seat


@device
def _put_pile_under(h, m, k, pile_len, taker):
    n = n_players_of(m)
    capacity = capacity_of(h, m)
    mask = capacity - 1
    end = m[k, M_SEATS + taker] + m[k, M_SEATS + n + taker]
    for j in range(pile_len):
        h[k, taker * capacity + ((end + j) & mask)] = h[k, n * capacity + j]
    m[k, M_SEATS + n + taker] += pile_len


@device
def _eliminate_empty(h, m, k):
    """core._eliminate_empty: while the seat that must play has no cards, it is out."""
    n = n_players_of(m)
    while m[k, M_SEATS + n + m[k, M_TURN]] == 0:
        out = m[k, M_TURN]
        m[k, M_SEATS + 2 * n + out] = 0
        m[k, M_N_ALIVE] -= 1
        m[k, M_TURN] = _next_alive(m, k, out)
        if m[k, M_N_ALIVE] == 1:
            _put_pile_under(h, m, k, m[k, M_PILE_LEN], m[k, M_TURN])
            m[k, M_PILE_LEN] = 0
            m[k, M_TRICKS] += 1
            m[k, M_OWED] = 0
            m[k, M_COURT] = NO_SEAT
            m[k, M_STATUS] = WIN
            m[k, M_WINNER] = m[k, M_TURN]
            return


@device
def _stop_at_limit(m, k):
    """core._stop_at_limit: most cards in hand wins, a tie is a draw."""
    n = n_players_of(m)
    m[k, M_STATUS] = LIMIT
    best = -1
    m[k, M_WINNER] = NO_SEAT
    for p in range(n):
        held = m[k, M_SEATS + n + p]
        if held > best:
            best = held
            m[k, M_WINNER] = p
        elif held == best:
            m[k, M_WINNER] = NO_SEAT


@device
def _past_limit(m, k):
    return m[k, M_CARDS] >= m[k, M_MAX_CARDS] or m[k, M_TRICKS] >= m[k, M_MAX_TRICKS]


@device
def _settle(h, m, k):
    if m[k, M_STATUS] == RUNNING:
        _eliminate_empty(h, m, k)
    if m[k, M_STATUS] == RUNNING and _past_limit(m, k):
        _stop_at_limit(m, k)


@device
def _stop_at(count, budget, limit):
    return limit if budget >= limit - count else count + budget


@device
def _advance(h, m, k, card_budget, trick_budget):
    """core._advance: up to ``card_budget`` cards, stopping after ``trick_budget`` takings."""
    if m[k, M_STATUS] != RUNNING:
        return
    n = n_players_of(m)
    capacity = capacity_of(h, m)
    mask = capacity - 1
    pile = n * capacity
    held = M_SEATS + n
    n_cards = m[k, M_N_CARDS]
    turn, owed, court, pile_len = m[k, M_TURN], m[k, M_OWED], m[k, M_COURT], m[k, M_PILE_LEN]
    cards, tricks = m[k, M_CARDS], m[k, M_TRICKS]
    stop_cards = _stop_at(cards, card_budget, m[k, M_MAX_CARDS])
    stop_tricks = _stop_at(tricks, trick_budget, m[k, M_MAX_TRICKS])
    while True:
        top = m[k, M_SEATS + turn]
        card = h[k, turn * capacity + top]
        m[k, M_SEATS + turn] = (top + 1) & mask
        m[k, held + turn] -= 1
        h[k, pile + pile_len] = card
        pile_len += 1
        cards += 1
        if card != NUMERAL:  # a court card: the next player pays its honour
            owed = card
            court = turn
            turn = _next_alive(m, k, turn)
        elif owed > 0:
            owed -= 1
            if owed == 0:  # paid in full: the court player takes the pile
                _put_pile_under(h, m, k, pile_len, court)
                turn = court
                court = NO_SEAT
                pile_len = 0
                tricks += 1
                if m[k, held + turn] == n_cards:
                    m[k, M_STATUS] = WIN
                    m[k, M_WINNER] = turn
                    break
                if tricks >= stop_tricks:
                    break
        else:
            turn = _next_alive(m, k, turn)
        if m[k, held + turn] == 0:  # rare: the state-level rule acts
            m[k, M_TURN], m[k, M_OWED], m[k, M_COURT], m[k, M_PILE_LEN], m[k, M_TRICKS] = (
                turn,
                owed,
                court,
                pile_len,
                tricks,
            )
            _eliminate_empty(h, m, k)
            turn, owed, court, pile_len, tricks = (
                m[k, M_TURN],
                m[k, M_OWED],
                m[k, M_COURT],
                m[k, M_PILE_LEN],
                m[k, M_TRICKS],
            )
            if m[k, M_STATUS] != RUNNING:
                break
        if cards >= stop_cards:
            break
    m[k, M_TURN], m[k, M_OWED], m[k, M_COURT], m[k, M_PILE_LEN] = turn, owed, court, pile_len
    m[k, M_CARDS], m[k, M_TRICKS] = cards, tricks
    if m[k, M_STATUS] == RUNNING and _past_limit(m, k):
        _stop_at_limit(m, k)


@device
def _trick(h, m, k):
    _advance(h, m, k, NO_LIMIT, 1)


@device
def _copy_state(h, m, src, dst):
    for j in range(h.shape[1]):
        h[dst, j] = h[src, j]
    for j in range(m.shape[1]):
        m[dst, j] = m[src, j]


@device
def _same_position(h, m, a, b):
    """core.same_position: the same hands (as classes) and leader."""
    if m[a, M_TURN] != m[b, M_TURN]:
        return False
    n = n_players_of(m)
    for p in range(n):
        if m[a, M_SEATS + n + p] != m[b, M_SEATS + n + p]:
            return False
    capacity = capacity_of(h, m)
    mask = capacity - 1
    for p in range(n):
        ha = m[a, M_SEATS + p]
        hb = m[b, M_SEATS + p]
        for j in range(m[a, M_SEATS + n + p]):
            if h[a, p * capacity + ((ha + j) & mask)] != h[b, p * capacity + ((hb + j) & mask)]:
                return False
    return True


# ------------------------------------------------------------- set-up, results


@device
def _reset_counters(h, m, k, max_cards, max_tricks):
    """core._reset_counters, the hands already in place and ``held`` set."""
    n = n_players_of(m)
    n_cards = 0
    holders = 0
    for p in range(n):
        m[k, M_SEATS + p] = 0
        m[k, M_SEATS + 2 * n + p] = 1
        n_cards += m[k, M_SEATS + n + p]
        holders += m[k, M_SEATS + n + p] > 0
    m[k, M_PILE_LEN] = 0
    m[k, M_N_ALIVE] = n
    m[k, M_N_CARDS] = n_cards
    m[k, M_TURN] = 0
    m[k, M_OWED] = 0
    m[k, M_COURT] = NO_SEAT
    m[k, M_STATUS] = RUNNING
    m[k, M_WINNER] = NO_SEAT
    m[k, M_CARDS] = 0
    m[k, M_TRICKS] = 0
    m[k, M_MAX_CARDS] = max_cards
    m[k, M_MAX_TRICKS] = max_tricks
    if holders == 1:  # one player already holds every card
        for p in range(n):
            if m[k, M_SEATS + n + p] > 0:
                m[k, M_STATUS] = WIN
                m[k, M_WINNER] = p
    else:
        _settle(h, m, k)


@device
def _init_state(h, m, k, cards, sizes, slot, max_cards, max_tricks):
    """core.init_state from row ``slot`` of a backlog (classes hand after hand, and sizes)."""
    n = n_players_of(m)
    capacity = capacity_of(h, m)
    start = 0
    for p in range(n):
        for j in range(sizes[slot, p]):
            h[k, p * capacity + j] = cards[slot, start + j]
        start += sizes[slot, p]
        m[k, M_SEATS + n + p] = sizes[slot, p]
    _reset_counters(h, m, k, max_cards, max_tricks)


@device
def _write_result(m, k, r):
    n = n_players_of(m)
    r[R_OUTCOME] = m[k, M_STATUS]
    r[R_WINNER] = m[k, M_WINNER]
    r[R_CARDS] = m[k, M_CARDS]
    r[R_TRICKS] = m[k, M_TRICKS]
    for p in range(n):
        r[R_HAND_SIZES + p] = m[k, M_SEATS + n + p]


# --------------------------------------------------------- whole games, cycles


@device
def _ended_without_limit(h, m, r, max_cards, max_tricks):
    """core._ended_without_limit; returns the next phase."""
    if m[GAME, M_CARDS] <= max_cards and m[GAME, M_TRICKS] <= max_tricks:
        _write_result(m, GAME, r)
        return DONE
    _copy_state(h, m, START, GAME)  # the start holds the game's own limits
    return RUN_OUT


@device
def _lift_limits(m, k):
    m[k, M_MAX_CARDS] = NO_LIMIT
    m[k, M_MAX_TRICKS] = NO_LIMIT


@device
def _search(h, m, r, max_cards, max_tricks):
    """Brent's search from the probe (core.finish's SEARCH); returns (next phase, period)."""
    power = 1
    lam = 0
    while True:
        _trick(h, m, GAME)
        if m[GAME, M_STATUS] != RUNNING:
            return _ended_without_limit(h, m, r, max_cards, max_tricks), 0
        lam += 1
        if _same_position(h, m, GAME, PROBE):  # the period is `lam` tricks
            _copy_state(h, m, START, GAME)
            _lift_limits(m, GAME)
            _copy_state(h, m, GAME, PROBE)
            return AHEAD, lam
        if lam == power:
            _copy_state(h, m, GAME, PROBE)
            power *= 2
            lam = 0


@device
def _meet(h, m, r, period, max_cards, max_tricks):
    """Walk the game and the probe, ``period`` tricks ahead, until they meet (core's MEET)."""
    while not _same_position(h, m, GAME, PROBE):
        _trick(h, m, GAME)
        _trick(h, m, PROBE)
    if m[PROBE, M_CARDS] > max_cards or m[PROBE, M_TRICKS] > max_tricks:
        _copy_state(h, m, START, GAME)  # the limit comes first: play up to it
        return RUN_OUT
    r[R_CYCLE_START_CARDS] = m[GAME, M_CARDS]
    r[R_CYCLE_START_TRICKS] = m[GAME, M_TRICKS]
    r[R_CYCLE_CARDS] = m[PROBE, M_CARDS] - m[GAME, M_CARDS]
    r[R_CYCLE_TRICKS] = period
    _copy_state(h, m, PROBE, GAME)
    m[GAME, M_STATUS] = CYCLE
    m[GAME, M_MAX_CARDS] = max_cards
    m[GAME, M_MAX_TRICKS] = max_tricks
    _write_result(m, GAME, r)
    return DONE


@device
def finish(h, m, detect_cycles, r):
    """core.finish_now for state GAME, into result row ``r``: the same phases, unbudgeted
    (with ``detect_cycles`` every game ends; without, the caller sets a limit)."""
    for j in range(R_CYCLE_START_CARDS, R_HAND_SIZES):
        r[j] = -1
    max_cards, max_tricks = m[GAME, M_MAX_CARDS], m[GAME, M_MAX_TRICKS]
    phase = RUN_OUT
    period = 0
    if detect_cycles and m[GAME, M_STATUS] == RUNNING:
        _copy_state(h, m, GAME, START)
        _lift_limits(m, GAME)
        phase = WARM_UP
    while phase != DONE:
        if phase == RUN_OUT:
            _advance(h, m, GAME, NO_LIMIT, NO_LIMIT)
            _write_result(m, GAME, r)
            phase = DONE
        elif phase == WARM_UP:
            if m[GAME, M_TRICKS] < CYCLE_CHECKS_FROM_TRICK:
                _advance(h, m, GAME, NO_LIMIT, CYCLE_CHECKS_FROM_TRICK - m[GAME, M_TRICKS])
            if m[GAME, M_STATUS] != RUNNING:
                phase = _ended_without_limit(h, m, r, max_cards, max_tricks)
            else:
                _copy_state(h, m, GAME, PROBE)
                phase = SEARCH
        elif phase == SEARCH:
            phase, period = _search(h, m, r, max_cards, max_tricks)
        elif phase == AHEAD:
            for _ in range(period):
                _trick(h, m, PROBE)
            phase = MEET
        else:
            phase = _meet(h, m, r, period, max_cards, max_tricks)


# ------------------------------------------------------------------- deals


@device
def _deal_shuffled(cards, sizes, slot, key, deck):
    """A shuffled deck dealt one card at a time from seat 0, as core.init_shuffled_state,
    into backlog row ``slot`` hand after hand (as searchers.deal_deck)."""
    n = sizes.shape[1]
    shuffle_deck(key, deck)
    j = 0
    for p in range(n):
        sizes[slot, p] = 0
        for d in range(p, DECK_SIZE, n):
            cards[slot, j] = CLASS_OF_CARD_ID[deck[d]]
            j += 1
            sizes[slot, p] += 1


@device
def _deal_given(cards, sizes, slot, given_cards, given_sizes, i):
    for j in range(given_cards.shape[1]):
        cards[slot, j] = given_cards[i, j]
    for p in range(sizes.shape[1]):
        sizes[slot, p] = given_sizes[i, p]


@device
def block_range(n_items):
    """This block's contiguous share of ``n_items`` (core.chunk_bounds)."""
    b = cuda.blockIdx.x
    n_blocks = cuda.gridDim.x
    return b * n_items // n_blocks, (b + 1) * n_items // n_blocks


def backlog_deals(threads, width, n_players):
    """Deals in a block's backlog: four per thread, within :data:`SHARED_BYTES`."""
    return max(1, min(4 * threads, SHARED_BYTES // (width + 2 * n_players)))


@functools.cache
def games_kernel(n_players, capacity, width, threads):
    """The kernel that plays a launch's games: ``kernel[blocks, threads](given, cards,
    sizes, seed, first, n_games, max_cards, max_tricks, detect_cycles, out)``; game ``i`` is
    ``cards[i]``/``sizes[i]`` when ``given``, else game ``first + i`` of the random stream
    ``seed``; ``out[i]`` its result row."""
    backlog = backlog_deals(threads, width, n_players)
    state_length = (n_players + 1) * capacity
    meta = meta_length(n_players)
    result = result_length(n_players)

    @cuda.jit
    def kernel(given, given_cards, given_sizes, seed, first, n_games, max_cards, max_tricks, detect_cycles, out):
        ready = cuda.shared.array((backlog, width), numba.int8)  # the backlog: byte-sized cards
        ready_sizes = cuda.shared.array((backlog, n_players), numba.int16)
        taken = cuda.shared.array(1, numba.int32)
        h = cuda.local.array((3, state_length), numba.int8)
        m = cuda.local.array((3, meta), numba.int64)
        r = cuda.local.array(result, numba.int64)
        deck = cuda.local.array(DECK_SIZE, numba.int8)
        t = cuda.threadIdx.x
        lo, hi = block_range(n_games)
        for round_lo in range(lo, hi, backlog):
            n_ready = min(backlog, hi - round_lo)
            for slot in range(t, n_ready, threads):  # deal the backlog together
                i = round_lo + slot
                if given:
                    _deal_given(ready, ready_sizes, slot, given_cards, given_sizes, i)
                else:
                    _deal_shuffled(ready, ready_sizes, slot, derive_key(seed, first + i), deck)
            if t == 0:
                taken[0] = 0
            cuda.syncthreads()
            slot = cuda.atomic.add(taken, 0, 1)
            while slot < n_ready:  # a thread whose game ended takes the next ready deal
                _init_state(h, m, GAME, ready, ready_sizes, slot, max_cards, max_tricks)
                finish(h, m, detect_cycles, r)
                for j in range(result):
                    out[round_lo + slot, j] = r[j]
                slot = cuda.atomic.add(taken, 0, 1)
            cuda.syncthreads()

    return kernel


# --------------------------------------------------------------- rollouts


@device
def _set_position(h, m, hands, bag, pile, pile_size, table, alive, counters, i, max_cards):
    """rollouts._set_position: position ``i``, its unknown places filled from ``bag``."""
    n = n_players_of(m)
    capacity = capacity_of(h, m)
    next_card = 0
    n_cards = 0
    for p in range(n):
        held = 0
        for t in range(hands.shape[2]):
            card = hands[i, p, t]
            if card == -1:  # EMPTY
                break
            if card == -2:  # UNKNOWN
                card = bag[next_card]
                next_card += 1
            h[GAME, p * capacity + t] = card
            held += 1
        m[GAME, M_SEATS + p] = 0
        m[GAME, M_SEATS + n + p] = held
        m[GAME, M_SEATS + 2 * n + p] = alive[i, p]
        n_cards += held
    for t in range(pile_size[i]):
        h[GAME, n * capacity + t] = pile[i, t]
    m[GAME, M_PILE_LEN] = pile_size[i]
    m[GAME, M_N_CARDS] = n_cards + pile_size[i]
    m[GAME, M_N_ALIVE] = 0
    for p in range(n):
        m[GAME, M_N_ALIVE] += alive[i, p]
    m[GAME, M_TURN], m[GAME, M_OWED], m[GAME, M_COURT] = table[i, 0], table[i, 1], table[i, 2]
    m[GAME, M_CARDS], m[GAME, M_TRICKS] = counters[i, 0], counters[i, 1]
    m[GAME, M_MAX_CARDS] = max_cards
    m[GAME, M_MAX_TRICKS] = NO_LIMIT
    m[GAME, M_STATUS] = RUNNING
    m[GAME, M_WINNER] = NO_SEAT
    for p in range(n):
        if m[GAME, M_SEATS + n + p] == m[GAME, M_N_CARDS]:
            m[GAME, M_STATUS] = WIN
            m[GAME, M_WINNER] = p


@device
def _fill_bag(unseen, i, bag):
    """The unseen cards of position ``i`` in class order; returns (how many, classes)."""
    n_hidden = 0
    classes = 0
    for card in range(unseen.shape[1]):
        classes += unseen[i, card] > 0
        for _ in range(unseen[i, card]):
            bag[n_hidden] = card
            n_hidden += 1
    return n_hidden, classes


@functools.cache
def rollouts_kernel(n_players, capacity):
    """The kernel of rollouts.play_out: one position per thread, taken from the block's
    share as threads free up; ``counts[i]``, ``rollouts[i]`` and ``played[i]`` its results."""
    state_length = (n_players + 1) * capacity
    meta = meta_length(n_players)
    result = result_length(n_players)

    @cuda.jit
    def kernel(
        hands, unseen, pile, pile_size, table, alive, counters, max_cards, k, seed, first, counts, rollouts, played
    ):
        taken = cuda.shared.array(1, numba.int32)
        h = cuda.local.array((3, state_length), numba.int8)
        m = cuda.local.array((3, meta), numba.int64)
        r = cuda.local.array(result, numba.int64)
        bag = cuda.local.array(DECK_SIZE, numba.int8)
        lo, hi = block_range(counts.shape[0])
        if cuda.threadIdx.x == 0:
            taken[0] = 0
        cuda.syncthreads()
        i = lo + cuda.atomic.add(taken, 0, 1)
        while i < hi:
            n_hidden, classes = _fill_bag(unseen, i, bag)
            runs = k if classes >= 2 else 1  # one class: a single arrangement
            key = derive_key(seed, first + i)
            total = 0
            for j in range(runs):
                if runs > 1:
                    shuffle(derive_key(key, j), bag, n_hidden)
                _set_position(h, m, hands, bag, pile, pile_size, table, alive, counters, i, max_cards)
                finish(h, m, True, r)
                winner = r[R_WINNER]
                counts[i, winner if winner >= 0 else n_players] += 1
                total += r[R_CARDS] - counters[i, 0]
            rollouts[i] = runs
            played[i] = total
            i = lo + cuda.atomic.add(taken, 0, 1)

    return kernel

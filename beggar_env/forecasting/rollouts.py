"""Playing positions out from what is on the table: the core of the Bayes forecaster
(unseen cards dealt at random, many times) and of the oracle (every hand known): what the
compiled rollouts may be given, checked, and :func:`play_out` on this machine's cores or
on a GPU (:mod:`~beggar_env.forecasting.gpu_rollouts`), both playing the compiled steps of
:mod:`~beggar_env.forecasting.rollout_steps`.

A position is a decision point as ``Beggar-v0`` shows it: the public fields, and each hand
from the top as ``known`` gives it (a class, or ``UNKNOWN`` for a dealt card not yet seen,
``EMPTY`` after the last card; the oracle's ``hands`` are the same with no unknowns). The
unseen cards (``unseen``: how many of each class) are dealt to the unknown places in
uniformly random order, each arrangement played to its end by the engine with cycle
detection and the game's limit; the outcome labels are counted.

Why uniformly random: a uniform random deal, conditioned on the public history, is
uniform over the arrangements of the unseen cards in the unknown places (see
``docs/forecasting.md``), so the outcome frequencies converge to the Bayes posterior.
"""

import numpy as np
from numba import prange

from .. import checks, core, gpu, task
from ..jit import jit, parallel
from .rollout_steps import EMPTY, UNKNOWN, roll_position

POSITIONS_PER_CALL = 64  # positions per chunk and compiled call: Ctrl-C and progress between calls


# ------------------------------------------------------- what the kernel may be given
# The kernel trusts its arrays: an unseen count beyond the deck overruns its bag, a seat
# to play that is out loops for ever. So every batch is checked first, field by field
# (present, integers, of its shape and range) and position by position (the rules below:
# what every position of a game meets), and refused in one line naming the field.

LEVELS = {"known": "counted", "hands": "full"}  # the hands field -> the observation level that has it
CARD_FIELDS = ("known", "hands", "pile")  # fields of card classes (and -1, -2)
DECK_CLASSES = np.bincount(
    core.CLASS_OF_CARD_ID, minlength=core.N_CLASSES
)  # a standard deck: 36 numerals, 4 of each court


def _card_after_the_end(f, hands):
    held = f[hands] != EMPTY
    return (held[:, :, 1:] & ~held[:, :, :-1]).any(axis=(1, 2))


def _hand_sizes_miscount(f, hands):
    return ((f[hands] != EMPTY).sum(axis=2) != f["hand_sizes"]).any(axis=1)


def _pile_miscount(f, hands):
    placed = f["pile"] != EMPTY
    return (placed != (np.arange(placed.shape[1]) < f["pile_size"][:, None])).any(axis=1)


def _unseen_place_below_a_seen_card(f, hands):
    if hands != "known":
        return np.zeros(len(f["cards"]), bool)
    hidden = f["known"] == UNKNOWN
    return (hidden[:, :, 1:] & ~hidden[:, :, :-1]).any(axis=(1, 2))


def _unseen_miscount(f, hands):
    if hands != "known":
        return np.zeros(len(f["cards"]), bool)
    return (f["known"] == UNKNOWN).sum(axis=(1, 2)) != f["unseen"].sum(axis=1)


def _more_than_a_deck(f, hands):
    held = np.stack([(f[hands] == c).sum(axis=(1, 2)) + (f["pile"] == c).sum(axis=1) for c in range(core.N_CLASSES)], 1)
    if hands == "known":
        held = held + f["unseen"]
    return (held > DECK_CLASSES).any(axis=1)


def _holder_out(f, hands):
    return ((f["hand_sizes"] > 0) & (f["alive"] == 0)).any(axis=1)


def _turn_cannot_play(f, hands):
    rows = np.arange(len(f["turn"]))
    return (f["alive"][rows, f["turn"]] == 0) | (f["hand_sizes"][rows, f["turn"]] == 0)


def _court_inconsistent(f, hands):
    rows = np.arange(len(f["court"]))
    court = f["court"]
    out = (court >= 0) & (f["alive"][rows, np.maximum(court, 0)] == 0)
    return ((f["owed"] == 0) != (court == EMPTY)) | (court == f["turn"]) | out


def _more_tricks_than_cards(f, hands):
    return f["tricks"] > f["cards"]


POSITION_RULES = (  # (the field named, what it must be, the positions that break it)
    ("hands", "each hand's cards from the top, then -1 after its last card", _card_after_the_end),
    ("hand_sizes", "the number of cards in each hand", _hand_sizes_miscount),
    ("pile", "pile_size cards, then -1", _pile_miscount),
    ("known", "each hand's unseen places (-2) above the cards it took", _unseen_place_below_a_seen_card),
    ("unseen", "as many cards as known has unseen places (-2)", _unseen_miscount),
    ("hands", "no more cards of a class, with the pile and unseen, than a 52-card deck has", _more_than_a_deck),
    ("alive", "1 for each seat holding cards", _holder_out),
    ("turn", "a seat still in, holding a card", _turn_cannot_play),
    ("court", "-1 when nothing is owed, else another seat still in, owed cards", _court_inconsistent),
    ("tricks", "at most the cards played", _more_tricks_than_cards),
)


def _field(obs, name, shape, who):
    """``obs[name]`` as an array of integers of ``shape`` (its dtype kept): ``ValueError`` naming it."""
    if name not in obs:
        raise ValueError(f"{who} lacks the field {name!r}")
    try:
        value = np.asarray(obs[name])
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{who}[{name!r}] is not an array: {checks.excerpt(obs[name])}") from None
    if value.dtype.kind not in "biu":
        raise ValueError(f"{who}[{name!r}] must hold integers, not {value.dtype}")
    if value.shape != shape:
        raise ValueError(f"{who}[{name!r}] must have shape {shape} (positions, ...), not {value.shape}")
    return value


def check_positions(obs, hands_field="known", n_players=None, who="obs"):
    """A batch of observations (a dict of fields, a leading axis of positions) checked whole
    before compiled code reads it: every field of the level that has ``hands_field``
    ("known": counted, "hands": full) present, integers, of its shape and within its range
    (:class:`beggar_env.task.Layout`), and every position consistent (:data:`POSITION_RULES`);
    ``n_players``, if given, the seats of ``hand_sizes``. Returns the fields as arrays;
    ``TypeError`` or ``ValueError`` naming the field (``who[...]``) and the first position
    that is wrong."""
    checks.observations(who, obs)
    cards = _field(obs, "cards", np.shape(obs["cards"]) if "cards" in obs else (), who)
    if cards.ndim != 1:
        raise ValueError(f"{who}['cards'] must have shape (positions,), not {cards.shape}")
    n = len(cards)
    sizes = _field(obs, "hand_sizes", np.shape(obs["hand_sizes"]) if "hand_sizes" in obs else (), who)
    if sizes.ndim != 2 or len(sizes) != n or not 2 <= sizes.shape[1] <= 4:
        raise ValueError(f"{who}['hand_sizes'] must have shape ({n}, 2 to 4 players), not {sizes.shape}")
    p = sizes.shape[1]
    if n_players is not None and p != n_players:
        raise ValueError(f"{who}['hand_sizes']: positions of {p} players, not of {n_players}")
    fields = {}
    for name, shape, low, high in task.Layout(p, LEVELS[hands_field]).fields:
        value = _field(obs, name, (n, *shape), who)
        wrong = (value < low) | (value > high)
        if wrong.any():
            first = np.argwhere(wrong)[0]
            raise ValueError(
                f"{who}[{name!r}] must be within {int(low)} to {int(high)}, not {value[tuple(first)]} "
                f"(at {tuple(int(i) for i in first)}; {int(wrong.sum()):,} values are out of range)"
            )
        if name in CARD_FIELDS:  # card classes, -2 .. 4 by now: the rules below read bytes, 4 to 8 times faster
            value = value.astype(np.int8)
        fields[name] = value if value.dtype.kind == "i" else value.astype(np.int64)  # bools index as masks
    for name, rule, find in POSITION_RULES:
        if name not in fields and name != "hands":
            continue
        bad = find(fields, hands_field)
        if bad.any():
            named = hands_field if name == "hands" else name
            raise ValueError(
                f"{who}[{named!r}] must be {rule}: position {int(np.argmax(bad))} is not"
                + (f" ({int(bad.sum()):,} positions are wrong)" if bad.sum() > 1 else "")
            )
    return fields


def table_arrays(obs, hands_field, n_players=None):
    """The arrays the kernel takes, from a batch of observations (a dict of fields), checked
    first (:func:`check_positions`); new arrays, never the caller's."""
    f = check_positions(obs, hands_field, n_players)
    n = len(f["cards"])
    unseen = f["unseen"] if "unseen" in f else np.zeros((n, core.N_CLASSES))

    def owned(value, dtype):
        return np.array(value, dtype, order="C")  # a copy: writable, whatever the caller's flags

    return (
        owned(f[hands_field], np.int8),
        owned(unseen, np.int64),
        owned(f["pile"], np.int8),
        owned(f["pile_size"], np.int64),
        owned(np.stack([f["turn"], f["owed"], f["court"]], axis=1), np.int64),
        owned(f["alive"], np.uint8),
        owned(np.stack([f["cards"], f["tricks"]], axis=1), np.int64),
    )


BACKENDS = ("local", "cuda")  # where rollouts run: this machine's cores, or a GPU (gpu_rollouts)


def play_out(obs, hands_field, k, seed, max_cards, threads=None, progress=None, backend="local", n_players=None):
    """Outcome counts of each position: (counts[n, n_players + 1], rollouts[n], cards played).

    A position with unseen cards of at least two classes is played ``k`` times, each with
    a fresh random arrangement; one with fewer is fixed by what is seen and played once.
    ``backend="cuda"`` plays them on a GPU, one position per thread, with the same counts.

    Parameters
    ----------
    obs : a batch of observations, a dict of fields (a leading axis of positions)
    hands_field : ``"known"`` (counted, with unseen cards) or ``"hands"`` (full)
    k : rollouts of a position with unseen cards of two classes or more
    seed : the rollouts' stream (0 .. 2**64 - 1)
    max_cards : the game's agreed limit (``core.NO_LIMIT``: none)
    threads : this machine's threads (None: all); refused with ``"cuda"``
    progress : ``progress(done, n)`` between calls, or None
    backend : ``"local"`` or ``"cuda"``
    n_players : the seats the positions must have (None: any)
    """
    arrays = table_arrays(obs, hands_field, n_players)
    if backend == "cuda":
        gpu.require_cuda()  # one line naming what is missing, before numba.cuda is imported
        from . import gpu_rollouts

        return gpu_rollouts.play_out(arrays, k, seed, max_cards, progress)
    n, n_players = arrays[0].shape[:2]
    counts = np.zeros((n, n_players + 1), np.int64)
    rollouts = np.zeros(n, np.int64)
    with parallel(threads) as n_threads:
        states, _ = core.new_work(n_threads, n_players, core.capacity_for(core.DECK_SIZE))
        progress_records = core.new_progress(n_threads)
        results = core.new_results(n_threads, n_players)
        played = np.zeros(n_threads, np.int64)
        step = POSITIONS_PER_CALL * n_threads
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            _play_positions(
                tuple(a[lo:hi] for a in arrays),
                max_cards,
                k,
                np.uint64(seed),  # 0 .. 2**64 - 1: an int64 would overflow above 2**63
                lo,
                counts[lo:hi],
                rollouts[lo:hi],
                played,
                states,
                progress_records,
                results,
            )
            if progress is not None:
                progress(hi, n)
    return counts, rollouts, int(played.sum())


@jit(parallel=True)
def _play_positions(positions, max_cards, k, seed, first, counts, rollouts, played, states, progress, results):
    n_chunks = states.shape[0]
    for c in prange(n_chunks):
        bag = np.empty(core.DECK_SIZE, np.int8)
        for i in range(c, counts.shape[0], n_chunks):  # strided: open positions come in runs
            played[c] += roll_position(
                i, positions, max_cards, k, seed, first, counts, rollouts, bag, states[c], progress[c], results[c]
            )

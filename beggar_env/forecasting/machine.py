"""A learned step played forward: a queue machine that knows no rule, the rollouts of a
position by that machine or by the engine, and the forecasters over them.

The machine plays a position on the engine's state record used as a plain data structure
(each hand a queue of card classes in a ring buffer, the pile a list, the registers turn /
owed / court / alive) with two moves: the seat named by ``turn`` puts its top card on the
pile; the pile goes under the hand the table names. Everything the rules decide at a card
(who plays next, what is owed and to whom, whether the pile is taken and by whom, who is
out, whether the game is over and who won) it reads from a step's table
(:mod:`~beggar_env.forecasting.transitions`: one row per input; a learned one from
:meth:`~beggar_env.forecasting.step_model.StepModel.table`).

* :func:`machine_games`: random games played from their deal by the machine;
* :func:`rolled`: positions played forward by the engine or the machine, ``k`` times over
  the arrangements of their unseen cards as the Bayes forecaster deals them, for a budget
  of cards or tricks, then scored by a leaf forecaster where the game goes on;
* :class:`RolledStep`: the machine to the end of each game: Bayes over a hand-built
  machine whose rule is a learned table (``given``: the hand-built machine);
* :class:`Truncated`: a point of the compute-accuracy curve (the engine or the machine
  plays a budget, then a per-position learner scores the position reached).

Compiled with numba; needs no torch (a step model is any object with ``n_players`` and
``table()``).
"""

import numpy as np
from numba import prange

from .. import checks, core, task
from ..core import Outcome
from ..jit import jit, parallel
from .forecasters import Forecaster
from .rollout_steps import set_position
from .rollouts import check_positions, table_arrays
from .transitions import MOST_CARDS, OUT_NAMES, input_code, n_inputs, seat_bits

BROKEN = 4  # a machine status (beside core.Outcome): the table asked for something impossible


@jit
def _pile_under(s, taker):
    """The pile put under seat ``taker``'s hand: a trick taken."""
    mask = s.pile.shape[0] - 1
    end = s.head[taker] + s.held[taker]
    for k in range(s.pile_len):
        s.hands[taker, (end + k) & mask] = s.pile[k]
    s.held[taker] += s.pile_len
    s.taken[taker] += s.pile_len
    s.pile_len = 0
    s.tricks += 1


@jit
def machine_card(s, table):
    """Play one card of state ``s`` as ``table`` (a step's table: one row per input, see
    :mod:`~beggar_env.forecasting.transitions`) says."""
    n_players = s.held.shape[0]
    t = s.turn
    if t < 0 or t >= n_players or s.held[t] <= 0 or s.pile_len >= s.pile.shape[0]:
        s.status = BROKEN  # the table led somewhere no game goes: stop rather than read past a hand
        return
    mask = s.pile.shape[0] - 1
    card = s.hands[t, s.head[t]]
    s.head[t] = (s.head[t] + 1) & mask
    s.held[t] -= 1
    s.pile[s.pile_len] = card
    s.pile_len += 1
    s.cards += 1
    empty = 0
    for p in range(n_players):
        if s.held[p] == 0:
            empty |= 1 << p
    out = table[input_code(card, t, s.owed, s.court + 1, seat_bits(s.alive), empty, n_players)]
    if out[3] > 0:
        _pile_under(s, out[3] - 1)
    s.turn = out[0]
    s.owed = out[1]
    s.court = out[2] - 1
    s.n_alive = 0
    for p in range(n_players):
        s.alive[p] = (out[4] >> p) & 1
        s.n_alive += s.alive[p]
    if out[5] > 0:
        s.status = Outcome.WIN
        s.winner = out[5] - 1


@jit
def machine_play(s, table, cards, tricks):
    """Play ``s`` with the table until the game ends, ``cards`` more cards have been played
    or ``tricks`` more piles taken (or :data:`MOST_CARDS` in all)."""
    stop_cards = MOST_CARDS if cards >= MOST_CARDS - s.cards else s.cards + cards
    stop_tricks = core.NO_LIMIT if tricks >= core.NO_LIMIT - s.tricks else s.tricks + tricks
    while s.status == Outcome.RUNNING and s.cards < stop_cards and s.tricks < stop_tricks:
        machine_card(s, table)


@jit
def engine_play(s, cards, tricks):
    """Play ``s`` with the engine until the game ends, ``cards`` more cards have been played
    or ``tricks`` more piles taken."""
    if cards < core.NO_LIMIT:
        if cards > 0 and s.status == Outcome.RUNNING:
            core.advance(s, cards)
        return
    for _ in range(tricks):
        if s.status != Outcome.RUNNING:
            break
        core.step_trick(s)


ENGINE, LEARNED = 0, 1  # the simulators of _roll_positions


@jit(parallel=True)
def _roll_positions(
    positions, first, seed, rows, kind, table, cards, tricks, labels, obs, settings, work, progress, results
):
    """Play each position's rollouts (``rows[i] .. rows[i + 1] - 1``: one, or one per random
    arrangement of its unseen cards, dealt as the Bayes forecaster deals them) with the engine
    or the table, until the game ends or the budget (``cards``, ``tricks``) is spent. A rollout
    that ended gets its outcome's label; one that did not gets -1 and its counted view in
    ``obs``. With no budget the engine plays as the Bayes forecaster does (cycles detected)."""
    hands, unseen, pile, pile_size, registers, alive, counters = positions
    n = hands.shape[0]
    n_players = hands.shape[1]
    n_chunks = work.shape[0]
    unlimited = cards == core.NO_LIMIT and tricks == core.NO_LIMIT
    for c in prange(n_chunks):
        bag = np.empty(core.DECK_SIZE, np.int8)
        result = results[c]
        s = work[c, 0]
        for i in range(c, n, n_chunks):
            n_hidden = 0
            for card in range(core.N_CLASSES):
                for _ in range(unseen[i, card]):
                    bag[n_hidden] = card
                    n_hidden += 1
            runs = rows[i + 1] - rows[i]
            key = core.derive_key(seed, first + i)
            for j in range(runs):
                if runs > 1:
                    core.shuffle(core.derive_key(key, j), bag, n_hidden)
                set_position(
                    s, hands[i], bag, pile[i], pile_size[i], registers[i], alive[i], counters[i], core.NO_LIMIT
                )
                row = rows[i] + j
                if kind == ENGINE and unlimited:
                    core.finish_now(s, True, result, work[c, 1], work[c, 2], progress[c])
                    labels[row] = core.outcome_label(result.winner, n_players)
                    continue
                if kind == ENGINE:
                    engine_play(s, cards, tricks)
                else:
                    machine_play(s, table, cards, tricks)
                if s.status == Outcome.WIN:
                    labels[row] = s.winner
                elif s.status != Outcome.RUNNING or s.cards >= MOST_CARDS or unlimited:
                    labels[row] = n_players  # broken, or cut off: no winner
                else:
                    labels[row] = -1
                    task.write_observation(s, obs[row - rows[0]], settings[0])


def check_obs(forecaster, obs):
    """The number of positions of a batch of observations of the forecaster's level and
    player count (``ValueError`` naming what is missing)."""
    needed = {"public": "cards", "counted": "known", "full": "hands"}[forecaster.observation]
    checks.observations("obs", obs)
    if needed not in obs:
        raise ValueError(f"{forecaster.name} reads observation={forecaster.observation!r}: obs needs {needed!r}")
    hands_field = "known" if needed == "known" else "hands"
    return len(check_positions(obs, hands_field, forecaster.n_players)["cards"])


def _runs(unseen, k):
    """Rollouts of each position: ``k`` where the unseen cards are of two classes or more, else 1."""
    return np.where((np.asarray(unseen) > 0).sum(axis=1) >= 2, k, 1).astype(np.int64)


CHUNK = 4096  # positions rolled at a time (their leaves' views are held in memory)


def rolled(obs, step=None, *, cards=None, tricks=None, leaf=None, k=256, seed=0, alpha=0.5, threads=None):
    """Forecasts (n, n_players + 1) of a batch of counted (or full) observations: each
    position played forward by the engine (``step=None``) or by a learned step on the queue
    machine, ``k`` times over random arrangements of its unseen cards where they are of two
    classes or more (once where the view determines the hands), until the game ends or
    ``cards`` cards / ``tricks`` tricks have been played (None: no budget); then scored: a
    game that ended by its outcome, smoothed by ``alpha`` as the Bayes forecaster smooths it
    ((k [outcome] + alpha) / (k + alpha (n_players + 1))), one that did not by ``leaf`` at
    the position reached; a position's forecast is the mean over its rollouts. With no
    budget and the engine, these are ``BayesMC(k=k, seed=seed)``'s forecasts; with budget 0,
    ``leaf``'s.

    Parameters
    ----------
    obs : the observation fields of a batch of positions (counted or full).
    step : the step the machine plays (:class:`~beggar_env.forecasting.step_model.StepModel`), or None: the engine.
    cards, tricks : the budget of cards or tricks played forward (None: to the end).
    leaf : a counted-view forecaster that scores the positions where the budget ran out.
    k : rollouts of an open position.
    seed : the seed of the arrangements of the unseen cards.
    alpha : the smoothing of an ended game's outcome.
    threads : the compiled rollouts' threads (None: numba's default).
    """
    checks.observations("obs", obs)
    hands_field = "known" if "known" in obs else "hands"
    arrays = table_arrays(obs, hands_field)  # every field checked before the compiled rollouts read it
    n, n_players = arrays[0].shape[:2]
    n_outcomes = n_players + 1
    k = checks.count("k", k, 1)
    no_budget = cards is None and tricks is None
    if not no_budget and leaf is None:
        raise ValueError("a budget needs a leaf forecaster to score the positions where it runs out")
    if (cards == 0 or tricks == 0) and not no_budget:
        return np.asarray(leaf.predict_proba(obs), np.float64)
    table = step.table() if step is not None else np.zeros((1, len(OUT_NAMES)), np.int8)
    kind = ENGINE if step is None else LEARNED
    if step is not None and step.n_players != n_players:
        raise ValueError(f"the step model is for {step.n_players} players, the positions have {n_players}")
    card_budget = core.NO_LIMIT if cards is None else checks.integer("cards", cards, 0, core.NO_LIMIT)
    trick_budget = core.NO_LIMIT if tricks is None else checks.integer("tricks", tricks, 0, core.NO_LIMIT)
    layout = task.Layout(n_players, "counted")
    settings = task.EnvConfig(n_players, observation="counted").settings()
    runs = _runs(arrays[1], k)
    probs = np.zeros((n, n_outcomes))
    ended = (np.eye(n_outcomes) * k + alpha) / (k + alpha * n_outcomes)
    with parallel(threads) as n_threads:
        work, progress = core.new_work(n_threads * 4, n_players, core.capacity_for(core.DECK_SIZE))
        results = core.new_results(n_threads * 4, n_players)
        for lo in range(0, n, CHUNK):
            hi = min(lo + CHUNK, n)
            rows = np.zeros(hi - lo + 1, np.int64)
            np.cumsum(runs[lo:hi], out=rows[1:])
            labels = np.zeros(rows[-1], np.int64)
            obs_rows = np.zeros((rows[-1] if not no_budget else 1, layout.size), np.int32)
            _roll_positions(
                tuple(a[lo:hi] for a in arrays),
                lo,
                np.uint64(seed),
                rows,
                kind,
                table,
                card_budget,
                trick_budget,
                labels,
                obs_rows,
                settings,
                work,
                progress,
                results,
            )
            values = np.zeros((rows[-1], n_outcomes))
            done = labels >= 0
            values[done] = ended[labels[done]]
            if not done.all():
                values[~done] = leaf.predict_proba(layout.split(obs_rows[~done]))
            position = np.repeat(np.arange(hi - lo), runs[lo:hi])
            for o in range(n_outcomes):
                probs[lo:hi, o] = np.bincount(position, weights=values[:, o], minlength=hi - lo) / runs[lo:hi]
    return probs


class RolledStep(Forecaster):
    """Bayes over a hand-built machine: a learned step
    (:class:`~beggar_env.forecasting.step_model.StepModel`, or any object with ``n_players``,
    ``seed`` and ``table()``) rolled out by the queue machine from each position to the end
    of its game (no engine at forecast time), over ``k`` random arrangements of the unseen
    cards as the Bayes forecaster deals them (one where the counted view determines the
    hands), the outcome frequencies smoothed as the Bayes forecaster smooths them. What
    plays is the machine, written by hand; only its rule table is learned (``given``).

    Parameters
    ----------
    step : the learned step whose table the machine plays.
    k : rollouts of an open position.
    seed : the seed of the arrangements of the unseen cards.
    alpha : the smoothing of an ended game's outcome.
    threads : the compiled rollouts' threads (None: numba's default).
    name : the row's name (None: the default, with ``k``).
    """

    observation = "counted"
    given = ("hand-built machine",)

    def __init__(self, step, k=256, seed=0, alpha=0.5, threads=None, name=None):
        super().__init__(step.n_players)
        self.step, self.k, self.seed, self.alpha, self.threads = step, checks.count("k", k, 1), seed, alpha, threads
        self._name = name
        self.trained_on_seed = step.seed

    @property
    def name(self):
        return self._name or f"Bayes over a hand-built machine, learned rule table (K={self.k})"

    def predict_proba(self, obs):
        check_obs(self, obs)
        return rolled(obs, self.step, k=self.k, seed=self.seed, alpha=self.alpha, threads=self.threads)


class Truncated(Forecaster):
    """The first ``cards`` cards or ``tricks`` tricks played by a simulator (the engine, or a
    learned step on the queue machine), then ``leaf`` at the position reached
    (:func:`rolled`): a point of the compute-accuracy curve. ``given``: the rules engine, or
    the hand-built machine where a step plays, and whatever the leaf is given.

    Parameters
    ----------
    leaf : the counted-view forecaster that scores the position reached.
    step : the learned step the machine plays (None: the engine plays).
    cards, tricks : the budget played forward (both None: to the end).
    k : rollouts of an open position.
    seed : the seed of the arrangements of the unseen cards.
    threads : the compiled rollouts' threads (None: numba's default).
    name : the point's name (None: the simulator, the budget and the leaf).
    """

    observation = "counted"
    given = ("rules engine",)

    def __init__(self, leaf, step=None, *, cards=None, tricks=None, k=16, seed=0, threads=None, name=None):
        super().__init__(leaf.n_players)
        self.leaf, self.step, self.cards, self.tricks = leaf, step, cards, tricks
        self.k, self.seed, self.threads = k, seed, threads
        self.trained_on_seed = getattr(leaf, "trained_on_seed", None)
        budget = "to the end" if cards is None and tricks is None else (
            f"{cards} cards" if cards is not None else f"{tricks} tricks")  # fmt: skip
        who = "engine" if step is None else "learned step"
        self.name = name or f"{who}, {budget}, then {leaf.name}"[:80]
        plays = ("rules engine",) if step is None else ("hand-built machine",)
        self.given = plays + tuple(what for what in getattr(leaf, "given", ()) if what not in plays)

    def predict_proba(self, obs):
        check_obs(self, obs)
        return rolled(
            obs, self.step, cards=self.cards, tricks=self.tricks, leaf=self.leaf, k=self.k, seed=self.seed,
            threads=self.threads,
        )  # fmt: skip


@jit(parallel=True)
def _machine_games(states, seed, table, labels, cards, tricks):
    """Random games ``0 ..`` of the stream ``seed`` dealt as the engine deals them and played
    to their end by the machine with ``table``: each game's label, cards and tricks."""
    n_chunks = states.shape[0]
    n_games = labels.shape[0]
    for c in prange(n_chunks):
        s = states[c]
        n_players = s.held.shape[0]
        deck = np.empty(core.DECK_SIZE, np.int64)
        lo, hi = core.chunk_bounds(c, n_chunks, n_games)
        for g in range(lo, hi):
            core.init_shuffled_state(s, core.derive_key(seed, g), core.NO_LIMIT, core.NO_LIMIT, deck)
            machine_play(s, table, core.NO_LIMIT, core.NO_LIMIT)
            labels[g] = s.winner if s.status == Outcome.WIN else n_players
            cards[g] = s.cards
            tricks[g] = s.tricks


def machine_games(table, n_games, n_players=2, seed=0, threads=None):
    """Random games of the stream ``seed`` (those of ``beggar_env.simulate(n_games,
    n_players=n_players, seed=seed)``) played from their deal to their end by the machine
    with a step's ``table`` (:meth:`~beggar_env.forecasting.step_model.StepModel.table`, or
    any array of its shape): each game's
    outcome label (the winner; ``n_players``: none, or the machine broke or ran past
    :data:`MOST_CARDS`), cards and tricks."""
    n_games = checks.count("n_games", n_games, 1)
    n_players = checks.n_players(n_players)
    table = np.ascontiguousarray(table, np.int8)
    if table.shape != (n_inputs(n_players), len(OUT_NAMES)):
        raise ValueError(f"table: a step of {n_players} players has shape {(n_inputs(n_players), len(OUT_NAMES))}")
    labels, cards, tricks = (np.zeros(n_games, np.int64) for _ in range(3))
    with parallel(threads) as n_threads:
        states = core.new_states(4 * n_threads, n_players, core.capacity_for(core.DECK_SIZE))
        _machine_games(states, np.uint64(checks.seed(seed)), table, labels, cards, tricks)
    return labels, cards, tricks

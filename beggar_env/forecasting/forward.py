"""Playing the game forward, learned: what the per-position learners lack is not information
but computation (on the positions the counted view determines, the Bayes forecaster is
right at every one and every learner at about 0.73), so this module gives a forecaster
computation that grows with the horizon, in three ways (``docs/results.md``, "Playing the
game forward"):

* **A learned step, rolled out** (:class:`StepModel`, :class:`RolledStep`): a network
  trained on the engine's card-by-card transitions, iterated from a position to the end of
  its game by a queue machine that knows no rule. *Given*: the data structure (each hand a
  queue of card classes, the pile a list, the registers turn / owed / court / alive), two
  moves (the seat named by ``turn`` puts its top card on the pile; the pile goes under the
  hand the network names) and what the network reads (the card just played, the registers,
  which hands are empty). *Learned*: everything the rules decide at a card: who plays next,
  what is owed and to whom, whether the pile is taken and by whom, who is out, whether the
  game is over and who won. The network is evaluated once on each of its finitely many
  inputs (:meth:`StepModel.table`) and the machine reads that table: the same function,
  at compiled speed. On open positions the unseen cards are dealt to the unknown places as
  the Bayes forecaster deals them.
* **The compute-accuracy curve** (:func:`rolled`): a simulator (the engine, or the learned
  step) plays the first ``budget`` tricks or cards, then a per-position learner scores the
  position reached; budget 0 is the learner, no budget the Bayes forecaster.
* **A looped model** (:class:`LoopedNet`) and **a model of the full view** (:class:`HandsNet`,
  a GRU over each hand), both trained end to end on outcomes by :class:`FullViewForecaster`:
  networks that read every hand, the looped one a weight-tied block iterated more for
  longer hands.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import time
from collections.abc import Mapping

import numpy as np
from numba import prange

from .. import checks, core, task
from ..core import Outcome
from ..jit import jit, parallel

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.forward", "a CPU-only torch build")

from .forecasters import Forecaster  # noqa: E402 (after torch's check)
from .rollouts import set_position  # noqa: E402
from .sequence_models import torch_threads  # noqa: E402

nn = torch.nn
functional = torch.nn.functional

UNKNOWN, EMPTY = task.UNKNOWN, task.EMPTY
OWED = core.N_CLASSES  # cards owed: 0 .. 4
BROKEN = 4  # a machine status (beside core.Outcome): the table asked for something impossible
MOST_CARDS = 100_000  # a rollout that has not ended after this many cards is scored as "no winner"

# ----------------------------------------------------------------- the transitions
# One card of a game as the step network sees it. In (before the rules act, the card already
# on the pile): the card, the seat that played it, what was owed and to whom (court + 1, 0 for
# none), who is in (bits), whose hand is now empty (bits). Out (after the rules acted): the
# seat to play, what is owed and to whom, where the pile went (0: it stays; j + 1: under seat
# j's hand), who is in, and the winner (0: the game goes on; j + 1: seat j has won).

IN_NAMES = ("card", "turn", "owed", "court", "alive", "empty")
OUT_NAMES = ("turn", "owed", "court", "taker", "alive", "winner")


def in_sizes(n_players):
    """How many values each input takes."""
    p = n_players
    return (core.N_CLASSES, p, OWED, p + 1, 1 << p, 1 << p)


def out_sizes(n_players):
    """How many values each output takes (``alive`` is ``n_players`` bits)."""
    p = n_players
    return (p, OWED, p + 1, p + 1, 1 << p, p + 1)


_OUT_RADIX = np.array([out_sizes(p) for p in (2, 3, 4)], np.int64)  # by player count - 2


def n_inputs(n_players):
    """The number of distinct inputs of the step: the rows of :meth:`StepModel.table`."""
    return int(np.prod(in_sizes(n_players)))


@jit
def _bits(flags):
    out = 0
    for p in range(flags.shape[0]):
        if flags[p]:
            out |= 1 << p
    return out


@jit
def _code(card, turn, owed, court1, alive, empty, n_players):
    """The row of the table for one input (the inputs in ``IN_NAMES`` order, mixed radix)."""
    both = 1 << n_players
    return ((((card * n_players + turn) * OWED + owed) * (n_players + 1) + court1) * both + alive) * both + empty


@jit
def _before(s, row):
    """The step's input at a waiting state ``s``, as it will be once its card is on the pile."""
    t = s.turn
    row[0] = s.hands[t, s.head[t]]
    row[1] = t
    row[2] = s.owed
    row[3] = s.court + 1
    row[4] = _bits(s.alive)
    empty = 0
    for p in range(s.held.shape[0]):
        if s.held[p] - (1 if p == t else 0) == 0:
            empty |= 1 << p
    row[5] = empty


@jit
def _after(s, taken, out):
    """The step's output once the engine has played the card (``taken``: each hand's
    ``taken`` before it, to see where the pile went)."""
    out[0] = s.turn
    out[1] = s.owed
    out[2] = s.court + 1
    out[3] = 0
    for p in range(s.held.shape[0]):
        if s.taken[p] > taken[p]:
            out[3] = p + 1
    out[4] = _bits(s.alive)
    out[5] = s.winner + 1 if s.status == Outcome.WIN else 0


@jit
def _record_games(s, seed, first, n_games, inputs, outputs):
    """Play games ``first ..`` of the random stream ``seed`` card by card with the engine,
    writing each card's input and output rows until the rows are full; return the rows
    written."""
    n_players = s.held.shape[0]
    deck = np.empty(core.DECK_SIZE, np.int64)
    taken = np.zeros(n_players, np.int64)
    n = 0
    for g in range(n_games):
        core.init_shuffled_state(s, core.derive_key(seed, first + g), core.NO_LIMIT, core.NO_LIMIT, deck)
        while s.status == Outcome.RUNNING and s.cards < MOST_CARDS:
            if n == inputs.shape[0]:
                return n
            _before(s, inputs[n])
            taken[:] = s.taken
            core.step_card(s)
            _after(s, taken, outputs[n])
            n += 1
    return n


def transitions(n, n_players=2, seed=0, first=0):
    """``n`` card transitions of the engine (the step's inputs and outputs, int64 arrays of
    shape (n, 6) in ``IN_NAMES`` and ``OUT_NAMES`` order), from random games ``first ..`` of
    the stream ``seed``, every card of each game in play order (the last game cut off)."""
    n = checks.count("n", n, 1)
    n_players = checks.n_players(n_players)
    inputs = np.zeros((n, len(IN_NAMES)), np.int64)
    outputs = np.zeros((n, len(OUT_NAMES)), np.int64)
    state = core.new_states(1, n_players, core.capacity_for(core.DECK_SIZE))
    written = _record_games(state[0], np.uint64(checks.seed(seed)), first, n // 30 + 2, inputs, outputs)
    return inputs[:written], outputs[:written]


@jit(parallel=True)
def _tally_games(states, seed, n_games, counts, outputs, clashes):
    """Play games ``0 .. n_games - 1`` of the stream ``seed`` card by card with the engine, in
    ``states.shape[0]`` chunks: per chunk, how often each input occurred (``counts``), the
    output it had (``outputs``, by :func:`out_codes`) and how many times an input had another
    output than before (``clashes``: 0 for a function)."""
    n_chunks = states.shape[0]
    for c in prange(n_chunks):
        s = states[c]
        n_players = s.held.shape[0]
        deck = np.empty(core.DECK_SIZE, np.int64)
        taken = np.zeros(n_players, np.int64)
        before = np.zeros(len(IN_NAMES), np.int64)
        after = np.zeros(len(OUT_NAMES), np.int64)
        lo, hi = core.chunk_bounds(c, n_chunks, n_games)
        for g in range(lo, hi):
            core.init_shuffled_state(s, core.derive_key(seed, g), core.NO_LIMIT, core.NO_LIMIT, deck)
            while s.status == Outcome.RUNNING and s.cards < MOST_CARDS:
                _before(s, before)
                taken[:] = s.taken
                core.step_card(s)
                _after(s, taken, after)
                row = _code(before[0], before[1], before[2], before[3], before[4], before[5], n_players)
                code = 0
                for j in range(len(OUT_NAMES)):
                    code = code * _OUT_RADIX[n_players - 2, j] + after[j]
                if counts[c, row] > 0 and outputs[c, row] != code:
                    clashes[c] += 1
                counts[c, row] += 1
                outputs[c, row] = code


def tally(n_games, n_players=2, seed=0, threads=None):
    """The distinct transitions of every card of ``n_games`` random games of the stream
    ``seed``: (inputs (m, 6), outputs (m, 6), how often each occurred), in table row order.
    ``RuntimeError`` if an input had two outputs (the step would not be a function)."""
    n_games = checks.count("n_games", n_games, 1)
    n_players = checks.n_players(n_players)
    with parallel(threads) as n_threads:
        n_chunks = 4 * n_threads
        states = core.new_states(n_chunks, n_players, core.capacity_for(core.DECK_SIZE))
        counts = np.zeros((n_chunks, n_inputs(n_players)), np.int64)
        outputs = np.zeros_like(counts)
        clashes = np.zeros(n_chunks, np.int64)
        _tally_games(states, np.uint64(checks.seed(seed)), n_games, counts, outputs, clashes)
    seen = counts > 0
    merged = outputs.max(axis=0)
    if clashes.any() or (seen & (outputs != merged)).any():
        raise RuntimeError("the step's inputs do not determine its outputs")  # the engine's rules changed?
    rows = np.flatnonzero(seen.any(axis=0))
    return decode(rows, n_players), decode_outputs(merged[rows], n_players), counts.sum(axis=0)[rows]


def _pack(rows, sizes):
    """Each row of digits as one number, in the mixed radix ``sizes`` (the first digit most
    significant)."""
    out = np.zeros(len(rows), np.int64)
    for value, size in zip(rows.T, sizes):
        out = out * size + value
    return out


def _unpack(values, sizes):
    """The rows of digits (n, len(sizes)) of :func:`_pack` numbers."""
    values = np.asarray(values, np.int64).copy()
    out = np.zeros((len(values), len(sizes)), np.int64)
    for j, size in reversed(list(enumerate(sizes))):
        out[:, j] = values % size
        values //= size
    return out


def codes(inputs, n_players):
    """Each input row's row of the table (vectorised :func:`_code`)."""
    return _pack(inputs, in_sizes(n_players))


def out_codes(outputs, n_players):
    """Each output row as one number (mixed radix, as :func:`codes`)."""
    return _pack(outputs, out_sizes(n_players))


def decode_outputs(values, n_players):
    """The outputs (n, 6) of :func:`out_codes` numbers."""
    return _unpack(values, out_sizes(n_players))


def decode(rows, n_players):
    """The inputs (n, 6) of table rows (the inverse of :func:`codes`)."""
    return _unpack(rows, in_sizes(n_players))


# ----------------------------------------------------------------- the step network


class StepNet(nn.Module):
    """One card's rules as a network: the inputs one-hot (``alive`` and ``empty`` as bits), two
    hidden layers, one classification head per output (``alive`` as one bit per seat)."""

    def __init__(self, n_players, hidden=128):
        super().__init__()
        p = self.n_players = n_players
        width = core.N_CLASSES + p + OWED + (p + 1) + 2 * p
        self.body = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.heads = nn.ModuleDict(
            {
                "turn": nn.Linear(hidden, p),
                "owed": nn.Linear(hidden, OWED),
                "court": nn.Linear(hidden, p + 1),
                "taker": nn.Linear(hidden, p + 1),
                "alive": nn.Linear(hidden, p),
                "winner": nn.Linear(hidden, p + 1),
            }
        )

    def encode(self, inputs):
        """The network's input vectors of integer input rows (a LongTensor (n, 6))."""
        p = self.n_players
        seats = torch.arange(p)
        parts = [
            functional.one_hot(inputs[:, 0], core.N_CLASSES),
            functional.one_hot(inputs[:, 1], p),
            functional.one_hot(inputs[:, 2], OWED),
            functional.one_hot(inputs[:, 3], p + 1),
            (inputs[:, 4:5] >> seats) & 1,
            (inputs[:, 5:6] >> seats) & 1,
        ]
        return torch.cat(parts, dim=1).float()

    def forward(self, inputs):
        h = self.body(self.encode(inputs))
        return {name: head(h) for name, head in self.heads.items()}

    def decide(self, inputs):
        """The outputs (a LongTensor (n, 6), ``OUT_NAMES`` order) the network gives."""
        logits = self(inputs)
        seats = torch.arange(self.n_players)
        alive = ((logits["alive"] > 0).long() << seats).sum(dim=1)
        columns = [logits[name].argmax(dim=1) if name != "alive" else alive for name in OUT_NAMES]
        return torch.stack(columns, dim=1)

    def loss(self, inputs, outputs, weight):
        """The weighted sum over transitions of every output's cross-entropy."""
        logits = self(inputs)
        seats = torch.arange(self.n_players)
        bits = ((outputs[:, 4:5] >> seats) & 1).float()
        each = functional.binary_cross_entropy_with_logits(logits["alive"], bits, reduction="none").sum(dim=1)
        for j, name in enumerate(OUT_NAMES):
            if name != "alive":
                each = each + functional.cross_entropy(logits[name], outputs[:, j], reduction="none")
        return (each * weight).sum()


class StepModel:
    """The learned step of one card, for ``n_players``: :meth:`fit` on the engine's
    transitions (every card of ``games`` random games of the stream ``seed``), :meth:`exact`
    (the share of transitions whose every output it gets right), :meth:`table` (its output
    for each of its :func:`n_inputs` inputs: what the machine reads).

    The step is a function (one output per input: checked on every training transition), so
    the network trains on the distinct transitions seen (:func:`tally`), each weighted by the
    square root of how often it occurred (between the games' frequencies, where the rare
    moves of a game's end are seen too seldom to be learnt exactly, and equal weights):
    ``steps`` full-batch steps of Adam from ``lr``, decayed along a cosine, on ``threads``
    of torch's threads."""

    def __init__(self, n_players=2, *, hidden=256, games=4_000_000, steps=4000, lr=3e-3, seed=1, threads=1):
        self.n_players = checks.n_players(n_players)
        self.hidden = checks.integer("hidden", hidden, 1, 4096)
        self.games = checks.count("games", games, 1)
        self.steps = checks.count("steps", steps, 1)
        self.lr = checks.number("lr", lr, 0, strict=True)
        self.seed = int(checks.seed(seed))
        self.threads = None if threads is None else checks.integer("threads", threads, 1, 1024)
        self.net = None
        self.history = []
        self.fit_seconds = 0.0
        self.seen = None  # the table rows of the distinct inputs trained on
        self.transitions_seen = 0

    def fit(self, progress=None):
        """Train on the distinct transitions of every card of ``games`` fresh games."""
        started = time.perf_counter()
        inputs, outputs, counts = tally(self.games, self.n_players, self.seed)
        self.seen, self.transitions_seen = codes(inputs, self.n_players), int(counts.sum())
        with torch_threads(self.threads):
            torch.manual_seed(self.seed)
            self.net = StepNet(self.n_players, self.hidden)
            x, y = torch.from_numpy(inputs), torch.from_numpy(outputs)
            weight = torch.from_numpy(np.sqrt(counts) / np.sqrt(counts).sum()).float()
            optimiser = torch.optim.Adam(self.net.parameters(), lr=self.lr)
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, self.steps, eta_min=self.lr / 100)
            self.history = []
            for step in range(self.steps):
                loss = self.net.loss(x, y, weight)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
                if progress is not None:
                    progress(step + 1, self.steps)
                if (step + 1) % max(1, self.steps // 10) == 0:
                    with torch.no_grad():
                        wrong = int((self.net.decide(x) != y).any(dim=1).sum())
                    self.history.append({"step": step + 1, "loss": float(loss.detach()), "wrong_distinct": wrong})
            self.net.eval()
        self.fit_seconds = time.perf_counter() - started
        self._table = None
        return self

    def _require(self):
        if self.net is None:
            raise RuntimeError("StepModel: call fit() first")

    def decide(self, inputs):
        """The outputs the network gives for integer input rows (n, 6)."""
        self._require()
        out = np.zeros((len(inputs), len(OUT_NAMES)), np.int64)
        with torch.no_grad(), torch_threads(self.threads):
            for lo in range(0, len(inputs), 1 << 16):
                out[lo : lo + (1 << 16)] = self.net.decide(torch.from_numpy(inputs[lo : lo + (1 << 16)])).numpy()
        return out

    def exact(self, inputs, outputs):
        """The share of transitions whose every output the network gets right, and the
        number of wrong ones."""
        wrong = (self.decide(inputs) != outputs).any(axis=1)
        return 1.0 - wrong.mean(), int(wrong.sum())

    _table = None

    def table(self):
        """The network's outputs (int8, (:func:`n_inputs`, 6)) for every input, row
        :func:`codes` of each: the step the machine plays (computed once)."""
        if self._table is None:
            rows = np.arange(n_inputs(self.n_players))
            self._table = self.decide(decode(rows, self.n_players)).astype(np.int8)
        return self._table


# -------------------------------------------------------------------- the machine
# A position is played forward on the engine's state record, used as a plain data structure
# (hands as ring buffers, the pile as a list): the machine moves cards and copies what the
# table says into the registers; it knows no rule.


@jit
def _pile_under(s, taker):
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
    """Play one card of state ``s`` as ``table`` (:meth:`StepModel.table`) says."""
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
    out = table[_code(card, t, s.owed, s.court + 1, _bits(s.alive), empty, n_players)]
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
    from .rollouts import check_positions

    needed = {"public": "cards", "counted": "known", "full": "hands"}[forecaster.observation]
    if not isinstance(obs, Mapping):
        raise TypeError(f"obs must be a dict of observation fields, not {type(obs).__name__} {checks.excerpt(obs)}")
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
    position played forward by the engine (``step=None``) or by a learned step (a
    :class:`StepModel`), ``k`` times over random arrangements of its unseen cards where they
    are of two classes or more (once where the view determines the hands), until the game
    ends or ``cards`` cards / ``tricks`` tricks have been played (None: no budget); then
    scored: a game that ended by its outcome, smoothed by ``alpha`` as the Bayes forecaster
    smooths it ((k [outcome] + alpha) / (k + alpha (n_players + 1))), one that did not by
    ``leaf`` (a counted-view forecaster) at the position reached; a position's forecast is
    the mean over its rollouts. With no budget and the engine, these are
    ``BayesMC(k=k, seed=seed)``'s forecasts; with budget 0, ``leaf``'s."""
    from .rollouts import table_arrays

    if not isinstance(obs, Mapping):
        raise TypeError(f"obs must be a dict of observation fields, not {type(obs).__name__} {checks.excerpt(obs)}")
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
    """A learned step (:class:`StepModel`) rolled out from each position to the end of its game
    (no engine at forecast time), over ``k`` random arrangements of the unseen cards as the
    Bayes forecaster deals them (one where the counted view determines the hands), the
    outcome frequencies smoothed as the Bayes forecaster smooths them."""

    observation = "counted"

    def __init__(self, step, k=256, seed=0, alpha=0.5, threads=None, name=None):
        super().__init__(step.n_players)
        self.step, self.k, self.seed, self.alpha, self.threads = step, checks.count("k", k, 1), seed, alpha, threads
        self._name = name
        self.trained_on_seed = step.seed

    @property
    def name(self):
        return self._name or f"learned step, rolled out (K={self.k})"

    def predict_proba(self, obs):
        check_obs(self, obs)
        return rolled(obs, self.step, k=self.k, seed=self.seed, alpha=self.alpha, threads=self.threads)


class Truncated(Forecaster):
    """The first ``cards`` cards or ``tricks`` tricks played by a simulator (the engine, or a
    learned step), then ``leaf`` at the position reached (:func:`rolled`): a point of the
    compute-accuracy curve."""

    observation = "counted"

    def __init__(self, leaf, step=None, *, cards=None, tricks=None, k=16, seed=0, threads=None, name=None):
        super().__init__(leaf.n_players)
        self.leaf, self.step, self.cards, self.tricks = leaf, step, cards, tricks
        self.k, self.seed, self.threads = k, seed, threads
        self.trained_on_seed = getattr(leaf, "trained_on_seed", None)
        budget = "to the end" if cards is None and tricks is None else (
            f"{cards} cards" if cards is not None else f"{tricks} tricks")  # fmt: skip
        who = "engine" if step is None else "learned step"
        self.name = name or f"{who}, {budget}, then {leaf.name}"[:80]

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
    with a step's ``table`` (:meth:`StepModel.table`, or any array of its shape): each game's
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


def exact_table(n_games, n_players=2, seed=0):
    """The table of the engine's own step on the inputs that every card of ``n_games``
    random games of the stream ``seed`` meets (its other rows 0): what a step model learns
    when it is exact on them (for tests and to measure a learned table against)."""
    inputs, outputs, _ = tally(n_games, n_players, seed)
    table = np.zeros((n_inputs(n_players), len(OUT_NAMES)), np.int8)
    table[codes(inputs, n_players)] = outputs
    return table


# ------------------------------------------------------------ networks of the full view
# Per-position models that read every hand (observation="full"): a GRU over each hand's
# cards, and a looped (weight-tied) transformer block over the 52 cards, iterated more for
# longer hands. Both read the registers through the public features.


def full_arrays(obs):
    """The tensors the full-view networks read: hands (n, p, 52) and pile (n, 52) as card
    classes (-1: none), and the public features (n, w)."""
    from . import features

    return (
        torch.from_numpy(np.array(obs["hands"], np.int64)),  # copies: torch wants writable arrays
        torch.from_numpy(np.array(obs["pile"], np.int64)),
        torch.from_numpy(features.public_features(obs)),
    )


class HandsNet(nn.Module):
    """Each hand read card by card by a GRU, from its bottom card to its top one (the top card,
    played next, is read last), the pile by another in play order; their last states and the
    public features (the registers) -> an MLP -> the outcomes' logits."""

    def __init__(self, n_players, public_width, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(core.N_CLASSES, hidden)
        self.hand = nn.GRU(hidden, hidden, batch_first=True)
        self.pile = nn.GRU(hidden, hidden, batch_first=True)
        self.public = nn.Linear(public_width, hidden)
        self.head = nn.Sequential(
            nn.Linear((n_players + 2) * hidden, 2 * hidden), nn.ReLU(), nn.Linear(2 * hidden, n_players + 1)
        )

    def read(self, gru, cards, reverse):
        """The last state of ``gru`` over each row of ``cards`` (-1 after the last card)."""
        lengths = (cards >= 0).sum(dim=1)
        if reverse:
            index = (lengths[:, None] - 1 - torch.arange(cards.shape[1])).clamp(min=0)
            cards = cards.gather(1, index)
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed(cards.clamp(min=0)), lengths.clamp(min=1), batch_first=True, enforce_sorted=False
        )
        _, last = gru(packed)
        return last[0] * (lengths > 0)[:, None]

    def forward(self, hands, pile, public):
        n, p, slots = hands.shape
        held = self.read(self.hand, hands.reshape(n * p, slots), reverse=True).reshape(n, -1)
        return self.head(torch.cat([held, self.read(self.pile, pile, reverse=False), self.public(public)], dim=1))


class LoopedNet(nn.Module):
    """A weight-tied pre-norm transformer block over the 52 cards (each card a token: its
    class, where it lies: a seat's hand or the pile, how far from the top and from the bottom)
    and one register token (the public features), iterated ``base + ceil(per_card x h)``
    times, at most ``most``, where h is the second-largest hand (the game's horizon grows with
    it), the input added again at each iteration (recall); the register token -> the logits."""

    def __init__(self, n_players, public_width, width=64, heads=4, base=2, per_card=0.5, most=32):
        super().__init__()
        self.base, self.per_card, self.most = base, per_card, most
        self.card = nn.Embedding(core.N_CLASSES, width)
        self.where = nn.Embedding(n_players + 1, width)
        self.depth = nn.Embedding(core.DECK_SIZE, width)
        self.height = nn.Embedding(core.DECK_SIZE, width)
        self.register = nn.Linear(public_width, width)
        self.norm1, self.norm2, self.norm = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, n_players + 1)

    def iterations(self, hands):
        """Each position's number of iterations (a LongTensor)."""
        held = (hands >= 0).sum(dim=2)
        second = held.sort(dim=1).values[:, -2] if held.shape[1] > 1 else held[:, 0]
        return (self.base + torch.ceil(self.per_card * second.float()).long()).clamp(1, self.most)

    def tokens(self, hands, pile, public):
        """The input tokens (n, cards + 1, width) and which are padding."""
        n, p, slots = hands.shape
        cards = torch.cat([hands, pile[:, None]], dim=1)  # (n, p + 1, slots): the pile as one more row
        held = (cards >= 0).sum(dim=2, keepdim=True)
        depth = torch.arange(slots).expand_as(cards)
        height = (held - 1 - depth).clamp(min=0)
        where = torch.arange(p + 1)[:, None].expand_as(cards)
        x = self.card(cards.clamp(min=0)) + self.where(where) + self.depth(depth) + self.height(height)
        x, valid = x.reshape(n, -1, x.shape[-1]), (cards >= 0).reshape(n, -1)
        keep = int(valid.sum(dim=1).max())
        order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)[:, :keep]  # the cards first
        x = x.gather(1, order[..., None].expand(-1, -1, x.shape[-1]))
        padding = ~valid.gather(1, order)
        x = torch.cat([self.register(public)[:, None], x], dim=1)
        return x, torch.cat([torch.zeros(n, 1, dtype=torch.bool), padding], dim=1)

    def forward(self, hands, pile, public, iterations=None):
        x, padding = self.tokens(hands, pile, public)
        steps = self.iterations(hands) if iterations is None else iterations
        h = torch.zeros_like(x)
        out = torch.zeros(len(x), self.head.out_features)
        for t in range(1, int(steps.max()) + 1):
            u = self.norm1(h + x)
            h = h + self.attention(u, u, u, key_padding_mask=padding, need_weights=False)[0]
            h = h + self.mlp(self.norm2(h))
            done = steps == t
            if done.any():
                out = torch.where(done[:, None], self.head(self.norm(h[:, 0])), out)
        return out


NETS = ("hands", "looped")


class FullViewForecaster(Forecaster):
    """A network of the full view (``net``: "hands", :class:`HandsNet`; "looped",
    :class:`LoopedNet`) trained on the outcome of random positions (``samples`` a game of
    ``games`` games of the stream ``data_seed``, the full view) with Adam, ``epochs`` passes
    in minibatches of ``batch``, keeping the epoch whose log loss on held-out games is lowest
    (``history``: each epoch's). Minibatches of the looped model are of positions of about
    as many iterations (sorted within groups of ``batch x 16``)."""

    observation = "full"

    def __init__(
        self, n_players=2, net="hands", *, games=20_000, samples=8, data_seed=1002, epochs=10, batch=256, lr=1e-3,
        seed=1, threads=None, name=None, **sizes,
    ):  # fmt: skip
        super().__init__(n_players)
        self.net_kind = checks.choice("net", net, NETS)
        self.games, self.samples = checks.count("games", games, 1), checks.count("samples", samples, 1)
        self.data_seed, self.seed = int(checks.seed(data_seed)), int(checks.seed(seed))
        self.epochs, self.batch = checks.count("epochs", epochs, 1), checks.count("batch", batch, 1)
        self.lr, self.threads, self.sizes = lr, threads, sizes
        self._name = name
        self.net, self.history, self.fit_seconds, self.trained_on_seed = None, [], 0.0, None

    @property
    def name(self):
        if self._name:
            return self._name
        return "GRU over each hand (full)" if self.net_kind == "hands" else "looped transformer (full)"

    def new_net(self, public_width):
        torch.manual_seed(self.seed)
        kind = HandsNet if self.net_kind == "hands" else LoopedNet
        return kind(self.n_players, public_width, **self.sizes)

    def fit(self, dataset=None, progress=None):
        """Train on ``games`` fresh games (``dataset``, if given, instead: a full-view dataset)."""
        from .. import datasets
        from .forecasters import held_out_games

        started = time.perf_counter()
        if dataset is None:
            dataset = datasets.generate(
                self.games, n_players=self.n_players, observation="full", samples=self.samples, seed=self.data_seed
            )
        hands, pile, public = full_arrays(dataset.fields)
        labels = torch.from_numpy(dataset.label)
        held = torch.from_numpy(held_out_games(dataset, seed=self.seed))
        train = torch.nonzero(~held)[:, 0]
        with torch_threads(self.threads):
            self.net = self.new_net(public.shape[1])
            optimiser = torch.optim.Adam(self.net.parameters(), lr=self.lr)
            batches_per_epoch = max(1, len(train) // self.batch)
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
                optimiser, self.epochs * batches_per_epoch, eta_min=self.lr / 20
            )
            generator = torch.Generator().manual_seed(self.seed)
            best, best_loss, self.history = None, np.inf, []
            for epoch in range(self.epochs):
                self.net.train()
                for chosen in self._batches(train, hands, generator):
                    loss = functional.cross_entropy(
                        self.net(hands[chosen], pile[chosen], public[chosen]), labels[chosen]
                    )
                    optimiser.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
                    optimiser.step()
                    schedule.step()
                self.net.eval()
                val = torch.nonzero(held)[:, 0]
                probs = self._forecast(hands[val], pile[val], public[val])
                rows = np.arange(len(val))
                val_labels = labels[val].numpy()
                val_loss = float(-np.log(np.maximum(probs[rows, val_labels], 1e-6)).mean())
                val_accuracy = float((probs.argmax(axis=1) == val_labels).mean())
                self.history.append(
                    {"epoch": epoch + 1, "val_log_loss": val_loss, "val_accuracy": val_accuracy,
                     "seconds": time.perf_counter() - started}
                )  # fmt: skip
                if val_loss < best_loss:
                    best, best_loss = {k: v.clone() for k, v in self.net.state_dict().items()}, val_loss
                if progress is not None:
                    progress(epoch + 1, self.epochs)
            self.net.load_state_dict(best)
            self.net.eval()
        self.fit_seconds = time.perf_counter() - started
        self.trained_on_seed = self.data_seed
        return self

    def _batches(self, train, hands, generator):
        order = train[torch.randperm(len(train), generator=generator)]
        if self.net_kind == "looped":  # positions of about as many iterations together
            steps = self.net.iterations(hands[order])
            group = self.batch * 16
            parts = [order[lo : lo + group][steps[lo : lo + group].argsort()] for lo in range(0, len(order), group)]
            order = torch.cat(parts)
        batches = [order[lo : lo + self.batch] for lo in range(0, len(order) - self.batch + 1, self.batch)]
        for i in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[i]

    def _forecast(self, hands, pile, public, batch=2048):
        """Forecasts in batches of positions of about as many iterations (the looped model)."""
        out = np.zeros((len(hands), self.n_outcomes))
        order = self.net.iterations(hands).argsort() if self.net_kind == "looped" else torch.arange(len(hands))
        with torch.no_grad():
            for lo in range(0, len(hands), batch):
                rows = order[lo : lo + batch]
                logits = self.net(hands[rows], pile[rows], public[rows])
                out[rows.numpy()] = torch.softmax(logits.double(), dim=1).numpy()
        return out

    def predict_proba(self, obs):
        check_obs(self, obs)
        if self.net is None:
            raise RuntimeError(f"{self.name}: call fit() first")
        with torch_threads(self.threads):
            return self._forecast(*full_arrays(obs))

"""The rules of one card, learned: a network trained on the engine's card transitions
(:mod:`~beggar_env.forecasting.transitions`), evaluated once on each of its finitely many
inputs to make the table the queue machine plays (:mod:`~beggar_env.forecasting.machine`).

*Learned*: everything the rules decide at a card (who plays next, what is owed and to whom,
whether the pile is taken and by whom, who is out, whether the game is over and who won).
*Given*, not learned: what the network reads (the card just played, the registers, which
hands are empty) and the machine that plays its table (``docs/results.md``, "Playing the
game forward").

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import time

import numpy as np

from .. import checks, core

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.step_model", "a CPU-only torch build")

from . import training  # noqa: E402 (after torch's check)
from .training import torch_threads  # noqa: E402
from .transitions import OUT_NAMES, OWED, codes, decode, n_inputs, tally  # noqa: E402

nn = torch.nn
functional = torch.nn.functional


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
    for each of its :func:`~beggar_env.forecasting.transitions.n_inputs` inputs: what the
    machine reads).

    The step is a function (one output per input: checked on every training transition), so
    the network trains on the distinct transitions seen
    (:func:`~beggar_env.forecasting.transitions.tally`), each weighted by the
    square root of how often it occurred (between the games' frequencies, where the rare
    moves of a game's end are seen too seldom to be learnt exactly, and equal weights):
    ``steps`` full-batch steps of Adam from ``lr``, decayed along a cosine, on ``threads``
    of torch's threads.

    Parameters
    ----------
    n_players : the seats at the table.
    hidden : the width of the network's two hidden layers.
    games : the random games whose transitions it learns.
    steps : the full-batch steps of Adam.
    lr : the learning rate at the start.
    seed : the seed of the games and of the initial weights.
    threads : torch's threads while it trains and decides (None: torch's default).
    """

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
        """Train on the distinct transitions of every card of ``games`` fresh games
        (``progress``: as :func:`~beggar_env.forecasting.training.train` takes it, by steps)."""
        started = time.perf_counter()
        inputs, outputs, counts = tally(self.games, self.n_players, self.seed)
        self.seen, self.transitions_seen = codes(inputs, self.n_players), int(counts.sum())
        with torch_threads(self.threads):
            self.net = training.seeded(self.seed, lambda: StepNet(self.n_players, self.hidden))
            x, y = torch.from_numpy(inputs), torch.from_numpy(outputs)
            weight = torch.from_numpy(np.sqrt(counts) / np.sqrt(counts).sum()).float()

            def figures(step, loss):  # a tenth of the way at a time: the loss, the distinct inputs still wrong
                if (step + 1) % max(1, self.steps // 10):
                    return None
                with torch.no_grad():
                    wrong = int((self.net.decide(x) != y).any(dim=1).sum())
                return {"step": step + 1, "loss": float(loss.detach()), "wrong_distinct": wrong}

            self.history = training.train(
                self.net, lambda step: [None], lambda _: self.net.loss(x, y, weight), lr=self.lr, epochs=self.steps,
                schedule=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, self.steps, eta_min=self.lr / 100),
                figures=figures, progress=progress, description="training the step", unit="step",
            )  # fmt: skip
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
        """The network's outputs (int8, (``n_inputs(n_players)``, 6)) for every input, row
        ``codes`` of each: the step the machine plays (computed once)."""
        if self._table is None:
            rows = np.arange(n_inputs(self.n_players))
            self._table = self.decide(decode(rows, self.n_players)).astype(np.int8)
        return self._table

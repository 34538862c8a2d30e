"""A step-supervised looped model: the game played forward a trick per iteration by a
weight-tied transformer over the 52 cards, with no engine, no machine and no table given.

:class:`LoopedSteps` reads a trick-start position (:mod:`~beggar_env.forecasting.trick_targets`):
each card is a token (its class, the seat whose hand holds it, its depth from the top and
its height from the bottom), and one register token holds the seat to lead. One
*iteration* applies the same ``layers`` pre-norm transformer blocks to the tokens; after
iteration ``k`` a readout says, for each card, its seat and depth ``k`` tricks later, and,
from the register, the seat to lead then, whether the game has ended by then (the halting
head) and the winner. Every iteration's readout is supervised on the engine's position
``k`` tricks on (deep supervision, as TRM, Jolicoeur-Martineau 2025, and Burtsev 2024 on
cellular automata): :func:`segments` unrolls a minibatch a few iterations at a time, each a
step of the optimiser, the latent state carried to the next detached. The supervised
iterations grow over training (a curriculum over tricks left, in the study script).

At forecast time (:func:`forecast`) the loop runs until the halting head says the game is
over (or ``cap`` iterations, at least the p99 of tricks left, 133 in 2-player random games)
and the winner head is read there. The looped model that is trained end to end on outcomes
alone (``full_view.LoopedNet``) is the contrast: its iterations are told nothing about the
positions between.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

from typing import NamedTuple

import numpy as np

from .. import checks, core

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.looped_steps", "a CPU-only torch build")

nn = torch.nn
functional = torch.nn.functional

N_CARDS = core.DECK_SIZE
CAP = 160  # iterations at most at forecast time: above the p99 of tricks left (133, 2 players)


class Readout(NamedTuple):
    """One iteration's logits: ``seat`` (n, 52, p), ``depth`` (n, 52, 52), ``leader`` (n, p),
    ``halt`` (n,) (the game has ended), ``winner`` (n, p)."""

    seat: "torch.Tensor"
    depth: "torch.Tensor"
    leader: "torch.Tensor"
    halt: "torch.Tensor"
    winner: "torch.Tensor"


class Block(nn.Module):
    """A pre-norm transformer block: attention over the tokens, then an MLP."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, h):
        u = self.norm1(h)
        h = h + self.attention(u, u, u, need_weights=False)[0]
        return h + self.mlp(self.norm2(h))


class LoopedSteps(nn.Module):
    """The looped model: :meth:`embed` a position, :meth:`step` once per trick, :meth:`readout`
    after any iteration.

    Parameters
    ----------
    n_players : the seats at the table.
    width : the width of a token.
    heads : the attention heads.
    layers : the distinct blocks of one iteration (the same at every iteration).
    """

    given = ()  # no engine, machine or table: the positions and their futures alone

    def __init__(self, n_players=2, width=64, heads=4, layers=3):
        super().__init__()
        self.n_players = checks.n_players(n_players)
        self.settings = {"n_players": self.n_players, "width": width, "heads": heads, "layers": layers}
        self.card = nn.Embedding(core.N_CLASSES, width)
        self.seat = nn.Embedding(self.n_players, width)
        self.depth = nn.Embedding(N_CARDS, width)
        self.height = nn.Embedding(N_CARDS, width)
        self.lead = nn.Embedding(self.n_players, width)
        self.register = nn.Parameter(0.02 * torch.randn(width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.to_seat, self.to_depth = nn.Linear(width, self.n_players), nn.Linear(width, N_CARDS)
        self.to_leader, self.to_winner = nn.Linear(width, self.n_players), nn.Linear(width, self.n_players)
        self.to_halt = nn.Linear(width, 1)
        self.register_buffer("classes", torch.from_numpy(core.CLASS_OF_CARD_ID.astype(np.int64)), persistent=False)

    def embed(self, seat, depth, leader):
        """The tokens (n, 53, width) of positions: each card's ``seat`` and ``depth`` (n, 52),
        the seat to lead ``leader`` (n,); the register token first."""
        held = functional.one_hot(seat, self.n_players).sum(dim=1)
        height = (held.gather(1, seat) - 1 - depth).clamp(min=0)
        cards = self.card(self.classes)[None] + self.seat(seat) + self.depth(depth) + self.height(height)
        register = (self.register + self.lead(leader))[:, None]
        return torch.cat([register, cards], dim=1)

    def step(self, h):
        """One iteration: a trick played forward."""
        for block in self.blocks:
            h = block(h)
        return h

    def readout(self, h):
        """The :class:`Readout` of the latent tokens ``h``."""
        z = self.norm(h)
        register, cards = z[:, 0], z[:, 1:]
        return Readout(
            self.to_seat(cards),
            self.to_depth(cards),
            self.to_leader(register),
            self.to_halt(register)[:, 0],
            self.to_winner(register),
        )

    def forward(self, seat, depth, leader, iterations):
        """The readouts after iterations ``0 .. iterations`` (a list; 0: the input read back)."""
        h = self.embed(seat, depth, leader)
        out = [self.readout(h)]
        for _ in range(iterations):
            h = self.step(h)
            out.append(self.readout(h))
        return out


def as_tensors(targets):
    """``trick_targets.targets``' arrays as tensors."""
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in targets.items()}


def supervised(targets, k):
    """Which positions iteration ``k`` is supervised on (n,): those whose game has not ended
    more than one trick before (the end is held once, so the halting head sees it)."""
    return k <= targets["tricks_left"] + 1


def step_loss(r, targets, k, weights=(1.0, 1.0, 1.0, 1.0, 1.0)):
    """The loss of iteration ``k``'s readout ``r`` against the positions ``k`` tricks on: per
    card its seat and depth (each averaged over the cards), the seat to lead, the halting
    head and, once the game is over, the winner; summed, averaged over the whole minibatch
    (positions not :func:`supervised` count 0)."""
    mask = supervised(targets, k).float()
    over = targets["over"][:, k]
    seat = functional.cross_entropy(r.seat.transpose(1, 2), targets["seat"][:, k], reduction="none").mean(1)
    depth = functional.cross_entropy(r.depth.transpose(1, 2), targets["depth"][:, k], reduction="none").mean(1)
    leader = functional.cross_entropy(r.leader, targets["leader"][:, k], reduction="none")
    halt = functional.binary_cross_entropy_with_logits(r.halt, over.float(), reduction="none")
    winner = functional.cross_entropy(r.winner, targets["winner"], reduction="none") * over
    parts = torch.stack([seat, depth, leader, halt, winner], dim=1) @ torch.tensor(weights)
    return (parts * mask).sum() / len(mask)


def segments(model, targets, k, bptt):
    """The deep supervision of one minibatch (``targets``: :func:`as_tensors` of
    ``trick_targets.targets(..., k)``): a function per segment of ``bptt`` iterations (0 ..
    ``k``, up to one past the last game's end), each returning its mean loss; each segment
    starts from the latent state the one before left, detached (TRM's deep supervision: a
    step of the optimiser per segment). Call them in order."""
    last = min(k, int(targets["tricks_left"].max()) + 1)
    carry = {}
    start = (targets["seat"][:, 0], targets["depth"][:, 0], targets["leader"][:, 0])

    def segment(lo, hi):
        h = model.embed(*start) if lo == 0 else carry["h"]
        total = 0.0
        for j in range(lo, hi):
            if j > 0:
                h = model.step(h)
            total = total + step_loss(model.readout(h), targets, j)
        carry["h"] = h.detach()
        return total / (hi - lo)

    return [lambda lo=lo: segment(lo, min(lo + bptt, last + 1)) for lo in range(0, last + 1, bptt)]


@torch.no_grad()
def roll_out(model, seat, depth, leader, k):
    """The model's positions 0 .. ``k`` tricks on (argmax readouts): ``seat``, ``depth``
    ((n, k + 1, 52)), ``leader``, ``over`` ((n, k + 1)) and ``winner`` ((n, k + 1)), numpy."""
    h = model.embed(torch.as_tensor(seat), torch.as_tensor(depth), torch.as_tensor(leader))
    rows = [_hard(model.readout(h))]
    for _ in range(k):
        h = model.step(h)
        rows.append(_hard(model.readout(h)))  # the hard readouts only: the logits of k iterations are large
    return {name: np.stack([row[name] for row in rows], axis=1) for name in rows[0]}


def _hard(r):
    return {
        "seat": r.seat.argmax(-1).numpy(),
        "depth": r.depth.argmax(-1).numpy(),
        "leader": r.leader.argmax(-1).numpy(),
        "over": (r.halt > 0).numpy(),
        "winner": r.winner.argmax(-1).numpy(),
    }


def exactness(predicted, targets):
    """Per trick ``k`` (arrays over 0 .. k): the share of cards whose seat and depth are right
    (``cards``), of positions whose every card and leader are right (``positions``), and of
    positions right at every trick up to ``k`` (``through``)."""
    cards = (predicted["seat"] == targets["seat"]) & (predicted["depth"] == targets["depth"])
    whole = cards.all(axis=2) & (predicted["leader"] == targets["leader"])
    return {
        "cards": cards.mean(axis=(0, 2)),
        "positions": whole.mean(axis=0),
        "through": np.logical_and.accumulate(whole, axis=1).mean(axis=0),
    }


@torch.no_grad()
def forecast(model, seat, depth, leader, cap=CAP, threshold=0.5):
    """Each position's winner, playing forward until the halting head says the game is over
    (its probability above ``threshold``) or ``cap`` iterations: ``(probs (n, p), iterations
    (n,))``, the winner head's softmax at the iteration it stopped. No engine."""
    cap = checks.integer("cap", cap, 1)
    h = model.embed(torch.as_tensor(seat), torch.as_tensor(depth), torch.as_tensor(leader))
    probs, iterations = torch.zeros(len(h), model.n_players), torch.full((len(h),), cap)
    live = torch.arange(len(h))
    for j in range(1, cap + 1):
        h = model.step(h)
        r = model.readout(h)
        stop = torch.sigmoid(r.halt) > threshold if j < cap else torch.ones(len(h), dtype=torch.bool)
        probs[live[stop]] = torch.softmax(r.winner[stop], dim=1)
        iterations[live[stop]] = j
        live, h = live[~stop], h[~stop]
        if len(live) == 0:
            break
    return probs.numpy(), iterations.numpy()

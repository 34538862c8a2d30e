"""Networks of the full view: per-position forecasters that read every hand
(``observation="full"``), trained end to end on the outcome of random positions by
:class:`FullViewForecaster`: a GRU over each hand's cards (:class:`HandsNet`), and a looped
(weight-tied) transformer block over the 52 cards, iterated more for longer hands
(:class:`LoopedNet`): computation that grows with the horizon, with nothing of the rules
given. Both read the registers through the public features.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import time

import numpy as np

from .. import checks, core

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.full_view", "a CPU-only torch build")

from . import features, training  # noqa: E402 (after torch's check)
from .forecasters import Forecaster  # noqa: E402
from .machine import check_obs  # noqa: E402
from .training import torch_threads  # noqa: E402

nn = torch.nn
functional = torch.nn.functional


def full_arrays(obs):
    """The tensors the full-view networks read: hands (n, p, 52) and pile (n, 52) as card
    classes (-1: none), and the public features (n, w)."""

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
    it), the input added again at each iteration (recall); the register token -> the logits.

    Parameters
    ----------
    n_players : the seats at the table.
    public_width : the width of the public features.
    width : the width of a token.
    heads : the attention heads.
    base, per_card : the iterations: ``base + ceil(per_card x h)``.
    most : the iterations at most.
    """

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
    as many iterations (sorted within groups of ``batch x 16``).

    Parameters
    ----------
    n_players : the seats at the table.
    net : ``"hands"`` or ``"looped"``.
    games : the random games whose positions it trains on.
    samples : the positions taken from each game.
    data_seed : the seed of the training games.
    epochs : the passes over the training positions.
    batch : the positions of a minibatch.
    lr : Adam's learning rate at the start (decayed along a cosine to ``lr`` / 20).
    seed : the seed of the initial weights, the held-out games and the minibatches.
    threads : torch's threads while it trains and forecasts (None: torch's default).
    name : the row's name (None: the network's).
    sizes : the network's own sizes (``hidden``; ``width``, ``heads``, ``base``, ``per_card``, ``most``).
    """

    observation = "full"
    given = ()  # the observation and the outcomes alone

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
        """The untrained network, its initial weights the seed's."""
        kind = HandsNet if self.net_kind == "hands" else LoopedNet
        return training.seeded(self.seed, lambda: kind(self.n_players, public_width, **self.sizes))

    def fit(self, dataset=None, progress=None):
        """Train on ``games`` fresh games (``dataset``, if given, instead: a full-view dataset);
        ``progress``: as :func:`~beggar_env.forecasting.training.train` takes it, by epochs."""
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
        train, val = torch.nonzero(~held)[:, 0], torch.nonzero(held)[:, 0]
        with torch_threads(self.threads):
            self.net = self.new_net(public.shape[1])
            generator = torch.Generator().manual_seed(self.seed)
            steps = self.epochs * max(1, len(train) // self.batch)

            def figures(epoch, _):
                probs = self._forecast(hands[val], pile[val], public[val])
                val_labels = labels[val].numpy()
                val_loss = float(-np.log(np.maximum(probs[np.arange(len(val)), val_labels], 1e-6)).mean())
                val_accuracy = float((probs.argmax(axis=1) == val_labels).mean())
                return {"epoch": epoch + 1, "val_log_loss": val_loss, "val_accuracy": val_accuracy,
                        "seconds": time.perf_counter() - started}  # fmt: skip

            def loss(chosen):
                return functional.cross_entropy(self.net(hands[chosen], pile[chosen], public[chosen]), labels[chosen])

            self.history = training.train(
                self.net, lambda epoch: self._batches(train, hands, generator), loss,
                lr=self.lr, epochs=self.epochs, clip=1.0, figures=figures, keep_best=True, progress=progress,
                schedule=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, steps, eta_min=self.lr / 20),
                description=f"training {self.name}",
            )  # fmt: skip
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

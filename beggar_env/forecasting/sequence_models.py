"""Sequence forecasters (PyTorch): a GRU and a small causal transformer that read the stream
of a game's observations (:mod:`~beggar_env.forecasting.events`) and forecast its winner
at every step, trained on the outcome or distilled from the Bayes forecaster.

:class:`SequenceForecaster` is a :class:`~beggar_env.forecasting.forecasters.Forecaster`
with a memory (``recurrent = True``):

* ``fit()`` trains on fresh games every epoch (:class:`~beggar_env.forecasting.sequences.GameStreams`),
  windows of packed games with the state carried from window to window, early stopping
  on whole held-out games; ``target="bayes"`` trains on the Bayes forecaster's
  probabilities (soft labels) instead of the 0/1 outcome, as ChessBench (Ruoss et al. 2024)
  trained on engine win probabilities;
* ``act(obs)`` steps with the env: it keeps one state per env of a batch (or one for
  ``Beggar-v0``) and resets it where a game starts (no card played yet), so it plays in
  ``Beggar-v0`` and in the vector env with any autoreset mode;
* ``predict_proba(obs)`` takes whole games, each from its first step, in play order (as
  ``TestSet`` and ``datasets.generate(samples="card")`` give them) and forecasts every
  step as ``act`` would;
* :func:`~beggar_env.forecasting.protocol.evaluate` scores it by playing every test game in
  the vector env, in order, through ``act``.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import copy
import os
import re
import sys
import time
import zipfile

import numpy as np

from .. import checks, files
from . import events, protocol, sequences
from .forecasters import Forecaster
from .sequences import torch

ARCHITECTURES = ("gru", "transformer")
TARGETS = ("outcome", "bayes")
PUBLISHED = dict(games=20_000, epochs=3, hidden=128, layers=2, context=128, lanes=128, window=128, soft_k=64)
WIDTH = {"gru": 128, "transformer": 64}  # the published hidden units; the transformer's width
QUICK = dict(games=200, epochs=1, hidden=16, layers=1, context=16, lanes=16, window=32, soft_k=4, val_games=50)
MOST = dict(hidden=4096, layers=64, context=4096, lanes=65_536, window=65_536, threads=1024)  # sane bounds of the sizes
MODEL_FORMAT = "beggar-env sequence forecaster"


def budget(architecture, quick=False):
    """The settings of the published rows (``examples/sequence_forecasters.py``, ``beggar
    baselines --sequences``), or of a smoke run of seconds."""
    checks.choice("architecture", architecture, ARCHITECTURES)
    return dict(QUICK) if quick else dict(PUBLISHED, hidden=WIDTH[architecture])


nn = torch.nn
functional = torch.nn.functional


class GRUNet(nn.Module):
    """Events -> a linear layer -> ReLU -> a GRU cell -> logits of the outcomes. The state
    is the GRU's hidden vector, zeroed where a game starts."""

    def __init__(self, width, n_outcomes, hidden=128):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Linear(width, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, n_outcomes)

    def initial(self, batch):
        return torch.zeros(batch, self.hidden)

    def forward(self, x, start, state):
        """``x`` (batch, steps, width), ``start`` (batch, steps) bool; returns logits
        (batch, steps, n_outcomes) and the state after the last step."""
        inputs = functional.relu(self.embed(x))
        keep = (~start).to(x.dtype)
        h, outs = state, []
        for t in range(x.shape[1]):
            h = self.cell(inputs[:, t], h * keep[:, t, None])
            outs.append(h)
        return self.head(torch.stack(outs, dim=1)), h

    @staticmethod
    def detach(state):
        return state.detach()

    def initial_step(self, batch):
        return self.initial(batch)

    def step(self, x, start, state):
        """One step ``x`` (batch, 1, width) at a time, as ``forward`` plays it."""
        return self.forward(x, start, state)

    @staticmethod
    def lanes(state):
        return state.shape[0]


class CausalTransformer(nn.Module):
    """A pre-norm transformer whose step attends to the last ``context`` steps of its own
    game (itself included), layer by layer, as Transformer-XL does: the state is each layer's
    inputs at the last ``context - 1`` steps (and which game each belongs to), so a window
    of steps and one step at a time in the env compute the same forecasts. No positional
    embedding: attention is causal, and the events carry the time (cards, tricks)."""

    def __init__(self, width, n_outcomes, d_model=64, heads=4, layers=2, context=128):
        super().__init__()
        self.d_model, self.heads, self.context = d_model, heads, context
        self.embed = nn.Linear(width, d_model)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(
                {
                    "norm1": nn.LayerNorm(d_model),
                    "qkv": nn.Linear(d_model, 3 * d_model),
                    "out": nn.Linear(d_model, d_model),
                    "norm2": nn.LayerNorm(d_model),
                    "mlp": nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)),
                }
            )
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_outcomes)

    def initial(self, batch):
        m = self.context - 1
        memory = [torch.zeros(batch, m, self.d_model) for _ in self.blocks]
        game = torch.full((batch, m), -1, dtype=torch.long)  # -1: an empty slot, in no game
        return memory, game, torch.zeros(batch, dtype=torch.long)

    def forward(self, x, start, state):
        memory, mem_game, current = state
        batch, steps, _ = x.shape
        m = mem_game.shape[1]
        game = current[:, None] + torch.cumsum(start.long(), dim=1)  # each step's game number, per lane
        keys_game = torch.cat([mem_game, game], dim=1)
        distance = (torch.arange(steps)[:, None] + m) - torch.arange(m + steps)[None, :]
        in_reach = (distance >= 0) & (distance < self.context)
        mask = in_reach[None] & (keys_game[:, None, :] == game[:, :, None])  # (batch, steps, m + steps)
        h = self.embed(x)
        new_memory = []
        for block, mem in zip(self.blocks, memory):
            both = torch.cat([mem, h], dim=1)
            new_memory.append(both[:, -m:] if m else both[:, :0])
            q, k, v = block["qkv"](block["norm1"](both)).split(self.d_model, dim=2)
            q = q[:, m:]
            shape = (batch, -1, self.heads, self.d_model // self.heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            attended = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
            h = h + block["out"](attended.transpose(1, 2).reshape(batch, steps, self.d_model))
            h = h + block["mlp"](block["norm2"](h))
        logits = self.head(self.norm(h))
        new_game = keys_game[:, -m:] if m else keys_game[:, :0]
        return logits, (new_memory, new_game, game[:, -1])

    @staticmethod
    def detach(state):
        memory, game, current = state
        return [mem.detach() for mem in memory], game, current

    def initial_step(self, batch):
        """The state of ``step``: each layer's keys and values of the last ``context``
        steps in a ring (attention has no positions, so their order does not matter), the
        game of each slot (-1: empty), the next slot, and each lane's game number."""
        shape = (batch, self.heads, self.context, self.d_model // self.heads)
        keys = [(torch.zeros(shape), torch.zeros(shape)) for _ in self.blocks]
        game = torch.full((batch, self.context), -1, dtype=torch.long)
        return keys, game, 0, torch.zeros(batch, dtype=torch.long)

    def step(self, x, start, state):
        """One step ``x`` (batch, 1, width) for every lane, the forecasts ``forward`` gives
        for that step: each layer computes the new step's query, key and value only and
        attends to the cached keys of its game, so a step costs O(context), not
        O(context²)."""
        keys, slot_game, slot, current = state
        batch = x.shape[0]
        game = current + start[:, 0].long()
        slot_game[:, slot] = game
        mask = (slot_game == game[:, None])[:, None, None, :]  # (batch, 1, 1, context)
        h = self.embed(x)
        for block, (k_cache, v_cache) in zip(self.blocks, keys):
            q, k, v = block["qkv"](block["norm1"](h)).split(self.d_model, dim=2)
            shape = (batch, 1, self.heads, self.d_model // self.heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            k_cache[:, :, slot], v_cache[:, :, slot] = k[:, :, 0], v[:, :, 0]
            attended = functional.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask)
            h = h + block["out"](attended.transpose(1, 2).reshape(batch, 1, self.d_model))
            h = h + block["mlp"](block["norm2"](h))
        return self.head(self.norm(h)), (keys, slot_game, (slot + 1) % self.context, game)

    @staticmethod
    def lanes(state):
        return state[-1].shape[0]


class SequenceForecaster(Forecaster):
    """A GRU or causal transformer over the stream of one observation level (see the
    module docstring).

    Training: ``epochs`` passes of ``games`` fresh random games each (seeded by ``seed``),
    packed into ``lanes`` streams cut into windows of ``window`` steps; Adam from ``lr``,
    decayed along a cosine to ``lr`` / 20 by the end;
    after each epoch the log loss on ``val_games`` held-out games picks the best epoch
    (``history`` keeps each epoch's figures: the learning curve). ``target`` is
    ``"outcome"`` (the 0/1 winner) or ``"bayes"`` (the Bayes forecaster's probabilities with
    ``soft_k`` rollouts a position: distillation). ``threads`` sets torch's threads while
    it trains and forecasts (None: torch's default, one per core).
    """

    recurrent = True

    def __init__(
        self,
        n_players=2,
        observation="public",
        architecture="gru",
        target="outcome",
        *,
        hidden=128,
        layers=2,
        context=128,
        games=20_000,
        epochs=4,
        lanes=128,
        window=128,
        lr=2e-3,
        soft_k=sequences.SOFT_K,
        val_games=500,
        seed=1,
        threads=None,
        name=None,
    ):
        super().__init__(n_players)
        self.observation = checks.choice("observation", observation, ("public", "counted"))
        self.architecture = checks.choice("architecture", architecture, ARCHITECTURES)
        self.target = checks.choice("target", target, TARGETS)
        self.hidden = checks.integer("hidden", hidden, 1, MOST["hidden"])
        self.layers = checks.integer("layers", layers, 1, MOST["layers"])
        self.context = checks.integer("context", context, 1, MOST["context"])
        self.games = checks.count("games", games, 1)
        self.epochs = checks.count("epochs", epochs, 1)
        self.lanes = checks.integer("lanes", lanes, 1, MOST["lanes"])
        self.window = checks.integer("window", window, 1, MOST["window"])
        self.lr = checks.number("lr", lr, 0, strict=True)
        self.soft_k = checks.count("soft_k", soft_k, 1)
        self.val_games = checks.count("val_games", val_games, 1)
        self.seed = int(checks.seed(seed))
        self.threads = None if threads is None else checks.integer("threads", threads, 1, MOST["threads"])
        if self.architecture == "transformer" and self.hidden % 4:
            raise ValueError(f"hidden: the transformer's width is split among 4 heads: a multiple of 4, not {hidden}")
        if name is not None:
            protocol.check_name(name, "name")
        self._name = name
        self.model = None
        self.history = []
        self.fit_seconds = 0.0
        self.trained_on_seed = None
        self._state = None

    @property
    def name(self):
        if self._name:
            return self._name
        kind = "GRU" if self.architecture == "gru" else "transformer"
        how = ", distilled from Bayes" if self.target == "bayes" else ""
        return f"{kind} ({self.observation} stream{how})"

    def __repr__(self):
        return (
            f"SequenceForecaster(n_players={self.n_players}, observation={self.observation!r}, "
            f"architecture={self.architecture!r}, target={self.target!r})"
        )

    def new_model(self):
        width = events.width(self.n_players, self.observation)
        torch.manual_seed(self.seed)
        if self.architecture == "gru":
            return GRUNet(width, self.n_outcomes, self.hidden)
        return CausalTransformer(width, self.n_outcomes, self.hidden, 4, self.layers, self.context)

    def streams(self):
        """The training streams: fresh games every epoch, with soft labels for ``target="bayes"``."""
        return sequences.GameStreams(
            self.n_players,
            self.observation,
            self.games,
            seed=self.seed,
            soft_k=self.soft_k if self.target == "bayes" else None,
        )

    def fit(self, dataset=None, progress=True):
        """Train (``dataset`` is not used: the forecaster plays its own fresh games): minutes
        with the published settings. ``progress``: ``True`` (the default) shows a progress
        bar on stderr (the training games, each epoch's held-out log loss; shown once
        training takes more than half a second, gone when it ends); ``False`` or ``None``
        shows nothing; a callable is called as ``progress(done, total)`` with the training
        games played (as ``datasets.generate(progress=...)`` calls it)."""
        if isinstance(progress, (bool, np.bool_)):
            if progress:
                with _Bar(f"training {self.name}") as bar:
                    return self._fit(bar)
            progress = None
        return self._fit(checks.callback("progress", progress))

    def _fit(self, progress):
        started = time.perf_counter()
        with torch_threads(self.threads):
            self.model = self.new_model()
            optimiser = torch.optim.Adam(self.model.parameters(), lr=self.lr)
            held_out = sequences.GameStreams(
                self.n_players, self.observation, self.val_games, seed=self.seed + 1, chunk_games=self.val_games
            )
            validation = held_out.chunk(0)  # outcomes only: the held-out games are scored as the protocol scores
            streams = self.streams()
            # Cosine decay from lr to lr / 20 over the windows of the whole run, counted ahead
            # from the held-out games' mean length (the same distribution as the training games).
            windows_ahead = self.epochs * self.games * validation.lengths.mean() / (self.lanes * self.window)
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimiser, lambda i: 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * min(i / max(windows_ahead, 1), 1.0)))
            )
            best, best_loss, seen = None, np.inf, 0
            self.history = []
            for epoch in range(self.epochs):
                streams.set_epoch(epoch)
                self.model.train()
                state, steps = None, 0
                for window in sequences.windows(streams, self.lanes, self.window):
                    state, begun = self._step(optimiser, window, state)
                    schedule.step()
                    seen += begun
                    steps += int(window.valid.sum())
                    if progress is not None:
                        progress(min(seen, self.games * self.epochs), self.games * self.epochs)
                self.model.eval()
                scores = protocol.position_scores(
                    self.forecast_games(validation), np.repeat(validation.label, validation.lengths)
                )
                loss, accuracy = float(scores["log_loss"].mean()), float(scores["accuracy"].mean())
                self.history.append(
                    {
                        "epoch": epoch + 1,
                        "games": (epoch + 1) * self.games,
                        "steps": steps,  # trained on in this epoch
                        "val_log_loss": loss,
                        "val_accuracy": accuracy,
                        "seconds": time.perf_counter() - started,
                    }
                )
                if loss < best_loss:
                    best, best_loss = copy.deepcopy(self.model.state_dict()), loss
                if isinstance(progress, _Bar):
                    progress.epoch(epoch + 1, self.epochs, loss)
            self.model.load_state_dict(best)
            self.model.eval()
        self.fit_seconds = time.perf_counter() - started
        self.trained_on_seed = self.seed
        self._state = None
        return self

    def _step(self, optimiser, window, state):
        """One gradient step on a window; the state carries on to the next window, cut from
        the graph (truncated backpropagation through time)."""
        if state is None:
            state = self.model.initial(window.start.shape[0])
        logits, state = self.model(window.events, window.start, state)
        log_probs = functional.log_softmax(logits, dim=2)
        valid = window.valid
        if self.target == "bayes":
            per_step = -(window.soft * log_probs).sum(dim=2)
        else:
            per_step = -log_probs.gather(2, window.label[..., None])[..., 0]
        loss = per_step[valid].sum() / valid.numel()  # a pass's last, ragged windows weigh what they hold
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        optimiser.step()
        return self.model.detach(state), int(window.start[valid].sum())  # and the games begun in this window

    def _require_model(self):
        if self.model is None:
            raise RuntimeError(f"{self.name}: call fit() first")

    def forecast_games(self, games, lanes=256) -> np.ndarray:
        """Forecasts (float64, (n_steps, n_outcomes)) of every step of a :class:`~beggar_env.
        forecasting.sequences.Games` chunk, in its order."""
        self._require_model()
        out = np.zeros((len(games.events), self.n_outcomes))
        state = None
        with torch.no_grad(), torch_threads(self.threads):
            for window in sequences.windows([games], lanes, self.window):
                if state is None:
                    state = self.model.initial(window.start.shape[0])
                logits, state = self.model(window.events, window.start, state)
                rows = window.row[window.valid].numpy()
                out[rows] = torch.softmax(logits[window.valid].double(), dim=1).numpy()
        return out

    def predict_proba(self, obs):
        """Forecasts of whole games given in play order, each from its first step (cards
        == 0): every step forecast from its game's steps so far, as ``act`` does."""
        self._require_model()
        cards = np.asarray(obs["cards"])
        if cards.ndim != 1:
            raise ValueError("obs: a recurrent forecaster forecasts a batch of whole games (use act for one step)")
        if len(cards) and cards[0] != 0:
            raise ValueError("obs: the first observation must begin a game (cards == 0): whole games, in order")
        starts = np.flatnonzero(cards == 0)
        offsets = np.r_[starts, len(cards)].astype(np.int64)
        encoded = events.encode(obs, self.observation)
        games = sequences.Games(encoded, offsets, np.zeros(len(starts), np.int64))
        return self.forecast_games(games)

    def reset_state(self):
        """Forget the state of every env (``act`` also resets an env where its game starts)."""
        self._state = None

    def step_proba(self, obs):
        """This step's forecasts for a batch of envs (``act`` plays them in ``Beggar-v0`` or
        the vector env): the state of each env advances by one step; it resets where no card
        has been played yet."""
        self._require_model()
        n = len(obs["cards"])
        x = torch.from_numpy(events.encode(obs, self.observation))[:, None]
        start = torch.from_numpy(np.asarray(obs["cards"]) == 0)[:, None]
        with torch.no_grad(), torch_threads(self.threads):
            if self._state is None or self.model.lanes(self._state) != n:
                self._state = self.model.initial_step(n)
            logits, self._state = self.model.step(x, start, self._state)
            return torch.softmax(logits[:, 0].double(), dim=1).numpy()

    def save(self, path) -> str:
        """The trained weights and settings as a torch file (``.pt`` added to a name without
        a suffix), replaced whole or not at all: a save that fails (a full disk) leaves the
        previous file as it was. Returns the path written."""
        self._require_model()
        path = files.output_path(path, ".pt", name="path")
        saved = {"format": MODEL_FORMAT, "settings": self.settings(), "state": self.model.state_dict()}
        with files.replacing(path) as f:
            torch.save({**saved, "history": self.history}, f)
        return path

    SETTINGS = ("n_players", "observation", "architecture", "target", "hidden", "layers", "context", "games", "epochs")
    SETTINGS += ("lanes", "window", "lr", "soft_k", "val_games", "seed", "threads")

    def settings(self):
        return {key: getattr(self, key) for key in self.SETTINGS}

    @classmethod
    def load(cls, path):
        """A forecaster :meth:`save` wrote, checked before a byte of its model is allocated:
        the file must be a torch archive whose records fit in it, read with
        ``weights_only=True`` (no code runs); its settings must be valid (the constructor's
        checks and bounds) and its weights exactly the shapes those settings make, so that a
        file cannot ask for more memory than it holds. ``ValueError`` in one line naming the
        file for anything wrong."""
        path = checks.path("path", path)
        saved = _read_model_file(path)

        def refuse(what):
            raise ValueError(f"{path}: not a saved SequenceForecaster: {what}")

        if not isinstance(saved, dict) or not {"settings", "state", "history"} <= set(saved):
            refuse("it lacks its settings, weights or history (save one with SequenceForecaster.save)")
        if saved.get("format", MODEL_FORMAT) != MODEL_FORMAT:  # files saved before the format was named have none
            refuse(f"its format is {checks.excerpt(saved['format'])}")
        settings, state, history = saved["settings"], saved["state"], saved["history"]
        expected = set(cls.SETTINGS)
        if not isinstance(settings, dict) or set(settings) != expected:
            given = sorted(map(str, settings)) if isinstance(settings, dict) else checks.excerpt(settings)
            refuse(f"its settings are {given}, not {sorted(expected)}")
        try:
            forecaster = cls(**settings)
        except (TypeError, ValueError) as error:
            refuse(f"its settings: {str(error).splitlines()[0]}")
        with torch.device("meta"):  # the shapes of the settings' model, without allocating it
            shapes = {name: tuple(t.shape) for name, t in forecaster.new_model().state_dict().items()}
        if not isinstance(state, dict) or set(state) != set(shapes):
            refuse("its weights are not those of its settings' model")
        for name, shape in shapes.items():
            tensor = state[name]
            if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
                refuse(f"its weights {name!r} are not a tensor of real numbers")
            if tuple(tensor.shape) != shape:
                refuse(f"its weights {name!r} are {tuple(tensor.shape)}, where its settings make {shape}")
            if not torch.isfinite(tensor).all():
                refuse(f"its weights {name!r} are not all finite")
        if not isinstance(history, list) or not all(isinstance(entry, dict) for entry in history):
            refuse("its history is not a list of epochs")
        forecaster.model = forecaster.new_model()
        forecaster.model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        forecaster.model.eval()
        forecaster.history = history
        forecaster.trained_on_seed = forecaster.seed
        return forecaster


MODEL_RECORDS = 4096  # records in a model file: a handful per layer


def _read_model_file(path):
    """The object in a torch file :meth:`SequenceForecaster.save` wrote, read with
    ``weights_only=True`` after checking that it is a torch archive (a zip file) whose
    records are stored whole within it, so that reading it allocates at most its size."""
    try:
        size = os.path.getsize(path)
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
        reason = getattr(error, "strerror", None) or next(iter(str(error).splitlines()), "") or type(error).__name__
        raise ValueError(f"{path}: not a saved SequenceForecaster (not a torch archive: {reason})") from None
    if len(records) > MODEL_RECORDS or any(
        r.compress_type != zipfile.ZIP_STORED or r.file_size > size for r in records
    ):
        raise ValueError(f"{path}: not a saved SequenceForecaster (its records do not fit in its {size:,} bytes)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch's many errors (RuntimeError, UnpicklingError, ...): one line naming the file
        raise ValueError(f"{path}: not a saved SequenceForecaster ({_torch_reason(error)})") from None


_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f\x7f-\x9f]")  # terminal escapes, control characters
_UNSUPPORTED = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _torch_reason(error):
    """Why torch could not read a file, in one plain line of ours: torch's own text spans
    lines, with terminal escapes, and advises loading the file unchecked."""
    text = str(error)
    unsupported = _UNSUPPORTED.search(text)
    if unsupported:
        return f"it holds a {unsupported.group(1)}, which a model file does not: refused unread"
    first = next((line for line in text.splitlines() if line.strip()), "") or type(error).__name__
    return checks.excerpt(_ESCAPE.sub("", first).strip(), 160)


class _Bar:
    """``fit``'s progress bar on stderr: the training games, and each epoch's held-out log loss."""

    DELAY = 0.5  # seconds before the bar shows, as the command line's bars

    def __init__(self, description):
        from tqdm import tqdm

        self.bar = tqdm(desc=description, unit="game", delay=self.DELAY, file=sys.stderr, leave=False)

    def __call__(self, done, total):
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def epoch(self, epoch, epochs, loss):
        self.bar.set_postfix_str(f"epoch {epoch}/{epochs}: held-out log loss {loss:.4f}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.close()


class torch_threads:
    """torch's intra-op threads set for a block (None: as they are), then restored."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.before = torch.get_num_threads()
        if self.n is not None:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)

"""Sequence forecasters (PyTorch): a GRU and a small causal transformer
(:mod:`~beggar_env.forecasting.sequence_nets`) that read the stream of a game's observations
(:mod:`~beggar_env.forecasting.events`) and forecast its winner at every step, trained on
the outcome or distilled from the Bayes forecaster.

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

import os
import re
import time
import zipfile

import numpy as np

from .. import checks, files
from . import events, metrics, sequences, training
from .forecasters import Forecaster
from .report import check_name
from .sequence_nets import CausalTransformer, GRUNet
from .sequences import torch
from .training import torch_threads

ARCHITECTURES = ("gru", "transformer")
TARGETS = ("outcome", "bayes")
PUBLISHED = dict(games=20_000, epochs=3, hidden=128, layers=2, context=128, lanes=128, window=128, soft_k=64)
WIDTH = {"gru": 128, "transformer": 64}  # the published hidden units; the transformer's width
QUICK = dict(games=200, epochs=1, hidden=16, layers=1, context=16, lanes=16, window=32, soft_k=4, val_games=50)
MOST = dict(hidden=4096, layers=64, context=4096, lanes=65_536, window=65_536, threads=1024)  # sane bounds of the sizes
MODEL_FORMAT = "beggar-env sequence forecaster"


def budget(architecture, quick=False):
    """The settings of the published rows (``studies/sequence_forecasters.py``, ``beggar
    baselines --sequences``), or of a smoke run of seconds."""
    checks.choice("architecture", architecture, ARCHITECTURES)
    return dict(QUICK) if quick else dict(PUBLISHED, hidden=WIDTH[architecture])


functional = torch.nn.functional


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

    Parameters
    ----------
    n_players : the seats at the table.
    observation : the level of the stream read: ``"public"`` or ``"counted"``.
    architecture : ``"gru"`` or ``"transformer"``.
    target : ``"outcome"`` (the winner) or ``"bayes"`` (distilled from the Bayes forecaster).
    hidden : the GRU's hidden units, or the transformer's width.
    layers : the transformer's blocks.
    context : the steps of its game a transformer's step attends to.
    games : the fresh training games of an epoch.
    epochs : the passes, each over fresh games.
    lanes : the streams of games trained on side by side.
    window : the steps of a window (of truncated backpropagation through time).
    lr : Adam's learning rate at the start.
    soft_k : the Bayes forecaster's rollouts a position (``target="bayes"``).
    val_games : the held-out games that pick the best epoch.
    seed : the seed of the games and of the initial weights.
    threads : torch's threads while it trains and forecasts (None: torch's default).
    name : the row's name (None: from the architecture, the level and the target).
    """

    recurrent = True
    given = ()  # trained on the outcomes; distilled from Bayes: ("teacher",)

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
        if self.target == "bayes":
            self.given = ("teacher",)  # trained on another forecaster's outputs
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
            check_name(name, "name")
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
        """The untrained network of the settings, its initial weights the seed's."""
        width = events.width(self.n_players, self.observation)
        if self.architecture == "gru":
            return training.seeded(self.seed, lambda: GRUNet(width, self.n_outcomes, self.hidden))
        return training.seeded(
            self.seed, lambda: CausalTransformer(width, self.n_outcomes, self.hidden, 4, self.layers, self.context)
        )

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
        started = time.perf_counter()
        with torch_threads(self.threads):
            self.model = self.new_model()
            held_out = sequences.GameStreams(
                self.n_players, self.observation, self.val_games, seed=self.seed + 1, chunk_games=self.val_games
            )
            validation = held_out.chunk(0)  # outcomes only: the held-out games are scored as the protocol scores
            run = _Windows(self, self.streams())
            # Cosine decay from lr to lr / 20 over the windows of the whole run, counted ahead
            # from the held-out games' mean length (the same distribution as the training games).
            windows_ahead = self.epochs * self.games * validation.lengths.mean() / (self.lanes * self.window)
            decay = lambda i: 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * min(i / max(windows_ahead, 1), 1.0)))

            def figures(epoch, _):
                scores = metrics.position_scores(
                    self.forecast_games(validation), np.repeat(validation.label, validation.lengths)
                )
                return {
                    "epoch": epoch + 1,
                    "games": (epoch + 1) * self.games,
                    "steps": run.steps,  # trained on in this epoch
                    "val_log_loss": float(scores["log_loss"].mean()),
                    "val_accuracy": float(scores["accuracy"].mean()),
                    "seconds": time.perf_counter() - started,
                }

            self.history = training.train(
                self.model, run.batches, run.loss, lr=self.lr, epochs=self.epochs, clip=1.0, figures=figures,
                keep_best=True, schedule=lambda o: torch.optim.lr_scheduler.LambdaLR(o, decay), progress=progress,
                work=run.work, description=f"training {self.name}", unit="game",
            )  # fmt: skip
        self.fit_seconds = time.perf_counter() - started
        self.trained_on_seed = self.seed
        self._state = None
        return self

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


class _Windows:
    """The training windows of a fit: each epoch's fresh games packed into windows
    (:meth:`batches`), the state carried from window to window of an epoch and cut from the
    graph (truncated backpropagation through time, :meth:`loss`), the games begun so far
    (:meth:`work`) and the steps of the epoch's windows (``steps``)."""

    def __init__(self, forecaster, streams):
        self.forecaster, self.streams = forecaster, streams
        self.state, self.steps, self.seen = None, 0, 0
        self.total = forecaster.games * forecaster.epochs

    def batches(self, epoch):
        self.streams.set_epoch(epoch)
        self.state, self.steps = None, 0
        for window in sequences.windows(self.streams, self.forecaster.lanes, self.forecaster.window):
            self.steps += int(window.valid.sum())
            yield window

    def loss(self, window):
        """The window's loss (soft labels for ``target="bayes"``); the state goes on to the next window."""
        model = self.forecaster.model
        if self.state is None:
            self.state = model.initial(window.start.shape[0])
        logits, state = model(window.events, window.start, self.state)
        self.state = model.detach(state)
        log_probs = functional.log_softmax(logits, dim=2)
        valid = window.valid
        if self.forecaster.target == "bayes":
            per_step = -(window.soft * log_probs).sum(dim=2)
        else:
            per_step = -log_probs.gather(2, window.label[..., None])[..., 0]
        return per_step[valid].sum() / valid.numel()  # a pass's last, ragged windows weigh what they hold

    def work(self, window):
        """The training games begun so far, and in all."""
        self.seen += int(window.start[window.valid].sum())
        return min(self.seen, self.total), self.total


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

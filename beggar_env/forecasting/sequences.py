"""Whole games as training data for sequence models (PyTorch): each game's stream of
observations, encoded step by step (:mod:`~beggar_env.forecasting.events`), with its
outcome and, optionally, the Bayes forecaster's probabilities at each step as soft labels.

* :class:`GameStreams`: a ``torch.utils.data.IterableDataset`` that plays fresh games
  every epoch (``set_epoch``, as with ``DistributedSampler``), no disk. It yields
  :class:`Games` chunks of ``chunk_games`` games; chunk ``j`` of epoch ``e`` comes from
  the seed ``(seed, e, j)`` alone, and ``DataLoader`` workers take chunks in turn, so a
  ``DataLoader(streams, batch_size=None, num_workers=w)`` gives the same chunks in the
  same order for every ``w`` (forked workers included).
* :func:`from_dataset` and :func:`from_shards`: the same chunks from a dataset in memory
  or from Parquet shards (``beggar dataset --out DIR``), read in bounded memory; they
  need every card step (``samples="card"``).
* :func:`windows`: packs games into ``lanes`` streams played end to end and cuts them
  into windows of ``window`` steps, with a ``start`` flag where a game begins.

Long games (up to thousands of cards) are batched by packing rather than padding or
truncation: each lane is a stream of whole games, a recurrent model carries its state from
window to window (truncated backpropagation through time) and resets it where a game starts,
exactly as it runs in the vector env, so no step is cut off and no step is padding (but the
last windows of a pass). ``docs/forecasting.md`` says why.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .. import checks

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.sequences", "a CPU-only torch build")

from .. import datasets  # noqa: E402 (after torch's check)
from . import events  # noqa: E402
from .forecasters import BayesMC  # noqa: E402

SOFT_K = 64  # rollouts per position of the Bayes soft labels, by default


@dataclass
class Games:
    """A chunk of whole games: ``events`` (n_steps, width) float32, the games one after the
    other in play order; ``offsets`` (n_games + 1) where each begins; ``label`` (n_games) the
    env's label of each game's outcome; ``soft`` (n_steps, n_players + 1) the Bayes
    forecaster's probabilities at each step, or None."""

    events: np.ndarray
    offsets: np.ndarray
    label: np.ndarray
    soft: np.ndarray | None = None

    def __len__(self):
        return len(self.label)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def game(self, i):
        """Game ``i``: (events, label, soft or None)."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.events[lo:hi], int(self.label[i]), None if self.soft is None else self.soft[lo:hi]


def encode_dataset(dataset, level="public", soft=None) -> Games:
    """The games of a dataset of every card step (``samples="card"``) as one chunk;
    ``soft``, if given, is a :class:`~beggar_env.forecasting.forecasters.BayesMC` whose
    probabilities become the soft labels (the dataset must then be counted or full)."""
    if not hasattr(dataset, "fields") or not hasattr(dataset, "game"):
        raise TypeError(f"dataset must be a beggar_env.datasets.Dataset, not {type(dataset).__name__}")
    if dataset.samples != "card":
        raise ValueError(
            f"dataset: a stream needs every card step (samples='card'); this one has samples={dataset.samples!r}"
        )
    level = checks.choice("observation", level, events.LEVELS)
    fields = dataset.fields
    offsets = _game_offsets(dataset).astype(np.int64)
    soft_labels = None
    if soft is not None:
        soft_labels = soft.predict_proba({name: fields[name] for name in _counted_fields(fields)}).astype(np.float32)
    return Games(events.encode(fields, level), offsets, dataset.label[offsets[:-1]].astype(np.int64), soft_labels)


def _counted_fields(fields):
    if "known" not in fields:
        raise ValueError("soft labels: the Bayes forecaster reads the counted observation; this dataset has none")
    return [name for name in fields if name != "hands"]


def concat(chunks) -> Games:
    """Chunks as one."""
    chunks = list(chunks)
    starts = np.cumsum([0] + [len(c.events) for c in chunks])
    offsets = np.concatenate([[0]] + [c.offsets[1:] + s for c, s in zip(chunks, starts)])
    soft = None if any(c.soft is None for c in chunks) else np.concatenate([c.soft for c in chunks])
    return Games(
        np.concatenate([c.events for c in chunks]),
        offsets.astype(np.int64),
        np.concatenate([c.label for c in chunks]),
        soft,
    )


class GameStreams(torch.utils.data.IterableDataset):
    """Fresh random games every epoch as :class:`Games` chunks (see the module docstring).

    ``games`` per epoch, in chunks of ``chunk_games``; ``observation`` is the level encoded;
    ``soft_k`` (rollouts per position, e.g. 64), if given, adds the Bayes forecaster's
    probabilities as soft labels (slower: about 60 k positions/s on 2 cores). ``threads`` is
    the engine's threads in each process (None: all cores in the main process, 1 in a
    ``DataLoader`` worker).

    Parameters
    ----------
    n_players : the seats at the table.
    observation : the level encoded.
    games : the games of an epoch.
    seed : the seed of every epoch's games (with the epoch and the chunk).
    chunk_games : the games of a chunk.
    soft_k : the Bayes forecaster's rollouts a position for soft labels (None: none).
    max_cards : the games' limit of cards (None: the engine's).
    threads : the engine's threads in each process.
    """

    def __init__(
        self,
        n_players=2,
        observation="public",
        games=20_000,
        *,
        seed=0,
        chunk_games=1024,
        soft_k=None,
        max_cards=None,
        threads=None,
    ):
        super().__init__()
        self.n_players = checks.n_players(n_players)
        self.observation = checks.choice("observation", observation, events.LEVELS)
        self.games = checks.count("games", games, 1)
        self.seed = int(checks.seed(seed))
        self.chunk_games = checks.count("chunk_games", chunk_games, 1)
        self.soft_k = None if soft_k is None else checks.count("soft_k", soft_k, 1)
        self.max_cards = checks.limit("max_cards", max_cards)
        self.threads = threads
        self.epoch = 0

    def set_epoch(self, epoch: int):
        """Play epoch ``epoch``'s games on the next pass (call before each epoch)."""
        self.epoch = checks.integer("epoch", epoch, 0, checks.MAX_SEED)

    @property
    def n_chunks(self):
        return -(-self.games // self.chunk_games)

    def chunk_seed(self, j):
        """The seed of chunk ``j`` of this epoch: its games and its soft labels' rollouts."""
        return int(np.random.SeedSequence([self.seed, self.epoch, j]).generate_state(1, np.uint64)[0])

    def chunk(self, j, threads=None) -> Games:
        """Chunk ``j`` of this epoch."""
        n = min(self.chunk_games, self.games - j * self.chunk_games)
        seed = self.chunk_seed(j)
        level = self.observation
        if self.soft_k is not None and level == "public":
            level = "counted"  # the Bayes forecaster reads it; only the public fields are encoded
        data = datasets.generate(
            n, n_players=self.n_players, observation=level, seed=seed, max_cards=self.max_cards, threads=threads
        )
        soft = None
        if self.soft_k is not None:
            soft = BayesMC(self.n_players, k=self.soft_k, seed=seed, max_cards=self.max_cards, threads=threads)
            if self.observation == "full":
                counted = datasets.generate(
                    n,
                    n_players=self.n_players,
                    observation="counted",
                    seed=seed,
                    max_cards=self.max_cards,
                    threads=threads,
                )
                games = encode_dataset(data, "full")
                games.soft = encode_dataset(counted, "counted", soft).soft
                return games
        return encode_dataset(data, self.observation, soft)

    def __iter__(self) -> Iterator[Games]:
        info = torch.utils.data.get_worker_info()
        first, step, threads = (0, 1, self.threads) if info is None else (info.id, info.num_workers, self.threads or 1)
        for j in range(first, self.n_chunks, step):
            yield self.chunk(j, threads)


def from_dataset(dataset, observation="public", *, chunk_games=1024, soft_k=None, seed=0, first_chunk=0):
    """A dataset in memory (every card step) as :class:`Games` chunks of ``chunk_games``
    games, in game order; with ``soft_k``, chunk ``j``'s soft labels come from rollouts
    seeded by ``(seed, first_chunk + j)``.

    Parameters
    ----------
    dataset : a dataset of every card step (``samples="card"``).
    observation : the level encoded.
    chunk_games : the games of a chunk.
    soft_k : the Bayes forecaster's rollouts a position for soft labels (None: none).
    seed : the seed of the soft labels' rollouts.
    first_chunk : the number of the first chunk, in the seeds of the rollouts.
    """
    chunk_games = checks.count("chunk_games", chunk_games, 1)
    offsets = _game_offsets(dataset)
    for j, lo in enumerate(range(0, len(offsets) - 1, chunk_games)):
        hi = min(lo + chunk_games, len(offsets) - 1)
        soft = None
        if soft_k is not None:
            chunk_seed = int(np.random.SeedSequence([seed, first_chunk + j]).generate_state(1, np.uint64)[0])
            soft = BayesMC(dataset.n_players, k=soft_k, seed=chunk_seed)
        yield encode_dataset(_rows(dataset, offsets[lo], offsets[hi]), observation, soft)


def _game_offsets(dataset):
    """Where each game's rows begin, and the number of rows at the end."""
    return (
        np.flatnonzero(np.r_[True, dataset.game[1:] != dataset.game[:-1], True]) if len(dataset) else np.zeros(1, int)
    )


def _rows(dataset, lo, hi):
    return datasets.Dataset(
        **{name: getattr(dataset, name)[lo:hi] for name in datasets.Dataset.ARRAYS},
        n_players=dataset.n_players,
        observation=dataset.observation,
        samples=dataset.samples,
        seed=dataset.seed,
    )


def from_shards(
    directory, observation="public", *, chunk_games=1024, split=None, soft_k=None, seed=0, batch_size=1 << 16
):
    """The games of a folder of Parquet shards (every card step) as :func:`from_dataset`
    gives them from ``datasets.load(directory)``, reading ``datasets.batches`` of
    ``batch_size`` rows: in memory, at most a chunk of games and a batch (a game's rows may
    span batches).

    Parameters
    ----------
    directory : the folder of Parquet shards (every card step).
    observation : the level encoded.
    chunk_games : the games of a chunk.
    split : the split read (None: every row).
    soft_k : the Bayes forecaster's rollouts a position for soft labels (None: none).
    seed : the seed of the soft labels' rollouts.
    batch_size : the rows read at a time.
    """
    from ..datasets import columns, reading, shards

    chunk_games = checks.count("chunk_games", chunk_games, 1)
    meta = reading.read_info(directory)
    job = shards.Job.from_dict(meta["job"])
    if str(job.samples) != "card":
        raise ValueError(f"{directory}: a stream needs every card step (samples='card'), not samples={job.samples!r}")
    layout = job.config.layout
    observation_columns = columns.ObservationColumns(layout)
    pending, made = None, 0  # rows of the games not yet in a chunk (the last may go on in the next batch)
    for batch in reading.batches(directory, split=split, batch_size=batch_size):
        read = {name: batch.column(i).to_numpy(zero_copy_only=False) for i, name in enumerate(batch.schema.names)}
        rows = np.empty((batch.num_rows, layout.size), np.int32)
        observation_columns.rows(read, rows)
        part = datasets.Dataset(
            observations=rows,
            **{name: read[name] for name in datasets.Dataset.ARRAYS[1:]},
            n_players=job.n_players,
            observation=job.observation,
            samples="card",
            seed=job.seed,
        )
        part = part if pending is None else _join(pending, part)
        offsets = _game_offsets(part)
        whole_games = len(offsets) - 2  # all but the last, which may go on
        ready = whole_games - whole_games % chunk_games
        if ready:
            yield from from_dataset(
                _rows(part, 0, offsets[ready]), observation, chunk_games=chunk_games, soft_k=soft_k, seed=seed,
                first_chunk=made,
            )  # fmt: skip
            made += ready // chunk_games
        pending = _rows(part, offsets[ready], len(part))
    if pending is not None and len(pending):
        yield from from_dataset(
            pending, observation, chunk_games=chunk_games, soft_k=soft_k, seed=seed, first_chunk=made
        )


def _join(a, b):
    return datasets.Dataset(
        **{name: np.concatenate([getattr(a, name), getattr(b, name)]) for name in datasets.Dataset.ARRAYS},
        n_players=a.n_players,
        observation=a.observation,
        samples=a.samples,
        seed=a.seed,
    )


@dataclass
class Window:
    """``window`` steps of ``lanes`` streams of games (torch tensors): ``events`` (lanes,
    window, width); ``start`` (lanes, window) True where a game begins (a recurrent model
    resets its state there); ``label`` (lanes, window) the step's game outcome; ``soft``
    (lanes, window, n_outcomes) or None; ``valid`` (lanes, window) False only on the
    padding after a lane's last game; ``row`` (lanes, window) each step's index in the
    chunks' steps taken one after the other (-1 on padding), to put forecasts back in
    play order."""

    events: torch.Tensor
    start: torch.Tensor
    label: torch.Tensor
    soft: torch.Tensor | None
    valid: torch.Tensor
    row: torch.Tensor


def windows(chunks, lanes=128, window=128) -> Iterator[Window]:
    """Pack the games of ``chunks`` (an iterable of :class:`Games`) into ``lanes`` streams
    played end to end (each next game goes to the lane with the fewest steps waiting) and
    cut them into :class:`Window` s of ``window`` steps, in order: lane ``b`` of window
    ``i + 1`` continues lane ``b`` of window ``i``."""
    lanes = checks.count("lanes", lanes, 1)
    window = checks.count("window", window, 1)
    queues = [[] for _ in range(lanes)]  # per lane: [events, start, label, soft, row] arrays waiting
    waiting = np.zeros(lanes, np.int64)
    width = None

    def take(n):
        out = []
        for b in range(lanes):
            pieces, got = [], 0
            while got < n and queues[b]:
                piece = queues[b][0]
                k = min(n - got, len(piece[0]))
                pieces.append([a[:k] if a is not None else None for a in piece])
                if k == len(piece[0]):
                    queues[b].pop(0)
                else:
                    queues[b][0] = [a[k:] if a is not None else None for a in piece]
                got += k
            waiting[b] -= got
            out.append((pieces, got))
        return out

    def emit(taken, has_soft, n_outcomes):
        ev = np.zeros((lanes, window, width), np.float32)
        start = np.zeros((lanes, window), bool)
        label = np.zeros((lanes, window), np.int64)
        soft = np.zeros((lanes, window, n_outcomes), np.float32) if has_soft else None
        valid = np.zeros((lanes, window), bool)
        row = np.full((lanes, window), -1, np.int64)
        for b, (pieces, got) in enumerate(taken):
            at = 0
            for e, s, lab, sf, r in pieces:
                k = len(e)
                ev[b, at : at + k], start[b, at : at + k], label[b, at : at + k] = e, s, lab
                row[b, at : at + k] = r
                if has_soft:
                    soft[b, at : at + k] = sf
                at += k
            valid[b, :got] = True
        return Window(
            torch.from_numpy(ev),
            torch.from_numpy(start),
            torch.from_numpy(label),
            None if soft is None else torch.from_numpy(soft),
            torch.from_numpy(valid),
            torch.from_numpy(row),
        )

    has_soft, n_outcomes, rows_before = False, 0, 0
    for chunk in chunks:
        chunk = _as_games(chunk)
        width = chunk.events.shape[1]
        has_soft = chunk.soft is not None
        n_outcomes = chunk.soft.shape[1] if has_soft else 0
        for i in range(len(chunk)):
            ev, label, soft = chunk.game(i)
            if len(ev) == 0:
                continue
            start = np.zeros(len(ev), bool)
            start[0] = True
            b = int(np.argmin(waiting))
            first = rows_before + int(chunk.offsets[i])
            queues[b].append([ev, start, np.full(len(ev), label, np.int64), soft, np.arange(first, first + len(ev))])
            waiting[b] += len(ev)
        rows_before += len(chunk.events)
        while waiting.min() >= window:
            yield emit(take(window), has_soft, n_outcomes)
    while width is not None and waiting.max() > 0:
        yield emit(take(window), has_soft, n_outcomes)


def _as_games(chunk):
    if isinstance(chunk, Games):
        return chunk
    if isinstance(chunk, dict):  # through a DataLoader's default_convert: tensors in a dict
        return Games(**{k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in chunk.items()})
    raise TypeError(f"chunks must give Games, not {type(chunk).__name__}")

"""Datasets on disk: Parquet shards, written as the games are generated, in bounded memory.

A dataset directory holds::

    dataset.json                              what it is (written last: a folder without it is incomplete)
    samples/shard-00000.parquet               the samples of games 0 .. shard_games - 1, in game order
    samples/split=train/shard-00000.parquet   ... or, with splits, one folder per split (hive style)
    deals/shard-00000.parquet                 one row per game: its deal, outcome, length (and split)
    INCOMPLETE                                only while it is being generated, or after a crash

Shard ``j`` holds games ``j * shard_games ..``. :func:`generate` makes a whole dataset in
one process; it is :func:`create`, :func:`write_games` over all games, then :func:`finish`.
:func:`write_games` writes the shards of a range of games of a :class:`Job`, the same bytes
whichever process writes them and in whatever order: a job split by game ranges over many
workers, then :func:`finish` on what they returned, gives the dataset one process gives.
The columns are in :mod:`beggar_env.datasets.columns` and ``docs/datasets.md``; reading a
dataset back is :mod:`beggar_env.datasets.reading`'s.
"""

import json
import math
import os
import platform
import re
import shutil
from dataclasses import asdict, dataclass

import numpy as np

from .. import __version__, checks, core, files, task
from ..distributed import check_backend, require_ray
from ..jit import parallel
from . import columns, streaming
from .columns import require_pyarrow
from .samples import Sampling, most_samples, parse_samples

FORMAT = "beggar-env dataset"
FORMAT_VERSION = 1
METADATA = "dataset.json"
MARKER = "INCOMPLETE"
SAMPLES, DEALS = "samples", "deals"
SHARD_GAMES = 1 << 16  # games per shard: about 17 M samples (~230 MB) for every card of 2-player games
SPLIT_STREAM = 2**63  # the item of the seed's stream whose key draws the games' splits (no game is this far)
# lz4 without dictionaries writes about 3.5 times as fast as zstd with them, for files about
# three times as large, and batches of 64 k values beat pyarrow's 1 k (benchmarks/bench.py
# --only parquet): writing is most of the cost of streaming.
SAMPLE_OPTIONS = dict(compression="lz4", use_dictionary=False, write_statistics=["game"], write_batch_size=1 << 16)
DEAL_OPTIONS = dict(compression="zstd")
_SPLIT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # a folder's name (split=NAME), well within any file system's


# --------------------------------------------------------------------------- the job


def parse_splits(split):
    """Splits as ((name, fraction), ...): from ``"train=0.9,test=0.1"`` or a dict; None for none."""
    if split is None:
        return None
    usage = (
        f"split must look like 'train=0.9,test=0.1' (names and fractions that add up to 1), not {checks.excerpt(split)}"
    )
    if isinstance(split, str):
        pairs = [part.split("=", 1) for part in split.split(",")]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError(usage)
        try:
            pairs = [(name.strip(), float(fraction)) for name, fraction in pairs]
        except ValueError:
            raise ValueError(usage) from None
    elif isinstance(split, dict):
        pairs = list(split.items())
    else:
        raise TypeError(usage)
    names = [name for name, _ in pairs]
    if not all(isinstance(name, str) and _SPLIT_NAME.fullmatch(name) for name in names) or len(set(names)) < len(names):
        raise ValueError(f"{usage}: split names are distinct words of letters, digits, '_', '.' or '-', of 1 to 100")
    fractions = [fraction for _, fraction in pairs]
    if not all(isinstance(f, (int, float)) and math.isfinite(f) and f > 0 for f in fractions):
        raise ValueError(f"{usage}: each fraction must be a number > 0")
    if abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"{usage}: the fractions add up to {sum(fractions):g}")
    return tuple((name, float(fraction)) for name, fraction in pairs)


@dataclass(frozen=True)
class Job:
    """Everything that decides a dataset's content: game ``i`` and its samples depend on
    these and ``i`` only (not on threads, processes or the order shards are written in)."""

    n_games: int
    seed: int
    n_players: int = 2
    observation: str = "public"
    samples: "str | int" = "card"
    max_cards: "int | None" = None
    splits: "tuple | None" = None  # ((name, fraction), ...)
    game_weights: bool = False
    shard_games: int = SHARD_GAMES
    faces: bool = False  # the faces view (a dataset.json written before it has none: False)

    @classmethod
    def of(
        cls,
        n_games,
        *,
        n_players=2,
        observation="public",
        samples="card",
        seed=None,
        max_cards=None,
        split=None,
        game_weights=False,
        shard_games=SHARD_GAMES,
        faces=False,
    ) -> "Job":
        """A checked job; ``seed=None`` draws a fresh one.

        Parameters
        ----------
        n_games : the random games to play.
        n_players : seats at the table.
        observation : what a sample holds: ``"public"``, ``"counted"`` or ``"full"``.
        samples : ``"card"``, ``"trick"`` or an int k (k random steps a game).
        seed : the seed of the games (None: a fresh one).
        max_cards : the agreed limit of a game's cards (None: none).
        split : the splits, ``"train=0.9,test=0.1"`` or a dict (None: one).
        game_weights : whether the samples carry a ``weight`` column.
        shard_games : the games of a shard.
        faces : whether the samples hold the faces view too.
        """
        config = task.EnvConfig(n_players, observation=observation, max_cards=max_cards, faces=faces)
        mode, k = parse_samples(samples)
        most_samples(checks.count("n_games", n_games), mode, k)
        if mode == Sampling.RANDOM:  # a game's samples are replayed in one buffer
            rows = columns.bytes_per_row(columns.ObservationColumns(config.layout))
            checks.memory(k * rows, f"the {k:,} samples of one game", "take fewer samples per game")
        return cls(
            n_games=checks.count("n_games", n_games),
            seed=int(checks.seed(seed)),
            n_players=int(n_players),
            observation=observation,
            samples=samples if isinstance(samples, str) else int(samples),
            max_cards=None if max_cards is None else int(max_cards),
            splits=parse_splits(split),
            game_weights=checks.boolean("game_weights", game_weights),
            shard_games=checks.count("shard_games", shard_games, 1),
            faces=config.faces,
        )

    @classmethod
    def from_dict(cls, values) -> "Job":
        splits = values.get("splits")
        return cls(**{**values, "splits": None if splits is None else tuple(map(tuple, splits))})

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def config(self):
        return task.EnvConfig(self.n_players, observation=self.observation, max_cards=self.max_cards, faces=self.faces)

    @property
    def n_shards(self) -> int:
        return -(-self.n_games // self.shard_games)

    def shard_games_of(self, index):
        """The games ``(lo, hi)`` of shard ``index``."""
        return index * self.shard_games, min((index + 1) * self.shard_games, self.n_games)

    @property
    def split_names(self) -> list:
        """The splits' names, or ``[None]`` for a dataset without splits."""
        return [None] if self.splits is None else [name for name, _ in self.splits]

    def game_splits(self, lo, hi) -> np.ndarray:
        """The split (an index into :attr:`split_names`) of games ``lo .. hi - 1``: a draw from
        the game's own key, so a game's split does not depend on the number of games."""
        if self.splits is None:
            return np.zeros(hi - lo, np.int64)
        key = np.uint64(core.derive_key(np.uint64(self.seed), np.uint64(SPLIT_STREAM)))  # numba returns an int
        draws = core.stream_keys(key, hi - lo, lo)
        bounds = np.cumsum([fraction for _, fraction in self.splits])[:-1]
        return np.searchsorted(bounds, draws / 2.0**64, side="right")


def sample_path(split, index):
    """The path of a shard's samples of one split, relative to the dataset directory."""
    folder = SAMPLES if split is None else f"{SAMPLES}/split={split}"
    return f"{folder}/shard-{index:05d}.parquet"


def deal_path(index):
    return f"{DEALS}/shard-{index:05d}.parquet"


# ------------------------------------------------------------------ the directory


def check_directory(directory) -> bool:
    """Check that ``directory`` can take a new dataset: a new folder in a writable one, or
    an empty writable folder; return whether it is new. ``ValueError`` naming the problem."""
    path = checks.path("directory", directory)
    if not path:
        raise ValueError("directory: give the name of a new or empty folder for the dataset")
    files.check_name_length(path, extra=0)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{path!r} is a file: give a new or empty folder for the dataset")
    new = not os.path.exists(path)
    parent = os.path.dirname(os.path.abspath(path))
    if new and not os.path.isdir(parent):
        raise ValueError(f"no such folder: {parent}")
    if not new and os.listdir(path):
        raise ValueError(f"{path!r} is not empty: give a new or empty folder for the dataset")
    where = parent if new else path
    if not os.access(where, os.W_OK):
        raise ValueError(f"cannot write in the folder {where} (permission denied)")
    return new


def create(directory) -> bool:
    """Make ``directory`` ready for a dataset (see :func:`check_directory`) and mark it
    incomplete; return whether it was created. ``ValueError`` when the checks refuse it,
    ``OSError`` (one line, nothing left) when making it fails (a full disk, say)."""
    path = checks.path("directory", directory)
    created = check_directory(path)
    try:
        if created:
            os.mkdir(path)
        for folder in (SAMPLES, DEALS):
            os.mkdir(os.path.join(path, folder))
        with open(os.path.join(path, MARKER), "w") as marker:
            marker.write(f"{FORMAT}: being generated, or its generation stopped before the end: not usable\n")
    except OSError as error:
        discard(path, created)
        raise OSError(error.errno, f"cannot write in {path}: {error.strerror or error}") from None
    return created


def discard(path, created: bool):
    """Remove what :func:`create` and :func:`write_games` put in ``path``, and ``path`` if
    :func:`create` made it (``created``): what a failed run does."""
    for folder in (SAMPLES, DEALS):
        shutil.rmtree(os.path.join(path, folder), ignore_errors=True)
    for name in (METADATA, MARKER):
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
    if created:
        try:
            os.rmdir(path)
        except OSError:  # gone already, or holds what we did not write: left as it is
            pass


def finish(directory, job: Job, shards: list) -> dict:
    """Write the metadata of a dataset whose shards are all written (``shards``: what
    :func:`write_games` returned, in any order), then drop the incomplete mark; return the
    metadata."""
    shards = sorted(shards, key=lambda shard: shard["index"])
    if [shard["index"] for shard in shards] != list(range(job.n_shards)):
        raise ValueError(f"the job has {job.n_shards} shards; got shards {[s['index'] for s in shards]}")
    totals = [sum(shard["samples"][s] for shard in shards) for s in range(len(job.split_names))]
    layout = job.config.layout
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "beggar_env": __version__,
        "rules": "docs/RULES.md; a game that never ends stops at its first repeated trick-start position",
        "job": job.as_dict(),
        "n_samples": sum(totals),
        "split_samples": dict(zip(job.split_names, totals)) if job.splits is not None else None,
        "bytes": sum(shard["bytes"] for shard in shards),
        "fields": [[name, list(shape), int(low), int(high)] for name, shape, low, high in layout.fields],
        "shards": shards,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": __import__("numba").__version__,
            "pyarrow": require_pyarrow().__version__,
        },
    }
    path = os.path.join(os.fspath(directory), METADATA)
    with files.replacing(path) as f:
        f.write(json.dumps(meta, indent=1).encode())
    os.unlink(os.path.join(os.fspath(directory), MARKER))
    return meta


# ------------------------------------------------------------------------ writing


def write_games(directory, job: Job, lo: int, hi: int, *, threads=None, progress=None) -> list:
    """Write the shards of games ``lo .. hi - 1`` of ``job`` in ``directory`` (made ready by
    :func:`create`); return a summary of each, for :func:`finish`.

    ``lo`` and ``hi`` lie on shard boundaries (``hi`` may be ``job.n_games``). The files are
    the same bytes whatever the threads, the process and the other ranges. A shard's files
    appear (renamed from hidden temporary files) once all of them are complete; on an
    error or Ctrl-C, the shard being written is removed. ``progress(done, hi - lo)``
    counts games.

    Parameters
    ----------
    directory : the dataset's folder, made ready by :func:`create`.
    job : the dataset's :class:`Job`.
    lo, hi : the games written, ``lo .. hi - 1``, on shard boundaries.
    threads : the compiled threads (None: all cores).
    progress : ``progress(done, hi - lo)``, or None.
    """
    if not 0 <= lo <= hi <= job.n_games or lo % job.shard_games or (hi % job.shard_games and hi != job.n_games):
        raise ValueError(f"games {lo}..{hi} are not whole shards of {job.shard_games} games in 0..{job.n_games}")
    directory = os.fspath(directory)
    for split in job.split_names:
        os.makedirs(os.path.dirname(os.path.join(directory, sample_path(split, 0))), exist_ok=True)
    report = None if progress is None else lambda done: progress(done - lo, hi - lo)
    summaries = []
    with parallel(threads) as n_threads:
        stream = streaming.SampleStream(job, n_threads)
        writer = streaming.WriterThread([stream.new_buffers() for _ in range(streaming.N_BUFFERS)])
        try:
            for index in range(lo // job.shard_games, -(-hi // job.shard_games)):
                summaries.append(_write_shard(directory, job, index, stream, writer, report))
        finally:
            writer.stop()
    return summaries


def _write_shard(directory, job, index, stream, writer, report):
    schema = columns.sample_schema(stream.columns, job.game_weights)
    shard = streaming.ShardFiles(
        directory,
        [(sample_path(split, index), schema, SAMPLE_OPTIONS) for split in job.split_names],
        (deal_path(index), columns.deal_schema(job.splits is not None), DEAL_OPTIONS),
    )
    lo, hi = job.shard_games_of(index)
    try:
        samples, size, paths = streaming.write_shard(shard, stream, writer, lo, hi, report)
    except BaseException:
        writer.stop()  # no write may touch the files being removed
        shard.abort()
        raise
    return {"index": index, "games": [lo, hi], "samples": samples, "bytes": size, "files": paths}


def generate(
    directory,
    n_games: int,
    *,
    n_players: int = 2,
    observation: str = "public",
    samples="card",
    seed=None,
    threads: "int | None" = None,
    max_cards: "int | None" = None,
    split=None,
    game_weights: bool = False,
    shard_games: int = SHARD_GAMES,
    progress=None,
    backend: str = "local",
    address: "str | None" = None,
    faces: bool = False,
) -> dict:
    """Generate the dataset :func:`beggar_env.datasets.generate` would, streaming it to
    Parquet shards in ``directory`` (a new or empty folder) in bounded memory; return its
    metadata (as ``dataset.json`` holds it).

    ``split`` (``"train=0.9,test=0.1"`` or a dict) puts each game, with all its samples, in
    one split, drawn from the game's key; ``game_weights`` adds a ``weight`` column (1 /
    the samples of the game, so that each game weighs 1 in all). An error (a full disk,
    say) or Ctrl-C leaves nothing behind; only a crash leaves the folder, marked
    ``INCOMPLETE``. ``progress(done, n_games)`` counts games.

    ``backend="ray"`` writes the shards on Ray workers, one per CPU (a local Ray, or the
    cluster at ``address``; see :mod:`beggar_env.distributed`), a shard per task, each
    worker on one thread: the same files, byte for byte, as a local run. On a cluster,
    ``directory`` must be a shared folder that every node sees at the same path.

    Parameters
    ----------
    directory : the dataset's folder, new or empty.
    n_games : the random games to play.
    n_players : seats at the table.
    observation : what a sample holds: ``"public"``, ``"counted"`` or ``"full"``.
    samples : ``"card"``, ``"trick"`` or an int k (k random steps a game).
    seed : the seed of the games (None: a fresh one).
    threads : the compiled threads (None: all cores).
    max_cards : the agreed limit of a game's cards (None: none).
    split : the splits, ``"train=0.9,test=0.1"`` or a dict (None: one).
    game_weights : whether the samples carry a ``weight`` column.
    shard_games : the games of a shard.
    progress : ``progress(done, n_games)``, or None.
    backend : ``"local"`` or ``"ray"``.
    address : the Ray cluster's address (None: a local Ray).
    faces : whether the samples hold the faces view too (``pile_faces_*``, ``played``,
        ``hand_faces_*`` when full).
    """
    require_pyarrow()
    checks.callback("progress", progress)
    backend = check_backend(backend, threads, address)
    if backend == "ray":
        require_ray()
    job = Job.of(
        n_games,
        n_players=n_players,
        observation=observation,
        samples=samples,
        seed=seed,
        max_cards=max_cards,
        split=split,
        game_weights=game_weights,
        shard_games=shard_games,
        faces=faces,
    )
    path = checks.path("directory", directory)
    with parallel(threads):  # checks threads before anything is written
        created = create(path)
        try:
            if backend == "ray":
                shards = _write_on_ray(path, job, address, progress)
            else:
                shards = write_games(path, job, 0, job.n_games, threads=threads, progress=progress)
            return finish(path, job, shards)
        except BaseException as error:
            discard(path, created)
            if isinstance(error, OSError):
                reason = os.strerror(error.errno) if error.errno else str(error).splitlines()[0]
                raise OSError(
                    error.errno, f"writing the dataset in {path} failed: {reason} (nothing was kept)"
                ) from None
            raise


def _write_on_ray(path, job, address, progress) -> list:
    """:func:`write_games` of every shard, a shard per task on Ray workers."""
    from ..distributed import Workers

    summaries, done = [], 0
    with Workers(_ShardJob(os.path.abspath(path), job), address=address) as workers:
        for (index,), written in workers.unordered((index,) for index in range(job.n_shards)):
            summaries.extend(written)
            lo, hi = job.shard_games_of(index)
            done += hi - lo
            if progress is not None:
                progress(done, job.n_games)
    return summaries


@dataclass(frozen=True)
class _ShardJob:
    """A dataset's shards as a job for :class:`beggar_env.distributed.Workers`: task ``(j,)``
    writes shard ``j`` on one thread."""

    directory: str
    job: Job

    def warm(self):
        with files.scratch_folder("warmup") as folder:
            one = Job(**{**self.job.as_dict(), "n_games": 1, "shard_games": 1})
            create(os.path.join(folder, "warm"))
            write_games(os.path.join(folder, "warm"), one, 0, 1, threads=1)

    def run(self, index):
        lo, hi = self.job.shard_games_of(index)
        return write_games(self.directory, self.job, lo, hi, threads=1)

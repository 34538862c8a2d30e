"""Reading datasets back: :func:`load` (a ``.npz`` file or a folder of Parquet shards,
whole into memory), :func:`batches` (a folder's samples in bounded memory), and a folder's
metadata (:func:`read_info`) and files (:func:`sample_files`)."""

import json
import os

import numpy as np

from .. import checks
from . import columns
from .columns import require_pyarrow
from .memory import Dataset, read_npz
from .shards import FORMAT, FORMAT_VERSION, MARKER, METADATA, Job, sample_path

LOAD_ROWS = 1 << 20  # rows turned into flat int32 rows at a time, when loading
MAX_BATCH = 2**31 - 1  # rows of a batch: pyarrow's scanner takes a C int
SHARD_COPIES, SPLIT_SHARD_COPIES = 4, 8  # the largest shard's table at the peak of a load (see _load_folder)


def read_info(directory) -> dict:
    """The metadata of a complete dataset directory; ``ValueError`` for one that is not."""
    path = checks.path("directory", directory)
    if not path:
        raise ValueError("directory: give a dataset folder's name, not ''")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"directory: no dataset folder {path!r}")
    if os.path.exists(os.path.join(path, MARKER)):
        raise ValueError(
            f"{path} is an incomplete dataset (marked {MARKER}): its generation was interrupted or failed; "
            "generate it again in a new folder"
        )
    if not os.path.isfile(os.path.join(path, METADATA)):
        raise ValueError(f"{path} is not a dataset folder: it has no {METADATA}")
    with open(os.path.join(path, METADATA)) as f:
        meta = json.load(f)
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: not a {FORMAT} of format version {FORMAT_VERSION}")
    return meta


def _selected_splits(meta, split):
    names = Job.from_dict(meta["job"]).split_names
    if split is None:
        return names
    if not isinstance(split, str) and not (isinstance(split, (list, tuple)) and all(isinstance(n, str) for n in split)):
        raise TypeError(f"split must be a split's name or a list of them, not {checks.excerpt(split)}")
    wanted = [split] if isinstance(split, str) else list(split)
    if not wanted:
        raise ValueError("split: give at least one split's name (None: every split)")
    if names == [None]:
        raise ValueError("split: this dataset has no splits")
    unknown = [name for name in wanted if name not in names]
    if unknown:
        raise ValueError(f"split: no split {unknown[0]!r} (the splits are {', '.join(names)})")
    return wanted


def sample_files(directory, split=None) -> list:
    """The sample files of a complete dataset (of one split, or a list of them), in shard order."""
    meta = read_info(directory)
    names = _selected_splits(meta, split)
    return [
        os.path.join(os.fspath(directory), sample_path(name, shard["index"]))
        for shard in meta["shards"]
        for name in names
    ]


def batches(directory, *, split=None, columns=None, batch_size: int = 1 << 16):
    """The samples of a complete dataset as ``pyarrow.RecordBatch`` es of at most
    ``batch_size`` rows (a pyarrow dataset scan: bounded memory whatever the size), in shard
    order; ``split`` selects splits, ``columns`` columns (names, see ``docs/datasets.md``)."""
    pyarrow = require_pyarrow()
    batch_size = checks.integer("batch_size", batch_size, 1, MAX_BATCH)
    if columns is not None and (not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns)):
        raise TypeError(f"columns must be None or a list of column names, not {checks.excerpt(columns)}")
    scan = pyarrow.dataset.dataset(sample_files(directory, split), format="parquet")
    if columns is not None:
        unknown = [name for name in columns if name not in scan.schema.names]
        if unknown:
            raise ValueError(f"columns: no column {unknown[0]!r} (see docs/datasets.md)")
    return scan.to_batches(columns=columns, batch_size=batch_size)


def load(path, *, split=None) -> Dataset:
    """A dataset in memory: a ``.npz`` file saved by :meth:`Dataset.save`, or a complete
    folder of Parquet shards (``beggar dataset --out DIR``; ``split`` picks splits), as the
    :class:`Dataset` that ``datasets.generate`` returns (in game order): ``MemoryError`` in
    one line when it would not fit (then use :func:`batches`)."""
    path = checks.path("path", path)
    if not path:
        raise ValueError("path: give a .npz file's or a dataset folder's name, not ''")
    if not os.path.exists(path):
        raise FileNotFoundError(f"path: no dataset file or folder {path!r}")
    if not os.path.isdir(path):
        if split is not None:
            raise ValueError("split: a .npz dataset has no splits")
        return read_npz(path)
    return _load_folder(path, split)


def _load_folder(directory, split):
    meta = read_info(directory)
    job = Job.from_dict(meta["job"])
    names = _selected_splits(meta, split)
    chosen = [job.split_names.index(name) for name in names]
    shard_rows = [sum(shard["samples"][s] for s in chosen) for shard in meta["shards"]]
    n_rows = sum(shard_rows)
    layout = job.config.layout
    observation = columns.ObservationColumns(layout)
    # The load's peak memory: the Dataset it returns (n_rows * (4 * width + 26) bytes: int32
    # observations, 26 bytes of labels a row), filled batch by batch, and its largest shard
    # as pyarrow holds it (rows * table_bytes_per_row), read whole, decoded through Parquet's
    # page buffers and turned into numpy batches; with several splits each split's file is
    # read, then concatenated and taken in game order (copies). Measured (peak resident
    # memory less that before the load; 2 players, public and counted, shards of 0.4 to 1.5
    # million rows): 1.6 to 2.7 times the shard for one split, 7.2 times for two; later 3.3
    # for one split (2026-12-02, tests/test_bad_input.py, the same versions: the allocator's
    # share varies). The multiples are those, rounded up; the last estimate asked for twice
    # the peak.
    shard = max(shard_rows, default=0) * columns.table_bytes_per_row(observation)
    copies = SHARD_COPIES if len(names) == 1 else SPLIT_SHARD_COPIES
    checks.memory(
        n_rows * (4 * layout.size + 26) + copies * shard,
        f"{n_rows:,} samples",
        "read them in batches: datasets.batches()",
    )
    out = _empty_arrays(n_rows, layout.size)
    start = 0
    for shard in meta["shards"]:
        for batch in _read_shard(directory, shard["index"], names).to_batches(max_chunksize=LOAD_ROWS):
            stop = start + batch.num_rows
            if stop > n_rows:
                raise ValueError(f"{directory}: shard {shard['index']} has more samples than dataset.json says")
            read = {name: batch.column(i).to_numpy(zero_copy_only=False) for i, name in enumerate(batch.schema.names)}
            observation.rows(read, out["observations"][start:stop])
            for name in Dataset.ARRAYS[1:]:
                out[name][start:stop] = read[name]
            start = stop
    if start != n_rows:
        raise ValueError(f"{directory}: the shards have {start:,} samples, dataset.json {n_rows:,}")
    return Dataset(
        **out,
        n_players=job.n_players,
        observation=job.observation,
        samples=str(job.samples),
        seed=job.seed,
        faces=job.faces,
    )


def _read_shard(directory, index, splits):
    """A shard's samples of ``splits``, in game order (a game lies in one split)."""
    pa = require_pyarrow()
    paths = [os.path.join(os.fspath(directory), sample_path(split, index)) for split in splits]
    tables = [pa.parquet.read_table(path) for path in paths]
    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    return table.take(np.argsort(table.column("game").to_numpy(), kind="stable"))


def _empty_arrays(n_rows, width):
    """The arrays of a :class:`Dataset` of ``n_rows`` samples, in the types ``generate`` gives."""
    return {
        "observations": np.empty((n_rows, width), np.int32),
        "game": np.empty(n_rows, np.int64),
        "outcome": np.empty(n_rows, np.int8),
        "winner": np.empty(n_rows, np.int8),
        "game_cards": np.empty(n_rows, np.int64),
        "game_tricks": np.empty(n_rows, np.int64),
    }

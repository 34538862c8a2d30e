"""Streaming samples to Parquet in bounded memory.

:class:`SampleStream` plays a job's games block by block and replays them into reused
column buffers; :class:`ShardFiles` writes a shard's files under hidden names and renames
them once all are complete; :class:`WriterThread` encodes one piece while the next is
generated (pyarrow releases the GIL while it encodes), with two buffers taking turns.
"""

import os
import queue
import threading
from dataclasses import dataclass

import numpy as np

from .. import checks, core, task
from ..game import CHUNKS_PER_THREAD
from . import columns
from .samples import GAMES_PER_WRITE, parse_samples, play_games, sample_counts, write_samples

BLOCK_GAMES = GAMES_PER_WRITE  # games played at once
ROW_BUFFER_BYTES = 1 << 27  # int32 rows replayed at once; each piece is one row group per split
N_BUFFERS = 2  # one being filled while the other is written
WAIT = 0.1  # seconds between checks for a writer error while waiting for it


@dataclass
class Block:
    """Games ``lo .. lo + len(counts) - 1`` played: their results, sample counts, splits
    (indexes into the job's splits) and keys (deal seeds)."""

    lo: int
    results: np.recarray
    counts: np.ndarray
    splits: np.ndarray
    keys: np.ndarray

    @property
    def offsets(self):
        offsets = np.zeros(len(self.counts) + 1, np.int64)
        np.cumsum(self.counts, out=offsets[1:])
        return offsets


class SampleStream:
    """Plays the games of a job (:class:`beggar_env.datasets.shards.Job`) and replays them into
    sample buffers, all allocated once: memory stays bounded whatever the number of games.
    Call inside ``jit.parallel`` (``n_threads``)."""

    def __init__(self, job, n_threads):
        self.job = job
        config = job.config
        self.max_cards = config.max_cards
        self.settings = config.settings()
        self.mode, self.k = parse_samples(job.samples)
        self.key = np.uint64(job.seed)
        self.columns = columns.ObservationColumns(config.layout)
        self.work = core.new_work(n_threads * CHUNKS_PER_THREAD, config.n_players, task.CAPACITY)
        self.face_rows = task.new_faces(len(self.work[0]), config.n_players, config.faces)
        self.results = core.new_results(BLOCK_GAMES, config.n_players)
        self.row_capacity = max(1, ROW_BUFFER_BYTES // (4 * config.layout.size))

    def new_buffers(self, capacity=None):
        capacity = capacity or self.row_capacity
        checks.memory(
            capacity * columns.bytes_per_row(self.columns), f"{capacity:,} samples at once", "use a lower max_cards"
        )
        return columns.SampleBuffers(self.columns, capacity)

    def play(self, lo, hi) -> Block:
        """Play games ``lo .. hi - 1`` (budgeted compiled calls: Ctrl-C works between them)."""
        results = self.results[: hi - lo]
        play_games(self.key, lo, results, self.max_cards, self.work)
        if max(results.cards.max(initial=0), results.tricks.max(initial=0)) > task.INT32_MAX:
            raise ValueError(
                f"a game among games {lo}..{hi - 1} is longer than {task.INT32_MAX:,} cards: set max_cards"
            )
        counts = sample_counts(results, self.mode, self.k)
        keys = core.stream_keys(self.key, hi - lo, lo)
        return Block(lo, results, counts, self.job.game_splits(lo, hi), keys)

    def pieces(self, block: Block, take_buffers):
        """Replay ``block``'s games into buffers from ``take_buffers()``, a bounded number
        of samples at a time; yield (buffers, bounds): the rows of split s are rows
        ``bounds[s] .. bounds[s + 1] - 1``, in game order."""
        offsets = block.offsets
        start = 0
        while start < len(block.counts):
            stop = max(start + 1, int(np.searchsorted(offsets, offsets[start] + self.row_capacity, "right")) - 1)
            n_rows = int(offsets[stop] - offsets[start])
            buffers = take_buffers()
            if n_rows > buffers.capacity:  # one game with more samples than a buffer holds
                buffers = self.new_buffers(n_rows)
            counts, results, first = block.counts[start:stop], block.results[start:stop], block.lo + start
            dest, bounds = _group_by_split(counts, block.splits[start:stop], len(self.job.split_names))
            # game i's samples go to rows dest[i] .. of the column-major buffer (the replay reads offsets[i] only)
            write_samples(
                self.key,
                first,
                results,
                dest,
                self.mode,
                self.k,
                self.settings,
                buffers.rows,
                self.work[0],
                self.face_rows,
            )
            buffers.narrow(n_rows)
            buffers.fill_labels(dest, counts, results, block.keys[start:stop], first, self.job.n_players)
            yield buffers, bounds
            start = stop

    def deals(self, block: Block, schema):
        """The rows of ``block``'s games in the deals table."""
        pa = columns.require_pyarrow()
        n = len(block.counts)
        decks = np.empty((n, core.DECK_SIZE), np.int64)
        core.shuffled_decks(self.key, block.lo, decks)
        text = columns.compact_deals(decks, self.job.n_players)
        offsets = np.arange(n + 1, dtype=np.int32) * text.shape[1]
        deal = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text))
        splits = [np.array(self.job.split_names, object)[block.splits]] if self.job.splits is not None else []
        values = [
            np.arange(block.lo, block.lo + n, dtype=np.int64),
            block.keys,
            deal,
            *splits,
            block.results.outcome,
            block.results.winner,
            block.results.cards.astype(np.int32),
            block.results.tricks.astype(np.int32),
            block.counts.astype(np.int32),
        ]
        return pa.Table.from_arrays([pa.array(v) for v in values], schema=schema)


def _group_by_split(counts, splits, n_splits):
    """Where each game's rows go when the rows of each split are put together, in game
    order: (each game's first row, the first row of each split and the end)."""
    order = np.argsort(splits, kind="stable")
    ends = np.cumsum(counts[order])
    dest = np.empty(len(counts), np.int64)
    dest[order] = ends - counts[order]
    per_split = np.zeros(n_splits, np.int64)
    np.add.at(per_split, splits, counts)
    bounds = np.zeros(n_splits + 1, np.int64)
    np.cumsum(per_split, out=bounds[1:])
    return dest, bounds


# ------------------------------------------------------------------------ files


def _open(path):
    """The file a shard's file is written to (tests replace it to simulate a full disk)."""
    return columns.require_pyarrow().OSFile(path, "wb")


class ParquetFile:
    """One Parquet file written under a hidden temporary name, renamed when closed."""

    def __init__(self, directory, relative, schema, options):
        self.relative = relative
        self.schema = schema
        self.path = os.path.join(directory, relative)
        self.temporary = os.path.join(os.path.dirname(self.path), f".{os.path.basename(self.path)}.partial")
        self.sink = _open(self.temporary)
        self.writer = columns.require_pyarrow().parquet.ParquetWriter(self.sink, schema, **options)

    def write(self, table):
        self.writer.write_table(table)

    def close(self) -> int:
        """Finish the file, give it its name, and return its size."""
        self.writer.close()
        self.sink.close()
        os.replace(self.temporary, self.path)
        return os.path.getsize(self.path)

    def abort(self):
        for close in (self.writer.close, self.sink.close):
            try:
                close()
            except Exception:  # noqa: BLE001 (a full disk fails the close too: the file goes anyway)
                pass
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass


class ShardFiles:
    """The files of one shard: the samples of each split, then the deals. Each appears
    under its name only once all are complete; :meth:`abort` removes them all."""

    def __init__(self, directory, samples, deals):
        """``samples``: (relative path, schema, options) for each split; ``deals`` likewise."""
        self.files = []
        try:
            for spec in [*samples, deals]:
                self.files.append(ParquetFile(directory, *spec))
        except BaseException:
            self.abort()
            raise
        self.samples = [0] * len(samples)
        self.deals = []

    def write_samples(self, buffers, bounds):
        """Write the rows of each split (``bounds``, see :meth:`SampleStream.pieces`)."""
        pa = columns.require_pyarrow()
        for s, file in enumerate(self.files[:-1]):
            start, stop = int(bounds[s]), int(bounds[s + 1])
            if stop > start:
                arrays = [pa.array(buffers.column(name, start, stop)) for name in file.schema.names]
                file.write(pa.Table.from_arrays(arrays, schema=file.schema))
                self.samples[s] += stop - start

    def add_deals(self, table):
        """Rows of the deals table, written when the shard closes (one row group)."""
        self.deals.append(table)

    def close(self):
        """Finish every file; return (samples of each split, bytes, relative paths)."""
        pa = columns.require_pyarrow()
        if self.deals:
            self.files[-1].write(pa.concat_tables(self.deals))
        size = sum(file.close() for file in self.files)
        return self.samples, size, [file.relative for file in self.files]

    def abort(self):
        for file in self.files:
            file.abort()


# ----------------------------------------------------------------------- thread


class WriterThread:
    """Runs writes on one thread, in order, while the caller fills the next buffers.

    :meth:`take` gives a free buffer (waiting for one); :meth:`write` queues a write that
    releases its buffer when done. After a failed write the others are skipped and the
    error is raised in the caller by the next :meth:`take` or :meth:`wait`."""

    def __init__(self, buffers):
        self._free = queue.Queue()
        for b in buffers:
            self._free.put(b)
        self._tasks = queue.Queue()
        self._error = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="beggar-parquet-writer", daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            item = self._tasks.get()
            if item is None:
                return
            write, buffers = item
            try:
                if self._error is None and not self._stopping:
                    write()
            except BaseException as error:  # noqa: BLE001 (raised again in the caller)
                self._error = error
            finally:
                if buffers is not None:
                    self._free.put(buffers)
                self._tasks.task_done()

    def _raise(self):
        if self._error is not None:
            raise self._error

    def take(self):
        """A free buffer, once the write that used it last is done."""
        while True:
            self._raise()
            try:
                return self._free.get(timeout=WAIT)
            except queue.Empty:
                pass

    def write(self, write, buffers=None):
        self._raise()
        self._tasks.put((write, buffers))

    def wait(self):
        """Wait until every queued write is done; raise the first error."""
        self._tasks.join()
        self._raise()

    def stop(self):
        """Skip the queued writes, wait for the one under way, and end the thread."""
        self._stopping = True
        self._tasks.put(None)
        self._thread.join()


def write_shard(files: ShardFiles, stream: SampleStream, writer: WriterThread, lo, hi, report=None):
    """Write games ``lo .. hi - 1`` into a shard's ``files`` and close them; return what
    :meth:`ShardFiles.close` returns. ``report(games)`` after each block.

    Parameters
    ----------
    files : the shard's files.
    stream : the stream that plays the games and fills the buffers.
    writer : the thread that writes full buffers.
    lo, hi : the games written, ``lo .. hi - 1``.
    report : ``report(games)``, the games done, or None.
    """
    deal_schema = files.files[-1].schema
    for first in range(lo, hi, BLOCK_GAMES):
        block = stream.play(first, min(first + BLOCK_GAMES, hi))
        for buffers, bounds in stream.pieces(block, writer.take):
            writer.write(lambda b=buffers, s=bounds: files.write_samples(b, s), buffers)
        files.add_deals(stream.deals(block, deal_schema))
        if report is not None:
            report(first + len(block.counts))
    writer.wait()
    return files.close()

"""The columns of a dataset on disk: every observation field of :class:`task.Layout`, one
column per slot, each in the smallest integer type that holds the field's range, and the
per-sample columns that label it.

A field of shape ``()`` is one column named after it (``cards``); ``(n,)`` gives
``name_0 .. name_{n-1}`` (``pile_0 .. pile_51``); ``(p, n)`` gives ``name_{p}_{j}``
(``hands_1_7``). Nothing here knows the fields by name: a new observation level needs no
code. Column-major buffers of these types are what the compiled kernels write and read;
pyarrow wraps them without copying.
"""

import numpy as np
from numba import prange

from .. import checks, core, task
from ..jit import jit

INTEGER_TYPES = (np.int8, np.int16, np.int32)  # the types of observation columns, narrowest first
NARROW = INTEGER_TYPES[:2]  # copied out of the int32 rows the replay writes
TILE = 64  # rows that the kernels turn into columns at a time

# Per-sample labels, in file order around the observation columns: (name, numpy type).
LEADING = (("game", np.int64), ("deal_seed", np.uint64))
TRAILING = (
    ("outcome", np.int8),  # 1 win, 2 cycle, 3 limit (beggar_env.OUTCOMES)
    ("winner", np.int8),  # a seat, -1 for none
    ("label", np.int8),  # the env's forecast label: the winner, or n_players for none
    ("game_cards", np.int32),
    ("game_tricks", np.int32),
)
WEIGHT = ("weight", np.float32)  # 1 / the samples of the game: each game weighs 1 in all
INSTALL = checks.install_hint("parquet") + ", or pip install pyarrow"


def require_pyarrow():
    """pyarrow (with its parquet and dataset modules), or ``ImportError`` in one line
    saying how to install it."""
    try:
        import pyarrow
        import pyarrow.dataset
        import pyarrow.parquet  # noqa: F401 (imported for pyarrow.parquet)
    except ImportError:
        raise ImportError(f"Parquet datasets need pyarrow: {INSTALL}") from None
    return pyarrow


def smallest_type(low, high):
    """The narrowest of :data:`INTEGER_TYPES` that holds every value in [low, high]."""
    for kind in INTEGER_TYPES:
        info = np.iinfo(kind)
        if info.min <= low and high <= info.max:
            return kind
    raise ValueError(f"no observation column type holds {low}..{high}")  # rows are int32: cannot happen


class ObservationColumns:
    """The columns of a :class:`task.Layout`'s flat rows, in row order: ``names[j]`` and
    ``types[j]`` are column j's, ``index[name]`` its j."""

    def __init__(self, layout):
        self.names, self.types = [], []
        for name, shape, low, high in layout.fields:
            names = task.slot_names(name, shape)
            self.names += names
            self.types += [smallest_type(low, high)] * len(names)
        self.index = {name: j for j, name in enumerate(self.names)}
        clashes = {name for name, _ in (*LEADING, *TRAILING, WEIGHT)} & set(self.names)
        if clashes or len(self.index) < len(self.names):
            raise ValueError(f"observation columns clash: {sorted(clashes) or self.names}")

    def sample_columns(self, weights):
        """(name, numpy type) of every column of a sample row, in file order."""
        trailing = TRAILING + ((WEIGHT,) if weights else ())
        return [*LEADING, *zip(self.names, self.types), *trailing]

    def rows(self, columns, out):
        """Write the flat int32 rows (the env's layout) of the observation columns (a dict of
        numpy arrays by name, as read from disk) into ``out``."""
        wide = np.empty((len(self.names), len(out)), np.int32)
        for j, name in enumerate(self.names):
            wide[j] = columns[name]
        _transpose(wide, out)


def sample_schema(observation_columns, weights):
    """The pyarrow schema of sample rows (every column non-null)."""
    pa = require_pyarrow()
    types = observation_columns.sample_columns(weights)
    return pa.schema([pa.field(name, pa.from_numpy_dtype(kind), nullable=False) for name, kind in types])


def deal_schema(with_split):
    """The pyarrow schema of the deals table: one row per game."""
    pa = require_pyarrow()
    fields = [
        ("game", pa.int64()),
        ("deal_seed", pa.uint64()),
        ("deal", pa.string()),  # compact notation
        *([("split", pa.string())] if with_split else []),
        ("outcome", pa.int8()),
        ("winner", pa.int8()),
        ("cards", pa.int32()),
        ("tricks", pa.int32()),
        ("samples", pa.int32()),  # the game's rows in the samples
    ]
    return pa.schema([pa.field(name, kind, nullable=False) for name, kind in fields])


class SampleBuffers:
    """Column-major buffers for up to ``capacity`` sample rows.

    The replay writes whole int32 rows into :attr:`rows` (a view of :attr:`wide`, so that
    each column lands contiguously); :meth:`narrow` copies the columns of narrower types
    into their own arrays; :meth:`fill_labels` writes the label columns."""

    def __init__(self, columns: ObservationColumns, capacity: int):
        self.columns = columns
        self.capacity = capacity
        self.wide = np.empty((len(columns.names), capacity), np.int32)
        self.rows = self.wide.T
        # The int8 and int16 columns, each kind stacked: column j is narrowed[j] = (stack, row).
        self.sources = [np.array([j for j, t in enumerate(columns.types) if t == kind], np.int64) for kind in NARROW]
        self.stacks = [np.empty((len(sources), capacity), kind) for sources, kind in zip(self.sources, NARROW)]
        self.narrowed = {
            j: (stack, row) for sources, stack in zip(self.sources, self.stacks) for row, j in enumerate(sources)
        }
        self.labels = {name: np.empty(capacity, kind) for name, kind in (*LEADING, *TRAILING, WEIGHT)}

    def narrow(self, n_rows):
        """Copy the first ``n_rows`` of each narrow column out of :attr:`wide` (their values
        lie in their types' range)."""
        _narrow(self.wide, self.sources[0], self.stacks[0], self.sources[1], self.stacks[1], n_rows)

    def fill_labels(self, dest, counts, results, keys, first, n_players):
        """The labels of games ``first ..``, game i's ``counts[i]`` rows from ``dest[i]`` on;
        ``keys[i]`` is its deal seed.

        Parameters
        ----------
        dest : the first row of each game in the buffers.
        counts : the rows of each game.
        results : the games' result records (core's), one per game.
        keys : each game's deal seed.
        first : the index of the first game in its stream.
        n_players : seats at the table.
        """
        labels = (self.labels[name] for name, _ in (*LEADING, *TRAILING, WEIGHT))
        _fill_labels(dest, counts, results, keys, first, n_players, *labels)

    def column(self, name, start, stop):
        """Column ``name``, rows start .. stop - 1 (a view)."""
        if name in self.labels:
            return self.labels[name][start:stop]
        j = self.columns.index[name]
        if j in self.narrowed:
            stack, row = self.narrowed[j]
            return stack[row, start:stop]
        return self.wide[j, start:stop]


def table_bytes_per_row(columns: ObservationColumns):
    """The bytes one row of a shard takes as pyarrow holds it: each column in its file's
    type (the weight column counted, whether the dataset has it or not)."""
    observation = sum(np.dtype(kind).itemsize for kind in columns.types)
    return observation + sum(np.dtype(kind).itemsize for _, kind in (*LEADING, *TRAILING, WEIGHT))


def bytes_per_row(columns: ObservationColumns):
    """The bytes one row takes in :class:`SampleBuffers`."""
    narrow = sum(np.dtype(kind).itemsize for kind in columns.types if kind != np.int32)
    return 4 * len(columns.names) + narrow + sum(np.dtype(kind).itemsize for _, kind in (*LEADING, *TRAILING, WEIGHT))


@jit(parallel=True)
def _narrow(wide, sources8, out8, sources16, out16, n_rows):
    for q in prange(sources8.shape[0]):
        for r in range(n_rows):
            out8[q, r] = wide[sources8[q], r]
    for q in prange(sources16.shape[0]):
        for r in range(n_rows):
            out16[q, r] = wide[sources16[q], r]


@jit(parallel=True)
def _fill_labels(
    dest,
    counts,
    results,
    keys,
    first,
    n_players,
    game,
    deal_seed,
    outcome,
    winner,
    label,
    game_cards,
    game_tricks,
    weight,
):
    for i in prange(dest.shape[0]):
        r = results[i]
        for d in range(dest[i], dest[i] + counts[i]):
            game[d] = first + i
            deal_seed[d] = keys[i]
            outcome[d] = r.outcome
            winner[d] = r.winner
            label[d] = core.outcome_label(r.winner, n_players)
            game_cards[d] = r.cards
            game_tricks[d] = r.tricks
            weight[d] = 1.0 / counts[i]


@jit(parallel=True)
def _transpose(wide, rows):
    """``rows[r, j] = wide[j, r]``, a tile of rows at a time (reads and writes stay in cache)."""
    n_tiles = -(-rows.shape[0] // TILE)
    for tile in prange(n_tiles):
        lo = tile * TILE
        hi = min(lo + TILE, rows.shape[0])
        for j in range(wide.shape[0]):
            for r in range(lo, hi):
                rows[r, j] = wide[j, r]


def compact_deals(decks, n_players):
    """The deals of shuffled decks (card ids, one row per game) in compact notation: one row
    of ASCII bytes per game, all of one length (seat 0's hand, '/', seat 1's, ...)."""
    symbols = np.frombuffer(core.CLASS_SYMBOLS.encode(), np.uint8)
    classes = core.CLASS_OF_CARD_ID[decks]
    slash = np.full((len(decks), 1), ord("/"), np.uint8)
    parts = [slash if k % 2 else symbols[classes[:, k // 2 :: n_players]] for k in range(2 * n_players - 1)]
    return np.ascontiguousarray(np.concatenate(parts, axis=1))

"""Labelled datasets for outcome predictors: samples of random games, each with the
eventual outcome of its game, in memory or streamed to Parquet shards of any size.

* :mod:`~beggar_env.datasets.samples`: where a game's samples are taken, and the compiled
  replay that writes them;
* :mod:`~beggar_env.datasets.memory`: :class:`Dataset`, :func:`generate`, ``.npz`` files;
* :mod:`~beggar_env.datasets.shards`: Parquet shards written as the games are played,
  in bounded memory (``beggar dataset --out DIR``); their columns are
  :mod:`~beggar_env.datasets.columns`', the writer :mod:`~beggar_env.datasets.streaming`'s;
* :mod:`~beggar_env.datasets.reading`: :func:`load` and :func:`batches`.

``docs/datasets.md`` describes the formats.
"""

from . import shards
from .memory import Dataset, generate
from .reading import batches, load, read_info

__all__ = ["Dataset", "batches", "generate", "load", "read_info", "shards"]

"""Labelled datasets for outcome predictors: observations of random games, each with the
eventual outcome of its game, generated at compiled speed on all cores.

A sample is what a forecaster sees at one decision point of ``Beggar-v0``: the table
before a card (``samples="card"``) or a trick (``"trick"``) is played, or ``k`` points
drawn at random (with replacement) among a game's card-level decision points
(``samples=k``). Game ``i`` is game ``i`` of ``simulate(n_games, seed=seed)``.
"""

import os
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
from numba import prange

from . import checks, core, files, task
from .game import CHUNKS_PER_THREAD
from .jit import jit, parallel

GAMES_PER_WRITE = 1 << 12  # games whose samples one compiled call writes (progress between calls)


class Sampling(IntEnum):
    CARD = 0  # before every card
    TRICK = 1  # before every trick
    RANDOM = 2  # k random card-level points per game


@dataclass
class Dataset:
    """Samples of random games (rows), with the outcome of each sample's game.

    ``observations`` is (n_samples, width) int32 in the env's flat layout; ``fields``
    gives them by name (views, as the env's ``Dict`` observation). Per sample: ``game``
    (its game's index), ``outcome`` (1 win, 2 cycle, 3 limit: ``beggar_env.OUTCOMES``),
    ``winner`` (seat, -1 none), ``label`` (the env's forecast label: the winner, or
    n_players for none), ``game_cards`` and ``game_tricks`` (its game's length, to the
    end or the first repeat), ``progress`` (cards played so far / game_cards) and
    ``weight`` (1 / the samples of its game, so that each game counts once).
    """

    observations: np.ndarray
    game: np.ndarray
    outcome: np.ndarray
    winner: np.ndarray
    game_cards: np.ndarray
    game_tricks: np.ndarray
    n_players: int
    observation: str = "public"
    samples: str = "card"
    seed: int = 0
    layout: task.Layout = field(init=False, repr=False)

    ARRAYS = ("observations", "game", "outcome", "winner", "game_cards", "game_tricks")

    def __post_init__(self):
        self.layout = task.Layout(self.n_players, self.observation)

    def __len__(self):
        return len(self.observations)

    @property
    def fields(self) -> dict:
        return self.layout.split(self.observations)

    @property
    def label(self) -> np.ndarray:
        return core.outcome_labels(self.winner, self.n_players)

    @property
    def progress(self) -> np.ndarray:
        return self.fields["cards"] / np.maximum(self.game_cards, 1)

    @property
    def weight(self) -> np.ndarray:
        """1 / the samples of each sample's game: weighted so, every game counts once."""
        return 1.0 / np.bincount(self.game)[self.game]

    def save(self, path) -> str:
        """Save as ``.npz`` (uncompressed; ``.npz`` is added to a name without it) and
        return the path written. The file is replaced whole or not at all."""
        arrays = {name: getattr(self, name) for name in self.ARRAYS}
        meta = dict(n_players=self.n_players, observation=self.observation, samples=self.samples, seed=self.seed)
        return files.save_npz(path, **arrays, **meta)


def load(path, *, split=None) -> Dataset:
    """A :class:`Dataset` saved with :meth:`Dataset.save`, or a folder of Parquet shards
    (``beggar dataset --out DIR``; ``split`` picks splits), read whole into memory: see
    :func:`beggar_env.shards.load`, and :func:`batches` for data that does not fit."""
    if os.path.isdir(path):
        from . import shards

        return shards.load(path, split=split)
    if split is not None:
        raise ValueError("split: a .npz dataset has no splits")
    with np.load(path, allow_pickle=False) as data:
        return Dataset(
            **{name: data[name] for name in Dataset.ARRAYS},
            n_players=int(data["n_players"]),
            observation=str(data["observation"]),
            samples=str(data["samples"]),
            seed=int(data["seed"]),
        )


def batches(path, *, split=None, columns=None, batch_size: int = 1 << 16):
    """The samples of a folder of Parquet shards as ``pyarrow.RecordBatch`` es, in bounded
    memory whatever its size (see :func:`beggar_env.shards.batches`)."""
    from . import shards

    return shards.batches(path, split=split, columns=columns, batch_size=batch_size)


def _check_samples(samples):
    if samples in ("card", "trick"):
        return Sampling[samples.upper()], 0
    if checks.is_integer(samples) and samples >= 1:
        return Sampling.RANDOM, int(samples)
    raise ValueError(
        f"samples must be 'card', 'trick' or an int k >= 1 (k random points per game), not {checks.excerpt(samples)}"
    )


def generate(
    n_games: int,
    *,
    n_players: int = 2,
    observation: str = "public",
    samples="card",
    seed=None,
    threads: int | None = None,
    max_cards: int | None = None,
    progress=None,
) -> Dataset:
    """Play ``n_games`` random games and return their samples as a :class:`Dataset`.

    Deterministic for an int ``seed`` whatever ``threads`` is (None: all cores).
    ``max_cards`` is the agreed limit, as in the env. ``progress``, if given, is called as
    ``progress(done, 2 * n_games)``: the games played, then the games whose samples are
    written. Raises ``MemoryError`` (before writing any sample) when the samples would
    not fit in memory.
    """
    n_games = checks.count("n_games", n_games)
    config = task.EnvConfig(n_players, observation=observation, max_cards=max_cards)
    mode, k = _check_samples(samples)
    seed = int(checks.seed(seed))
    key = np.uint64(seed)
    settings = config.settings()
    checks.memory(
        n_games * core.result_dtype(config.n_players).itemsize,
        f"playing {n_games:,} games first",
        "generate fewer games at a time",
    )
    with parallel(threads) as n_threads:
        work = core.new_work(n_threads * CHUNKS_PER_THREAD, config.n_players, task.CAPACITY)
        results = core.new_results(n_games, config.n_players)
        for _ in _play_all(key, results, config.max_cards, work, progress):
            pass
        counts = _sample_counts(results, mode, k)
        offsets = np.zeros(n_games + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        n_samples = int(offsets[-1])
        checks.memory(
            n_samples * (config.layout.size * 4 + 40),
            f"{n_samples:,} samples of {n_games:,} games",
            "generate fewer games, or fewer samples per game (samples='trick' or an int k)",
        )
        obs = np.empty((n_samples, config.layout.size), np.int32)
        for lo in range(0, n_games, GAMES_PER_WRITE):
            hi = min(lo + GAMES_PER_WRITE, n_games)
            _write_samples(key, lo, results[lo:hi], offsets[lo : hi + 1], mode, k, settings, obs, work[0])
            if progress is not None:
                progress(n_games + hi, 2 * n_games)
    game = np.repeat(np.arange(n_games, dtype=np.int64), counts)
    return Dataset(
        observations=obs,
        game=game,
        outcome=results.outcome[game],
        winner=results.winner[game],
        game_cards=results.cards[game],
        game_tricks=results.tricks[game],
        n_players=config.n_players,
        observation=observation,
        samples=str(samples),
        seed=seed,
    )


def _play_all(key, results, max_cards, work, progress):
    """Play the games of ``results`` (stream ``key``) in budgeted calls, yielding between them."""
    states, chunk_progress = work
    n_games = len(results)
    while core.batch_done(chunk_progress) < n_games:
        core.finish_shuffled(key, 0, max_cards, core.NO_LIMIT, True, results, states, chunk_progress, core.CALL_BUDGET)
        if progress is not None:
            progress(core.batch_done(chunk_progress), 2 * n_games)
        yield


def _sample_counts(results, mode, k):
    if mode == Sampling.CARD:
        return results.cards.astype(np.int64)
    if mode == Sampling.TRICK:  # a game stopped mid-trick (at the limit) has one more, partial, trick step
        mid_trick = results.hand_sizes.sum(axis=1) < core.DECK_SIZE
        return results.tricks.astype(np.int64) + mid_trick
    return np.where(results.cards > 0, k, 0).astype(np.int64)


@jit(parallel=True)
def _write_samples(seed, first, results, offsets, mode, k, settings, obs, work):
    """Replay games ``first ..`` of stream ``seed``, writing their samples from ``offsets``."""
    for c in prange(work.shape[0]):
        cfg = settings[0]  # inside the loop: numba's parallel lowering fails on a record captured from outside
        s = work[c, 0]
        deck = np.empty(core.DECK_SIZE, np.int64)
        lo, hi = core.chunk_bounds(c, work.shape[0], results.shape[0])
        for i in range(lo, hi):
            key = core.derive_key(seed, first + i)
            core.init_shuffled_state(s, key, cfg.max_cards, core.NO_LIMIT, deck)
            r = results[i]
            row = offsets[i]
            if mode == Sampling.RANDOM and r.cards > 0:
                points = np.empty(k, np.int64)
                for j in range(k):
                    points[j] = core.mix64(core.derive_key(key, j)) % np.uint64(r.cards)
                points.sort()
                for j in range(k):
                    while s.cards < points[j]:
                        core.step_card(s)
                    task.write_observation(s, obs[row], cfg)
                    row += 1
            elif mode != Sampling.RANDOM:
                while not core.episode_over(s, r):
                    task.write_observation(s, obs[row], cfg)
                    row += 1
                    if mode == Sampling.CARD:
                        core.step_card(s)
                    else:
                        core.step_trick(s)

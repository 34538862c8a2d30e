"""Labelled datasets for outcome predictors: observations of random games, each with the
eventual outcome of its game, generated at compiled speed on all cores.

A sample is what a forecaster sees at one decision point of ``Beggar-v0``: the table
before a card (``samples="card"``) or a trick (``"trick"``) is played, or ``k`` points
drawn at random (with replacement) among a game's card-level decision points
(``samples=k``). Game ``i`` is game ``i`` of ``simulate(n_games, seed=seed)``.
"""

from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange

from . import core, task
from .deals import as_seed, check_n_players
from .env import OBSERVATIONS, check_choice
from .game import CHUNKS_PER_THREAD, check_limit, numba_threads

CARD, TRICK, RANDOM = 0, 1, 2
BLOCK = 1 << 12  # games per compiled call: progress is reported between blocks


@dataclass
class Dataset:
    """Samples of random games (rows), with the outcome of each sample's game.

    ``observations`` is (n_samples, width) int32 in the env's flat layout; ``fields``
    gives them by name (views, as the env's ``Dict`` observation). Per sample: ``game``
    (its game's index), ``outcome`` (1 win, 2 cycle, 3 limit: ``beggar_env.OUTCOMES``),
    ``winner`` (seat, -1 none), ``label`` (the env's forecast label: the winner, or
    n_players for none), ``game_cards`` and ``game_tricks`` (its game's length, to the
    end or the first repeat) and ``progress`` (cards played so far / game_cards).
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
        self.layout = task.Layout(self.n_players, self.observation == "full")

    def __len__(self):
        return len(self.observations)

    @property
    def fields(self):
        return self.layout.split(self.observations)

    @property
    def label(self):
        return np.where(self.winner >= 0, self.winner, self.n_players).astype(np.int64)

    @property
    def progress(self):
        return self.fields["cards"] / np.maximum(self.game_cards, 1)

    def save(self, path):
        """Save as ``.npz`` (uncompressed); :func:`load` reads it back."""
        np.savez(path, **{name: getattr(self, name) for name in self.ARRAYS},
                 n_players=self.n_players, observation=self.observation, samples=self.samples, seed=self.seed)


def load(path):
    """A :class:`Dataset` saved with :meth:`Dataset.save`."""
    with np.load(path, allow_pickle=False) as data:
        return Dataset(**{name: data[name] for name in Dataset.ARRAYS}, n_players=int(data["n_players"]),
                       observation=str(data["observation"]), samples=str(data["samples"]), seed=int(data["seed"]))


def _check_samples(samples):
    if samples in ("card", "trick"):
        return (CARD if samples == "card" else TRICK), 0
    if isinstance(samples, (int, np.integer)) and not isinstance(samples, bool) and samples >= 1:
        return RANDOM, int(samples)
    raise ValueError(f"samples must be 'card', 'trick' or an int k >= 1 (k random points per game), not {samples!r}")


def generate(n_games, *, n_players=2, observation="public", samples="card", seed=None, threads=None,
             max_cards=None, progress=None):
    """Play ``n_games`` random games and return their samples as a :class:`Dataset`.

    Deterministic for an int ``seed`` whatever ``threads`` is (None: all cores).
    ``max_cards`` is the agreed limit, as in the env. ``progress``, if given, is called
    with the number of games written after each block.
    """
    if isinstance(n_games, bool) or not isinstance(n_games, (int, np.integer)) or n_games < 0:
        raise ValueError(f"n_games must be an int >= 0, not {n_games!r}")
    n_players = check_n_players(n_players)
    check_choice("observation", observation, OBSERVATIONS)
    mode, k = _check_samples(samples)
    limit = check_limit("max_cards", max_cards)
    seed = int(as_seed(seed))
    key = np.uint64(seed)
    with numba_threads(threads) as n_threads:
        work = core.new_work(n_threads * CHUNKS_PER_THREAD, n_players, task.CAPACITY)
        results = core.new_results(n_games, n_players)
        core.finish_shuffled(key, 0, limit, core.NO_LIMIT, True, results, work)
        counts = _sample_counts(results, mode, k)
        offsets = np.zeros(n_games + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        layout = task.Layout(n_players, observation == "full")
        obs = np.empty((int(offsets[-1]), layout.size), np.int32)
        for lo in range(0, n_games, BLOCK):
            hi = min(lo + BLOCK, n_games)
            _write_samples(key, lo, results[lo:hi], offsets[lo:hi + 1], mode, k, limit, observation == "full", obs,
                           work)
            if progress is not None:
                progress(hi)
    game = np.repeat(np.arange(n_games, dtype=np.int64), counts)
    return Dataset(
        observations=obs, game=game, outcome=results.outcome[game], winner=results.winner[game],
        game_cards=results.cards[game], game_tricks=results.tricks[game], n_players=n_players,
        observation=observation, samples=str(samples), seed=seed,
    )


def _sample_counts(results, mode, k):
    if mode == CARD:
        return results.cards.astype(np.int64)
    if mode == TRICK:  # a game stopped mid-trick (at the limit) has one more, partial, trick step
        mid_trick = results.hand_sizes.sum(axis=1) < core.DECK_SIZE
        return results.tricks.astype(np.int64) + mid_trick
    return np.where(results.cards > 0, k, 0).astype(np.int64)


@njit(cache=True)
def _over(s, r):
    """Whether the env would have ended: the game is over, or at its first repeat."""
    return s.status != core.RUNNING or (r.outcome == core.CYCLE and s.tricks == r.tricks)


@njit(cache=True, parallel=True)
def _write_samples(seed, first, results, offsets, mode, k, max_cards, full, obs, work):
    """Replay games ``first ..`` of stream ``seed``, writing their samples from ``offsets``."""
    for c in prange(work.shape[0]):
        s = work[c, 0]
        deck = np.empty(core.DECK_SIZE, np.int64)
        lo, hi = core.chunk_bounds(c, work.shape[0], results.shape[0])
        for i in range(lo, hi):
            key = core.stream_key(seed, np.uint64(first + i))
            core.init_shuffled_state(s, key, max_cards, core.NO_LIMIT, deck)
            r = results[i]
            row = offsets[i]
            if mode == RANDOM and r.cards > 0:
                points = np.empty(k, np.int64)
                for j in range(k):
                    points[j] = core.mix64(core.stream_key(key, np.uint64(j))) % np.uint64(r.cards)
                points.sort()
                for j in range(k):
                    while s.cards < points[j]:
                        core.step_card(s)
                    task.write_observation(s, obs[row], full)
                    row += 1
            elif mode != RANDOM:
                while not _over(s, r):
                    task.write_observation(s, obs[row], full)
                    row += 1
                    if mode == CARD:
                        core.step_card(s)
                    else:
                        core.step_trick(s)

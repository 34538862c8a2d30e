"""Where a game's samples are taken, and the compiled replay that writes them: what the
in-memory datasets and the Parquet shards share.

A sample is what a forecaster sees at one decision point of ``Beggar-v0``: the table
before a card (``samples="card"``) or a trick (``"trick"``) is played, or ``k`` points
drawn at random (with replacement) among a game's card-level decision points
(``samples=k``). Games are played first (their results give each game's sample count),
then replayed, writing their samples.
"""

from enum import IntEnum

import numpy as np
from numba import prange

from .. import checks, core, task
from ..jit import jit
from ..task import EMPTY

GAMES_PER_WRITE = 1 << 12  # games played or replayed at once (progress, Ctrl-C and bounded buffers between)
MAX_PER_GAME = 2**31 - 1  # samples of one game: the deals table counts them in int32


class Sampling(IntEnum):
    CARD = 0  # before every card
    TRICK = 1  # before every trick
    RANDOM = 2  # k random card-level points per game


def parse_samples(samples):
    """``samples`` ("card", "trick" or an int k from 1 to :data:`MAX_PER_GAME`) as
    (:class:`Sampling`, k)."""
    if isinstance(samples, str) and samples in ("card", "trick"):
        return Sampling[samples.upper()], 0
    if checks.is_integer(samples) and 1 <= samples <= MAX_PER_GAME:
        return Sampling.RANDOM, int(samples)
    raise ValueError(
        f"samples must be 'card', 'trick' or an int k from 1 to {MAX_PER_GAME:,} (k random points per game), "
        f"not {checks.excerpt(samples)}"
    )


def most_samples(n_games, mode, k):
    """An upper bound of the samples of ``n_games`` games, before they are played (None
    when it depends on their lengths), checked to be countable."""
    if mode != Sampling.RANDOM:
        return None
    total = n_games * k
    if total > checks.MAX_COUNT:
        raise ValueError(f"{n_games:,} games of {k:,} samples each are more samples than can be counted (2**63-1)")
    return total


def play_games(seed, first, results, max_cards, work, progress=None):
    """Play games ``first .. first + len(results) - 1`` of the random stream ``seed`` into
    ``results``, as the env plays them (cycle detection, the agreed limit ``max_cards``);
    ``progress(games_done)`` between compiled calls.

    Parameters
    ----------
    seed : the random stream's key.
    first : the index of the first game in the stream.
    results : core result records, one per game, written in place.
    max_cards : the agreed limit of a game's cards (``core.NO_LIMIT``: none).
    work : core's scratch states (``core.new_work``).
    progress : ``progress(games_done)``, or None.
    """
    core.play_batch(core.shuffled_deals(seed, first), max_cards, core.NO_LIMIT, True, results, work, progress)


def sample_counts(results, mode, k):
    """The samples of each game of ``results`` under sampling ``mode`` (and ``k``)."""
    if mode == Sampling.CARD:
        return results.cards.astype(np.int64)
    if mode == Sampling.TRICK:  # a game stopped mid-trick (at the limit) has one more, partial, trick step
        mid_trick = results.hand_sizes.sum(axis=1) < core.DECK_SIZE
        return results.tricks.astype(np.int64) + mid_trick
    return np.where(results.cards > 0, k, 0).astype(np.int64)


def write_samples(seed, first, results, offsets, mode, k, settings, obs, work, face_rows):
    """Replay games ``first ..`` of stream ``seed`` (one per record of ``results``), writing
    game i's samples into rows ``offsets[i] ..`` of ``obs`` (flat observation rows).

    Parameters
    ----------
    seed : the random stream's key.
    first : the index of the first game in the stream.
    results : the games' result records, as :func:`play_games` wrote them.
    offsets : game i's first row in ``obs`` (``len(results) + 1`` of them).
    mode, k : the sampling (:class:`Sampling`) and its number of samples a game.
    settings : the env's settings record (``task.EnvConfig.settings``).
    obs : the flat observation rows, written in place.
    work : core's scratch states, one a thread.
    face_rows : the faces of each thread's game (``task.new_faces``), with the faces view.
    """
    if settings[0]["faces"]:  # the replay with faces is its own kernel: it costs the other nothing
        _write_samples_faces(seed, first, results, offsets, mode, k, settings, obs, work, face_rows)
    else:
        _write_samples(seed, first, results, offsets, mode, k, settings, obs, work)


@jit(parallel=True)
def _write_samples(seed, first, results, offsets, mode, k, settings, obs, work):
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


@jit(parallel=True)
def _write_samples_faces(seed, first, results, offsets, mode, k, settings, obs, work, face_rows):
    """:func:`_write_samples` with the faces view: each game is dealt its faces and stepped
    card by card with them (``task.step_faces``)."""
    deals = (task.NO_CARDS, task.NO_HAND_SIZES, np.uint64(seed), np.int64(first))
    for c in prange(work.shape[0]):
        cfg = settings[0]
        s, f = work[c, 0], face_rows[c]
        deck = np.empty(core.DECK_SIZE, np.int64)
        lo, hi = core.chunk_bounds(c, work.shape[0], results.shape[0])
        for i in range(lo, hi):
            core.deal(s, deals, i, cfg.max_cards, core.NO_LIMIT, deck)
            task.deal_faces(s, f, deals, task.NO_CARDS, i, deck)
            played = EMPTY
            r = results[i]
            row = offsets[i]
            if mode == Sampling.RANDOM and r.cards > 0:
                key = core.derive_key(seed, first + i)
                points = np.empty(k, np.int64)
                for j in range(k):
                    points[j] = core.mix64(core.derive_key(key, j)) % np.uint64(r.cards)
                points.sort()
                for j in range(k):
                    while s.cards < points[j]:
                        played = task.step_faces(s, f, False)
                    task.write_view(s, obs[row], cfg, f, played)
                    row += 1
            elif mode != Sampling.RANDOM:
                while not core.episode_over(s, r):
                    task.write_view(s, obs[row], cfg, f, played)
                    row += 1
                    played = task.step_faces(s, f, mode == Sampling.TRICK)

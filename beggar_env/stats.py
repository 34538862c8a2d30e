"""Summaries of many games, built block by block in constant memory (see :class:`Summary`)."""

import numpy as np

from .core import Outcome
from .game import tally_of

PERCENTILES = (5, 25, 50, 75, 95, 99)


def wilson_interval(successes, n, z=1.959964):
    """The 95% Wilson score interval of a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (float(centre - half), float(centre + half))


class Histogram:
    """Counts of non-negative integers, with exact means and percentiles (numpy's default
    'linear' method, as ``numpy.percentile`` gives them on the values themselves)."""

    def __init__(self):
        self.counts = np.zeros(0, np.int64)

    def add(self, values):
        self.add_counts(np.bincount(values))

    def add_counts(self, counts):
        """Add a histogram's counts (``counts[k]``: how many times ``k``)."""
        total = np.zeros(max(len(counts), len(self.counts)), np.int64)
        total[: len(counts)] += counts
        total[: len(self.counts)] += self.counts
        self.counts = total

    @property
    def n(self):
        return int(self.counts.sum())

    def mean(self):
        return float((np.arange(len(self.counts)) * self.counts).sum() / self.n)

    def max(self):
        return int(np.flatnonzero(self.counts)[-1])

    def value_at(self, ranks):
        """The values of the given ranks (0-based) in sorted order."""
        return np.searchsorted(np.cumsum(self.counts), np.asarray(ranks), side="right")

    def percentile(self, q):
        position = (self.n - 1) * q / 100
        below = int(np.floor(position))
        low, high = self.value_at([below, min(below + 1, self.n - 1)])
        return float(low + (position - below) * (high - low))


class Summary:
    """Summary statistics of :func:`beggar_env.simulate` results, added block by block."""

    def __init__(self, n_players):
        self.n_players = n_players
        self.games = 0
        self.lengths = {"cards": Histogram(), "tricks": Histogram()}
        self.wins = np.zeros(n_players, np.int64)
        self.outcomes = np.zeros(len(Outcome), np.int64)
        self.draws = 0

    def add(self, results):
        """Add games' result records (``simulate``'s)."""
        return self.add_tally(tally_of(results))

    def add_tally(self, tally):
        """Add games counted by :func:`beggar_env.game.tally` (on a GPU: on the device)."""
        self.games += int(tally["outcomes"].sum())
        for name, histogram in self.lengths.items():
            histogram.add_counts(tally[name])
        self.wins += tally["wins"]
        self.outcomes += tally["outcomes"]
        self.draws += tally["draws"]
        return self

    def as_dict(self):
        """Games; mean, max and percentiles of cards and tricks; each seat's wins with a
        95% interval; cycles, limits and draws."""
        summary = {"games": self.games}
        for name, histogram in self.lengths.items():
            summary[name] = {
                "mean": histogram.mean(),
                "max": histogram.max(),
                **{f"p{q}": histogram.percentile(q) for q in PERCENTILES},
            }
        summary["seats"] = []
        for seat in range(self.n_players):
            wins = int(self.wins[seat])
            low, high = wilson_interval(wins, self.games)
            summary["seats"].append({"seat": seat, "wins": wins, "rate": wins / self.games, "ci95": [low, high]})
        summary["cycles"] = int(self.outcomes[Outcome.CYCLE])
        summary["limits"] = int(self.outcomes[Outcome.LIMIT])
        summary["draws"] = self.draws
        return summary

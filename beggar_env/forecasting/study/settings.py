"""The study's settings: its two protocols (:data:`FULL`, the published one, and
:data:`QUICK`, a smoke run), the seeds of its training sets, the names of the rows it makes,
and the extras it needs.

Seeds: test deals from ``report.TEST_SEED``, training data from ``TRAIN_SEED + n``,
forecasters and game statistics from the study's ``seed``: a run is reproduced by its command.
"""

import importlib
from dataclasses import dataclass

from ... import checks
from .. import forecasters as fc
from .. import protocol as ev

TRAIN_SEED = 1000  # + n_players: training sets, disjoint from the test seed


@dataclass(frozen=True)
class Protocol:
    test_games: int  # every card step of these games is a test position
    train_games: int
    train_samples: int  # random positions per training game
    prior_games: int  # simulated games behind the seat prior
    stats_games: int  # simulated games behind the game statistics
    bayes_k: int
    bootstrap: int
    trees: int  # boosting iterations of the gradient-boosted trees (at most: early stopping)
    epochs: int  # of the MLP (at most: early stopping)
    bayes_sweep: tuple = ()  # more Ks of the Bayes forecaster, for the first player count


FULL = Protocol(
    ev.PUBLISHED_GAMES, 20_000, 8, 10**6, 10**6, 256, 1000, trees=200, epochs=40, bayes_sweep=(16, 64, 1024)
)
QUICK = Protocol(150, 1500, 8, 10**5, 10**5, 32, 200, trees=50, epochs=20, bayes_sweep=(8,))

LEARNED = (  # the names forecasters.baselines gives its learned rows (a test holds the two together)
    "logistic regression (public)",
    "gradient-boosted trees (public)",
    "gradient-boosted trees (counted)",
    "MLP (counted)",
)


def bayes_name(protocol):
    """The name of the study's Bayes row, the reference of every gap closed."""
    return fc.BayesMC(k=protocol.bayes_k).name


def study_names(protocol):
    """The names of the rows the study itself makes (those of :func:`forecasters.baselines`,
    the same for every player count), weakest first, read from the forecasters' classes
    without making one of the ten: a report may not take one of them (it would replace the
    study's own row, and the gaps closed are measured between two of them)."""
    return [
        fc.Uniform.name,
        fc.SeatPrior.name,
        fc.MostCards.name,
        fc.CalibratedMostCards.name,
        *LEARNED,
        bayes_name(protocol),
        fc.Oracle.name,
    ]


REFERENCE = ("rules engine", "hand-built machine")  # a row given either is a reference, not a learned model


def learned(row):
    """Whether a row (a report) is a learned model's: its ``given`` has neither the rules
    engine nor a hand-built machine (a teacher's outputs it may have learned from). The
    headlines' "best learned" row is the best of these; the others are the references."""
    return not set(row["given"]) & set(REFERENCE)


INSTALL = checks.install_hint("baselines") + " (scikit-learn and matplotlib)"


def require_extras(sequences=False):
    """scikit-learn and matplotlib, which the study trains and draws with (and torch for
    the sequence rows); else ``ImportError`` in one line saying how to install them
    (checked before any work)."""
    missing = []
    needed = (("sklearn", "scikit-learn"), ("matplotlib", "matplotlib")) + ((("torch", "torch"),) if sequences else ())
    for module, name in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(name)
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        install = INSTALL + (f"; and for torch, {checks.install_hint('rl')}" if "torch" in missing else "")
        raise ImportError(f"beggar baselines needs {' and '.join(missing)}, which {verb} not installed: {install}")

"""The study's run: for each player count, train every baseline on its training set,
evaluate each with the one protocol (:mod:`beggar_env.forecasting.protocol`) on the test
set, measure the gaps they close (:mod:`.gaps`), the paired differences of neighbouring
rows and the Bayes forecaster's K sweep, and the game statistics; :func:`run` gathers
the player counts, with the versions and the machine, as ``results.json`` holds them.
"""

import os
import platform
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ... import __version__, datasets
from ...game import simulate_blocks
from ...stats import Summary
from .. import forecasters as fc
from .. import protocol as ev
from ..metrics import GAP_SLICES
from ..report import TEST_SEED, check_given
from .gaps import add_gaps
from .results import add_reports
from .settings import FULL, TRAIN_SEED, bayes_name, require_extras


def _ignore(done, total):
    pass


def game_statistics(n_players, games, seed, progress=_ignore):
    """Length distribution (summary and histogram), each seat's win rate with its 95%
    interval and the share of never-ending games, from ``games`` random games."""
    summary = Summary(n_players)
    for _, block in simulate_blocks(games, n_players=n_players, seed=seed, progress=progress):
        summary.add(block)
    out = summary.as_dict()
    out["cycle_share"] = out["cycles"] / out["games"]
    out["histogram_cards"] = summary.lengths["cards"].counts.tolist()
    return out


def run_players(
    n_players, protocol, seed=0, threads=None, stage=lambda name, unit: _ignore, first_players=2, sequences=False
):
    """Train and evaluate every baseline for one player count (and, with ``sequences``, the
    GRU on the public stream): the player count's block of ``results.json``.

    Parameters
    ----------
    n_players : the player count.
    protocol : the study's :class:`~.settings.Protocol` (its sizes, K, resamples, budgets).
    seed : the seed of the forecasters and the game statistics.
    threads : the threads of the compiled work (None: every core).
    stage : ``stage(name, unit)``, a long stage's progress callback (forecasts: positions; statistics: games).
    first_players : the player count that also runs the Bayes forecaster's K sweep.
    sequences : also train and evaluate the GRU on the public stream (needs torch).
    """
    started = time.perf_counter()
    test = ev.TestSet.generate(n_players, protocol.test_games, threads=threads)
    train = datasets.generate(
        protocol.train_games,
        n_players=n_players,
        observation="counted",
        samples=protocol.train_samples,
        seed=TRAIN_SEED + n_players,
        threads=threads,
    )
    reports = []
    chosen = fc.baselines(
        n_players,
        seed=seed,
        prior_games=protocol.prior_games,
        bayes_k=protocol.bayes_k,
        trees=protocol.trees,
        epochs=protocol.epochs,
    )
    if sequences:
        chosen.append(sequence_row(n_players, protocol, seed))
    for forecaster in chosen:
        reports.append(_evaluate(forecaster, train, test, protocol, stage))
    add_gaps(reports, reports, protocol.bootstrap)
    sweep = []
    if n_players == first_players:
        for k in protocol.bayes_sweep:
            sweep.append(_evaluate(fc.BayesMC(n_players, k=k, seed=seed), train, test, protocol, stage))
    bayes = next(r for r in reports if r["forecaster"] == bayes_name(protocol))
    agreed = bayes.scores["confidence"] >= _determined_probability(protocol.bayes_k, n_players) - 1e-12
    block = {
        "n_players": n_players,
        "reports": reports,
        "open_unanimous": float(agreed[test.slices["open"]].mean()),  # open, yet every rollout agreed
        "paired": [_paired(worse, better) for worse, better in zip(reports, reports[1:])],
        "bayes_sweep": sweep_rows([*sweep, bayes], test),
        "positions": len(test.labels),
        "open_positions": int(test.slices["open"].sum()),
        "train_samples": len(train),
    }
    for result in reports:  # what compare needed, done: the next player count's test set takes their memory
        result.scores = result.test = None
    block["game_statistics"] = game_statistics(n_players, protocol.stats_games, seed, stage("game statistics", "game"))
    block["seconds"] = time.perf_counter() - started
    return block


def sequence_row(n_players, protocol, seed):
    """The GRU on the public stream, with the published settings (a smoke run's under the
    QUICK protocol), trained on its own fresh games seeded ``seed + 1`` (the published row's
    seed 1 for the study's default seed 0)."""
    from ..sequence_models import SequenceForecaster, budget

    settings = budget("gru", quick=protocol.test_games < ev.PUBLISHED_GAMES)
    return SequenceForecaster(n_players, "public", "gru", seed=seed + 1, **settings)


def _evaluate(forecaster, train, test, protocol, stage):
    began = time.perf_counter()
    with warnings.catch_warnings():  # the protocol caps the iterations (trees, epochs) on purpose
        warnings.filterwarnings("ignore", category=UserWarning, message=".*(converge|Maximum iterations).*")
        if getattr(forecaster, "recurrent", False):  # minutes of training on its own games: show progress
            forecaster.fit(train, progress=stage(f"training {forecaster.name}", "game"))
        else:
            forecaster.fit(train)
    fit_seconds = time.perf_counter() - began
    probs, seconds = ev.predict(forecaster, test, stage(forecaster.name, "pos"))
    given = check_given(getattr(forecaster, "given", None), f"{forecaster.name}'s given")
    result = ev.report(forecaster.name, probs, test, seconds, protocol.bootstrap, forecaster.observation, given=given)
    result["fit_s"] = fit_seconds
    return result


def _determined_probability(k, n_players):
    """The Bayes forecaster's probability of the outcome every one of its K rollouts gave."""
    alpha = fc.BayesMC.ALPHA
    return (k + alpha) / (k + (n_players + 1) * alpha)


def _paired(worse, better):
    """The next row against this one, on the same positions (differences: next - this)."""
    difference = ev.compare(better, worse, slices=GAP_SLICES)
    return {
        "this": worse["forecaster"],
        "next": better["forecaster"],
        **{name: difference[name] for name in GAP_SLICES},
    }


def sweep_rows(reports, test):
    """The Bayes forecaster's figures for each K, and the log-loss floor of its smoothing at
    the positions the table determines (played once, counted K times: -ln((K+a)/(K+n a)))."""
    determined = ~test.slices["open"]
    rows = []
    for result in sorted(reports, key=lambda r: int(r["forecaster"].split("K=")[1].rstrip(")"))):
        k = int(result["forecaster"].split("K=")[1].rstrip(")"))
        rows.append(
            {
                "k": k,
                "accuracy": result["slices"]["all"]["accuracy"]["value"],
                "log_loss": result["slices"]["all"]["log_loss"]["value"],
                "log_loss_open": result["slices"]["open"]["log_loss"]["value"],
                "log_loss_determined": float(result.scores["log_loss"][determined].mean()),
                "floor": float(-np.log(_determined_probability(k, test.n_players))),
                "forecasts_per_s": result["forecasts_per_s"],
            }
        )
    return rows


def run(
    players=(2, 3, 4), protocol=FULL, seed=0, threads=None, reports=(), stage=lambda name, unit: _ignore,
    sequences=False,
):  # fmt: skip
    """The whole study, as ``results.json`` holds it: every player count's block, with the
    protocol, the seeds, the versions and the machine.

    Parameters
    ----------
    players : the player counts, in order (the first runs the Bayes K sweep).
    protocol : the study's :class:`~.settings.Protocol` (:data:`~.settings.FULL` is the published one).
    seed : the seed of the forecasters and the game statistics.
    threads : the threads of the compiled work (None: every core).
    reports : more rows: report files (``Report.save``, from ``evaluate`` or ``evaluate_policy``) of the same test set.
    stage : ``stage(name, unit)``, the progress callback of a long stage (see :func:`run_players`).
    sequences : also the GRU on the public stream, each player count (torch; 5 to 10 min each on 2 cores).
    """
    require_extras(sequences)
    results = {
        "protocol": asdict(protocol),
        "seeds": {"test": TEST_SEED, "train": {n: TRAIN_SEED + n for n in players}, "forecasters": seed},
        "versions": versions(),
        "machine": machine(),
        "players": {},
    }
    for n in players:
        results["players"][str(n)] = run_players(
            n, protocol, seed, threads, stage, first_players=players[0], sequences=sequences
        )
    add_reports(results, reports)
    return results


def versions():
    import numba
    import sklearn

    return {
        "beggar-env": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "scikit-learn": sklearn.__version__,
    }


def machine():
    """The CPU model and the number of CPUs this process may use."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": model, "cpus": cpus}

"""``beggar baselines``: train the learned baselines, evaluate every forecaster with the one
protocol (:mod:`beggar_env.forecasting.protocol`) for 2, 3 and 4 players, with the game statistics of
each player count, and write the results: JSON, markdown tables and pictures.

Seeds: test deals from ``protocol.TEST_SEED``, training data from ``TRAIN_SEED + n``,
forecasters and game statistics from ``seed``: a run is reproduced by its command.
"""

import copy
import importlib
import io
import json
import os
import platform
import textwrap
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import __version__, checks, datasets, files
from ..game import simulate_blocks
from ..stats import Summary
from . import forecasters as fc
from . import protocol as ev

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
TABLE_SLICES = ("all", "cards 0-25", "cards 104-207", "open", "determined")


_NUMBER = {"type": "number"}  # NaN too: the gap closed between two rows of equal figures
_COUNT = {"type": "integer", "minimum": 0}
_POSITIVE = {"type": "integer", "minimum": 1}


def _object(**properties):
    """A JSON Schema object with these properties, all required."""
    return {"type": "object", "required": list(properties), "properties": properties}


def _interval(value=_NUMBER):
    return {"type": "array", "items": value, "minItems": 2, "maxItems": 2}


_ROW = {  # a row of the tables: a report (protocol.REPORT_SCHEMA) with its reference: the gap it closes
    "allOf": [ev.REPORT_SCHEMA, _object(reference=ev.REFERENCE_SCHEMA)]
}
_DIFFERENCE = _object(difference=_NUMBER, ci95=_interval())
_BLOCK = _object(  # one player count's results
    reports={"type": "array", "items": _ROW, "minItems": 1},
    positions={"type": "integer", "minimum": 1},
    open_positions=_COUNT,
    train_samples=_COUNT,
    open_unanimous=_NUMBER,
    game_statistics=_object(
        games={"type": "integer", "minimum": 1},
        cards=_object(**{name: _NUMBER for name in ("mean", "p5", "p50", "p95", "p99", "max")}),
        tricks=_object(mean=_NUMBER),
        cycles=_COUNT,
        cycle_share=_NUMBER,
        seats={"type": "array", "items": _object(seat=_COUNT, rate=_NUMBER, ci95=_interval())},
        histogram_cards={"type": "array", "items": _COUNT, "minItems": 1},
    ),
)
_BLOCK["properties"]["paired"] = {  # optional, as the tables read them
    "type": "array",
    "items": _object(
        this={"type": "string"},
        next={"type": "string"},
        **{
            name: {"anyOf": [_object(accuracy=_DIFFERENCE, log_loss=_DIFFERENCE), {"const": {}}]}  # {}: no position
            for name in ev.GAP_SLICES
        },
    ),
}
_BLOCK["properties"]["bayes_sweep"] = {
    "type": "array",
    "items": _object(
        k=_COUNT,
        **{name: _NUMBER for name in ("accuracy", "log_loss", "log_loss_open", "log_loss_determined", "floor")},
        forecasts_per_s=_NUMBER,
    ),
}
RESULTS_SCHEMA = {  # what the tables and pictures read of results.json: checked before a redraw, and before a write
    "type": "object",
    "required": ["protocol", "players"],
    "properties": {
        "command": {"type": "string"},
        "added": {"type": "array", "items": {"type": "string"}},
        "protocol": {
            **_object(**{name: _POSITIVE for name in Protocol.__dataclass_fields__ if name != "bayes_sweep"}),
            "properties": {
                **{name: _POSITIVE for name in Protocol.__dataclass_fields__},
                "bayes_sweep": {"type": "array", "items": _POSITIVE},
            },
            "additionalProperties": False,
        },
        "players": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"enum": ["2", "3", "4"]},
            "additionalProperties": _BLOCK,
        },
    },
}


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
    GRU on the public stream). ``stage(name, unit)`` returns the progress callback of a long
    stage: each forecaster's forecasts (counting positions), the game statistics (counting
    games)."""
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
    _add_gaps(reports, reports, protocol.bootstrap)
    sweep = []
    if n_players == first_players:
        for k in protocol.bayes_sweep:
            sweep.append(_evaluate(fc.BayesMC(n_players, k=k, seed=seed), train, test, protocol, stage))
    bayes = next(r for r in reports if r["forecaster"] == _bayes(protocol))
    agreed = bayes.scores["confidence"] >= _determined_probability(protocol.bayes_k, n_players) - 1e-12
    block = {
        "n_players": n_players,
        "reports": reports,
        "open_unanimous": float(agreed[test.slices["open"]].mean()),  # open, yet every rollout agreed
        "paired": [_paired(worse, better) for worse, better in zip(reports, reports[1:])],
        "bayes_sweep": _sweep_rows([*sweep, bayes], test),
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
    from .sequence_models import SequenceForecaster, budget

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
    result = ev.report(forecaster.name, probs, test, seconds, protocol.bootstrap, forecaster.observation)
    result["fit_s"] = fit_seconds
    return result


def _bayes(protocol):
    return fc.BayesMC(k=protocol.bayes_k).name


def _determined_probability(k, n_players):
    """The Bayes forecaster's probability of the outcome every one of its K rollouts gave."""
    alpha = fc.BayesMC.ALPHA
    return (k + alpha) / (k + (n_players + 1) * alpha)


def _paired(worse, better):
    """The next row against this one, on the same positions (differences: next - this)."""
    difference = ev.compare(better, worse, slices=ev.GAP_SLICES)
    return {
        "this": worse["forecaster"],
        "next": better["forecaster"],
        **{name: difference[name] for name in ev.GAP_SLICES},
    }


def _sweep_rows(reports, test):
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


def _add_gaps(reports, among, bootstrap=1000):
    """Each report's reference against the study's seat prior and Bayes rows: the gap it
    closes and its paired difference to Bayes, on all positions and each track
    (``protocol.reference_figures``, with intervals, for a report with its per-position
    scores). A report read from a file has none: the figures are computed from its slices
    (``protocol.reference_values``), and its own intervals are kept where its reference is
    the same (the same rows, the same figures: an ``evaluate`` of the published test set
    against the published study); else it has none."""
    prior = next(r for r in among if r["forecaster"] == "seat prior")
    bayes = next(r for r in among if r["forecaster"].startswith("Bayes"))
    for result in reports:
        if getattr(result, "scores", None) is not None and prior.scores is not None and bayes.scores is not None:
            result["reference"] = ev.reference_figures(result, prior, bayes, bootstrap=bootstrap)
            continue
        figures = ev.reference_values(result, prior, bayes)
        if not _same_reference(result.get("reference"), figures):
            result["reference"] = figures


def _same_reference(theirs, ours, tolerance=1e-9):
    """Whether a report's own reference is the study's: the same rows and figures."""
    if not theirs or (theirs["prior"], theirs["bayes"]) != (ours["prior"], ours["bayes"]):
        return False
    for part, key in (("gap_closed", "value"), ("versus_bayes", "difference")):
        for name, metrics in ours[part].items():
            if set(theirs[part].get(name, {})) != set(metrics):
                return False
            for metric, figure in metrics.items():
                a, b = theirs[part][name][metric][key], figure[key]
                if (a is None) != (b is None) or (a is not None and abs(a - b) > tolerance * max(1.0, abs(b))):
                    return False
    return True


def run(
    players=(2, 3, 4), protocol=FULL, seed=0, threads=None, reports=(), stage=lambda name, unit: _ignore,
    sequences=False,
):  # fmt: skip
    """The whole study; ``reports`` are more rows: report files (``Report.save``, from
    ``beggar_env.forecasting.evaluate`` or ``evaluate_policy``) of the same test set.
    ``sequences``: also train and evaluate the GRU on the public stream for each player
    count (needs torch; 5 to 10 minutes a player count on 2 cores)."""
    require_extras(sequences)
    results = {
        "protocol": asdict(protocol),
        "seeds": {"test": ev.TEST_SEED, "train": {n: TRAIN_SEED + n for n in players}, "forecasters": seed},
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


def study_names(n_players, protocol):
    """The names of the rows the study itself makes for ``n_players`` (a report may not take
    one: it would replace the study's own row, and the gaps closed are measured between two
    of them), in the tables' case-insensitive comparison."""
    made = fc.baselines(n_players, bayes_k=protocol.bayes_k, prior_games=1, trees=1, epochs=1)
    return {forecaster.name.casefold() for forecaster in made}


def read_report(path, protocol, players):
    """A forecaster's or policy's report (a JSON file of ``Report.save``, from
    ``beggar_env.forecasting.evaluate``), checked to be a whole report of this protocol's
    test set for one of ``players``, named apart from the study's own rows:
    ``ValueError`` in one line naming the file and what is wrong, before any work. The
    checks are those of ``Report.load`` (``protocol.check_report``: the report's JSON
    Schema and what a schema cannot say); :func:`add_reports` adds those that need the
    study's results (the same test positions, slice by slice)."""
    report = ev.read_report_file(path)
    if report["n_players"] not in players or report["games"] != protocol.test_games:
        raise ValueError(
            f"{path}: a report of {checks.excerpt(report['games'])} {checks.excerpt(report['n_players'])}-player test "
            f"games, not of this protocol's test set ({protocol.test_games} games of "
            f"{' or '.join(map(str, players))} players)"
        )
    report = ev.check_report(report, os.fspath(path))  # a report of layout 1 upgraded
    name = report["forecaster"]
    if name.casefold() in study_names(report["n_players"], protocol) or name.casefold().startswith(
        "bayes (monte carlo"
    ):
        raise ValueError(
            f"{path}: $.forecaster: {name!r} is the name of one of the study's own rows: give your forecaster "
            "another name (evaluate(..., name=...))"
        )
    return ev.Report(report)


def add_reports(results, paths):
    """Add forecasters' or policies' reports (``Report.save`` files on the same test set)
    as rows, before the oracle (a row of the same name, added before, is replaced). Every
    report is checked (:func:`read_report`, and its slices' positions against the
    study's) before ``results`` changes: ``ValueError`` naming the file."""
    protocol = Protocol(**{**results["protocol"], "bayes_sweep": tuple(results["protocol"].get("bayes_sweep", ()))})
    reports = [(path, read_report(path, protocol, [int(n) for n in results["players"]])) for path in paths]
    for path, report in reports:
        block = results["players"][str(report["n_players"])]
        _same_positions(path, report, block)
    for path, report in reports:
        block = results["players"][str(report["n_players"])]
        block["reports"] = [r for r in block["reports"] if r["forecaster"] != report["forecaster"]]  # a new run of it
        _add_gaps([report], block["reports"])
        block["reports"].insert(-1, report)


def _same_positions(path, report, block):
    """``ValueError`` unless ``report`` counts the positions of the study's test set, slice
    by slice (a report of another player count's test set, relabelled, does not)."""
    if not block["reports"]:
        return
    study = block["reports"][0]["slices"]
    for name, figures in study.items():
        theirs = report["slices"].get(name, {})
        games = figures["games"] if not theirs.get("derived") else None  # a derived slice's games are not known
        if (theirs.get("positions"), theirs.get("games")) != (figures["positions"], games):
            raise ValueError(
                f"{path}: $.slices[{name!r}]: {theirs.get('positions')} positions of {theirs.get('games')} games, "
                f"where the study's {report['n_players']}-player test set has {figures['positions']} of "
                f"{figures['games']}: not a report of this test set"
            )


def add_to_written(results, out, paths, command):
    """Add reports as rows to ``results``, the study written in ``out`` (its ``results.json``),
    without running it again (a row of the same forecaster is replaced), and write it, the
    tables and the pictures again; ``command`` is recorded beside the study's own. Every
    report is checked before anything is written (``ValueError``); ``results.json`` is
    locked meanwhile (:func:`redraw` also reads it under that lock)."""
    results = copy.deepcopy(results)  # the caller's results change only when the folder does
    add_reports(results, paths)
    results["added"] = [*[c for c in results.get("added", []) if c != command], command]
    return _write_folder(results, out, with_results=True)


def redraw(out, paths=(), command=None):
    """``beggar baselines --redraw``: read the study in ``out`` (its ``results.json``), add
    the reports ``paths`` as rows (:func:`add_to_written`) and write the tables and the
    pictures again, all under ``results.json``'s lock, so that a second run at the same
    time is refused (``files.InUse``) rather than lose a row. Returns the pictures written."""
    path = Path(out) / "results.json"
    if not path.is_file():  # before the lock, which would be a new file beside it
        raise ValueError(f"{path} does not exist: run the study first (beggar baselines --out DIR)")
    with files.exclusive(path):
        results = read_results(path)
        if not paths:
            return write_tables_and_pictures(results, out)
        return add_to_written(results, out, paths, command)


def read_results(path):
    """A study's ``results.json`` (:func:`write`), checked against :data:`RESULTS_SCHEMA`
    (every figure the tables and pictures read): ``ValueError`` in one line naming the file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)  # not files.read_json: a gap closed between two equal rows is NaN
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist: run the study first (beggar baselines --out DIR)") from None
    except (OSError, ValueError, RecursionError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0] or type(error).__name__
        raise ValueError(f"{path} cannot be read as JSON: {reason}") from None
    check_results(results, path)
    return results


def check_results(results, where):
    """``ValueError`` naming ``where`` unless ``results`` (as results.json holds them) is what
    the tables and pictures can draw: :data:`RESULTS_SCHEMA`, and every row of a player
    count a report of that player count."""
    blocks = results.get("players") if isinstance(results, dict) else None
    rows = [row for block in (blocks or {}).values() if isinstance(block, dict) for row in block.get("reports", [])]
    if any(isinstance(row, dict) and "format_version" not in row for row in rows if isinstance(rows, list)):
        raise ValueError(
            f"{where}: a study written before the two tracks (its rows have no format_version): run the study "
            "again (beggar baselines --out DIR)"
        )
    files.check_schema(results, RESULTS_SCHEMA, where)
    for n, block in results["players"].items():
        for i, row in enumerate(block["reports"]):
            if row["n_players"] != int(n):
                raise ValueError(f"{where}: $.players['{n}'].reports[{i}]: a report of {row['n_players']} players")


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


# ------------------------------------------------------------------------- output


def _value(report, slice_name, metric):
    entry = report["slices"][slice_name].get(metric)
    return entry["value"] if isinstance(entry, dict) else entry


def table_rows(block):
    """One row per forecaster: accuracy and log loss by slice, Brier and ECE overall, the
    gap closed, forecasts per second."""
    rows = []
    for report in block["reports"]:
        low, high = report["slices"]["all"]["accuracy"]["ci95"]
        row = {"forecaster": report["forecaster"], "accuracy": _value(report, "all", "accuracy"), "ci95": (low, high)}
        for slice_name in TABLE_SLICES:
            row[f"log loss {slice_name}"] = _value(report, slice_name, "log_loss")
            row[f"accuracy {slice_name}"] = _value(report, slice_name, "accuracy")
        row["brier"] = _value(report, "all", "brier")
        row["ece"] = report["slices"]["all"]["ece"]
        row["classwise ece"] = report["calibration"]["classwise_ece"]
        for slice_name in ev.GAP_SLICES:
            where = "" if slice_name == "all" else f" {slice_name}"
            gaps = report["reference"]["gap_closed"][slice_name]
            row[f"gap closed{where}"] = _gap(gaps, "log_loss")
            row[f"gap closed{where}, accuracy"] = _gap(gaps, "accuracy")
        row["forecasts/s"] = report["forecasts_per_s"]
        rows.append(row)
    return rows


def _gap(gaps, metric):
    """A gap closed's value; NaN where undefined (no position, or the prior and Bayes score the same)."""
    value = gaps.get(metric, {}).get("value")
    return float("nan") if value is None else value


def _markdown(header, rows):
    """A markdown table: ``header`` and ``rows`` are lists of cell texts."""
    lines = ["| " + " | ".join(cells) + " |" for cells in [header, *rows]]
    lines.insert(1, "|" + "---|" * len(header))
    return "\n".join(lines)


def _with_interval(figure):
    if figure["ci95"] is None:  # derived from an older report: no interval
        return f"{figure['value']:.3f} (n/a)"
    low, high = figure["ci95"]
    return f"{figure['value']:.3f} ({low:.3f}-{high:.3f})"


def markdown_table(block):
    header = ["forecaster", "accuracy (95% CI)", "log loss (95% CI)", "Brier", "ECE", "class-wise ECE"]
    header += [f"acc. / log loss, {s}" for s in TABLE_SLICES[1:]]
    header += [f"gap closed{'' if s == 'all' else ', ' + s}, acc. / log loss" for s in ev.GAP_SLICES]
    header.append("forecasts/s")
    rows = []
    for report, row in zip(block["reports"], table_rows(block)):
        figures = report["slices"]["all"]
        rows.append(
            [
                row["forecaster"],
                _with_interval(figures["accuracy"]),
                _with_interval(figures["log_loss"]),
                f"{row['brier']:.3f}",
                f"{row['ece']:.3f}",
                f"{row['classwise ece']:.3f}",
                *(f"{row[f'accuracy {s}']:.3f} / {row[f'log loss {s}']:.3f}" for s in TABLE_SLICES[1:]),
                *(
                    f"{row[f'gap closed{w}, accuracy'] + 0.0:.2f} / {row[f'gap closed{w}'] + 0.0:.2f}"
                    for w in ("", " open", " determined")
                ),
                f"{row['forecasts/s']:,.0f}",
            ]
        )
    return _markdown(header, rows)


def slices_table(block, metric="accuracy"):
    """``metric`` of every forecaster on every slice of the protocol (position-weighted,
    with its 95% interval over resampled games; "n/a" where a row's figure was derived
    from an older report, without one), and over all positions game-weighted (each game
    counts once)."""
    names = list(block["reports"][0]["slices"])
    rows = [
        [
            report["forecaster"],
            *(_with_interval(report["slices"][name][metric]) for name in names),
            f"{report['slices']['all'][metric]['game_weighted']:.3f}",
        ]
        for report in block["reports"]
    ]
    return _markdown(["forecaster", *names, "all, game-weighted"], rows)


def tracks_table(block):
    """Each forecaster on the two tracks: accuracy and log loss with their 95% intervals,
    the gap closed between the seat prior and Bayes, and the paired difference to Bayes
    (this row - Bayes, on the same positions, over the same resampled games), from each
    row's reference; "n/a" where no interval could be had (a row derived from an older
    report, or added from a report made against another reference)."""
    header = ["forecaster"]
    for track, name in ev.TRACKS:
        where = f"{track} ({name})"
        header += [
            f"{where}: accuracy (95% CI)",
            f"{where}: log loss (95% CI)",
            f"{where}: gap closed, accuracy",
            f"{where}: gap closed, log loss",
            f"{where}: log loss - Bayes",
        ]
    rows = []
    for report in block["reports"]:
        cells = [report["forecaster"]]
        reference = report["reference"]
        for _, name in ev.TRACKS:
            figures = report["slices"][name]
            if "accuracy" not in figures:
                cells += ["-"] * 5
                continue
            cells += [_with_interval(figures["accuracy"]), _with_interval(figures["log_loss"])]
            gaps = reference["gap_closed"][name]
            cells += [_signed(gaps[m], "value", "{:.2f}") for m in ("accuracy", "log_loss")]
            cells.append(_signed(reference["versus_bayes"][name]["log_loss"], "difference", "{:+.3f}"))
        rows.append(cells)
    return _markdown(header, rows)


def _signed(figure, key, form):
    """A figure (``key``: its value) with its interval, ``0.40 (0.36 to 0.44)``; "-" if undefined."""
    if figure[key] is None:
        return "-"
    value = figure[key] + 0.0  # -0.0 (a row against itself) shows as 0
    if figure["ci95"] is None:
        return f"{form.format(value)} (n/a)"
    low, high = (end + 0.0 for end in figure["ci95"])
    return f"{form.format(value)} ({form.format(low)} to {form.format(high)})"


def horizon_table(block, unit="tricks"):
    """Accuracy / log loss of every forecaster in each bin of the horizon, the ``unit``
    (tricks or cards) still to be played, with the bins' positions; "-" for a row without
    a horizon (derived from an older report)."""
    curves = [report["by_horizon"][unit] for report in block["reports"] if report["by_horizon"]]
    if not curves:
        return "(no row has the metrics by horizon)"
    names, positions = curves[0]["bins"], curves[0]["positions"]
    header = ["forecaster", *(f"{name} ({count:,} positions)" for name, count in zip(names, positions))]
    rows = []
    for report in block["reports"]:
        curve = report["by_horizon"][unit] if report["by_horizon"] else None
        if curve is None:
            rows.append([report["forecaster"], *(["-"] * len(names))])
            continue
        cells = [
            "-" if acc is None else f"{acc:.3f} / {loss:.3f}" for acc, loss in zip(curve["accuracy"], curve["log_loss"])
        ]
        rows.append([report["forecaster"], *cells])
    return _markdown(header, rows)


def paired_table(block):
    """Each row of the table against the one above it, on the same positions: the
    difference (next - this) of accuracy and log loss, with its 95% interval over the
    same resampled games."""
    rows = []
    for pair in block.get("paired", []):
        cells = [f"{pair['next']} - {pair['this']}"]
        for name in ev.GAP_SLICES:
            for metric in ("accuracy", "log_loss"):
                figure = pair[name].get(metric)
                cells.append("-" if figure is None else _signed(figure, "difference", "{:+.3f}"))
        rows.append(cells)
    header = ["difference", "accuracy", "log loss", "accuracy, open", "log loss, open"]
    header += ["accuracy, determined", "log loss, determined"]
    return _markdown(header, rows)


def sweep_table(block):
    """The Bayes forecaster by its number of rollouts K, with the log-loss floor its
    smoothing puts on the positions the table determines."""
    rows = [
        [
            f"{row['k']:,}",
            f"{row['accuracy']:.3f}",
            f"{row['log_loss']:.4f}",
            f"{row['log_loss_open']:.4f}",
            f"{row['log_loss_determined']:.4f}",
            f"{row['floor']:.4f}",
            f"{row['forecasts_per_s']:,.0f}",
        ]
        for row in block.get("bayes_sweep", [])
    ]
    header = ["K", "accuracy", "log loss", "log loss, open", "log loss, determined", "floor, determined", "forecasts/s"]
    return _markdown(header, rows)


def statistics_table(results):
    header = ["players", "games", "mean cards", "median", "p5", "p95", "p99", "max", "mean tricks", "never ends"]
    header.append("seat win rates (95% CI)")
    rows = []
    for n, block in results["players"].items():
        st = block["game_statistics"]
        seats = "; ".join(f"{s['seat']}: {s['rate']:.4f} ({s['ci95'][0]:.4f}-{s['ci95'][1]:.4f})" for s in st["seats"])
        cards = st["cards"]
        rows.append(
            [
                n,
                f"{st['games']:,}",
                f"{cards['mean']:.1f}",
                f"{cards['p50']:.0f}",
                f"{cards['p5']:.0f}",
                f"{cards['p95']:.0f}",
                f"{cards['p99']:.0f}",
                f"{cards['max']}",
                f"{st['tricks']['mean']:.1f}",
                f"{st['cycles']} ({st['cycle_share']:.2e})",
                seats,
            ]
        )
    return _markdown(header, rows)


def check_out(out):
    """Check, before the study, that ``out`` can take its files: a folder this process can
    write in, or a new one in such a folder, whose ``results.json`` no other run is writing.
    ``ValueError`` naming the problem."""
    out = os.path.abspath(os.fspath(out))
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"{out} is a file, not a folder")
    where = out if os.path.isdir(out) else os.path.dirname(out)
    if not os.path.isdir(where):
        raise ValueError(f"no such folder: {where}")
    if not os.access(where, os.W_OK):
        raise ValueError(f"cannot write in {where} (permission denied)")
    files.check_name_length(os.path.join(out, "reliability_4p.png"))
    if os.path.isdir(out):  # another run writing the folder: refused now (files.InUse), not after the study
        with files.exclusive(os.path.join(out, "results.json")):
            pass


def write(results, out, command):
    """Write ``results.json``, ``tables.md`` and the pictures into the folder ``out`` (see
    :func:`_write_folder`: all drawn first, ``results.json`` replaced last, under its lock)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return _write_folder({"command": command, **results}, out, with_results=True)


def write_tables_and_pictures(results, out):
    """``tables.md`` and the pictures of ``results`` (as ``results.json`` holds them) in
    ``out``, under ``results.json``'s lock; ``results.json`` itself is left as it is."""
    return _write_folder(results, Path(out), with_results=False)


def results_text(results) -> str:
    """``results.json``'s text: compact JSON (no indentation: the published study's is
    440 KB so, 690 KB indented), one line."""
    return json.dumps(results, separators=(",", ":")) + "\n"


def _write_folder(results, out, with_results):
    """Write the study's files in ``out`` so that no failure leaves a broken folder: check
    ``results`` (:data:`RESULTS_SCHEMA`), draw the tables and every picture in memory, then
    replace each file whole (``files.write_bytes``), ``results.json`` last, holding its lock
    throughout. A drawing that fails writes nothing; a write that fails (a full disk) puts
    back the files already replaced, so the folder is as it was. Returns the pictures'
    paths."""
    out = Path(out)
    with files.exclusive(out / "results.json"):
        text = results_text(results)
        results = json.loads(text)  # drawn as results.json holds it (a tuple becomes a list), as a redraw reads it
        check_results(results, str(out / "results.json"))
        contents = {out / "tables.md": tables_text(results).encode("utf-8")}
        pictures = draw(results, out)
        contents.update(pictures)
        if with_results:
            contents[out / "results.json"] = text.encode("utf-8")  # the last one replaced
        _replace_all(contents)
    return list(pictures)


def _replace_all(contents):
    """Replace each file of ``contents`` (path: bytes) in order; if one fails, put back the
    ones replaced before it (their previous bytes, or no file) and raise its error."""
    done = []
    try:
        for path, data in contents.items():
            try:
                before = path.read_bytes()
            except FileNotFoundError:
                before = None
            files.write_bytes(path, data)
            done.append((path, before))
    except BaseException:
        for path, before in reversed(done):
            try:
                if before is None:
                    path.unlink()
                else:
                    files.write_bytes(path, before)
            except OSError:
                pass  # the first error is the one to report
        raise


def headline_table(block):
    """Every forecaster's row as ``print(report)`` gives it (``Report.markdown``): accuracy
    and log loss with their 95% intervals, on all positions and the headline slices."""
    rows = [ev.Report(report).row() for report in block["reports"]]
    return _markdown(ev.Report.header(), rows)


def tables_text(results) -> str:
    """``tables.md``: the game statistics and, per player count, every table."""
    command = results.get("command", "beggar baselines")
    added = "".join(f" Rows added by `{more}`." for more in results.get("added", []))
    parts = [f"Written by `{command}`.{added}\n", "## Game statistics\n", statistics_table(results)]
    for n, block in results["players"].items():
        parts += [
            f"\n## {n} players\n",
            f"{block['positions']:,} test positions ({block['open_positions']:,} open, the inference track; "
            f"{block['positions'] - block['open_positions']:,} determined, the simulation track) of "
            f"{results['protocol']['test_games']:,} games; {block['train_samples']:,} training samples; at "
            f"{block['open_unanimous']:.1%} of the open positions every one of the Bayes forecaster's rollouts "
            "gave the same outcome. The columns of `print(report)` (`beggar_env.forecasting.evaluate`), with "
            "95% intervals over resampled games (the gap closed between the seat prior and Bayes, over the same"
            " resampled games; n/a: not available, see results.md):\n",
            headline_table(block),
            "\nMore figures: Brier, calibration, the gap closed between the seat prior and Bayes:\n",
            markdown_table(block),
            "\nThe two tracks, each row against the seat prior and Bayes on the same positions: the gap closed "
            "and the paired difference to Bayes of the log loss (this row - Bayes), with 95% intervals over the "
            "same resampled games:\n",
            tracks_table(block),
            "\nAccuracy / log loss by horizon, the tricks still to be played (the one being played for included),"
            " position-weighted:\n",
            horizon_table(block, "tricks"),
            "\nAccuracy / log loss by the cards still to be played (the next one included):\n",
            horizon_table(block, "cards"),
            "\nEvery slice (cards played so far; progress quartile, cards so far / the game's length; open"
            " positions), position-weighted with its 95% interval, and all positions game-weighted. Accuracy:\n",
            slices_table(block, "accuracy"),
            "\nLog loss:\n",
            slices_table(block, "log_loss"),
            "\nEach row against the row above it, on the same positions (95% intervals over the same resampled"
            " games):\n",
            paired_table(block),
        ]
        if len(block.get("bayes_sweep", [])) > 1:
            parts += ["\nThe Bayes forecaster by its rollouts per position, K:\n", sweep_table(block)]
    return "\n".join(parts) + "\n"


LOG_LOSS_SHOWN = 1.25  # the by-cards log-loss panels stop here (uniform is ln 3 = 1.10); curves above are named


def palette(n):
    """``n`` distinct (colour, line style) pairs for the rows of a picture: tab20's 20 colours,
    the strong ones first, solid, then dashed, then dash-dotted (a row past them would be a
    row not drawn: refused)."""
    import matplotlib

    pairs = matplotlib.colormaps["tab20"].colors
    colours = [(colour, ls) for ls in ("-", "--", "-.") for colour in pairs[0::2] + pairs[1::2]]
    if n > len(colours):
        raise ValueError(f"{n} rows are more than a picture tells apart ({len(colours)})")
    return colours[:n]


def _style(name, colour):
    """How a forecaster's curve is drawn: the oracle dotted on top, so that Bayes (often 1.0 too) shows beneath."""
    if name == "oracle":
        return dict(color="black", ls=":", lw=2.0, zorder=5)
    color, ls = colour
    return dict(color=color, ls=ls, lw=2.2 if name.startswith("Bayes") else 1.3)


def draw(results, out):
    """Pictures: accuracy and log loss against cards played, the reliability diagrams,
    and the game lengths, drawn in memory: {the file in ``out``: its PNG bytes}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    written = {}
    for n, block in results["players"].items():
        colors = palette(len(block["reports"]))
        fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
        above = []
        for report, color in zip(block["reports"], colors):
            curve, name = report["by_cards"], report["forecaster"]
            x = np.arange(len(curve["accuracy"])) * curve["bin"]
            for ax, metric in zip(axes, ("accuracy", "log_loss")):
                ax.plot(x, curve[metric], label=name, **_style(name, color))
            if max(curve["log_loss"]) > LOG_LOSS_SHOWN:
                above.append(f"{name} ({min(curve['log_loss']):.1f}-{max(curve['log_loss']):.1f})")
        axes[1].set_ylim(0, LOG_LOSS_SHOWN)
        if above:
            axes[1].set_title("above the frame: " + ", ".join(above), fontsize=8)
        for ax, metric in zip(axes, ("accuracy", "log loss")):
            ax.set_xlabel("cards played so far")
            ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
        fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="center right")
        fig.suptitle(f"{n} players: forecasts by cards played (test positions, bins of 10 cards)")
        written[out / f"by_cards_{n}p.png"] = _png(fig, rect=(0, 0, 0.82, 1))  # the legend on the right
        fig, ax = plt.subplots(figsize=(5.5, 5.5))
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for report, color in zip(block["reports"], colors):
            curve, name = report["reliability"], report["forecaster"]
            ax.plot(curve["confidence"], curve["accuracy"], marker="o", ms=3, label=name, **_style(name, color))
        ax.set(xlabel="confidence (top label)", ylabel="accuracy", title=f"{n} players: reliability (quantile bins)")
        ax.legend(fontsize=6)
        written[out / f"reliability_{n}p.png"] = _png(fig)
        written[out / f"reliability_by_outcome_{n}p.png"] = _draw_outcomes(plt, colors, n, block)
        written[out / f"horizon_{n}p.png"] = _draw_horizon(plt, colors, n, block)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n, block in results["players"].items():
        counts = np.asarray(block["game_statistics"]["histogram_cards"], float)
        ax.plot(np.arange(len(counts)), counts / counts.sum(), lw=1, label=f"{n} players")
        if n == "2" and len(counts) > 60:
            peak = 36 + int(np.argmax(counts[36:61]))
            ax.annotate(
                "the loser never takes a pile:\nit plays its 26 dealt cards and is out",
                xy=(peak, counts[peak] / counts.sum()),
                xytext=(peak + 120, counts[peak] / counts.sum()),
                fontsize=8,
                arrowprops=dict(arrowstyle="->", lw=0.8),
                va="center",
            )
    ax.set(xlabel="cards played in the game", ylabel="share of games", xlim=(0, 1500), title="Game lengths")
    ax.legend()
    written[out / "game_lengths.png"] = _png(fig)
    return written


def _draw_outcomes(plt, colors, n, block):
    """Each outcome's reliability: its forecast probability against how often it came true."""
    outcomes = ev.outcome_names(int(n))
    fig, axes = plt.subplots(1, len(outcomes), figsize=(4.2 * len(outcomes), 4.4), squeeze=False)
    for ax, outcome in zip(axes[0], outcomes):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for report, color in zip(block["reports"], colors):
            curve, name = report["calibration"]["by_outcome"][outcome], report["forecaster"]
            ax.plot(curve["probability"], curve["frequency"], marker="o", ms=3, label=name, **_style(name, color))
        ax.set(xlabel=f"forecast probability of {outcome}", ylabel="how often it came true", title=outcome)
        ax.grid(alpha=0.3)
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize=7, loc="center right")
    fig.suptitle(f"{n} players: reliability of each outcome (quantile bins; class-wise ECE in the table)")
    return _png(fig, rect=(0, 0, 0.84, 1))


def _draw_horizon(plt, colors, n, block):
    """Accuracy and log loss against the tricks still to be played (bins of powers of 2)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    above, missing, names = [], [], None
    for report, color in zip(block["reports"], colors):
        name = report["forecaster"]
        if not report["by_horizon"]:
            missing.append(name)
            continue
        curve = report["by_horizon"]["tricks"]
        names = curve["bins"]
        for ax, metric in zip(axes, ("accuracy", "log_loss")):
            values = [np.nan if v is None else v for v in curve[metric]]
            ax.plot(np.arange(len(values)), values, marker="o", ms=3, label=name, **_style(name, color))
        losses = [v for v in curve["log_loss"] if v is not None]
        if losses and max(losses) > LOG_LOSS_SHOWN:
            above.append(f"{name} ({min(losses):.1f}-{max(losses):.1f})")
    axes[1].set_ylim(0, LOG_LOSS_SHOWN)
    if above:
        axes[1].set_title("above the frame: " + ", ".join(above), fontsize=8)
    bottom = 0
    if missing:  # rows read from reports of the earlier layout: no horizon
        note = "not drawn (their reports hold no horizon): " + "; ".join(missing)
        fig.text(0.01, 0.01, textwrap.fill(note, 190), fontsize=7, va="bottom")
        bottom = 0.04 * (1 + len(note) // 190)
    for ax, metric in zip(axes, ("accuracy", "log loss")):
        if names:
            ax.set_xticks(np.arange(len(names)), names)
        ax.set_xlabel("tricks still to be played (the one being played for included)")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[0].invert_xaxis()  # time runs left to right: far from the end, then the end
    axes[1].invert_xaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="center right")
    fig.suptitle(f"{n} players: forecasts by horizon (test positions)")
    return _png(fig, rect=(0, bottom, 0.80, 1))


PNG_DPI = 100
PNG_COLOURS = 128  # a palette of this many colours: line plots need few, and the files shrink threefold


def _png(fig, rect=None):
    """The figure as PNG bytes (closed): drawn at :data:`PNG_DPI`, then stored with a
    palette of :data:`PNG_COLOURS` colours and Pillow's ``optimize`` (docs/ stays small)."""
    import matplotlib.pyplot as plt
    from PIL import Image

    try:
        fig.tight_layout(rect=rect)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=PNG_DPI)
    finally:
        plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        small = image.convert("RGB").quantize(
            colors=PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    packed = io.BytesIO()
    small.save(packed, format="png", optimize=True)
    return packed.getvalue()

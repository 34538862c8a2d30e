"""``tables.md``: the study's tables in markdown, from ``results.json`` as it holds them:
the game statistics and, for each player count, the best learned row (the headline), the
columns of ``print(report)``, more figures, the two tracks, the horizons, every slice, the paired differences of
neighbouring rows and the Bayes forecaster's K sweep."""

import math

from ..metrics import GAP_SLICES, TRACKS
from ..report import Report
from .settings import learned

TABLE_SLICES = ("all", "cards 0-25", "cards 104-207", "open", "determined")


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
        for slice_name in GAP_SLICES:
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
    header += [f"gap closed{'' if s == 'all' else ', ' + s}, acc. / log loss" for s in GAP_SLICES]
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
    for track, name in TRACKS:
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
        for _, name in TRACKS:
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
        for name in GAP_SLICES:
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


def headline_table(block):
    """Every forecaster's row as ``print(report)`` gives it (``Report.markdown``): what it
    was given, accuracy and log loss with their 95% intervals, on all positions and the
    headline slices."""
    rows = [Report(report).row() for report in block["reports"]]
    return _markdown(Report.header(), rows)


def best_learned(block):
    """The headline: the best learned row (:func:`~.settings.learned`: given neither the
    rules engine nor a hand-built machine) by the log-loss gap it closes on all positions,
    with that gap and its log loss; the first of equals. None without a learned row."""
    rows = [report for report in block["reports"] if learned(report)]
    if not rows:
        return None
    gaps = [_gap(report["reference"]["gap_closed"]["all"], "log_loss") for report in rows]
    best = rows[max(range(len(rows)), key=lambda i: -math.inf if math.isnan(gaps[i]) else gaps[i])]
    gap = best["reference"]["gap_closed"]["all"]["log_loss"]
    return (
        f"The best learned row (given neither the rules engine nor a hand-built machine): {best['forecaster']}, "
        f"log loss {_value(best, 'all', 'log_loss'):.3f}, closing {_signed(gap, 'value', '{:.2f}')} of the "
        "log-loss gap between the seat prior and Bayes.\n"
    )


def tables_text(results) -> str:
    """``tables.md``: the game statistics and, per player count, every table."""
    command = results.get("command", "beggar baselines")
    added = "".join(f" Rows added by `{more}`." for more in results.get("added", []))
    parts = [f"Written by `{command}`.{added}\n", "## Game statistics\n", statistics_table(results)]
    for n, block in results["players"].items():
        parts += [
            f"\n## {n} players\n",
            *filter(None, [best_learned(block)]),
            f"{block['positions']:,} test positions ({block['open_positions']:,} open, the inference track; "
            f"{block['positions'] - block['open_positions']:,} determined, the simulation track) of "
            f"{results['protocol']['test_games']:,} games; {block['train_samples']:,} training samples; at "
            f"{block['open_unanimous']:.1%} of the open positions every one of the Bayes forecaster's rollouts "
            "gave the same outcome. The columns of `print(report)` (`beggar_env.forecasting.evaluate`): what "
            "each row was given beyond its observation and training data (-: nothing), then its figures with "
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

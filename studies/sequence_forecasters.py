"""Train the sequence forecasters (a GRU and a causal transformer over the stream of
observations, on the outcome or distilled from the Bayes forecaster), evaluate each with the
published protocol, and write one report per forecaster (``beggar baselines --forecaster
FILE`` adds them to the tables) and a summary with the learning curves, the costs and the
"memory recovered" figure.

    pip install -e '.[rl,baselines]'
    python studies/sequence_forecasters.py --players 2 --out docs/results/sequences
    python studies/sequence_forecasters.py --quick --out /tmp/sequences      # a smoke run, seconds

* Training games come from :class:`beggar_env.forecasting.sequences.GameStreams` (fresh
  games every epoch, seeded by ``--seed``), never the test seed; early stopping on
  held-out games; torch on every core.
* Each forecaster is scored by ``beggar_env.forecasting.evaluate``: every test game played
  in the vector env, step by step, the forecaster's memory reset where each game starts.
* Memory recovered: the share of the gap between the best per-position public learner
  and the best per-position counted one (``PER_POSITION``, from ``--results``, the
  published ``results.json``) that a public-stream model closes, for accuracy and log loss.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from beggar_env import __version__, files
from beggar_env.forecasting import Report, protocol, sequence_models, study

ROWS = (  # architecture, observation, target
    ("gru", "public", "outcome"),
    ("gru", "public", "bayes"),
    ("transformer", "public", "outcome"),
    ("gru", "counted", "outcome"),
    ("transformer", "counted", "outcome"),
)
BUDGET = sequence_models.PUBLISHED  # the published rows' settings; the width by architecture
PER_POSITION = {  # the learned per-position rows of the published tables (the Bayes forecaster is no learner)
    "public": ("most cards, calibrated", "logistic regression (public)", "gradient-boosted trees (public)"),
    "counted": ("gradient-boosted trees (counted)", "MLP (counted)"),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2], choices=(2, 3, 4), help="player counts")
    parser.add_argument("--rows", nargs="+", default=None, metavar="ARCH:LEVEL:TARGET", help="a subset of the rows")
    parser.add_argument("--games", type=int, help=f"training games per epoch (default {BUDGET['games']:,})")
    parser.add_argument("--epochs", type=int, help=f"epochs (default {BUDGET['epochs']})")
    parser.add_argument("--seed", type=int, default=1, help="seed of the training games and weights (default 1)")
    parser.add_argument("--test-games", type=int, default=protocol.PUBLISHED_GAMES, help="test games (default 2000)")
    parser.add_argument(
        "--results", default="docs/results/results.json", help="the published results (memory recovered)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run of seconds (tiny models, few games)")
    parser.add_argument("--summary", action="store_true", help="only write summary.md again from the reports in --out")
    parser.add_argument("--out", required=True, help="folder for the reports and the summary")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.budget = {}
    if args.quick:
        args.test_games = 20
    for key in ("games", "epochs"):
        if getattr(args, key) is not None:
            args.budget[key] = getattr(args, key)
    rows = ROWS
    if args.rows:
        rows = [tuple(row.split(":")) for row in args.rows]
        unknown = [":".join(row) for row in rows if row not in ROWS]
        if unknown:
            parser.error(f"--rows: no row {unknown[0]} (rows: {' '.join(':'.join(r) for r in ROWS)})")
    args.row_specs = rows
    return args


def train_and_evaluate(n_players, spec, args):
    architecture, observation, target = spec
    budget = dict(sequence_models.budget(architecture, args.quick), **args.budget)
    forecaster = sequence_models.SequenceForecaster(
        n_players, observation, architecture, target, seed=args.seed, **budget
    )
    with tqdm(desc=f"training {forecaster.name}", unit="game", unit_scale=True, file=sys.stderr, leave=False) as bar:
        forecaster.fit(progress=lambda done, total: (setattr(bar, "total", total), bar.update(done - bar.n)))
    test = protocol.TestSet.published(n_players) if args.test_games == protocol.PUBLISHED_GAMES else (
        protocol.TestSet.generate(n_players, args.test_games))  # fmt: skip
    report = protocol.evaluate(forecaster, test, bootstrap=200 if args.quick else 1000)
    report["fit_s"] = forecaster.fit_seconds
    report["train_games"] = forecaster.games * forecaster.epochs
    report["history"] = forecaster.history
    report["settings"] = forecaster.settings()
    report["command"] = "python studies/sequence_forecasters.py " + " ".join(args.argv)
    report["made"] = {"date": time.strftime("%Y-%m-%d"), "torch": torch.__version__, "threads": torch.get_num_threads()}
    return report


def recovered(report, published):
    """The share of the gap between the best per-position public and counted learners
    (each metric's best) that this row closes."""
    if published is None or report["games"] != protocol.PUBLISHED_GAMES:
        return None  # the published rows are of the published test set only
    rows = {r["forecaster"]: r["slices"]["all"] for r in published["reports"]}
    share = {}
    for metric, best in (("accuracy", max), ("log_loss", min)):
        public, counted = (
            best(rows[name][metric]["value"] for name in PER_POSITION[level] if name in rows) for level in PER_POSITION
        )
        share[metric] = (report["slices"]["all"][metric]["value"] - public) / (counted - public)
    return share


def summary(reports, published, args):
    machine = study.run.machine()
    commands = sorted({report["command"] for report in reports}, key=[r["command"] for r in reports].index)
    made = "; ".join(f"`{command}`" for command in commands)
    lines = [
        "# Sequence forecasters",
        "",
        f"Every report in this folder, made by {made} on {machine['cpus']} CPUs of an {machine['cpu']}, "
        f"{', '.join(sorted({r['made']['date'] for r in reports}))}: beggar-env {__version__}, Python "
        f"{platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} threads), numpy "
        f"{np.__version__}.",
        "",
        "| players | forecaster | accuracy (95% CI) | log loss (95% CI) | ECE | memory recovered, accuracy / log loss "
        "| training games | training s | forecasts/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        n = report["n_players"]
        figures = report["slices"]["all"]
        acc, loss = figures["accuracy"], figures["log_loss"]
        share = recovered(report, (published or {}).get(str(n))) if report["observation"] == "public" else None
        memory = "-" if share is None else f"{share['accuracy']:.2f} / {share['log_loss']:.2f}"
        lines.append(
            f"| {n} | {report['forecaster']} | {acc['value']:.3f} ({acc['ci95'][0]:.3f}-{acc['ci95'][1]:.3f}) "
            f"| {loss['value']:.3f} ({loss['ci95'][0]:.3f}-{loss['ci95'][1]:.3f}) | {figures['ece']:.3f} | {memory} "
            f"| {report['train_games']:,} | {report['fit_s']:.0f} | {report['forecasts_per_s']:,.0f} |"
        )
    lines += ["", "Learning curves (held-out games, after each epoch):", ""]
    lines += [
        "| players | forecaster | epoch | training games | log loss | accuracy | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        for h in report["history"]:
            lines.append(
                f"| {report['n_players']} | {report['forecaster']} | {h['epoch']} | {h['games']:,} "
                f"| {h['val_log_loss']:.3f} | {h['val_accuracy']:.3f} | {h['seconds']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def folder_reports(out):
    """Every report in ``out``, by player count and then in the order of ``ROWS``."""
    reports = []
    for path in out.glob("*_*_*_*p.json"):
        report = Report.load(path)
        if "command" in report:
            reports.append(report)
    order = [f"{a}_{b}_{c}" for a, b, c in ROWS]
    key = {id(r): (r["n_players"], order.index("_".join(r["settings"][k] for k in KEYS))) for r in reports}
    return sorted(reports, key=lambda r: key[id(r)])


KEYS = ("architecture", "observation", "target")


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    published = None
    if Path(args.results).is_file():
        published = json.loads(Path(args.results).read_text())["players"]
    reports = []
    for n in [] if args.summary else args.players:
        for spec in args.row_specs:
            started = time.perf_counter()
            report = train_and_evaluate(n, spec, args)
            name = f"{spec[0]}_{spec[1]}_{spec[2]}_{n}p.json"
            report.save(out / name)
            reports.append(report)
            figures = report["slices"]["all"]
            print(
                f"{n} players, {report['forecaster']}: accuracy {figures['accuracy']['value']:.3f}, log loss "
                f"{figures['log_loss']['value']:.3f} ({time.perf_counter() - started:.0f} s) -> {out / name}",
                flush=True,
            )
    reports = folder_reports(out)  # this run's and those an earlier run left there
    with files.replacing(str(out / "summary.md")) as f:
        f.write(summary(reports, published, args).encode())
    print(f"summary: {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    sys.exit(main())

"""Playing the game forward: train and evaluate the forecasters that play it forward
(``beggar_env.forecasting.machine``, ``step_model``, ``full_view``) with the published
protocol, and write one report per row (``Report.save``; ``beggar baselines --redraw
--forecaster FILE`` adds one to the tables), the compute-accuracy curves and a summary.

    pip install -e '.[rl,baselines]'
    python studies/forward_forecasters.py --players 2 --rows step curve --out docs/results/forward
    python studies/forward_forecasters.py --quick --out /tmp/forward     # a smoke run
    python studies/forward_forecasters.py --redraw --out docs/results/forward  # the curves' figures, from their JSON

Rows (``--rows``):

* ``step``: a step network trained on the engine's card transitions (seed ``--seed``), its
  exact-match rate on 10^6 held-out transitions (seed 2000 + players), the machine with its
  table against the engine on 10^5 random games, and the step rolled out from every test
  position (K = 256 arrangements of the unseen cards where they are open), no engine at
  forecast time;
* ``curve``: the engine plays the first k tricks (k = 0, 1, 2, 4, ..., to the end), then the
  gradient-boosted trees on the counted view score the position reached; open positions over
  K = 16 arrangements of their unseen cards;
* ``step-curve``: the same with the learned step playing the first n cards;
* ``full-trees``, ``full-mlp``: gradient-boosted trees and an MLP on features of the full
  view (every hand, in order);
* ``hands``: a GRU that reads each hand card by card (the full view);
* ``looped``: a weight-tied block iterated more for longer hands, trained end to end on
  outcomes (the full view).

Every row's report is the protocol's (both tracks, the horizon, the gap closed against the
seat prior and Bayes) with its training seconds and settings and the command that made it.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

import beggar_env as bg
from beggar_env import __version__, core, datasets, files
from beggar_env.forecasting import forecasters, machine, protocol, transitions
from beggar_env.forecasting.full_view import FullViewForecaster
from beggar_env.forecasting.step_model import StepModel
from beggar_env.forecasting.study.figures import png
from beggar_env.forecasting.study.settings import TRAIN_SEED

CURVE_TRICKS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, None)  # None: to the end
CURVE_CARDS = (0, 4, 16, 64, 256, 1024, None)
ROWS = ("step", "curve", "step-curve", "full-trees", "full-mlp", "hands", "looped")
HELD_OUT_SEED = 2000  # + players: the step's held-out transitions


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2], choices=(2, 3, 4), help="player counts")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS, help="the rows to make")
    parser.add_argument("--seed", type=int, default=1, help="seed of the training games and weights (default 1)")
    parser.add_argument("--test-games", type=int, default=protocol.PUBLISHED_GAMES, help="test games (default 2000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (few games, small models)")
    parser.add_argument("--threads", type=int, default=2, help="torch's threads (default 2)")
    parser.add_argument(
        "--step-games", type=int, default=4_000_000, help="games whose transitions the step learns (default 4,000,000)"
    )
    parser.add_argument("--out", required=True, help="folder for the reports, curves and summary")
    parser.add_argument(
        "--redraw", action="store_true", help="only redraw the curves' figures from their JSON files in --out"
    )
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.quick:
        args.test_games = 20
    return args


def figures(report):
    """accuracy / log loss on all, open and determined positions, as one line."""
    cells = []
    for name in ("all", "open", "determined"):
        where = report["slices"][name]
        cells.append(f"{name} {where['accuracy']['value']:.3f} / {where['log_loss']['value']:.3f}")
    return "; ".join(cells)


def finish(report, args, **extra):
    report["command"] = "python studies/forward_forecasters.py " + " ".join(args.argv)
    report["made"] = {
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "beggar_env": __version__,
    }
    report.update(extra)
    return report


def test_set(n_players, args):
    if args.test_games == protocol.PUBLISHED_GAMES:
        return protocol.TestSet.published(n_players)
    return protocol.TestSet.generate(n_players, args.test_games)


def counted_trees(n_players, args):
    """The published per-position counted learner: gradient-boosted trees on the counted
    features, trained as ``beggar baselines`` trains them (seed ``TRAIN_SEED + players``)."""
    games = 1500 if args.quick else 20_000
    train = datasets.generate(games, n_players=n_players, observation="counted", samples=8, seed=TRAIN_SEED + n_players)
    started = time.perf_counter()
    trees = forecasters.gradient_boosting(n_players, "counted", seed=0, max_iter=50 if args.quick else 200).fit(train)
    return trees, time.perf_counter() - started


# ------------------------------------------------------------------------ the rows


def row_step(n_players, args, out):
    settings = dict(games=20_000, steps=800, hidden=64) if args.quick else dict(games=args.step_games)
    step = StepModel(n_players, seed=args.seed, **settings).fit()
    held_in, held_out = transitions.transitions(
        10**5 if args.quick else 10**6, n_players, seed=HELD_OUT_SEED + n_players
    )
    rate, wrong = step.exact(held_in, held_out)
    rows = transitions.codes(held_in, n_players)
    new = ~np.isin(rows, step.seen)
    new_rate = step.exact(held_in[new], held_out[new]) if new.any() else (None, 0)
    games = 10**4 if args.quick else 10**5
    labels, cards, tricks = machine.machine_games(step.table(), games, n_players, seed=HELD_OUT_SEED + n_players)
    engine = bg.simulate(games, n_players=n_players, seed=HELD_OUT_SEED + n_players)
    same = (
        (labels == core.outcome_labels(engine.winner, n_players)) & (cards == engine.cards) & (tricks == engine.tricks)
    )
    k = 16 if args.quick else 256
    rolled = machine.RolledStep(step, k=k, seed=0)
    test = test_set(n_players, args)
    report = protocol.evaluate(rolled, test, bootstrap=200 if args.quick else 1000)
    bayes = forecasters.BayesMC(n_players, k=k, seed=0).predict_proba(test.observations("counted"))
    apart = np.abs(protocol.predict(rolled, test)[0] - bayes).max(axis=1)
    finish(
        report,
        args,
        fit_s=step.fit_seconds,
        settings={
            "hidden": step.hidden,
            "games": step.games,
            "steps": step.steps,
            "lr": step.lr,
            "seed": step.seed,
            "k": k,
            "threads": step.threads,
        },  # fmt: skip
        step={
            "training_transitions": step.transitions_seen,
            "distinct_inputs_trained_on": len(step.seen),
            "possible_inputs": transitions.n_inputs(n_players),
            "wrong_distinct_after_training": step.history[-1]["wrong_distinct"],
            "held_out_transitions": len(held_in),
            "held_out_seed": HELD_OUT_SEED + n_players,
            "exact_match": rate,
            "wrong": wrong,
            "held_out_with_inputs_never_trained_on": int(new.sum()),
            "distinct_inputs_never_trained_on": int(len(np.unique(rows[new]))),
            "exact_match_on_those": new_rate[0],
            "games_played_by_the_machine": games,
            "games_as_the_engine_plays_them": int(same.sum()),
            "largest_difference_to_bayes": float(apart.max()),
            "positions_apart_from_bayes": int((apart > 1e-9).sum()),
            "history": step.history,
        },
    )
    name = f"step_rolled_{n_players}p.json"
    report.save(out / name)
    s = report["step"]
    print(
        f"{n_players} players, {report['forecaster']}: {figures(report)}; step exact on "
        f"{s['exact_match']:.6f} of {s['held_out_transitions']:,} held-out transitions ({s['wrong']} wrong), "
        f"{s['games_as_the_engine_plays_them']:,} of {games:,} games as the engine plays them; "
        f"{s['positions_apart_from_bayes']} positions apart from Bayes (K={k}) by more than 1e-9; "
        f"fit {report['fit_s']:.0f} s, {report['forecasts_per_s']:,.0f} forecasts/s -> {out / name}",
        flush=True,
    )


def curve(n_players, args, out, learned):
    """A compute-accuracy curve: the engine (or the learned step) plays the first budget
    tricks (cards), then the counted trees score the position reached."""
    test = test_set(n_players, args)
    leaf, leaf_s = counted_trees(n_players, args)
    step = None
    if learned:
        settings = dict(games=20_000, steps=800, hidden=64) if args.quick else dict(games=args.step_games)
        step = StepModel(n_players, seed=args.seed, **settings).fit()
    budgets = CURVE_CARDS if learned else CURVE_TRICKS
    unit = "cards" if learned else "tricks"
    k = 4 if args.quick else 16
    points = []
    for budget in budgets:
        forecaster = machine.Truncated(leaf, step, k=k, seed=0, **{unit: budget})
        report = protocol.evaluate(forecaster, test, bootstrap=200 if args.quick else 1000)
        point = {"budget": budget, "forecasts_per_s": report["forecasts_per_s"], "name": report["forecaster"]}
        for name in ("all", "open", "determined"):
            where = report["slices"][name]
            point[name] = {m: where[m]["value"] for m in ("accuracy", "log_loss")}
            point[name]["ci95"] = {m: where[m]["ci95"] for m in ("accuracy", "log_loss")}
        points.append(point)
        print(
            f"{n_players} players, {report['forecaster']}: "
            + "; ".join(
                f"{n} {point[n]['accuracy']:.3f} / {point[n]['log_loss']:.3f}" for n in ("all", "open", "determined")
            )
            + f"; {report['forecasts_per_s']:,.0f} forecasts/s",
            flush=True,
        )
    result = {
        "what": f"the {'learned step' if learned else 'engine'} plays the first budget {unit}, then {leaf.name} "
        f"scores the position reached (budget null: to the end); open positions over K = {k} arrangements of their "
        "unseen cards, as the Bayes forecaster deals them",
        "n_players": n_players,
        "unit": unit,
        "k": k,
        "leaf": leaf.name,
        "leaf_fit_s": leaf_s,
        "step_fit_s": None if step is None else step.fit_seconds,
        "test_games": test.games,
        "positions": int(len(test.labels)),
        "open_positions": int(test.slices["open"].sum()),
        "points": points,
        "command": "python studies/forward_forecasters.py " + " ".join(args.argv),
        "date": time.strftime("%Y-%m-%d"),
    }
    name = f"{'step_curve' if learned else 'curve'}_{n_players}p.json"
    with files.replacing(str(out / name)) as f:
        f.write((json.dumps(result, indent=1) + "\n").encode())
    print(f"-> {out / name}", flush=True)
    plot(result, out / name.replace(".json", ".png"))


def plot(result, path):
    """Draw a curve (accuracy and log loss against the budget played exactly) to ``path``,
    stored as the study's figures are (``study.figures.png``): a palette of
    ``PNG_COLOURS`` colours and Pillow's ``optimize``, a third of a full-colour PNG's size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result["points"]
    last = max(p["budget"] or 0 for p in points) * 2 or 1
    x = [p["budget"] if p["budget"] is not None else last for p in points]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for track, style in (("all", "-o"), ("determined", "-s"), ("open", "-^")):
        axes[0].plot(x, [p[track]["accuracy"] for p in points], style, label=track)
        axes[1].plot(x, [p[track]["log_loss"] for p in points], style, label=track)
    for ax, what in zip(axes, ("accuracy", "log loss")):
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xticks(x)
        ax.set_xticklabels([str(p["budget"]) if p["budget"] is not None else "end" for p in points], fontsize=7)
        ax.set_xlabel(f"{result['unit']} played exactly, then {result['leaf']}", fontsize=8)
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    axes[0].legend()
    who = "learned step" if result["unit"] == "cards" else "engine"
    fig.suptitle(f"{result['n_players']} players: the {who} plays forward, then a learner scores the position")
    with files.replacing(str(path)) as f:
        f.write(png(fig, dpi=110))
    print(f"-> {path}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    if args.redraw:
        for path in sorted(out.glob("*curve_*p.json")):
            plot(json.loads(path.read_text()), path.with_suffix(".png"))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for n in args.players:
        for row in args.rows:
            started = time.perf_counter()
            if row == "step":
                row_step(n, args, out)
            elif row in ("curve", "step-curve"):
                curve(n, args, out, learned=row == "step-curve")
            else:
                ROW_MAKERS[row](n, args, out)
            print(f"({row}, {n} players: {time.perf_counter() - started:.0f} s)", flush=True)
    return 0


def row_full(n_players, args, out, kind):
    """A learner of the full view: trees or an MLP on ``features.full_features`` (trained on the
    published baselines' training games, their full view), or a network of
    ``full_view.FullViewForecaster``."""
    games = 1500 if args.quick else 20_000
    started = time.perf_counter()
    if kind in ("full-trees", "full-mlp"):
        train = datasets.generate(
            games, n_players=n_players, observation="full", samples=8, seed=TRAIN_SEED + n_players
        )
        if kind == "full-trees":
            forecaster = forecasters.gradient_boosting(n_players, "full", seed=0, max_iter=50 if args.quick else 200)
        else:
            forecaster = forecasters.mlp(n_players, "full", seed=0, max_iter=20 if args.quick else 40)
        forecaster.fit(train)
        settings = {"train_games": games, "samples": 8, "data_seed": TRAIN_SEED + n_players, "seed": 0}
        fit_s, history = time.perf_counter() - started, None
    else:
        net = "hands" if kind == "hands" else "looped"
        settings = dict(FULL_NETS[net], **(QUICK_NETS if args.quick else {}))
        forecaster = FullViewForecaster(
            n_players, net, seed=args.seed, data_seed=TRAIN_SEED + n_players, threads=args.threads, **settings
        ).fit()
        fit_s, history = forecaster.fit_seconds, forecaster.history
    report = protocol.evaluate(forecaster, test_set(n_players, args), bootstrap=200 if args.quick else 1000)
    finish(report, args, fit_s=fit_s, settings=settings, history=history)
    name = f"{kind.replace('-', '_')}_{n_players}p.json"
    report.save(out / name)
    print(
        f"{n_players} players, {report['forecaster']}: {figures(report)}; fit {fit_s:.0f} s, "
        f"{report['forecasts_per_s']:,.0f} forecasts/s -> {out / name}",
        flush=True,
    )


FULL_NETS = {  # the published rows' settings
    "hands": dict(games=20_000, samples=8, epochs=3, batch=256, lr=2e-3, hidden=32),
    "looped": dict(games=20_000, samples=8, epochs=6, batch=256, lr=1e-3, width=32),
}
QUICK_NETS = dict(games=300, epochs=1)
ROW_MAKERS = {kind: (lambda n, args, out, kind=kind: row_full(n, args, out, kind)) for kind in ROWS[3:]}

if __name__ == "__main__":
    sys.exit(main())

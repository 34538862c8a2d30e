"""Playing the game forward with no machine given, a trick per iteration: train the
step-supervised looped model (``beggar_env.forecasting.looped_steps``) on the positions
after each of the next tricks of engine games, resumable from its checkpoint, and measure
how far it plays the game forward exactly.

    pip install -e '.[rl]'
    nice -n 19 python studies/looped_forecaster.py train --out runs/looped/2p       # resumes if a checkpoint is there
    python studies/looped_forecaster.py exactness --out runs/looped/2p              # against the engine

``train`` runs ``--epochs`` epochs of ``--positions`` random trick-start positions; epoch
``e`` draws them from fresh games of the seed ``(--seed, e)`` alone, so a run stopped
anywhere and started again (``checkpoint.pt`` in ``--out``, replaced whole after every
epoch) trains as one run would. Epoch ``e`` supervises iterations 0 .. ``K_e``, ``K_e =
min(--most, ceil(--first x --grow^e))`` (the curriculum over tricks left); ``--near-end`` of
its positions are drawn among those with at most ``K_e`` tricks left, so that the end of
the game (halting, winner) is seen from the first epoch. Each minibatch is unrolled
``--bptt`` iterations a step of the optimiser, its latent state carried on detached. Each
epoch's held-out figures (per-card and whole-position exactness after k tricks, the halting
head, the winner once over, on positions of a held-out seed) and the CPU seconds so far go
to ``history.json``.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from beggar_env import files
from beggar_env.forecasting import looped_steps, training
from beggar_env.forecasting import trick_targets as tt
from beggar_env.forecasting.looped_steps import LoopedSteps
from beggar_env.forecasting.study.run import machine

HELD_OUT_SEED = 9_999  # games no training epoch draws (training seeds: (seed, epoch) mixed)
GAMES_PER_EPOCH = 400  # about 14,000 trick starts in 2-player games
PROBE_TRICKS = (1, 2, 4, 8, 16, 32)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("train", "exactness"))
    parser.add_argument("--out", required=True, help="the run's folder (checkpoint, history, model)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--seed", type=int, default=1, help="seed of the weights and the training games")
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--positions", type=int, default=2048, help="trick-start positions per epoch")
    parser.add_argument("--batch", type=int, default=64, help="positions per minibatch")
    parser.add_argument("--bptt", type=int, default=4, help="iterations per step of the optimiser")
    parser.add_argument("--first", type=float, default=2.0, help="supervised iterations in the first epoch")
    parser.add_argument("--grow", type=float, default=1.15, help="their growth per epoch")
    parser.add_argument("--most", type=int, default=134, help="supervised iterations at most (p99 of tricks left)")
    parser.add_argument("--near-end", type=float, default=0.5, help="share of positions near their game's end")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3, help="distinct blocks of one iteration")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=200, help="steps of linear warm-up (then constant)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--probe", type=int, default=256, help="held-out positions scored after each epoch")
    parser.add_argument("--games", type=int, default=300, help="exactness: held-out games")
    parser.add_argument("--tricks", type=int, default=134, help="exactness: tricks rolled out")
    parser.add_argument("--cap", type=int, default=looped_steps.CAP, help="exactness: iterations at most")
    return parser.parse_args(argv)


def settings_of(args):
    keys = ("players", "seed", "epochs", "positions", "batch", "bptt", "first", "grow", "most", "near_end")
    return {k: getattr(args, k) for k in keys + ("width", "layers", "heads", "lr", "warmup")}


def build(args):
    return training.seeded(
        args.seed, lambda: LoopedSteps(args.players, width=args.width, heads=args.heads, layers=args.layers)
    )


def supervised_tricks(args, epoch):
    """``K_e``: the iterations epoch ``epoch`` supervises."""
    return min(args.most, math.ceil(args.first * args.grow**epoch))


def epoch_positions(args, epoch):
    """The epoch's positions: ``(trajectories, rows)``, ``--near-end`` of them with at most
    ``K_e`` tricks left."""
    traj = tt.game_tricks(GAMES_PER_EPOCH, args.players, seed=args.seed * 1_000_003 + epoch)
    rows, left = tt.trick_starts(traj)
    rng = np.random.default_rng([args.seed, epoch])
    near = round(args.near_end * args.positions)
    short = rows[left <= supervised_tricks(args, epoch)]
    picked = np.concatenate([rng.choice(short, near), rng.choice(rows, args.positions - near)])
    return traj, picked


def batches_of(args, model, epoch):
    """The epoch's segments (functions that return a loss), minibatch after minibatch; a
    minibatch holds positions of about as many supervised iterations."""
    k = supervised_tricks(args, epoch)
    traj, rows = epoch_positions(args, epoch)
    rng = np.random.default_rng([args.seed, epoch, 1])
    left = np.minimum(tt.targets(traj, rows, 0)["tricks_left"], k)
    order = np.argsort(left + rng.random(len(rows)), kind="stable")
    chunks = [order[lo : lo + args.batch] for lo in range(0, len(order), args.batch)]
    for i in rng.permutation(len(chunks)):
        targets = looped_steps.as_tensors(tt.targets(traj, rows[chunks[i]], k))
        yield from looped_steps.segments(model, targets, k, args.bptt)


def schedule(args):
    return lambda optimiser: torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / args.warmup))


def probe_set(args, n):
    traj = tt.game_tricks(200, args.players, seed=HELD_OUT_SEED)
    rows, _ = tt.trick_starts(traj)
    rows = np.random.default_rng(HELD_OUT_SEED).choice(rows, n, replace=False)
    return tt.targets(traj, rows, max(PROBE_TRICKS))


def probe_figures(model, targets, batch=128):
    """Held-out exactness after each of :data:`PROBE_TRICKS`, the halting head's accuracy
    over them, and the winner's once the game is over."""
    k = max(PROBE_TRICKS)
    parts = [
        looped_steps.roll_out(model, *(targets[f][lo : lo + batch, 0] for f in ("seat", "depth", "leader")), k)
        for lo in range(0, len(targets["winner"]), batch)
    ]
    predicted = {f: np.concatenate([p[f] for p in parts]) for f in parts[0]}
    exact = looped_steps.exactness(predicted, targets)
    over = targets["over"][:, -1]
    entry = {f"cards_{j}": float(exact["cards"][j]) for j in PROBE_TRICKS}
    entry |= {f"positions_{j}": float(exact["positions"][j]) for j in PROBE_TRICKS}
    entry["held_out_loss_8"] = _held_out_loss(model, targets, 8)
    entry["halt_accuracy"] = float((predicted["over"][:, 1:] == targets["over"][:, 1:]).mean())
    entry["winner_when_over"] = float((predicted["winner"][over, -1] == targets["winner"][over]).mean())
    return entry


def _held_out_loss(model, targets, k):
    """The mean loss of iterations 0 .. ``k`` on the held-out positions: comparable from epoch
    to epoch, whatever the curriculum supervises."""
    t = looped_steps.as_tensors(targets)
    with torch.no_grad():
        readouts = model(t["seat"][:, 0], t["depth"][:, 0], t["leader"][:, 0], k)
        return float(np.mean([float(looped_steps.step_loss(r, t, j)) for j, r in enumerate(readouts)]))


def train(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    model = build(args)
    probe = probe_set(args, args.probe)
    before = training.checkpoint_history(out / "checkpoint.pt")
    cpu_before, steps_before = (before[-1]["cpu_seconds"], before[-1]["steps"]) if before else (0.0, 0)
    started = time.process_time()
    steps = {"n": steps_before, "losses": []}

    def batches(epoch):
        steps["losses"] = []
        for segment in batches_of(args, model, epoch):
            steps["n"] += 1
            yield segment

    def loss(segment):
        value = segment()
        steps["losses"].append(float(value.detach()))
        return value

    def figures(epoch, last):
        entry = {"epoch": epoch + 1, "supervised_tricks": supervised_tricks(args, epoch), "steps": steps["n"]}
        entry["train_loss"] = float(np.mean(steps["losses"]))  # the mean over the epoch's segments
        with torch.no_grad():
            entry |= probe_figures(model, probe)
        entry["cpu_seconds"] = cpu_before + time.process_time() - started
        print(json.dumps(entry), flush=True)
        return entry

    history = training.train(
        model, batches, loss, lr=args.lr, epochs=args.epochs,
        schedule=schedule(args), clip=1.0, figures=figures, checkpoint=out / "checkpoint.pt",
    )  # fmt: skip
    training.save_run(
        out,
        model,
        settings=settings_of(args),
        given=list(LoopedSteps.given),
        history=history,
        machine=machine(),
        command="python studies/looped_forecaster.py " + " ".join(sys.argv[1:]),
    )


def exactness(args):
    """On random trick starts of held-out games: per-trick exactness of the whole position
    after k tricks against the engine (the curve over k, and its share of positions still
    running), and the winner forecast by playing forward to the halting head (no engine),
    by tricks left; beside it the share won by the seat holding more cards."""
    out = Path(args.out)
    model = training.load_model(out, LoopedSteps, lambda: build(args))
    traj = tt.game_tricks(args.games, model.n_players, seed=HELD_OUT_SEED + 1)
    rows, left = tt.trick_starts(traj)
    rows = np.random.default_rng(HELD_OUT_SEED + 1).choice(rows, min(len(rows), 2000), replace=False)
    started = time.process_time()
    curve = _curve(model, traj, rows, args.tricks)
    start = tt.targets(traj, rows, 0)
    inputs = [start[f][:, 0] for f in ("seat", "depth", "leader")]
    probs, iterations = looped_steps.forecast(model, *inputs, cap=args.cap)
    record = {"games": args.games, "seed": HELD_OUT_SEED + 1, "positions": len(rows), "given": []}
    record |= {"curve": curve, "winner": _winner_figures(probs, iterations, start, model.n_players, args.cap)}
    record["cpu_seconds"] = time.process_time() - started
    record["command"] = "python studies/looped_forecaster.py " + " ".join(sys.argv[1:])
    print(json.dumps(record, indent=1))
    files.write_json(out / "exactness.json", record)


def _curve(model, traj, rows, k, batch=128):
    sums = {name: np.zeros(k + 1) for name in ("cards", "positions", "through")}
    running = np.zeros(k + 1)
    for lo in range(0, len(rows), batch):
        targets = tt.targets(traj, rows[lo : lo + batch], k)
        inputs = [targets[f][:, 0] for f in ("seat", "depth", "leader")]
        exact = looped_steps.exactness(looped_steps.roll_out(model, *inputs, k), targets)
        for name in sums:
            sums[name] += exact[name] * len(targets["winner"])
        running += (~targets["over"]).sum(0)
    ks = [j for j in (0, 1, 2, 4, 8, 16, 32, 64, 100, 134) if j <= k]
    curve = {name: {str(j): float(sums[name][j] / len(rows)) for j in ks} for name in sums}
    curve["running"] = {str(j): float(running[j] / len(rows)) for j in ks}
    return curve


def _winner_figures(probs, iterations, start, n_players, cap):
    winner, left = start["winner"], start["tricks_left"]
    right = probs.argmax(1) == winner
    held = np.stack([(start["seat"][:, 0] == p).sum(1) for p in range(n_players)], axis=1)
    bins = {"1-8": (1, 8), "9-32": (9, 32), "33-134": (33, 134), ">134": (135, 10**9)}
    return {
        "accuracy": float(right.mean()),
        "more_cards_wins": float((held.argmax(1) == winner).mean()),
        "log_loss": float(-np.log(np.maximum(probs[np.arange(len(winner)), winner], 1e-6)).mean()),
        "halted_at_the_end": float((iterations == left).mean()),
        "stopped_at_cap": float((iterations == cap).mean()),
        "mean_iterations": float(iterations.mean()),
        "accuracy_by_tricks_left": {
            name: float(right[(left >= lo) & (left <= hi)].mean()) if ((left >= lo) & (left <= hi)).any() else None
            for name, (lo, hi) in bins.items()
        },
    }


def main(argv=None):
    args = parse_args(argv)
    if args.command == "train":
        train(args)
        return
    with training.torch_threads(args.threads):
        exactness(args)


if __name__ == "__main__":
    main()

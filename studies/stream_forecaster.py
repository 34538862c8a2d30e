"""Playing the game forward with no machine given: train the stream model
(``beggar_env.forecasting.stream_model``) on the faces stream of engine games, resumable
from its checkpoint, and measure how far it rolls the game out exactly.

    pip install -e '.[rl]'
    nice -n 19 python studies/stream_forecaster.py train --out runs/stream/2p       # resumes if a checkpoint is there
    python studies/stream_forecaster.py exactness --out runs/stream/2p              # rollouts against the engine

``train`` runs ``--epochs`` epochs of ``--steps`` steps; epoch ``e`` trains on fresh random
games of the seed ``(--seed, e)`` alone, so a run stopped anywhere and started again (the
checkpoint ``checkpoint.pt`` in ``--out`` is replaced whole after every epoch) trains as one
run would. Each epoch's held-out figures (teacher-forced exact-match of the next token's
kind, copyable face and size on games of the held-out seed) and the CPU seconds so far go to
``history.json``. ``exactness`` rolls the model out from a random point of each of
``--games`` held-out games after its last first appearance (from there every card played
has been seen, so the stream determines the rest: a rollout is pure copying; a game whose
last card played is a first appearance is left out) and counts the cards written exactly
(seat and class) before the first mistake, a wrong size of a taking counted as one (and, as ``*_any_size``, not), for
all of them and split at 146 cards left (short and long remainders) and at 146 cards in the
whole game the rollout is cut from. ``train --max-cards 146`` is the length split: the same
model trained on the games that end within 146 cards alone, to be measured by ``exactness``
on every held-out game, short and long.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from beggar_env import core, deals, faces, files
from beggar_env.forecasting import face_streams, metrics, protocol, training
from beggar_env.forecasting.stream_model import TARGETS, StreamNet, accuracies, loss, roll_out, window_batch
from beggar_env.forecasting.study.run import machine

HELD_OUT_SEED = 9_999  # games no training epoch draws (training seeds: (seed, epoch) mixed)
GAMES_PER_EPOCH = 2_000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("train", "exactness", "forecast"))
    parser.add_argument("--out", required=True, help="the run's folder (checkpoint, history, model)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--seed", type=int, default=1, help="seed of the weights and the training games")
    parser.add_argument("--epochs", type=int, default=90, help="epochs of --steps steps (default 90)")
    parser.add_argument("--steps", type=int, default=100, help="optimiser steps per epoch (default 100)")
    parser.add_argument("--batch", type=int, default=32, help="windows per step")
    parser.add_argument("--length", type=int, default=256, help="tokens per window")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--window", type=int, default=256, help="tokens back each token attends to")
    parser.add_argument("--shift", type=int, default=2, help="tokens before each mixed into its input (0: none)")
    parser.add_argument(
        "--long-from",
        type=int,
        default=58,
        help="the first epoch (from 0) whose windows are --long-length tokens, drawn in proportion to the games'"
        " lengths, the batch cut to keep the tokens per step (default 58: the published run's second stage)",
    )
    parser.add_argument("--long-length", type=int, default=768, help="tokens per window from --long-from on")
    parser.add_argument(
        "--max-cards",
        type=int,
        default=0,
        help="train only on games that end within this many cards (the length split: trained on short"
        " remainders, tested on all; default 0: every game)",
    )
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=300, help="steps of linear warm-up")
    parser.add_argument(
        "--own-first", type=int, default=1000, help="first steps trained on the seat's next card alone (default 1000)"
    )
    parser.add_argument("--corrupt", type=float, default=0.01, help="share of input faces replaced at random")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument(
        "--cpu-hours", type=float, default=3.0, help="train: no epoch starts that would end past this (default 3)"
    )
    parser.add_argument("--games", type=int, default=500, help="exactness: held-out games, one rollout each")
    parser.add_argument("--max-tokens", type=int, default=3000, help="the longest rollout")
    parser.add_argument("--fresh", action="store_true", help="exactness: a fresh window at every token, no cache")
    parser.add_argument("--determined", type=int, default=2000, help="forecast: determined test positions sampled")
    parser.add_argument("--open", type=int, default=300, help="forecast: open test positions sampled")
    parser.add_argument("--k", type=int, default=16, help="forecast: sampled rollouts per open position")
    return parser.parse_args(argv)


def settings_of(args):
    keys = (
        "players",
        "seed",
        "epochs",
        "steps",
        "batch",
        "length",
        "width",
        "layers",
        "heads",
        "window",
        "shift",
        "lr",
    )
    settings = {k: getattr(args, k) for k in keys} | {
        "warmup": args.warmup,
        "corrupt": args.corrupt,
        "own_first": args.own_first,
        "long_from": args.long_from,
        "long_length": args.long_length,
        "cpu_hours": args.cpu_hours,
    }
    if args.max_cards:  # the length split (the published run's settings do not name it)
        settings["max_cards"] = args.max_cards
    return settings


def build(args):
    return training.seeded(
        args.seed,
        lambda: StreamNet(
            args.players, width=args.width, layers=args.layers, heads=args.heads, window=args.window, shift=args.shift
        ),
    )


def schedule(args):
    total = args.epochs * args.steps

    def factor(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        progress = min(1.0, (step - args.warmup) / max(1, total - args.warmup))
        return 0.1 + 0.45 * (1 + math.cos(math.pi * progress))  # a float: the checkpoint loads weights-only

    return lambda optimiser: torch.optim.lr_scheduler.LambdaLR(optimiser, factor)


def epoch_games(args, epoch):
    """The epoch's training games: the first ``GAMES_PER_EPOCH`` random games of its seed, or
    with ``--max-cards``, the first that many of them that end within that many cards."""
    seed = args.seed * 1_000_003 + epoch
    if not args.max_cards:
        return face_streams.random_games(GAMES_PER_EPOCH, args.players, seed=seed)
    kept, first = [], 0
    while sum(len(part) for part in kept) < GAMES_PER_EPOCH:
        games = face_streams.random_games(GAMES_PER_EPOCH, args.players, seed=seed, first=first)
        kept.append(short_games(games, args.players, args.max_cards))
        first += GAMES_PER_EPOCH
    return join_games(kept, GAMES_PER_EPOCH)


def short_games(games, p, max_cards):
    """Each game of ``games`` that ends (``END``) within ``max_cards`` cards, as a list of its
    ``(kind, face, size)``."""
    kind, face, size, offsets = games
    plays = plays_per_game(kind, offsets, p)
    last = kind[offsets[1:] - 1]
    ended = (last >= face_streams.end(0, p)) & (last < face_streams.bos(p))
    return [
        tuple(a[offsets[g] : offsets[g + 1]] for a in (kind, face, size))
        for g in np.flatnonzero((plays <= max_cards) & ended)
    ]


def plays_per_game(kind, offsets, p):
    """The cards each game of a stream plays."""
    return np.add.reduceat((kind < p).astype(np.int64), offsets[:-1])


def join_games(parts, n):
    """The first ``n`` games of lists of ``(kind, face, size)`` as one ``(kind, face, size,
    offsets)``."""
    games = [game for part in parts for game in part][:n]
    offsets = np.concatenate([[0], np.cumsum([len(game[0]) for game in games])])
    return (*(np.concatenate([game[j] for game in games]) for j in range(3)), offsets)


class OutOfBudget(Exception):
    """The next epoch would end past ``--cpu-hours``."""


def train(args):
    """Train (resuming from the checkpoint), until ``--epochs`` epochs are done or the next
    would end past ``--cpu-hours`` of CPU (each epoch costs about what the last one did);
    then write the run (model, history, settings, machine)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = build(args)
    held_out = face_streams.random_games(200, args.players, seed=HELD_OUT_SEED)
    probe = window_batch(held_out, args.players, 64, args.length, np.random.default_rng(HELD_OUT_SEED))
    entries = training.checkpoint_history(out / "checkpoint.pt")  # each epoch's figures, these runs' added
    cpu_before = entries[-1]["cpu_seconds"] if entries else 0.0
    started = time.process_time()

    def batches(epoch):
        spent = cpu_before + time.process_time() - started
        marks = [0.0, 0.0] + [entry["cpu_seconds"] for entry in entries[-2:]]
        if spent + marks[-1] - marks[-2] > 3600 * args.cpu_hours:  # this epoch costing what the last one did
            raise OutOfBudget(f"epoch {epoch + 1} would end past {args.cpu_hours} CPU-hours ({spent:.0f} s spent)")
        games = epoch_games(args, epoch)
        rng = np.random.default_rng([args.seed, epoch])
        size, length, by_length = args.batch, args.length, False
        if epoch >= args.long_from:  # a cached rollout's tokens see up to layers x window back: train on that
            size = max(1, round(size * (length + 1) / (args.long_length + 1)))
            length, by_length = args.long_length, True
        for i in range(args.steps):
            batch = window_batch(games, args.players, size, length, rng, corrupt=args.corrupt, by_length=by_length)
            batch["targets"] = ("own_face",) if epoch * args.steps + i < args.own_first else TARGETS
            yield batch

    def figures(epoch, last):
        with torch.no_grad():
            held_loss = float(loss(model, probe))
        entry = {"epoch": epoch + 1, "step": (epoch + 1) * args.steps, "train_loss": float(last.detach())}
        entry |= {"held_out_loss": held_loss} | {f"held_out_{k}": v for k, v in accuracies(model, probe).items()}
        entry["cpu_seconds"] = cpu_before + time.process_time() - started
        print(json.dumps(entry), flush=True)
        entries.append(entry)
        return entry

    with training.torch_threads(args.threads):
        try:
            history = training.train(
                model, batches, lambda batch: loss(model, batch, batch["targets"]), lr=args.lr, epochs=args.epochs,
                schedule=schedule(args), clip=1.0, figures=figures, checkpoint=out / "checkpoint.pt",
            )  # fmt: skip
        except OutOfBudget as stop:  # the model holds the last epoch's weights, as the checkpoint does
            print(f"stream_forecaster: {stop}: the run ends there", file=sys.stderr)
            history = entries
            model.eval()
    training.save_run(
        out,
        model,
        settings=settings_of(args),
        history=history,
        machine=machine(),
        command="python studies/stream_forecaster.py " + " ".join(sys.argv[1:]),
    )


def exactness(args):
    """Roll the trained model out from random points of held-out games and compare each
    card it writes with the engine's (seat and class), and its winner with the game's. With
    ``--fresh``, the same rollouts recompute a fresh window of the last ``window`` tokens at
    every token (as in training, without the cache's stacked context; slow), written to
    ``exactness-fresh.json`` beside the cached ones from the same points."""
    out = Path(args.out)
    model = training.load_model(out, StreamNet, lambda: build(args))
    games = face_streams.random_games(args.games, model.n_players, seed=HELD_OUT_SEED + 1)
    rng = np.random.default_rng(HELD_OUT_SEED + 1)
    started = time.process_time()
    rows = rollout_rows(model, games, rng, args.max_tokens, rolled=fresh_roll_out if args.fresh else roll_out)
    record = {"games": args.games, "seed": HELD_OUT_SEED + 1, "max_tokens": args.max_tokens}
    record["from"] = "a random point after the game's last first appearance (every card to come has been seen)"
    record["rollout"] = "a fresh window at every token" if args.fresh else "cached: the window slides a token at a time"
    record |= summarise(rows) | {"cpu_seconds": time.process_time() - started}
    if args.fresh:  # the cached rollouts from the same points, side by side
        cached = rollout_rows(model, games, np.random.default_rng(HELD_OUT_SEED + 1), args.max_tokens)
        record["cached_from_the_same_points"] = summarise(cached)
    record["command"] = "python studies/stream_forecaster.py " + " ".join(sys.argv[1:])
    print(json.dumps(record, indent=1))
    files.write_json(out / ("exactness-fresh.json" if args.fresh else "exactness.json"), record)


@torch.no_grad()
def fresh_roll_out(model, kind, face, size, lengths, max_tokens):
    """:func:`roll_out`, greedy, but each token read from a fresh pass over the last
    ``model.window`` tokens of its stream alone, so every prediction sees what a training
    window's last token sees."""
    p, w = model.n_players, model.window
    streams = [[a[row, :n].tolist() for a in (kind, face, size)] for row, n in enumerate(lengths)]
    out = np.full((3, len(lengths), max_tokens), -1, np.int64)
    for row, stream in enumerate(streams):
        for t in range(max_tokens):
            k, f, z = (np.array(a[-w:], np.int64) for a in stream)
            u = face_streams.under(*(np.array(a[-w - 1 :], np.int64) for a in stream[:2]), p)[-len(k) :]
            logits = model(*(torch.from_numpy(a)[None] for a in (k, f, z, u)))
            nk, nf, nz = (int(x[0, -1].argmax()) for x in logits[:3])
            token = (nk, nf if nk < p else face_streams.NO_FACE, nz if p <= nk < 2 * p else face_streams.NO_SIZE)
            out[:, row, t] = token
            for a, x in zip(stream, token, strict=True):
                a.append(x)
            if nk >= 2 * p:
                break
    return out[0], out[1], out[2]


def rollout_rows(model, games, rng, max_tokens, batch=128, rolled=roll_out):
    """Per game with a copyable remainder, from one random point of it (:func:`copyable_cuts`):
    the cards of the engine's remainder, how many the model wrote exactly before its first
    mistake, whether its winner is the game's, and the cards of the whole game."""
    kind, face, size, offsets = games
    p = model.n_players
    cuts = copyable_cuts(games, p, rng)
    kept = np.flatnonzero(cuts >= 0)
    game_cards = plays_per_game(kind, offsets, p)
    rows = []
    for lo in range(0, len(kept), batch):
        part = kept[lo : lo + batch]
        n = max(cuts[g] - offsets[g] for g in part)
        ctx = [np.full((len(part), n), -1, np.int64) for _ in range(3)]
        for row, g in enumerate(part):
            m = cuts[g] - offsets[g]
            for a, source in zip(ctx, (kind, face, size), strict=True):
                a[row, :m] = source[offsets[g] : cuts[g]]
        lengths = [cuts[g] - offsets[g] for g in part]
        written = rolled(model, *ctx, lengths, max_tokens)
        for row, g in enumerate(part):
            truth = [a[cuts[g] : offsets[g + 1]] for a in (kind, face, size)]
            rows.append(_compare(truth, [w[row] for w in written], p) | {"game_cards": int(game_cards[g])})
    return rows


def copyable_cuts(games, p, rng):
    """One random point per game after its last first appearance and before its last play
    (``-1`` where there is none): from there on every card played has been seen, so the
    stream determines the rest of the game and a rollout is pure copying."""
    kind, face, size, offsets = games
    first = face_streams.first_appearances(face, offsets).astype(bool)
    cuts = np.full(len(offsets) - 1, -1, np.int64)
    for g in range(len(cuts)):
        lo, hi = offsets[g], offsets[g + 1]
        plays = lo + np.flatnonzero(kind[lo:hi] < p)
        start = lo + np.flatnonzero(first[lo:hi]).max() + 1
        if start <= plays[-1]:
            cuts[g] = start + int(rng.random() * (plays[-1] + 1 - start))
    return cuts


def _compare(truth, written, p):
    kinds = truth[0]
    k = written[0]
    ended = k[(k >= 2 * p) & (k < 3 * p)]
    return {
        "cards_left": int((kinds < p).sum()),
        "exact_cards": _exact_cards(truth, written, p, sizes_count=True),
        "exact_cards_any_size": _exact_cards(truth, written, p, sizes_count=False),
        "winner": int(ended[0]) - 2 * p if len(ended) else -1,
        "true_winner": int(kinds[-1]) - 2 * p,
    }


def _exact_cards(truth, written, p, sizes_count):
    """Cards written exactly (seat and class) before the first token that differs in kind,
    in a card's class, or (``sizes_count``) in a taking's size."""
    kinds, faces, sizes = truth
    k, f, z = written
    exact = 0
    for t in range(len(kinds)):
        same = k[t] == kinds[t]
        if same and kinds[t] < p:
            same = core.CLASS_OF_CARD_ID[f[t]] == core.CLASS_OF_CARD_ID[faces[t]]
        elif same and kinds[t] < 2 * p and sizes_count:
            same = z[t] == sizes[t]
        if not same:
            break
        exact += int(kinds[t] < p)
    return exact


SHORT_REMAINDER = 146  # cards left: the median of the published determined test positions


def summarise(rows):
    """The exactness figures of rollouts, for all and split by length at ``SHORT_REMAINDER``
    cards: of the remainder (``by_cards_left``) and of the whole game the rollout is cut from
    (``by_game_cards``: the games ``train --max-cards 146`` trains on, and the others)."""
    return _exactness(rows) | {"by_cards_left": _split(rows, "cards_left"), "by_game_cards": _split(rows, "game_cards")}


def _split(rows, field):
    short = [r for r in rows if r[field] <= SHORT_REMAINDER]
    long = [r for r in rows if r[field] > SHORT_REMAINDER]
    return {f"at most {SHORT_REMAINDER}": _exactness(short), f"more than {SHORT_REMAINDER}": _exactness(long)}


def _exactness(rows):
    if not rows:
        return {"positions": 0}
    left = np.array([r["cards_left"] for r in rows])
    right = np.array([r["winner"] == r["true_winner"] for r in rows])
    record = {"positions": len(rows), "cards_left_mean": float(left.mean()), "winner_accuracy": float(right.mean())}
    for suffix, field in (("", "exact_cards"), ("_any_size", "exact_cards_any_size")):
        exact = np.array([r[field] for r in rows])
        whole = exact >= left
        errors = (~whole).sum()
        record["whole_game_exact" + suffix] = float(whole.mean())
        record["per_card_error" + suffix] = float(errors / max(1, exact.sum() + errors))
        record["exact_through_n_cards" + suffix] = {
            str(n): float(np.mean((exact >= n) | whole)) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
        }
    return record


def forecast(args):
    """The model's forecasts of a random sample of the published test positions (stratified:
    ``--determined`` determined ones rolled out greedily from one completion of their unseen
    cards, ``--open`` open ones from ``--k`` completions each), scored beside the seat prior
    and the Bayes forecaster on the same positions, with 95% intervals over resampled games."""
    out = Path(args.out)
    model = training.load_model(out, StreamNet, lambda: build(args))
    p = model.n_players
    test = protocol.TestSet.published(p)
    prior, bayes = test.reference()
    kind, face, size, offsets = face_streams.random_games(test.games, p, seed=test.seed)
    game, cards = test.data.game, test.data.fields["cards"]
    plays = plays_per_game(kind, offsets, p)
    _check_streams_are_the_test_games(kind, offsets, plays, test, p)
    slices = test.slices
    rng = np.random.default_rng(args.seed + 77)
    picked = {
        "determined": rng.choice(np.flatnonzero(slices["determined"]), args.determined, replace=False),
        "open": rng.choice(np.flatnonzero(slices["open"]), args.open, replace=False),
    }
    hazard = json.loads((out / "exactness.json").read_text())["per_card_error"]
    record = {
        "forecaster": f"stream transformer over the faces, rolled out greedily (open: K={args.k} completions)",
        "given": [],  # only the network: no engine, no machine, no table (docs/forecasting.md)
        "hazard_per_card": hazard,
        "tracks": {},
        "command": "python studies/stream_forecaster.py " + " ".join(sys.argv[1:]),
    }
    for track, positions in picked.items():
        contexts = [_context(kind, face, size, offsets, game[i], cards[i], p) for i in positions]
        started = time.process_time()
        k = 1 if track == "determined" else args.k  # determined: any completion gives the same winner
        probs = _rolled_probs(model, contexts, k, hazard, args.max_tokens, p, rng)
        scores = metrics.position_scores(probs, test.labels[positions])
        left = plays[game[positions]] - cards[positions]
        record["tracks"][track] = {
            "positions": len(positions),
            "cpu_seconds": time.process_time() - started,
            "model": _means(scores, game[positions], rng),
            "prior": _means(_subset(prior.scores, positions), game[positions], rng),
            "bayes": _means(_subset(bayes.scores, positions), game[positions], rng),
            "model_by_cards_left": _accuracy_by_length(scores["accuracy"], left),
        }
    share_open = float(slices["open"].mean())
    record["open_share"] = share_open
    record["all"] = {
        who: {
            m: share_open * record["tracks"]["open"][who][m]["value"]
            + (1 - share_open) * record["tracks"]["determined"][who][m]["value"]
            for m in ("accuracy", "log_loss")
        }
        for who in ("model", "prior", "bayes")
    }
    a = record["all"]
    record["gap_closed_all"] = {
        m: (a["model"][m] - a["prior"][m]) / (a["bayes"][m] - a["prior"][m]) for m in ("accuracy", "log_loss")
    }
    print(json.dumps(record, indent=1))
    files.write_json(out / "forecast.json", record)


def _accuracy_by_length(accuracy, left):
    parts = (("at most", left <= SHORT_REMAINDER), ("more than", left > SHORT_REMAINDER))
    return {
        f"{name} {SHORT_REMAINDER}": {"positions": int(part.sum()), "accuracy": float(accuracy[part].mean())}
        for name, part in parts
        if part.any()
    }


def _check_streams_are_the_test_games(kind, offsets, plays, test, p):
    winners = kind[offsets[1:] - 1] - face_streams.end(0, p)
    positions = np.bincount(test.data.game, minlength=test.games)
    first = np.searchsorted(test.data.game, np.arange(test.games))
    if not ((winners == test.labels[first]).all() and (plays == positions).all()):
        raise AssertionError("the faces streams of the test seed are not the test games")


def _context(kind, face, size, offsets, g, c, p):
    """The tokens a player has seen at test position (game ``g``, ``c`` cards played): BOS,
    then every token up to the ``c``-th play and what it caused (a take)."""
    lo, hi = offsets[g], offsets[g + 1]
    plays = np.flatnonzero(kind[lo:hi] < p)
    end = 1 if c == 0 else plays[c - 1] + 1
    if end < hi - lo and face_streams.take(0, p) <= kind[lo + end] < face_streams.end(0, p):
        end += 1
    return kind[lo : lo + end], face[lo : lo + end], size[lo : lo + end]


def completion(context, p, rng):
    """The unseen cards of a position dealt at random, as the Bayes forecaster draws them: per
    seat, the faces of the cards it was dealt and has not played yet (a hand plays its dealt
    cards before any it took), drawn from the faces not yet played, as many as it holds."""
    kind, face, _ = context
    plays = kind < p
    seen = np.zeros(faces.N_FACES, bool)
    seen[face[plays]] = True
    first = face_streams.first_appearances(face, np.array([0, len(face)])).astype(bool)
    firsts = np.bincount(kind[first], minlength=p)  # a seat's first appearances: its dealt cards
    left = np.array(deals.dealt_sizes(core.DECK_SIZE, p)) - firsts
    shuffled = rng.permutation(np.flatnonzero(~seen))
    return [part.tolist() for part in np.split(shuffled, np.cumsum(left)[:-1])]


def _batched(contexts, batch, unseen):
    for lo in range(0, len(contexts), batch):
        part = contexts[lo : lo + batch]
        n = max(len(c[0]) for c in part)
        arrays = [np.full((len(part), n), -1, np.int64) for _ in range(3)]
        for row, context in enumerate(part):
            for a, source in zip(arrays, context, strict=True):
                a[row, : len(source)] = source
        yield arrays, [len(c[0]) for c in part], unseen[lo : lo + batch]


def _winners(written, p):
    kind = written[0]
    ended = (kind >= 2 * p) & (kind < 3 * p)
    winner = np.where(ended.any(1), kind[np.arange(len(kind)), ended.argmax(1)] - 2 * p, -1)
    return winner, ((kind >= 0) & (kind < p)).sum(1)  # cards written (-1: nothing, after END)


def _rolled_probs(model, contexts, k, hazard, max_tokens, p, rng, batch=256):
    """``k`` completions of each position's unseen cards (:func:`completion`), each rolled out
    greedily: the share won by each seat, each rollout's weight on its winner cut by the chance
    that a rollout of its length went wrong (the held-out hazard per card), the rest shared
    evenly between the seats (a rollout that writes no ``END`` counts evenly)."""
    repeated = [c for c in contexts for _ in range(k)]
    unseen = [completion(c, p, rng) for c in repeated]
    wins = np.zeros((len(contexts), p + 1))
    done = 0
    for arrays, lengths, dealt in _batched(repeated, batch, unseen):
        winner, n_cards = _winners(roll_out(model, *arrays, lengths, max_tokens, unseen=dealt), p)
        for w, n in zip(winner, n_cards, strict=True):
            right = (1 - hazard) ** n if w >= 0 else 0.0
            wins[done // k, :p] += (1 - right) / p
            if w >= 0:
                wins[done // k, w] += right
            done += 1
        print(f"stream_forecaster: {done:,} of {len(repeated):,} rollouts", file=sys.stderr, flush=True)
    return wins / k


def _subset(scores, positions):
    return {name: np.asarray(values)[positions] for name, values in scores.items() if name != "game"}


def _means(scores, game, rng, bootstrap=1000):
    """Each metric's mean over the sampled positions, with a 95% interval over resampled games."""
    out = {}
    games, index = np.unique(game, return_inverse=True)
    for name in ("accuracy", "log_loss"):
        values = np.asarray(scores[name], np.float64)
        sums, counts = np.bincount(index, values, len(games)), np.bincount(index, minlength=len(games))
        draws = rng.integers(0, len(games), (bootstrap, len(games)))
        means = sums[draws].sum(1) / counts[draws].sum(1)
        out[name] = {
            "value": float(values.mean()),
            "interval": [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))],
        }
    return out


def main(argv=None):
    args = parse_args(argv)
    if args.command == "train":
        train(args)
        return
    with training.torch_threads(args.threads):
        exactness(args) if args.command == "exactness" else forecast(args)


if __name__ == "__main__":
    main()

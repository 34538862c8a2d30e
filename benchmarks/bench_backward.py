"""Backward play: predecessors computed per second (beggar_env.cycles.backward.counts).

    python benchmarks/bench_backward.py [--positions 1000000] [--players 2] [--threads T]

Two kinds of positions, for the standard deck: random positions (a shuffled deck cut into
hands of any sizes, seat 0 leading: the census's ``random`` source, seed 1), and the
trick-start positions of random games (``random_deals(..., seed=1)``, every position up to
the game's end). Each is timed once untimed (compiling), then the best of three rounds.
Nothing here fails on a timing.
"""

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import cpu_model, fmt_rate, usable_cpus  # noqa: E402


def random_positions(n, players):
    from beggar_env import deals
    from beggar_env.cycles import positions

    deck = np.repeat(np.arange(5, dtype=np.int8), deals.deck_counts(deals.STANDARD_DECK))
    cards, sizes = np.empty((n, len(deck)), np.int8), np.empty((n, players), np.int32)
    positions.random_positions(np.uint64(1), deck, 0, cards, sizes)
    return cards, sizes, np.zeros(n, np.int32)


def game_positions(n, players):
    import beggar_env
    from beggar_env.cycles import backward

    rows = []
    state = backward.new_scratch_state(players, 52)
    for deal in beggar_env.random_deals(n, players, seed=1):
        cards, sizes, leader = deal.classes(), np.array(deal.hand_sizes, np.int32), 0
        while sizes.max() < len(cards) and len(rows) < n:
            rows.append((cards, sizes, leader))
            out_cards, out_sizes = np.empty_like(cards), np.empty_like(sizes)
            leader = backward.trick_after(state, cards, sizes, leader, out_cards, out_sizes)
            cards, sizes = out_cards, out_sizes
        if len(rows) >= n:
            break
    return tuple(np.array(column) for column in zip(*rows))


def best_rate(positions, threads, rounds=3):
    from beggar_env.cycles import backward

    backward.counts(*(column[:100] for column in positions), threads=threads)  # compile or load
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        counts = backward.counts(*positions, threads=threads)
        best = min(best, time.perf_counter() - began)
    return len(positions[0]) / best, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    print(f"{cpu_model()}, {usable_cpus()} usable CPUs, Python {platform.python_version()}")
    for name, make in (("random positions", random_positions), ("positions of random games", game_positions)):
        positions = make(args.positions if name.startswith("random") else args.positions // 10, args.players)
        rate, counts = best_rate(positions, args.threads)
        print(
            f"{args.players} players, {name} ({len(counts):,}): {fmt_rate(rate)}positions/s; "
            f"{(counts == 0).mean():.1%} have no predecessor, {counts.mean():.2f} on average"
        )


if __name__ == "__main__":
    main()

"""The cycle census's inner step: backward play, predecessors computed per second
(``beggar_env.cycles.backward.counts``).

Two kinds of positions, for the standard deck: random positions (a shuffled deck cut into
hands of any sizes, seat 0 leading: the census's ``random`` source, seed 1;
``--backward-positions`` of them), and the trick-start positions of random games
(``random_deals(..., seed=1)``, every position up to the game's end; a tenth as many).
Each is run once untimed (compiling), then timed: the best of three rounds. It prints the
date, the machine and its load average before and after, then the table of
``docs/cycles.md``, a row per number of players.
"""

import datetime
import platform
import time

import numpy as np

from .context import benchmark
from .machine import cpu_model, load_average, usable_cpus
from .printing import fmt_rate, section


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


def refused_by_the_payment_tail(positions):
    """The share of positions whose leader's hand fails the first short cut (``backward.payment_tail``:
    it does not end with a court card and its honour in numerals), so that they have no predecessor."""
    from beggar_env.cycles import backward

    cards, sizes, leaders = positions
    starts = np.concatenate([np.zeros((len(sizes), 1), np.int64), np.cumsum(sizes, axis=1)], axis=1)
    refused = [
        backward.payment_tail(cards[i], starts[i, leaders[i]], sizes[i, leaders[i]]) == 0 for i in range(len(cards))
    ]
    return float(np.mean(refused))


def best_rate(positions, threads, rounds=3):
    from beggar_env.cycles import backward

    backward.counts(*(column[:100] for column in positions), threads=threads)  # compile or load
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        counts = backward.counts(*positions, threads=threads)
        best = min(best, time.perf_counter() - began)
    return len(positions[0]) / best, counts


def cell(rate, counts, first=False, refused=None):
    share = f"{(counts == 0).mean():.1%}" + (" have no predecessor" if first else " none")
    if refused is not None:
        share += f", {refused:.1%} refused by the payment tail"
    return f"{fmt_rate(rate).strip()}/s ({share}, {counts.mean():.2f} on average; {len(counts):,} positions)"


@benchmark("backward", on_request=True)
def bench_backward(ctx):
    """Backward play (the census's step): predecessors/s of random positions and of random games' positions."""
    import numba

    import beggar_env

    n, threads = ctx.args.backward_positions, ctx.args.backward_threads
    players = ctx.args.backward_players
    section(
        f"backward: predecessors computed per second, {n:,} random positions, {', '.join(map(str, players))} players"
    )
    print(
        f"{datetime.date.today().isoformat()}; {cpu_model()}, {usable_cpus()} usable CPUs, load average "
        f"{load_average()} (1, 5, 15 min) at the start; Python {platform.python_version()}, numba "
        f"{numba.__version__}, numpy {np.__version__}, beggar-env {beggar_env.__version__}; --backward-positions "
        f"{n}, threads {threads or numba.config.NUMBA_NUM_THREADS}"
    )
    print()
    print("| players | random positions (a shuffled deck cut at random) | positions of random games |")
    print("|---|---|---|")
    headline = {}  # the first row's rates
    for n_players in players:
        cells = []
        for name, make in (("random positions", random_positions), ("positions of random games", game_positions)):
            positions = make(n if name.startswith("random") else n // 10, n_players)
            rate, counts = best_rate(positions, threads)
            refused = refused_by_the_payment_tail(positions) if name.startswith("random") else None
            cells.append(cell(rate, counts, first=n_players == players[0] and not cells, refused=refused))
            headline.setdefault(name, (n_players, rate))
        print(f"| {n_players} | {' | '.join(cells)} |", flush=True)
    print()
    print(f"load average {load_average()} at the end")
    (p, random_rate), (_, game_rate) = headline["random positions"], headline["positions of random games"]
    ctx.figure(
        f"backward play, {p} players: {fmt_rate(random_rate).strip()} random positions/s, "
        f"{fmt_rate(game_rate).strip()} positions of random games/s"
    )

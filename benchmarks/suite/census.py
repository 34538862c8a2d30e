"""The cycle census against a plain C census (``census``), and the census's inner step of
backward play, predecessors computed per second (``backward``,
``beggar_env.cycles.backward.counts``).

``census``: the same deals of the 28-card deck (two of each court card and 20 numerals,
2 players, deals 3,000,000,000 onwards in census order: 10,000,000 of them, 2,000,000 with
``--quick``) played by the project's census on one thread and by the plain C census of
``benchmarks/c_census/census.c`` (compiled here with the system's ``cc -O2``; without a C
compiler it says so and times the project alone), in turn, round after round, each keeping
its best CPU time; both must agree on the games, the ended ones and the longest game.

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
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from .context import benchmark
from .machine import cpu_model, load_average, usable_cpus
from .printing import fmt_rate, section, targets, verdict

C_CENSUS = Path(__file__).resolve().parents[1] / "c_census" / "census.c"
CENSUS_DECK = "JJQQKKAA" + "-" * 20  # 28 cards: 7,832,424,600 deals
CENSUS_FIRST = 3_000_000_000
CENSUS_TARGET_RATIO, CENSUS_TARGET_RATE = 1.0, 3e6  # issue 39's


def build_c_census(ctx):
    """The plain C census compiled with ``cc -O2`` (its path), or None, said why."""
    if not ctx.compiler:
        print("C census: skipped: no C compiler found (looked for $CC, cc, gcc on PATH)")
        return None
    program = Path(tempfile.mkdtemp(prefix="beggar_c_census_")) / "census"
    built = subprocess.run([ctx.compiler, "-O2", "-o", str(program), str(C_CENSUS)], capture_output=True, text=True)
    if built.returncode != 0:
        print(f"C census: skipped: {ctx.compiler} failed to build {C_CENSUS.name}:\n{built.stderr.strip()}")
        return None
    return program


def run_c_census(program, first, n):
    """The C census of deals ``first .. first + n - 1``: (games, ended, longest cards, its
    tricks, its index) and the CPU seconds its process took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [str(program), CENSUS_DECK, "2", str(first), str(n)], capture_output=True, text=True, check=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    *figures, _ = out.stdout.split()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return tuple(int(x) for x in figures), cpu


def run_project_census(first, n):
    """The project's census of the same deals on one thread: its figures and CPU seconds."""
    from beggar_env.cycles import census

    before = time.process_time()
    got = census.census(2, "every", deck=CENSUS_DECK, first=first, n=n, threads=1)
    cpu = time.process_time() - before
    return (got.games, got.ended, got.longest_cards, got.longest_tricks, got.longest_index), cpu


@benchmark("census", on_request=True)
def bench_census(ctx):
    """The census against a plain C census: deals per CPU-second on the 28-card deck, one thread each."""
    import numba

    import beggar_env

    n = 2_000_000 if ctx.args.quick else 10_000_000
    rounds = min(ctx.args.repeats, 3)
    section(f"census: the project's census against a plain C census, {n:,} deals of the 28-card deck, one thread each")
    print(
        f"{datetime.date.today().isoformat()}; {cpu_model()}, {usable_cpus()} usable CPUs, load average "
        f"{load_average()} at the start; Python {platform.python_version()}, numba {numba.__version__}, "
        f"beggar-env {beggar_env.__version__}; deck {CENSUS_DECK}, 2 players, deals {CENSUS_FIRST:,} onwards"
    )
    program = build_c_census(ctx)
    began = time.perf_counter()
    run_project_census(CENSUS_FIRST, 1000)  # compile or load
    print(f"warm-up (compile or cache load): {time.perf_counter() - began:.2f} s")
    contenders = {"project": run_project_census}
    if program is not None:
        print(f"C census built with: {Path(ctx.compiler).name} -O2 ({shutil.which(ctx.compiler) or ctx.compiler})")
        run_c_census(program, CENSUS_FIRST, 1000)
        contenders["C"] = lambda first, count: run_c_census(program, first, count)
    best, figures = {}, {}
    for _ in range(rounds):
        for name, run in contenders.items():
            figures[name], cpu = run(CENSUS_FIRST, n)
            best[name] = min(best.get(name, float("inf")), cpu)
    rate = {name: n / cpu for name, cpu in best.items()}
    games, ended, cards, tricks, index = figures["project"]
    print(f"{games:,} deals, {ended:,} end; longest {cards:,} cards, {tricks} tricks (deal {index:,})")
    print(f"project: {fmt_rate(rate['project']).strip()} deals per CPU-second (best of {rounds})")
    rows = [
        [
            "deals per CPU-second, 28 cards",
            fmt_rate(rate["project"]).strip(),
            "3.0 M",
            verdict(rate["project"], CENSUS_TARGET_RATE),
        ]
    ]
    if "C" in rate:
        if figures["C"] != figures["project"]:
            ctx.fail(f"census: the C census counts {figures['C']}, the project {figures['project']}")
        ratio = rate["project"] / rate["C"]
        print(f"C census: {fmt_rate(rate['C']).strip()} deals per CPU-second (best of {rounds}); the same counts: "
              f"{'yes' if figures['C'] == figures['project'] else 'NO'}")  # fmt: skip
        print(f"census per core vs C census: {ratio:.2f}×")
        rows.append(["census per core vs C census", f"{ratio:.2f}×", "1.0×", verdict(ratio, CENSUS_TARGET_RATIO)])
        ctx.figure(
            f"census, 28 cards, one thread: {fmt_rate(rate['project']).strip()} deals per CPU-second, "
            f"{ratio:.2f}× a plain C census ({fmt_rate(rate['C']).strip()})"
        )
    else:
        ctx.figure(f"census, 28 cards, one thread: {fmt_rate(rate['project']).strip()} deals per CPU-second (no C)")
    targets(rows)
    print(f"load average {load_average()} at the end")


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

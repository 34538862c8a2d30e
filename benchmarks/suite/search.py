"""The search: random search against ``simulate``, the Ray backend against the local one,
and local against random search by the longest deal each finds in the same time."""

import os
import time

import numpy as np

from .context import benchmark
from .machine import usable_cpus
from .printing import fmt_rate, section, table, targets, verdict
from .timing import interleaved_best

NESSLER = "---AJ--Q---------QAKQJJ-QK/-----A----KJ-K--------A---"


def search_top_from_results(runs, k):
    """(index, cards) of the k longest games that end, from simulate()'s results."""
    score = np.where(runs.outcome == 1, runs.cards, -1)
    order = np.lexsort((np.arange(len(runs)), -score))
    return [(int(i), int(score[i])) for i in order[:k] if score[i] >= 0]


@benchmark("search")
def bench_search(ctx):
    """beggar search: random search deals/s vs simulate games/s; the Ray backend vs the local one."""
    import beggar_env
    from beggar_env.search import search

    n = 10 * ctx.args.games
    seed, rounds, threads = ctx.args.seed, ctx.args.repeats, ctx.numba_threads
    section(f"search: random search vs simulate, {n:,} random 2-player deals (seed {seed}), best of {rounds}")
    t = time.perf_counter()
    search(2, deals=1000, seed=seed)
    beggar_env.simulate(1000, seed=seed)
    print(f"warm-up (compile or cache load): {time.perf_counter() - t:.2f} s")
    best = interleaved_best(
        {
            "search (random)": (lambda: search(2, deals=n, seed=seed, top=10), None, False),
            "simulate": (lambda: beggar_env.simulate(n, seed=seed), None, False),
        },
        rounds,
    )
    found = best["search (random)"][1].lists["cards"]
    if [(f.index, f.cards) for f in found] != search_top_from_results(best["simulate"][1], 10):
        ctx.fail("random search's top 10 by cards differs from the top 10 of simulate's results")
    rate = {name: n / seconds for name, (seconds, _, _) in best.items()}
    table(
        ["contender", "deals", "best s", "deals/s"],
        [[name, f"{n:,}", f"{best[name][0]:.3f}", fmt_rate(rate[name])] for name in best],
    )
    ratio = rate["search (random)"] / rate["simulate"]
    targets([["random search / simulate", f"{ratio:.2f}", ">= 0.9", verdict(ratio, 0.9)]], "ratio (deals/s)")
    print(f"(both on {threads} threads; the search's top 10 agree with simulate's results: the same games)")
    ctx.figure(
        f"random search: {fmt_rate(rate['search (random)'])} deals/s on {threads} threads, "
        f"{ratio:.2f}x simulate ({fmt_rate(rate['simulate'])} games/s)"
    )
    bench_search_ray(ctx, rate["search (random)"])


def bench_search_ray(ctx, local_rate):
    """The Ray backend on this machine's cores vs the local backend (start-up apart)."""
    try:
        import ray
    except ImportError:
        print("\nsearch on Ray: skipped: Ray is not installed (pip install -e '.[distributed]')")
        return
    import logging

    from beggar_env.search import search

    n = 20 * ctx.args.games
    cpus = usable_cpus()
    rounds = min(ctx.args.repeats, 2)
    section(f"search on Ray: a local Ray with {cpus} CPUs vs the local backend, {n:,} deals, best of {rounds}")
    t = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    ray_start = time.perf_counter() - t
    try:
        reports = {"local": [], "ray": []}

        def run(backend):
            report = search(2, deals=n, seed=ctx.args.seed, backend=backend)
            reports[backend].append(report)
            return report

        interleaved_best({"local": (lambda: run("local"), None, True), "ray": (lambda: run("ray"), None, True)}, rounds)
    finally:
        ray.shutdown()
    lists = {
        backend: [[(f.deal, f.index) for f in r.lists["cards"]] for r in runs] for backend, runs in reports.items()
    }
    if any(found != lists["local"][0] for runs in lists.values() for found in runs):
        ctx.fail("the Ray backend found other deals than the local one for the same seed and budget")
    rate = {backend: max(r.rate for r in runs) for backend, runs in reports.items()}
    startup = min(r.startup_seconds for r in reports["ray"])
    table(
        ["backend", "deals", "deals/s (best, start-up excluded)", "start-up s"],
        [["local", f"{n:,}", fmt_rate(rate["local"]), "0"], ["ray", f"{n:,}", fmt_rate(rate["ray"]), f"{startup:.1f}"]],
    )
    ratio = rate["ray"] / rate["local"]
    targets([["Ray / local backend", f"{ratio:.2f}", ">= 0.8", verdict(ratio, 0.8)]], "ratio (deals/s)")
    print(
        f"(ray.init: {ray_start:.1f} s, once; start-up per search: starting {cpus} workers and warming them; "
        "both backends found the same deals)"
    )
    ctx.figure(
        f"search on a local Ray ({cpus} workers): {fmt_rate(rate['ray'])} deals/s, {ratio:.2f}x the local backend "
        f"({fmt_rate(rate['local'])}); start-up {ray_start:.0f} s for ray.init + {startup:.0f} s for the workers"
    )


def neighbour_lengths(deal):
    """Cards played by every deal one swap of two cards of different classes away."""
    import beggar_env

    cards = deal.replace("/", "")
    cut = deal.index("/")
    neighbours = []
    for a in range(len(cards)):
        for b in range(a + 1, len(cards)):
            if cards[a] != cards[b]:
                swapped = list(cards)
                swapped[a], swapped[b] = swapped[b], swapped[a]
                neighbours.append("".join(swapped[:cut]) + "/" + "".join(swapped[cut:]))
    runs = beggar_env.simulate(neighbours)
    return runs.cards[runs.outcome == 1]


@benchmark("search-quality", on_request=True)
def bench_search_quality(ctx):
    """Local vs random search: the longest deal each finds in the same time (--search-minutes each)."""
    import beggar_env
    from beggar_env.search import search

    minutes, players, seed = ctx.args.search_minutes, ctx.args.search_players, 1
    section(f"search-quality: local vs random search, {players} players, {minutes:g} minutes each, seed {seed}")
    out = ctx.args.search_out
    if out is not None and os.path.exists(out):
        ctx.fail(f"--search-out {out} exists: give a new file")
        return
    search(players, deals=10, seed=seed, strategy="local", walk_steps=2)  # compile or load, untimed
    search(players, deals=10, seed=seed)
    reports = {}
    for strategy in ("local", "random"):
        reports[strategy] = search(
            players, strategy=strategy, minutes=minutes, seed=seed, out=out, resume=out is not None
        )
    rows = []
    for strategy, report in reports.items():
        cards, tricks = report.found["cards"][0], report.found["tricks"][0]
        cycles = len(report.found["cycle"])
        rows.append(
            [
                strategy,
                f"{report.deals:,}",
                fmt_rate(report.rate),
                f"{cards.cards:,}",
                f"{tricks.tricks:,}",
                str(cycles),
            ]
        )
    table(["strategy", "deals", "deals/s", "most cards", "most tricks", "cycles"], rows)
    for strategy, report in reports.items():
        print(f"{strategy:>6} longest: {report.found['cards'][0].deal} ({report.found['cards'][0].cards:,} cards)")
    local, random_ = reports["local"].found["cards"][0].cards, reports["random"].found["cards"][0].cards
    targets(
        [
            ["local best / random best (cards)", f"{local / random_:.2f}", "> 1", verdict(local / random_, 1.0001)],
            [f"local best, {players} players", f"{local:,}", ">= 6,000 (aim)", verdict(local, 6000)],
        ]
    )
    lengths = neighbour_lengths(NESSLER)
    baseline = beggar_env.simulate(100_000, seed=seed)
    print(
        f"why: the {len(lengths)} one-swap neighbours of Nessler's 8,344-card deal play {lengths.mean():.0f} cards on "
        f"average (longest {lengths.max():,}); 100,000 random deals: {baseline.cards.mean():.0f} "
        f"(longest {baseline.cards.max():,}): one swap leaves nothing of a long game"
    )
    ctx.figure(
        f"search quality, {players} players, {minutes:g} min each on {usable_cpus()} cores: local best "
        f"{local:,} cards ({reports['local'].deals:,} deals), "
        f"random best {random_:,} ({reports['random'].deals:,} deals)"
    )

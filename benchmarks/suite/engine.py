"""The engine: whole random games against the C and pure-Python references, the command
line's start-up, and parsing deal strings in bulk."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .context import benchmark
from .printing import fmt_rate, section, table, targets, verdict
from .references import as_columns, compare, load_python_reference, python_columns
from .timing import interleaved_best

KLEBER = "---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q"


@benchmark("throughput")
def bench_throughput(ctx):
    """Whole random 2-player games: engine vs the C reference vs pure Python."""
    import beggar_env

    cards, sizes = ctx.deals
    n = len(sizes)
    all_threads = ctx.numba_threads
    rounds = ctx.args.repeats
    section(f"throughput: {n:,} random 2-player deals (seed {ctx.args.seed}), best of {rounds}")

    t = time.perf_counter()
    beggar_env.simulate((cards[:64], sizes[:64]), threads=1)  # JIT compile / load the cache
    print(f"numba warm-up (compile or cache load): {time.perf_counter() - t:.2f} s")

    contenders = {
        "engine, 1 thread": (lambda: beggar_env.simulate((cards, sizes), threads=1), None, True),
        f"engine, {all_threads} threads": (
            lambda: beggar_env.simulate((cards, sizes), threads=all_threads),
            None,
            True,
        ),
    }
    lib = ctx.clib
    c_threads = None
    if lib is not None:
        c_threads = all_threads if ctx.c_openmp else None
        contenders["C, 1 thread"] = (lambda: ctx.c_play(cards, sizes, 1), None, True)
        if c_threads and c_threads > 1:
            contenders[f"C, {c_threads} threads"] = (lambda: ctx.c_play(cards, sizes, c_threads), None, True)

    play_reference, why = load_python_reference()
    py_n = min(n, ctx.args.python_games)
    if play_reference is not None and py_n > 0:
        py_hands = []
        for i in range(py_n):
            hands, start = [], 0
            for size in sizes[i]:
                hands.append(cards[i, start : start + size].tolist())
                start += size
            py_hands.append(hands)
        contenders["pure Python"] = (
            lambda: [play_reference([list(h) for h in hands]) for hands in py_hands],
            ctx.args.python_repeats,
            False,  # nothing to compile; spare the machine a run
        )

    best = interleaved_best(contenders, rounds)

    # Agreement: every run of every contender, against the engine's first 1-thread run.
    engine_name = "engine, 1 thread"
    want = as_columns(best[engine_name][1])
    agree = True
    for name, (_, _, runs) in best.items():
        py = name == "pure Python"
        for run in runs:
            got = python_columns(run) if py else as_columns(run)
            w = {f: v[: len(got["outcome"])] for f, v in want.items()}
            if not compare(ctx, name, got, w, cards, sizes):
                agree = False
                break

    rows = []
    for name, (seconds, first, _) in best.items():
        games = py_n if name == "pure Python" else n
        total_cards = int(want["cards"][:games].sum())
        rows.append([name, f"{games:,}", f"{seconds:.3f}", f"{games / seconds:,.0f}", fmt_rate(total_cards / seconds)])
    print()
    table(["implementation", "games", "best s", "games/s", "cards/s"], rows)
    if lib is None:
        print("C reference: skipped (see above)")
    elif not ctx.c_openmp:
        print("C, all cores: skipped: the C reference was built without OpenMP")
    if play_reference is None:
        print(f"pure Python: skipped: {why}")
    outcomes = np.bincount(want["outcome"], minlength=4)
    print(
        f"games: {outcomes[1]:,} won, {outcomes[2]:,} cycles; mean {want['cards'].mean():.1f} cards, "
        f"{want['tricks'].mean():.1f} tricks "
        "(cards/s counts the cards of each result: a cycle's up to its first repeat)"
    )
    print(f"agreement (outcome, winner, cards, tricks on every game each played): {'ok' if agree else 'FAILED'}")

    rate = {name: n / s if name != "pure Python" else py_n / s for name, (s, _, _) in best.items()}
    ratio_rows = []

    def ratio(label, a, b, target=None):
        if a in rate and b in rate:
            r = rate[a] / rate[b]
            ratio_rows.append(
                [
                    label,
                    f"{r:,.2f}",
                    "" if target is None else f">= {target}",
                    "" if target is None else verdict(r, target),
                ]
            )
        else:
            ratio_rows.append([label, "skipped", "" if target is None else f">= {target}", ""])

    ratio("engine 1 thread / C 1 thread", engine_name, "C, 1 thread", 0.9)
    ratio(f"engine {all_threads} threads / C 1 thread", f"engine, {all_threads} threads", "C, 1 thread", 1.7)
    if c_threads and c_threads > 1:
        ratio(
            f"engine {all_threads} threads / C {c_threads} threads",
            f"engine, {all_threads} threads",
            f"C, {c_threads} threads",
        )
    ratio("engine 1 thread / pure Python", engine_name, "pure Python")
    targets(ratio_rows, "ratio (games/s)")
    if lib is not None:
        print(f"C built with: {ctx.c_build} ({ctx.compiler_version()}); OpenMP: {'yes' if ctx.c_openmp else 'no'}")
    import numba

    print(f"numba threading layer: {numba.threading_layer()}")

    mean_cards = float(want["cards"].mean())
    line = (
        f"engine: {fmt_rate(rate[engine_name])} games/s ({fmt_rate(rate[engine_name] * mean_cards)} cards/s) "
        "on 1 thread"
    )
    line += f", {fmt_rate(rate[f'engine, {all_threads} threads'])} games/s on {all_threads} threads"
    if "C, 1 thread" in rate:
        line += f"; {rate[engine_name] / rate['C, 1 thread']:.2f}x the C reference (1 thread each)"
    if "pure Python" in rate:
        line += f"; {rate[engine_name] / rate['pure Python']:,.0f}x pure Python"
    ctx.figure(line)


@benchmark("cli")
def bench_cli(ctx):
    """Wall time of `beggar play DEAL` (the Kleber deal), warm cache, against `python -c "import numba"`."""
    section("cli: `beggar play` wall time (Kleber deal), warm cache, interleaved with `import numba`")
    exe = Path(sys.executable).with_name("beggar")
    exe = str(exe) if exe.exists() else shutil.which("beggar")
    if exe is None:
        print("beggar play: skipped: no `beggar` command (next to this Python or on PATH)")
        return
    commands = {
        "beggar play KLEBER": [exe, "play", KLEBER],
        'python -c "import numba"': [sys.executable, "-c", "import numba"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }

    def timed(cmd):
        def run():
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
                raise RuntimeError(f"{cmd[0]} exited with status {proc.returncode}: {last}")
            return proc

        return run

    try:
        best = interleaved_best({name: (timed(cmd), None, True) for name, cmd in commands.items()}, ctx.args.repeats)
    except (OSError, subprocess.TimeoutExpired, RuntimeError) as e:
        print(f"beggar play: skipped: {type(e).__name__}: {e}")
        return
    play, numba_import = best["beggar play KLEBER"][0], best['python -c "import numba"'][0]
    table(["command", "best seconds"], [[name, f"{best[name][0]:.3f}"] for name in commands])
    ratio = play / numba_import
    print(f"beggar play / import numba: {ratio:.2f} (target <= 1.5: {'ok' if ratio <= 1.5 else 'above target'})")
    out = best["beggar play KLEBER"][1].stdout.strip().splitlines()
    if out:
        print("output: " + out[0] + (" ..." if len(out) > 1 else ""))
    ctx.figure(
        f'beggar play (Kleber deal, warm cache): {play:.2f} s wall, {ratio:.2f}x `python -c "import numba"` '
        f"({numba_import:.2f} s)"
    )


@benchmark("parse")
def bench_parse(ctx):
    """simulate() on a list of deal strings: bulk parsing of compact notation against playing them."""
    import beggar_env
    from beggar_env.deals import pack_deals

    n = ctx.args.games * 5
    section(f"parse: simulate() on {n:,} compact deal strings: parsing against playing")
    texts = [beggar_env.format_deal(d, "compact") for d in beggar_env.random_deals(1000, seed=ctx.args.seed)]
    texts = texts * (n // len(texts))
    pack_deals(texts[:10])  # compile or load
    best = interleaved_best(
        {
            "parse (pack_deals, bulk)": (lambda: pack_deals(texts), None, True),
            "parse one by one (parse_deal)": (lambda: [beggar_env.parse_deal(t) for t in texts[: n // 20]], 1, False),
            "simulate(strings): parse and play": (lambda: beggar_env.simulate(texts), None, True),
        },
        ctx.args.repeats,
    )
    bulk = n / best["parse (pack_deals, bulk)"][0]
    one = (n // 20) / best["parse one by one (parse_deal)"][0]
    whole = n / best["simulate(strings): parse and play"][0]
    table(
        ["step", "deals/s"],
        [["parse in bulk", fmt_rate(bulk)], ["parse one by one", fmt_rate(one)], ["parse and play", fmt_rate(whole)]],
    )
    print(f"bulk / one by one: {bulk / one:.0f}x; parsing takes {whole / bulk:.0%} of simulate(strings)")
    ctx.figure(
        f"simulate on {n:,} deal strings: {fmt_rate(whole)} deals/s; bulk parsing {fmt_rate(bulk)} deals/s "
        f"({bulk / one:.0f}x parsing one by one)"
    )

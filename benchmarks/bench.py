"""Benchmarks for beggar-env.

    python benchmarks/bench.py [--games N] [--quick] [--only NAME] [--list]

Each benchmark is a function registered with ``@benchmark("name")`` that prints its own
section; they share one :class:`Context` (the options, the deals, the compiled C
reference), built lazily so that ``--only`` pays only for what it uses. A benchmark
that finds a wrong result calls ``ctx.fail(...)``; the script then exits with status 1.
Timings never fail the run: a target is printed with "ok" or "below target". Each
benchmark also records its headline numbers (``ctx.figure``), printed last as a block of
"README figures".

Timings: every contender is run once untimed first (numba's JIT compilation, caches,
page faults), then the contenders are run in turn, round after round, and each keeps
its best time: the machine may be shared, and interleaving spreads any slow patch over
everyone instead of landing on one contender.
"""

import argparse
import atexit
import copy
import ctypes
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from functools import cached_property
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
C_SOURCE = HERE / "beggar_ref.c"
KLEBER = "---JQ---K-A----A-J-K---QK-/-J-----------AJQA----K---Q"

BENCHMARKS = []  # (name, function, one-line description), in running order
ON_REQUEST = set()  # benchmarks that run only when --only names them (minutes long)


def benchmark(name, on_request=False):
    """Register ``function(ctx)`` as the benchmark ``name``; its docstring's first line
    describes it in ``--list``. ``on_request``: run only with ``--only name``."""

    def register(function):
        doc = (function.__doc__ or "").strip().splitlines()
        BENCHMARKS.append((name, function, doc[0] if doc else ""))
        if on_request:
            ON_REQUEST.add(name)
        return function

    return register


# ---------------------------------------------------------------------- helpers


def section(title):
    print()
    print(f"== {title} " + "=" * max(0, 86 - len(title)))


def fmt_rate(x):
    """A rate with a metric suffix: 512.3 k, 130.4 M."""
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if x >= scale:
            return f"{x / scale:.1f}{suffix}"
    return f"{x:.1f}  "


def verdict(value, target):
    """A target's verdict: timings never fail the run, they only say how they compare."""
    return "ok" if value >= target else "below target"


def targets(rows, first="target"):
    """Print target rows (what, its value, the target, the verdict) after an empty line."""
    print()
    table([first, "value", "target", ""], rows, ["<", ">", "<", "<"])


def table(header, rows, align=None):
    """Print rows (lists of strings) under header, columns left- or right-aligned."""
    align = align or ["<"] + [">"] * (len(header) - 1)
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(f"{str(c):{a}{w}}" for c, a, w in zip(r, align, widths))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def interleaved_best(contenders, rounds):
    """Run each contender once untimed (if asked), then ``rounds`` rounds of all of them in turn.

    ``contenders`` maps a name to (function, its rounds or None for all, whether to warm
    it up); returns {name: (best seconds, first timed result, [every timed result])}.
    """
    for fn, _, warm in contenders.values():
        if warm:
            fn()
    best = {name: (float("inf"), None, []) for name in contenders}
    for r in range(rounds):
        for name, (fn, own_rounds, _) in contenders.items():
            if own_rounds is not None and r >= own_rounds:
                continue
            time.sleep(0.05)  # let other threads (OpenMP, numba) go idle between runs
            t = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t
            seconds, first, runs = best[name]
            best[name] = (min(seconds, dt), first if first is not None else out, runs + [out])
    return best


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------------- context


class Context:
    """What the benchmarks share, built on first use."""

    def __init__(self, args):
        self.args = args
        self.failures = []
        self.figures = []  # one line per headline number, printed last as "README figures"

    def figure(self, line):
        self.figures.append(line)

    def fail(self, message):
        self.failures.append(message)
        print(f"FAIL: {message}")

    @cached_property
    def deals(self):
        """The packed random 2-player deals: (cards int8 [n, 52], hand_sizes int32 [n, 2]).

        Built straight from the engine's shuffled decks (seat p gets deck[p::2], the first
        card dealt on top), checked against ``pack_deals(random_deals(...))`` on a prefix.
        """
        from beggar_env import random_deals
        from beggar_env.core import CLASS_OF_CARD_ID
        from beggar_env.deals import pack_deals, shuffled_decks

        n, seed, n_players = self.args.games, self.args.seed, 2
        classes = CLASS_OF_CARD_ID[shuffled_decks(n, seed)]
        cards = np.ascontiguousarray(np.concatenate([classes[:, p::n_players] for p in range(n_players)], axis=1))
        sizes = np.full((n, n_players), classes.shape[1] // n_players, np.int32)
        sizes[:, : classes.shape[1] % n_players] += 1
        check = min(n, 500)
        ref_cards, ref_sizes = pack_deals(random_deals(check, n_players, seed))
        if not (np.array_equal(ref_cards, cards[:check]) and np.array_equal(ref_sizes, sizes[:check])):
            self.fail("packed deals differ from pack_deals(random_deals(...)): the benchmark's deals are wrong")
        return cards, sizes

    @cached_property
    def numba_threads(self):
        import numba

        return numba.config.NUMBA_NUM_THREADS

    @cached_property
    def compiler(self):
        return shutil.which(os.environ.get("CC", "cc")) or shutil.which("cc") or shutil.which("gcc")

    @cached_property
    def clib(self):
        """The C reference as a ctypes library, or None (printed why). Sets
        ``self.c_openmp`` and ``self.c_build``."""
        self.c_openmp = False
        self.c_build = ""
        if not self.compiler:
            print("C reference: skipped: no C compiler found (looked for $CC, cc, gcc on PATH)")
            return None
        build = Path(tempfile.mkdtemp(prefix="beggar_bench_"))
        atexit.register(shutil.rmtree, build, ignore_errors=True)
        lib_path = build / "beggar_ref.so"
        base = [self.compiler, "-O3", "-march=native", "-shared", "-fPIC", str(C_SOURCE), "-o", str(lib_path)]
        errors, built = "", False
        for flags in (["-fopenmp"], []):
            cmd = base[:5] + flags + base[5:]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True)
            except OSError as e:
                errors = str(e)
                break
            if proc.returncode == 0:
                built = True
                self.c_openmp = bool(flags)
                self.c_build = " ".join([Path(self.compiler).name] + base[1:5] + flags)
                break
            errors = proc.stderr.strip()
        if not built:
            print(f"C reference: skipped: {self.compiler} failed to build {C_SOURCE.name}:\n{errors}")
            return None
        lib = ctypes.CDLL(str(lib_path))
        i8 = np.ctypeslib.ndpointer(np.int8, flags="C_CONTIGUOUS")
        i32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")
        i64 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS")
        lib.play_many.argtypes = [ctypes.c_long, ctypes.c_int, i8, ctypes.c_long, i32, i8, i8, i64, i64]
        lib.play_many.restype = None
        lib.set_threads.argtypes = [ctypes.c_int]
        lib.set_threads.restype = None
        lib.max_threads.argtypes = []
        lib.max_threads.restype = ctypes.c_int
        return lib

    def compiler_version(self):
        try:
            out = subprocess.run([self.compiler, "--version"], capture_output=True, text=True).stdout
            return out.splitlines()[0].strip() if out else "?"
        except OSError:
            return "?"

    def c_play(self, cards, sizes, threads):
        """Play packed deals with the C reference on ``threads`` threads; returns a dict of
        arrays (outcome, winner, cards, tricks)."""
        lib = self.clib
        lib.set_threads(threads)
        n, n_players = sizes.shape
        out = {
            "outcome": np.empty(n, np.int8),
            "winner": np.empty(n, np.int8),
            "cards": np.empty(n, np.int64),
            "tricks": np.empty(n, np.int64),
        }
        lib.play_many(
            n, n_players, cards, cards.shape[1], sizes, out["outcome"], out["winner"], out["cards"], out["tricks"]
        )
        return out


FIELDS = ("outcome", "winner", "cards", "tricks")


def as_columns(results):
    """outcome/winner/cards/tricks as int64 arrays, from an engine recarray or a dict."""
    return {f: np.asarray(results[f], np.int64) for f in FIELDS}


def compare(ctx, name, got, want, cards, sizes):
    """Check ``got`` against ``want`` (column dicts) field by field; report mismatches."""
    bad = np.zeros(len(want["outcome"]), bool)
    for f in FIELDS:
        bad |= got[f] != want[f]
    if not bad.any():
        return True
    from beggar_env import Deal
    from beggar_env.core import OUTCOMES

    idx = np.flatnonzero(bad)
    ctx.fail(f"{name} disagrees with the engine on {len(idx)} of {len(bad)} games")
    for i in idx[:5]:
        hands, start = [], 0
        for size in sizes[i]:
            hands.append(cards[i, start : start + size].tolist())
            start += size
        show = lambda c: (OUTCOMES[c["outcome"][i]], int(c["winner"][i]), int(c["cards"][i]), int(c["tricks"][i]))
        print(f"    game {i} {Deal.from_classes(hands)}: {name} {show(got)}, engine {show(want)}")
    return False


def load_python_reference():
    """``tests/reference.py``'s ``play_reference``, or (None, why)."""
    path = REPO / "tests" / "reference.py"
    if not path.exists():
        return None, f"{path.relative_to(REPO)} not found"
    sys.path.insert(0, str(path.parent))
    try:
        from reference import play_reference
    except Exception as e:  # noqa: BLE001 (report anything), the other benchmarks go on
        return None, f"importing {path.relative_to(REPO)} failed: {type(e).__name__}: {e}"
    finally:
        sys.path.remove(str(path.parent))
    return play_reference, None


def python_columns(results):
    """Columns from the pure-Python reference's dicts (outcome as text or code, winner None or -1)."""
    from beggar_env.core import OUTCOMES

    cols = {f: [] for f in FIELDS}
    for r in results:
        outcome = r["outcome"]
        cols["outcome"].append(OUTCOMES.index(outcome) if isinstance(outcome, str) else int(outcome))
        cols["winner"].append(-1 if r["winner"] is None else int(r["winner"]))
        cols["cards"].append(int(r["cards"]))
        cols["tricks"].append(int(r["tricks"]))
    return {f: np.array(v, np.int64) for f, v in cols.items()}


# ------------------------------------------------------------------- benchmarks


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


# ---------------------------------------------------------------- environments


def register_trivial_env():
    """Register ``Trivial-v0``: Beggar-v0's spaces, and nothing else. Its reset and step
    return fresh copies of one fixed sample observation, reward 0.0, never ending: the
    cost of a step through ``gym.make``'s wrappers with no game behind it. (Defined here,
    not at the top, so that ``--list`` does not import gymnasium.)"""
    import gymnasium as gym

    if "Trivial-v0" in gym.registry:
        return

    class TrivialEnv(gym.Env):
        metadata = {"render_modes": []}

        def __init__(self, observation_space=None, action_space=None):
            if observation_space is None or action_space is None:
                beggar = gym.make("Beggar-v0").unwrapped
                if observation_space is None:
                    observation_space = beggar.observation_space
                if action_space is None:
                    action_space = beggar.action_space
            self.observation_space = copy.deepcopy(observation_space)
            self.action_space = copy.deepcopy(action_space)
            self.observation_space.seed(0)
            # As arrays, like Beggar-v0's: Box.sample() gives numpy scalars for shape ().
            self._sample = {
                k: np.array(v, self.observation_space[k].dtype) for k, v in self.observation_space.sample().items()
            }

        def _observation(self):
            return {k: v.copy() for k, v in self._sample.items()}

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self._observation(), {}

        def step(self, action):
            return self._observation(), 0.0, False, False, {}

    gym.register(id="Trivial-v0", entry_point=TrivialEnv)


@benchmark("env")
def bench_env(ctx):
    """Beggar-v0 steps/s (gymnasium's benchmark_step) vs a do-nothing env with its spaces."""
    import gymnasium as gym
    from gymnasium.utils.performance import benchmark_step

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    register_trivial_env()
    rounds = ctx.args.repeats
    duration = 0.2 if ctx.args.quick else 0.5
    section(f"env: single-env steps/s, gymnasium benchmark_step({duration} s), best of {rounds}")

    # The envs are made once and reused round after round: with numba's dispatch on record
    # dtypes a later instance can be a little slower than the first, which is not what
    # this compares.
    beggar = gym.make("Beggar-v0")
    trivial = gym.make(
        "Trivial-v0",
        observation_space=beggar.unwrapped.observation_space,
        action_space=beggar.unwrapped.action_space,
    )
    for env in (beggar, trivial):  # JIT, caches and the env checker's first-call checks
        env.reset(seed=ctx.args.seed)
        for _ in range(100):
            if env.step(env.action_space.sample())[2]:
                env.reset()
    contenders = {
        "Beggar-v0": (lambda: benchmark_step(beggar, target_duration=duration), None, True),
        "Trivial-v0 (does nothing)": (lambda: benchmark_step(trivial, target_duration=duration), None, True),
    }
    best = interleaved_best(contenders, rounds)
    rate = {name: max(runs) for name, (_, _, runs) in best.items()}
    spread = {name: min(runs) for name, (_, _, runs) in best.items()}
    table(
        ["env (gym.make, default wrappers)", "steps/s (best)", "worst round", "us/step"],
        [[name, f"{rate[name]:,.0f}", f"{spread[name]:,.0f}", f"{1e6 / rate[name]:.2f}"] for name in rate],
    )
    ratio = rate["Beggar-v0"] / rate["Trivial-v0 (does nothing)"]
    targets([["Beggar-v0 / Trivial-v0", f"{ratio:.2f}", ">= 0.7", verdict(ratio, 0.70)]], "ratio (steps/s)")
    print(
        "(Trivial-v0: Beggar-v0's spaces; reset/step return copies of one fixed sample, reward 0.0, never ending;"
        " both step with action_space.sample() as benchmark_step does)"
    )
    ctx.figure(
        f"Beggar-v0 single env: {rate['Beggar-v0'] / 1e3:,.0f} k steps/s (gymnasium benchmark_step), "
        f"{ratio:.2f}x a do-nothing env with the same spaces ({rate['Trivial-v0 (does nothing)'] / 1e3:,.0f} k steps/s)"
    )


def steps_for(step, seconds):
    """How many calls of ``step()`` take about ``seconds`` (at least 1), timed on a few."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t
        if dt >= min(0.05, seconds / 4):
            return max(1, int(n * seconds / dt))
        n *= 4


@benchmark("vector")
def bench_vector(ctx):
    """The native vector env (gym.make_vec) vs SyncVectorEnv, env-steps/s at 1 to 8192 envs."""
    import gc

    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    quick = ctx.args.quick
    sizes = (1, 64, 1024, 8192)
    rounds = ctx.args.repeats
    sync_rounds = min(rounds, 3)
    native_round_s = 0.1 if quick else 0.25
    sync_total_s = 0.5 if quick else 1.5  # the slow baseline's timed steps, all its rounds together, per N
    options = dict(observation="public", step_unit="card", forecast="label")
    section(
        f"vector: env-steps/s, {', '.join(f'{k}={v}' for k, v in options.items())}; native best of {rounds} "
        f"(~{native_round_s} s each), SyncVectorEnv best of {sync_rounds} (~{sync_total_s} s in all per N)"
    )
    rng = np.random.default_rng(ctx.args.seed)
    rows, rate, native_class = [], {}, None
    for n in sizes:
        actions = rng.integers(0, 3, n, dtype=np.int64)  # fixed random labels: no sampling in the timings
        native = gym.make_vec("Beggar-v0", num_envs=n, **options)
        native_class = type(native).__name__
        t = time.perf_counter()
        sync = gym.vector.SyncVectorEnv([lambda: gym.make("Beggar-v0", **options)] * n)
        sync_make = time.perf_counter() - t
        native.reset(seed=ctx.args.seed)
        sync.reset(seed=ctx.args.seed)
        # Warm-up: the JIT (or its cache), and the env checker's first-step checks of each
        # of Sync's envs; then a fixed number of steps per round, from timing a few more.
        for _ in range(3):
            native.step(actions)
        sync.step(actions)
        native_steps = steps_for(lambda: native.step(actions), native_round_s)
        sync_steps = steps_for(lambda: sync.step(actions), sync_total_s / sync_rounds)

        def run(env, steps):
            for _ in range(steps):
                env.step(actions)

        best = interleaved_best(
            {
                "native": (lambda: run(native, native_steps), None, False),
                "sync": (lambda: run(sync, sync_steps), sync_rounds, False),
            },
            rounds,
        )
        rate[n] = {"native": native_steps * n / best["native"][0], "sync": sync_steps * n / best["sync"][0]}
        rows.append(
            [
                f"{n:,}",
                f"{native_steps:,}",
                fmt_rate(rate[n]["native"]),
                f"{sync_steps:,}",
                fmt_rate(rate[n]["sync"]),
                f"{rate[n]['native'] / rate[n]['sync']:,.1f}x",
                f"{sync_make:.1f}",
            ]
        )
        native.close()
        sync.close()
        native = sync = None  # free them before the next size
        gc.collect()
    table(
        [
            "num_envs",
            "native steps",
            "native env-steps/s",
            "Sync steps",
            "Sync env-steps/s",
            "native/Sync",
            "Sync make s",
        ],
        rows,
    )
    print(
        f"(native: gym.make_vec -> {native_class}; Sync: gymnasium.vector.SyncVectorEnv over gym.make('Beggar-v0');"
        " steps = vector steps per timed round, env-steps = steps x num_envs, autoresets included)"
    )
    top, mid = sizes[-1], 1024
    target_rows = [
        [
            f"native env-steps/s at {top:,} envs",
            fmt_rate(rate[top]["native"]),
            ">= 10.0 M",
            verdict(rate[top]["native"], 10e6),
        ],
        [
            f"native/Sync at {mid:,} envs",
            f"{rate[mid]['native'] / rate[mid]['sync']:,.1f}x",
            ">= 50x",
            verdict(rate[mid]["native"] / rate[mid]["sync"], 50),
        ],
    ]
    targets(target_rows)
    ctx.figure(
        f"native vector env: {fmt_rate(rate[top]['native'])} env-steps/s at {top:,} envs, "
        f"{fmt_rate(rate[mid]['native'])} at {mid:,}; {rate[mid]['native'] / rate[mid]['sync']:,.0f}x "
        f"SyncVectorEnv at {mid:,} envs ({rate[top]['native'] / rate[top]['sync']:,.0f}x at {top:,})"
    )


@benchmark("counted")
def bench_counted(ctx):
    """The vector env's step with observation="counted" against "public", in the same run."""
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    n = 1024 if ctx.args.quick else 8192
    section(f"counted: vector env steps, {n:,} envs, observation='counted' against 'public'")
    rng = np.random.default_rng(ctx.args.seed)
    actions = rng.integers(0, 3, n, dtype=np.int64)
    envs = {
        (level, copy): gym.make_vec("Beggar-v0", num_envs=n, observation=level, copy=copy)
        for copy in (True, False)
        for level in ("public", "counted")
    }
    for env in envs.values():
        env.reset(seed=ctx.args.seed)
    steps = steps_for(lambda: envs["public", True].step(actions), 0.1 if ctx.args.quick else 0.3)

    def run(env):
        def steps_of(env):
            for _ in range(steps):  # kept by no one: interleaved_best keeps what a round returns
                env.step(actions)

        return lambda: steps_of(env)

    best = interleaved_best({key: (run(env), None, True) for key, env in envs.items()}, ctx.args.repeats)
    rate = {key: steps * n / best[key][0] for key in envs}
    ratio = {copy: rate["public", copy] / rate["counted", copy] for copy in (True, False)}
    table(
        ["observation", "copy", "env-steps/s"], [[level, str(copy), fmt_rate(r)] for (level, copy), r in rate.items()]
    )
    print(
        f"time per step, counted / public: {ratio[True]:.2f} (target <= 1.5: "
        f"{'ok' if ratio[True] <= 1.5 else 'above target'}); with copy=False (no fresh arrays): {ratio[False]:.2f}"
    )
    ctx.figure(
        f"vector env, {n:,} envs: counted observation {fmt_rate(rate['counted', True])} env-steps/s, "
        f"{ratio[True]:.2f}x the public one's time per step ({fmt_rate(rate['public', True])}); with copy=False "
        f"{fmt_rate(rate['counted', False])}, {ratio[False]:.2f}x ({fmt_rate(rate['public', False])})"
    )


@benchmark("bayes")
def bench_bayes(ctx):
    """The Bayes forecaster (K=256) on random 2-player positions: positions/s, and its
    rollouts' cards/s against simulate's cards/s in the same run."""
    import beggar_env
    from beggar_env import datasets
    from beggar_env.forecasting import forecasters

    games = 100 if ctx.args.quick else 400
    section(f"bayes: BayesMC(k=256) on every card step of {games} random 2-player games, against simulate")
    data = datasets.generate(games, observation="counted", seed=ctx.args.seed)
    obs = data.fields
    bayes = forecasters.BayesMC(2, k=256, seed=ctx.args.seed)
    bayes.predict_proba({name: value[:64] for name, value in obs.items()})  # compile or load
    n_sim = ctx.args.games

    def forecast():
        before = bayes.cards_played
        bayes.predict_proba(obs)
        return bayes.cards_played - before

    def play():
        return int(beggar_env.simulate(n_sim, seed=ctx.args.seed).cards.sum())

    best = interleaved_best({"bayes": (forecast, None, True), "simulate": (play, None, True)}, ctx.args.repeats)
    positions_s = len(data) / best["bayes"][0]
    bayes_cards = best["bayes"][1] / best["bayes"][0]
    sim_cards = best["simulate"][1] / best["simulate"][0]
    open_share = float(((obs["unseen"] > 0).sum(axis=1) >= 2).mean())
    table(
        ["what", "figure"],
        [
            ["positions", f"{len(data):,} ({open_share:.0%} open: 256 rollouts each; the rest 1)"],
            ["Bayes positions/s", fmt_rate(positions_s)],
            ["Bayes rollout cards/s", fmt_rate(bayes_cards)],
            [f"simulate({n_sim:,}) cards/s", fmt_rate(sim_cards)],
        ],
    )
    ratio = bayes_cards / sim_cards
    print(
        f"positions/s: {positions_s:,.0f} (target >= 8,000: {'ok' if positions_s >= 8000 else 'below target'}); "
        f"cards/s ratio {ratio:.2f} (target >= 0.5: {'ok' if ratio >= 0.5 else 'below target'})"
    )
    ctx.figure(
        f"Bayes forecaster, k=256, 2 players: {fmt_rate(positions_s)} positions/s; its rollouts play "
        f"{fmt_rate(bayes_cards)} cards/s, {ratio:.2f}x simulate's {fmt_rate(sim_cards)}"
    )


@benchmark("sequence")
def bench_sequence(ctx):
    """A recurrent forecaster (GRU, 128 units, public) acting in the vector env at 1,024 envs
    against the env stepping alone, and its training steps/s (torch on one thread)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("sequence: skipped: torch is not installed (pip install 'beggar-env[rl]')")
        return
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)
    from beggar_env.forecasting import sequence_models

    n = 128 if ctx.args.quick else 1024
    section(f"sequence: a GRU forecaster (128 units, public) in the vector env, {n:,} envs, against the env alone")
    forecaster = sequence_models.SequenceForecaster(2, "public", "gru", hidden=128, seed=ctx.args.seed)
    forecaster.model = forecaster.new_model().eval()
    envs = {key: gym.make_vec("Beggar-v0", num_envs=n, forecast="probs") for key in ("alone", "forecaster")}
    obs = {}
    for key, env in envs.items():
        obs[key], _ = env.reset(seed=ctx.args.seed)
    uniform = np.full((n, 3), 1 / 3, np.float32)

    def alone():
        for _ in range(steps):
            envs["alone"].step(uniform)

    def forecasting():
        for _ in range(steps):
            obs["forecaster"], *_ = envs["forecaster"].step(forecaster.act(obs["forecaster"], "probs"))

    steps = 20
    forecasting()  # warm-up
    steps = steps_for(forecasting, 0.2 if ctx.args.quick else 1.0)
    best = interleaved_best({"alone": (alone, None, True), "forecaster": (forecasting, None, False)}, ctx.args.repeats)
    rate = {key: steps * n / best[key][0] for key in best}

    training = sequence_models.SequenceForecaster(
        2, "public", "gru", hidden=128, games=200 if ctx.args.quick else 1000, epochs=2, val_games=20, seed=1
    )
    training.fit()
    first, second = training.history
    train_rate = second["steps"] / (second["seconds"] - first["seconds"])  # the second epoch: nothing to compile
    table(
        ["what", "steps/s"],
        [
            ["vector env alone (probs)", fmt_rate(rate["alone"])],
            ["vector env + GRU act", fmt_rate(rate["forecaster"])],
            ["GRU training (lanes 128, windows of 128 steps)", fmt_rate(train_rate)],
        ],
    )
    print(
        f"forecasts/s at {n:,} envs: {fmt_rate(rate['forecaster'])} (target >= 100 k: "
        f"{'ok' if rate['forecaster'] >= 1e5 else 'below target'}); {rate['alone'] / rate['forecaster']:.1f}x the "
        f"time of the env alone"
    )
    ctx.figure(
        f"GRU forecaster in the vector env, {n:,} envs: {fmt_rate(rate['forecaster'])} forecasts/s, "
        f"{rate['alone'] / rate['forecaster']:.1f}x the env alone's time ({fmt_rate(rate['alone'])}); "
        f"training {fmt_rate(train_rate)} steps/s"
    )


@benchmark("dataset")
def bench_dataset(ctx):
    """beggar_env.datasets.generate: samples/s on 1 thread and on all threads."""
    import gc
    import inspect

    quick = ctx.args.quick
    n_games = 2_000 if quick else 20_000
    rounds = min(ctx.args.repeats, 3)
    all_threads = ctx.numba_threads
    kwargs = dict(n_players=2, observation="public", samples="card", seed=1)
    section(
        f"dataset: datasets.generate({n_games:,} games, {', '.join(f'{k}={v!r}' for k, v in kwargs.items())}),"
        f" best of {rounds}"
    )
    try:
        from beggar_env import datasets

        generate = datasets.generate
        params = inspect.signature(generate).parameters
    except Exception as e:  # noqa: BLE001 (a module may fail in any way)
        print(f"dataset: skipped: beggar_env.datasets.generate is not usable: {type(e).__name__}: {e}")
        return
    if "threads" not in params:
        print("dataset: skipped: beggar_env.datasets.generate takes no threads= argument")
        return

    nbytes = {}

    def samples(n, threads):
        """Generate, count the samples, and let the dataset go (each is ~ a GB at full size)."""
        dataset = generate(n, threads=threads, **kwargs)
        count = len(dataset)
        observations = getattr(dataset, "observations", None)
        nbytes[n] = getattr(observations, "nbytes", None)
        del dataset, observations
        gc.collect()
        return count

    try:
        t = time.perf_counter()
        samples(64, 1)
        samples(64, all_threads)
        warm = time.perf_counter() - t
        contenders = {"1 thread": (lambda: samples(n_games, 1), None, False)}
        if all_threads > 1:
            contenders[f"{all_threads} threads"] = (lambda: samples(n_games, all_threads), None, False)
        best = interleaved_best(contenders, rounds)
    except Exception as e:  # noqa: BLE001
        print(f"dataset: skipped: generate(...) failed: {type(e).__name__}: {e}")
        return
    print(f"warm-up (JIT compile or cache load, 64 games on 1 and {all_threads} threads): {warm:.2f} s")
    rows, rate = [], {}
    counts = {name: set(runs) for name, (_, _, runs) in best.items()}
    for name, (seconds, count, _) in best.items():
        rate[name] = count / seconds
        rows.append(
            [name, f"{n_games:,}", f"{count:,}", f"{seconds:.3f}", fmt_rate(rate[name]), fmt_rate(n_games / seconds)]
        )
    table(["threads", "games", "samples", "best s", "samples/s", "games/s"], rows)
    if len(set().union(*counts.values())) > 1:
        print(f"note: the sample counts differ between runs: {counts}")
    if nbytes.get(n_games):
        print(
            f"observations: {nbytes[n_games] / 2**20:,.0f} MiB per dataset "
            f"({nbytes[n_games] / best['1 thread'][1]:.0f} bytes a sample); one dataset alive at a time"
        )
    top = f"{all_threads} threads" if all_threads > 1 else "1 thread"
    targets([[f"samples/s on {top}", fmt_rate(rate[top]), ">= 5.0 M", verdict(rate[top], 5e6)]])
    line = f"datasets.generate (public, one sample per card): {fmt_rate(rate[top])} samples/s on {top}"
    if all_threads > 1:
        line += f", {fmt_rate(rate['1 thread'])} on 1 thread"
    ctx.figure(line)


# The command run with its own peak RSS reported (VmHWM: the rusage of a child counts what it
# shared with this process before exec).
PEAK_RSS = """
import atexit, runpy, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("peak-rss-kib " + line.split()[1] + "\\n")
atexit.register(peak)
sys.argv = ["beggar", *sys.argv[1:]]
runpy.run_module("beggar_env.cli", run_name="__main__")
"""
BEGGAR = [sys.executable, "-c", PEAK_RSS]


def run_measured(args):
    """Run ``beggar *args``; return (exit status, wall seconds, peak RSS in bytes or None, stdout)."""
    t = time.perf_counter()
    run = subprocess.run([*BEGGAR, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - t
    peaks = [int(line.split()[1]) * 1024 for line in run.stderr.splitlines() if line.startswith("peak-rss-kib ")]
    return run.returncode, seconds, peaks[-1] if peaks else None, run.stdout


def folder_bytes(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


@benchmark("parquet")
def bench_parquet(ctx):
    """Streaming to Parquet shards vs in-memory datasets.generate (same run); peak RSS; writing and reading."""
    import gc

    try:
        from beggar_env import datasets
        from beggar_env.datasets import shards

        shards.require_pyarrow()
    except ImportError as e:
        print(f"parquet: skipped: {e}")
        return
    quick = ctx.args.quick
    n_games = 2_000 if quick else 20_000
    rounds = min(ctx.args.repeats, 3)
    threads = ctx.numba_threads
    kwargs = dict(n_players=2, observation="public", samples="card", seed=1)
    section(f"parquet: {n_games:,} games, every card, public, 2 players, {threads} threads, best of {rounds}")
    work = Path(tempfile.mkdtemp(prefix="beggar_bench_parquet_"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    expected = datasets.generate(n_games, **kwargs)
    meta = shards.generate(work / "check", n_games, **kwargs)
    same = all(
        np.array_equal(getattr(datasets.load(work / "check"), n), getattr(expected, n))
        for n in ("observations", "game")
    )
    if not same:
        ctx.fail("the Parquet shards read back differ from datasets.generate's samples")
    n_samples = len(expected)
    del expected
    gc.collect()

    def in_memory():
        n = len(datasets.generate(n_games, threads=threads, **kwargs))
        gc.collect()
        return n

    def streamed():
        shutil.rmtree(work / "run", ignore_errors=True)
        return shards.generate(work / "run", n_games, threads=threads, **kwargs)["n_samples"]

    best = interleaved_best({"in memory": (in_memory, None, True), "streamed": (streamed, None, True)}, rounds)
    rate = {name: count / seconds for name, (seconds, count, _) in best.items()}
    ratio = rate["streamed"] / rate["in memory"]
    table(
        ["", "samples", "best s", "samples/s"],
        [[name, f"{count:,}", f"{seconds:.3f}", fmt_rate(rate[name])] for name, (seconds, count, _) in best.items()],
    )
    print(f"on disk: {meta['bytes'] / 2**20:,.1f} MiB, {meta['bytes'] / n_samples:.1f} bytes a sample (lz4)")

    rss = {}
    for label, out in (("streamed (--out DIR)", work / "rss"), ("in memory (--out FILE.npz)", work / "rss.npz")):
        status, _, peak, _ = run_measured(["dataset", "--games", str(n_games), "--seed", "1", "--out", str(out)])
        if status != 0:
            ctx.fail(f"beggar dataset --out {out.name} exited with status {status}")
        rss[label] = peak
    print(
        "peak RSS of `beggar dataset`: " + ", ".join(f"{label} {peak / 2**20:,.0f} MiB" for label, peak in rss.items())
    )
    targets([["streamed / in-memory samples/s", f"{ratio:.2f}x", ">= 0.5x", verdict(ratio, 0.5)]])
    import pyarrow.parquet as pq

    samples = pq.read_table(next(Path(work, "check", "samples").glob("*.parquet"))).combine_chunks()
    bench_parquet_writing(samples, work / "check", rate["in memory"] / threads)
    bench_parquet_reading(samples, work / "check")
    ctx.figure(
        f"Parquet shards: {fmt_rate(rate['streamed'])} samples/s streamed, {ratio:.2f}x in-memory generate "
        f"({fmt_rate(rate['in memory'])}); peak RSS {rss['streamed (--out DIR)'] / 2**20:,.0f} MiB "
        f"({n_games:,} games); {meta['bytes'] / n_samples:.1f} bytes a sample"
    )


def _pile_slots(samples):
    """The names of a samples table's pile slot columns, and their values as (rows, slots)."""
    pile = [name for name in samples.column_names if name.startswith("pile_") and name != "pile_size"]
    return pile, np.stack([samples.column(name).to_numpy() for name in pile], axis=1)


def bench_parquet_reading(samples, folder):
    """Reading one set of samples (a table, written in ``folder``) two ways: one column
    per slot (the package's layout) and the pile as a fixed-size list column; pyarrow,
    pandas and polars."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_samples = samples.num_rows
    pile, slots = _pile_slots(samples)
    as_list = pa.FixedSizeListArray.from_arrays(pa.array(slots.ravel()), len(pile))
    listed = samples.drop_columns(pile).append_column("pile", as_list)
    files = {
        "one column per slot": Path(folder, "slots.parquet"),
        "pile as a fixed-size list": Path(folder, "list.parquet"),
    }
    from beggar_env.datasets.shards import SAMPLE_OPTIONS

    options = {**SAMPLE_OPTIONS, "write_statistics": False}
    pq.write_table(samples, files["one column per slot"], **options)
    pq.write_table(listed, files["pile as a fixed-size list"], **options)
    readers = {"pyarrow": lambda path: pq.read_table(path)}
    for module, read in (("pandas", "read_parquet"), ("polars", "read_parquet")):
        try:
            readers[module] = getattr(__import__(module), read)
        except ImportError:
            print(f"reading: {module} is not installed: skipped")
    contenders = {
        f"{reader}, {layout}": (lambda r=r, p=p: r(p), None, True)
        for layout, p in files.items()
        for reader, r in readers.items()
    }
    best = interleaved_best(contenders, 3)
    print()
    print(f"reading {n_samples:,} samples into memory (best of 3):")
    table(
        ["reader, layout", "best s", "samples/s", "file MiB"],
        [
            [
                name,
                f"{seconds:.3f}",
                fmt_rate(n_samples / seconds),
                f"{files[name.split(', ', 1)[1]].stat().st_size / 2**20:.1f}",
            ]
            for name, (seconds, _, _) in best.items()
        ],
    )


def bench_parquet_writing(samples, folder, generated_per_core):
    """Writing one set of samples with the package's options, with others, and with the
    pile laid out otherwise; and the ceiling each puts on streaming.

    Streaming does the in-memory work (g seconds a sample on a core) plus the encoding (e
    on a core), so on any number of cores it reaches at most g / (g + e) of the in-memory
    rate: the "ceiling" column, with g from the in-memory run above."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beggar_env.datasets.shards import SAMPLE_OPTIONS

    n_samples = samples.num_rows
    pile, slots = _pile_slots(samples)
    pile_sizes = samples.column("pile_size").to_numpy()
    cards = slots[np.arange(len(pile)) < pile_sizes[:, None]]
    offsets = np.concatenate([[0], np.cumsum(pile_sizes)]).astype(np.int32)
    as_bytes = pa.BinaryArray.from_buffers(
        pa.binary(), len(pile_sizes), [None, pa.py_buffer(offsets), pa.py_buffer(cards)]
    )
    tables = {
        "one column per slot": samples,
        "pile as bytes": samples.drop_columns(pile).append_column("pile", as_bytes),
    }
    tables["no pile"] = samples.drop_columns(pile)
    default_batches = {name: value for name, value in SAMPLE_OPTIONS.items() if name != "write_batch_size"}
    ways = {
        "lz4, no dictionaries, batches of 64 k (the package's)": ("one column per slot", SAMPLE_OPTIONS),
        "lz4, no dictionaries, pyarrow's batches (1 k)": ("one column per slot", default_batches),
        "zstd, dictionaries": ("one column per slot", dict(compression="zstd", use_dictionary=True)),
        "pyarrow's defaults (snappy, dictionaries)": ("one column per slot", {}),
        "the package's options, the pile as one bytes column": ("pile as bytes", SAMPLE_OPTIONS),
        "the package's options, no pile at all": ("no pile", SAMPLE_OPTIONS),
    }
    out = Path(folder, "written.parquet")
    sizes = {}

    def write(name):
        layout, options = ways[name]
        pq.write_table(tables[layout], out, **options)
        sizes[name] = out.stat().st_size

    best = interleaved_best({name: (lambda n=name: write(n), None, True) for name in ways}, 3)
    print()
    print(
        f"writing {n_samples:,} samples, one thread (best of 3); "
        f"in-memory generate: {fmt_rate(generated_per_core)}/s a core:"
    )
    table(
        ["options", "best s", "samples/s", "bytes a sample", "ceiling"],
        [
            [
                name,
                f"{seconds:.3f}",
                fmt_rate(n_samples / seconds),
                f"{sizes[name] / n_samples:.1f}",
                f"{1 / (1 + generated_per_core * seconds / n_samples):.2f}x",
            ]
            for name, (seconds, _, _) in best.items()
        ],
    )


@benchmark("parquet-scale", on_request=True)
def bench_parquet_scale(ctx):
    """`beggar dataset --games 1000000 --out DIR` (every card, public): time, peak RSS, disk."""
    n_games = 100_000 if ctx.args.quick else 1_000_000
    section(f"parquet-scale: beggar dataset --games {n_games:,} --seed 1 --out DIR (every card, public, 2 players)")
    work = Path(tempfile.mkdtemp(prefix="beggar_bench_scale_"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    status, seconds, peak, stdout = run_measured(
        ["dataset", "--games", str(n_games), "--seed", "1", "--out", str(work / "d"), "--no-progress"]
    )
    if status != 0:
        ctx.fail(f"beggar dataset exited with status {status}")
        return
    size = folder_bytes(work / "d")
    n_samples = int(stdout.split(" samples", 1)[0].split()[-1].replace(",", ""))
    print(stdout.strip())
    targets(
        [
            ["wall time", f"{seconds:.0f} s", "<= 600 s", verdict(600, seconds)],
            ["peak RSS", f"{peak / 2**30:.2f} GiB", "<= 2 GiB", verdict(2**31, peak)],
        ]
    )
    print(f"disk: {size / 2**30:.2f} GiB for {n_samples:,} samples, {size / n_samples:.1f} bytes a sample")
    ctx.figure(
        f"beggar dataset, {n_games:,} games to Parquet: {seconds:.0f} s, peak RSS {peak / 2**20:,.0f} MiB, "
        f"{size / 2**30:.2f} GiB ({size / n_samples:.1f} bytes a sample, {n_samples:,} samples)"
    )


# ---------------------------------------------------------------------- search

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


# -------------------------------------------------------------------------- main


def print_machine():
    import numba

    print("beggar-env benchmarks")
    print(f"python   {platform.python_implementation()} {platform.python_version()} ({sys.executable})")
    print(f"platform {platform.platform()}")
    print(f"cpu      {cpu_model()}; {os.cpu_count()} CPUs, {usable_cpus()} usable")
    print(f"numba    {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads); numpy {np.__version__}")


def main(argv=None):
    names = [name for name, _, _ in BENCHMARKS]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=None, help="random deals to play (default 200000; --quick: 20000)")
    parser.add_argument("--quick", action="store_true", help="fewer games and repeats: a smoke run")
    parser.add_argument("--only", choices=names, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--seed", type=int, default=20240501, help="seed of the random deals")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5; --quick: 2)")
    parser.add_argument(
        "--python-games", type=int, default=None, help="games for pure Python (default 2000; --quick: 200)"
    )
    parser.add_argument("--python-repeats", type=int, default=None, help="timed rounds for pure Python (default: all)")
    parser.add_argument(
        "--search-minutes",
        type=float,
        default=None,
        help="search-quality: minutes per strategy (default 10; --quick: 0.5)",
    )
    parser.add_argument("--search-players", type=int, default=2, help="search-quality: players (default 2)")
    parser.add_argument("--search-out", default=None, help="search-quality: keep the finds in this JSON-lines file")
    args = parser.parse_args(argv)
    if args.list:
        for name, _, doc in BENCHMARKS:
            print(f"{name:14} {doc}{' (only with --only)' if name in ON_REQUEST else ''}")
        return 0
    quick = args.quick
    args.games = args.games if args.games is not None else (20_000 if quick else 200_000)
    args.repeats = args.repeats if args.repeats is not None else (2 if quick else 5)
    args.python_games = args.python_games if args.python_games is not None else (200 if quick else 2000)
    args.search_minutes = args.search_minutes if args.search_minutes is not None else (0.5 if quick else 10.0)
    if args.games < 1 or args.repeats < 1:
        parser.error("--games and --repeats must be at least 1")

    print_machine()
    ctx = Context(args)
    started = time.perf_counter()
    for name, function, _ in BENCHMARKS:
        if (args.only and name not in args.only) or (not args.only and name in ON_REQUEST):
            continue
        function(ctx)
    print()
    print(f"total {time.perf_counter() - started:.1f} s")
    if ctx.figures:
        section("README figures")
        print(f"machine: {cpu_model()}, {usable_cpus()} usable CPUs, numba {ctx.numba_threads} threads")
        for line in ctx.figures:
            print(line)
    if ctx.failures:
        print(f"{len(ctx.failures)} failure(s):")
        for failure in ctx.failures:
            print(f"  {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

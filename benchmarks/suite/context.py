"""What the benchmarks share: their registry and one :class:`Context` (the options, the
deals, the compiled C reference), built lazily so that ``--only`` pays only for what it
uses. A benchmark that finds a wrong result calls ``ctx.fail(...)``; the run then exits
with status 1. Timings never fail the run. Each benchmark also records its headline
numbers (``ctx.figure``), printed last as a block of "README figures"."""

import atexit
import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import cached_property
from pathlib import Path

import numpy as np

C_SOURCE = Path(__file__).resolve().parents[1] / "beggar_ref.c"


def benchmark(name, on_request=False):
    """Mark ``function(ctx)`` as the benchmark ``name``; its docstring's first line
    describes it in ``--list``. ``on_request``: run only with ``--only name``. The runner
    (``benchmarks/bench.py``) takes an area's benchmarks in the order they are defined."""

    def register(function):
        doc = (function.__doc__ or "").strip().splitlines()
        function.benchmark = (name, doc[0] if doc else "", on_request)
        return function

    return register


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

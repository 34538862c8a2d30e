"""The datasets: ``datasets.generate`` in memory, streamed to Parquet shards (peak memory
included), the ways of writing and reading the shards, and a million games to disk."""

import atexit
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .context import benchmark
from .printing import fmt_rate, section, table, targets, verdict
from .timing import interleaved_best


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

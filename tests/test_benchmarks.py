"""The benchmarks' runner finds every benchmark of every area, by the names the docs use."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench.py"

# In running order: the areas as benchmarks/bench.py's AREAS orders them, each as it defines them.
NAMES = [
    *("throughput", "cli", "parse"),  # engine
    *("env", "vector", "counted"),  # envs
    *("bayes", "sequence"),  # forecasting
    *("dataset", "parquet", "parquet-scale"),  # datasets
    *("search", "search-quality"),  # search
    *("census", "backward"),  # census
]
ON_REQUEST = {"parquet-scale", "search-quality", "backward", "census"}

# The runner as `python benchmarks/bench.py --list` runs it, then what it imported.
LIST = f"""
import runpy, sys
sys.argv = [{str(BENCH)!r}, "--list"]
sys.path.insert(0, {str(BENCH.parent)!r})
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as done:
    assert not done.code, done.code
print("imported:", " ".join(sorted(m for m in ("beggar_env", "gymnasium", "numba") if m in sys.modules)))
"""


def test_the_runner_lists_every_benchmark_in_running_order_and_imports_nothing_heavy():
    run = subprocess.run([sys.executable, "-c", LIST], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    *lines, imported = run.stdout.splitlines()
    assert [line.split()[0] for line in lines] == NAMES
    assert {line.split()[0] for line in lines if line.endswith("(only with --only)")} == ON_REQUEST
    assert imported == "imported: "

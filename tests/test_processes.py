"""The package in real processes: forked children, threads, a read-only install, Ctrl-C
and SIGTERM on long runs, and the first run's compile notice."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import COMPILE_NOTICE, LIBRARY_NOTICE, beggar, beggar_process, interrupt, read_only_runner, without_notice

import beggar_env
from beggar_env import files

REPO = Path(__file__).resolve().parents[1]
CASELLA = "---K---Q-KQAJ-----AAJ--J--/----------Q----KQ-J-----KA"  # never ends


def python(code, env=None, timeout=300, prefix=(), cwd=None):
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


# ----------------------------------------------------------- fork and threads

USE_EVERYTHING = """
import gymnasium as gym, numpy as np, beggar_env as b
from beggar_env import datasets

def use(seed):
    runs = b.simulate(2000, n_players=3, seed=seed)
    data = datasets.generate(50, samples=3, seed=seed)
    envs = gym.make_vec("Beggar-v0", num_envs=64)
    envs.reset(seed=seed)
    for _ in range(20):
        envs.step(np.zeros(64, np.int64))
    return int(runs.cards.sum()), int(data.observations.sum())
"""


@pytest.mark.slow
def test_a_forked_child_uses_everything_the_parent_used():
    code = (
        USE_EVERYTHING
        + """
import multiprocessing, os
expected = [use(seed) for seed in (1, 2, 3)]
with multiprocessing.get_context("fork").Pool(2) as pool:  # the default on Linux: what DataLoader workers do
    assert pool.map(use, [1, 2, 3]) == expected
pid = os.fork()
if pid == 0:
    os._exit(0 if use(2) == expected[1] else 3)
assert os.waitpid(pid, 0)[1] == 0
print("ok", b.jit.numba.threading_layer())
"""
    )
    run = python(code, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("ok")
    assert "fork() called from a process already using GNU OpenMP" not in run.stderr


@pytest.mark.slow
def test_threads_may_run_parallel_calls_at_once():
    code = (
        USE_EVERYTHING
        + """
import threading
expected = use(5)
out = []
threads = [threading.Thread(target=lambda: out.append(use(5))) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
assert out == [expected] * 3, out
print("ok")
"""
    )
    run = python(code, timeout=240)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


# ---------------------------------------------------------- read-only install


@pytest.mark.slow
def test_a_read_only_install_imports_and_plays_with_one_warning(tmp_path):
    site, home, cache, temporary = (tmp_path / name for name in ("site", "home", "cache", "tmp"))
    shutil.copytree(REPO / "beggar_env", site / "beggar_env", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in (home, cache, temporary):
        folder.mkdir()
    for path in [site, home, cache, *site.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    temporary.chmod(0o777)
    code = """
    import warnings
    warnings.simplefilter("always")
    import beggar_env as b
    print(b.play("-A--Q/----K-J").cards, b.simulate(30, seed=1).cards.sum())
    """
    env = {
        "PYTHONPATH": str(site),
        "HOME": str(home),
        "NUMBA_CACHE_DIR": str(cache),
        "TMPDIR": str(temporary),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    run = python(code, env=env, prefix=read_only_runner(), cwd=home)  # not the checkout: its package is writable
    try:
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.split() == ["12", str(int(beggar_env.simulate(30, seed=1).cards.sum()))]
        warnings = [line for line in run.stderr.splitlines() if "RuntimeWarning" in line]
        assert len(warnings) == 1, run.stderr[-3000:]
        assert f"caching compiled code in {temporary}" in warnings[0]
        assert list(temporary.rglob("*.nbi"))  # the fallback cache was used
    finally:
        for path in [tmp_path, *tmp_path.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)


@pytest.mark.slow
def test_the_wheel_ships_py_typed(tmp_path):
    """PEP 561: type checkers read an installed package's hints only when py.typed lies in it."""
    source = tmp_path / "source"
    shutil.copytree(REPO / "beggar_env", source / "beggar_env", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        "wheels",
        "./source",
    ]
    run = subprocess.run(build, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    (wheel,) = (tmp_path / "wheels").glob("beggar_env-*.whl")
    assert "beggar_env/py.typed" in zipfile.ZipFile(wheel).namelist()


def test_without_any_writable_folder_compiled_code_is_not_cached_with_one_warning():
    with pytest.warns(RuntimeWarning, match="not cached") as caught:
        assert beggar_env.jit._choose_cache(roots=(lambda: None, lambda: None)) is None
    assert len(caught) == 1


# ------------------------------------------------------------- numba's cache


@pytest.mark.slow
def test_compiled_code_is_cached_in_the_users_cache_by_build_never_beside_the_sources(tmp_path):
    """pip uninstall removes what it installed; numba's files beside the sources would stay,
    and the folder they keep hides the next (editable) install as a namespace package."""
    site, cache = tmp_path / "site", tmp_path / "cache"
    shutil.copytree(REPO / "beggar_env", site / "beggar_env", ignore=shutil.ignore_patterns("__pycache__"))
    code = "import beggar_env as b, beggar_env.jit as j; print(b.simulate(20, seed=1).cards.sum(), j.CACHE_FOLDER)"
    env = {"PYTHONPATH": str(site), "XDG_CACHE_HOME": str(cache), "NUMBA_CACHE_DIR": ""}
    run = python(code, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    total, folder = run.stdout.split()
    assert int(total) == int(beggar_env.simulate(20, seed=1).cards.sum())
    assert Path(folder).parent == cache / "beggar-env" and list(Path(folder).rglob("core.*.nbi"))
    assert not [path for path in site.rglob("*") if path.suffix in (".nbi", ".nbc")]


def test_any_source_change_gives_another_build(tmp_path, monkeypatch):
    """numba checks only the file a function is in: code compiled against another module's
    old source must not be loaded, so every source file is in the build's name."""
    shutil.copytree(REPO / "beggar_env", tmp_path / "beggar_env", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(beggar_env.jit, "PACKAGE_DIR", str(tmp_path / "beggar_env"))
    before = beggar_env.jit.build_key()
    assert beggar_env.jit.build_key() == before
    source = tmp_path / "beggar_env" / "datasets" / "samples.py"
    source.write_text(source.read_text() + "\n")
    assert beggar_env.jit.build_key() != before


PROBE = """
from .jit import jit


@jit
def twice(x):
    return 2 * x
"""


@pytest.mark.slow
def test_the_same_sources_installed_twice_share_one_build(tmp_path):
    """`pip install .` and `pip install -e .` of the same sources (another folder, other file
    times) compiled everything twice: the build was named after the path and the times."""
    cache, copies = tmp_path / "cache", [tmp_path / "site", tmp_path / "checkout"]
    for age, copy in zip((0, 10 * 86400), copies):
        shutil.copytree(REPO / "beggar_env", copy / "beggar_env", ignore=shutil.ignore_patterns("__pycache__"))
        (copy / "beggar_env" / "probe.py").write_text(PROBE)
        when = time.time() - age
        for path in copy.rglob("*"):
            os.utime(path, (when, when))
    code = """
    import beggar_env.jit as j, beggar_env.probe as p
    print(p.twice(21), j.CACHE_FOLDER, sum(p.twice.stats.cache_hits.values()), sum(p.twice.stats.cache_misses.values()))
    """
    runs = [python(code, env={"PYTHONPATH": str(copy), "NUMBA_CACHE_DIR": str(cache)}, cwd=tmp_path) for copy in copies]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-3000:] + runs[1].stderr[-3000:]
    (first, folder, hits, misses), (again, same_folder, hits_again, misses_again) = (run.stdout.split() for run in runs)
    assert first == again == "42" and folder == same_folder
    assert (hits, misses) == ("0", "1")  # compiled by the first copy ...
    assert (hits_again, misses_again) == ("1", "0")  # ... and loaded from the cache by the second


def test_numba_saves_lose_nothing_when_two_save_the_same_function_at_once(tmp_path, monkeypatch):
    """numba reads a function's index, adds the new code and replaces it: two processes
    saving at once (beggar warmup's) dropped each other's entries, or wrote one data file
    for two of them. Threads race the same way (each save opens the lock anew)."""
    from numba.core.caching import IndexDataCacheFile

    monkeypatch.setattr(IndexDataCacheFile, "save", IndexDataCacheFile.save)  # put back after the test
    beggar_env.jit._lock_saves_in(tmp_path)
    folder = tmp_path / "envs"
    folder.mkdir()
    saving = [IndexDataCacheFile(str(folder), "f-1.py311", "stamp") for _ in range(6)]

    def save(i):
        for k in range(25):
            saving[i].save(("signature", i, k), f"code {i} {k}")

    threads = [threading.Thread(target=save, args=(i,)) for i in range(len(saving))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index = saving[0]._load_index()
    assert len(index) == 6 * 25
    assert all(saving[0]._load_data(name) == f"code {i} {k}" for (_, i, k), name in index.items())


def test_old_builds_are_pruned_once_idle_and_the_recent_ones_kept(tmp_path):
    now = time.time()
    ages = {"current": 10**6, "a": 10, "b": 2 * 86400, "c": 3 * 86400, "d": 4 * 86400, "e": 5 * 86400, "f": 60}
    for name, age in ages.items():
        stamp = tmp_path / name / "last-used"
        stamp.parent.mkdir()
        stamp.touch()
        os.utime(stamp, (now - age, now - age))
    (tmp_path / "not-a-build").mkdir()  # no stamp: not ours to remove
    beggar_env.jit.prune_builds(tmp_path, "current")
    # kept: the current build, the three most recently used others (a, f, b), and none idle for less than an hour
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a", "b", "current", "f", "not-a-build"]


# ------------------------------------------------------------ Ctrl-C, SIGTERM


STOPS_WITHIN = 10  # seconds: a second on a quiet machine; loose, so that a busy one cannot fail the test, where
# before the fix such a run never stopped


@pytest.mark.slow
def test_ctrl_c_stops_beggar_play_on_a_deal_that_never_ends():
    returncode, stderr, seconds = interrupt(beggar_process("play", CASELLA, "--no-cycles"), signal.SIGINT, 3)
    assert returncode == 130 and stderr.strip() == "beggar: interrupted"
    assert seconds < STOPS_WITHIN


@pytest.mark.slow
@pytest.mark.parametrize(
    "call",
    [
        "b.play(CASELLA, detect_cycles=False)",
        "b.simulate([CASELLA, '-/-'] * 4, detect_cycles=False)",
        "[None for _ in b.simulate_blocks(10**9)]",
        "b.datasets.generate(10**7, samples=1)",
    ],
)
def test_ctrl_c_stops_compiled_runs_within_a_second(call):
    code = f"""
    import beggar_env as b
    CASELLA = {CASELLA!r}
    b.play("-/-"); b.simulate(["-/-"], detect_cycles=False); b.simulate(10)  # load the compiled code
    print("ready", flush=True)
    {call}
    """
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready"
    returncode, stderr, seconds = interrupt(process, signal.SIGINT, 1.5)
    assert "KeyboardInterrupt" in stderr and returncode != 0
    assert seconds < STOPS_WITHIN


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["simulate", "--games", "1000000000"], ["dataset", "--games", "3000000", "--out", "data.npz"]]
)
def test_ctrl_c_stops_long_command_runs_and_leaves_no_file(tmp_path, command):
    beggar_env.simulate(10), beggar_env.datasets.generate(10)  # the cache is warm
    process = beggar_process(*command, "--seed", "1", cwd=tmp_path)
    returncode, stderr, seconds = interrupt(process, signal.SIGINT, 4)
    assert returncode == 130 and "beggar: interrupted" in stderr
    assert seconds < STOPS_WITHIN
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_sigterm_keeps_an_earlier_results_file_whole(tmp_path):
    earlier = tmp_path / "runs.npz"
    np.savez(earlier, cards=np.arange(3))
    before = earlier.read_bytes()
    process = beggar_process("simulate", "--games", "20000000", "--seed", "2", "--out", str(earlier))
    returncode, stderr, _ = interrupt(process, signal.SIGTERM, 4)
    assert returncode == 143 and "beggar: terminated" in stderr
    assert earlier.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["runs.npz"]


def test_an_interrupted_save_leaves_the_earlier_file_and_no_partial_one(tmp_path):
    path = tmp_path / "data.npz"
    path.write_bytes(b"earlier")

    class Interrupted(BaseException):
        pass

    with pytest.raises(Interrupted):
        with files.replacing(str(path)) as f:
            f.write(b"half of a new file")
            raise Interrupted()
    assert path.read_bytes() == b"earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["data.npz"]
    assert files.save_npz(tmp_path / "new", x=np.arange(4)) == str(tmp_path / "new.npz")
    assert np.load(tmp_path / "new.npz")["x"].tolist() == [0, 1, 2, 3]


# -------------------------------------------------------------- first run


@pytest.mark.slow
def test_the_first_run_says_it_is_compiling(tmp_path):
    """The notice is one line, the one the shared helper (conftest.beggar) takes out of
    stderr so that the checks of a command's lines hold on a cold cache too."""
    cold = {"NUMBA_CACHE_DIR": str(tmp_path)}
    run = beggar("simulate", "--games", "10", "--seed", "1", timeout=600, env=cold, keep_notice=True)
    assert run.returncode == 0, run.stderr
    assert "the first run of each part compiles it" in run.stderr
    notices = [line for line in run.stderr.splitlines() if line.startswith(COMPILE_NOTICE)]
    assert len(notices) == 1 and "the first run of each part compiles it" in notices[0], run.stderr
    again = beggar("simulate", "--games", "10", "--seed", "1", timeout=600, env=cold)
    assert again.returncode == 0
    assert again.stdout.splitlines()[:3] == run.stdout.splitlines()[:3]


def test_the_notices_the_tests_take_out_are_the_ones_printed():
    """conftest.without_notice drops the command's and the package's compile notices by
    their first words: those words must be how they start."""
    from beggar_env import compiling
    from beggar_env.cli import options

    with options.notice_for("simulate"):
        assert compiling.notice.words.startswith(COMPILE_NOTICE)
    assert compiling.NOTICE.startswith(LIBRARY_NOTICE)
    assert without_notice(f"{compiling.NOTICE}\nbeggar: x\n") == "beggar: x\n"

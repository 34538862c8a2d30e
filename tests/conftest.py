"""Shared test helpers: the reference vectors, conversions between result shapes, running
``beggar`` in a child process, and which tests a plain ``pytest`` runs.

Running the suite:

* ``pytest``: the fast suite, every test that runs in this process in under about 2 s
  (about 2 minutes on 2 cores, once numba's cache is warm: ``beggar warmup``). The tests
  marked ``slow`` are deselected, not skipped: whole programs in child processes (the
  ``beggar`` command, ``python -c``, the examples), Ray, training, the clients, the CUDA
  simulator, and the few others over about 2 s.
* ``pytest --all``: the whole suite (CI runs ``pytest``, then ``pytest -m slow``: .ci/run).
* ``pytest -m slow``: the slow tests only. Any ``-m`` expression of your own selects by
  itself, and a test named by its node id (``pytest tests/test_cli.py::test_version_and_usage``)
  runs even when it is slow. ``-n 2 --dist loadgroup`` (pytest-xdist, in the test extra) runs
  them on two workers, as CI does, the tests that use Ray on one of them.
* Hypothesis, by ``HYPOTHESIS_PROFILE``: ``dev`` (the default: new random examples each run,
  50 where a test does not fix its number, no deadline) or ``ci`` (derandomized, so that a
  run is repeatable; 200 examples where a test does not fix its number; no deadline, no
  example database): ``HYPOTHESIS_PROFILE=ci pytest --all``. Tests that fix their own
  ``max_examples`` keep it in both.

``tests/data/vectors.tsv`` lists deals with their exact outcomes (the published record
games among them); every row must pass. Tests that need it FAIL, never skip, when it is
missing.
"""

import csv
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # so that test modules can `import reference`
    sys.path.insert(0, str(TESTS_DIR))

VECTORS_PATH = TESTS_DIR / "data" / "vectors.tsv"

VECTOR_COLUMNS = (
    "name",
    "deal",
    "outcome",
    "cards",
    "tricks",
    "winner",
    "cycle_start_cards",
    "cycle_start_tricks",
    "cycle_cards",
    "cycle_tricks",
)
INT_COLUMNS = VECTOR_COLUMNS[3:]

RESULT_FIELDS = (
    "outcome",
    "winner",
    "cards",
    "tricks",
    "hand_sizes",
    "cycle_start_cards",
    "cycle_start_tricks",
    "cycle_cards",
    "cycle_tricks",
)
CYCLE_FIELDS = ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks")


class VectorsMissing(Exception):
    pass


def _missing_message():
    return f"reference vectors not found at {VECTORS_PATH} (part of the repository: is the checkout complete?)"


def read_vectors():
    """The rows of vectors.tsv as dicts (ints for the counts, None for '-').

    Raises VectorsMissing if the file is absent, ValueError if it is malformed.
    """
    if not VECTORS_PATH.is_file():
        raise VectorsMissing(_missing_message())
    with open(VECTORS_PATH, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    if not rows or tuple(rows[0]) != VECTOR_COLUMNS:
        raise ValueError(f"{VECTORS_PATH}: unexpected header {rows[0] if rows else None!r}")
    vectors = []
    for line_no, row in enumerate(rows[1:], 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(VECTOR_COLUMNS):
            raise ValueError(f"{VECTORS_PATH}:{line_no}: {len(row)} columns, expected {len(VECTOR_COLUMNS)}")
        vector = dict(zip(VECTOR_COLUMNS, row))
        for column in INT_COLUMNS:
            vector[column] = None if vector[column] == "-" else int(vector[column])
        vectors.append(vector)
    return vectors


def load_vectors():
    """The rows of vectors.tsv; fails the calling test (not a skip) if the file is missing."""
    try:
        return read_vectors()
    except VectorsMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def vectors():
    """All rows of vectors.tsv (the test fails if the file is missing)."""
    return load_vectors()


RAY_OBJECT_STORE = 256 * 2**20  # bytes: the tests send a few MB; Ray's default takes 30% of the machine's memory
RAY_NO_MEMORY_MONITOR = {"RAY_memory_monitor_refresh_ms": "0"}


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray with 2 CPUs for the whole session (its address, for commands that
    join it); the test is skipped when Ray is not installed. Its object store is capped
    and its memory monitor off: the monitor kills a worker whenever the machine as a whole
    is short of memory, whoever uses it, as on a machine busy with other jobs."""
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed: pip install -e '.[test]' (or '.[distributed]') installs it"
    )
    before = {name: os.environ.get(name) for name in RAY_NO_MEMORY_MONITOR}
    os.environ.update(RAY_NO_MEMORY_MONITOR)  # read by Ray's processes as they start
    try:
        ray.init(
            num_cpus=2,
            object_store_memory=RAY_OBJECT_STORE,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


# ------------------------------------------------------------- the fast suite and the whole


SLOW_DESELECTED = pytest.StashKey[int]()  # how many slow tests this run left out


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="run the slow tests too (a plain pytest deselects the tests marked slow; -m slow runs only them)",
    )


def _named_node_ids(config):
    """The tests named on the command line by node id (path::name), as pytest writes node ids."""
    named = []
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if sep:
            where = (Path(config.invocation_params.dir) / path).resolve()
            try:
                named.append(f"{where.relative_to(config.rootpath).as_posix()}::{rest}")
            except ValueError:  # outside the repository: not one of ours
                pass
    return named


def uses_ray(item):
    """Whether a test starts or joins a local Ray: the session's cluster, or a name that says Ray."""
    return "ray_cluster" in getattr(item, "fixturenames", ()) or "ray" in item.name.split("[")[0].split("_")


def pytest_collection_modifyitems(config, items):
    """Deselect the tests marked slow, unless --all is given, or a -m expression of the
    user's own chooses, or the test is named by its node id. Under pytest-xdist
    (``-n 2 --dist loadgroup``, as CI runs the slow tier) the tests that use Ray share one
    worker, so that one local Ray at a time holds the machine's CPUs."""
    for item in items:
        if uses_ray(item):
            item.add_marker(pytest.mark.xdist_group("ray"))
    if config.getoption("--all") or config.getoption("markexpr"):
        return
    named = _named_node_ids(config)

    def wanted(item):
        return any(item.nodeid == n or item.nodeid.startswith((f"{n}[", f"{n}::")) for n in named)

    slow = [item for item in items if item.get_closest_marker("slow") is not None and not wanted(item)]
    if slow:
        chosen = set(map(id, slow))
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if id(item) not in chosen]
    config.stash[SLOW_DESELECTED] = len(slow)


def pytest_terminal_summary(terminalreporter, config):
    slow = config.stash.get(SLOW_DESELECTED, 0)
    if slow:
        terminalreporter.write_line(
            f"{slow} slow tests deselected: pytest --all runs the whole suite, pytest -m slow only them"
        )


# ------------------------------------------------------------------ hypothesis


def _hypothesis_profiles():
    """``dev`` (the default) and ``ci``, chosen by HYPOTHESIS_PROFILE."""
    try:
        from hypothesis import settings
    except ImportError:  # the tests that need hypothesis say so themselves
        return
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None, database=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


_hypothesis_profiles()  # before the test modules are imported: their settings() build on the profile


# ------------------------------------------------------------------------ torch

TORCH_THREADS = 1  # torch's own thread pool fights numba's and the other jobs' for a CI machine's few cores


@pytest.fixture(scope="session")
def torch_threads():
    """torch on TORCH_THREADS threads for the rest of the session (set once, the first time a
    test asks); nothing when torch is not installed (the tests that need it skip themselves)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    torch.set_num_threads(TORCH_THREADS)
    return TORCH_THREADS


def pytest_sessionstart(session):
    """Say so when the suite will compile the package: minutes of dots, otherwise unexplained."""
    from beggar_env import jit, warmup

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and warmup.cache_is_empty():
        reporter.write_line(
            f"beggar-env: this build's numba cache ({jit.CACHE_FOLDER}) is empty, so the first tests compile the "
            "package as they go (about 8 minutes for the fast suite on 2 cores; `beggar warmup` compiles it all in 2-3)"
        )


def pytest_generate_tests(metafunc):
    """Parametrize any test that takes a ``vector`` argument with every row of vectors.tsv.

    When the file is missing, such a test gets one parameter that makes it fail.
    """
    if "vector" in metafunc.fixturenames:
        try:
            rows = read_vectors()
            params = [pytest.param(row, id=row["name"]) for row in rows]
        except VectorsMissing:
            params = [pytest.param(None, id="vectors.tsv-missing")]
        metafunc.parametrize("vector", params)


def require_vector(vector):
    if vector is None:
        pytest.fail(_missing_message(), pytrace=False)
    return vector


# ------------------------------------------------------------- result conversions


def result_dict(result):
    """A beggar_env.GameResult as a plain dict with RESULT_FIELDS."""
    return {field: getattr(result, field) for field in RESULT_FIELDS}


def record_dict(record):
    """One record of simulate()'s result array as a plain dict in GameResult's terms."""
    import beggar_env

    def opt(value):
        value = int(value)
        return None if value < 0 else value

    return {
        "outcome": beggar_env.OUTCOMES[int(record["outcome"])],
        "winner": opt(record["winner"]),
        "cards": int(record["cards"]),
        "tricks": int(record["tricks"]),
        "hand_sizes": tuple(int(n) for n in record["hand_sizes"]),
        "cycle_start_cards": opt(record["cycle_start_cards"]),
        "cycle_start_tricks": opt(record["cycle_start_tricks"]),
        "cycle_cards": opt(record["cycle_cards"]),
        "cycle_tricks": opt(record["cycle_tricks"]),
    }


def vector_expected(vector):
    """The fields a vectors.tsv row fixes, in result-dict terms."""
    return {
        "outcome": vector["outcome"],
        "winner": vector["winner"],
        "cards": vector["cards"],
        "tricks": vector["tricks"],
        **{field: vector[field] for field in CYCLE_FIELDS},
    }


_COURT_CLASS = {"J": 1, "Q": 2, "K": 3, "A": 4}


def hands_of(deal):
    """A beggar_env Deal (or compact text) as lists of card classes, for the reference.

    Done here from the tokens, not with Deal.classes(), to keep the reference independent.
    """
    if isinstance(deal, str):
        return [[_COURT_CLASS.get(symbol, 0) for symbol in hand] for hand in deal.split("/")]
    return [[_COURT_CLASS.get(token.rstrip("CDHS"), 0) for token in hand] for hand in deal.hands]


def read_only_runner():
    """How to run a child that cannot write where its own user could: as root, without the
    capability to override file permissions; else the permissions themselves."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a folder unwritable")
    return (setpriv, "--inh-caps=-dac_override", "--bounding-set=-dac_override")


# -------------------------------------------------------------- the command, run

COMPILE_NOTICE = "beggar: preparing the compiled engine ("  # what the command prints first on a cold cache
LIBRARY_NOTICE = "beggar-env: compiling the engine for its first use"  # the package's, once per process


def without_notice(stderr):
    """``stderr`` without the line the command (beggar_env/cli/options.py) or the package
    (beggar_env/jit.py, ``notice``) prints when it compiles the engine on a cold numba cache,
    so that a check of its lines sees what a warm run prints."""
    notices = (COMPILE_NOTICE, LIBRARY_NOTICE)
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(notices))


def beggar(*args, cwd=None, env=None, timeout=300, prefix=(), keep_notice=False):
    """``beggar ARGS`` run to its end in a child process (``python -m beggar_env.cli``, with
    ``prefix`` before it, ``env`` added to the environment), its output captured as text.
    The compile notice is taken out of its stderr (:func:`without_notice`) unless
    ``keep_notice``."""
    run = subprocess.run(
        [*prefix, sys.executable, "-m", "beggar_env.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    if not keep_notice:
        run.stderr = without_notice(run.stderr)
    return run


def beggar_in_process(capsys, *args):
    """``beggar ARGS`` run in this process (:func:`beggar_env.cli.main`), for the checks that
    read no more than its exit status and output: a finished child's returncode, stdout and
    stderr (the compile notice taken out), from ``capsys``."""
    from beggar_env import cli

    capsys.readouterr()  # what earlier calls printed
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["beggar", *args], status, out, without_notice(err))


def one_line(run, status, *words):
    """``run`` (a finished child or anything with ``returncode`` and ``stderr``) failed with
    ``status`` and one line on stderr, no traceback, the line holding every one of ``words``."""
    lines = without_notice(run.stderr).strip().splitlines()
    assert run.returncode == status, run.stderr
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    for word in words:
        assert word in lines[0], lines[0]


def beggar_process(*args, env=None, cwd=None):
    """``beggar ARGS`` started in a child process (text pipes for stdout and stderr)."""
    return subprocess.Popen(
        [sys.executable, "-m", "beggar_env.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def interrupt(process, sig, after):
    """Send ``sig`` once ``process`` has run ``after`` seconds; return its (status, stderr,
    seconds from the signal to its exit)."""
    time.sleep(after)
    assert process.poll() is None, process.communicate()
    process.send_signal(sig)
    sent = time.perf_counter()
    _, stderr = process.communicate(timeout=30)
    return process.returncode, stderr, time.perf_counter() - sent

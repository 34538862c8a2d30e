"""Shared test helpers: the reference vectors and conversions between result shapes.

``tests/data/vectors.tsv`` lists deals with their exact outcomes (the published record
games among them); every row must pass. Tests that need it FAIL, never skip, when it is
missing.
"""

import csv
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


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray with 2 CPUs for the whole session (its address, for commands that
    join it); the test is skipped when Ray is not installed."""
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed: pip install -e '.[test]' (or '.[distributed]') installs it"
    )
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def pytest_sessionstart(session):
    """Say so when the suite will compile the package: minutes of dots, otherwise unexplained."""
    from beggar_env import jit, warmup

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and warmup.cache_is_empty():
        reporter.write_line(
            f"beggar-env: this build's numba cache ({jit.CACHE_FOLDER}) is empty, so the first tests compile the "
            "package as they go (2 to 4 minutes on 2 cores; `beggar warmup` compiles it all at once)"
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

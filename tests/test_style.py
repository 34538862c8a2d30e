"""The code follows the formatter and linter configured in pyproject.toml (ruff)."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATHS = ["beggar_env", "tests", "benchmarks", "examples"]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install -e '.[test]')")
@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_ruff(command):
    run = subprocess.run(["ruff", *command, *PATHS], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr

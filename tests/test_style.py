"""The code follows the formatter and linter configured in pyproject.toml (ruff: no private
name crosses a module boundary), and its import graph keeps the house's contracts
(import-linter: no circle, each floor imports only from the floors below it)."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATHS = ["beggar_env", "tests", "benchmarks", "studies", "examples", "runs"]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install -e '.[test]')")
@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_ruff(command):
    run = subprocess.run(["ruff", *command, *PATHS], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is not installed (the test extra)")
def test_import_graph_has_no_circle_and_keeps_its_floors():
    run = subprocess.run(["lint-imports", "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 kept, 0 broken" in run.stdout, run.stdout

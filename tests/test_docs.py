"""Every Python snippet of the README and ``docs/`` runs as a reader would run it: the
snippets of one page in order, in one namespace, in a fresh folder. Only their sizes are
scaled down (the table below), so that the suite stays fast; a snippet that needs a client
the test extra does not install (torch, Hugging Face ``datasets``) is skipped, naming it."""

import ast
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
SMALLER = {  # a published size -> the size the test runs
    "1_000_000": "3_000",
    "10_000_000": "3_000",
    "100_000": "3_000",
    "10**9": "10**4",
    "20_000": "300",  # training games of a sequence forecaster
}
SIZE = re.compile("|".join(re.escape(size) for size in SMALLER))


# A snippet is slow (pytest --all, -m slow) when it, or an earlier snippet of its page that
# it runs first, trains a model, evaluates one on the protocol's test set, or brings a client
# (seconds to a minute each).
SLOW_SNIPPET = re.compile(
    r"\.(fit|learn)\(|\bevaluate\(|\b(torch|stable_baselines3|sb3_contrib|torchrl|minari|pandas|polars)\b"
    r"|from datasets "
)


def snippets():
    for page in PAGES:
        codes = BLOCK.findall(page.read_text(encoding="utf-8"))
        for number in range(len(codes)):
            slow = any(SLOW_SNIPPET.search(code) for code in codes[: number + 1])
            yield pytest.param(
                page, number, id=f"{page.relative_to(REPO)}:{number}", marks=[pytest.mark.slow] if slow else []
            )


def blocks(page):
    return [SIZE.sub(lambda m: SMALLER[m.group(0)], code) for code in BLOCK.findall(page.read_text(encoding="utf-8"))]


NEEDS = {  # the package's modules that need a client
    "beggar_env.forecasting.sequences": "torch",
    "beggar_env.forecasting.sequence_models": "torch",
}


def missing_modules(code):
    tree = ast.parse(code)
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    names |= {NEEDS[name] for name in names if name in NEEDS}
    return sorted(name for name in names if importlib.util.find_spec(name.split(".")[0]) is None)


def test_every_page_with_python_has_its_snippets_found():
    assert any(blocks(page) for page in PAGES)
    assert len(blocks(REPO / "README.md")) >= 5


@pytest.mark.parametrize("page, number", list(snippets()))
def test_snippet_runs(page, number, tmp_path, monkeypatch, torch_threads):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))  # clients' stores: in the fresh folder
    monkeypatch.setenv("HF_HOME", str(tmp_path / "huggingface"))
    namespace = {"__name__": "__snippet__"}
    *earlier, code = blocks(page)[: number + 1]
    missing = missing_modules(code)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, which the test extra does not install")
    for setup in earlier:  # the page's earlier snippets set this one up (those that can run here)
        if not missing_modules(setup):
            exec(compile(setup, f"{page.name} snippet", "exec"), namespace)
    exec(compile(code, f"{page.name} snippet {number}", "exec"), namespace)

"""The README and ``docs/`` work as pasted.

Every Python snippet runs as a reader who pastes it alone would run it: in a fresh
namespace, in a fresh folder. A snippet whose first line is a comment starting
``# continued`` continues the one before it (the same namespace and folder: the snippets
up to it, from the last one not so marked, run first). Only their sizes are scaled down
(the table below), so that the suite stays fast; a snippet that needs a client the test
extra does not install (torch, Hugging Face ``datasets``) is skipped, naming it.

Every ``beggar ...`` command line of a ``bash`` or ``console`` block parses with the real
command line's parser, and no two commands of one block write the same ``--out`` unless the
later one continues it (``--resume``) or only adds to it (``--redraw``)."""

import ast
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
SHELL_BLOCK = re.compile(r"```(bash|console|sh|shell)\n(.*?)```", re.S)
CONTINUED = "# continued"
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


def chain(codes, number):
    """The snippets that run for snippet ``number``: itself, after the ones it continues."""
    first = number
    while first > 0 and codes[first].lstrip().startswith(CONTINUED):
        first -= 1
    return codes[first : number + 1]


NEEDS = {  # the package's modules that need a client
    "beggar_env.forecasting.sequences": "torch",
    "beggar_env.forecasting.sequence_models": "torch",
    "beggar_env.forecasting.sequence_nets": "torch",
    "beggar_env.forecasting.training": "torch",
    "beggar_env.forecasting.step_model": "torch",
    "beggar_env.forecasting.full_view": "torch",
}


def missing_modules(code):
    tree = ast.parse(code)
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    names |= {NEEDS[name] for name in names if name in NEEDS}
    return sorted(name for name in names if importlib.util.find_spec(name.split(".")[0]) is None)


def test_every_page_with_python_has_its_snippets_found():
    assert len(blocks(REPO / "README.md")) >= 2  # the env's quick start, a forecaster evaluated
    assert sum(len(blocks(page)) for page in PAGES) >= 17  # the README's snippets moved to docs/ stay counted


def test_a_continued_snippet_runs_after_the_ones_it_continues():
    codes = ["a = 1\n", "# continued\nb = a\n", "# continued: the same folder\nc = b\n", "d = 1\n", "e = 2\n"]
    assert chain(codes, 0) == codes[:1]
    assert chain(codes, 2) == codes[:3]
    assert chain(codes, 4) == codes[4:]


@pytest.mark.parametrize("page, number", list(snippets()))
def test_snippet_runs(page, number, tmp_path, monkeypatch, torch_threads):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))  # clients' stores: in the fresh folder
    monkeypatch.setenv("HF_HOME", str(tmp_path / "huggingface"))
    namespace = {"__name__": "__snippet__"}
    codes = chain(blocks(page), number)
    missing = sorted({name for code in codes for name in missing_modules(code)})
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, which the test extra does not install")
    for offset, code in enumerate(codes):
        exec(compile(code, f"{page.name} snippet {number - len(codes) + 1 + offset}", "exec"), namespace)


# Command lines: every `beggar ...` of a shell block, parsed as the command line parses it.

OPERATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<"}


def command_lines(block, console):
    """The command lines of a shell block: backslash-continued lines joined, a quoted
    argument that spans lines kept whole; in a console block only the lines after a
    prompt (``$ ``), the others being output."""
    lines, pending = [], None
    for line in block.splitlines():
        if pending is None:
            if console and not line.startswith("$ "):
                continue
            pending = line[2:] if console else line
        else:
            pending += "\n" + line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quotation still open: the command goes on on the next line
            continue
        lines.append(pending)
        pending = None
    assert pending is None, f"a command line is not closed: {pending!r}"
    return lines


def beggar_commands(line):
    """The argument lists of the ``beggar`` commands on a command line (after ``&&``, ``;``,
    ``|`` as well as first)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, words = [], []
    for token in [*lexer, ";"]:
        if token in OPERATORS or set(token) <= set("&|;<>"):
            if words and words[0] == "beggar":
                commands.append(words[1:])
            words = []
        else:
            words.append(token)
    return commands


def check_commands(text):
    """Every problem with the ``beggar`` command lines of a page's shell blocks: a line that
    does not parse, or a second command of a block writing an ``--out`` an earlier one
    wrote. Returns (the number of commands parsed, the problems)."""
    from beggar_env.cli import UsageError, commands

    parsed, problems = 0, []
    for kind, block in SHELL_BLOCK.findall(text):
        written = {}
        for line in command_lines(block, console=kind == "console"):
            for words in beggar_commands(line):
                shown = "beggar " + shlex.join(words)
                try:
                    args = commands.parse_args(words)
                except UsageError as error:
                    problems.append(f"{shown}: {str(error).splitlines()[0]}")
                    continue
                except SystemExit as stop:  # --help, --version: argparse prints and exits 0
                    if stop.code:
                        problems.append(f"{shown}: exits with {stop.code}")
                    continue
                parsed += 1
                out = getattr(args, "out", None)
                if out is None:
                    continue
                if out in written and not (getattr(args, "resume", False) or getattr(args, "redraw", False)):
                    problems.append(f"{shown}: --out {out} was written by the block's `{written[out]}`")
                written.setdefault(out, shown)
    return parsed, problems


SHELL_PAGES = [page for page in PAGES if SHELL_BLOCK.search(page.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page", SHELL_PAGES, ids=[str(page.relative_to(REPO)) for page in SHELL_PAGES])
def test_command_lines_parse(page):
    parsed, problems = check_commands(page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_pages_have_command_lines_to_check():
    counts = {page.name: check_commands(page.read_text(encoding="utf-8"))[0] for page in SHELL_PAGES}
    assert counts["README.md"] >= 1 and counts["cli.md"] >= 8 and counts["cycles.md"] >= 15, counts


def test_command_line_check_finds_what_is_wrong():
    page = """
```console
$ beggar simulate --games 10 --seed 1 --out runs.npz     # a comment; not an operator
seat 0 wins: output, not a command
$ beggar simulate --games ten
$ beggar dataset --games 10 \\
    --out data && beggar dataset --games 20 --out data
```

```bash
beggar search --minutes 1 --out finds.jsonl
beggar search --minutes 1 --out finds.jsonl --resume
python -c "
print('beggar simulate --games ten')
" > beggar.txt
beggar play '-A/-----' | beggar cycles nonsense
```
"""
    parsed, problems = check_commands(page)
    assert parsed == 6, (parsed, problems)
    assert len(problems) == 3, problems
    assert problems[0].startswith("beggar simulate --games ten: ")
    assert problems[1] == "beggar dataset --games 20 --out data: --out data was written by the block's " + (
        "`beggar dataset --games 10 --out data`"
    )
    assert problems[2].startswith("beggar cycles nonsense: ")


# The README's own-forecaster steps, in sequence as pasted: the snippet saves a report, the
# shell block after it adds that report as a row with `--redraw`. Only sizes are scaled down:
# the published test set, the reference and the study copied are of a few games.

STUDY_GAMES = 30  # test games of the scaled-down published test set and study


def readme_forecaster_steps():
    """The README's snippet that saves a report (with the ones it continues), and the command
    lines of the shell block that follows it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    codes = blocks(REPO / "README.md")
    number = next(i for i, code in enumerate(codes) if "report.save(" in code)
    after = text.index(BLOCK.findall(text)[number]) + len(BLOCK.findall(text)[number])
    kind, shell = next((m.group(1), m.group(2)) for m in SHELL_BLOCK.finditer(text, after))
    return chain(codes, number), command_lines(shell, console=kind == "console")


@pytest.fixture
def small_published_study(tmp_path, monkeypatch):
    """``docs/results`` in a fresh folder: a study of the scaled-down published test set."""
    pytest.importorskip("sklearn", reason="the study needs scikit-learn: pip install '.[baselines]'")
    pytest.importorskip("matplotlib", reason="the study's pictures need matplotlib: pip install '.[baselines]'")
    from dataclasses import replace

    from beggar_env.forecasting import protocol
    from beggar_env.forecasting.study import folder, run, settings

    monkeypatch.setattr(protocol, "PUBLISHED_GAMES", STUDY_GAMES)
    monkeypatch.setattr(protocol, "_PUBLISHED", {})
    monkeypatch.setattr(protocol, "REFERENCE_PRIOR_GAMES", 20_000)
    monkeypatch.setattr(protocol, "REFERENCE_K", 16)
    tiny = replace(
        settings.QUICK, test_games=STUDY_GAMES, train_games=300, prior_games=20_000, stats_games=20_000,
        bayes_k=16, bootstrap=50, trees=10, epochs=5,
    )  # fmt: skip
    results = run.run((2,), tiny, seed=0)
    folder.write(results, tmp_path / "docs" / "results", "beggar baselines (scaled down, from the tests)")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_readme_forecaster_steps_run_in_sequence_as_pasted(small_published_study, capsys):
    """The README's snippet once saved a report named after a study row (MostCards), so that
    its next step, `beggar baselines --redraw --forecaster`, refused it."""
    import subprocess

    from beggar_env import cli

    codes, lines = readme_forecaster_steps()
    namespace = {"__name__": "__snippet__"}
    for code in codes:
        exec(compile(code, "README.md forecaster snippet", "exec"), namespace)
    assert any(word == "beggar" for line in lines for word in shlex.split(line, comments=True)), lines
    for line in lines:
        words = shlex.split(line, comments=True)
        if words[0] == "beggar":  # in this process: the scaled-down sizes hold
            capsys.readouterr()
            status = cli.main(words[1:])
            assert status == 0, (line, capsys.readouterr().err)
        else:
            run = subprocess.run(line, shell=True, cwd=small_published_study, capture_output=True, text=True)
            assert run.returncode == 0, (line, run.stderr)
    name = namespace["report"]["forecaster"]
    out = next(words[words.index("--out") + 1] for words in map(shlex.split, lines) if "--out" in words)
    assert f"| {name} |" in (small_published_study / out / "tables.md").read_text(encoding="utf-8")

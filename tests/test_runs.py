"""The raw run outputs in ``runs/`` (the large files published runs wrote, kept out of
``docs/`` and compressed): each is as ``runs/MANIFEST.tsv`` says (``runs/verify.py``), and
each manifest row's command is the one the docs give for it."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_runs_match_their_manifest():
    run = subprocess.run(
        [sys.executable, str(REPO / "runs" / "verify.py")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "files match MANIFEST.tsv" in run.stdout


def test_verify_finds_a_changed_file(tmp_path):
    """verify.py refuses a file whose bytes differ from the manifest's, one line each."""
    copy = tmp_path / "runs"
    (copy / "cycles").mkdir(parents=True)
    (copy / "verify.py").write_bytes((REPO / "runs" / "verify.py").read_bytes())
    manifest = (REPO / "runs" / "MANIFEST.tsv").read_text(encoding="utf-8")
    (copy / "MANIFEST.tsv").write_text(manifest, encoding="utf-8")
    first = manifest.splitlines()[1].split("\t")[0]
    (copy / first).write_bytes((REPO / "runs" / first).read_bytes()[:-1])
    (copy / "stray.json").write_text("{}")
    run = subprocess.run([sys.executable, str(copy / "verify.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert f"{first}: missing" not in run.stderr and f"{first}:" in run.stderr
    assert "stray.json: not in MANIFEST.tsv" in run.stderr
    assert all(f"{row.split(chr(9))[0]}: missing" in run.stderr for row in manifest.splitlines()[2:])


def docs_commands():
    """Every command line of the docs' bash blocks, continuation lines joined, spaces single."""
    commands = set()
    for page in (REPO / "docs").rglob("*.md"):
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                commands.add(" ".join(line.split("#")[0].split()))
    return commands


def test_every_manifest_command_is_in_the_docs():
    rows = (REPO / "runs" / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) >= 3
    commands = docs_commands()
    for row in rows:
        file, command = row.split("\t")[0], row.split("\t")[-1]
        assert command in commands, f"{file}: its command is in no bash block of docs/: {command}"
        out = command.split("--out ")[1].split()[0]
        assert file.endswith(f"/{out}.xz") or f"runs/{file}".startswith(f"{out}/"), (file, out)  # a file or a folder

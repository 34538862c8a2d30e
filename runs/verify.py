"""Check the published raw run outputs against runs/MANIFEST.tsv (standard library only).

    python runs/verify.py                  # every file: its size and both checksums
    python runs/verify.py --unpack FILE    # also write FILE (NAME.json.xz)'s content to ./NAME.json

MANIFEST.tsv has one row per file: its path under runs/, its size in bytes, the sha256 of
the compressed file, the size and sha256 of its content (the JSON the command wrote) and
the command, as docs/cycles.md writes it. Exit status 0 when every row matches, 1 otherwise
(one line per mismatch on stderr).
"""

import argparse
import csv
import hashlib
import lzma
import sys
from pathlib import Path

RUNS = Path(__file__).resolve().parent
MANIFEST = RUNS / "MANIFEST.tsv"
COLUMNS = ["file", "bytes", "sha256", "content_bytes", "content_sha256", "command"]


def rows():
    """The manifest's rows, as dicts of its columns."""
    with MANIFEST.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if reader.fieldnames != COLUMNS:
            raise ValueError(f"{MANIFEST.name}: columns {reader.fieldnames}, expected {COLUMNS}")
        return list(reader)


def content(path):
    """The uncompressed content of a published file."""
    return lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()


def problems(row):
    """What does not match in one row (an empty list when all does)."""
    path = RUNS / row["file"]
    if not path.is_file():
        return [f"{row['file']}: missing"]
    found = []
    packed = path.read_bytes()
    if len(packed) != int(row["bytes"]):
        found.append(f"{row['file']}: {len(packed)} bytes, the manifest says {row['bytes']}")
    if hashlib.sha256(packed).hexdigest() != row["sha256"]:
        found.append(f"{row['file']}: sha256 differs from the manifest's")
    try:
        data = content(path)
    except lzma.LZMAError as error:
        return [*found, f"{row['file']}: cannot be decompressed ({error})"]
    if len(data) != int(row["content_bytes"]):
        found.append(f"{row['file']}: content of {len(data)} bytes, the manifest says {row['content_bytes']}")
    if hashlib.sha256(data).hexdigest() != row["content_sha256"]:
        found.append(f"{row['file']}: the content's sha256 differs from the manifest's")
    return found


UNFINISHED = "unfinished"  # runs in progress: their resumable records, published when done, not before


def unlisted():
    """Files under runs/ that the manifest does not list (besides this script, the manifest,
    the README, the content of a listed file, unpacked beside it, and the resumable records
    of unfinished runs in runs/unfinished/)."""
    listed = {row["file"] for row in rows()}
    listed |= {name.removesuffix(".xz") for name in listed}
    own = {"verify.py", "MANIFEST.tsv", "README.md"}
    files = (
        p.relative_to(RUNS).as_posix()
        for p in RUNS.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.relative_to(RUNS).parts[0] != UNFINISHED
    )
    return sorted(name for name in files if name not in listed and name not in own)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check runs/ against runs/MANIFEST.tsv.")
    parser.add_argument(
        "--unpack", metavar="FILE", action="append", default=[], help="also write FILE's content in this folder"
    )
    args = parser.parse_args(argv)
    found = [problem for row in rows() for problem in problems(row)]
    found += [f"{name}: not in {MANIFEST.name}" for name in unlisted()]
    for problem in found:
        print(f"runs/verify.py: {problem}", file=sys.stderr)
    if found:
        return 1
    for name in args.unpack:
        path = Path(name)
        if path.suffix != ".xz":
            print(f"runs/verify.py: --unpack: {name} is not a .xz file", file=sys.stderr)
            return 1
        Path(path.with_suffix("").name).write_bytes(content(path))
        print(f"{path.with_suffix('').name} written")
    print(f"{len(rows())} files match {MANIFEST.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

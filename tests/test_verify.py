"""``beggar cycles verify``: passes on a fresh census and on every published one, fails
(exit 1, a line naming the unit and the field) on a file with one count altered, refuses
what is no census (exit 2, one line)."""

import json
from pathlib import Path

import pytest
from conftest import beggar, beggar_in_process, one_line

from beggar_env.cycles import census, verify

REPO = Path(__file__).resolve().parents[1]
DECK = "JJQQKKAA--------"
RANGE = ["--source", "every", "--deck", DECK, "--first", "20000000", "--positions", "40000", "--unit", "15000"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    path = tmp_path_factory.mktemp("verify") / "c.json"
    census.census(2, "every", deck=DECK, first=20_000_000, n=40_000, unit=15_000, out=path)
    return path


def test_a_fresh_census_verifies(fresh, capsys):
    run = beggar_in_process(capsys, "cycles", "verify", str(fresh), "--sample", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all agree" in run.stdout and "2 of its 3 units played again" in run.stdout
    found = verify.verify(fresh, sample=3)
    assert not found.disagreements and found.cycles > 5 and found.games > 40 and found.positions == 40_000


def altered(fresh, tmp_path, change):
    record = json.loads(fresh.read_text())
    change(record)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda r: r["manifest"]["units"][2]["lengths"].__setitem__(5, r["manifest"]["units"][2]["lengths"][5] + 1),
         "units[2] (first 20,025,000, count 15,000): lengths"),
        (lambda r: r["manifest"]["units"][1].update(hash="0" * 16), "units[1] (first 20,010,000, count 15,000): hash"),
        (lambda r: r["manifest"]["units"][0]["never"][0].update(tricks=99), "never[0]: position"),
        (lambda r: r["longest"].update(cards=r["longest"]["cards"] - 1), "longest"),
        (lambda r: r.update(ended=r["ended"] + 1), "ended"),
    ],
)  # fmt: skip
def test_one_altered_count_fails_with_a_line_naming_it(fresh, tmp_path, change, words):
    path = altered(fresh, tmp_path, change)
    found = verify.verify(path, sample=3)
    assert found.disagreements and any(words in line for line in found.disagreements), found.disagreements
    run = beggar("cycles", "verify", str(path), "--sample", "3", timeout=600)
    assert run.returncode == 1, run.stderr
    assert any(words in line for line in run.stdout.splitlines()) and "disagreement" in run.stdout.splitlines()[-1]


def test_what_is_no_census_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "x.json").write_text('{"kind": "beggar-cycles-census"}')
    one_line(beggar_in_process(capsys, "cycles", "verify", str(tmp_path / "x.json")), 2, "verify")
    one_line(beggar_in_process(capsys, "cycles", "verify", str(tmp_path / "none.json")), 2, "does not exist")
    one_line(beggar_in_process(capsys, "cycles", "verify", str(tmp_path / "x.json"), "--sample", "-1"), 2, "--sample")


@pytest.mark.parametrize("name", ["every-2x-4-2p", "every-2x-10-2p", "every-2x-20-2p", "random-18-2p"])
def test_published_censuses_verify(name):
    """Files of before work units: their cycles and longest game replayed (no units to play again)."""
    found = verify.verify(REPO / "docs" / "cycles" / f"{name}.json")
    assert not found.disagreements and "no manifest" in found.summary()


def published_with_manifests():
    """The censuses published with their work units' manifests: in docs/cycles/, and in
    runs/ (xz)."""
    docs = [p for p in sorted((REPO / "docs" / "cycles").glob("every-*.json")) if '"manifest"' in p.read_text()]
    return docs + sorted((REPO / "runs" / "cycles").glob("every-*.json.xz"))


@pytest.mark.slow
@pytest.mark.parametrize("published", published_with_manifests(), ids=lambda path: path.name)
def test_published_censuses_with_manifests_verify(published, tmp_path):
    """Their parts against each other, every cycle and never-ending deal and longest game
    replayed (units played again whole: the small ones only, the rest is the fresh census above)."""
    import lzma

    path = published
    if published.suffix == ".xz":
        path = tmp_path / published.name.removesuffix(".xz")
        path.write_bytes(lzma.decompress(published.read_bytes()))
    record = json.loads(path.read_text())
    found = verify.verify(path, sample=1 if record["games"] <= 50_000_000 else 0, threads=2)
    assert not found.disagreements, found.disagreements
    assert record["manifest"]["units"] and found.games >= record["games"] - record["ended"]

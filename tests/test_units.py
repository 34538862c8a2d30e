"""Work units (``beggar_env.cycles.units``): a unit's digest is the same whoever plays it,
on any number of threads, in one run or resumed, locally or on Ray; the manifest in the
census's file reads back and adds up to the census."""

import json

import pytest

from beggar_env.cycles import census, records, units

DECK = "JJQQKKAA--------"  # 16 cards: never-ending deals in the range below
RANGE = dict(deck=DECK, first=20_000_000, n=40_000, unit=15_000)


def digests(result):
    return [d.record(units.unit_count(d, result.unit, RANGE["first"] + RANGE["n"])) for d in result.units]


def test_the_units_of_a_census_are_the_same_on_any_number_of_threads():
    one = census.census(2, "every", threads=1, **RANGE)
    two = census.census(2, "every", threads=2, **RANGE)
    assert digests(one) == digests(two)
    assert [(d.first, d.games) for d in one.units] == [(20_000_000, 10_000), (20_010_000, 15_000), (20_025_000, 15_000)]
    assert sum(len(d.never) for d in one.units) == sum(c.reached for c in one.cycles.values()) > 0
    assert sum(d.ended for d in one.units) == one.ended and max(d.longest_cards for d in one.units) == one.longest_cards


def test_a_unit_played_alone_has_the_digest_it_has_within_its_census():
    whole = census.census(2, "every", threads=2, **RANGE)
    alone = census.census(2, "every", deck=DECK, first=20_010_000, n=15_000, unit=15_000, threads=1)
    assert alone.units == [whole.units[1]]


def test_a_random_census_has_units_too():
    one = census.census(3, "random", deck=DECK, n=20_000, seed=4, unit=8_000, threads=1)
    two = census.census(3, "random", deck=DECK, n=20_000, seed=4, unit=8_000, threads=2)
    assert one.units == two.units and [d.games for d in one.units] == [8_000, 8_000, 4_000]


def test_the_manifest_is_written_and_read_back_and_a_resumed_census_keeps_it(tmp_path):
    path = tmp_path / "c.json"
    stops = []

    def stop(done, n):
        stops.append(done)
        if len(stops) == 2:
            raise KeyboardInterrupt

    wide = {**RANGE, "unit": 30_000}  # units end at 20,010,000 and 20,040,000
    with pytest.raises(KeyboardInterrupt):
        census.census(2, "every", out=path, threads=1, progress=stop, **wide)
    cut = records.read_census(path)
    assert cut["done"] == 10_000 + census.CHUNK and cut["manifest"]["units"][-1]["games"] == census.CHUNK
    with pytest.raises(ValueError, match="other settings: unit"):
        census.census(2, "every", out=path, resume=True, **{**wide, "unit": 10})
    resumed = census.census(2, "every", out=path, resume=True, threads=2, **{**wide, "unit": None})
    whole = census.census(2, "every", threads=2, **wide)
    assert resumed == whole and resumed.units == whole.units
    record = records.read_census(path)
    assert record["manifest"]["unit"] == 30_000 and record["manifest"]["engine"]
    assert [u["count"] for u in record["manifest"]["units"]] == [10_000, 30_000]


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda r: r["manifest"]["units"][1].update(ended=r["manifest"]["units"][1]["ended"] - 1), "units[1]: lengths"),
        (lambda r: r["manifest"]["units"][0].update(first=5), "units[0]: first is 5"),
        (lambda r: r["manifest"]["units"].pop(), "games add up to"),
    ],
)
def test_a_manifest_that_does_not_add_up_is_refused(tmp_path, change, words):
    path = tmp_path / "c.json"
    census.census(2, "every", out=path, threads=2, **RANGE)
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        records.read_census(path)


@pytest.mark.slow
def test_units_on_ray_have_the_local_digests(ray_cluster, monkeypatch):
    monkeypatch.setattr(census, "RAY_TASK_POSITIONS", 4_000)  # tasks cut at the units' bounds too
    local = census.census(2, "every", threads=2, **RANGE)
    on_ray = census.census(2, "every", backend="ray", **RANGE)
    assert on_ray == local and on_ray.units == local.units and len(local.units) == 3

"""The files of the cycles wing: each run's JSON record (its ``kind`` and the package's
version first), its destination checked before any work, locked for the run and replaced
whole (:mod:`beggar_env.files`); a census's file, written as it runs (:class:`Checkpoints`)
and checked before it is continued (:func:`read_census`)."""

import os
import time
from contextlib import contextmanager

from .. import __version__, checks, deals, files
from ..schemas import array, integer, number, obj

CHECKPOINT_SECONDS = 30  # how often a census with ``out`` is written while it runs
CENSUS_SETTINGS = ("players", "source", "deck", "first", "positions")  # a resumed census must be run with these


def kind(name) -> str:
    """The ``kind`` of a record: ``beggar-cycles-NAME``."""
    return f"beggar-cycles-{name}"


@contextmanager
def output(out, name="out", suffix=".json"):
    """The file ``out`` names (``suffix`` added), checked and locked for the block, so that
    a second run on it is refused at once (``files.InUse``); None for no file."""
    if out is None:
        yield None
        return
    path = files.output_path(out, suffix, name=name)
    with files.exclusive(path):
        yield path


def write(path, name, record):
    """``record`` as the whole of ``path`` (nothing when ``path`` is None)."""
    if path is not None:
        files.write_json(path, {"kind": kind(name), "version": __version__, **record})


# ------------------------------------------------------------------------ a census

CENSUS_BYTES = 256 * 2**20  # the most of a census file read (a cycle is about 100 bytes: 2 million cycles)
MAX_SECONDS = 10**10  # a census's seconds (three centuries): no file holds more
_WHOLE = integer(0, checks.MAX_COUNT)
_POSITIVE = integer(1, checks.MAX_COUNT)
_KEY = {"type": "string", "pattern": "^[-JQKA/]+$", "maxLength": 55}
_LONGEST = obj({"cards": _WHOLE, "tricks": _WHOLE, "index": integer(-1, checks.MAX_COUNT)}, closed=True)
UNIT_SCHEMA = obj(  # a work unit's digest (units.Digest.record)
    {
        "first": _WHOLE,
        "count": _POSITIVE,
        "games": _WHOLE,
        "ended": _WHOLE,
        "lengths": array(_WHOLE, 0, 64),
        "hash": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "longest": _LONGEST,
        "never": array(obj({"index": _WHOLE, "key": _KEY, "cards": _POSITIVE, "tricks": _POSITIVE}, closed=True)),
    },
    closed=True,
)
MANIFEST_SCHEMA = obj(  # a census's units (units.manifest)
    {
        "engine": {"type": "string", "maxLength": 100},
        "unit": _POSITIVE,
        "hash": {"type": "string", "maxLength": 200},
        "lengths": {"type": "string", "maxLength": 200},
        "units": array(UNIT_SCHEMA),
    },
    closed=True,
)
CENSUS_SCHEMA = obj(  # the file of a census (census.Census.record), as read_census checks it
    {
        "kind": {"const": kind("census")},
        "players": integer(2, 4),
        "source": {"enum": ["random", "every"]},
        "deck": {"type": "string", "pattern": "^[-JQKAjqka]+$", "maxLength": 52},
        "first": _WHOLE,
        "positions": {"type": ["integer", "null"], "minimum": 1, "maximum": checks.MAX_COUNT},
        "seed": integer(0, checks.MAX_SEED),
        "seconds": number(0, MAX_SECONDS),
        "done": {"type": ["integer", "null"], "minimum": 0, "maximum": checks.MAX_COUNT},
        "complete": {"type": "boolean"},
        "games": _WHOLE,
        "ended": _WHOLE,
        "longest": _LONGEST,
        "cycles": array(
            obj(
                {
                    "key": _KEY,
                    "cards": _POSITIVE,
                    "tricks": _POSITIVE,
                    "reached": _POSITIVE,
                },
                closed=True,
            )
        ),
        "manifest": MANIFEST_SCHEMA,
    },
    optional=("done", "complete", "manifest"),  # older censuses have no manifest, the oldest no done nor complete
)


def read_census(path) -> dict:
    """The census record in ``path`` (``census.Census.record``), checked: its schema, then
    that its parts agree (:data:`CENSUS_CHECKS`); ``ValueError`` naming the file and what
    is wrong. A file written before censuses could be continued has no ``done`` nor
    ``complete``: it is complete. That each cycle's key is a cycle of that period is the
    engine's to check (``census``, before a census is continued; ``beggar cycles verify``)."""
    record = read_census_schema(path)
    problems = census_problems(record)
    if problems:
        raise ValueError(f"{os.fspath(path)}: {problems[0]}")
    return record


def read_census_schema(path) -> dict:
    """The census record in ``path`` checked against its schema only (``ValueError``), its
    ``done`` and ``complete`` filled in for a file of before they were written."""
    record = files.read_json(path, CENSUS_SCHEMA, CENSUS_BYTES)
    if "done" not in record and "complete" not in record:
        record.update(done=None, complete=True)
    elif "done" not in record or "complete" not in record:
        raise ValueError(f"{os.fspath(path)}: a census file has both done and complete, or neither")
    return record


def census_problems(record) -> list:
    """What :data:`CENSUS_CHECKS` find wrong in a census record, a line each (the checks
    after a failed deck or range check are not run: they need both)."""
    problems = []
    for check in CENSUS_CHECKS:
        try:
            check(record)
        except ValueError as error:
            problems.append(str(error))
            if check in (check_deck, check_range):
                break
    return problems


def census_positions(record) -> int:
    """How many positions the census of ``record`` plays: its ``positions``, or every deal
    of its deck from ``first`` on."""
    if record["positions"] is not None:
        return record["positions"]
    if record["source"] == "random":
        raise ValueError("a random census has a number of positions, not null")
    return deals.count_deals(deals.deck_counts(record["deck"])) - record["first"]


def check_deck(record):
    """The deck is one a census plays (``deals.deck_counts``)."""
    deals.deck_counts(record["deck"])


def check_range(record):
    """Its positions lie within the source: every deal of the deck, or int64 indices."""
    total = deals.count_deals(deals.deck_counts(record["deck"])) if record["source"] == "every" else checks.MAX_COUNT
    n = census_positions(record)
    if n < 0 or record["first"] + n > total:
        raise ValueError(
            f"first ({checks.number_text(record['first'])}) and positions ({checks.number_text(n)}) run past the "
            f"{total:,} positions of its source"
        )


def check_progress(record):
    """``complete`` agrees with ``done``, which counts its games, all of them once complete."""
    n, done, games = census_positions(record), record["done"], record["games"]
    if record["complete"] != (done is None):
        raise ValueError(f"complete is {record['complete']} but done is {done}")
    if done is not None and done != games:
        raise ValueError(f"done ({done:,}) must equal games ({games:,})")
    if record["complete"] and games != n:
        raise ValueError(f"a complete census plays all its {n:,} positions, not {games:,} (games)")
    if games > n:
        raise ValueError(f"games ({games:,}) must be at most its {n:,} positions")


def check_outcomes(record):
    """Every game either ended or reached a cycle: ended and the cycles' reached add up to games."""
    reached = sum(cycle["reached"] for cycle in record["cycles"])
    if record["ended"] + reached != record["games"]:
        raise ValueError(
            f"ended ({record['ended']:,}) and the cycles' reached ({reached:,}) add up to no games "
            f"({record['games']:,})"
        )


def check_longest(record):
    """The longest game is one that ended, among the positions played (none: index -1, no cards)."""
    longest, first = record["longest"], record["first"]
    if record["ended"] == 0:
        if (longest["index"], longest["cards"], longest["tricks"]) != (-1, 0, 0):
            raise ValueError("longest: no game ended, so its index is -1 and its cards and tricks 0")
        return
    if not first <= longest["index"] < first + record["games"]:
        raise ValueError(
            f"longest: index {longest['index']:,} is not one of the positions played "
            f"({first:,} to {first + record['games'] - 1:,})"
        )
    if not 1 <= longest["tricks"] <= longest["cards"]:
        raise ValueError(f"longest: {longest['cards']:,} cards in {longest['tricks']:,} tricks is no game")


def check_cycles(record):
    """Each cycle once, its key a position of the census's players and deck, its tricks
    at most its cards."""
    cards = sorted(record["deck"].upper())
    seen = set()
    for at, cycle in enumerate(record["cycles"]):
        key, where = cycle["key"], f"cycles[{at}]"
        if key in seen:
            raise ValueError(f"{where}: the cycle {checks.excerpt(key)} is listed twice")
        seen.add(key)
        if key.count("/") + 1 != record["players"]:
            raise ValueError(f"{where}: the key {checks.excerpt(key)} is no position of {record['players']} players")
        if sorted(key.replace("/", "")) != cards:
            raise ValueError(f"{where}: the key {checks.excerpt(key)} does not hold the deck's cards")
        if cycle["tricks"] > cycle["cards"]:
            raise ValueError(f"{where}: a period of {cycle['cards']:,} cards in {cycle['tricks']:,} tricks is none")


def check_manifest(record):
    """The units of the manifest, if any, follow one another from ``first``, each within one
    unit of the manifest's size, all complete but the last, and add up to the census: games,
    ended, the longest game, and the cycles with their reached (from each unit's ``never``)."""
    manifest = record.get("manifest")
    if manifest is None:
        return
    size, at, last = manifest["unit"], record["first"], record["first"] + census_positions(record)
    for k, unit in enumerate(manifest["units"]):
        where = f"manifest: units[{k}]"
        if unit["first"] != at:
            raise ValueError(f"{where}: first is {unit['first']:,}, not {at:,} (where the unit before ends)")
        bound = min((at // size + 1) * size, last)
        if unit["count"] != bound - at:
            raise ValueError(f"{where}: count is {unit['count']:,}, not {bound - at:,} (units of {size:,})")
        if unit["games"] > unit["count"] or (unit["games"] < unit["count"] and k + 1 < len(manifest["units"])):
            raise ValueError(f"{where}: games ({unit['games']:,}) must be its count, or fewer in the last unit")
        _check_unit(unit, where)
        at += unit["games"]
    totals = _unit_totals(manifest["units"])
    for name in ("games", "ended"):
        if totals[name] != record[name]:
            raise ValueError(f"manifest: its units' {name} add up to {totals[name]:,}, not {record[name]:,}")
    if totals["longest"] != record["longest"]:
        raise ValueError(f"manifest: its units' longest game is {totals['longest']}, not {record['longest']}")
    listed = {c["key"]: (c["cards"], c["tricks"], c["reached"]) for c in record["cycles"]}
    if totals["cycles"] != listed:
        differ = sorted(set(totals["cycles"].items()) ^ set(listed.items()))[0][0]
        raise ValueError(f"manifest: its units' never-ending games do not give the cycles listed: {differ}")


def _check_unit(unit, where):
    """A unit's parts agree: its histogram counts its ended games, its never-ending games
    are the rest, in order within it, and its longest game is one of its own."""
    if sum(unit["lengths"]) != unit["ended"]:
        raise ValueError(f"{where}: lengths add up to {sum(unit['lengths']):,}, not ended ({unit['ended']:,})")
    if unit["ended"] + len(unit["never"]) != unit["games"]:
        raise ValueError(f"{where}: ended and never-ending games add up to no games ({unit['games']:,})")
    indices = [n["index"] for n in unit["never"]]
    if indices != sorted(set(indices)) or any(not unit["first"] <= i < unit["first"] + unit["games"] for i in indices):
        raise ValueError(f"{where}: never: indices must rise, each one of its positions")
    longest = unit["longest"]
    if unit["ended"] and not unit["first"] <= longest["index"] < unit["first"] + unit["games"]:
        raise ValueError(f"{where}: longest: index {longest['index']:,} is not one of its positions")
    if unit["ended"] and longest["cards"].bit_length() != len(unit["lengths"]) - 1:
        raise ValueError(f"{where}: longest: {longest['cards']:,} cards is not in its last bucket of lengths")


def _unit_totals(units):
    """The census that units add up to: games, ended, longest, cycles (key: cards, tricks, reached)."""
    totals = {"games": 0, "ended": 0, "longest": {"cards": 0, "tricks": 0, "index": -1}, "cycles": {}}
    for unit in units:
        totals["games"] += unit["games"]
        totals["ended"] += unit["ended"]
        if unit["longest"]["cards"] > totals["longest"]["cards"]:
            totals["longest"] = dict(unit["longest"])
        for n in unit["never"]:
            cards, tricks, reached = totals["cycles"].get(n["key"], (n["cards"], n["tricks"], 0))
            totals["cycles"][n["key"]] = (cards, tricks, reached + 1)
    return totals


CENSUS_CHECKS = (
    check_deck, check_range, check_progress, check_outcomes, check_longest, check_cycles, check_manifest
)  # fmt: skip


class Checkpoints:
    """Writes a census (``so_far``: a ``census.Census``) to its file every
    :data:`CHECKPOINT_SECONDS`, and on demand; ``done``: the positions played this session."""

    def __init__(self, path, settings, done_before):
        self.path, self.settings, self.done_before = path, settings, done_before
        self.last = time.perf_counter()

    def write(self, so_far, done, complete=False):
        record = so_far.record(self.settings, None if complete else self.done_before + done)
        files.write_json(self.path, record)
        self.last = time.perf_counter()

    def due(self):
        return time.perf_counter() - self.last >= CHECKPOINT_SECONDS

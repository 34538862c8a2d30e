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
        "longest": obj(
            {"cards": _WHOLE, "tricks": _WHOLE, "index": integer(-1, checks.MAX_COUNT)},
            closed=True,
        ),
        "cycles": array(
            obj(
                {
                    "key": {"type": "string", "pattern": "^[-JQKA/]+$", "maxLength": 55},
                    "cards": _POSITIVE,
                    "tricks": _POSITIVE,
                    "reached": _POSITIVE,
                },
                closed=True,
            )
        ),
    },
    optional=("done", "complete"),  # a census written before censuses could be continued has neither
)


def read_census(path) -> dict:
    """The census record in ``path`` (``census.Census.record``), checked: its schema, then
    that its parts agree (:data:`CENSUS_CHECKS`); ``ValueError`` naming the file and what
    is wrong. A file written before censuses could be continued has no ``done`` nor
    ``complete``: it is complete. That each cycle's key is a cycle of that period is the
    engine's to check (``census``, before a census is continued)."""
    record = files.read_json(path, CENSUS_SCHEMA, CENSUS_BYTES)
    if "done" not in record and "complete" not in record:
        record.update(done=None, complete=True)
    elif "done" not in record or "complete" not in record:
        raise ValueError(f"{os.fspath(path)}: a census file has both done and complete, or neither")
    for check in CENSUS_CHECKS:
        try:
            check(record)
        except ValueError as error:
            raise ValueError(f"{os.fspath(path)}: {error}") from None
    return record


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


CENSUS_CHECKS = (check_deck, check_range, check_progress, check_outcomes, check_longest, check_cycles)


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

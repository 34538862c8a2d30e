"""The files of the cycles wing: each run's JSON record (its ``kind`` and the package's
version first), its destination checked before any work, locked for the run and replaced
whole (:mod:`beggar_env.files`); a census's file, written as it runs (:class:`Checkpoints`)
and checked before it is continued (:func:`read_census`)."""

import os
import time
from contextlib import contextmanager

from .. import __version__, checks, files

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

_WHOLE = {"type": "integer", "minimum": 0}
CENSUS_SCHEMA = {  # the file of a census (census.Census.record), as read_census checks it
    "type": "object",
    "required": [
        "kind",
        *CENSUS_SETTINGS,
        "seed",
        "seconds",
        "games",
        "ended",
        "longest",
        "cycles",
    ],
    "properties": {
        "kind": {"const": kind("census")},
        "players": {"type": "integer", "minimum": 2, "maximum": 4},
        "source": {"enum": ["random", "every"]},
        "deck": {"type": "string", "pattern": "^[-JQKAjqka]+$"},
        "first": _WHOLE,
        "positions": {"type": ["integer", "null"], "minimum": 0},
        "seed": {"type": "integer", "minimum": 0, "maximum": checks.MAX_SEED},
        "seconds": {"type": "number", "minimum": 0},
        "done": {"type": ["integer", "null"], "minimum": 0},
        "complete": {"type": "boolean"},
        "games": _WHOLE,
        "ended": _WHOLE,
        "longest": {
            "type": "object",
            "required": ["cards", "tricks", "index"],
            "properties": {"cards": _WHOLE, "tricks": _WHOLE, "index": {"type": "integer", "minimum": -1}},
        },
        "cycles": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "cards", "tricks", "reached"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string", "pattern": "^[-JQKA/]+$"},
                    "cards": {"type": "integer", "minimum": 1},
                    "tricks": {"type": "integer", "minimum": 1},
                    "reached": {"type": "integer", "minimum": 1},
                },
            },
        },
    },
}


def read_census(path) -> dict:
    """The census record in ``path`` (``census.Census.record``), checked: ``ValueError``
    naming the file and what is wrong. A file written before censuses could be continued
    has no ``done`` nor ``complete``: it is complete."""
    record = files.read_json(path, CENSUS_SCHEMA)
    if "done" not in record and "complete" not in record:
        record.update(done=None, complete=True)
    elif "done" not in record or "complete" not in record:
        raise ValueError(f"{os.fspath(path)}: a census file has both done and complete, or neither")
    where = os.fspath(path)
    if record["complete"] != (record["done"] is None):
        raise ValueError(f"{where}: complete is {record['complete']} but done is {record['done']}")
    if record["done"] is not None and record["done"] != record["games"]:
        raise ValueError(f"{where}: done ({record['done']:,}) must equal games ({record['games']:,})")
    reached = sum(cycle["reached"] for cycle in record["cycles"])
    if record["ended"] + reached != record["games"]:
        raise ValueError(
            f"{where}: ended ({record['ended']:,}) and the cycles' reached ({reached:,}) add up to no games"
        )
    return record


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

"""``beggar cycles verify``: check a census's file against the engine, as a stranger would.

:func:`verify` reads a census's file (its schema: a file that is no census is refused with
``ValueError``), then lists every disagreement it finds, one line each:

* its parts, against each other (``records.census_problems``: the census and its
  manifest's units add up, each unit's digest holds together);
* every cycle it lists, replayed from its key (``census.cycle_of``);
* every position a unit says never ends, and every longest game (the census's and each
  unit's), placed from its index and played again with cycle detection from its first
  card (:func:`walk.ranked`: not the walk that made the census);
* a sample of its units (``sample``, drawn with ``seed``), played again whole
  (``census.census`` of the unit's range) and compared with the manifest, field by field.

An empty list is a census that agrees with the engine on all of it.
"""

import random
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, checks, core, deals
from . import census, positions, records, walk
from .cycle_keys import key_text

SAMPLE = 1  # units played again, by default


@dataclass
class Verified:
    """What :func:`verify` checked and what disagreed (a line each)."""

    path: str
    disagreements: list = field(default_factory=list)
    cycles: int = 0  # cycles replayed from their keys
    games: int = 0  # positions placed from their index and played again
    units: int = 0  # units in the manifest
    rerun: list = field(default_factory=list)  # the units played again (their numbers)
    positions: int = 0  # positions of the units played again
    engine: str | None = None  # the manifest's engine version

    def summary(self) -> str:
        """One line: what was checked."""
        if self.engine is None:
            units_part = "no manifest (a census of before work units): no unit to play again"
        else:
            rerun = ", ".join(map(str, self.rerun)) or "none"
            units_part = f"{len(self.rerun)} of its {self.units:,} units played again (units {rerun}; "
            units_part += f"{self.positions:,} positions)"
            if self.engine != __version__:
                units_part += f"; made by engine {self.engine}, checked by {__version__}"
        return (
            f"{self.path}: all agree: {self.cycles} cycles replayed from their keys, {self.games:,} games "
            f"played again from their index; {units_part}"
        )


def verify(path, sample=SAMPLE, seed=0, threads=None) -> Verified:
    """Check the census in ``path`` (see the module): its disagreements, and what was checked.

    Parameters
    ----------
    path : a census's JSON file (``beggar cycles census --out``)
    sample : units to play again whole (at most all of them)
    seed : which units (a seeded draw)
    threads : this machine's threads (None: all)
    """
    sample = checks.integer("sample", sample, 0, checks.MAX_COUNT)
    seed = int(checks.seed(seed))
    record = records.read_census_schema(path)
    found = Verified(str(path))
    say = found.disagreements.append
    problems = records.census_problems(record)
    for problem in problems:
        say(f"{path}: {problem}")
    if problems and problems[-1] in _fatal(record):
        return found  # no deck or no range: nothing to play
    _replay_cycles(record, found, say)
    _replay_games(record, found, say, threads)
    manifest = record.get("manifest")
    if manifest is not None:
        found.engine, found.units = manifest["engine"], len(manifest["units"])
        _rerun_units(record, sample, seed, threads, found, say)
    return found


def _fatal(record):
    """The problems after which nothing can be played: a deck or range that is none."""
    fatal = []
    for check in (records.check_deck, records.check_range):
        try:
            check(record)
        except ValueError as error:
            fatal.append(str(error))
    return fatal


def _replay_cycles(record, found, say):
    for at, cycle in enumerate(record["cycles"]):
        reached = census.cycle_of(cycle["key"]) if _is_position(cycle["key"], record) else None
        found.cycles += 1
        claimed = (cycle["key"], cycle["cards"], cycle["tricks"])
        if reached is None or (reached.key, reached.cards, reached.tricks) != claimed:
            got = "its game ends" if reached is None else _outcome(False, reached.cards, reached.tricks, reached.key)
            said = _outcome(False, cycle["cards"], cycle["tricks"], cycle["key"])
            say(f"cycles[{at}]: the file says {said}; played from its key, {got}")


def _is_position(key, record):
    """A key of the census's players and deck (else it is not played: check_cycles says so)."""
    return key.count("/") + 1 == record["players"] and sorted(key.replace("/", "")) == sorted(record["deck"].upper())


def _replay_games(record, found, say, threads):
    """Every never-ending position a unit names and every longest game, played again."""
    claims = []  # (where, index, ends, cards, tricks, key)
    longest = record["longest"]
    if longest["index"] >= 0:
        claims.append(("longest", longest["index"], True, longest["cards"], longest["tricks"], None))
    for k, unit in enumerate((record.get("manifest") or {}).get("units", ())):
        where = _unit_name(k, unit)
        if unit["longest"]["index"] >= 0:
            u = unit["longest"]
            claims.append((f"{where}: longest", u["index"], True, u["cards"], u["tricks"], None))
        for j, n in enumerate(unit["never"]):
            claims.append((f"{where}: never[{j}]", n["index"], False, n["cards"], n["tricks"], n["key"]))
    played = play_again(record, sorted({claim[1] for claim in claims}), threads)
    found.games = len(played)
    for where, index, ends, cards, tricks, key in claims:
        got = played[index]
        if got == (ends, cards, tricks, key):
            continue
        said, did = _outcome(ends, cards, tricks, key), _outcome(*got)
        say(f"{where}: position {index:,}: the file says it {said}; played again, it {did}")


def play_again(record, indices, threads=None) -> dict:
    """Positions ``indices`` of the census's source, each placed from its index and played
    with cycle detection from its first card (:func:`walk.ranked`): index -> (ends, cards,
    tricks, key), for a game that ends (True, its cards, its tricks, None), for one that
    never ends (False, its period in cards and tricks, its cycle's key)."""
    from ..jit import parallel

    counts = deals.deck_counts(record["deck"])
    n_players, n_cards = record["players"], int(sum(counts))
    out = {}
    groups = []  # (source, deck or prefix, counts, local indices, their indices)
    if record["source"] == "random":
        classes = np.repeat(np.arange(core.N_CLASSES, dtype=np.int8), counts)
        groups.append((0, classes, counts, list(indices), list(indices)))
    else:
        by_block = {}
        for index in indices:
            prefix, rest, local, _ = next(positions.blocks(counts, index, 1))
            block = by_block.setdefault(prefix.tobytes(), (prefix, rest, [], []))
            block[2].append(local)
            block[3].append(index)
        groups.extend((1, prefix, rest, local, whole) for prefix, rest, local, whole in by_block.values())
    with parallel(threads) as n_threads:
        for source, deck, rest, local, whole in groups:
            if not local:
                continue
            rows = max(1, min(4 * n_threads, len(local)))
            work = core.new_work(rows, n_players, core.capacity_for(n_cards))
            results = core.new_results(rows, n_players)
            keys = np.zeros((len(local), n_cards + n_players - 1), np.int8)
            periods = np.zeros((len(local), 2), np.int64)
            each = np.zeros((len(local), 2), np.int64)
            seed = np.uint64(record["seed"])
            walk.ranked(source, seed, deck, np.asarray(rest, np.int64), np.array(local, np.int64), work, results, keys,
                        periods, each)  # fmt: skip
            for at, index in enumerate(whole):
                if periods[at, 1]:
                    out[index] = (False, int(periods[at, 0]), int(periods[at, 1]), key_text(keys[at]))
                else:
                    out[index] = (True, int(each[at, 0]), int(each[at, 1]), None)
    return out


def _outcome(ends, cards, tricks, key):
    return f"ends in {cards} cards, {tricks} tricks" if ends else f"never ends: {key} ({cards} cards, {tricks} tricks)"


def _unit_name(k, unit):
    return f"units[{k}] (first {unit['first']:,}, count {unit['count']:,})"


def _rerun_units(record, sample, seed, threads, found, say):
    manifest = record["manifest"]
    candidates = [k for k, unit in enumerate(manifest["units"]) if unit["games"] > 0]
    chosen = sorted(random.Random(seed).sample(candidates, min(sample, len(candidates))))
    for k in chosen:
        unit = manifest["units"][k]
        again = census.census(
            record["players"],
            record["source"],
            deck=record["deck"],
            first=unit["first"],
            n=unit["games"],
            seed=record["seed"],
            threads=threads,
            unit=manifest["unit"],
        )
        digest = again.units[0].record(unit["count"])
        for name in ("games", "ended", "lengths", "hash", "longest", "never"):
            if digest[name] != unit[name]:
                said, again_said = _short(unit[name]), _short(digest[name])
                say(f"{_unit_name(k, unit)}: {name}: the file says {said}, played again {again_said}")
        found.rerun.append(k)
        found.positions += unit["games"]


def _short(value):
    text = str(value)
    return text if len(text) <= 200 else text[:197] + "..."

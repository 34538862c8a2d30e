"""What a search keeps: the deals it found (:class:`Find`), the top K of them per
objective (:class:`TopLists`), and the JSON-lines file that holds them with the runs that
found them (:class:`FindsFile`).

The file starts with a header line, then one line per run (its settings and how far it
got, so that it can be resumed) and one line per deal in a list::

    {"kind": "header", "format": "beggar-search", "version": 1}
    {"kind": "run", "players": 2, "strategy": "random", "seed": 1, "deals_done": 1000000, ...}
    {"kind": "deal", "players": 2, "objective": "cards", "rank": 1, "score": 3142,
     "deal": "--A-.../...", "outcome": "win", "winner": 0, "cards": 3142, "tricks": 431, ...,
     "strategy": "random", "seed": 1, "index": 734512, "found_at": "2026-12-01T10:00:00Z"}

It is rewritten whole (a temporary file, then a rename) each time it changes, so an
interruption leaves the previous version; every deal is replayed by
:func:`beggar_env.play` before it is written, and again when a file is read.
"""

import json
import time
from dataclasses import MISSING, asdict, dataclass, field, fields, replace

import numpy as np

from .. import checks, core, files
from ..deals import format_deal, parse_deal

OBJECTIVES = ("cards", "tricks", "cycle")
FORMAT = {"kind": "header", "format": "beggar-search", "version": 1}
FINDS_BYTES = 128 * 2**20  # the most of a finds file read (10,000 deals a list, 9 lists: about 40 MB)
CYCLE_FIELDS = ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks")


def now():
    """The time, as the file writes it (UTC, to the second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Find:
    """A deal a search found, its game (as :class:`beggar_env.GameResult` reports it),
    and where it was found: ``strategy``, ``seed`` and ``index`` (the game's number in
    that seeded run: the same in every run with that seed) and ``found_at`` (UTC)."""

    players: int
    deal: str  # compact notation
    outcome: str
    winner: int | None
    cards: int
    tricks: int
    cycle_start_cards: int | None
    cycle_start_tricks: int | None
    cycle_cards: int | None
    cycle_tricks: int | None
    strategy: str
    seed: int
    index: int
    found_at: str | None = None

    @classmethod
    def from_record(cls, deal, record, **where) -> "Find":
        """From a deal and its result record (``core.result_dtype``)."""
        cycle = int(record["outcome"]) == core.Outcome.CYCLE
        winner = int(record["winner"])
        return cls(
            players=parse_deal(deal).n_players,
            deal=format_deal(deal, "compact"),
            outcome=core.OUTCOMES[int(record["outcome"])],
            winner=None if winner == core.NO_SEAT else winner,
            cards=int(record["cards"]),
            tricks=int(record["tricks"]),
            **{name: int(record[name]) if cycle else None for name in CYCLE_FIELDS},
            **where,
        )

    def score(self, objective) -> int:
        """Its place in an objective's list (as ``searchers.score``): -1 for none."""
        if objective == "cycle":
            return self.cards if self.outcome == "cycle" else -1
        if self.outcome != "win":
            return -1
        return self.cards if objective == "cards" else self.tricks

    def rank_key(self, objective):
        """Best first: the higher score, then the earlier game, then the deal's text."""
        return (-self.score(objective), self.index, self.deal)

    def game(self) -> dict:
        """The fields :func:`beggar_env.play` reports, for comparison with a replay."""
        return {name: getattr(self, name) for name in ("outcome", "winner", "cards", "tricks", *CYCLE_FIELDS)}


def _played(find):
    from ..game import play

    result = play(find.deal)
    return {name: getattr(result, name) for name in find.game()}


def _game_text(game):
    return ", ".join(f"{name} {value}" for name, value in game.items() if value is not None)


def replay(find: Find) -> Find:
    """``find``, once :func:`beggar_env.play` gives exactly its game; else ``RuntimeError``
    (a wrong result is never reported)."""
    replayed = _played(find)
    if replayed != find.game():
        raise RuntimeError(f"a search reported {find.game()} for {find.deal} but play() gives {replayed}: not written")
    return find


class TopLists:
    """The ``k`` best distinct deals of each objective, for one number of players."""

    def __init__(self, k):
        self.k = k
        self.lists = {objective: [] for objective in OBJECTIVES}

    def add(self, find) -> bool:
        """Put ``find`` in every list it enters; whether any list changed."""
        changed = False
        for objective, entries in self.lists.items():
            points = find.score(objective)
            if points < 0 or (len(entries) >= self.k and find.rank_key(objective) >= entries[-1].rank_key(objective)):
                continue
            same = next((i for i, entry in enumerate(entries) if entry.deal == find.deal), None)
            if same is not None:
                if find.rank_key(objective) >= entries[same].rank_key(objective):
                    continue
                del entries[same]
            entries.append(find)
            entries.sort(key=lambda entry: entry.rank_key(objective))
            del entries[self.k :]
            changed = True
        return changed

    def thresholds(self) -> np.ndarray:
        """Per objective, the score a game needs to be worth sending (int64): the k-th
        best score once a list is full, else 0."""
        return np.array(
            [entries[-1].score(o) if len(entries) >= self.k else 0 for o, entries in self.lists.items()], np.int64
        )

    def best(self, objective) -> Find | None:
        entries = self.lists[objective]
        return entries[0] if entries else None

    def finds(self) -> list:
        """Every deal in a list, once."""
        unique = {}
        for entries in self.lists.values():
            for find in entries:
                unique.setdefault(find.deal, find)
        return list(unique.values())


@dataclass
class Run:
    """One seeded search: its settings and how far it got. ``deals_done`` counts the
    games below which every game has been played (where a resumed run continues)."""

    players: int
    strategy: str
    seed: int
    objective: str | None = None  # local only: what the walks climb
    walk_steps: int | None = None
    temperature: float | None = None
    starts: list = field(default_factory=list)
    budget: int | None = None  # the deal budget last asked for (None: none)
    deals_done: int = 0
    deals_tried: int = 0  # games played in all sessions (an interrupted range is played again)
    seconds: float = 0.0
    sessions: int = 0
    backend: str = "local"
    started: str | None = None
    updated: str | None = None

    SETTINGS = ("players", "strategy", "seed", "objective", "walk_steps", "temperature", "starts")

    def same_search(self, other) -> bool:
        return all(getattr(self, name) == getattr(other, name) for name in self.SETTINGS)


class FindsFile:
    """The top lists of every player count and the runs, in memory and (with a path) on
    disk. ``save()`` replays any deal not yet replayed and rewrites the file atomically."""

    def __init__(self, path=None, k=10):
        self.path = path
        self.k = k
        self.tables = {}  # players -> TopLists
        self.runs = []
        self._replayed = set()  # deals play() has confirmed

    def table(self, players) -> TopLists:
        if players not in self.tables:
            self.tables[players] = TopLists(self.k)
        return self.tables[players]

    def add(self, find) -> bool:
        return self.table(find.players).add(find)

    def run_like(self, run) -> Run | None:
        """The run of this file with ``run``'s settings, if any."""
        return next((r for r in reversed(self.runs) if r.same_search(run)), None)

    def latest_seed(self, run) -> int | None:
        """The seed of the latest run with ``run``'s settings but the seed."""
        for r in reversed(self.runs):
            if all(getattr(r, n) == getattr(run, n) for n in Run.SETTINGS if n != "seed"):
                return r.seed
        return None

    # ------------------------------------------------------------------ disk

    @classmethod
    def read(cls, path, k=10) -> "FindsFile":
        """Read a file ``save`` wrote, replaying every deal in it; ``ValueError`` naming the
        line for anything else, a deal whose recorded game is not the one it plays included."""
        store = cls(path, k)
        lines = files.read_text(path, FINDS_BYTES).splitlines()
        if not lines or _json_line(path, 1, lines[0]) != FORMAT:
            raise ValueError(f"{path} is not a beggar search file (its first line is not {json.dumps(FORMAT)})")
        deal_counts = {}
        for number, text in enumerate(lines[1:], 2):
            if not text.strip():
                continue
            record = _json_line(path, number, text)
            kind = record.pop("kind", None)
            if kind == "run":
                store.runs.append(_build(path, number, Run, record))
            elif kind == "deal":
                objective, players = record.pop("objective", None), record.get("players")
                for name in ("rank", "score"):
                    record.pop(name, None)
                find = _build(path, number, Find, record)
                if find.score(objective) < 0:
                    raise ValueError(f"{path}:{number}: a {find.outcome} has no place in the {objective!r} list")
                deal_counts[players, objective] = deal_counts.get((players, objective), 0) + 1
                if find.deal not in store._replayed:
                    try:
                        replay(find)
                    except RuntimeError:
                        raise ValueError(
                            f"{path}:{number}: the file records {_game_text(find.game())} for {find.deal}, "
                            f"but it plays {_game_text(_played(find))}"
                        ) from None
                    store._replayed.add(find.deal)
                store.add(find)
            else:
                raise ValueError(f"{path}:{number}: unknown kind {checks.excerpt(kind)} (expected 'run' or 'deal')")
        store.k = max([k, *deal_counts.values()])
        for table in store.tables.values():
            table.k = store.k
        return store

    def verify(self):
        """Replay every deal not replayed yet (``RuntimeError`` on any difference)."""
        for table in self.tables.values():
            for find in table.finds():
                if find.deal not in self._replayed:
                    replay(find)
                    self._replayed.add(find.deal)

    def lines(self):
        yield FORMAT
        for run in self.runs:
            yield {"kind": "run", **asdict(run)}
        for players in sorted(self.tables):
            for objective, entries in self.tables[players].lists.items():
                for rank, find in enumerate(entries, 1):
                    yield {
                        "kind": "deal",
                        "players": players,
                        "objective": objective,
                        "rank": rank,
                        "score": find.score(objective),
                        **{name: value for name, value in asdict(find).items() if name != "players"},
                    }

    def save(self):
        """Replay new deals, then write the file whole (no path: only the replays)."""
        self.verify()
        if self.path is None:
            return
        text = "".join(json.dumps(line) + "\n" for line in self.lines())
        files.write_bytes(self.path, text.encode("utf-8"))


def _json_line(path, number, text):
    try:
        record = files.parse_json(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{number}: not JSON ({error.msg}): {checks.excerpt(text)}") from None
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{path}:{number}: not JSON ({str(error) or type(error).__name__})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {checks.excerpt(text)}")
    return record


_CHECKS = {
    "int": checks.is_integer,
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list": lambda v: isinstance(v, list),
}


def _hint(field_type):
    return field_type.__name__ if isinstance(field_type, type) else str(field_type)


def _build(path, number, cls, record):
    """``cls(**record)``, every field checked against its type hint (int, float, str or
    list, or None where the hint allows it)."""
    names = {f.name: _hint(f.type) for f in fields(cls)}
    unknown = sorted(set(record) - set(names))
    if unknown:
        raise ValueError(f"{path}:{number}: unknown field {unknown[0]!r} in a {cls.__name__.lower()} line")
    missing = [
        f.name for f in fields(cls) if f.name not in record and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ValueError(f"{path}:{number}: a {cls.__name__.lower()} line without {missing[0]!r}")
    for name, value in record.items():
        hint = names[name]
        if value is None and "None" in hint:
            continue
        if not _CHECKS[hint.split(" ")[0]](value):
            raise ValueError(f"{path}:{number}: {name} must be {hint}, not {checks.excerpt(value)}")
    built = cls(**record)
    if isinstance(built, Find):
        try:
            deal = parse_deal(built.deal)
        except ValueError as error:
            raise ValueError(f"{path}:{number}: {error}") from None
        built = replace(built, deal=format_deal(deal, "compact"))
        if deal.n_players != built.players:
            raise ValueError(f"{path}:{number}: the deal has {deal.n_players} players, the line says {built.players}")
    return built

"""Running a search for the longest and never-ending deals: :func:`search`, and ``beggar search``.

A search plays a seeded stream of deals (see :mod:`beggar_env.search.searchers`) and keeps, per
number of players, the top K deals of each objective:

* ``cards``: the longest games that end, by cards played;
* ``tricks``: the longest games that end, by tricks (piles taken);
* ``cycle``: deals that never end, by cards played to their first repeated position.

Every game played is scored for all three; the ``objective`` only steers ``local`` walks.

Strategies:

* ``random``: fresh shuffles of a standard deck, keeping the longest (Monte Carlo sampling,
  the plain way to hunt for long games): game ``i`` is game ``i`` of
  ``simulate(n, seed=seed)``.
* ``local``: stochastic local search over the deals (Hoos and Stützle, *Stochastic Local
  Search: Foundations and Applications*, 2004): hill climbing whose move swaps two cards
  of different classes (the same deck, another deal) and keeps the new deal when it plays
  no shorter; with a temperature, simulated annealing (Kirkpatrick, Gelatt and Vecchi,
  *Science* 220, 1983) also keeps a worse deal with probability ``exp(gain / T)``, ``T``
  cooling linearly to 0 over the walk. Each walk of ``walk_steps`` games is a restart,
  from a fresh shuffle or from the given start deals in turn (say, the known records).
  ``docs/search.md`` shows why it does little better than ``random`` on this game: one
  swap leaves nothing of a long game.

Results go to a JSON-lines file (:mod:`beggar_env.search.finds`): rewritten whole as finds
arrive, every deal replayed by :func:`beggar_env.play` first, with the run's settings and
how far it got, so that ``resume=True`` continues it and an interrupted run loses nothing
(an unfinished range of games is played again). A seeded search with a deal budget finds
the same deals whatever the threads, the workers, the interruptions and the resumptions.
"""

import os
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace

import numba

from .. import checks, files, gpu
from ..core import NO_LIMIT
from ..deals import Deal, format_deal, parse_deal
from ..distributed import check_backend, require_ray
from ..game import CHUNKS_PER_THREAD
from ..jit import check_threads
from .finds import OBJECTIVES, FindsFile, Run, TopLists, now
from .searchers import STRATEGIES, SearchJob

SAVE_EVERY = 2.0  # seconds between rewrites of the file while finds arrive
CHECKPOINT_EVERY = 30.0  # seconds between rewrites that only record how far the run got
TASK_SECONDS = {"local": 0.5, "ray": 1.0, "cuda": 1.0}  # the aim for one range of units
BACKENDS = ("local", "ray", "cuda")  # where a search runs: this machine's cores, Ray workers, a GPU
FIRST_TASK_GAMES = 1 << 13


@dataclass
class SearchStatus:
    """Where a search stands (passed to ``progress`` a few times a second)."""

    players: int
    strategy: str
    deals: int  # games played by the run, all sessions
    session_deals: int  # games played by this call
    seconds: float  # this call's search time (start-up excluded)
    remaining: float | None  # seconds left in the budget, if it has one
    best: dict  # objective -> the best Find for these players, or None

    @property
    def rate(self) -> float:
        return self.session_deals / self.seconds if self.seconds > 0 else 0.0


@dataclass
class SearchReport(SearchStatus):
    """What :func:`search` did: its status at the end, and more."""

    seed: int = 0
    deals_done: int = 0  # every game below this one has been played (a resume continues there)
    startup_seconds: float = 0.0  # Ray: starting or joining it, and warming the workers
    lists: dict | None = None  # objective -> top K Finds for these players, in the file (all runs)
    found: dict | None = None  # objective -> top K Finds of this call alone
    path: str | None = None


# ----------------------------------------------------------------- arguments


@dataclass
class _Plan:
    run: Run
    job: SearchJob
    budget: int | None  # deals
    seconds: float | None
    store: FindsFile


def _check_arguments(
    players, objective, strategy, deals, minutes, starts, top, backend, threads, walk_steps, temperature
):
    players = checks.n_players(players)
    objective = checks.choice("objective", objective, OBJECTIVES)
    strategy = checks.choice("strategy", strategy, STRATEGIES)
    backend = check_backend(backend, threads, choices=BACKENDS)
    if backend == "cuda":
        gpu.check_options(threads, True, NO_LIMIT, NO_LIMIT)
    if deals is not None:
        deals = checks.count("deals", deals, 1)
    if minutes is not None:
        minutes = checks.number("minutes", minutes, 0, strict=True)
    top = checks.integer("top", top, 1, 10_000)
    walk_steps = checks.count("walk_steps", walk_steps, 1)
    temperature = checks.number("temperature", temperature, 0)
    if isinstance(starts, (str, Deal)):
        raise TypeError("starts is a sequence of deals; wrap one deal in a list")
    starts = [format_deal(parse_deal(deal), "compact") for deal in starts]
    if starts and strategy != "local":
        raise ValueError("start deals are for strategy 'local' (random search plays fresh shuffles)")
    return players, objective, strategy, deals, minutes, starts, top, backend, walk_steps, temperature


def _plan(players, objective, strategy, deals, minutes, seed, starts, top, out, resume, walk_steps, temperature):
    local = strategy == "local"
    run = Run(
        players=players,
        strategy=strategy,
        seed=0,
        objective=objective if local else None,
        walk_steps=walk_steps if local else None,
        temperature=temperature if local else None,
        starts=starts,
    )
    store = _open(out, resume, top)
    if seed is None and resume:
        seed = store.latest_seed(run)
    run.seed = int(checks.seed(seed))
    earlier = store.run_like(run)
    if earlier is not None:
        run = earlier
    else:
        run.started = now()
        store.runs.append(run)
    run.budget = deals
    run.sessions += 1
    job = SearchJob(
        n_players=players,
        strategy=strategy,
        objective=objective,
        seed=run.seed,
        unit_games=walk_steps if local else 1,
        end_game=NO_LIMIT if deals is None else deals,
        temperature=temperature,
        starts=tuple(starts),
        top=store.k,
    )
    return _Plan(run, job, deals, None if minutes is None else 60.0 * minutes, store)


def results_path(out, resume, name="out") -> str:
    """The results file ``out`` names (``.jsonl`` added), checked before any work: writable,
    and not an existing file unless ``resume``; errors name the argument ``name``."""
    path = files.output_path(out, ".jsonl", name=name)
    if os.path.exists(path) and not resume:
        raise ValueError(f"{path} exists: resume it (resume=True, --resume) or choose another file")
    return path


def _open(out, resume, top):
    if out is None:
        if resume:
            raise ValueError("resume needs the file to resume (out)")
        return FindsFile(None, top)
    path = results_path(out, resume)
    return FindsFile.read(path, top) if os.path.exists(path) else FindsFile(path, top)


# ------------------------------------------------------------------- driving


class _Frontier:
    """The first unit not yet done, as ranges of units complete in any order."""

    def __init__(self, first):
        self.first = first
        self._done = {}  # lo -> hi of ranges done beyond the frontier

    def complete(self, lo, hi):
        self._done[lo] = hi
        while self.first in self._done:
            self.first = self._done.pop(self.first)


class _Driver:
    def __init__(self, plan, backend, threads, address, progress):
        self.plan, self.backend, self.threads, self.address = plan, backend, threads, address
        self.progress = progress
        run, job = plan.run, plan.job
        self.table = plan.store.table(run.players)
        self.found = TopLists(plan.store.k)  # this call's finds alone
        start_unit = run.deals_done // job.unit_games  # a cut walk is not resumed: the next one starts
        self.frontier = _Frontier(start_unit)
        self.start_games = start_unit * job.unit_games
        self.next_unit = start_unit
        self.end_unit = None if plan.budget is None else job.units_for(plan.budget)
        threads = threads or numba.config.NUMBA_NUM_THREADS
        self.min_units = threads * CHUNKS_PER_THREAD if backend == "local" and threads > 1 else 1
        self.units_per_task = max(self.min_units, FIRST_TASK_GAMES // job.unit_games)
        self.n_workers = 1
        self.before = (run.deals_tried, run.seconds)  # earlier sessions
        self.session_deals = 0
        self.partial = 0  # games of the range running now (local backend)
        self.started = None
        self.startup = 0.0
        self.changed = False
        self.last_save = self.last_checkpoint = self.last_progress = time.perf_counter()

    # the tasks: ranges of units, sized to take about TASK_SECONDS each
    def tasks(self):
        while self.end_unit is None or self.next_unit < self.end_unit:
            if self.plan.seconds is not None and self.elapsed() >= self.plan.seconds:
                return
            lo = self.next_unit
            hi = lo + self.units_per_task if self.end_unit is None else min(lo + self.units_per_task, self.end_unit)
            self.next_unit = hi
            yield lo, hi, self.found.thresholds()  # at most the file's: what enters either list is sent

    def elapsed(self):
        return 0.0 if self.started is None else time.perf_counter() - self.started

    def merge(self, done):
        stamp = now()
        for find in done.finds:
            find = _stamped(find, stamp)
            self.found.add(find)
            if self.table.add(find):
                self.changed = True
        self.frontier.complete(done.lo, done.hi)
        self.session_deals += done.games
        self.partial = 0
        seconds = self.elapsed()
        if seconds > 0 and done.games > 0:
            rate = self.session_deals / seconds / self.n_workers
            units = rate * TASK_SECONDS[self.backend] / self.plan.job.unit_games
            self.units_per_task = int(max(self.min_units, min(units, 4 * self.units_per_task)))
        self.save_if_due()
        self.report(force=True)

    def record(self):
        run, job = self.plan.run, self.plan.job
        run.deals_done = max(run.deals_done, job.games_in(0, self.frontier.first))
        run.deals_tried = self.before[0] + self.session_deals
        run.seconds = self.before[1] + self.elapsed()
        run.updated = now()
        run.backend = self.backend

    def save_if_due(self):
        clock = time.perf_counter()
        if (self.changed and clock - self.last_save >= SAVE_EVERY) or clock - self.last_checkpoint >= CHECKPOINT_EVERY:
            self.save()

    def save(self):
        self.record()
        self.plan.store.save()
        self.changed = False
        self.last_save = self.last_checkpoint = time.perf_counter()

    def status(self, cls=SearchStatus, **more):
        run, plan = self.plan.run, self.plan
        seconds = self.elapsed()
        session = self.session_deals + self.partial
        remaining = None
        if plan.seconds is not None:
            remaining = max(0.0, plan.seconds - seconds)
        if plan.budget is not None:
            left_deals = max(0, plan.budget - self.start_games - session)
            rate = session / seconds if seconds > 0 and session else 0
            by_deals = left_deals / rate if rate else None
            remaining = by_deals if remaining is None or by_deals is None else min(remaining, by_deals)
        return cls(
            players=run.players,
            strategy=run.strategy,
            deals=self.before[0] + session,
            session_deals=session,
            seconds=seconds,
            remaining=remaining,
            best={objective: self.table.best(objective) for objective in OBJECTIVES},
            **more,
        )

    def report(self, force=False):
        clock = time.perf_counter()
        if self.progress is not None and (force or clock - self.last_progress >= 0.25):
            self.last_progress = clock
            self.progress(self.status())

    def on_partial(self, games):
        self.partial = games
        self.report()

    # the two backends
    def run_local(self):
        self.started = time.perf_counter()
        for lo, hi, thresholds in self.tasks():
            self.merge(self.plan.job.run(lo, hi, thresholds, threads=self.threads, progress=self.on_partial))

    def run_cuda(self):
        from . import gpu_searchers  # numba.cuda: imported once require_cuda found a GPU

        self.started = time.perf_counter()
        for lo, hi, thresholds in self.tasks():
            self.merge(gpu_searchers.run(self.plan.job, lo, hi, thresholds, progress=self.on_partial))

    def run_ray(self):
        from ..distributed import Workers

        with Workers(self.plan.job, address=self.address) as workers:
            self.startup = workers.startup_seconds
            self.n_workers = len(workers.actors)
            self.started = time.perf_counter()
            for _, done in workers.unordered(self.tasks()):
                self.merge(done)

    def drive(self):
        run, path = self.plan.run, self.plan.store.path
        new_file = path is not None and not os.path.exists(path)
        try:
            {"ray": self.run_ray, "cuda": self.run_cuda}.get(self.backend, self.run_local)()
        except BaseException:  # Ctrl-C, SIGTERM or an error: keep every find and how far the run got
            if self.session_deals or not new_file:  # (a run that failed before its first game leaves no file)
                self.save()
            raise
        self.save()
        return self.status(
            SearchReport,
            seed=run.seed,
            deals_done=run.deals_done,
            startup_seconds=self.startup,
            lists={objective: list(entries) for objective, entries in self.table.lists.items()},
            found={objective: list(entries) for objective, entries in self.found.lists.items()},
            path=self.plan.store.path,
        )


def _stamped(find, stamp):
    return replace(find, found_at=stamp)


# ------------------------------------------------------------------- the API


def search(
    players: int = 2,
    *,
    objective: str = "cards",
    strategy: str = "random",
    deals: int | None = None,
    minutes: float | None = None,
    seed=None,
    starts: Sequence["str | Deal"] = (),
    top: int = 10,
    out: "str | os.PathLike | None" = None,
    resume: bool = False,
    threads: int | None = None,
    backend: str = "local",
    address: str | None = None,
    walk_steps: int = 1000,
    temperature: float = 0.0,
    progress: Callable[[SearchStatus], object] | None = None,
) -> SearchReport:
    """Search for the longest and never-ending deals of ``players`` players (standard deck).

    ``strategy`` is ``"random"`` or ``"local"`` (see the module docstring; ``walk_steps``,
    ``temperature`` and ``starts`` are local's), ``objective`` (``"cards"``, ``"tricks"``
    or ``"cycle"``) what local walks climb. The search stops after ``deals`` games of the
    run (all sessions together), after ``minutes`` of this call, or on Ctrl-C, whichever
    comes first; with neither budget, only Ctrl-C stops it.

    ``out`` is the JSON-lines file of the top ``top`` deals per (players, objective), locked
    for the run (a second run on it is refused at once: ``files.InUse``); an existing file
    is only continued with ``resume=True``: the run with the same settings
    (and ``seed``, by default the latest such run's) goes on from where it stopped, a new
    run adds its finds to the file's lists. ``backend="ray"`` runs the search on Ray
    workers, one per CPU, on a local Ray or the cluster at ``address``; ``backend="cuda"``
    on an NVIDIA GPU (:mod:`~beggar_env.search.gpu_searchers`), with the same finds;
    ``threads`` (local backend, None: all cores). ``progress(status)`` is called a few times a second with
    a :class:`SearchStatus`. Returns a :class:`SearchReport`.

    Parameters
    ----------
    players : hands of each deal (2 to 4)
    objective : what ``local`` walks climb: ``"cards"``, ``"tricks"`` or ``"cycle"``
    strategy : ``"random"`` or ``"local"``
    deals : the deal budget (None: none)
    minutes : the time budget (None: none)
    seed : the search's seed (None: a fresh one, or the resumed run's)
    starts : start deals of the ``local`` walks, in turn
    top : the deals kept per objective
    out : the JSON-lines results file, or None
    resume : continue the run in ``out``
    threads : this machine's threads (local backend; None: all)
    backend : ``"local"``, ``"ray"`` or ``"cuda"``
    address : the Ray cluster's (None: a local Ray)
    walk_steps : the games of a ``local`` walk
    temperature : annealing's starting temperature (0: hill climbing)
    progress : ``progress(status)`` a few times a second, or None
    """
    players, objective, strategy, deals, minutes, starts, top, backend, walk_steps, temperature = _check_arguments(
        players, objective, strategy, deals, minutes, starts, top, backend, threads, walk_steps, temperature
    )
    check_backend(backend, threads, address, BACKENDS)
    checks.callback("progress", progress)
    checks.boolean("resume", resume)
    if backend == "ray":
        require_ray()
    elif backend == "cuda":
        gpu.require_cuda()
    else:
        threads = check_threads(threads)
    lock = nullcontext() if out is None else files.exclusive(files.output_path(out, ".jsonl", name="out"))
    with lock:  # a second run on the file is refused: the last writer would drop the other's finds
        plan = _plan(
            players, objective, strategy, deals, minutes, seed, starts, top, out, resume, walk_steps, temperature
        )
        return _Driver(plan, backend, threads, address, progress).drive()

"""Running a job's index ranges on Ray: long-lived workers, one per CPU of the cluster.

A *job* is a small picklable object with two methods: ``warm()`` (load or compile what it
runs, once per worker, before any timed work) and ``run(*task)`` (one task, say a range
``lo, hi`` of a seeded stream of games, and its result). :class:`Workers` starts one Ray
actor per CPU, each holding its own copy of the job, and hands tasks out as workers free
up (two at a time each, so that none waits for the next); results come back in the order
they finish (:meth:`Workers.unordered`) or in task order (:meth:`Workers.ordered`).
Because a task's result depends on nothing but the task (counter-based streams), the
gathered results are those of one process running every task.

Without an address, a local Ray is started with every core of this machine and shut down
at the end; with one (``"auto"``, ``"HOST:6379"``), the workers join that cluster, whose
every node needs the same version of this package installed. A Ray already initialised
in this process (``ray.init`` by the caller) is used as it is.
"""

import logging
import time
from collections.abc import Iterable, Iterator

from . import checks

BACKENDS = ("local", "ray")  # where the seeded jobs that take a backend= argument run
INSTALL_HINT = "pip install 'beggar-env[distributed]'"
TASKS_PER_WORKER = 2  # tasks in flight per worker: one running, one waiting
WAIT_SECONDS = 0.25  # ray.wait in slices, so that Ctrl-C and SIGTERM are seen at once
FREE_CPUS_SECONDS = 30.0  # how long to wait for a CPU of the cluster to be free


def check_backend(backend, threads):
    """``backend``, one of :data:`BACKENDS`; ``threads`` (a local setting) is refused with Ray."""
    backend = checks.choice("backend", backend, BACKENDS)
    if backend == "ray" and threads is not None:
        raise ValueError("threads is for the local backend: Ray runs one worker per CPU of the cluster")
    return backend


def require_ray():
    """The ``ray`` module, or ``ImportError`` saying in one line how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"the Ray backend needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


class _Worker:
    """What each actor runs: one copy of the job."""

    def __init__(self, job):
        self.job = job

    def warm(self):
        started = time.perf_counter()
        self.job.warm()
        return time.perf_counter() - started

    def run(self, *task):
        return self.job.run(*task)


class Workers:
    """One Ray actor per free CPU (or ``workers`` of them), each holding a copy of ``job``;
    a context manager that removes them (and a Ray it started) on exit.

    ``startup_seconds`` is what joining or starting Ray, starting the actors and warming
    them took; ``warm_seconds`` the slowest worker's warm-up alone.
    """

    def __init__(self, job, address=None, workers=None):
        ray = require_ray()
        started = time.perf_counter()
        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(
                address=address or "local",
                include_dashboard=False,
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
        self.actors = []
        try:
            n = workers or self._free_cpus()
            actor = ray.remote(num_cpus=1)(_Worker)
            self.actors = [actor.remote(job) for _ in range(n)]
            self.warm_seconds = max(self._get([a.warm.remote() for a in self.actors]))
        except BaseException:
            self.close()
            raise
        self.startup_seconds = time.perf_counter() - started

    def _free_cpus(self):
        """The CPUs of the cluster no actor or task holds (those of actors just removed
        come back within a few seconds)."""
        deadline = time.perf_counter() + FREE_CPUS_SECONDS
        while True:
            free = int(self._ray.available_resources().get("CPU", 0))
            if free >= 1:
                return free
            if time.perf_counter() > deadline:
                raise RuntimeError("no free CPU in the Ray cluster: other actors or tasks hold them all")
            time.sleep(WAIT_SECONDS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()

    def _get(self, refs):
        pending = list(refs)
        while True:
            ready, _ = self._ray.wait(pending, num_returns=len(pending), timeout=WAIT_SECONDS)
            if len(ready) == len(pending):
                return self._ray.get(pending)

    def unordered(self, tasks: Iterable[tuple]) -> Iterator[tuple]:
        """Yield ``(task, result)`` for each task (a tuple of ``run``'s arguments) as
        results arrive. Tasks are taken from ``tasks`` only when a worker has room, so a
        generator may build each from the latest results."""
        yield from self._schedule(iter(tasks), window=None)

    def ordered(self, tasks: Iterable[tuple]) -> Iterator[tuple]:
        """Yield ``(task, result)`` in the order of ``tasks``, holding at most a few
        results per worker that arrived early."""
        yield from self._schedule(iter(tasks), window=2 * TASKS_PER_WORKER * len(self.actors))

    def _schedule(self, tasks, window):
        pending = {}  # ref -> (worker, number, task)
        early = {}  # number -> (task, result), when ordered
        next_out, numbers = 0, iter(range(1 << 62))
        free = [actor for actor in self.actors for _ in range(TASKS_PER_WORKER)]
        exhausted = False
        while True:
            while free and not exhausted and (window is None or len(pending) + len(early) < window):
                task = next(tasks, None)
                if task is None:
                    exhausted = True
                    break
                actor = free.pop()
                pending[actor.run.remote(*task)] = (actor, next(numbers), task)
            if not pending:
                break
            ready, _ = self._ray.wait(list(pending), num_returns=1, timeout=WAIT_SECONDS)
            for ref in ready:
                actor, number, task = pending.pop(ref)
                free.append(actor)
                result = self._ray.get(ref)
                if window is None:
                    yield task, result
                    continue
                early[number] = (task, result)
                while next_out in early:
                    yield early.pop(next_out)
                    next_out += 1

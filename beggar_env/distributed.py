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
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from . import checks, files

BACKENDS = ("local", "ray")  # where the seeded jobs that take a backend= argument run
INSTALL_HINT = checks.install_hint("distributed")
TASKS_PER_WORKER = 2  # tasks in flight per worker: one running, one waiting
WAIT_SECONDS = 0.25  # ray.wait in slices, so that Ctrl-C and SIGTERM are seen at once
FREE_CPUS_SECONDS = 30.0  # how long to wait for a CPU of the cluster to be free
CONNECT_SECONDS = 5.0  # how long a cluster's head node may take to answer before it counts as unreachable
SESSION_PREFIX = "beggar-env-ray-"  # the folder of a local Ray's session files (its process id follows)
SESSION_FOLDER_LENGTH = 48  # longer, and Ray's socket paths inside it would pass the system's limit


def check_backend(backend, threads, address=None, choices=BACKENDS):
    """``backend``, one of ``choices`` (:data:`BACKENDS`, or more where a job also runs on
    a GPU: "cuda"); ``threads`` (a local setting) is refused with Ray, ``address`` (a
    cluster's) without it."""
    backend = checks.choice("backend", backend, choices)
    if backend == "ray" and threads is not None:
        raise ValueError("threads is for the local backend: Ray runs one worker per CPU of the cluster")
    if address is not None and (backend != "ray" or not isinstance(address, str)):
        raise (TypeError if backend == "ray" else ValueError)(
            f"address is a Ray cluster's ('auto', 'HOST:6379') and needs backend='ray', not {checks.excerpt(address)}"
        )
    return backend


def check_reachable(address):
    """``ConnectionError`` (one line) when the head node of ``address`` ("HOST:PORT", or
    "ray://HOST:PORT") does not answer within :data:`CONNECT_SECONDS`: ``ray.init`` would
    wait for it without end. Other addresses ("auto") are left to Ray."""
    match = re.fullmatch(r"(?:ray://)?\[?([^\]\s]+?)\]?:(\d+)", address.strip())
    if match is None:
        return
    host, port = match.group(1), int(match.group(2))
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or str(error))
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address}: {reason} (after {CONNECT_SECONDS:g} s at most)"
        ) from None


@contextmanager
def _native_stderr_muted(muted):
    """Send what native code writes to stderr (file descriptor 2) nowhere, while ``muted``."""
    if not muted:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as nowhere:
            os.dup2(nowhere.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _first_line(error):
    return next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)


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
        self._session = None  # the folder of the local Ray this started (removed at the end)
        self.actors = []
        if self._owns_ray:
            self._start(address or "local")
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

    def _start(self, address):
        """Start a local Ray (its session files in a folder of its own, removed at the end)
        or join the cluster at ``address``, first checking it can be reached at all."""
        options = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        if address == "local":
            files.remove_stale(tempfile.gettempdir(), SESSION_PREFIX)
            folder = tempfile.mkdtemp(prefix=f"{SESSION_PREFIX}{os.getpid()}.")
            if len(folder) <= SESSION_FOLDER_LENGTH:  # Ray's socket paths must stay short
                self._session = options["_temp_dir"] = folder
            else:
                os.rmdir(folder)
        else:
            check_reachable(address)
        try:
            with _native_stderr_muted(address != "local"):  # Ray's C++ client logs every failed try to join
                self._ray.init(address=address, **options)
        except ConnectionError as error:
            raise ConnectionError(f"cannot join the Ray cluster at {address}: {_first_line(error)}") from None

    def close(self):
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
        if self._session is not None:
            shutil.rmtree(self._session, ignore_errors=True)
            self._session = None

    def _result(self, refs):
        """``ray.get(refs)``, a task's own error raised as itself (not a remote traceback),
        a lost worker as ``ConnectionError``: one line each."""
        try:
            return self._ray.get(refs)
        except self._ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise ConnectionError(f"a Ray worker failed: {_first_line(error)}") from None
        except self._ray.exceptions.RayActorError as error:
            raise ConnectionError(f"a Ray worker was lost: {_first_line(error)}") from None

    def _get(self, refs):
        pending = list(refs)
        while True:
            ready, _ = self._ray.wait(pending, num_returns=len(pending), timeout=WAIT_SECONDS)
            if len(ready) == len(pending):
                return self._result(pending)

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
                result = self._result(ref)
                if window is None:
                    yield task, result
                    continue
                early[number] = (task, result)
                while next_out in early:
                    yield early.pop(next_out)
                    next_out += 1

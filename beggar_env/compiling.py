"""What the package does while numba works (compiles, or loads from its cache), as
listeners of numba's events, installed when :mod:`beggar_env.jit` is imported:

* **Ctrl-C and SIGTERM while numba works.** A Python signal handler runs wherever the main
  thread is, and numba's LLVM calls back into Python (llvmlite's object cache hooks, through
  ctypes): an exception raised there is printed and dropped, so the signal was lost, and the
  compiled object with it (``RuntimeError: no compiled object yet`` when numba then saved the
  function to its cache). While the main thread holds numba's compiler lock (compiling, or
  loading from the cache), :class:`SignalGuard` stands in for the Python handlers of SIGINT
  and SIGTERM: where the main thread is inside a call into LLVM, or inside numba's loading of
  a cached function, it keeps the signal, and calls the handler at the next safe moment
  (every compiler pass is one; at the latest, when numba lets go of the lock, well within a
  second when loading), so that ``KeyboardInterrupt`` (or the ``beggar`` command's
  ``Terminated``) arrives there, where numba is left whole for the next call; elsewhere it
  calls it at once. It covers every numba function of the process, ours or not; the hooks
  are numba's ``"numba:compiler_lock"`` event and llvmlite's lock (``ffi.lib._lock``); if the
  latter moves, the whole compile is held back. Handlers other than Python functions
  (``SIG_DFL``, ``SIG_IGN``) are left alone.
* **Compile notice.** When the package's own code has spent more than
  :data:`NOTICE_AFTER` seconds compiling in a process, one line (:data:`NOTICE`) says so on
  stderr, once per process, while it goes on: a cold ``gym.make("Beggar-v0")`` is otherwise
  a silent half-minute. ``BEGGAR_ENV_QUIET=1`` in the environment silences it (read when it
  would be shown); ``notice.words`` sets its words (None: no notice), as the ``beggar``
  command does, whose notice also covers a slow first load from the cache
  (:meth:`CompileNotice.slow`).
"""

import inspect
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

from numba.core import event as numba_event

# ------------------------------------------------------------ signals while numba works

DEFERRED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


def _held_by_this_thread(lock):
    """``lock``'s check "held by the calling thread" (a ``threading.RLock``'s), or None if it has none."""
    check = getattr(lock, "_is_owned", None)
    return check if callable(check) else None


def _unsafe_code():
    """The code of numba's steps that must not be cut: loading a function from the cache, and
    adding a library's module to the JIT engine and generating its code (``finalize_object``):
    cut between the two, the engine keeps a module that the next load defines again."""
    from numba.core import caching, codegen

    steps = (
        getattr(caching.Cache, "load_overload", None),
        getattr(codegen.CPUCodeLibrary, "_finalize_final_module", None),
    )
    return frozenset(step.__code__ for step in steps if hasattr(step, "__code__"))


class SignalGuard(numba_event.Listener):
    """Ctrl-C and SIGTERM, held back while numba cannot be interrupted (see the module docstring).

    It listens to numba's compiler lock: from the moment the main thread asks for it until
    it lets go of it (compiling, or loading from the cache), the Python handlers of
    :data:`DEFERRED_SIGNALS` are replaced by :meth:`receive`, which calls the handler at
    once where it is safe, and otherwise keeps the signal for the next safe moment: the
    next event of the lock outside LLVM (every compiler pass takes the lock), at the latest
    its release. Unsafe is: inside a call into LLVM (``in_llvm()``: LLVM may call back into
    Python, where ctypes drops what the handler raises), or inside one of numba's steps in
    ``unsafe_code`` (see :func:`_unsafe_code`). ``in_compiler()``: whether this thread holds
    numba's compiler lock.
    """

    def __init__(self, in_llvm, in_compiler, unsafe_code=frozenset()):
        self.in_llvm, self.in_compiler, self.unsafe_code = in_llvm, in_compiler, unsafe_code
        self.saved = {}  # signal -> its handler before, while ours is installed
        self.pending = []  # signals received where it was not safe, in order

    def unsafe(self, frame):
        """Whether raising an exception in ``frame`` (the main thread's) could be lost or break numba."""
        if self.in_llvm():
            return True
        while frame is not None:
            if frame.f_code in self.unsafe_code:
                return True
            frame = frame.f_back
        return False

    def receive(self, signum, frame):
        """The handler while numba works: the saved handler now, where safe; else later."""
        if self.unsafe(frame):
            if signum not in self.pending:
                self.pending.append(signum)
            return
        handler = self.handler(signum)
        if not self.in_compiler():  # between asking for the lock and having it, or after it: nothing to defer
            self.restore()
        handler(signum, frame)

    def handler(self, signum):
        """The handler ``signum`` had before ours."""
        handler = self.saved.get(signum) or signal.getsignal(signum)
        return handler if callable(handler) and handler != self.receive else signal.default_int_handler

    def install(self):
        try:
            for signum in DEFERRED_SIGNALS:
                handler = signal.getsignal(signum)
                if callable(handler) and handler != self.receive:  # not SIG_DFL, SIG_IGN nor a C handler
                    self.saved[signum] = handler
                    signal.signal(signum, self.receive)
        except ValueError:  # not the main interpreter's main thread: signals go elsewhere
            self.restore()

    def restore(self):
        for signum in list(self.saved):  # each forgotten once put back: a signal in between finds its handler
            if signal.getsignal(signum) == self.receive:
                signal.signal(signum, self.saved[signum])
            del self.saved[signum]

    def deliver(self, frame):
        """Call the handlers of the signals held back, if ``frame`` is a safe place (the first that raises ends it)."""
        while self.pending and not self.unsafe(frame):
            signum = self.pending.pop(0)
            self.handler(signum)(signum, frame)
        if self.pending and not self.saved:  # unsafe with our handlers gone (never seen): let Python deliver them
            for signum in self.pending:
                signal.raise_signal(signum)
            self.pending.clear()

    def on_start(self, event):
        if threading.current_thread() is threading.main_thread():
            self.deliver(inspect.currentframe())
            if not self.saved:
                self.install()

    def on_end(self, event):
        if threading.current_thread() is threading.main_thread():
            if not self.in_compiler():
                self.restore()
            self.deliver(inspect.currentframe())


# ------------------------------------------------------------------ compile notice

NOTICE_AFTER = 1.0  # seconds of compiling the package's code before the notice is shown
NOTICE = (
    "beggar-env: compiling the engine for its first use on this machine (once per machine and version; later runs "
    "load it from numba's cache; `beggar warmup` compiles every part)..."
)
QUIET = "BEGGAR_ENV_QUIET"  # set (not to 0) in the environment: no notice


class _Clock:
    """Seconds spent between starts and stops (nested, from any thread), counted as it runs."""

    def __init__(self, now=time.perf_counter):
        self._now = now
        self._lock = threading.Lock()
        self._depth = 0
        self._total = 0.0
        self._since = 0.0

    def start(self):
        """Start (or nest); whether it was stopped."""
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._since = self._now()
            return self._depth == 1

    def stop(self):
        """Stop (or unnest); whether it is stopped now."""
        with self._lock:
            if self._depth == 1:
                self._total += self._now() - self._since
            self._depth = max(0, self._depth - 1)
            return self._depth == 0

    def seconds(self):
        with self._lock:
            return self._total + (self._now() - self._since if self._depth else 0.0)


class CompileNotice(numba_event.Listener):
    """The notice that the package's code is being compiled (see the module docstring).

    It listens to numba's ``"numba:compile"`` events of the package's functions (from any
    thread): once they have taken :attr:`after` seconds in all, while one is under way,
    :meth:`show` prints :attr:`words` on stderr, once per process. It also counts the time
    numba holds its compiler lock (compiling or loading from the cache, any code), for
    :meth:`slow`."""

    def __init__(self, words=NOTICE, after=NOTICE_AFTER, now=time.perf_counter):
        self.words, self.after = words, after
        self.shown = False
        self.compiling = _Clock(now)  # the package's functions being compiled
        self.busy = _Clock(now)  # numba's compiler lock held or waited for
        self._lock = threading.Lock()
        self._compiled = None  # set when the compilations under way end

    def show(self):
        """Print the notice, unless it was shown, has no words or :data:`QUIET` is set; whether it did."""
        with self._lock:
            if self.shown or not self.words or os.environ.get(QUIET, "") not in ("", "0"):
                return False
            self.shown = True
            words = self.words
        print(words, file=sys.stderr, flush=True)
        return True

    @contextmanager
    def slow(self, after=None):
        """Show the notice if numba works more than ``after`` seconds (default :attr:`after`)
        within the enclosed block: compiling, or loading compiled code from the cache (a
        first call, as the ``beggar`` command makes)."""
        done = threading.Event()
        self._watch(self.busy, self.busy.seconds() + (self.after if after is None else after), done)
        try:
            yield
        finally:
            done.set()

    def _watch(self, clock, until, done):
        """Show the notice once ``clock`` reaches ``until`` seconds, unless ``done`` is set first."""

        def watch():
            while not done.wait(0.05):
                if clock.seconds() >= until:
                    self.show()
                    return

        if not self.shown:
            threading.Thread(target=watch, name="beggar-env notice", daemon=True).start()

    @staticmethod
    def ours(event):
        data = event.data if isinstance(event.data, dict) else {}
        module = getattr(getattr(data.get("dispatcher"), "py_func", None), "__module__", None)
        return isinstance(module, str) and module.startswith(__package__ + ".")

    def on_start(self, event):
        if event.kind == "numba:compiler_lock":
            self.busy.start()
        elif self.ours(event) and self.compiling.start():
            self._compiled = threading.Event()
            self._watch(self.compiling, self.after, self._compiled)

    def on_end(self, event):
        if event.kind == "numba:compiler_lock":
            self.busy.stop()
        elif self.ours(event) and self.compiling.stop() and self._compiled is not None:
            self._compiled.set()


def _listen():
    """Install the signal guard and the compile notice as listeners of numba's events."""
    from llvmlite.binding import ffi
    from numba.core.compiler_lock import global_compiler_lock

    in_compiler = global_compiler_lock.is_locked
    in_llvm = _held_by_this_thread(getattr(getattr(ffi.lib, "_lock", None), "_lock", None)) or in_compiler
    guard, compile_notice = SignalGuard(in_llvm, in_compiler, _unsafe_code()), CompileNotice()
    numba_event.register("numba:compiler_lock", guard)
    numba_event.register("numba:compile", compile_notice)
    numba_event.register("numba:compiler_lock", compile_notice)
    return guard, compile_notice


signal_guard, notice = _listen()

"""How the package uses numba: its settings, its workarounds and the one lock on parallel code.

Everything here changes numba for the whole process, so it is done once, on import, and
only where it is safe:

* **Threading layer.** numba's default on Linux is GNU OpenMP, which kills a ``fork()``ed
  child that runs parallel code (PyTorch ``DataLoader`` workers, ``multiprocessing``
  pools). Unless the user chose a layer (``NUMBA_THREADING_LAYER``), we ask for
  ``"forksafe"``: TBB when installed, else numba's own ``workqueue`` (as fast here).
  ``workqueue`` must not run two parallel calls at once, so every parallel call of the
  package holds :data:`PARALLEL` (they use every core anyway).
* **Cache.** Compiled code is cached in the user's cache folder (``~/.cache/beggar-env``,
  or ``$NUMBA_CACHE_DIR/beggar-env``), one folder per build of the package (its source and
  versions: see :func:`build_key`), never beside the sources; builds no longer used are
  pruned. With no writable home we fall back to a private folder in the temporary
  directory, or to no cache, with one warning. The hook is numba's
  ``caching.CacheImpl._locator_classes``, checked like the next one.
* **Record names.** numba names compiled code after a per-process counter of record types
  (numba issue 7654), so code cached by two processes can mix up a 2- and a 3-player
  state. We name record types after their content instead. The hook is numba's
  ``types.Record.mangling_args``; it is checked, and the package refuses to import if it
  has moved (tested on the numba versions that ``pyproject.toml`` admits).
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

import hashlib
import inspect
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from contextlib import contextmanager
from enum import IntEnum
from types import FunctionType, SimpleNamespace

import numba
from numba.core import event as numba_event
from numba.core import types as numba_types

from . import checks

TESTED_NUMBA = ((0, 59), (0, 68))  # the oldest and newest minor versions the patch was tested on

PARALLEL = threading.RLock()
"""Held by every parallel compiled call of the package (see the module docstring)."""


# ------------------------------------------------------------------ threading layer


def _choose_threading_layer():
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "forksafe"


# -------------------------------------------------------------------------- cache

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
CACHE_KEEP = 4  # builds whose cache is kept (the most recently used), ...
CACHE_IDLE = 3600.0  # ... and any other used in the last hour (a process may still be loading from it)
_USED = "last-used"  # touched in a build's folder at every import


def _check_cache_hook():
    from numba.core import caching

    hook = getattr(getattr(caching, "CacheImpl", None), "_locator_classes", None)
    if not isinstance(hook, list) or not all(
        hasattr(caching, n) for n in ("_CacheLocator", "_SourceFileBackedLocatorMixin")
    ):
        raise ImportError(
            f"beggar_env cannot place numba's cache on numba {numba.__version__}: numba.core.caching.CacheImpl."
            f"_locator_classes has moved (tested on numba {'.'.join(map(str, TESTED_NUMBA[0]))} to "
            f"{'.'.join(map(str, TESTED_NUMBA[1]))})"
        )
    return caching


def build_key():
    """The name of this build's cache: the package's, numba's and Python's versions, and a
    digest of every source file's path, size and modification time. numba checks only the
    file a function is in, so code compiled against another module's old source would
    otherwise be loaded after that module changed; and the builds left behind are pruned
    (:data:`CACHE_KEEP`), so the cache does not grow with every edit or upgrade."""
    from . import __version__

    digest = hashlib.blake2b(PACKAGE_DIR.encode(), digest_size=8)
    for folder, subfolders, names in os.walk(PACKAGE_DIR):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(name for name in names if name.endswith(".py")):
            path = os.path.join(folder, name)
            info = os.stat(path)
            digest.update(f"{os.path.relpath(path, PACKAGE_DIR)}:{info.st_size}:{info.st_mtime_ns};".encode())
    version = sys.version_info
    return f"{__version__}-numba{numba.__version__}-py{version.major}{version.minor}-{digest.hexdigest()}"


def user_cache_root():
    """Where the builds' caches go: ``$NUMBA_CACHE_DIR/beggar-env`` when the user set one,
    else the user's cache folder (``~/.cache/beggar-env`` on Linux)."""
    from numba.misc.appdirs import AppDirs

    if numba.config.CACHE_DIR:
        return os.path.join(numba.config.CACHE_DIR, "beggar-env")
    return AppDirs(appname="beggar-env", appauthor=False).user_cache_dir


def _caching_in(build_folder):
    """numba's cache locator for the package's functions: ``build_folder``, by subpackage;
    never beside the sources (``pip uninstall`` leaves numba's files there, and the
    folder they leave hides the next install as a namespace package)."""
    caching = _check_cache_hook()

    mixin, base = caching._SourceFileBackedLocatorMixin, caching._CacheLocator  # noqa: SLF001 (numba's hook)

    class PackageCacheLocator(mixin, base):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(build_folder, os.path.relpath(os.path.dirname(py_file), PACKAGE_DIR))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.commonpath([PACKAGE_DIR, os.path.abspath(py_file)]) != PACKAGE_DIR:
                return None  # not ours: numba's own locators
            return super().from_function(py_func, py_file)

    locators = caching.CacheImpl._locator_classes  # noqa: SLF001 (numba's hook, checked above)
    locators[:] = [cls for cls in locators if cls.__name__ != "PackageCacheLocator"]
    locators.insert(0, PackageCacheLocator)


def _writable_folder(path, private=False):
    """``path``, created if need be (``private``: only this user's), if this process can write in it; else None."""
    try:
        os.makedirs(path, mode=0o700 if private else 0o777, exist_ok=True)
        if private and hasattr(os, "getuid"):
            info = os.stat(path)
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                path = tempfile.mkdtemp(prefix="beggar-env-numba-cache-")  # someone else's: use a fresh one
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


def private_cache_root():
    """A cache folder in the temporary directory that only this user can write, or None."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return _writable_folder(os.path.join(tempfile.gettempdir(), f"beggar-env-numba-cache-{uid}"), private=True)


def prune_builds(root, current):
    """Remove the caches of other builds in ``root``: all but the :data:`CACHE_KEEP` most
    recently used, and only those idle for :data:`CACHE_IDLE` seconds."""
    used = []
    for name in os.listdir(root):
        stamp = os.path.join(root, name, _USED)
        if name != current and os.path.isfile(stamp):
            used.append((os.stat(stamp).st_mtime, name))
    now = time.time()
    for last, name in sorted(used, reverse=True)[CACHE_KEEP - 1 :]:
        if now - last > CACHE_IDLE:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _choose_cache(roots=None):
    """The folder compiled code is cached in (this build's, under the first writable of
    :func:`user_cache_root` and :func:`private_cache_root`), or None: no cache."""
    roots = roots if roots is not None else (user_cache_root, private_cache_root)
    key = build_key()
    for choose in roots:
        root = choose()
        folder = root and _writable_folder(os.path.join(root, key))
        if folder is None:
            continue
        try:
            with open(os.path.join(folder, _USED), "w"):  # its time is the build's last use
                pass
            prune_builds(root, key)
        except OSError:  # another process pruning at the same time: nothing is lost
            pass
        _caching_in(folder)
        if choose is not roots[0]:
            warnings.warn(
                f"beggar_env: no writable folder for numba's cache in {user_cache_root()}; caching compiled code "
                f"in {folder}",
                RuntimeWarning,
                stacklevel=3,
            )
        return folder
    warnings.warn(
        "beggar_env: no writable folder for numba's cache: compiled code is not cached, so every new "
        "process compiles it again (set NUMBA_CACHE_DIR to a writable folder)",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


# -------------------------------------------------------------------- record names


def _check_record_hook():
    if not isinstance(getattr(numba_types.Record, "mangling_args", None), property):
        raise ImportError(
            f"beggar_env cannot name numba's record types safely on numba {numba.__version__}: "
            "numba.core.types.Record.mangling_args has moved (tested on numba "
            f"{'.'.join(map(str, TESTED_NUMBA[0]))} to {'.'.join(map(str, TESTED_NUMBA[1]))})"
        )


def _name_records_by_content():
    """Name compiled code after what its record types hold, not a per-process counter."""
    _check_record_hook()

    def mangling_args(self):
        digest = hashlib.blake2b(self.name.encode(), digest_size=7).digest()
        return type(self).__name__, (int.from_bytes(digest, "little"),)

    numba_types.Record.mangling_args = property(mangling_args)


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


_choose_threading_layer()
_name_records_by_content()
CACHE_FOLDER = _choose_cache()
CACHE = CACHE_FOLDER is not None
signal_guard, notice = _listen()


def jit(function=None, *, parallel=False):
    """``numba.njit`` with the package's cache setting; ``@jit`` or ``@jit(parallel=True)``."""
    if function is None:
        return lambda f: numba.njit(cache=CACHE, parallel=parallel)(f)
    return numba.njit(cache=CACHE, parallel=parallel)(function)


def serial_and_parallel(function):
    """Two builds of one source: serial, and parallel (``prange`` is a plain range in the
    serial one). numba keys its cache by a function's name, not by its build options, so
    the parallel build is made from a twin with its own name: else either build could
    load the other's cached code."""
    twin = FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__ + "_parallel",
        function.__defaults__,
        function.__closure__,
    )
    twin.__qualname__ = function.__qualname__ + "_parallel"
    return jit(function), jit(parallel=True)(twin)


# -------------------------------------------------------------- bound entry points


def bind(kernel, args):
    """``kernel``'s compiled entry point for the types of ``args``, and those types.

    Calling the entry point skips numba's per-call dispatch on argument types (most of
    the cost of a single env's step), so it must only ever be called with arguments of
    exactly those types: keep the buffers, and check with :func:`argument_types`. With
    the JIT disabled, ``kernel`` itself.
    """
    types = argument_types(args)
    if numba.config.DISABLE_JIT:
        return kernel, types
    return kernel.compile(types), types


def argument_types(args):
    """numba's types of ``args``, as :func:`bind` compiles for them."""
    return tuple(numba.typeof(arg) for arg in args)


def interpreted(module):
    """The compiled functions of ``module`` as plain Python, calling each other as Python.

    The same source, run by the interpreter, as ``NUMBA_DISABLE_JIT=1`` would run it, but
    for this call only. One short game runs faster so than numba can load its compiled
    code into a new process (a third of a second), which is why ``beggar play`` does it.
    States must then be recarrays, as with the JIT disabled.
    """
    namespace = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, type) and issubclass(value, IntEnum):  # the same ints, without Enum's slow lookups
            namespace[name] = SimpleNamespace(**{member.name: int(member) for member in value})
        elif isinstance(value, numba.core.dispatcher.Dispatcher):
            f = value.py_func
            namespace[name] = FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
    return SimpleNamespace(**namespace)


def check_threads(threads):
    """``threads`` as the parallel calls take it: None (all cores) or 1 .. the cores numba may use."""
    return None if threads is None else checks.integer("threads", threads, 1, numba.config.NUMBA_NUM_THREADS)


@contextmanager
def parallel(threads=None):
    """Run the enclosed parallel compiled calls on ``threads`` threads (None: all cores),
    holding :data:`PARALLEL`."""
    threads = check_threads(threads) or numba.config.NUMBA_NUM_THREADS
    with PARALLEL:
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            yield threads
        finally:
            numba.set_num_threads(before)

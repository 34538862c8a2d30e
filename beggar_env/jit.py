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
  or ``$NUMBA_CACHE_DIR/beggar-env``), one folder per build of the package (its sources'
  content and the versions: see :func:`build_key`; not where it is installed, nor when its
  files were written, so that ``pip install .`` and ``pip install -e .`` of the same sources
  share it), never beside the sources; builds no longer used are pruned. Saving to it is
  locked (:func:`_lock_saves_in`), so that processes compiling at once (``beggar warmup``'s)
  lose nothing. With no writable home we fall back to a private folder in the temporary
  directory, or to no cache, with one warning. The hooks are numba's
  ``caching.CacheImpl._locator_classes`` and ``caching.IndexDataCacheFile.save``, checked like
  the next one.
* **Record names.** numba names compiled code after a per-process counter of record types
  (numba issue 7654), so code cached by two processes can mix up a 2- and a 3-player
  state. We name record types after their content instead. The hook is numba's
  ``types.Record.mangling_args``; it is checked, and the package refuses to import if it
  has moved (tested on the numba versions that ``pyproject.toml`` admits).
* **While numba works** (:mod:`beggar_env.compiling`, whose listeners are installed with
  this module): Ctrl-C and SIGTERM kept and raised where numba is left whole, and a notice
  on stderr when the package's code compiles for more than a second.
"""

import functools
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from contextlib import contextmanager
from enum import IntEnum
from types import FunctionType, SimpleNamespace

import numba
from numba.core import types as numba_types

from . import checks, compiling  # noqa: F401 (compiling: its listeners of numba's events, installed on import)

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
    if (
        not isinstance(hook, list)
        or not all(hasattr(caching, n) for n in ("_CacheLocator", "_SourceFileBackedLocatorMixin"))
        or not callable(getattr(getattr(caching, "IndexDataCacheFile", None), "save", None))
    ):
        raise ImportError(
            f"beggar_env cannot place numba's cache on numba {numba.__version__}: numba.core.caching.CacheImpl."
            f"_locator_classes or IndexDataCacheFile.save has moved (tested on numba "
            f"{'.'.join(map(str, TESTED_NUMBA[0]))} to "
            f"{'.'.join(map(str, TESTED_NUMBA[1]))})"
        )
    return caching


def build_key():
    """The name of this build's cache: the package's, numba's and Python's versions, and a
    digest of every source file's path in the package and content. numba checks only the
    file a function is in, so code compiled against another module's old source would
    otherwise be loaded after that module changed; and the builds left behind are pruned
    (:data:`CACHE_KEEP`), so the cache does not grow with every edit or upgrade. Neither
    where the package lies nor its files' times count: the same sources installed twice
    (``pip install .`` and ``pip install -e .``) are one build."""
    from . import __version__

    digest = hashlib.blake2b(digest_size=8)
    for folder, subfolders, names in os.walk(PACKAGE_DIR):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(name for name in names if name.endswith(".py")):
            path = os.path.join(folder, name)
            digest.update(f"{os.path.relpath(path, PACKAGE_DIR)}:{source_digest(path)};".encode())
    version = sys.version_info
    return f"{__version__}-numba{numba.__version__}-py{version.major}{version.minor}-{digest.hexdigest()}"


def source_digest(path):
    """A digest of the file's content (read again only when its size or time changes)."""
    info = os.stat(path)
    return _content_digest(path, info.st_size, info.st_mtime_ns)


@functools.cache
def _content_digest(path, size, mtime_ns):
    with open(path, "rb") as file:
        return hashlib.blake2b(file.read(), digest_size=16).hexdigest()


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

        def get_source_stamp(self):  # older numba stamps its index with the file's time: the content instead
            return source_digest(self._py_file)

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.commonpath([PACKAGE_DIR, os.path.abspath(py_file)]) != PACKAGE_DIR:
                return None  # not ours: numba's own locators
            return super().from_function(py_func, py_file)

    locators = caching.CacheImpl._locator_classes  # noqa: SLF001 (numba's hook, checked above)
    locators[:] = [cls for cls in locators if cls.__name__ != "PackageCacheLocator"]
    locators.insert(0, PackageCacheLocator)
    _lock_saves_in(build_folder)


SAVING_LOCK = "saving.lock"  # in a build's folder: held while numba saves code there


def _lock_saves_in(build_folder):
    """Hold :data:`SAVING_LOCK` while numba saves compiled code in ``build_folder``.

    numba saves a function's code by reading its index, choosing a data file's name and
    replacing both: two processes saving the same function at once (another signature, as
    ``beggar warmup``'s processes do for each player count) would each drop the other's
    entry, or both write the same data file for different entries, so that the code of one
    signature is loaded for another. One save at a time in a build makes it whole; loading
    needs no lock (numba replaces each file whole)."""
    caching = _check_cache_hook()
    cache_file = caching.IndexDataCacheFile
    save = getattr(cache_file.save, "unlocked", cache_file.save)
    root = os.path.join(os.path.abspath(build_folder), "")

    def locked_save(self, key, data):
        if not os.path.join(os.path.abspath(getattr(self, "_cache_path", "")), "").startswith(root):
            return save(self, key, data)  # not ours
        with _held(os.path.join(root, SAVING_LOCK)):
            return save(self, key, data)

    locked_save.unlocked = save
    cache_file.save = locked_save


@contextmanager
def _held(path):
    """An exclusive lock on the file ``path`` for the enclosed block, waiting for it (no lock without fcntl)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # lets go of the lock


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


_choose_threading_layer()
_name_records_by_content()
CACHE_FOLDER = _choose_cache()
CACHE = CACHE_FOLDER is not None


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

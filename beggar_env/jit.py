"""How the package uses numba: its settings, its workarounds and the one lock on parallel code.

Everything here changes numba for the whole process, so it is done once, on import, and
only where it is safe:

* **Threading layer.** numba's default on Linux is GNU OpenMP, which kills a ``fork()``ed
  child that runs parallel code (PyTorch ``DataLoader`` workers, ``multiprocessing``
  pools). Unless the user chose a layer (``NUMBA_THREADING_LAYER``), we ask for
  ``"forksafe"``: TBB when installed, else numba's own ``workqueue`` (as fast here).
  ``workqueue`` must not run two parallel calls at once, so every parallel call of the
  package holds :data:`PARALLEL` (they use every core anyway).
* **Cache.** Compiled code is cached beside the package, or in numba's user-wide cache.
  A read-only install with an unwritable home has neither: we fall back to a private
  folder in the temporary directory, or to no cache, with one warning.
* **Record names.** numba names compiled code after a per-process counter of record types
  (numba issue 7654), so code cached by two processes can mix up a 2- and a 3-player
  state. We name record types after their content instead. The hook is numba's
  ``types.Record.mangling_args``; it is checked, and the package refuses to import if it
  has moved (tested on the numba versions that ``pyproject.toml`` admits).
"""

import hashlib
import os
import tempfile
import threading
import warnings
from contextlib import contextmanager
from enum import IntEnum
from types import FunctionType, SimpleNamespace

import numba
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


def _probe():  # a function in this folder: numba finds a cache for it as for the others
    return 0


def _cache_available():
    try:
        numba.njit(cache=True)(_probe)
    except RuntimeError as error:
        if "no locator available" not in str(error):
            raise
        return False
    return True


def _private_cache_dir():
    """A cache folder in the temporary directory that only this user can write, or None."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    path = os.path.join(tempfile.gettempdir(), f"beggar-env-numba-cache-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
        if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
            path = tempfile.mkdtemp(prefix="beggar-env-numba-cache-")  # someone else's: use a fresh one
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


def _choose_cache():
    """Whether compiled code can be cached; falls back to a private temporary folder."""
    if _cache_available():
        return True
    fallback = _private_cache_dir()
    if fallback is not None:
        numba.config.CACHE_DIR = fallback
        if _cache_available():
            warnings.warn(
                f"beggar_env: no writable numba cache beside the package, in NUMBA_CACHE_DIR or in the home "
                f"folder; caching compiled code in {fallback}",
                RuntimeWarning,
                stacklevel=3,
            )
            return True
    warnings.warn(
        "beggar_env: no writable folder for numba's cache: compiled code is not cached, so every new "
        "process compiles it again (set NUMBA_CACHE_DIR to a writable folder)",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


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
CACHE = _choose_cache()


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

"""Argument checks shared by every entry point (Python API, envs, command line).

Each returns the value as the engine takes it, or raises ``TypeError`` (wrong kind of
value) or ``ValueError`` (right kind, out of range) naming the argument and what it
accepts. Quoted input is cut to a bounded excerpt. The words that messages and reports
share (:func:`excerpt`, :func:`plural`, :func:`gib`) are here too.
"""

import importlib
import math
import numbers
import os
from collections.abc import Mapping

import numpy as np

MAX_LIMIT = 2**63 - 1  # the engine's counters are int64; this value means "no limit"
MAX_COUNT = 2**63 - 1  # games, deals, steps: the engine counts them in int64
MAX_SEED = 2**64 - 1
EXCERPT = 60  # characters of bad input quoted in an error message
DIGITS = 40  # digits of a huge number quoted in an error message
STR_DIGITS_BITS = 14_000  # ints of at most this many bits have fewer than 4,300 digits, which str() writes


def excerpt(value, limit=EXCERPT):
    """``repr(value)``, cut to about ``limit`` characters for an error message (an int
    as :func:`number_text` writes it)."""
    if is_integer(value):
        return number_text(value)
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit])
    if isinstance(value, str) and len(value) > limit:
        return f"{text[:-1]}...{text[-1]} ({len(value):,} characters)"
    return text if len(text) <= limit + 2 else text[:limit] + "..."


def number_text(value, digits=DIGITS) -> str:
    """An int as an error message quotes it: whole up to ``digits`` digits, else its first
    and last digits and how many it has (Python writes no int of more than 4,300 digits)."""
    value = int(value)
    bits = abs(value).bit_length()
    if bits <= 3 * digits:  # at most 0.91 * digits digits
        return str(value)
    if bits > STR_DIGITS_BITS:
        return f"a{' negative' if value < 0 else ''} number of about {int(bits * math.log10(2)):,} digits"
    text = str(value)
    sign = "-" if value < 0 else ""
    return f"{text[: digits // 2]}...{text[-5:]} ({len(text) - len(sign):,} digits)"


def install_hint(extra) -> str:
    """How to install one of the package's extras: from a checkout, where it comes from
    today, and by name once it is published on an index."""
    return f"pip install '.[{extra}]' in a checkout of beggar-env (once published: pip install 'beggar-env[{extra}]')"


def import_extra(module, extra, user, alternative=None):
    """``module`` (one of the extra ``extra``'s), imported, or ``ImportError`` in one line:
    ``user`` needs it, and how to install it (or ``alternative``)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        tail = f", or {alternative}" if alternative else ""
        raise ImportError(f"{user} needs {module}: {install_hint(extra)}{tail}") from error


def plural(n, noun, grouped=False):
    """``n`` and the noun, singular or plural: '1 card', '2 cards' (``grouped``: '1,000 deals')."""
    count = f"{n:,}" if grouped else f"{n}"
    return f"{count} {noun}" if n == 1 else f"{count} {noun}s"


def is_integer(value):
    """Whether ``value`` is an integer (Python or numpy), not a bool."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def integer(name, value, minimum=None, maximum=None):
    """An int in ``[minimum, maximum]`` (either bound may be None)."""
    if not is_integer(value):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} {excerpt(value)}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {range_text(minimum, maximum)}, not {number_text(value)}")
    return value


def range_text(minimum, maximum):
    if maximum is None:
        return f">= {minimum}"
    if minimum is None:
        return f"<= {maximum}"
    return f"between {minimum} and {maximum:,}" if maximum > 10**6 else f"between {minimum} and {maximum}"


def limit(name, value):
    """An agreed limit (``max_cards``, ``max_tricks``): None for none, else 0 .. 2**63-1."""
    if value is None:
        return MAX_LIMIT
    return integer(name, value, 0, MAX_LIMIT)


def choice(name, value, allowed):
    """One of the strings ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, not {excerpt(value)}")
    return value


def n_players(value):
    """A player count: 2, 3 or 4."""
    if not is_integer(value):
        raise TypeError(f"n_players must be an int, not {type(value).__name__}")
    if not 2 <= value <= 4:
        raise ValueError(f"n_players must be 2, 3 or 4, not {number_text(value)}")
    return int(value)


def seed(value):
    """A stream seed as a ``numpy.uint64``: from None (fresh entropy), an int in
    0 .. 2**64-1 or a ``numpy.random.Generator``."""
    if value is None:
        return np.random.SeedSequence().generate_state(1, np.uint64)[0]
    if isinstance(value, np.random.Generator):
        return value.integers(0, 2**64, dtype=np.uint64)
    if not is_integer(value):
        raise TypeError(f"seed must be None, an int or a numpy.random.Generator, not {type(value).__name__}")
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"seed must be between 0 and 2**64-1, not {number_text(value)}")
    return np.uint64(value)


def count(name, value, minimum=0):
    """A number of things (games, envs, ...): an int from ``minimum`` to :data:`MAX_COUNT`."""
    return integer(name, value, minimum, MAX_COUNT)


def boolean(name, value):
    """``True`` or ``False`` (a numpy bool too); anything else, which ``bool()`` would take
    (the string ``'False'`` is true), is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__} {excerpt(value)}")
    return bool(value)


def callback(name, value):
    """None, or something to call (a progress report, a policy)."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be None or a callable, not {type(value).__name__} {excerpt(value)}")
    return value


def observations(name, value):
    """A batch of observations: a mapping of field names to arrays (its fields are checked
    where they are read)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of observation fields, not {type(value).__name__} {excerpt(value)}")
    return value


def options(name, value):
    """``reset``'s options: None or a dict (with str keys)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise TypeError(f"{name} must be None or a dict of option names, not {type(value).__name__} {excerpt(value)}")
    return dict(value)


def path(name, value):
    """A file or folder name: a ``str`` or an ``os.PathLike`` (an int would be taken for a file descriptor)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__} {excerpt(value)}")
    text = os.fspath(value)
    if not isinstance(text, str) or "\0" in text:
        raise ValueError(f"{name} must be a path without null characters, in text, not {excerpt(value)}")
    return text


def available_memory():
    """Bytes of memory available to this process now (None if unknown)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory(n_bytes, what, instead):
    """Refuse (``MemoryError``, one line) to allocate ``n_bytes`` for ``what`` when they
    exceed the memory available; ``instead`` says what to do."""
    available = available_memory()
    if available is not None and n_bytes > available:
        raise MemoryError(f"{what} needs {gib(n_bytes)} of memory and {gib(available)} is available: {instead}")


def gib(n_bytes):
    """Bytes as a short human figure: '59.1 GiB', '312 MiB'."""
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.1f} GiB"
    return f"{n_bytes / 2**20:.0f} MiB"


def number(name, value, minimum, strict=False):
    """A finite real number (int or float, not a bool) ``>= minimum`` (``> minimum`` if
    ``strict``), as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__} {excerpt(value)}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, not {excerpt(value)}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value}")
    if not (value > minimum if strict else value >= minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, not {value:g}")
    return value

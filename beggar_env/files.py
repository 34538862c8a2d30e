"""Writing results to files, the one way every file of the package is written: the
destination is checked before any work (:func:`output_path`), a file is locked against a
second writer (:func:`exclusive`: held for a whole run, or just for one write) and replaced
whole or not at all (:func:`replacing`: a temporary file beside it, then renamed), and what
a killed process left behind (its temporary files and folders, named after its process id)
is removed by the next run."""

import errno
import json
import math
import os
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

TEMPORARY_SUFFIX = ".partial"
TEMPORARY_EXTRA = 40  # characters a temporary name adds to a file's name (".", ".PID.", random, ".partial")


def output_path(path, suffix=".npz", name=None) -> str:
    """The file that writing ``path`` will create: ``suffix`` added when the name has none
    (as numpy would add it; a name with another suffix is refused), checked to be writable.
    ``ValueError`` naming the problem (after ``name:``, the argument's name, if given)."""
    try:
        return _output_path(path, suffix)
    except (TypeError, ValueError) as error:
        if name is None:
            raise
        raise type(error)(f"{name}: {error}") from None


def _output_path(path, suffix):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"a file name must be a str or an os.PathLike, not {type(path).__name__}")
    text = os.fspath(path)
    if "\0" in text:
        raise ValueError(f"{text!r} holds a null character, which no file name may")
    if not text or text.endswith(os.sep) or os.path.isdir(text):
        raise ValueError(f"{text!r} is a folder: give a file name, such as {os.path.join(text, 'results' + suffix)!r}")
    other = Path(text).suffix
    if other and other != suffix:  # 'x.txt' would silently become 'x.txt.jsonl'
        raise ValueError(
            f"{text!r} names a {other} file; this writes {suffix}: give a name ending in {suffix} (or none)"
        )
    if not text.endswith(suffix):
        text += suffix
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise ValueError(f"no such folder: {folder}")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"cannot write in {folder} (permission denied)")
    if os.path.isdir(text):
        raise ValueError(f"{text!r} is a folder")
    if os.path.exists(text) and not os.path.isfile(text):  # replacing a device or a FIFO (as root: /dev/zero)
        raise ValueError(f"{text!r} is not a regular file (a device, a FIFO or a socket): give a file name")
    check_name_length(text)
    return text


def check_name_length(path, extra=TEMPORARY_EXTRA):
    """``ValueError`` when ``path``'s name, with ``extra`` characters more (its temporary
    files'), is longer than its file system allows."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        longest = 255
    name = os.path.basename(os.fspath(path))
    if len(os.fsencode(name)) + extra > longest:
        raise ValueError(
            f"the name {name[:40]!r}... is too long: this file system allows {longest} bytes, and a temporary "
            f"name adds up to {extra}"
        )


# --------------------------------------------------------------- dead processes


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(folder, prefix, suffix=""):
    """Remove the files and folders ``PREFIX<pid>.*SUFFIX`` in ``folder`` whose process
    (on this machine) is gone: what a killed run left behind."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)\..*" + re.escape(suffix) + "$")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


@contextmanager
def scratch_folder(purpose="scratch"):
    """A temporary folder for the enclosed block (named after this process, so that the
    next run removes it if this one is killed), removed on exit."""
    prefix = f"beggar-env-{purpose}-"
    remove_stale(tempfile.gettempdir(), prefix)
    folder = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}.")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------ writing


@contextmanager
def replacing(path):
    """Yield a temporary file object in ``path``'s folder; on success it replaces ``path``
    (atomically), on any error or interruption it is removed and ``path`` is untouched.
    ``path`` is locked meanwhile (:func:`exclusive`; a lock this process already holds, as
    a run that writes its file again and again does, is taken again). A failed write raises
    ``OSError`` naming ``path`` (not the temporary file)."""
    with exclusive(path):
        with _replacing(path) as f:
            yield f


@contextmanager
def _replacing(path):
    target = os.path.realpath(path)  # a link is written through, not replaced by a file
    folder = os.path.dirname(target)
    prefix = f".{Path(target).name}."
    remove_stale(folder, prefix, TEMPORARY_SUFFIX)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}.", suffix=TEMPORARY_SUFFIX, dir=folder)
    except OSError as error:
        raise _naming(error, path) from None
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0o600
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if isinstance(error, OSError):
            raise _naming(error, path) from None
        raise


def _naming(error, path):
    reason = os.strerror(error.errno) if error.errno else str(error).splitlines()[0]
    return OSError(error.errno, f"writing {os.fspath(path)} failed: {reason}")


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes(path, data: bytes):
    """``data`` as the whole of ``path`` (see :func:`replacing`)."""
    with replacing(path) as f:
        f.write(data)


def write_json(path, record):
    """``record`` as indented JSON text, the whole of ``path`` (see :func:`replacing`)."""
    write_bytes(path, (json.dumps(record, indent=1) + "\n").encode("utf-8"))


# ------------------------------------------------------------------------ reading

MESSAGE = 200  # characters of a schema's complaint quoted in an error message
JSON_BYTES = 64 * 2**20  # the most read_json reads of a file by default (a report: kilobytes)


def read_bytes(path, limit) -> bytes:
    """The whole of the regular file ``path``, at most ``limit`` bytes: ``ValueError``, one
    line naming the file, for anything else (a missing file, a folder, a device such as
    ``/dev/zero``, a FIFO, which is opened without waiting for a writer, or a file over the
    limit), so that no read runs out of memory or blocks."""
    where = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ValueError(f"{where} does not exist") from None
    except OSError as error:
        raise ValueError(f"{where} cannot be read: {os.strerror(error.errno) if error.errno else error}") from None
    try:
        return _bounded(fd, where, limit)
    finally:
        os.close(fd)


def _bounded(fd, where, limit):
    mode = os.fstat(fd)
    if not stat.S_ISREG(mode.st_mode):
        raise ValueError(f"{where} is not a regular file (it is {_file_kind(mode.st_mode)}): give a file")
    if mode.st_size > limit:
        raise ValueError(f"{where} is {mode.st_size:,} bytes, more than the {limit:,} this file may hold")
    chunks, size = [], 0
    try:
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 2**24))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise ValueError(f"{where} cannot be read: {os.strerror(error.errno) if error.errno else error}") from None
    if size > limit:  # it grew while read
        raise ValueError(f"{where} is more than the {limit:,} bytes this file may hold")
    return b"".join(chunks)


def _file_kind(mode):
    kinds = {stat.S_ISDIR: "a folder", stat.S_ISCHR: "a device", stat.S_ISBLK: "a device", stat.S_ISFIFO: "a FIFO"}
    return next((words for test, words in kinds.items() if test(mode)), "a socket or other special file")


def read_text(path, limit) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``limit`` bytes (see :func:`read_bytes`)."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{os.fspath(path)} is not UTF-8 text (byte {error.start:,})") from None


def read_json(path, schema=None, limit=JSON_BYTES) -> dict:
    """The JSON object in ``path`` (a regular file of at most ``limit`` bytes, see
    :func:`read_bytes`), checked against ``schema`` (a JSON Schema) if given:
    ``ValueError``, one line naming the file and the first thing wrong (no NaN nor
    infinity, which Python's json would take and JSON has not, nor a number too large
    for a float, such as 1e400, which it would read as infinity)."""
    text = read_text(path, limit)
    try:
        record = parse_json(text)
    except (ValueError, RecursionError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{os.fspath(path)} cannot be read as JSON: {reason}") from None
    if schema is not None:
        check_schema(record, schema, os.fspath(path))
    return record


def parse_json(text):
    """``json.loads(text)``, refusing what JSON has not: NaN, infinity, and a number too
    large for a float (``ValueError``)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)


def _refuse_constant(constant):
    raise ValueError(f"{constant} is not a JSON number")


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond the range of a float")
    return value


def check_schema(record, schema, where):
    """``ValueError`` naming ``where`` and the first place where ``record`` breaks ``schema``
    (JSON Schema, checked by ``jsonschema``; an ``integer`` is written as one: ``2.0`` is
    not, though JSON Schema would take it)."""
    import jsonschema

    strict = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=strict)
    error = jsonschema.exceptions.best_match(validator(schema).iter_errors(record))
    if error is not None:
        message = error.message if len(error.message) <= MESSAGE else error.message[:MESSAGE] + "..."
        raise ValueError(f"{where}: {error.json_path}: {message}".replace("\n", " "))


def save_npz(path, **arrays) -> str:
    """``numpy.savez`` made safe: returns the path written (see :func:`output_path`)."""
    path = output_path(path, ".npz")
    with replacing(path) as f:
        np.savez(f, **arrays)
    return path


# ------------------------------------------------------------------------ locking


class InUse(ValueError):
    """The file is being written by another run."""


_HELD = set()  # the lock files this process holds


def lock_path(path) -> str:
    """The lock file of ``path``: a hidden ``.NAME.lock`` beside the file it names, links
    followed (so that a link to a file and the file share one lock)."""
    real = os.path.realpath(os.fspath(path))
    return os.path.join(os.path.dirname(real), f".{Path(real).name}.lock")


@contextmanager
def exclusive(path):
    """Hold an advisory lock on ``path`` for the enclosed block (:func:`lock_path`, removed
    at the end), so that a second run writing it is refused at once with :class:`InUse`,
    not silently overwritten. The lock is this process's: taking it again within the block
    (a run that rewrites its file) is allowed. Without ``fcntl`` (Windows), no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock = lock_path(path)
    if lock in _HELD:
        yield
        return
    fd = _locked(fcntl, lock, path)
    _HELD.add(lock)
    try:
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as error:  # a full disk: say which file could not be written
            raise _naming(error, path) from None
        yield
    finally:
        _HELD.discard(lock)
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        os.close(fd)


def _locked(fcntl, lock, path):
    """A descriptor of ``lock``, flocked; :class:`InUse` when another process holds it."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as error:
            raise _naming(error, path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise _naming(error, lock) from None
            raise InUse(
                f"{os.fspath(path)} is being written by another run (process {holder or '?'}): "
                "wait for it to end, or choose another file"
            ) from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return fd  # else its holder removed it just before we locked it: lock the new one
        except FileNotFoundError:
            pass
        os.close(fd)

"""Writing results to files: the destination is checked before any work, and a file is
replaced whole or not at all (written to a temporary file beside it, then renamed)."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def output_path(path, suffix=".npz") -> str:
    """The file that writing ``path`` will create: ``suffix`` added when the name has none
    (as numpy would add it; a name with another suffix is refused), checked to be writable.
    ``ValueError`` naming the problem."""
    text = os.fspath(path)
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
    return text


@contextmanager
def replacing(path):
    """Yield a temporary file object in ``path``'s folder; on success it replaces ``path``
    (atomically), on any error or interruption it is removed and ``path`` is untouched."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{Path(path).name}.", suffix=".partial", dir=folder)
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0o600
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def save_npz(path, **arrays) -> str:
    """``numpy.savez`` made safe: returns the path written (see :func:`output_path`)."""
    path = output_path(path, ".npz")
    with replacing(path) as f:
        np.savez(f, **arrays)
    return path

"""The files of the cycles wing: each run's JSON record (its ``kind`` and the package's
version first), its destination checked before any work, locked for the run and replaced
whole (:mod:`beggar_env.files`). A census keeps its own file, written as it runs
(:mod:`~beggar_env.cycles.census`)."""

from contextlib import contextmanager

from .. import __version__, files


def kind(name) -> str:
    """The ``kind`` of a record: ``beggar-cycles-NAME``."""
    return f"beggar-cycles-{name}"


@contextmanager
def output(out, name="out", suffix=".json"):
    """The file ``out`` names (``suffix`` added), checked and locked for the block, so that
    a second run on it is refused at once (``files.InUse``); None for no file."""
    if out is None:
        yield None
        return
    path = files.output_path(out, suffix, name=name)
    with files.exclusive(path):
        yield path


def write(path, name, record):
    """``record`` as the whole of ``path`` (nothing when ``path`` is None)."""
    if path is not None:
        files.write_json(path, {"kind": kind(name), "version": __version__, **record})

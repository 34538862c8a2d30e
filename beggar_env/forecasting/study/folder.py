"""The study's folder: ``results.json``, ``tables.md`` and the pictures, checked before
the study (:func:`check_out`), written so that no failure leaves it broken (all drawn first,
``results.json`` replaced last, under its lock), and drawn again with rows added
(:func:`redraw`) without running the study."""

import copy
import json
import os
from pathlib import Path

from ... import files
from .figures import draw
from .results import add_reports, check_results, read_results, results_text
from .tables import tables_text


def check_out(out):
    """Check, before the study, that ``out`` can take its files: a folder this process can
    write in, or a new one in such a folder, whose ``results.json`` no other run is writing.
    ``ValueError`` naming the problem."""
    out = os.path.abspath(os.fspath(out))
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"{out} is a file, not a folder")
    where = out if os.path.isdir(out) else os.path.dirname(out)
    if not os.path.isdir(where):
        raise ValueError(f"no such folder: {where}")
    if not os.access(where, os.W_OK):
        raise ValueError(f"cannot write in {where} (permission denied)")
    files.check_name_length(os.path.join(out, "reliability_4p.png"))
    if os.path.isdir(out):  # another run writing the folder: refused now (files.InUse), not after the study
        with files.exclusive(os.path.join(out, "results.json")):
            pass


def write(results, out, command):
    """Write ``results.json``, ``tables.md`` and the pictures into the folder ``out`` (see
    :func:`_write_folder`: all drawn first, ``results.json`` replaced last, under its lock)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return _write_folder({"command": command, **results}, out, with_results=True)


def write_tables_and_pictures(results, out):
    """``tables.md`` and the pictures of ``results`` (as ``results.json`` holds them) in
    ``out``, under ``results.json``'s lock; ``results.json`` itself is left as it is."""
    return _write_folder(results, Path(out), with_results=False)


def _write_folder(results, out, with_results):
    """Write the study's files in ``out`` so that no failure leaves a broken folder: check
    ``results`` (:data:`RESULTS_SCHEMA`), draw the tables and every picture in memory, then
    replace each file whole (``files.write_bytes``), ``results.json`` last, holding its lock
    throughout. A drawing that fails writes nothing; a write that fails (a full disk) puts
    back the files already replaced, so the folder is as it was. Returns the pictures'
    paths."""
    out = Path(out)
    with files.exclusive(out / "results.json"):
        text = results_text(results)
        results = json.loads(text)  # drawn as results.json holds it (a tuple becomes a list), as a redraw reads it
        check_results(results, str(out / "results.json"))
        contents = {out / "tables.md": tables_text(results).encode("utf-8")}
        pictures = draw(results, out)
        contents.update(pictures)
        if with_results:
            contents[out / "results.json"] = text.encode("utf-8")  # the last one replaced
        _replace_all(contents)
    return list(pictures)


def _replace_all(contents):
    """Replace each file of ``contents`` (path: bytes) in order; if one fails, put back the
    ones replaced before it (their previous bytes, or no file) and raise its error."""
    done = []
    try:
        for path, data in contents.items():
            try:
                before = path.read_bytes()
            except FileNotFoundError:
                before = None
            files.write_bytes(path, data)
            done.append((path, before))
    except BaseException:
        for path, before in reversed(done):
            try:
                if before is None:
                    path.unlink()
                else:
                    files.write_bytes(path, before)
            except OSError:
                pass  # the first error is the one to report
        raise


def add_to_written(results, out, paths, command):
    """Add reports as rows to ``results``, the study written in ``out`` (its ``results.json``),
    without running it again (a row of the same forecaster is replaced), and write it, the
    tables and the pictures again; ``command`` is recorded beside the study's own. Every
    report is checked before anything is written (``ValueError``); ``results.json`` is
    locked meanwhile (:func:`redraw` also reads it under that lock)."""
    results = copy.deepcopy(results)  # the caller's results change only when the folder does
    add_reports(results, paths)
    results["added"] = [*[c for c in results.get("added", []) if c != command], command]
    return _write_folder(results, out, with_results=True)


def redraw(out, paths=(), command=None):
    """``beggar baselines --redraw``: read the study in ``out`` (its ``results.json``), add
    the reports ``paths`` as rows (:func:`add_to_written`) and write the tables and the
    pictures again, all under ``results.json``'s lock, so that a second run at the same
    time is refused (``files.InUse``) rather than lose a row. A ``results.json`` of an
    older layout, upgraded as it is read (:func:`~.results.upgrade_results`), is written
    again as this version writes it, with the tables drawn from it. Returns the pictures
    written."""
    path = Path(out) / "results.json"
    if not path.is_file():  # before the lock, which would be a new file beside it
        raise ValueError(f"{path} does not exist: run the study first (beggar baselines --out DIR)")
    with files.exclusive(path):
        results = read_results(path)
        if paths:
            return add_to_written(results, out, paths, command)
        if results_text(results) != path.read_text(encoding="utf-8"):  # upgraded: the file says what the tables do
            return _write_folder(results, Path(out), with_results=True)
        return write_tables_and_pictures(results, out)

"""The ``beggar`` command: play one deal, simulate many games, generate datasets, search
for the longest deals, evaluate the forecasters, compile everything at once (``warmup``).

Every failure is one line on stderr, and its exit status says which kind it was:

* 2: the command line asks for what cannot be done (a bad value, a destination that cannot
  be used, a missing extra, more memory than there is): found before any work;
* 1: the run failed while working (a write that failed, a full disk, a Ray cluster that
  cannot be reached or a worker that failed): what it had written is removed;
* 130 or 143: Ctrl-C or SIGTERM, which stop any run within a second, leaving no partial file.

This module imports only the standard library, so that Ctrl-C is handled from the first
moment: run as the command (``beggar``, ``python -m beggar_env.cli``), it ends the process
at a signal with its exit status and one line (:func:`_exit_at_once`) from its own import
on, until :func:`main` takes over, and again from :func:`main`'s return until the process
ends, with no interpreter teardown (:func:`run`). (A signal before its import, while the
interpreter starts and reads its site-packages' ``.pth`` files, is the interpreter's.) The
commands (:mod:`beggar_env.cli.commands`, one module each, and their shared
:mod:`~beggar_env.cli.options`) are imported inside that handling. Where Python cannot
raise the ``KeyboardInterrupt`` or ``Terminated`` of a signal, but only print it and go on
(in a weakref callback, as imports use, a ``__del__`` or a ctypes callback), it is raised
again at the next place that can (:func:`_raise_again`); where it could be lost without a
word (a C extension's initialisation), it is held back until the commands are imported
(:func:`_held_back`); numba holds signals back itself while it loads or compiles
(:class:`beggar_env.compiling.SignalGuard`).
"""

import _signal  # signal's C module, without the enums that take signal's import a few milliseconds
import os
import sys

STATUSES = {_signal.SIGINT: 130, _signal.SIGTERM: 143}  # the exit status of a run a signal ended
LAST_WORDS = {_signal.SIGINT: b"beggar: interrupted\n", _signal.SIGTERM: b"beggar: terminated\n"}


def _exit_at_once(signum, frame):
    """A signal where there is nothing to clean up (before :func:`main`, after it): the
    process ends there and then, with the signal's exit status and one line."""
    try:
        os.write(2, LAST_WORDS[signum])
    except OSError:
        pass
    os._exit(STATUSES[signum])


def _exit_on_signals():
    """Ctrl-C and SIGTERM end the process at once (:func:`_exit_at_once`); one that the
    process was started with ignored (SIG_IGN, as ``nohup`` does) stays ignored."""
    for signum in STATUSES:
        if _signal.getsignal(signum) != _signal.SIG_IGN:
            _signal.signal(signum, _exit_at_once)


def _is_the_command() -> bool:
    """Whether this process is the ``beggar`` command (its script, or ``python -m beggar_env.cli``)."""
    argv = list(getattr(sys, "orig_argv", ()))
    if "-m" in argv:
        return argv[argv.index("-m") + 1 : argv.index("-m") + 2] == ["beggar_env.cli"]
    return len(argv) > 1 and os.path.splitext(os.path.basename(argv[1]))[0] == "beggar"


if _is_the_command():
    _exit_on_signals()  # the first thing this module does: the command is starting

import _thread  # noqa: E402 (after the handlers, which are the point of this module's first lines)
import signal  # noqa: E402
import threading  # noqa: E402
from contextlib import contextmanager  # noqa: E402

EXIT_STATUSES = """exit status: 0 done; 2 bad input, found before any work (a value, a destination, a missing extra,
memory); 1 the run failed while working (a failed write, a full disk, Ray); 130 or 143 Ctrl-C or SIGTERM."""


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


class Terminated(BaseException):
    """SIGTERM, raised where the process is so that files are cleaned up as for Ctrl-C."""


def _terminate(signum, frame):
    raise Terminated()


@contextmanager
def _held_back():
    """Ctrl-C and SIGTERM held back while the commands are imported, then raised: numba
    imports numpy's and SciPy's C extensions, whose initialisation can drop silently an
    exception that a handler raises there (a second or so at most)."""
    held, handlers, done = [], {}, False

    def hold(signum, frame):
        if done:  # left in place by a signal while the handlers were put back
            handlers[signum](signum, frame)
        elif signum not in held:
            held.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        if callable(signal.getsignal(signum)):  # not one that Ctrl-C must leave ignored (SIG_IGN)
            handlers[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        done = True
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for signum in held:
            handlers[signum](signum, None)


def _raise_again(otherwise):
    """A ``sys.unraisablehook``: an interruption that Python could only print and drop is
    signalled to the main thread again, to be raised where it runs Python next. Signalled
    from another thread, a moment later: signalled here, its handler would run in this
    hook, and what it raised would be dropped again, for good."""

    def hook(unraisable):
        signum = {KeyboardInterrupt: signal.SIGINT, Terminated: signal.SIGTERM}.get(type(unraisable.exc_value))
        if signum is None:
            otherwise(unraisable)
            return
        again = threading.Timer(0.005, _thread.interrupt_main, (signum,))
        again.daemon = True
        again.start()

    return hook


def _failure(error):
    """The exit status and the message of an error (see the module docstring): a usage
    error's own text (the whole help, for a bare ``beggar``), else one line."""
    if isinstance(error, UsageError):
        return 2, str(error)
    text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)  # not "[Errno 28] ..."
    line = next((part for part in text.splitlines() if part.strip()), type(error).__name__)
    if isinstance(error, (ValueError, TypeError, MemoryError, ImportError)):
        return 2, f"beggar: {line}"
    return 1, f"beggar: {line}"  # an OSError: the command has removed what it wrote


def main(argv=None):
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) is _exit_at_once:  # from here, Ctrl-C is a KeyboardInterrupt, cleaned up
        signal.signal(signal.SIGINT, signal.default_int_handler)
    unraisable, sys.unraisablehook = sys.unraisablehook, _raise_again(sys.unraisablehook)
    try:
        with _held_back():
            from . import commands, options
        args = commands.parse_args(argv)
        with options.notice_for(args.command):
            commands.run(args)
    except KeyboardInterrupt:
        print("beggar: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("beggar: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        return 0
    except (UsageError, ValueError, TypeError, MemoryError, ImportError, OSError) as error:
        status, message = _failure(error)
        print(message, file=sys.stderr)
        return status
    finally:
        sys.unraisablehook = unraisable
    return 0


def run():
    """The ``beggar`` command: :func:`main`, then exit at once, its output flushed, rather
    than tear down numba's and pyarrow's native libraries (a second on 2 cores), during
    which a signal would end the process without its exit status. From :func:`main`'s
    return on, a signal ends the process at once with its status and one line."""
    try:
        status = main()
        _exit_on_signals()
    except KeyboardInterrupt:  # a signal between main's handling and the line above
        _exit_on_signals()
        status = _said(130, "beggar: interrupted")
    except Terminated:
        _exit_on_signals()
        status = _said(143, "beggar: terminated")
    except SystemExit as done:  # --help, --version
        _exit_on_signals()
        status = done.code if isinstance(done.code, int) else _said(1, done.code) if done.code else 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what could be written was
            pass
    os._exit(status)


def _said(status, line):
    print(line, file=sys.stderr)
    return status

"""The ``beggar`` command: play one deal, simulate many games, generate datasets, search
for the longest deals, evaluate the forecasters, compile everything at once (``warmup``).

Every failure is one line on stderr, and its exit status says which kind it was:

* 2: the command line asks for what cannot be done (a bad value, a destination that cannot
  be used, a missing extra, more memory than there is): found before any work;
* 1: the run failed while working (a write that failed, a full disk, a Ray cluster that
  cannot be reached or a worker that failed): what it had written is removed;
* 130 or 143: Ctrl-C or SIGTERM, which stop any run within a second, leaving no partial file.

This module imports only the standard library, so that Ctrl-C is handled from the first
moment; the commands (:mod:`beggar_env.cli.commands`, one module each, and their shared
:mod:`~beggar_env.cli.options`) are imported inside that handling.
"""

import os
import signal
import sys

EXIT_STATUSES = """exit status: 0 done; 2 bad input, found before any work (a value, a destination, a missing extra,
memory); 1 the run failed while working (a failed write, a full disk, Ray); 130 or 143 Ctrl-C or SIGTERM."""


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


class Terminated(BaseException):
    """SIGTERM, raised where the process is so that files are cleaned up as for Ctrl-C."""


def _terminate(signum, frame):
    raise Terminated()


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
    try:
        from . import commands

        commands.run(commands.parse_args(argv))
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
    return 0


def run():
    """The ``beggar`` command: :func:`main`, then exit. After Ctrl-C or SIGTERM, whose
    clean-up is done, the process ends at once rather than tear down numba's and pyarrow's
    native libraries (a second on 2 cores)."""
    status = main()
    if status in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)

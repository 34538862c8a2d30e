"""What the commands share: the parser class, the number types and the options several
commands take, the checks of ``--ray`` and ``--backend cuda``, and how a run is shown
(the compiling notice, the progress bar)."""

import argparse
import re
import sys
import time
from contextlib import contextmanager

import numpy as np

from .. import checks, files
from . import UsageError

COMPILE_NOTICE = "beggar: preparing the compiled engine"  # how the notice starts (the tests look for it)
COMPILE_NOTICE_WORDS = (
    f"{COMPILE_NOTICE} (the first run of each part compiles it once, seconds to a minute; later runs load it from "
    "numba's cache; beggar warmup compiles every part)..."
)
MOST_DIGITS = 4300  # int() reads no longer number (sys.get_int_max_str_digits)
WHOLE_NUMBER = re.compile(r"-?[0-9]+")  # int() would also take '5_0', '+5', ' 7 ' and other scripts' digits ('５')
REAL_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` (one line, exit status 2)."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


def whole_number(minimum, maximum=checks.MAX_COUNT):
    """An argparse type: an int in [minimum, maximum] (default: the most the engine counts;
    None: no maximum), written in ASCII digits, checked as the API checks it."""

    def parse(text):
        if not WHOLE_NUMBER.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a whole number: {checks.excerpt(text)}")
        if len(text.lstrip("-")) > MOST_DIGITS:
            raise argparse.ArgumentTypeError(f"not a number of at most {MOST_DIGITS:,} digits: {checks.excerpt(text)}")
        value = int(text)
        try:
            return checks.integer("the value", value, minimum, maximum)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {checks.range_text(minimum, maximum)}, not {checks.number_text(value)}"
            ) from None

    return parse


def real_number(minimum, strict=False):
    """An argparse type: a finite number ``>= minimum`` (``> minimum`` if ``strict``), as
    :func:`beggar_env.checks.number` checks it for the API."""
    bound = f"{'>' if strict else '>='} {minimum}"

    def parse(text):
        if not REAL_NUMBER.fullmatch(text):  # also refuses 'inf' and 'nan', which float() takes
            raise argparse.ArgumentTypeError(f"not a number: {checks.excerpt(text)}")
        value = float(text)
        if value != float("inf"):
            try:
                return checks.number("the value", value, minimum, strict)
            except ValueError:
                pass
        raise argparse.ArgumentTypeError(f"must be a number {bound}, not {checks.excerpt(text)}")

    return parse


DOUBLE_DASH = "\0--"  # the deck '--' on its way through argparse, which drops a value '--' (commands.parse_args)
PLAYER_COUNTS = ("2", "3", "4")


def deck(text):
    """An argparse type: a deck in compact symbols (``--`` included: see :data:`DOUBLE_DASH`),
    checked by the one rule of a deck, the API's (``deals.deck_counts``)."""
    from ..deals import deck_counts

    text = "--" if text == DOUBLE_DASH else text
    try:
        deck_counts(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(re.sub(r"^deck:? ", "", str(error))) from None
    return text


def players(text):
    """An argparse type: a player count, 2, 3 or 4, written as such (int() would take ' 3')."""
    if text not in PLAYER_COUNTS:
        raise argparse.ArgumentTypeError(f"must be 2, 3 or 4, not {checks.excerpt(text)}")
    return int(text)


def add_limits(parser, tricks=True):
    limit = whole_number(0, checks.MAX_LIMIT)
    parser.add_argument("--max-cards", type=limit, metavar="N", help="the agreed time limit, in cards played")
    if tricks:
        parser.add_argument("--max-tricks", type=limit, metavar="N", help="the agreed time limit, in tricks")


def add_run_options(parser, what):
    parser.add_argument("--players", type=players, default=2, metavar="P", help="2, 3 or 4 (default 2)")
    parser.add_argument(
        "--seed", type=whole_number(0, checks.MAX_SEED), metavar="S", help="seed (default: a fresh one, printed)"
    )
    parser.add_argument("--threads", type=whole_number(1), metavar="T", help="threads (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help=f"no progress bar while {what}")


def add_ray(parser):
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray workers, one per CPU: a local Ray, or the cluster at ADDRESS ('auto', HOST:6379)",
    )


def add_backend(parser):
    parser.add_argument(
        "--backend",
        choices=("local", "cuda"),
        default="local",
        help=f"local: this machine's cores (default); cuda: an NVIDIA GPU, needs the cuda extra "
        f"({checks.install_hint('cuda')})",
    )


def require_ray(command, args):
    """Check ``--ray`` before any work: Ray installed, no ``--threads``."""
    from ..distributed import require_ray

    if args.threads is not None:
        raise UsageError(f"beggar {command}: --threads is for a local run: Ray runs one worker per CPU")
    try:
        require_ray()
    except ImportError as error:
        raise UsageError(f"beggar {command}: --ray: {error}") from None


def require_cuda(command, args):
    """Check ``--backend cuda`` before any work: not with ``--ray`` nor ``--threads``, numba-cuda and a GPU there."""
    from .. import gpu

    for given, flag in ((args.ray is not None, "--ray"), (args.threads is not None, "--threads")):
        if given:
            raise UsageError(f"beggar {command}: --backend cuda runs on a GPU: {flag} is not for it")
    try:
        gpu.require_cuda()
    except (ImportError, ValueError) as error:
        raise UsageError(f"beggar {command}: --backend cuda: {error}") from None


def ray_note(args):
    if args.ray is not None:
        print("(on Ray: the time includes starting Ray and warming its workers)")


def out_path(command, path, suffix=".npz", flag="--out"):
    """``--out``'s file, checked before any work (see ``files.output_path``)."""
    try:
        return files.output_path(path, suffix)
    except ValueError as error:
        raise UsageError(f"beggar {command}: {flag}: {error}") from None


def seed(args):
    """The seed asked for, or a fresh one (printed, so that the run can be repeated)."""
    if args.seed is not None:
        return args.seed
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))


@contextmanager
def notice_for(command):
    """The package's compile notice (:data:`beggar_env.compiling.notice`) in the command's words
    while it runs; none for ``warmup``, which reports each part itself."""
    from .. import compiling

    words, compiling.notice.words = compiling.notice.words, None if command == "warmup" else COMPILE_NOTICE_WORDS
    try:
        yield
    finally:
        compiling.notice.words = words


def compiling_notice(first_call):
    """Run ``first_call()`` (it compiles the engine on a first run, or loads it from the
    cache); if numba takes more than a second of it, say so on stderr (once per process:
    the package's own notice, which a slow compilation shows anyway)."""
    from .. import compiling

    with compiling.notice.slow():
        return first_call()


def run_with_progress(unit, disable, run):
    """``run(progress)`` with a progress bar on stderr (shown once a run takes more than half
    a second; ``progress(done, total)`` moves it); returns its result and the seconds taken."""
    from tqdm import tqdm

    bar = tqdm(unit=unit, unit_scale=True, delay=0.5, file=sys.stderr, disable=disable, leave=False)

    def progress(done, total):
        bar.total = total
        bar.update(done - bar.n)

    started = time.perf_counter()
    try:
        result = run(progress)
    finally:
        bar.close()
    return result, time.perf_counter() - started

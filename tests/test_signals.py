"""Ctrl-C and SIGTERM while numba loads or compiles (``beggar_env.compiling.SignalGuard``, the
``beggar`` command's handling), and the one compile notice (``beggar_env.compiling.notice``).

Signals are sent by the process to itself from inside numba's work (its calls into LLVM,
llvmlite's callbacks, its compiler passes), not at a random moment, so that every run
hits the place it names."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from types import SimpleNamespace

import pytest

import beggar_env
from beggar_env import compiling

STOPS_WITHIN = 5.0  # seconds from the signal to the exit: a fraction of that on a quiet machine

# ------------------------------------------------------------- the guard itself


@pytest.fixture
def handlers():
    """SIGINT's and SIGTERM's handlers, put back after the test."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


class Stop(BaseException):
    pass


def test_the_guard_holds_a_signal_back_where_unsafe_and_raises_it_at_the_next_safe_event(handlers):
    received = []

    def stop(signum, frame):
        received.append(signum)
        raise Stop

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    state = SimpleNamespace(llvm=False, compiler=True)
    guard = compiling.SignalGuard(lambda: state.llvm, lambda: state.compiler)
    guard.on_start(None)  # numba asks for its compiler lock: the guard stands in for both handlers
    assert signal.getsignal(signal.SIGINT) == guard.receive == signal.getsignal(signal.SIGTERM)
    state.llvm = True
    signal.raise_signal(signal.SIGTERM)  # inside LLVM: held back (Python runs the handler before this returns)
    signal.raise_signal(signal.SIGTERM)  # once is enough
    guard.on_start(None)  # still inside: kept
    assert received == [] and guard.pending == [signal.SIGTERM]
    state.llvm = False
    with pytest.raises(Stop):
        guard.on_end(None)  # the next event outside LLVM: the handler, there
    assert received == [signal.SIGTERM] and guard.pending == []
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)  # a safe place: at once
    assert signal.getsignal(signal.SIGINT) == guard.receive  # numba still holds its lock
    state.compiler = False
    guard.on_end(None)  # numba lets go: the handlers are back
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and signal.getsignal(signal.SIGTERM) is stop


def test_the_guard_holds_a_signal_back_inside_numbas_unsafe_steps_and_leaves_other_handlers_alone(handlers):
    def loading(guard):  # stands for numba's loading from its cache
        signal.raise_signal(signal.SIGINT)
        return guard.pending[:]

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not a Python handler: left alone
    in_compiler = [True]
    guard = compiling.SignalGuard(lambda: False, lambda: in_compiler[0], frozenset([loading.__code__]))
    guard.on_start(None)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and list(guard.saved) == [signal.SIGINT]
    assert loading(guard) == [signal.SIGINT]
    in_compiler[0] = False
    with pytest.raises(KeyboardInterrupt):
        guard.on_end(None)  # numba lets go of its lock: the handlers are back, and the signal is raised
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and guard.pending == []


def test_a_stale_guard_raises_at_once_and_steps_aside(handlers):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    state = SimpleNamespace(compiler=True)
    guard = compiling.SignalGuard(lambda: False, lambda: state.compiler)
    guard.on_start(None)
    state.compiler = False  # numba's lock was never taken (its acquire was interrupted): no end event comes
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_package_installs_one_guard_on_numbas_compiler_lock():
    from numba.core import event

    assert event._registered["numba:compiler_lock"].count(compiling.signal_guard) == 1  # noqa: SLF001
    assert (
        compiling.signal_guard.in_llvm() is False and compiling.signal_guard.unsafe_code
    )  # llvmlite's and numba's hooks found


# ----------------------------------------------- numba's functions, interrupted inside


TRIGGER = """
import os, signal, time
from numba.core import codegen, event


class Trigger(event.Listener):
    '''Sends the process ``signum`` at the ``at``-th event of ``kind`` (and its time to ``stamp``): a
    numba event, or "callback:" and the name of one of numba's object cache hooks, which LLVM calls
    through ctypes.'''

    def __init__(self, kind, at, signum, stamp=None):
        self.kind, self.at, self.signum, self.stamp, self.seen = kind, at, signum, stamp, 0
        self.counts = {}  # events of every kind

    def fire(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == self.kind:
            self.seen += 1
            if self.seen == self.at:
                if self.stamp:
                    with open(self.stamp, "w") as f:
                        f.write(repr(time.monotonic()))
                os.kill(os.getpid(), self.signum)

    def on_start(self, event):
        self.fire(event.kind)

    def on_end(self, event):
        pass


def install(trigger):
    for kind in ("numba:llvm_lock", "numba:compiler_lock", "numba:run_pass"):
        event.register(kind, trigger)
    for name in ("_object_compiled_hook", "_object_getbuffer_hook"):
        hook = getattr(codegen.CPUCodeLibrary, name).__func__

        def hooked(cls, *args, hook=hook, name=name):
            trigger.fire(f"callback:{name}")
            return hook(cls, *args)

        setattr(codegen.CPUCodeLibrary, name, classmethod(hooked))
"""

COMPILED = "_object_compiled_hook"  # numba's hook that keeps a compiled object (to save it in the cache)
LOADED = "_object_getbuffer_hook"  # numba's hook that hands LLVM a cached object


def write_functions(folder, names):
    """A module of small numba functions, cached, one of each name."""
    body = "    total = 0\n    for i in range(n * 10):\n        total += (i * 7) % 5\n    return total\n"
    functions = "".join(f"\n\n@numba.njit(cache=True)\ndef {name}(n):\n{body}" for name in names)
    (folder / "functions.py").write_text("import numba\n" + functions)


EXPECTED = sum((i * 7) % 5 for i in range(30))  # f(3)


def write_trigger(folder):
    (folder / "trigger.py").write_text(textwrap.dedent(TRIGGER))


def run_child(tmp_path, code, *args, own_cache=True):
    """``python -c code args`` in ``tmp_path``, with a cache of its own there (numba's and the package's)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")} if own_cache else None
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )


POINTS = [(f"callback:{COMPILED}", 4)]  # (kind, quarter): its events' 4th quarter, its last
POINTS += [(kind, quarter) for kind in ("numba:llvm_lock", "numba:run_pass") for quarter in (1, 2, 3)]
POINTS += [("numba:compiler_lock", quarter) for quarter in (1, 3)]
TWINS = sorted({kind for kind, _ in POINTS})

INTERRUPTED_COMPILES = """
import json, signal, sys
import beggar_env.jit  # the guard
import trigger

points, twins = json.loads(sys.argv[1]), json.loads(sys.argv[2])
watch = trigger.Trigger(None, 0, signal.SIGINT)
trigger.install(watch)  # before numba's first dispatcher makes its JIT engine, which takes the hooks
import functions
functions.warm(1)  # numba's first compile in a process does more: not one to count
totals = {}
for number, kind in enumerate(twins):  # how many events of each kind a compile has: its twin's
    watch.kind, watch.at, watch.seen = kind, 0, 0
    getattr(functions, f"twin{number}")(1)
    totals[kind] = watch.seen
outcomes = []
for number, (kind, quarter) in enumerate(points):
    f = getattr(functions, f"f{number}")
    watch.kind, watch.at, watch.seen = kind, max(1, totals[kind] * quarter // 4), 0
    try:
        f(1)
        outcome = "ran on"
    except KeyboardInterrupt:
        outcome = "interrupted"
    except Exception as error:
        outcome = repr(error)
    watch.kind = None
    outcomes.append([kind, watch.at, outcome, f(3)])  # the same function, in the same process: whole again
print(json.dumps({"totals": totals, "outcomes": outcomes}))
"""

LOAD_AGAIN = """
import json, sys
import beggar_env.jit
import functions

results = []
for name in sys.argv[1:]:
    f = getattr(functions, name)
    results.append([f(3), sum(f.stats.cache_hits.values())])
print(json.dumps(results))
"""


@pytest.mark.slow
def test_a_compile_interrupted_inside_numba_raises_keyboardinterrupt_and_numba_stays_whole(tmp_path):
    names = [f"f{number}" for number in range(len(POINTS))]
    write_functions(tmp_path, ["warm", *names] + [f"twin{number}" for number in range(len(TWINS))])
    write_trigger(tmp_path)
    run = run_child(tmp_path, INTERRUPTED_COMPILES, json.dumps(POINTS), json.dumps(TWINS))
    assert run.returncode == 0, run.stderr
    assert "Exception ignored" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    assert report["totals"][f"callback:{COMPILED}"] == 1 and min(report["totals"].values()) >= 1, report
    assert all(total >= 8 for kind, total in report["totals"].items() if kind.startswith("numba:")), report
    # without the guard: "ran on" (the signal lost in LLVM's callback) or RuntimeError('no compiled object yet')
    assert [outcome[2:] for outcome in report["outcomes"]] == [["interrupted", EXPECTED]] * len(POINTS), report
    again = run_child(tmp_path, LOAD_AGAIN, *names)  # what the same process cached after is sound
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == [[EXPECTED, 1]] * len(POINTS)


LOAD_INTERRUPTED = """
import json, signal
import beggar_env.jit
import trigger

watch = trigger.Trigger("callback:_object_getbuffer_hook", 1, signal.SIGINT)
trigger.install(watch)
import functions
try:
    functions.f0(1)
    outcome = "ran on"
except KeyboardInterrupt:
    outcome = "interrupted"
watch.kind = None
print(json.dumps([outcome, functions.f0(3), sum(functions.f0.stats.cache_hits.values())]))
"""


@pytest.mark.slow
def test_a_load_from_the_cache_interrupted_in_llvms_callback_raises_keyboardinterrupt(tmp_path):
    write_functions(tmp_path, ["f0"])
    write_trigger(tmp_path)
    assert run_child(tmp_path, LOAD_AGAIN, "f0").returncode == 0  # compiles f0 into the cache
    run = run_child(tmp_path, LOAD_INTERRUPTED)
    assert run.returncode == 0 and "Exception ignored" not in run.stderr, run.stderr
    assert json.loads(run.stdout) == ["interrupted", EXPECTED, 1]  # without the guard: "ran on"


# ------------------------------------------------------ the command, interrupted inside

BEGGAR = """
import json, os, signal, sys
import beggar_env.jit  # the guard first, as the command has it before numba compiles
import trigger

kind, at, name, stamp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
watch = trigger.Trigger(kind, at, getattr(signal, name), stamp)
trigger.install(watch)
from beggar_env import cli

sys.argv = ["beggar", *sys.argv[5:]]
status = cli.main()
print(json.dumps(watch.counts), file=sys.stderr, flush=True)
os._exit(status)  # as the command does (cli.run)
"""

LONG_RUN = ("simulate", "--games", "1000000000", "--seed", "1", "--no-progress")
KINDS = (f"callback:{LOADED}", f"callback:{COMPILED}", "numba:llvm_lock", "numba:compiler_lock")


def notice_free(stderr):
    return [line for line in stderr.strip().splitlines() if not line.startswith("beggar: preparing the compiled")]


def beggar_points(tmp_path):
    """Where to signal ``beggar simulate`` loading its compiled code: at every callback from
    LLVM, and at a spread of numba's events."""
    counted = run_child(tmp_path, BEGGAR, "", "0", "SIGINT", "", *LONG_RUN[:1], "--games", "10", own_cache=False)
    assert counted.returncode == 0, counted.stderr
    totals = json.loads(counted.stderr.strip().splitlines()[-1])
    assert totals[f"callback:{LOADED}"] >= 1 and totals["numba:llvm_lock"] >= 100, totals
    points = [(kind, at) for kind in KINDS[:2] for at in range(1, totals.get(kind, 0) + 1)]
    return points + [(kind, totals[kind] * fifth // 5) for kind in KINDS[2:] for fifth in (2, 4, 5)]


@pytest.mark.slow
def test_ctrl_c_and_sigterm_inside_numbas_loading_stop_the_command_at_once(tmp_path):
    write_trigger(tmp_path)
    beggar_env.simulate(10)  # the cache is warm
    for number, (kind, at) in enumerate(beggar_points(tmp_path)):
        name, status, words = [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")][number % 2]
        stamp = tmp_path / f"stamp-{number}"
        process = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(BEGGAR), kind, str(at), name, str(stamp), *LONG_RUN],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        try:
            _, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
        ended = time.monotonic()
        where = f"{name} at {kind} #{at}"
        assert stamp.exists(), f"{where}: never sent ({stderr})"
        lines = notice_free(stderr)
        assert process.returncode == status and lines[:1] == [f"beggar: {words}"], f"{where}: {stderr}"
        assert len(lines) == 2 and lines[1].startswith("{"), f"{where}: {stderr}"  # and the line the test adds
        assert ended - float(stamp.read_text()) < STOPS_WITHIN, where


# ----------------------------------------------------------------- the compile notice


def event(module, kind="numba:compile"):
    dispatcher = SimpleNamespace(py_func=SimpleNamespace(__module__=module))
    return SimpleNamespace(kind=kind, data={"dispatcher": dispatcher})


def wait_for(condition, seconds=5.0):
    ends = time.monotonic() + seconds
    while not condition() and time.monotonic() < ends:
        time.sleep(0.01)
    return condition()


class Clock:
    """A clock that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_notice_is_shown_once_when_the_packages_code_compiles_long_enough(capsys, monkeypatch):
    monkeypatch.delenv(compiling.QUIET, raising=False)
    clock = Clock()
    notice = compiling.CompileNotice(words="compiling", after=1.0, now=clock)
    notice.on_start(event("user_code"))  # not ours: no notice however long
    clock.now += 5
    notice.on_end(event("user_code"))
    for _ in range(2):  # two compilations of 0.4 s: 0.8 s in all
        notice.on_start(event("beggar_env.core"))
        notice.on_start(event("beggar_env.game"))  # nested
        clock.now += 0.4
        time.sleep(0.15)  # the watch looks every 0.05 s
        notice.on_end(event("beggar_env.game"))
        notice.on_end(event("beggar_env.core"))
    assert not notice.shown
    notice.on_start(event("beggar_env.core"))
    clock.now += 0.2  # one second in all
    assert wait_for(lambda: notice.shown)
    notice.on_end(event("beggar_env.core"))
    notice.on_start(event("beggar_env.core"))
    clock.now += 5
    time.sleep(0.15)
    notice.on_end(event("beggar_env.core"))
    assert capsys.readouterr().err == "compiling\n"  # once


def test_the_notice_is_silenced_by_beggar_env_quiet(capsys, monkeypatch):
    monkeypatch.setenv(compiling.QUIET, "1")
    notice = compiling.CompileNotice(words="compiling", after=0.0)
    assert not notice.show() and capsys.readouterr().err == ""
    monkeypatch.setenv(compiling.QUIET, "0")
    assert notice.show() and not notice.show() and capsys.readouterr().err == "compiling\n"


def test_a_slow_first_call_shows_the_notice_only_if_numba_works_that_long(capsys, monkeypatch):
    monkeypatch.delenv(compiling.QUIET, raising=False)
    clock = Clock()
    notice = compiling.CompileNotice(words="preparing", after=1.0, now=clock)
    with notice.slow():
        clock.now += 5  # slow, but not numba: a long run after a quick load
        time.sleep(0.15)
    assert not notice.shown
    with notice.slow():
        notice.on_start(event(None, "numba:compiler_lock"))  # numba loading, any code
        clock.now += 1.0
        assert wait_for(lambda: notice.shown)
        notice.on_end(event(None, "numba:compiler_lock"))
    assert capsys.readouterr().err == "preparing\n"


def test_the_command_puts_its_words_to_the_notice_and_none_for_warmup():
    from beggar_env.cli import options

    before = compiling.notice.words
    with options.notice_for("simulate"):
        assert compiling.notice.words.startswith(options.COMPILE_NOTICE)
    with options.notice_for("warmup"):
        assert compiling.notice.words is None
    assert compiling.notice.words == before == compiling.NOTICE


ENV_STEP = """
import gymnasium as gym
import beggar_env

env = gym.make("Beggar-v0")
env.reset(seed=0)
env.step(0)
"""


@pytest.mark.slow
def test_a_cold_gym_make_says_once_that_it_compiles_and_a_warm_one_says_nothing(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop(compiling.QUIET, None)
    runs = [
        subprocess.run([sys.executable, "-c", ENV_STEP], capture_output=True, text=True, timeout=900, env=env)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stderr == compiling.NOTICE + "\n"
    assert runs[1].stderr == ""


def test_the_notice_thread_does_not_outlive_its_block():
    notice = compiling.CompileNotice(words=None, after=10.0)
    before = threading.active_count()
    with notice.slow():
        pass
    assert wait_for(lambda: threading.active_count() <= before, 1.0)


# ------------------------------------------------------------ the command's own handling


def test_the_command_holds_signals_back_while_it_imports_and_raises_them_after(handlers):
    from beggar_env import cli

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, cli._terminate)  # noqa: SLF001
    with pytest.raises(cli.Terminated):
        with cli._held_back():  # noqa: SLF001
            signal.raise_signal(signal.SIGTERM)  # held: a C extension's initialisation could drop it
            signal.raise_signal(signal.SIGTERM)
            time.sleep(0.01)
    assert signal.getsignal(signal.SIGTERM) is cli._terminate  # noqa: SLF001
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ignored (a background job): left so
    with cli._held_back():  # noqa: SLF001
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


class Dropped:
    def __del__(self):
        raise KeyboardInterrupt  # as a signal's handler would, in a finaliser: Python prints it and goes on


def test_an_interruption_python_could_only_drop_is_raised_again(handlers):
    from beggar_env import cli

    signal.signal(signal.SIGINT, signal.default_int_handler)
    before, dropped = sys.unraisablehook, []
    sys.unraisablehook = cli._raise_again(dropped.append)  # noqa: SLF001
    try:
        with pytest.raises(KeyboardInterrupt):
            Dropped()  # collected at once: its __del__ raises, and Python passes that to the hook
            ends = time.monotonic() + 5
            while time.monotonic() < ends:  # the next instructions
                pass
        Dropped.__del__ = lambda self: 1 / 0  # any other error: to the hook before
        Dropped()
    finally:
        sys.unraisablehook = before
    assert [type(error.exc_value) for error in dropped] == [ZeroDivisionError]


SWALLOWED_IN_IMPORT = """
import builtins, os, signal, sys, time
from beggar_env import cli

real_import, fired = builtins.__import__, []


def importing(name, *args, **kwargs):
    if name == "numba" and not fired:  # the first import of numba, inside the command's imports
        fired.append(name)
        try:  # as numpy's and SciPy's C extensions do: what a handler raises is dropped without a word
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))
            time.sleep(0.05)
        except BaseException:
            pass
    return real_import(name, *args, **kwargs)


builtins.__import__ = importing
signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C live, as at a terminal, whatever the parent left
status = cli.main(["simulate", "--games", "10", "--seed", "1", "--no-progress"])
print(fired, file=sys.stderr)
sys.exit(status)
"""


@pytest.mark.parametrize("name, status, words", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
def test_a_signal_that_an_import_would_drop_stops_the_command(tmp_path, name, status, words):
    run = run_child(tmp_path, SWALLOWED_IN_IMPORT, name, own_cache=False)
    assert run.returncode == status and run.stderr.splitlines() == [f"beggar: {words}", "['numba']"], run.stderr


# ------------------------------------------------- the edges of a run: its start and its end

SIGNALS = [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]

AT_THE_START = """
import os, signal, sys
sys.orig_argv = [sys.executable, os.path.join("bin", "beggar"), "play", "--index", "5"]  # as the command's script
signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C live as at a terminal, whatever the parent left
import beggar_env.cli  # the script's import: the command's handlers are in place from its first lines
os.kill(os.getpid(), getattr(signal, sys.argv[1]))  # before run() and main() take over
print("not stopped", file=sys.stderr)
"""


@pytest.mark.parametrize("name, status, words", SIGNALS)
def test_a_signal_before_the_command_runs_ends_it_with_its_status_and_one_line(tmp_path, name, status, words):
    run = run_child(tmp_path, AT_THE_START, name, own_cache=False)
    assert run.returncode == status and run.stderr.splitlines() == [f"beggar: {words}"], run.stderr


@pytest.mark.parametrize(
    "argv, command",
    [
        (["/usr/bin/python3", "/venv/bin/beggar", "play", "-/-"], True),
        (["python", "-m", "beggar_env.cli", "simulate"], True),
        (["python", "-X", "importtime", "-m", "beggar_env.cli"], True),
        (["python", "-m", "pytest", "tests"], False),
        (["python", "-c", "import beggar_env.cli"], False),
        (["python", "train.py", "beggar"], False),
    ],
)
def test_only_the_command_itself_puts_its_handlers_in_at_import(monkeypatch, argv, command):
    from beggar_env import cli

    monkeypatch.setattr(sys, "orig_argv", argv)
    assert cli._is_the_command() is command  # noqa: SLF001


AT_THE_END = """
import atexit, os, signal, sys, time
from beggar_env import cli

cli.main = lambda argv=None: print("played") or 0  # a run that succeeded
atexit.register(lambda: (os.kill(os.getpid(), getattr(signal, sys.argv[1])), time.sleep(0.5)))  # in the teardown
cli.run()
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_successful_run_ends_without_a_teardown_a_signal_could_interrupt(tmp_path, name):
    run = run_child(tmp_path, AT_THE_END, name, own_cache=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, "played\n", "")


@pytest.mark.slow
@pytest.mark.parametrize("name, status, words", SIGNALS)
def test_a_signal_as_a_successful_run_ends_gives_its_status_or_none(tmp_path, name, status, words):
    from conftest import beggar_process

    for delay in range(12):
        process = beggar_process("play", "--index", "5", cwd=tmp_path)
        assert process.stdout.readline().startswith("deal 5")  # the result: the run is at its end
        time.sleep(0.003 * delay)
        process.send_signal(getattr(signal, name))
        _, stderr = process.communicate(timeout=60)
        lines = notice_free(stderr)
        assert process.returncode in (0, status) and lines in ([], [f"beggar: {words}"]), (delay, stderr)
        assert (process.returncode == 0) == (lines == []), (delay, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("name, status, words", SIGNALS)
def test_a_signal_at_any_moment_after_the_interpreter_starts_gives_its_status_and_one_line(
    tmp_path, name, status, words
):
    from conftest import beggar_process

    started = time.perf_counter()
    idle = subprocess.run([sys.executable, "-c", "import beggar_env.cli"], capture_output=True, timeout=60)
    ready = time.perf_counter() - started  # the interpreter's start and the cli's import, before which it is Python's
    assert idle.returncode == 0
    for step in range(10):
        process = beggar_process("play", "--index", "5", cwd=tmp_path)
        time.sleep(ready + 0.1 * step)
        process.send_signal(getattr(signal, name))
        _, stderr = process.communicate(timeout=60)
        lines = notice_free(stderr)
        assert "Traceback" not in stderr and process.returncode in (0, status), (step, stderr)
        assert lines == ([] if process.returncode == 0 else [f"beggar: {words}"]), (step, stderr)

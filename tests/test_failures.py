"""Nothing lost when two runs share a file, no crash on any number, and every failure one
clear line with one exit status (2: bad input, found before any work; 1: the run failed
while working), and nothing left behind by a killed run."""

import errno
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import pytest
from conftest import beggar, beggar_in_process, beggar_process, one_line, read_only_runner, without_notice

import beggar_env
from beggar_env import cli, datasets, files
from beggar_env.search import finds, search

MAX = 2**63 - 1


class FullDisk:
    """A file object on a disk with ``room`` bytes left."""

    def __init__(self, file, room):
        self.file, self.room = file, room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


@pytest.fixture
def full_disk(monkeypatch):
    """Every file that files.replacing writes fails once ``room`` bytes are written."""
    real = os.fdopen

    def small(room):
        monkeypatch.setattr(files.os, "fdopen", lambda fd, mode: FullDisk(real(fd, mode), room))

    return small


# ---------------------------------------------------------------- two writers


class Holder:
    """Another process holding the lock on ``path`` (as a run writing it does) until the block ends."""

    CODE = (
        "import sys; from beggar_env import files\n"
        "with files.exclusive(sys.argv[1]):\n print('held', flush=True); input()"
    )

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.CODE, str(self.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline() == "held\n"
        return self.process

    def __exit__(self, *exc):
        self.process.communicate("\n", timeout=60)


def test_a_second_search_on_a_file_in_use_is_refused_at_once(tmp_path):
    out = tmp_path / "finds.jsonl"
    search(2, deals=20, seed=1, out=out)
    before = out.read_text()
    with Holder(out) as holder:  # another run holds it
        with pytest.raises(files.InUse, match=f"{out} is being written by another run .process {holder.pid}"):
            search(2, deals=20, seed=2, out=out, resume=True)
    assert out.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["finds.jsonl"]
    search(2, deals=20, seed=2, out=out, resume=True)  # free again: the lock went with its run
    assert [json.loads(line)["seed"] for line in out.read_text().splitlines()[1:3]] == [1, 2]


@pytest.mark.slow
def test_two_search_commands_on_one_file_one_is_refused_in_one_line(tmp_path):
    out = tmp_path / "finds.jsonl"
    first = beggar_process("search", "--minutes", "0.25", "--seed", "11", "--out", str(out), "--no-progress")
    deadline = time.time() + 120
    while not (tmp_path / ".finds.jsonl.lock").exists() and time.time() < deadline:
        time.sleep(0.05)
    second = beggar("search", "--minutes", "0.05", "--seed", "12", "--out", str(out), "--resume", "--no-progress")
    one_line(second, 2, "is being written by another run")
    assert first.wait(timeout=120) == 0, first.stderr.read()
    runs = [json.loads(line) for line in out.read_text().splitlines() if '"kind": "run"' in line]
    assert [run["seed"] for run in runs] == [11] and runs[0]["deals_done"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["finds.jsonl"]  # the lock file went too


# ------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "args, words",
    [
        (["dataset", "--games", "5", "--samples", str(2**63), "--out", "d"], ["--samples"]),
        (["dataset", "--games", "5", "--samples", str(2**64), "--out", "d"], ["--samples"]),
        (["dataset", "--games", "5", "--samples", str(2**31), "--out", "d.npz"], ["--samples"]),
        (["simulate", "--games", str(2**63)], ["--games", "9,223,372,036,854,775,807"]),
        (["simulate", "--games", "5_0"], ["--games", "5_0"]),
        (["simulate", "--games", "５"], ["--games"]),
        (["search", "--deals", str(2**63), "--out", "f.jsonl"], ["--deals"]),
        (["search", "--walk-steps", str(2**63), "--out", "f.jsonl"], ["--walk-steps"]),
        (["search", "--minutes", "1_0", "--out", "f.jsonl"], ["--minutes"]),
        (["simulate", "--games", "10", "--out", "x" * 300], ["too long"]),
    ],
)
def test_counts_are_bounded_and_written_in_plain_digits(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    one_line(beggar_in_process(capsys, *args), 2, *words)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_sample_counts_are_bounded_in_the_api_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="samples must be"):
        datasets.shards.generate(tmp_path / "d", 3, samples=2**63 - 1)  # segfaulted
    with pytest.raises(MemoryError, match="samples of one game"):
        datasets.shards.generate(tmp_path / "d", 3, samples=2**31 - 1)
    with pytest.raises(MemoryError, match="samples of 5 games"):
        datasets.generate(5, samples=2**31 - 1)  # refused before playing
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["False", 0, 1, None, np.array([True])])
def test_switches_take_bools_only(value):
    with pytest.raises(TypeError, match="detect_cycles must be True or False"):
        beggar_env.simulate(3, detect_cycles=value)
    with pytest.raises(TypeError, match="detect_cycles must be True or False"):
        beggar_env.play("-A/-Q", detect_cycles=value)
    with pytest.raises(TypeError, match="game_weights must be True or False"):
        datasets.shards.Job.of(3, game_weights=value)
    assert beggar_env.play("-A/-Q", detect_cycles=np.bool_(False)) == beggar_env.play("-A/-Q")


def test_a_probability_forecast_is_numbers():
    env = gym.make("Beggar-v0", forecast="probs")
    env.reset(seed=1)
    for bad in (["2", "1", "1"], "2", [2**64, 1, 1], [True, False, False]):
        with pytest.raises(ValueError, match="action: a 'probs' forecast is numbers"):
            env.step(bad)
    assert env.step([2, 1, 1])[4]["cards"] == 1


def test_one_seed_rule_for_every_entry_point():
    env = gym.make("Beggar-v0")
    assert env.reset(seed=np.int64(7))[0]["hand_sizes"].tolist() == env.reset(seed=7)[0]["hand_sizes"].tolist()
    first = [env.step(0)[4]["cards"] for _ in range(3)]
    env.reset(seed=np.uint64(7))
    assert [env.step(0)[4]["cards"] for _ in range(3)] == first
    for bad, error in ((-1, ValueError), (2**64, ValueError), ("7", TypeError), (7.0, TypeError)):
        with pytest.raises(error, match="seed must be"):
            env.reset(seed=bad)
        with pytest.raises(error, match="seed must be"):
            beggar_env.simulate(3, seed=bad)


def test_paths_and_splits_are_checked(tmp_path):
    with pytest.raises(TypeError, match="path must be a path"):
        datasets.load(2**63)  # was taken for a file descriptor
    datasets.shards.generate(tmp_path / "d", 20, seed=1, split="a=0.5,b=0.5")
    with pytest.raises(ValueError, match="at least one split"):
        list(datasets.batches(tmp_path / "d", split=[]))  # yielded nothing
    with pytest.raises(TypeError, match="columns must be"):
        list(datasets.batches(tmp_path / "d", columns="label"))


def test_sb3_seeds_do_not_wrap():
    pytest.importorskip("stable_baselines3")
    from beggar_env.envs import sb3

    envs = sb3.make(2)
    with pytest.raises(ValueError, match="seed must be between 0 and 18,446,744,073,709,551,614"):
        envs.seed(2**64 - 1)  # env 1 would get 2**64: 0 in a uint64
    with pytest.raises(TypeError, match="flatten must be True or False"):
        sb3.make(2, flatten="no")
    assert envs.seed(2**64 - 2) == [2**64 - 2, 2**64 - 1]


# ------------------------------------------------------- one line, one status


@pytest.mark.slow
def test_a_resumed_file_whose_deal_does_not_replay_is_one_line_naming_it(tmp_path):
    out = tmp_path / "f.jsonl"
    search(2, deals=50, seed=3, out=out)
    lines = out.read_text().splitlines()
    number, record = next((n, json.loads(t)) for n, t in enumerate(lines, 1) if '"kind": "deal"' in t)
    record["cards"] += 1
    lines[number - 1] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")
    run = beggar("search", "--deals", "60", "--seed", "3", "--out", str(out), "--resume", "--no-progress")
    one_line(run, 2, f"{out}:{number}", record["deal"], f"cards {record['cards']}", "but it plays")
    with pytest.raises(ValueError, match=f":{number}: the file records"):
        finds.FindsFile.read(out)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--x"], ["unrecognised arguments: '--x'"]),
        (["play", "-A/-----", "extra"], ["unrecognised arguments: 'extra'"]),
        (["simulate", "--out", "x.txt"], ["x.txt", ".npz"]),
    ],
)
def test_usage_errors_are_one_line(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    one_line(beggar_in_process(capsys, *args), 2, *words)


@pytest.mark.slow
def test_the_exit_statuses_are_in_the_help():
    run = beggar("--help")
    assert run.returncode == 0 and "exit status: 0 done; 2 bad input" in run.stdout and "1 the run failed" in run.stdout


@pytest.mark.slow
def test_the_command_module_imports_no_numpy_so_ctrl_c_is_handled_from_the_start():
    code = "import sys, beggar_env.cli; print(sorted({'numpy', 'numba'} & set(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stderr


@pytest.mark.slow
def test_ctrl_c_while_the_package_loads_is_one_line():
    code = (
        "import builtins, sys\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'numpy':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        "from beggar_env.cli import main\n"
        "sys.exit(main(['simulate', '--games', '1']))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 130 and run.stderr.strip() == "beggar: interrupted", run.stderr


@pytest.mark.parametrize(
    "args, name",
    [
        (["simulate", "--games", "100", "--seed", "1", "--out", "r.npz", "--no-progress"], "r.npz"),
        (["dataset", "--games", "50", "--seed", "1", "--out", "d.npz", "--no-progress"], "d.npz"),
        (["search", "--deals", "200", "--seed", "1", "--out", "f.jsonl", "--no-progress"], "f.jsonl"),
    ],
)
def test_a_full_disk_is_status_1_and_names_the_file_in_every_command(
    tmp_path, monkeypatch, capsys, full_disk, args, name
):
    monkeypatch.chdir(tmp_path)
    full_disk(100)
    assert cli.main(args) == 1
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0] and f"writing {name} failed" in err[0], err
    assert list(tmp_path.iterdir()) == []  # no partial file either


@pytest.mark.slow
def test_baselines_check_their_folder_before_the_study_and_write_whole_files(tmp_path, full_disk):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from beggar_env.forecasting.study import folder, results

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        started = time.perf_counter()
        run = beggar("baselines", "--quick", "--out", str(locked / "r"), prefix=read_only_runner(), timeout=120)
        one_line(run, 2, "--out", "cannot write in")
        assert time.perf_counter() - started < 60  # before the study (80 s), not after it
    finally:
        locked.chmod(0o755)
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text('{"earlier": "results"}')
    published = results.read_results(os.path.join(os.path.dirname(beggar_env.__file__), "../docs/results/results.json"))
    published["players"] = {"2": published["players"]["2"]}
    full_disk(10)  # the first file written (tables.md: drawn first, results.json replaced last) fails
    with pytest.raises(OSError, match="writing .*tables.md failed: No space left on device"):
        folder.write(published, good, "a command")
    assert (good / "results.json").read_text() == '{"earlier": "results"}'  # the previous good file stays
    assert sorted(p.name for p in good.iterdir()) == ["results.json"]


@pytest.mark.slow
def test_an_unreachable_ray_cluster_is_one_line_within_seconds():
    pytest.importorskip("ray")
    started = time.perf_counter()
    run = beggar("simulate", "--games", "10", "--ray", "127.0.0.1:9", timeout=120)
    one_line(run, 1, "cannot reach the Ray cluster at 127.0.0.1:9")
    assert time.perf_counter() - started < 60


# ------------------------------------------------------------ nothing behind


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_runs_temporary_files_and_folders_go_at_the_next_run(tmp_path, monkeypatch):
    pid = dead_pid()
    stale = tmp_path / f".r.npz.{pid}.abcdefgh.partial"
    stale.write_bytes(b"half a file")
    alive = tmp_path / f".r.npz.{os.getpid()}.ijklmnop.partial"  # this process's own: not stale
    alive.write_bytes(b"being written")
    files.save_npz(tmp_path / "r.npz", x=np.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name, "r.npz"]
    monkeypatch.setattr(files.tempfile, "gettempdir", lambda: str(tmp_path))
    left = tmp_path / f"beggar-env-warmup-{pid}.qrstuvwx"
    left.mkdir()
    with files.scratch_folder("warmup") as folder:
        assert os.path.isdir(folder) and not left.exists()
    assert not os.path.exists(folder)


@pytest.mark.slow
def test_a_local_ray_leaves_no_session_folder(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    import ray

    from beggar_env import distributed

    if ray.is_initialized():
        pytest.skip("a Ray is running in this process")
    monkeypatch.setattr(distributed.tempfile, "gettempdir", lambda: str(tmp_path))
    results = beggar_env.simulate(20, seed=3, backend="ray")
    assert (results.cards == beggar_env.simulate(20, seed=3).cards).all()
    assert not ray.is_initialized() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_ray_workers_own_error_arrives_as_itself_in_one_line(ray_cluster):
    from beggar_env import distributed

    class Failing:  # defined here: Ray sends it to the workers by value
        def warm(self):
            return None

        def run(self, number):
            raise OSError(errno.ENOSPC, f"writing shard {number} failed: No space left on device")

    with distributed.Workers(Failing()) as workers:
        with pytest.raises(OSError) as raised:
            list(workers.unordered([(7,)]))
    assert type(raised.value) is OSError and raised.value.errno == errno.ENOSPC
    assert str(raised.value) == "[Errno 28] writing shard 7 failed: No space left on device"


def test_a_search_that_fails_before_its_first_game_leaves_no_file(tmp_path, monkeypatch):
    from beggar_env.search import searchers

    def fail(*args, **kwargs):
        raise OSError(errno.EIO, "the workers failed")

    out = tmp_path / "f.jsonl"
    monkeypatch.setattr(searchers.SearchJob, "run", fail)
    with pytest.raises(OSError, match="the workers failed"):
        search(2, deals=100, seed=1, out=out)
    assert list(tmp_path.iterdir()) == []  # a new file that would hold nothing is not made
    monkeypatch.undo()
    search(2, deals=100, seed=1, out=out)
    before = out.read_text()
    monkeypatch.setattr(searchers.SearchJob, "run", fail)
    with pytest.raises(OSError, match="the workers failed"):
        search(2, deals=200, seed=1, out=out, resume=True)
    assert [json.loads(line)["deals_done"] for line in out.read_text().splitlines()[1:2]] == [100]
    assert before.splitlines()[2:] == out.read_text().splitlines()[2:]  # every find kept


@pytest.mark.slow
def test_a_search_on_an_unreachable_ray_cluster_leaves_no_file(tmp_path):
    pytest.importorskip("ray")
    run = beggar("search", "--deals", "10", "--out", "f.jsonl", "--ray", "127.0.0.1:9", "--no-progress", cwd=tmp_path)
    one_line(run, 1, "cannot reach the Ray cluster at 127.0.0.1:9")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_taking_a_lock_names_the_file(tmp_path, monkeypatch):
    def no_room(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "write", no_room)
    with pytest.raises(OSError, match=f"writing {tmp_path / 'f.jsonl'} failed: No space left on device"):
        with files.exclusive(tmp_path / "f.jsonl"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_a_link_to_a_file_in_use_is_refused_as_the_file_is(tmp_path):
    out, link = tmp_path / "finds.jsonl", tmp_path / "link.jsonl"
    search(2, deals=20, seed=1, out=out)
    link.symlink_to(out)
    with Holder(out) as holder:
        with pytest.raises(files.InUse, match=f"is being written by another run .process {holder.pid}"):
            search(2, deals=20, seed=2, out=link, resume=True)
    search(2, deals=20, seed=2, out=link, resume=True)  # written through the link: it stays a link
    assert link.is_symlink() and [json.loads(line)["seed"] for line in out.read_text().splitlines()[1:3]] == [1, 2]


def test_a_split_name_too_long_for_a_folder_is_refused_before_any_work(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    with pytest.raises(ValueError, match="of 1 to 100"):
        datasets.shards.parse_splits("a" * 101 + "=1")
    status = cli.main(["dataset", "--games", "10", "--out", str(tmp_path / "d"), "--split", "a" * 300 + "=1"])
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert status == 2 and len(err) == 1 and "--split" in err[0] and "warmup" not in err[0], err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------ reads: regular files only, each bounded


@pytest.fixture
def special(tmp_path):
    """Files no read may take: a link to a device (/dev/null here: /dev/zero, endless, is
    for a child with bounded memory below), a FIFO (no writer: a plain read would wait
    forever), a folder; each with the suffix its reader expects."""

    def make(suffix):
        device, fifo, folder = (tmp_path / f"{name}{suffix}" for name in ("device", "fifo", "folder"))
        device.symlink_to("/dev/null")
        os.mkfifo(fifo)
        folder.mkdir()
        return {"a device": device, "a FIFO": fifo, "a folder": folder}

    return make


def within(call, seconds=20):
    """What ``call()`` returns or raises, run in a thread; the test fails if it takes more
    than ``seconds`` (a read that waits on a FIFO)."""
    import threading

    outcome = []

    def attempt():
        try:
            outcome.append(call())
        except BaseException as error:  # noqa: BLE001 (handed to the test)
            outcome.append(error)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, "still reading"
    return outcome[0]


class StillReading(BaseException):
    pass


@contextmanager
def deadline(seconds):
    """Fail the block (:class:`StillReading`) if it runs more than ``seconds``."""

    def alarm(signum, frame):
        raise StillReading

    before = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def refused_at_once(call):
    error = within(call)
    assert isinstance(error, ValueError), error
    return str(error)


def test_every_reader_refuses_what_is_not_a_regular_file_at_once(special):
    from beggar_env.cycles import insertion, records
    from beggar_env.forecasting import Report

    readers = {
        ".json": [files.read_json, records.read_census, insertion.starts_of, Report.load],
        ".jsonl": [lambda path: finds.FindsFile.read(path)],
    }
    for suffix, calls in readers.items():
        for kind, path in special(suffix).items():
            for read in calls:
                message = refused_at_once(lambda: read(path))
                assert str(path) in message and "not a regular file" in message, (kind, message)


def test_a_resume_or_an_output_that_is_no_regular_file_is_refused_before_any_work(special):
    from beggar_env.cycles import census

    for kind, path in special(".json").items():
        message = refused_at_once(lambda: census.census(2, "every", deck="JQ--", out=path, resume=True))
        assert "not a regular file" in message or "is a folder" in message, (kind, message)
    for kind, path in special(".jsonl").items():
        message = refused_at_once(lambda: search(2, deals=1, seed=1, out=path, resume=True))
        assert "not a regular file" in message or "is a folder" in message, (kind, message)
        assert not os.path.exists(path.parent / f".{path.name}.lock"), kind


@pytest.mark.parametrize(
    "args",
    [
        ["cycles", "census", "--source", "every", "--deck", "JQ--", "--out", "{}.json", "--resume"],
        ["cycles", "grow", "--census", "{}.json"],
        ["search", "--deals", "1", "--out", "{}.jsonl", "--resume"],
    ],
)
def test_the_commands_refuse_a_file_that_is_no_regular_file_in_one_line(special, capsys, args):
    suffix = args[[i for i, word in enumerate(args) if "{}" in word][0]].split("}")[1]
    for kind, path in special(suffix).items():
        line = [word.replace(f"{{}}{suffix}", str(path)) for word in args]
        with deadline(20):  # the command runs in the main thread: an alarm, not a thread, stops a wait
            run = beggar_in_process(capsys, *line)
        one_line(run, 2, str(path))
        assert "regular file" in run.stderr or "folder" in run.stderr, (kind, run.stderr)


def test_a_file_over_its_kinds_limit_is_refused_naming_the_file_and_the_limit(tmp_path, monkeypatch):
    from beggar_env.cycles import records

    path = tmp_path / "big.json"
    path.write_text("[" + " " * 100 + "]")
    assert files.read_json(path, limit=102) == []
    with pytest.raises(ValueError, match=f"{path} is 102 bytes, more than the 101 this file may hold"):
        files.read_json(path, limit=101)
    monkeypatch.setattr(records, "CENSUS_BYTES", 50)
    with pytest.raises(ValueError, match=f"{path} is 102 bytes, more than the 50"):
        records.read_census(path)
    monkeypatch.setattr(finds, "FINDS_BYTES", 50)
    with pytest.raises(ValueError, match=f"{path} is 102 bytes, more than the 50"):
        finds.FindsFile.read(path)


def test_a_number_beyond_a_float_is_no_json_number(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{"seconds": 1e400}')  # Python's json reads infinity
    with pytest.raises(ValueError, match="cannot be read as JSON: 1e400 is beyond the range of a float"):
        files.read_json(path)


ENDLESS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a read until memory runs out ends here, soon
from beggar_env import files
try:
    files.read_json(sys.argv[1])
except ValueError as error:
    print(error)
"""


@pytest.mark.slow
def test_a_link_to_dev_zero_is_refused_not_read_until_memory_runs_out(tmp_path):
    zero = tmp_path / "census.json"
    zero.symlink_to("/dev/zero")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-c", ENDLESS, str(zero)], capture_output=True, text=True, timeout=60, env=env
    )
    assert run.returncode == 0 and run.stdout.strip() == f"{zero} is not a regular file (it is a device): give a file"

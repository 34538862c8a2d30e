"""Datasets as Parquet shards: what is written is what ``datasets.generate`` gives (read
back by the package, by pandas and by polars), the same bytes whatever the threads and the
game ranges, and a failed or interrupted run leaves nothing that looks usable."""

import errno
import json
import os
import signal
import sys
import time

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import beggar, beggar_in_process, beggar_process, interrupt, read_only_runner, without_notice

import beggar_env
from beggar_env import cli, core, datasets, task
from beggar_env.datasets import reading, shards, streaming

LABELS = {
    "game": np.int64,
    "deal_seed": np.uint64,
    "outcome": np.int8,
    "winner": np.int8,
    "label": np.int8,
    "game_cards": np.int32,
    "game_tricks": np.int32,
}


def assert_same_dataset(got, expected):
    for name in datasets.Dataset.ARRAYS:
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert (got.n_players, got.observation, got.samples, got.seed) == (
        expected.n_players,
        expected.observation,
        expected.samples,
        expected.seed,
    )


def columns_of(frame, name, shape):
    """A field's values from a data frame read by pandas or polars, by the documented names:
    ``name`` for a scalar, ``name_i`` or ``name_i_j`` per slot (read independently of the package)."""
    if shape == ():
        return np.asarray(frame[name])
    if len(shape) == 1:
        return np.stack([np.asarray(frame[f"{name}_{i}"]) for i in range(shape[0])], axis=1)
    return np.stack([columns_of(frame, f"{name}_{i}", shape[1:]) for i in range(shape[0])], axis=1)


def fields_of(frame, layout):
    return {name: columns_of(frame, name, shape) for name, shape, _, _ in layout.fields}


# ---------------------------------------------------------------- content


LEVELS = [(level, samples) for level in task.OBSERVATIONS for samples in ("card", "trick", 3)]


@pytest.mark.parametrize("observation, samples", LEVELS)
def test_every_level_and_sampling_loads_back_as_generated(tmp_path, observation, samples):
    n_players = 2 + LEVELS.index((observation, samples)) % 3
    options = dict(n_players=n_players, observation=observation, samples=samples, seed=21)
    meta = shards.generate(tmp_path / "d", 40, shard_games=16, **options)
    expected = datasets.generate(40, **options)
    assert len(meta["shards"]) == 3 and meta["n_samples"] == len(expected)
    assert_same_dataset(datasets.load(tmp_path / "d"), expected)


@pytest.mark.parametrize("observation", task.OBSERVATIONS)
def test_columns_are_the_fields_slot_by_slot_in_their_smallest_types(tmp_path, observation):
    shards.generate(tmp_path / "d", 30, n_players=3, observation=observation, seed=4, game_weights=True)
    table = pq.read_table(tmp_path / "d" / "samples" / "shard-00000.parquet")
    layout = task.Layout(3, observation)
    kinds = (np.int8, np.int16, np.int32)
    observed = []
    for name, shape, low, high in layout.fields:
        names = [name] if shape == () else [f"{name}_{'_'.join(map(str, i))}" for i in np.ndindex(*shape)]
        for column in names:
            kind = table.schema.field(column).type.to_pandas_dtype()
            fits = [np.iinfo(k).min <= low and high <= np.iinfo(k).max for k in kinds]
            assert kind == kinds[fits.index(True)], (column, kind)  # the narrowest that holds low..high
            values = table.column(column).to_numpy()
            assert low <= values.min() and values.max() <= high
        observed += names
    assert table.column_names == ["game", "deal_seed", *observed, *list(LABELS)[2:], "weight"]
    for name, kind in LABELS.items():
        assert table.schema.field(name).type.to_pandas_dtype() == kind
    assert table.schema.field("weight").type == pa.float32()
    assert all(not field.nullable for field in table.schema) and all(c.null_count == 0 for c in table.columns)
    if observation == "public":
        assert table.schema.field("pile_0").type == pa.int8() and table.schema.field("cards").type == pa.int32()


def test_a_new_observation_level_needs_no_code(tmp_path):
    """Columns come from Layout.fields alone: a level with other fields (a matrix, an int16
    range) gets its columns and types, and its rows go through the buffers and back."""
    from types import SimpleNamespace

    from beggar_env.datasets import columns

    fields = [
        ("known", (2, 52), -1, 4),
        ("unseen", (5,), 0, 16),
        ("score", (), -1000, 1000),
        ("cards", (), 0, 2**31 - 1),
    ]
    observation = columns.ObservationColumns(SimpleNamespace(fields=fields, size=2 * 52 + 5 + 2))
    assert observation.names[:2] == ["known_0_0", "known_0_1"] and observation.names[52] == "known_1_0"
    assert observation.names[104:] == ["unseen_0", "unseen_1", "unseen_2", "unseen_3", "unseen_4", "score", "cards"]
    assert observation.types[-2:] == [np.int16, np.int32] and set(observation.types[:109]) == {np.int8}
    rng = np.random.default_rng(1)
    rows = np.concatenate(
        [
            rng.integers(-1, 5, (100, 104)),
            rng.integers(0, 17, (100, 5)),
            rng.integers(-1000, 1001, (100, 1)),
            rng.integers(0, 2**31 - 1, (100, 1)),
        ],
        axis=1,
    ).astype(np.int32)
    buffers = columns.SampleBuffers(observation, 128)
    buffers.rows[:100] = rows
    buffers.narrow(100)
    read = {name: buffers.column(name, 0, 100) for name in observation.names}
    assert read["score"].dtype == np.int16 and read["known_1_51"].dtype == np.int8
    back = np.empty_like(rows)
    observation.rows(read, back)
    np.testing.assert_array_equal(back, rows)


def test_pandas_and_polars_read_the_samples_as_generated(tmp_path):
    options = dict(n_players=3, samples=4, seed=8)
    shards.generate(tmp_path / "d", 300, split="train=0.8,test=0.2", game_weights=True, shard_games=128, **options)
    expected = datasets.generate(300, **options)
    layout = task.Layout(3, "public")
    by_pandas = pd.read_parquet(tmp_path / "d" / "samples").sort_values("game", kind="stable")
    by_polars = pl.read_parquet(tmp_path / "d" / "samples" / "**" / "*.parquet", hive_partitioning=True)
    by_polars = by_polars.sort("game", maintain_order=True)
    deals = pd.read_parquet(tmp_path / "d" / "deals")
    for frame in (by_pandas, by_polars):
        for name, values in fields_of(frame, layout).items():
            np.testing.assert_array_equal(values, expected.fields[name], err_msg=name)
        np.testing.assert_array_equal(np.asarray(frame["game"]), expected.game)
        np.testing.assert_array_equal(np.asarray(frame["label"]), expected.label)
        np.testing.assert_array_equal(np.asarray(frame["winner"]), expected.winner)
        np.testing.assert_array_equal(np.asarray(frame["game_cards"]), expected.game_cards)
        np.testing.assert_allclose(np.asarray(frame["weight"]), expected.weight, rtol=1e-6)
        keys = [int(core.stream_key(8, int(game))) for game in frame["game"]]
        assert [int(key) for key in frame["deal_seed"]] == keys
        np.testing.assert_array_equal(np.asarray(frame["split"]).astype(str), deals["split"].to_numpy()[expected.game])


def test_the_deals_table_holds_each_game_its_deal_outcome_and_length(tmp_path):
    shards.generate(tmp_path / "d", 200, n_players=4, samples="trick", seed=5, shard_games=64, max_cards=300)
    deals = pl.read_parquet(tmp_path / "d" / "deals" / "*.parquet")
    results = beggar_env.simulate(200, n_players=4, seed=5, max_cards=300)
    expected = datasets.generate(200, n_players=4, samples="trick", seed=5, max_cards=300)
    assert deals["game"].to_list() == list(range(200))
    assert deals["deal"].to_list() == [
        beggar_env.format_deal(deal, "compact") for deal in beggar_env.random_deals(200, 4, seed=5)
    ]
    for name in ("outcome", "winner", "cards", "tricks"):
        np.testing.assert_array_equal(deals[name].to_numpy(), results[name], err_msg=name)
    np.testing.assert_array_equal(deals["samples"].to_numpy(), np.bincount(expected.game, minlength=200))
    assert deals["deal_seed"].to_list() == [int(core.stream_key(5, i)) for i in range(200)]
    assert (deals["outcome"] == 3).any()  # the limit played its part


def test_a_games_split_is_whole_and_does_not_depend_on_the_number_of_games(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "LOAD_ROWS", 777)  # loading converts many batches of a shard
    job = shards.Job.of(5000, seed=2, split="train=0.9,valid=0.05,test=0.05")
    splits = job.game_splits(0, 5000)
    fewer = shards.Job.of(300, seed=2, split="train=0.9,valid=0.05,test=0.05")
    np.testing.assert_array_equal(fewer.game_splits(0, 300), splits[:300])
    np.testing.assert_array_equal(job.game_splits(1000, 1200), splits[1000:1200])
    k = core.stream_key(2, 2**63)  # the draws docs/datasets.md documents
    draws = [int(core.stream_key(k, i)) / 2**64 for i in range(200)]
    np.testing.assert_array_equal(np.searchsorted([0.9, 0.95], draws, side="right"), splits[:200])
    assert abs((splits == 0).mean() - 0.9) < 0.02 and abs((splits == 2).mean() - 0.05) < 0.01
    assert not np.array_equal(shards.Job.of(5000, seed=3, split="a=0.5,b=0.5").game_splits(0, 5000) == 0, splits == 0)

    shards.generate(
        tmp_path / "d", 400, seed=2, samples="trick", split="train=0.9,valid=0.05,test=0.05", shard_games=128
    )
    expected = datasets.generate(400, seed=2, samples="trick")
    meta = datasets.read_info(tmp_path / "d")
    assert sum(meta["split_samples"].values()) == meta["n_samples"] == len(expected)
    for index, name in enumerate(job.split_names):
        part = datasets.load(tmp_path / "d", split=name)
        games = np.flatnonzero(splits[:400] == index)
        rows = np.isin(expected.game, games)
        np.testing.assert_array_equal(part.observations, expected.observations[rows])
        np.testing.assert_array_equal(part.game, expected.game[rows])
        assert meta["split_samples"][name] == rows.sum()
    assert_same_dataset(datasets.load(tmp_path / "d", split=["test", "train", "valid"]), expected)


def test_the_files_are_the_same_bytes_whatever_the_threads_and_game_ranges(tmp_path):
    options = dict(n_players=2, samples="card", seed=17, split="train=0.7,test=0.3", game_weights=True, shard_games=32)
    shards.generate(tmp_path / "one", 100, threads=1, **options)
    job = shards.Job.of(100, **options)
    shards.create(tmp_path / "parts")
    later = shards.write_games(tmp_path / "parts", job, 64, 100, threads=2)  # any order, any process
    first = shards.write_games(tmp_path / "parts", job, 0, 64, threads=1)
    shards.finish(tmp_path / "parts", job, later + first)
    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    parts = sorted(p.relative_to(tmp_path / "parts") for p in (tmp_path / "parts").rglob("*") if p.is_file())
    assert one == parts and len(one) == 1 + 4 * 3  # the metadata, and per shard two splits and the deals
    for path in one:
        assert (tmp_path / "one" / path).read_bytes() == (tmp_path / "parts" / path).read_bytes(), path
    with pytest.raises(ValueError, match="whole shards"):
        shards.write_games(tmp_path / "parts", job, 10, 64)


def test_batches_scan_chosen_columns_and_splits_in_bounded_pieces(tmp_path):
    shards.generate(tmp_path / "d", 200, seed=9, split="train=0.5,test=0.5", shard_games=64)
    train = datasets.load(tmp_path / "d", split="train")
    pieces = list(datasets.batches(tmp_path / "d", split="train", columns=["game", "label", "pile_0"], batch_size=1000))
    assert all(piece.num_rows <= 1000 for piece in pieces) and len(pieces) > len(train) // 1000
    assert all(piece.schema.names == ["game", "label", "pile_0"] for piece in pieces)
    table = pa.Table.from_batches(pieces)
    np.testing.assert_array_equal(table.column("game").to_numpy(), train.game)
    np.testing.assert_array_equal(table.column("label").to_numpy(), train.label)
    np.testing.assert_array_equal(table.column("pile_0").to_numpy(), train.fields["pile"][:, 0])
    assert (
        sum(piece.num_rows for piece in datasets.batches(tmp_path / "d"))
        == datasets.read_info(tmp_path / "d")["n_samples"]
    )
    with pytest.raises(ValueError, match="no column 'piles'"):
        datasets.batches(tmp_path / "d", columns=["piles"])
    with pytest.raises(ValueError, match="no split 'valid'"):
        datasets.batches(tmp_path / "d", split="valid")


def test_metadata_records_what_made_the_dataset(tmp_path):
    shards.generate(tmp_path / "d", 10, n_players=3, observation="full", samples=2, seed=3, max_cards=500)
    meta = json.loads((tmp_path / "d" / "dataset.json").read_text())
    assert meta["beggar_env"] == beggar_env.__version__ and meta["versions"]["pyarrow"] == pa.__version__
    assert meta["job"] == {
        "n_games": 10,
        "seed": 3,
        "n_players": 3,
        "observation": "full",
        "samples": 2,
        "max_cards": 500,
        "splits": None,
        "game_weights": False,
        "shard_games": shards.SHARD_GAMES,
        "faces": False,
    }
    assert "RULES.md" in meta["rules"] and meta["n_samples"] == 20
    assert [tuple(f) for f in meta["fields"]] == [
        (name, list(shape), low, high) for name, shape, low, high in task.Layout(3, "full").fields
    ]
    assert sorted(os.listdir(tmp_path / "d")) == ["dataset.json", "deals", "samples"]
    assert (tmp_path / "d" / "dataset.json").stat().st_mode & 0o044 == 0o044  # readable by others, as the shards


def test_an_empty_dataset_is_still_a_dataset(tmp_path):
    meta = shards.generate(tmp_path / "d", 0, seed=1)
    assert meta["n_samples"] == 0 and meta["shards"] == []
    assert len(datasets.load(tmp_path / "d")) == 0


# -------------------------------------------------------------- bad input


def test_out_must_be_a_new_or_empty_folder_checked_before_any_work(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    (tmp_path / "file").write_text("a file")
    for out, words in [
        (tmp_path / "full", "not empty"),
        (tmp_path / "file", "is a file"),
        (tmp_path / "missing" / "d", "no such folder"),
    ]:
        with pytest.raises(ValueError, match=words):
            shards.generate(out, 10, seed=1)
    assert sorted(os.listdir(tmp_path)) == ["file", "full"] and os.listdir(tmp_path / "full") == ["keep.txt"]
    (tmp_path / "empty").mkdir()
    shards.generate(tmp_path / "empty", 5, seed=1)
    assert datasets.read_info(tmp_path / "empty")["n_samples"] > 0


@pytest.mark.parametrize(
    "split, words",
    [
        ("train=0.9,test=0.2", "add up to 1.1"),
        ("train", "train=0.9"),
        ("train=x", "train=0.9"),
        ("=1", "names"),
        ("a=0.5,a=0.5", "distinct"),
        ("a/b=1", "names"),
        ("a=1.5,b=-0.5", "> 0"),
        ({"a": float("nan")}, "> 0"),
    ],
)
def test_bad_splits_are_refused_naming_the_problem(tmp_path, split, words):
    with pytest.raises(ValueError, match=words):
        shards.generate(tmp_path / "d", 10, split=split)
    assert not (tmp_path / "d").exists()


def test_bad_arguments_are_refused_before_the_folder_is_made(tmp_path):
    for kwargs in ({"samples": "hand"}, {"n_players": 5}, {"observation": "x"}, {"threads": 0}, {"shard_games": 0}):
        with pytest.raises(ValueError):
            shards.generate(tmp_path / "d", 10, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_incomplete_folders_are_refused_in_one_clear_line(tmp_path):
    shards.create(tmp_path / "d")  # as a crash would leave it
    assert (tmp_path / "d" / "INCOMPLETE").exists()
    for read in (datasets.load, datasets.read_info, datasets.batches):
        with pytest.raises(ValueError, match="is an incomplete dataset .marked INCOMPLETE.: its generation was"):
            read(tmp_path / "d")
    shards.generate(tmp_path / "e", 5, seed=1)
    (tmp_path / "e" / "INCOMPLETE").write_text("")  # killed between the metadata and the mark's removal
    with pytest.raises(ValueError, match="incomplete dataset"):
        datasets.load(tmp_path / "e")
    (tmp_path / "f").mkdir()
    with pytest.raises(ValueError, match="not a dataset folder: it has no dataset.json"):
        datasets.load(tmp_path / "f")
    with pytest.raises(FileNotFoundError):
        datasets.load(tmp_path / "nothing")


def test_loading_more_than_memory_holds_is_refused_pointing_to_batches(tmp_path, monkeypatch):
    from beggar_env import checks

    shards.generate(tmp_path / "d", 50, seed=1)
    monkeypatch.setattr(checks, "available_memory", lambda: 2**10)
    with pytest.raises(MemoryError, match="batches"):
        datasets.load(tmp_path / "d")


# ------------------------------------------------------------------ faults


class FullDisk:
    """A file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, path, room):
        self.file = open(path, "wb")
        self.room = room
        self.closed = False

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def flush(self):
        self.file.flush()

    def close(self):
        self.closed = True
        self.file.close()


def fill_disk_after(monkeypatch, room):
    disk = {"room": room}

    def open_on_small_disk(path):
        sink = FullDisk(path, disk["room"])
        disk["room"] = 0 if sink.room < 1 else sink.room // 2  # every file takes from one small disk
        return pa.PythonFile(sink, mode="w")

    monkeypatch.setattr(streaming, "_open", open_on_small_disk)


@pytest.mark.parametrize("existed", [False, True])
def test_a_full_disk_gives_one_line_and_leaves_nothing(tmp_path, monkeypatch, existed):
    out = tmp_path / "d"
    if existed:
        out.mkdir()
    fill_disk_after(monkeypatch, 3_000_000)
    with pytest.raises(OSError) as error:
        shards.generate(out, 2000, seed=1, shard_games=256)
    message = str(error.value)
    assert "No space left on device" in message and str(out) in message and "\n" not in message
    assert error.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == (["d"] if existed else []) and (not existed or os.listdir(out) == [])


def test_a_full_disk_is_one_line_and_status_1_from_the_command(tmp_path, monkeypatch, capsys):
    fill_disk_after(monkeypatch, 1_000_000)
    status = cli.main(["dataset", "--games", "2000", "--seed", "1", "--out", str(tmp_path / "d"), "--no-progress"])
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert status == 1 and len(err) == 1 and "No space left on device" in err[0] and "nothing was kept" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_an_error_while_writing_removes_the_shard_being_written(tmp_path, monkeypatch):
    job = shards.Job.of(300, seed=1, shard_games=100)
    shards.create(tmp_path / "d")
    fill_disk_after(monkeypatch, 10**12)
    shards.write_games(tmp_path / "d", job, 0, 100)
    fill_disk_after(monkeypatch, 100_000)
    with pytest.raises(OSError):
        shards.write_games(tmp_path / "d", job, 100, 300)
    left = sorted(str(p.relative_to(tmp_path / "d")) for p in (tmp_path / "d").rglob("*") if p.is_file())
    assert left == ["INCOMPLETE", "deals/shard-00000.parquet", "samples/shard-00000.parquet"]


# ------------------------------------------------------------- the command


@pytest.mark.slow
def test_the_command_streams_what_the_api_generates(tmp_path):
    out = tmp_path / "d"
    args = ["--games", "300", "--players", "3", "--samples", "trick", "--seed", "6", "--split", "train=0.8,test=0.2"]
    run = beggar("dataset", *args, "--game-weights", "--shard-games", "128", "--out", str(out))
    assert run.returncode == 0, run.stderr
    expected = datasets.generate(300, n_players=3, samples="trick", seed=6)
    assert f"{len(expected)} samples of 300 games" in run.stdout and "3 shards" in run.stdout
    assert "splits: train " in run.stdout and "samples/s" in run.stdout
    assert_same_dataset(datasets.load(out), expected)
    meta = datasets.read_info(out)
    assert meta["job"]["game_weights"] and meta["job"]["splits"] == [["train", 0.8], ["test", 0.2]]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--split", "train=0.9,test=0.2"], ["--split", "add up to 1.1"]),
        (["--shard-games", "0"], ["--shard-games"]),
        (["--split", "a=1", "--out", "x.npz"], ["--split", "--out DIR"]),
        (["--game-weights", "--out", "x.npz"], ["--game-weights", "--out DIR"]),
    ],
)
def test_bad_parquet_options_give_one_line(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "dataset", "--games", "10", "--out", str(tmp_path / "d"), *args)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and run.stdout == "", run.stderr
    assert all(word in lines[0] for word in words)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_out_that_is_not_empty_or_writable_gives_one_line(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_text("")
    run = beggar("dataset", "--games", "10", "--out", str(tmp_path / "full"))
    assert run.returncode == 2 and "--out" in run.stderr and "not empty" in run.stderr
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    run = beggar("dataset", "--games", "10", "--out", str(locked), prefix=read_only_runner())
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "permission denied" in lines[0], run.stderr
    assert list(locked.iterdir()) == [] and os.listdir(tmp_path / "full") == ["mine"]


def test_without_pyarrow_the_command_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    for name in [name for name in sys.modules if name == "pyarrow" or name.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, name, None)
    status = cli.main(["dataset", "--games", "10", "--out", str(tmp_path / "d")])
    err = without_notice(capsys.readouterr().err).strip().splitlines()
    assert status == 2 and len(err) == 1 and "pip install 'beggar-env[parquet]'" in err[0] and ".npz" in err[0]
    assert list(tmp_path.iterdir()) == []
    assert cli.main(["dataset", "--games", "10", "--seed", "1", "--out", str(tmp_path / "d.npz"), "--no-progress"]) == 0


# ------------------------------------------------------------ Ctrl-C, SIGTERM, crash


def start_long_run(out, *args):
    if not (out.parent / "warm").exists():
        shards.generate(out.parent / "warm", 10, seed=1)  # the cache is warm
    return beggar_process("dataset", "--games", "3000000", "--seed", "1", "--out", str(out), *args)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig, status, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_and_sigterm_stop_within_a_second_and_leave_nothing(tmp_path, sig, status, word):
    (tmp_path / "empty").mkdir()
    for out, left in [(tmp_path / "new", False), (tmp_path / "empty", True)]:
        returncode, stderr, seconds = interrupt(start_long_run(out), sig, 4)
        assert returncode == status and stderr.strip().splitlines()[-1] == f"beggar: {word}"
        assert seconds < 1.5
        assert out.exists() == left and (not left or os.listdir(out) == [])
    assert sorted(os.listdir(tmp_path)) == ["empty", "warm"]


@pytest.mark.slow
def test_a_crash_leaves_the_folder_marked_incomplete(tmp_path):
    out = tmp_path / "d"
    process = start_long_run(out, "--shard-games", "4096")
    deadline = time.perf_counter() + 60
    while not list((out / "samples").glob("shard-*.parquet")) and time.perf_counter() < deadline:
        time.sleep(0.2)  # until a first shard is complete
    interrupt(process, signal.SIGKILL, 0)
    assert (out / "INCOMPLETE").exists() and not (out / "dataset.json").exists()
    assert list((out / "samples").glob("shard-*.parquet"))
    with pytest.raises(ValueError, match="incomplete dataset"):
        datasets.load(out)
    run = beggar("dataset", "--games", "10", "--out", str(out))
    assert run.returncode == 2 and "not empty" in run.stderr

"""Ray workers (`beggar_env.distributed`): the same results as one local process, for any
job, for `simulate` and for `search`, from the API and from the command line. One local Ray
(2 CPUs) serves the whole session; the tests are skipped when Ray is not installed."""

import json
import os
import sys
from dataclasses import replace

import numpy as np
import pytest
from conftest import RAY_NO_MEMORY_MONITOR, RAY_OBJECT_STORE, beggar, beggar_in_process

import beggar_env
from beggar_env.cycles import census
from beggar_env.distributed import TASKS_PER_WORKER, Workers
from beggar_env.search import search


class Squares:
    """A job as small as can be: the squares of a range, and which process made them."""

    def warm(self):
        self.warmed = True

    def run(self, lo, hi):
        assert self.warmed
        return [i * i for i in range(lo, hi)], os.getpid()


@pytest.fixture
def squares(ray_cluster):  # not kept between tests: its workers hold every CPU of the session's Ray
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    with Workers(Squares()) as workers:
        yield workers


@pytest.mark.slow
def test_workers_gather_in_task_order_or_as_they_come(squares):
    tasks = [(lo, lo + 7) for lo in range(0, 210, 7)]
    ordered = list(squares.ordered(tasks))
    assert [task for task, _ in ordered] == tasks
    assert [x for _, (part, _) in ordered for x in part] == [i * i for i in range(210)]
    assert len({pid for _, (_, pid) in ordered}) == len(squares.actors) == 2
    unordered = dict(squares.unordered(tasks))
    assert {task: part for task, (part, _) in unordered.items()} == {task: part for task, (part, _) in ordered}
    assert squares.startup_seconds > 0 and squares.warm_seconds >= 0


@pytest.mark.slow
def test_workers_take_tasks_only_as_they_free_up(squares):
    pulled = []

    def tasks():
        for lo in range(0, 100, 10):
            pulled.append(lo)
            yield lo, lo + 10

    for number, _ in enumerate(squares.unordered(tasks())):
        if number == 0:
            assert len(pulled) <= TASKS_PER_WORKER * len(squares.actors) + 1
    assert len(pulled) == 10


@pytest.mark.slow
def test_the_sessions_ray_is_not_killed_for_memory_others_use(ray_cluster):
    """Ray's memory monitor killed the tests' workers on a machine short of memory from other
    jobs: the session's Ray runs without it (its workers see its setting), its store capped."""
    import ray

    @ray.remote(num_cpus=1)
    def setting(name):
        return os.environ.get(name)

    for name, value in RAY_NO_MEMORY_MONITOR.items():
        assert ray.get(setting.remote(name)) == value
    assert 0 < ray.cluster_resources()["object_store_memory"] <= RAY_OBJECT_STORE


# ---------------------------------------------------------------- simulate


@pytest.mark.slow
@pytest.mark.parametrize("players", [2, 3])
def test_simulate_on_ray_gives_the_local_results(ray_cluster, players):
    local = beggar_env.simulate(150_000, n_players=players, seed=40 + players, max_cards=3000)
    on_ray = beggar_env.simulate(150_000, n_players=players, seed=40 + players, max_cards=3000, backend="ray")
    assert on_ray.dtype == local.dtype and np.array_equal(on_ray, local)


@pytest.mark.slow
def test_simulate_on_ray_plays_given_deals_and_blocks_in_order(ray_cluster):
    deals = [str(deal) for deal in beggar_env.random_deals(3_000, 4, seed=5)]
    assert np.array_equal(beggar_env.simulate(deals, backend="ray"), beggar_env.simulate(deals))
    local = beggar_env.simulate(100_000, seed=6)
    blocks = [
        (lo, block.copy())
        for lo, block in beggar_env.simulate_blocks(100_000, seed=6, block_games=30_000, backend="ray")
    ]
    assert [(lo, len(block)) for lo, block in blocks] == [
        (0, 30_000),
        (30_000, 30_000),
        (60_000, 30_000),
        (90_000, 10_000),
    ]
    assert np.array_equal(np.concatenate([block for _, block in blocks]), local)


# ------------------------------------------------------------------- search


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["random", "local"])
def test_search_on_ray_finds_the_deals_of_a_local_run(ray_cluster, strategy):
    options = dict(strategy=strategy, deals=40_000, walk_steps=700, seed=17, top=6)
    local = search(3, **options)
    on_ray = search(3, backend="ray", **options)
    strip = lambda report: {o: [replace(f, found_at=None) for f in e] for o, e in report.lists.items()}
    assert strip(on_ray) == strip(local)
    assert on_ray.deals == on_ray.deals_done == 40_000
    assert on_ray.startup_seconds > 0 and local.startup_seconds == 0


@pytest.mark.slow
def test_a_ray_run_resumes_locally_and_back(ray_cluster, tmp_path):
    path = tmp_path / "finds.jsonl"
    search(2, deals=30_000, seed=4, top=5, out=path, backend="ray")
    search(2, deals=60_000, top=5, out=path, resume=True)
    resumed = search(2, deals=90_000, top=5, out=path, resume=True, backend="ray")
    whole = search(2, deals=90_000, seed=4, top=5)
    assert [(f.deal, f.index) for f in resumed.lists["cards"]] == [(f.deal, f.index) for f in whole.lists["cards"]]
    assert resumed.deals_done == 90_000


# ------------------------------------------------------------------- census


@pytest.mark.slow
@pytest.mark.parametrize(
    "players, source, first", [(2, "every", 20_000_000), (3, "random", 0)], ids=["every-2p", "random-3p"]
)
def test_a_census_on_ray_is_the_local_census(ray_cluster, monkeypatch, players, source, first):
    monkeypatch.setattr(census, "RAY_TASK_POSITIONS", 5_000)  # eight tasks, merged in order
    options = dict(deck="JJQQKKAA--------", first=first, n=40_000, seed=5)
    local = census.census(players, source, **options)
    done = []
    on_ray = census.census(players, source, backend="ray", partial=lambda part, n: done.append(n), **options)
    assert on_ray == local and len(local.cycles) > 5 and local.games == 40_000
    assert done == list(range(5_000, 40_001, 5_000))


# -------------------------------------------------------------- the command


@pytest.mark.slow
def test_the_commands_join_a_cluster_by_its_address(ray_cluster, tmp_path):
    run = beggar(
        "search", "--ray", ray_cluster, "--deals", "30000", "--seed", "9", "--top", "3", "--out", "f", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    best = search(2, deals=30_000, seed=9, top=3).lists["cards"][0]
    assert f"longest by cards: {best.cards:,} cards, {best.tricks:,} tricks, win  {best.deal}" in run.stdout
    assert "Ray start-up (excluded)" in run.stdout
    sim = beggar("simulate", "--ray", ray_cluster, "--games", "20000", "--seed", "3", "--out", "r.npz", cwd=tmp_path)
    assert sim.returncode == 0, sim.stderr
    saved = np.load(tmp_path / "r.npz")
    local = beggar_env.simulate(20_000, seed=3)
    for name in local.dtype.names:
        assert np.array_equal(saved[name], local[name]), name


@pytest.mark.slow
def test_beggar_cycles_census_on_ray_writes_the_local_census(ray_cluster, tmp_path):
    deck = "JJQQKKAA--------"
    run = beggar(
        "cycles", "census", "--ray", ray_cluster, "--source", "every", "--deck", deck, "--first", "20000000",
        "--positions", "40000", "--out", "c.json", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    local = census.census(2, "every", deck=deck, first=20_000_000, n=40_000)
    assert census.Census.from_record(json.loads((tmp_path / "c.json").read_text())) == local
    assert f"distinct cycles: {len(local.cycles)}" in run.stdout and "on Ray" in run.stdout
    refused = beggar("cycles", "census", "--ray", "--threads", "2", "--positions", "10", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--threads is for a local run" in refused.stderr


@pytest.mark.slow
def test_beggar_dataset_writes_its_shards_on_ray(ray_cluster, tmp_path):
    pytest.importorskip("pyarrow")
    from beggar_env import datasets

    run = beggar(
        "dataset", "--ray", ray_cluster, "--games", "3000", "--shard-games", "1000", "--seed", "8", "--out", "d",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "3 shards" in run.stdout and "on Ray" in run.stdout
    loaded, expected = datasets.load(tmp_path / "d"), datasets.generate(3000, seed=8)
    assert np.array_equal(loaded.observations, expected.observations) and np.array_equal(loaded.game, expected.game)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--out", "d.npz"], "--ray is for Parquet: give --out DIR"),
        (["--out", "d", "--threads", "2"], "--threads is for a local run"),
    ],
)
def test_beggar_dataset_on_ray_refuses_what_it_cannot_do(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.chdir(tmp_path)
    run = beggar_in_process(capsys, "dataset", "--ray", "--games", "10", *extra)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ datasets


@pytest.mark.slow
def test_a_dataset_written_on_ray_is_the_local_one_byte_for_byte(ray_cluster, tmp_path):
    pytest.importorskip("pyarrow")
    from beggar_env.datasets import shards

    options = dict(
        n_players=3, samples="trick", seed=12, split="train=0.8,test=0.2", game_weights=True, shard_games=700
    )
    local = shards.generate(tmp_path / "local", 3000, **options)
    progress = []
    on_ray = shards.generate(tmp_path / "ray", 3000, backend="ray", progress=lambda *p: progress.append(p), **options)
    assert on_ray == local and len(local["shards"]) == 5
    contents = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert sorted(progress)[-1] == (3000, 3000) and len(progress) == 5


def test_a_dataset_on_ray_refuses_threads_before_writing(tmp_path):
    pytest.importorskip("pyarrow")
    from beggar_env.datasets import shards

    with pytest.raises(ValueError, match="threads is for the local backend"):
        shards.generate(tmp_path / "d", 10, backend="ray", threads=2)
    with pytest.raises(ValueError, match="backend"):
        shards.generate(tmp_path / "d", 10, backend="dask")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("run", ["simulate", "simulate_blocks", "dataset", "search"])
def test_every_ray_job_joins_the_cluster_it_is_given(run, tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test]'")
    import beggar_env.distributed as distributed

    joined = []

    class Refused(Exception):
        pass

    def workers(job, address=None, workers=None):
        joined.append(address)
        raise Refused  # no Ray needed: only the address handed to the workers is checked

    monkeypatch.setattr(distributed, "Workers", workers)
    with pytest.raises(Refused):
        if run == "simulate":
            beggar_env.simulate(10, seed=1, backend="ray", address="head:6379")
        elif run == "simulate_blocks":
            list(beggar_env.simulate_blocks(10, seed=1, backend="ray", address="head:6379"))
        elif run == "dataset":
            pytest.importorskip("pyarrow")
            from beggar_env.datasets import shards

            shards.generate(tmp_path / "d", 10, seed=1, backend="ray", address="head:6379")
        else:
            search(2, deals=10, seed=1, backend="ray", address="head:6379")
    assert joined == ["head:6379"]

"""Ray workers (`beggar_env.distributed`): the same results as one local process, for any
job, for `simulate` and for `search`, from the API and from the command line. One local Ray
(2 CPUs) serves the whole session; the tests are skipped when Ray is not installed."""

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import beggar_env
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


def test_workers_gather_in_task_order_or_as_they_come(squares):
    tasks = [(lo, lo + 7) for lo in range(0, 210, 7)]
    ordered = list(squares.ordered(tasks))
    assert [task for task, _ in ordered] == tasks
    assert [x for _, (part, _) in ordered for x in part] == [i * i for i in range(210)]
    assert len({pid for _, (_, pid) in ordered}) == len(squares.actors) == 2
    unordered = dict(squares.unordered(tasks))
    assert {task: part for task, (part, _) in unordered.items()} == {task: part for task, (part, _) in ordered}
    assert squares.startup_seconds > 0 and squares.warm_seconds >= 0


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


# ---------------------------------------------------------------- simulate


@pytest.mark.parametrize("players", [2, 3])
def test_simulate_on_ray_gives_the_local_results(ray_cluster, players):
    local = beggar_env.simulate(150_000, n_players=players, seed=40 + players, max_cards=3000)
    on_ray = beggar_env.simulate(150_000, n_players=players, seed=40 + players, max_cards=3000, backend="ray")
    assert on_ray.dtype == local.dtype and np.array_equal(on_ray, local)


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


@pytest.mark.parametrize("strategy", ["random", "local"])
def test_search_on_ray_finds_the_deals_of_a_local_run(ray_cluster, strategy):
    options = dict(strategy=strategy, deals=40_000, walk_steps=700, seed=17, top=6)
    local = search(3, **options)
    on_ray = search(3, backend="ray", **options)
    strip = lambda report: {o: [replace(f, found_at=None) for f in e] for o, e in report.lists.items()}
    assert strip(on_ray) == strip(local)
    assert on_ray.deals == on_ray.deals_done == 40_000
    assert on_ray.startup_seconds > 0 and local.startup_seconds == 0


def test_a_ray_run_resumes_locally_and_back(ray_cluster, tmp_path):
    path = tmp_path / "finds.jsonl"
    search(2, deals=30_000, seed=4, top=5, out=path, backend="ray")
    search(2, deals=60_000, top=5, out=path, resume=True)
    resumed = search(2, deals=90_000, top=5, out=path, resume=True, backend="ray")
    whole = search(2, deals=90_000, seed=4, top=5)
    assert [(f.deal, f.index) for f in resumed.lists["cards"]] == [(f.deal, f.index) for f in whole.lists["cards"]]
    assert resumed.deals_done == 90_000


# -------------------------------------------------------------- the command


def beggar(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "beggar_env.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


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

"""The CUDA backend (beggar_env.gpu) gives the CPU engine's results game for game.

Without a GPU the kernels run under numba's CUDA simulator, which must be switched on
before numba is imported: a plain ``pytest`` runs this file again in a child process with
``NUMBA_ENABLE_CUDASIM=1`` (test_the_cuda_tests_under_the_simulator), where the tests
marked ``simulator`` run; ``NUMBA_ENABLE_CUDASIM=1 pytest tests/test_cuda.py`` runs them
directly. Every comparison is field by field against the CPU engine on the same deals.
"""

import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numba
import numpy as np
import pytest
from conftest import beggar_in_process, vector_expected

import beggar_env
from beggar_env import core, datasets, gpu
from beggar_env.deals import Deal
from beggar_env.forecasting import forecasters as fc
from beggar_env.search import search

REPO = Path(__file__).resolve().parents[1]
SIMULATED = gpu.simulated()
HAVE_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
SIMULATOR_SECONDS = 120  # the whole file under the simulator, at most

simulator = pytest.mark.skipif(
    not SIMULATED,
    reason="runs under numba's CUDA simulator: in the child process of test_the_cuda_tests_under_the_simulator, "
    "or with NUMBA_ENABLE_CUDASIM=1",
)


def same_records(gpu_records, cpu_records):
    """Every field of every game equal (the first difference named)."""
    assert gpu_records.dtype == cpu_records.dtype
    assert len(gpu_records) == len(cpu_records)
    for name in cpu_records.dtype.names:
        differ = np.flatnonzero(np.any((gpu_records[name] != cpu_records[name]).reshape(len(cpu_records), -1), axis=1))
        assert differ.size == 0, (
            f"{name} differs first at game {differ[:1]}: {gpu_records[differ[:1]]} vs {cpu_records[differ[:1]]}"
        )


def _finds(report):
    """A search's finds, without the time they were found."""
    return {o: [replace(f, found_at=None) for f in entries] for o, entries in report.found.items()}


# ---------------------------------------------------------------- the child run


@pytest.mark.slow
@pytest.mark.skipif(SIMULATED, reason="this is the simulator's run")
@pytest.mark.skipif(not HAVE_NUMBA_CUDA, reason="numba-cuda is not installed: pip install 'beggar-env[cuda]'")
def test_the_cuda_tests_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    started = time.perf_counter()
    run = subprocess.run(
        # -W error: a warning fails the run (numpy's overflow of the simulator's uint64 hashing was printed)
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "error", "--all", str(Path(__file__))],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * SIMULATOR_SECONDS + 300,  # the child may compile the CPU engine first
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert " passed" in run.stdout and " failed" not in run.stdout, run.stdout[-2000:]
    print(run.stdout.strip().splitlines()[-1], f"({time.perf_counter() - started:.0f} s)")


# ----------------------------------------------------------------- refusals


@pytest.mark.skipif(SIMULATED, reason="the simulator stands in for a GPU")
def test_without_a_gpu_or_the_extra_the_backend_is_refused_in_one_line(capsys):
    error = ImportError if not HAVE_NUMBA_CUDA else ValueError
    if HAVE_NUMBA_CUDA:
        from numba import cuda

        if cuda.is_available():
            pytest.skip("a GPU is here")
    with pytest.raises(error, match="beggar-env\\[cuda\\]" if error is ImportError else "GPU") as raised:
        beggar_env.simulate(4, seed=1, backend="cuda")
    assert "\n" not in str(raised.value)
    run = beggar_in_process(capsys, "simulate", "--games", "4", "--seed", "1", "--backend", "cuda")
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "--backend cuda" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_settings_the_cuda_backend_refuses_are_named():
    with pytest.raises(ValueError, match="threads"):
        beggar_env.simulate(4, seed=1, backend="cuda", threads=1)
    with pytest.raises(ValueError, match="max_cards or max_tricks"):
        beggar_env.simulate(4, seed=1, backend="cuda", detect_cycles=False)
    with pytest.raises(ValueError, match="address"):
        beggar_env.simulate(4, seed=1, backend="cuda", address="auto")
    with pytest.raises(ValueError, match="backend"):
        fc.BayesMC(2, backend="gpu")


# --------------------------------------------------------- under the simulator


@simulator
def test_every_reference_vector(vectors):
    by_players = {}
    for v in vectors:
        by_players.setdefault(beggar_env.parse_deal(v["deal"]).n_players, []).append(v)
    for group in by_players.values():
        deals = [v["deal"] for v in group]
        records = beggar_env.simulate(deals, backend="cuda")
        same_records(records, beggar_env.simulate(deals, threads=1))
        for v, game in zip(group, records):
            cycle = int(game["outcome"]) == core.Outcome.CYCLE
            got = {
                "outcome": core.OUTCOMES[int(game["outcome"])],
                "winner": None if int(game["winner"]) < 0 else int(game["winner"]),
                "cards": int(game["cards"]),
                "tricks": int(game["tricks"]),
                **{f: int(game[f]) if cycle else None for f in beggar_env.GameResult.CYCLE_FIELDS},
            }
            assert got == vector_expected(v), v["name"]


@simulator
@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_random_deals_as_the_cpu_engine_deals_and_plays_them(n_players):
    cpu = beggar_env.simulate(40, n_players=n_players, seed=2**64 - 5, threads=1)
    same_records(beggar_env.simulate(40, n_players=n_players, seed=2**64 - 5, backend="cuda"), cpu)
    blocks = beggar_env.simulate_blocks(40, n_players=n_players, seed=2**64 - 5, backend="cuda", block_games=13)
    for first, block in blocks:  # later blocks start inside the random stream
        same_records(block, cpu[first : first + len(block)])


@simulator
@pytest.mark.parametrize(
    "limits",
    [dict(max_cards=150), dict(max_tricks=12), dict(max_cards=60, detect_cycles=False), dict(max_cards=0)],
)
def test_limits(limits, vectors):
    deals = [v["deal"] for v in vectors if beggar_env.parse_deal(v["deal"]).n_players == 2]
    same_records(beggar_env.simulate(deals, backend="cuda", **limits), beggar_env.simulate(deals, threads=1, **limits))
    cpu = beggar_env.simulate(30, n_players=3, seed=5, threads=1, **limits)
    gpu_records = beggar_env.simulate(30, n_players=3, seed=5, backend="cuda", **limits)
    same_records(gpu_records, cpu)
    assert (gpu_records["outcome"] == core.Outcome.LIMIT).any()


@simulator
def test_the_never_ending_deal_with_limits_before_during_and_after_its_cycle(vectors):
    casella = next(v for v in vectors if v["outcome"] == "cycle" and v["cards"] > 100)
    for max_cards in (20, 34, 200, 474, 475, None):
        for detect_cycles in (True, False) if max_cards is not None else (True,):
            options = dict(max_cards=max_cards, detect_cycles=detect_cycles)
            deals = [casella["deal"]] * 2
            same_records(
                beggar_env.simulate(deals, backend="cuda", **options), beggar_env.simulate(deals, threads=1, **options)
            )


@simulator
def test_odd_deals_empty_hands_and_more_than_a_deck():
    rng = np.random.default_rng(1)
    deals = []
    for n_players in (2, 3, 4):
        group = [Deal.from_classes([[3, 1], []] + [[0]] * (n_players - 2))]  # seat 1 is out before it plays
        for _ in range(12):
            n_cards = int(rng.integers(1, 90))
            classes = np.zeros(n_cards, np.int64)  # numerals, and at most four of each court card
            courts = np.repeat(np.arange(1, 5), rng.integers(0, 5, 4))
            classes[rng.permutation(n_cards)[: len(courts)]] = courts[:n_cards]
            cuts = np.sort(rng.integers(0, n_cards + 1, n_players - 1))
            group.append(Deal.from_classes([part.tolist() for part in np.split(classes, cuts)]))
        deals.append(group)
    for group in deals:
        same_records(beggar_env.simulate(group, backend="cuda"), beggar_env.simulate(group, threads=1))


@simulator
@pytest.mark.parametrize("n_players", [2, 4])
def test_random_search_finds_what_the_cpu_search_finds(n_players):
    cpu = search(n_players, deals=50, seed=9, top=4, threads=1)
    on_gpu = search(n_players, deals=50, seed=9, top=4, backend="cuda")
    assert on_gpu.deals_done == cpu.deals_done == 50
    assert _finds(on_gpu) == _finds(cpu)
    assert _finds(cpu)["cards"]


@simulator
@pytest.mark.parametrize(
    "n_players, options",
    [
        (2, dict(objective="cards", deals=40, walk_steps=13)),  # the last walk cut by the budget
        (3, dict(objective="tricks", deals=30, walk_steps=10, temperature=60.0)),  # annealing
        (2, dict(objective="cycle", deals=24, walk_steps=12, temperature=8.0)),
        (4, dict(objective="cards", deals=20, walk_steps=10)),
    ],
)
def test_local_search_walks_as_the_cpu_walks(n_players, options, monkeypatch):
    cpu = search(n_players, strategy="local", seed=4, top=3, threads=1, **options)
    assert _finds(search(n_players, strategy="local", seed=4, top=3, backend="cuda", **options)) == _finds(cpu)
    assert cpu.found["cards"] and len({f.index for f in cpu.found["cards"]}) == len(cpu.found["cards"])
    from beggar_env.search import gpu_searchers

    monkeypatch.setattr(gpu_searchers, "WALK_LAUNCH_GAMES", 3)  # a walk goes on over launches
    monkeypatch.setattr(gpu_searchers, "LAUNCH_WALKS", 2)  # a range in groups of walks
    on_gpu = search(n_players, strategy="local", seed=4, top=3, backend="cuda", **options)
    assert _finds(on_gpu) == _finds(cpu) and on_gpu.deals_done == cpu.deals_done == options["deals"]


@simulator
def test_local_search_from_start_deals_and_full_buffers(vectors, monkeypatch):
    from beggar_env.search import gpu_searchers

    casella = next(v["deal"] for v in vectors if v["outcome"] == "cycle" and v["cards"] > 100)
    starts = [casella, beggar_env.random_deal(2, seed=1), Deal.from_classes([[0, 0, 1, 0, 2], [0, 3, 0]])]
    options = dict(strategy="local", objective="cycle", starts=starts, deals=30, walk_steps=10, seed=6, top=5)
    cpu = search(2, threads=1, **options)
    assert _finds(search(2, backend="cuda", **options)) == _finds(cpu)
    monkeypatch.setattr(gpu_searchers, "FOUND_PER_WALK", 1)  # a walk pauses at every candidate
    assert _finds(search(2, backend="cuda", **options)) == _finds(cpu)


@simulator
def test_rollouts_count_what_the_cpu_rollouts_count():
    data = datasets.generate(4, observation="counted", seed=11)
    obs = {name: value[::7][:40] for name, value in data.fields.items()}
    for max_cards in (None, 60):
        cpu = fc.BayesMC(2, k=6, seed=3, max_cards=max_cards)
        on_gpu = fc.BayesMC(2, k=6, seed=3, max_cards=max_cards, backend="cuda")
        assert np.array_equal(on_gpu.counts(obs), cpu.counts(obs))
        assert on_gpu.cards_played == cpu.cards_played > 0
    full = datasets.generate(3, observation="full", seed=2)
    obs = {name: value[::5][:30] for name, value in full.fields.items()}
    assert np.array_equal(fc.Oracle(2, backend="cuda").counts(obs), fc.Oracle(2).counts(obs))


@simulator
def test_the_command_line_runs_on_the_backend(tmp_path):
    from beggar_env.cli import main

    assert main(["simulate", "--games", "20", "--seed", "3", "--backend", "cuda", "--no-progress"]) == 0
    assert main(["search", "--deals", "20", "--seed", "3", "--backend", "cuda", "--out", str(tmp_path / "f")]) == 0
    local = ["--strategy", "local", "--walk-steps", "5", "--objective", "tricks"]
    assert main(["search", "--deals", "10", "--backend", "cuda", *local, "--out", str(tmp_path / "g")]) == 0


# --------------------------------------------------- reduced on the device


def same_tally(a, b):
    assert all(np.array_equal(a[name], b[name]) for name in ("cards", "tricks", "outcomes", "wins")), (a, b)
    assert a["draws"] == b["draws"]


@simulator
@pytest.mark.parametrize("n_players", [2, 3, 4])
@pytest.mark.parametrize(
    "options", [dict(), dict(max_cards=150), dict(max_tricks=12), dict(max_cards=60, detect_cycles=False)]
)
def test_a_summary_counted_on_the_device_is_the_cpus(n_players, options):
    from beggar_env import game

    same_tally(
        game.tally(150, n_players=n_players, seed=3, backend="cuda", **options),
        game.tally(150, n_players=n_players, seed=3, **options),
    )


@simulator
def test_a_tally_past_the_histograms_and_the_room_and_of_given_deals(vectors, monkeypatch):
    from beggar_env import game, gpu_game

    deals = [v["deal"] for v in vectors if v["deal"].count("/") == 1]
    cpu = game.tally(deals)
    monkeypatch.setattr(gpu_game, "CARD_BINS", 100)  # most games listed apart
    monkeypatch.setattr(gpu_game, "TRICK_BINS", 12)
    monkeypatch.setattr(gpu, "KEPT_ROOM", 2)  # launches played again with room for all
    gpu_game.tally_kernel.cache_clear()
    try:
        same_tally(game.tally(deals, backend="cuda"), cpu)
        assert len(cpu["cards"]) > 100
    finally:
        gpu_game.tally_kernel.cache_clear()


@simulator
def test_random_search_sends_back_only_candidates_and_finds_what_the_cpu_finds(monkeypatch):
    from beggar_env.search import gpu_searchers

    cpu = search(2, deals=1200, seed=9, top=3, threads=1)
    monkeypatch.setattr(gpu_searchers, "FIRST_LAUNCH", 100)
    monkeypatch.setattr(gpu, "LAUNCH_GAMES", 300)
    sent = []
    real = gpu_searchers.candidate_rows

    def counted(*args, **kwargs):
        played, rows = real(*args, **kwargs)
        sent.append((args[2], len(played)))
        return played, rows

    monkeypatch.setattr(gpu_searchers, "candidate_rows", counted)
    assert _finds(search(2, deals=1200, seed=9, top=3, backend="cuda")) == _finds(cpu)
    assert sent[0][0] == 100 and sum(n for n, _ in sent) == 1200
    assert sum(k for _, k in sent[1:]) < sum(n for n, _ in sent[1:]) / 10  # the lists full: a few games sent
    monkeypatch.setattr(gpu, "KEPT_ROOM", 1)
    assert _finds(search(2, deals=1200, seed=9, top=3, backend="cuda")) == _finds(cpu)


@simulator
def test_the_simulate_command_prints_the_same_summary_on_the_backend(capsys):
    from beggar_env.cli import main

    outputs = []
    for backend in ("local", "cuda"):
        assert main(["simulate", "--games", "200", "--seed", "3", "--backend", backend, "--no-progress"]) == 0
        outputs.append(capsys.readouterr().out.splitlines()[:-1])  # all but the speed
    assert outputs[0] == outputs[1] and len(outputs[0]) == 6


# ------------------------------------------------------------------- the census


@simulator
@pytest.mark.parametrize(
    "n_players, source, deck, n, first",
    [
        (2, "every", "JJK-----", None, 0),  # 168 deals, 4 never end (--J-/K-J- among them)
        (3, "every", "JJK-----", None, 0),
        (4, "every", "JJK-----", None, 0),  # two cycles
        (2, "random", "JJK-----", 300, 7),
        (4, "random", "JJQQKKAA" + "-" * 8, 150, 0),
        (2, "every", "-" * 36 + "JJJJQQQQKKKKAAAA", 40, 10**20),  # past int64: unranked from a block's prefix
    ],
)
def test_the_census_on_the_gpu_is_the_cpu_census(n_players, source, deck, n, first, monkeypatch):
    from beggar_env.cycles import census, gpu_census

    options = dict(deck=deck, n=n, first=first, seed=5, unit=37)  # units of 37 positions: several a launch
    cpu = census.census(n_players, source, threads=1, **options)
    gpu = census.census(n_players, source, backend="cuda", **options)
    assert gpu == cpu and gpu.units == cpu.units  # every unit's digest too: hash, lengths, never-ending games
    monkeypatch.setattr(gpu_census, "SIMULATOR_LAUNCH", 97)  # many launches
    monkeypatch.setattr(gpu_census, "CYCLE_ROOM", 1)  # launches played again with room for every key
    gpu = census.census(n_players, source, backend="cuda", **options)
    assert gpu == cpu and gpu.units == cpu.units
    assert cpu.games == (n or census.positions.arrangements(deck)) and (bool(cpu.cycles) == (deck == "JJK-----"))
    assert len(cpu.units) > 1 and any(unit.never for unit in cpu.units) == bool(cpu.cycles)


def next_position(source, seed, deck, fixed, counts, index, cards, sizes, left):
    """cycle_keys.place with a bug: the random position of ``index + 1``. Compiled for the GPU
    in the cycle_keys module's namespace (``positions`` and ``core`` are its twins there)."""
    positions.random_position(core.derive_key(seed, index + 1), deck, cards, sizes)  # noqa: F821


@simulator
def test_a_kernel_that_places_the_next_position_is_caught(monkeypatch):
    """A planted bug: the GPU plays position ``index + 1`` where the CPU plays ``index``."""
    from beggar_env.cycles import census, cycle_keys, gpu_census
    from beggar_env.gpu import kernels
    from beggar_env.jit import jit

    options = dict(deck="JJK-----", n=300, seed=5)
    cpu = census.census(4, "random", threads=1, **options)
    assert census.census(4, "random", backend="cuda", **options) == cpu
    monkeypatch.setattr(cycle_keys, "place", jit(next_position))
    gpu_census.census_kernel.cache_clear()
    kernels.twins_of.cache_clear()
    try:
        planted = census.census(4, "random", backend="cuda", **options)
        assert planted != cpu and planted.games == cpu.games
    finally:
        gpu_census.census_kernel.cache_clear()
        kernels.twins_of.cache_clear()


@simulator
def test_the_census_command_runs_on_the_backend(tmp_path):
    from beggar_env.cli import main
    from beggar_env.cycles import records

    for backend, name in (("cuda", "gpu"), ("local", "cpu")):
        args = ["cycles", "census", "--source", "every", "--deck", "JQK--", "--players", "3", "--seed", "1"]
        assert main([*args, "--backend", backend, "--out", str(tmp_path / name), "--no-progress"]) == 0
    gpu, cpu = (records.read_census(tmp_path / f"{name}.json") for name in ("gpu", "cpu"))
    assert {k: v for k, v in gpu.items() if k != "seconds"} == {k: v for k, v in cpu.items() if k != "seconds"}
    assert cpu["manifest"]["units"][0]["hash"]  # the manifests, digests and all, are the same
    assert main(["cycles", "census", "--backend", "cuda", "--ray", "--positions", "3"]) == 2


@pytest.mark.skipif(SIMULATED or not HAVE_NUMBA_CUDA, reason="needs numba-cuda and a real GPU")
def test_on_a_real_gpu_a_hundred_thousand_games():
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("needs a real NVIDIA GPU: numba finds none")
    for n_players in (2, 3, 4):
        cpu = beggar_env.simulate(100_000, n_players=n_players, seed=1)
        same_records(beggar_env.simulate(100_000, n_players=n_players, seed=1, backend="cuda"), cpu)
    assert numba.config.ENABLE_CUDASIM == 0

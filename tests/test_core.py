"""The engine's own contracts: record layouts and running as plain Python."""

import json
import os
import subprocess
import sys

import pytest

from beggar_env import core


@pytest.mark.slow
def test_code_cached_by_different_processes_runs_right_together(tmp_path):
    # numba names compiled code after a per-process counter of record types unless
    # core renames it: then two processes cache one name for a 2- and a 3-player state,
    # and a third process that loads both plays the 3-player game with 2-player code.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}

    def cards(*deals):
        code = f"import beggar_env as b; print([b.play(d).cards for d in {deals!r}])"
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    assert cards("-A--Q/----K-J") == [12]
    assert cards("-Q-/--K/J--") == [9]
    assert cards("-A--Q/----K-J", "-Q-/--K/J--", "-Q-/--K/J--/-") == [12, 9, 28]
    assert len(list(tmp_path.rglob("*.nbc"))) > 0  # the cache was used


def test_capacity_holds_every_card_and_is_a_power_of_two():
    for n in (1, 2, 52, 63, 64, 65, 127, 128, 129, 1000):
        capacity = core.capacity_for(n)
        assert capacity >= n and capacity & (capacity - 1) == 0


@pytest.mark.slow
def test_the_engine_runs_as_plain_python_with_the_jit_disabled():
    code = (
        "import json, beggar_env as b; "
        "r = [b.play(d) for d in ('-A--Q/----K-J', 'J--/-J-', '--J-/K-J-', '-Q-/--K/J--')]; "
        "s = b.simulate(20, n_players=3, seed=2); "
        "import gymnasium as gym; e = gym.make('Beggar-v0', observation='counted'); o, _ = e.reset(seed=1); "
        "seen = [{k: v.tolist() for k, v in e.step(0)[0].items()} for _ in range(40)]; "
        "print(json.dumps([[x.outcome, x.winner, x.cards, x.tricks] for x in r] + [s.cards.tolist(), seen]))"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    plain = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert plain.returncode == 0, plain.stderr
    # the compiled run may compile the engine first: minutes on a busy machine
    compiled = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert compiled.returncode == 0, compiled.stderr
    assert json.loads(plain.stdout) == json.loads(compiled.stdout)
    assert json.loads(plain.stdout)[0] == ["win", 1, 12, 1]


def test_packed_deals_are_checked():
    import pytest

    import beggar_env
    from beggar_env.deals import pack_deals

    cards, sizes = pack_deals(["-A/-----", "J--/-J-"])
    assert beggar_env.simulate((cards, sizes)).cards.tolist() == [7, 8]
    for bad, word in (
        ((cards, sizes * 3), "width of cards"),
        ((cards + 9, sizes), "card classes"),
        ((cards[0], sizes), "n_games"),
        ((cards, sizes * 0), "at least one card"),
        ((cards[:, :1], sizes[:, :1]), "n_players"),
    ):
        with pytest.raises(ValueError, match=word):
            beggar_env.simulate(bad)


def test_the_record_name_patch_refuses_to_import_if_numba_moved_its_hook(monkeypatch):
    import pytest
    from numba.core import types as numba_types

    from beggar_env import jit

    assert isinstance(numba_types.Record.mangling_args, property)  # patched on import, on this numba
    record = numba_types.Record.make_c_struct([("a", numba_types.int8)])
    kind, (digest,) = record.mangling_args
    assert kind == "Record" and isinstance(digest, int)  # named after its content, not a counter
    monkeypatch.setattr(numba_types.Record, "mangling_args", lambda self: ("Record", ()))
    with pytest.raises(ImportError, match="mangling_args has moved"):
        jit._name_records_by_content()

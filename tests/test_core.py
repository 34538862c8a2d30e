"""The engine's own contracts: record layouts and running as plain Python."""

import json
import os
import subprocess
import sys

import numpy as np

from beggar_env import core, task


def test_every_record_type_has_a_size_of_its_own():
    # numba names compiled code after a record argument's byte size: two record types of
    # one size would share compiled functions and silently compute garbage.
    dtypes = [core.state_dtype(p, core.capacity_for(n)) for p in (2, 3, 4) for n in (1, 52, 64, 65, 200, 1000)]
    dtypes += [core.result_dtype(p) for p in (2, 3, 4)] + [task.ENV_DTYPE]
    distinct = set(dtypes)
    sizes = {dtype.itemsize for dtype in distinct}
    assert len(sizes) == len(distinct)


def test_capacity_holds_every_card_and_is_a_power_of_two():
    for n in (1, 2, 52, 63, 64, 65, 127, 128, 129, 1000):
        capacity = core.capacity_for(n)
        assert capacity >= n and capacity & (capacity - 1) == 0


def test_the_engine_runs_as_plain_python_with_the_jit_disabled():
    code = (
        "import json, beggar_env as b; "
        "r = [b.play(d) for d in ('-A--Q/----K-J', 'J--/-J-', '--J-/K-J-', '-Q-/--K/J--')]; "
        "s = b.simulate(20, n_players=3, seed=2); "
        "print(json.dumps([[x.outcome, x.winner, x.cards, x.tricks] for x in r] + [s.cards.tolist()]))"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    plain = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                           env=env, timeout=300)
    assert plain.returncode == 0, plain.stderr
    compiled = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stderr
    assert json.loads(plain.stdout) == json.loads(compiled.stdout)
    assert json.loads(plain.stdout)[0] == ["win", 1, 12, 1]

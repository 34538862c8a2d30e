"""Ray RLlib's PPO on Beggar-v0 (examples/rllib_ppo.py), run as a user runs it. RLlib pins
Gymnasium 1.2.2, so CI runs this in an environment of its own (.ci/rllib.txt); elsewhere
it skips, naming what is missing."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"
pytestmark = pytest.mark.slow  # trains with Ray RLlib, in a child process


def rllib_missing():
    for module in ("ray.rllib", "torch"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ImportError:
            return module
    try:
        import ray.rllib  # noqa: F401 (RLlib imports ray.tune, whose own dependencies may be missing)
    except ImportError as error:
        return f"ray.rllib ({error})"
    return None


@pytest.mark.skipif(rllib_missing() is not None, reason=f"needs Ray RLlib and torch: {rllib_missing()}")
def test_rllib_ppo_trains_and_is_evaluated_by_the_protocol(tmp_path):
    out = tmp_path / "rllib.json"
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--quick", "--out", str(out)], capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(out.read_text())
    everything = report["slices"]["all"]
    assert report["forecaster"] == "RLlib PPO (counted)" and report["games"] == 40
    assert everything["positions"] > 40 * 30 and 0.3 < everything["accuracy"]["value"] <= 1
    assert report["training"]["steps"] == 4000 and "ray" in report["training"]["versions"]
    assert "accuracy" in run.stdout and "wrote" in run.stdout

"""The engine's speed at other revisions of this repository, side by side with the checkout.

    python benchmarks/versions.py 52a016e            # a revision against the working tree
    python benchmarks/versions.py 52a016e HEAD~3 --rounds 5

Each revision is checked out once into a temporary git worktree (its numba cache compiled
there, before timing); every round then runs one fresh process per revision, in turn, so
that a busy machine slows them alike. The table gives each measure's best round and its
ratio to the working tree. Shared machines move single figures by 10-40% between minutes:
this compares code, not machines.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Run in a child process whose sys.path starts with the revision's checkout; uses only the
# API every revision since the vector env has (simulate, gym.make, gym.make_vec, datasets).
MEASURE = r"""
import json, time
import numpy as np
import beggar_env as bg
import gymnasium as gym
from gymnasium.utils.performance import benchmark_step
from beggar_env import datasets

def best(f, rounds=3):
    f()
    times = []
    for _ in range(rounds):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times)

out = {}
for threads in (1, 2):
    out[f"simulate, {threads} thread(s), games/s"] = 200_000 / best(
        lambda: bg.simulate(200_000, seed=20240501, threads=threads))
env = gym.make("Beggar-v0"); env.reset(seed=0)
out["Beggar-v0 steps/s"] = max(benchmark_step(env, target_duration=0.5) for _ in range(3))
envs = gym.make_vec("Beggar-v0", num_envs=8192); envs.reset(seed=0)
actions = np.random.default_rng(0).integers(0, 3, 8192)
out["vector env, 8,192 envs, env-steps/s"] = 8192 * 40 / best(lambda: [envs.step(actions) for _ in range(40)])
n = len(datasets.generate(20_000, seed=1))
out["datasets.generate, samples/s"] = n / best(lambda: datasets.generate(20_000, seed=1))
print("RESULT " + json.dumps(out))
"""


def checkout(revision, folder):
    """A worktree of ``revision`` (``.``: the working tree itself)."""
    if revision == ".":
        return REPO
    sha = subprocess.run(
        ["git", "rev-parse", "--short", revision], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = Path(folder) / sha
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), sha], cwd=REPO, capture_output=True, check=True
        )
    return path


def measure(path):
    env = dict(os.environ, PYTHONPATH=str(path))
    run = subprocess.run([sys.executable, "-c", MEASURE], cwd=path, env=env, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if run.returncode != 0 or not lines:
        raise SystemExit(f"measuring {path} failed:\n{run.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs="+", help="git revisions to compare with the working tree")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running every revision once (default 3)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="beggar_versions_")
    names = [".", *args.revisions]
    paths = {}
    try:
        for name in names:
            paths[name] = checkout(name, folder)
            measure(paths[name])  # compile into the revision's own cache, untimed
        best = {name: {} for name in names}
        for round_ in range(args.rounds):
            for name in names:
                for key, value in measure(paths[name]).items():
                    best[name][key] = max(best[name].get(key, 0.0), value)
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    finally:
        for name, path in paths.items():
            if name != ".":
                subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, capture_output=True)
    labels = {".": "working tree", **{name: name for name in args.revisions}}
    print(f"best of {args.rounds} rounds, a fresh process per revision and round")
    header = ["measure", *(labels[name] for name in names), *(f"{labels[n]} / working tree" for n in names[1:])]
    print(" | ".join(header))
    for key in best["."]:
        cells = [f"{best[name][key]:,.0f}" for name in names]
        cells += [f"{best[name][key] / best['.'][key]:.2f}" for name in names[1:]]
        print(" | ".join([key, *cells]))


if __name__ == "__main__":
    main()

"""Stable-Baselines3 on the native vector env (beggar_env.envs.sb3.SB3VecEnv) vs on SB3's DummyVecEnv.

    python benchmarks/bench_sb3.py [--envs 16,64,256] [--rounds 3] [--quick]

Needs the [rl] extra (pip install -e '.[rl]'). Both sides run Beggar-v0 with
observation="counted", flattened (the adapter as FlattenObservation would; DummyVecEnv over
FlattenObservation(gym.make("Beggar-v0"))), torch on one thread. For each number of envs:

* step: VecEnv.step with fixed random labels, env-steps/s;
* collect: PPO's rollout collection (OnPolicyAlgorithm.collect_rollouts: the policy's
  forward pass, the env step, the rollout buffer), env-steps/s: SB3's time outside its
  gradient steps;
* learn (at --learn-envs only): PPO.learn, collection and training, with the hyperparameters
  of studies/ppo_forecaster.py, env-steps/s.

Each contender runs once untimed, then the contenders take turns round after round and each
keeps its best time (the machine may be shared). The ratios are the figures: timings on a
shared machine move, ratios in one run much less. Nothing here fails on a timing.
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.machine import cpu_model, usable_cpus  # noqa: E402
from suite.printing import fmt_rate, table  # noqa: E402
from suite.timing import interleaved_best  # noqa: E402

OPTIONS = dict(n_players=2, observation="counted")


def contenders(n):
    """The adapter and SB3's reference over n envs, seeded alike."""
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv

    from beggar_env.envs import sb3

    one = lambda: gym.wrappers.FlattenObservation(gym.make("Beggar-v0", **OPTIONS))
    envs = {"SB3VecEnv (native)": sb3.make(n, **OPTIONS), "DummyVecEnv": DummyVecEnv([one for _ in range(n)])}
    for env in envs.values():
        env.seed(0)
        env.reset()
    return envs


def stepper(env, actions, steps):
    def run():
        for _ in range(steps):
            env.step(actions)
        return steps * env.num_envs

    return run


def collector(env, n_steps):
    """PPO's collect_rollouts over ``env``, n_steps per env."""
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", env, n_steps=n_steps, batch_size=n_steps * env.num_envs, seed=0, device="cpu")
    _, callback = model._setup_learn(total_timesteps=10**12, callback=None)  # noqa: SLF001 (SB3's own set-up, as learn() calls it)
    callback.on_training_start(locals(), globals())

    def run():
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=n_steps)
        return n_steps * env.num_envs

    return run


def learner(env, steps):
    """PPO.learn over ``env`` with the example's hyperparameters."""
    from stable_baselines3 import PPO

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
    from ppo_forecaster import HYPERPARAMETERS

    hyper = dict(HYPERPARAMETERS, n_steps=max(8, 8192 // env.num_envs))
    model = PPO("MlpPolicy", env, seed=0, device="cpu", **hyper)

    def run():
        model.learn(steps, reset_num_timesteps=False)
        return steps

    return run


def best_rates(runs, rounds):
    best = interleaved_best({name: (fn, None, True) for name, fn in runs.items()}, rounds)
    return {name: count / seconds for name, (seconds, count, _) in best.items()}


def measure(n, args):
    """Rates (env-steps/s) of each contender at n envs: step, collect and maybe learn."""
    envs = contenders(n)
    actions = np.random.default_rng(0).integers(0, 3, n)
    step_env_steps = 2_000 if args.quick else 20_000
    rates = {
        "step": best_rates({k: stepper(e, actions, max(1, step_env_steps // n)) for k, e in envs.items()}, args.rounds),
        "collect": best_rates(
            {k: collector(e, max(8, (1024 if args.quick else 8192) // n)) for k, e in envs.items()}, args.rounds
        ),
    }
    if n == args.learn_envs:
        steps = 8192 if args.quick else 32768
        rates["learn"] = best_rates({k: learner(e, steps) for k, e in envs.items()}, min(args.rounds, 2))
    for env in envs.values():
        env.close()
    return rates


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="16,64,256", help="numbers of envs, comma-separated (default 16,64,256)")
    parser.add_argument("--learn-envs", type=int, default=256, help="envs of the PPO.learn timing (default 256)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="fewer steps: a smoke run")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.envs.split(",")]
    if min(sizes) < 1 or args.rounds < 1:
        parser.error("--envs and --rounds must be at least 1")

    import gymnasium
    import numba
    import stable_baselines3
    import torch

    torch.set_num_threads(1)
    print("beggar-env: Stable-Baselines3 through SB3VecEnv vs DummyVecEnv")
    print(f"python   {platform.python_version()}; {platform.platform()}")
    print(f"cpu      {cpu_model()}; {os.cpu_count()} CPUs, {usable_cpus()} usable")
    print(
        f"versions stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__} (1 thread), "
        f"gymnasium {gymnasium.__version__}, numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads)"
    )
    print(f"options  {OPTIONS}, flattened; best of {args.rounds} rounds")
    rows, ratios = [], []
    started = time.perf_counter()
    for n in sizes:
        rates = measure(n, args)
        for what, by_name in rates.items():
            native, dummy = by_name["SB3VecEnv (native)"], by_name["DummyVecEnv"]
            rows.append([f"{n:,}", what, fmt_rate(native), fmt_rate(dummy), f"{native / dummy:.1f}x"])
            ratios.append(f"{what} at {n:,} envs: {native / dummy:.1f}x ({fmt_rate(native)}/s vs {fmt_rate(dummy)}/s)")
    print()
    table(["num_envs", "timing", "SB3VecEnv env-steps/s", "DummyVecEnv env-steps/s", "ratio"], rows)
    print()
    print("(step: VecEnv.step; collect: PPO collect_rollouts; learn: PPO.learn with studies/ppo_forecaster.py's")
    print(" hyperparameters, n_steps = 8192 / num_envs; ratio: SB3VecEnv / DummyVecEnv)")
    print(f"total {time.perf_counter() - started:.0f} s")
    print()
    print("figures: " + "; ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())

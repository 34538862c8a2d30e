"""Train Ray RLlib's PPO to forecast the winner in Beggar-v0, and evaluate it with the
project's protocol (``beggar_env.forecasting.protocol``) as a policy acting in the env.

    pip install -e . 'ray[rllib]' torch       # RLlib pins gymnasium==1.2.2; Beggar-v0 runs on 1.1.1 and later
    python examples/rllib_ppo.py --iterations 40 --out rllib_2p.json
    python examples/rllib_ppo.py --quick                                 # about a minute

What RLlib needs, and why:

* RLlib's env runners are Ray actors in other processes, which have not imported this
  package: the env is registered with RLlib (``register_env``) as a function that makes
  it there (``gym.make("beggar_env:Beggar-v0")`` would import the package as well).
* RLlib's default models read one float32 vector: Gymnasium's own wrappers turn the
  ``Dict`` of int32 arrays into one (``FlattenObservation``) of float32
  (``DtypeObservation``); int32 observations fail in the first layer ("mat1 and mat2 must
  have the same dtype").
* A forecast never changes the game, so each step is a problem of its own: ``gamma=0``.

Evaluated on the protocol's test deals, every position of every test game, with the
policy's most probable action as the forecast (``forecast="label"``).
"""

import argparse
import json
import logging
import platform
import sys
import time

import gymnasium as gym
import numpy as np

from beggar_env import files
from beggar_env.forecasting import protocol
from beggar_env.forecasting.report import TEST_SEED

QUICK = dict(iterations=2, batch=2000, test_games=40)


def make_env(config):
    """Beggar-v0 as RLlib's default models read it (one float32 vector); ``config`` holds its options."""
    from gymnasium.wrappers import DtypeObservation, FlattenObservation

    import beggar_env  # noqa: F401 (registers Beggar-v0 in the env runner's process)

    return DtypeObservation(FlattenObservation(gym.make("Beggar-v0", **config)), np.float32)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40, help="training iterations (default 40)")
    parser.add_argument("--batch", type=int, default=8000, help="env steps per iteration (default 8000)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="players (default 2)")
    parser.add_argument("--observation", default="counted", choices=("public", "counted"), help="(default counted)")
    parser.add_argument("--seed", type=int, default=1, help="RLlib's seed (default 1)")
    parser.add_argument("--test-games", type=int, default=2000, help="test games of the protocol (default 2000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: two small iterations, 40 test games")
    parser.add_argument("--out", help="write the protocol's report as JSON to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.batch, args.test_games = QUICK["iterations"], QUICK["batch"], QUICK["test_games"]
    for name in ("iterations", "batch", "test_games"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.out:
        try:
            args.out = files.output_path(args.out, ".json")
        except ValueError as exc:
            parser.error(f"--out: {exc}")
    return args


def build(args):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env

    logging.getLogger("ray.rllib").setLevel(logging.ERROR)  # it warns that PPO runs on its new API stack, its default
    register_env("beggar", make_env)
    config = (
        PPOConfig()
        .environment("beggar", env_config={"n_players": args.players, "observation": args.observation})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=8)  # sampling in this process: no actor start-up
        .training(
            gamma=0.0,
            lr=3e-4,
            train_batch_size_per_learner=args.batch,
            minibatch_size=min(1000, args.batch),
            num_epochs=4,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[128, 128]))
        .debugging(seed=args.seed)
    )
    return config.build_algo()


def policy(module, observation_space):
    """The trained policy's most probable action for a batch of observations (a dict of fields)."""
    import torch

    names = list(observation_space.spaces)  # FlattenObservation's order

    def act(obs):
        flat = np.concatenate([np.asarray(obs[name]).reshape(len(obs["cards"]), -1) for name in names], axis=1)
        with torch.no_grad():
            logits = module.forward_inference({"obs": torch.from_numpy(flat.astype(np.float32))})["action_dist_inputs"]
        return logits.argmax(dim=-1).numpy()

    return act


def main(argv=None):
    args = parse_args(argv)
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        algo = build(args)
        started = time.perf_counter()
        for _ in range(args.iterations):
            algo.train()
        seconds = time.perf_counter() - started
        steps = args.iterations * args.batch
        print(f"trained RLlib PPO for {steps:,} steps in {seconds:.0f} s ({steps / seconds:,.0f} steps/s)", flush=True)
        space = gym.make("Beggar-v0", n_players=args.players, observation=args.observation).observation_space
        test = protocol.TestSet.generate(args.players, args.test_games, seed=TEST_SEED)
        report = protocol.evaluate_policy(
            policy(algo.get_module(), space),
            test,
            name=f"RLlib PPO ({args.observation})",
            observation=args.observation,
            forecast="label",
        )
        algo.stop()
    finally:
        ray.shutdown()
    report["training"] = {
        "algorithm": "PPO (Ray RLlib), default MLP on the flattened float32 observation",
        "command": "python examples/rllib_ppo.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "steps": steps,
        "seconds": seconds,
        "versions": {"python": platform.python_version(), "ray": ray.__version__, "gymnasium": gym.__version__},
    }
    s = report["slices"]["all"]
    print(
        f"RLlib PPO ({args.observation}), {args.players} players, {args.test_games:,} test games: "
        f"accuracy {s['accuracy']['value']:.3f}, {s['positions']:,} positions"
    )
    if args.out:
        with files.replacing(args.out) as f:
            f.write((json.dumps(report, indent=1) + "\n").encode())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

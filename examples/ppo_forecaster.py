"""Train Stable-Baselines3 PPO to forecast the winner in Beggar-v0, and evaluate it with the
project's protocol (``beggar_env.forecasting.protocol``) as a policy acting in the env.

    pip install -e '.[rl]'
    python examples/ppo_forecaster.py --steps 5000000 --seed 1 --test-games 2000 --out ppo_2p.json
    python examples/ppo_forecaster.py --quick --out /tmp/ppo.json          # a few seconds

* The agent reads ``observation="counted"`` (the table and what a perfect card-counter
  knows), flattened as Gymnasium's ``FlattenObservation`` flattens it, from the native
  vector env through :class:`beggar_env.envs.sb3.SB3VecEnv`; ``VecNormalize`` scales it (cards
  played run into the thousands). Training deals come from the env seeds ``seed + i``, never
  the test seed.
* Each step it names an outcome (a seat, or no winner) and earns 1 when it is the true one
  (``reward="accuracy"``). A forecast never changes the game, so each step is a problem of
  its own: ``gamma=0`` makes the return the step's reward and the advantage exact.
* Evaluated on ``TestSet.generate(players, test_games, seed=evaluate.TEST_SEED)``, every
  position of every test game, with the policy's action probabilities as the forecast
  (``forecast="probs"``: finite log loss and Brier); its accuracy is that of the label the
  trained policy plays (the most probable action).
* torch runs on one thread: on two shared cores its default threads made PPO ten times slower.
"""

import argparse
import json
import platform
import sys
import time

import numpy as np

from beggar_env import files
from beggar_env.forecasting import baselines
from beggar_env.forecasting import protocol as evaluate

HYPERPARAMETERS = dict(  # n_steps x envs = 8,192 steps a rollout at the default 256 envs
    n_steps=32,
    batch_size=1024,
    n_epochs=4,
    learning_rate=1e-3,  # at the start, falling linearly to 0 by the end (see train)
    gamma=0.0,
    gae_lambda=1.0,
    ent_coef=0.01,
    clip_range=0.2,
    policy_kwargs=dict(net_arch=[128, 128]),
)
QUICK = dict(steps=4096, envs=16, test_games=40, hyperparameters=dict(n_steps=64, batch_size=256, n_epochs=2))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5_000_000, help="env steps of training (default 5,000,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of PPO and of the training deals (default 1)")
    parser.add_argument("--envs", type=int, default=256, help="envs stepped together (default 256)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="players (default 2)")
    parser.add_argument("--test-games", type=int, default=2000, help="test games of the protocol (default 2000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds (few steps and games)")
    parser.add_argument("--out", help="write the protocol's report as JSON to this file")
    args = parser.parse_args(argv)
    args.hyperparameters = dict(HYPERPARAMETERS)
    if args.quick:
        args.steps, args.envs, args.test_games = QUICK["steps"], QUICK["envs"], QUICK["test_games"]
        args.hyperparameters.update(QUICK["hyperparameters"])
    for name in ("steps", "envs", "test_games"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seed < 0 or args.seed <= evaluate.TEST_SEED < args.seed + args.envs:
        parser.error(
            f"--seed: the envs are seeded {args.seed}..{args.seed + args.envs - 1}, which must be >= 0 "
            f"and leave out the test seed {evaluate.TEST_SEED}"
        )
    if args.out:
        try:
            args.out = files.output_path(args.out, ".json")
        except ValueError as exc:
            parser.error(f"--out: {exc}")
    return args


def make_envs(args):
    from stable_baselines3.common.vec_env import VecNormalize

    from beggar_env.envs import sb3

    envs = sb3.make(args.envs, n_players=args.players, observation="counted", reward="accuracy")
    return VecNormalize(envs, norm_obs=True, norm_reward=False)


def linear(start):
    """A learning rate that falls linearly from ``start`` to 0 over the run (SB3 calls it
    with the fraction of the run still to go): the policy settles at the end instead of
    drifting on the noise of 0/1 rewards."""
    return lambda remaining: start * remaining


def train(args):
    from stable_baselines3 import PPO

    envs = make_envs(args)
    hyper = dict(args.hyperparameters, learning_rate=linear(args.hyperparameters["learning_rate"]))
    model = PPO("MlpPolicy", envs, seed=args.seed, device="cpu", verbose=0, **hyper)
    started = time.perf_counter()
    model.learn(args.steps)
    return model, envs, time.perf_counter() - started


def forecaster(model, envs):
    """The policy as the protocol reads it: a batch of ``Dict`` observations -> the
    probabilities of its actions (normalised as in training, without updating the scales)."""
    import torch

    from beggar_env.envs.sb3 import flatten_obs

    envs.training = False
    dict_space = envs.unwrapped.venv.single_observation_space

    def probs(obs):
        x = envs.normalize_obs(flatten_obs(dict_space, obs))
        with torch.no_grad():
            tensor, _ = model.policy.obs_to_tensor(x)
            return model.policy.get_distribution(tensor).distribution.probs.numpy().astype(np.float64)

    return probs


def versions():
    import gymnasium
    import numba
    import stable_baselines3
    import torch

    import beggar_env

    return {
        "python": platform.python_version(),
        "beggar_env": beggar_env.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
    }


def machine():
    cpu = baselines.machine()
    return f"{cpu['cpu']}, {cpu['cpus']} cores"


def headline(report):
    lines = []
    for name in ("all", "cards 0-25", "cards 104-207", "open"):
        s = report["slices"][name]
        acc, loss = s["accuracy"], s["log_loss"]
        lines.append(
            f"{name:>14}: accuracy {acc['value']:.3f} [{acc['ci95'][0]:.3f}, {acc['ci95'][1]:.3f}]  "
            f"log loss {loss['value']:.3f} [{loss['ci95'][0]:.3f}, {loss['ci95'][1]:.3f}]  "
            f"({s['positions']:,} positions)"
        )
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    model, envs, seconds = train(args)
    print(f"trained PPO for {args.steps:,} steps in {seconds:.0f} s ({args.steps / seconds:,.0f} steps/s)", flush=True)
    test = evaluate.TestSet.generate(args.players, args.test_games, seed=evaluate.TEST_SEED)
    report = evaluate.evaluate_policy(
        forecaster(model, envs), test, name="PPO (counted)", observation="counted", forecast="probs"
    )
    report["training"] = {
        "algorithm": "PPO (Stable-Baselines3), MlpPolicy on the flattened counted observation, VecNormalize",
        "command": "python examples/ppo_forecaster.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "steps": args.steps,
        "seed": args.seed,
        "envs": args.envs,
        "reward": "accuracy",
        "hyperparameters": args.hyperparameters,
        "learning_rate_schedule": "linear from learning_rate to 0",
        "seconds": seconds,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(),
        "machine": machine(),
    }
    print(f"PPO (counted), {args.players} players, {args.test_games:,} test games (seed {evaluate.TEST_SEED}):")
    print(headline(report))
    if args.out:
        with files.replacing(args.out) as f:
            f.write((json.dumps(report, indent=1) + "\n").encode())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

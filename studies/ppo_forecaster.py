"""Train Stable-Baselines3 PPO (or sb3-contrib's RecurrentPPO) to forecast the winner in
Beggar-v0, and evaluate it with the project's protocol (``beggar_env.forecasting.protocol``)
as a policy acting in the env.

    pip install -e '.[rl]'
    # the calibrated row: PPO on the counted features, logits as the forecast, log-score reward
    python studies/ppo_forecaster.py --reward log --inputs features --steps 5000000 --out ppo_log_2p.json
    # the RL memory row: RecurrentPPO (an LSTM) on the public features, the same reward
    python studies/ppo_forecaster.py --algorithm recurrent --observation public --reward log --inputs features \
        --steps 2000000 --out recurrent_ppo_2p.json
    # the first row (accuracy reward, the flattened table): overconfident, below "most cards"
    python studies/ppo_forecaster.py --steps 5000000 --seed 1 --test-games 2000 --out ppo_2p.json
    python studies/ppo_forecaster.py --quick --out /tmp/ppo.json          # a few seconds

* The agent reads ``--observation`` (``counted``: the table and what a perfect card-counter
  knows; or ``public``) from the native vector env through
  :class:`beggar_env.envs.sb3.SB3VecEnv`: flattened as Gymnasium's ``FlattenObservation``
  flattens it (``--inputs flat``) or as the per-position forecasters' features
  (``--inputs features``, :mod:`beggar_env.forecasting.features`, through
  :class:`~beggar_env.envs.sb3.MappedObservations`); ``VecNormalize`` scales it. Training
  deals come from the env seeds ``seed + i``, never the test seed.
* ``--reward accuracy``: each step the agent names an outcome (a seat, or no winner) and
  earns 1 when it is the true one; its forecast is its action probabilities. Not a proper
  scoring rule: the best policy always names one label, so its probabilities are
  overconfident. ``--reward log`` (or ``brier``): the agent's Gaussian action is logits
  (:class:`~beggar_env.envs.sb3.LogitActions`), the env is stepped with their softmax
  (``forecast="probs"``) and scores it by the log (Brier) score, a proper scoring rule, so
  the expected reward is highest for the true probabilities; its forecast is the softmax
  of its deterministic (mean) action.
* A forecast never changes the game, so each step is a problem of its own: ``gamma=0``
  makes the return the step's reward and the advantage exact. RecurrentPPO's LSTM state is
  reset at each episode start (``episode_start``), in training and in the protocol's games.
* Evaluated on ``TestSet.generate(players, test_games, seed=report.TEST_SEED)``, every
  position of every test game.
* torch runs on one thread: on two shared cores its default threads made PPO ten times slower.
"""

import argparse
import json
import platform
import sys
import time

import numpy as np

from beggar_env import files
from beggar_env.forecasting import protocol as evaluate
from beggar_env.forecasting import study
from beggar_env.forecasting.report import TEST_SEED

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
RECURRENT = dict(  # RecurrentPPO: sequences of n_steps per env through the LSTM
    n_steps=64,
    batch_size=4096,
    policy_kwargs=dict(net_arch=[128], lstm_hidden_size=128, n_lstm_layers=1),
)
LOG_STD_INIT = -1.0  # the Gaussian logits' starting noise (std 0.37) with --reward log/brier
QUICK = dict(steps=4096, envs=16, test_games=40, hyperparameters=dict(n_steps=64, batch_size=256, n_epochs=2))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5_000_000, help="env steps of training (default 5,000,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of PPO and of the training deals (default 1)")
    parser.add_argument("--envs", type=int, default=256, help="envs stepped together (default 256)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="players (default 2)")
    parser.add_argument("--test-games", type=int, default=2000, help="test games of the protocol (default 2000)")
    parser.add_argument(
        "--algorithm",
        choices=("ppo", "recurrent"),
        default="ppo",
        help="PPO (an MLP) or sb3-contrib's RecurrentPPO (an LSTM) (default ppo)",
    )
    parser.add_argument(
        "--observation", choices=("counted", "public"), default="counted", help="what the agent reads (default counted)"
    )
    parser.add_argument(
        "--inputs",
        choices=("flat", "features"),
        default="flat",
        help="the observation flattened, or the forecasters' features of it (default flat)",
    )
    parser.add_argument(
        "--reward",
        choices=("accuracy", "log", "brier"),
        default="accuracy",
        help="accuracy (a label), or a proper score of softmax(logits) (default accuracy)",
    )
    parser.add_argument(
        "--test-seed",
        type=int,
        default=TEST_SEED,
        help=f"seed of the test games (default the protocol's, {TEST_SEED}; tune on another)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds (few steps and games)")
    parser.add_argument("--out", help="write the protocol's report as JSON to this file")
    args = parser.parse_args(argv)
    args.hyperparameters = dict(HYPERPARAMETERS)
    if args.algorithm == "recurrent":
        args.hyperparameters.update(RECURRENT)
    if args.reward != "accuracy":
        args.hyperparameters["policy_kwargs"] = dict(args.hyperparameters["policy_kwargs"], log_std_init=LOG_STD_INIT)
    if args.quick:
        args.steps, args.envs, args.test_games = QUICK["steps"], QUICK["envs"], QUICK["test_games"]
        args.hyperparameters.update(QUICK["hyperparameters"])
    for name in ("steps", "envs", "test_games"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seed < 0 or args.seed <= args.test_seed < args.seed + args.envs:
        parser.error(
            f"--seed: the envs are seeded {args.seed}..{args.seed + args.envs - 1}, which must be >= 0 "
            f"and leave out the test seed {args.test_seed}"
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
    from beggar_env.forecasting import features

    forecast = "label" if args.reward == "accuracy" else "probs"
    flat = args.inputs == "flat"
    envs = sb3.make(
        args.envs, n_players=args.players, observation=args.observation, forecast=forecast, reward=args.reward,
        flatten=flat,
    )  # fmt: skip
    if not flat:
        envs = sb3.MappedObservations(envs, features.FEATURES[args.observation])
    if forecast == "probs":
        envs = sb3.LogitActions(envs)
    return VecNormalize(envs, norm_obs=True, norm_reward=False)


def linear(start):
    """A learning rate that falls linearly from ``start`` to 0 over the run (SB3 calls it
    with the fraction of the run still to go): the policy settles at the end instead of
    drifting on the noise of 0/1 rewards."""
    return lambda remaining: start * remaining


def train(args):
    envs = make_envs(args)
    hyper = dict(args.hyperparameters, learning_rate=linear(args.hyperparameters["learning_rate"]))
    if args.algorithm == "recurrent":
        from sb3_contrib import RecurrentPPO

        model = RecurrentPPO("MlpLstmPolicy", envs, seed=args.seed, device="cpu", verbose=0, **hyper)
    else:
        from stable_baselines3 import PPO

        model = PPO("MlpPolicy", envs, seed=args.seed, device="cpu", verbose=0, **hyper)
    started = time.perf_counter()
    model.learn(args.steps)
    return model, envs, time.perf_counter() - started


def forecaster(model, envs, args):
    """The policy as the protocol reads it: a batch of ``Dict`` observations -> the
    forecast (normalised as in training, without updating the scales): the action
    probabilities of a label policy, the softmax of a logit policy's mean action. A
    recurrent policy keeps its LSTM state between calls and starts it afresh for every env
    whose game begins (``cards == 0``)."""
    import torch

    from beggar_env.envs.sb3 import softmax
    from beggar_env.forecasting import features

    envs.training = False
    # SB3's wrappers hand unknown attributes down: flatten_obs is SB3VecEnv's, under any wrapper
    inputs = envs.venv.flatten_obs if args.inputs == "flat" else features.FEATURES[args.observation]
    state = {"lstm": None}

    def probs(obs):
        x = envs.normalize_obs(np.asarray(inputs(obs), np.float32))
        if args.algorithm == "recurrent":
            starts = np.asarray(obs["cards"]) == 0
            action, state["lstm"] = model.predict(x, state["lstm"], episode_start=starts, deterministic=True)
            return softmax(action)
        if args.reward != "accuracy":
            action, _ = model.predict(x, deterministic=True)
            return softmax(action)
        with torch.no_grad():
            tensor, _ = model.policy.obs_to_tensor(x)
            return model.policy.get_distribution(tensor).distribution.probs.numpy().astype(np.float64)

    return probs


def row_name(args):
    algorithm = "RecurrentPPO" if args.algorithm == "recurrent" else "PPO"
    if args.reward == "accuracy" and args.inputs == "flat" and args.algorithm == "ppo":
        return f"{algorithm} ({args.observation})"  # the first row's name
    return f"{algorithm} ({args.observation} {args.inputs}, {args.reward} reward)"


def versions():
    import gymnasium
    import numba
    import sb3_contrib
    import stable_baselines3
    import torch

    import beggar_env

    return {
        "python": platform.python_version(),
        "beggar_env": beggar_env.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
    }


def machine():
    cpu = study.run.machine()
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
    print(
        f"trained {row_name(args)} for {args.steps:,} steps in {seconds:.0f} s ({args.steps / seconds:,.0f} steps/s)",
        flush=True,
    )
    test = evaluate.TestSet.generate(args.players, args.test_games, seed=args.test_seed)
    name = row_name(args)
    report = evaluate.evaluate_policy(
        forecaster(model, envs, args), test, name=name, observation=args.observation, forecast="probs"
    )
    policy = "RecurrentPPO (sb3-contrib), MlpLstmPolicy" if args.algorithm == "recurrent" else (
        "PPO (Stable-Baselines3), MlpPolicy")  # fmt: skip
    inputs = "the flattened" if args.inputs == "flat" else "the features of the"
    actions = (
        "label actions" if args.reward == "accuracy" else "Gaussian logits (LogitActions), softmax as the forecast"
    )
    report["training"] = {
        "algorithm": f"{policy} on {inputs} {args.observation} observation, VecNormalize, {actions}",
        "command": "python studies/ppo_forecaster.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "steps": args.steps,
        "seed": args.seed,
        "envs": args.envs,
        "reward": args.reward,
        "observation": args.observation,
        "inputs": args.inputs,
        "hyperparameters": args.hyperparameters,
        "learning_rate_schedule": "linear from learning_rate to 0",
        "seconds": seconds,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(),
        "machine": machine(),
    }
    print(f"{name}, {args.players} players, {args.test_games:,} test games (seed {args.test_seed}):")
    print(headline(report))
    if args.out:
        with files.replacing(args.out) as f:
            f.write((json.dumps(report, indent=1) + "\n").encode())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

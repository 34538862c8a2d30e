"""A random forecaster for a million steps of the native vector env.

python examples/vector_million_steps.py [num_envs]
"""

import sys
import time

import gymnasium as gym
import numpy as np

import beggar_env  # noqa: F401 (registers Beggar-v0)


def main(num_envs=4096, total_steps=1_000_000):
    envs = gym.make_vec("Beggar-v0", num_envs=num_envs)
    obs, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = -(-total_steps // num_envs)
    actions = rng.integers(0, 3, (steps, num_envs))
    rewards = episodes = 0
    started = time.perf_counter()
    for t in range(steps):
        obs, reward, terminated, truncated, infos = envs.step(actions[t])
        rewards += reward.sum()
        episodes += terminated.sum()
    seconds = time.perf_counter() - started
    print(
        f"{steps * num_envs:,} env-steps in {seconds:.2f} s ({steps * num_envs / seconds / 1e6:.1f} M/s); "
        f"{episodes:,} episodes; a random forecaster's accuracy {rewards / (steps * num_envs):.3f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)

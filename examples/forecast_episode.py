"""Play one Beggar-v0 episode with a simple forecaster and show the table as text.

python examples/forecast_episode.py [seed]
"""

import sys

import gymnasium as gym

import beggar_env  # noqa: F401 (registers Beggar-v0)


def main(seed=42):
    env = gym.make("Beggar-v0", render_mode="ansi")
    obs, info = env.reset(seed=seed)
    total, terminated = 0.0, False
    while not terminated:
        action = int(obs["hand_sizes"].argmax())  # the seat with more cards in hand will win
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
    print(env.render())
    print(
        f"accuracy {total / info['cards']:.2f} over {info['cards']} steps; {info['outcome']} for seat {info['winner']}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 42)

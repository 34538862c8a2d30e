"""Train a tiny outcome predictor on a generated dataset, with numpy only.

A logistic regression on the public table (hand sizes, the pile's court cards, who is owed)
predicts whether seat 0 wins; its test accuracy is printed by how far through the game the
samples are. Run with more games for better estimates:

    python examples/train_predictor.py [n_games]
"""

import sys

import numpy as np

from beggar_env import datasets


def features(data):
    f = data.fields
    pile = f["pile"]
    courts = np.stack([(pile == c).sum(axis=1) for c in (1, 2, 3, 4)], axis=1)
    columns = [
        f["hand_sizes"] / 52,
        courts / 4,
        f["owed"][:, None] / 4,
        (f["court"] == 0)[:, None],
        (f["turn"] == 0)[:, None],
        np.ones((len(data), 1)),
    ]
    return np.hstack(columns).astype(np.float64)


def fit_logistic(x, y, steps=300, rate=0.5):
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        w -= rate * x.T @ (p - y) / len(y)
    return w


def main(n_games=20_000):
    train = datasets.generate(n_games, samples=8, seed=1)
    test = datasets.generate(n_games // 4, samples=8, seed=2)
    w = fit_logistic(features(train), (train.winner == 0).astype(float))
    hit = (features(test) @ w > 0) == (test.winner == 0)
    print(f"{len(train):,} training samples, {len(test):,} test samples; accuracy {hit.mean():.3f}")
    for low in (0.0, 0.25, 0.5, 0.75):
        part = (test.progress >= low) & (test.progress < low + 0.25)
        print(f"  progress {low:.2f}-{low + 0.25:.2f}: accuracy {hit[part].mean():.3f} ({part.sum():,} samples)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)

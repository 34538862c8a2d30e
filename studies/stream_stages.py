"""Why the stream model trains on the seat's next card first: a small model (2 blocks,
width 64, windows of 128 tokens, Adam 1e-3, no schedule) trained for 1,200 steps on fresh
random games with one of three losses, printing every 200 steps the held-out-free batch
accuracies of the seat's next card (``own``) and of the next token's face (``face``):

* ``all``: the four targets summed from the start (the copy does not begin);
* ``own``: the seat's next card alone;
* ``staged``: the seat's next card alone for 600 steps, then the four.

    python studies/stream_stages.py staged          # about 3 CPU-minutes
"""

import argparse

import numpy as np
import torch

from beggar_env.forecasting import face_streams as fs
from beggar_env.forecasting import stream_model as sm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("loss", choices=("all", "own", "staged"))
    parser.add_argument("--steps", type=int, default=1200)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = sm.StreamNet(2, width=64, layers=2, heads=4, window=128, shift=2)
    optimiser = torch.optim.Adam(model.parameters(), 1e-3)
    rng = np.random.default_rng(0)
    games = fs.random_games(2000, 2, seed=11)
    for step in range(args.steps + 1):
        batch = sm.window_batch(games, 2, 32, 128, rng)
        alone = args.loss == "own" or (args.loss == "staged" and step < 600)
        loss = sm.loss(model, batch, ("own_face",) if alone else sm.TARGETS)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % 200 == 0:
            with torch.no_grad():
                accuracy = sm.accuracies(model, batch)
            own, face = accuracy["own"], accuracy["face"]
            print(f"{args.loss} step {step}: loss {float(loss.detach()):.3f}, own {own:.3f}, face {face:.3f}")


if __name__ == "__main__":
    main()

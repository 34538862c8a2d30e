"""The step-supervised looped model (``forecasting.looped_steps``): its readouts after each
iteration, the masks of deep supervision, the segments' detached carry, halting, and the
same model and forecasts for a seed. (Its targets against the engine: test_trick_targets.)"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the looped model needs torch (pip install 'beggar-env[rl]')")
pytestmark = pytest.mark.usefixtures("torch_threads")  # torch's threads, set once for the session (conftest)

from beggar_env.forecasting import looped_steps as ls  # noqa: E402
from beggar_env.forecasting import training  # noqa: E402
from beggar_env.forecasting import trick_targets as tt  # noqa: E402


@pytest.fixture(scope="module")
def batch():
    traj = tt.game_tricks(20, 2, seed=4)
    rows, left = tt.trick_starts(traj)
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.choice(rows[left <= 2], 4, replace=False), rng.choice(rows[left > 2], 8, replace=False)])
    return ls.as_tensors(tt.targets(traj, rows, 5))


def small(seed=1, n_players=2):
    return training.seeded(seed, lambda: ls.LoopedSteps(n_players, width=16, heads=2, layers=1))


def inputs(t):
    return t["seat"][:, 0], t["depth"][:, 0], t["leader"][:, 0]


def test_a_readout_after_each_iteration(batch):
    out = small()(*inputs(batch), 3)
    assert len(out) == 4
    for r in out:
        assert r.seat.shape == (12, 52, 2) and r.depth.shape == (12, 52, 52)
        assert r.leader.shape == (12, 2) and r.halt.shape == (12,) and r.winner.shape == (12, 2)


def test_supervised_until_one_past_the_end(batch):
    left = batch["tricks_left"]
    for k in range(6):
        np.testing.assert_array_equal(ls.supervised(batch, k).numpy(), (k <= left + 1).numpy())


def test_positions_not_supervised_count_nothing(batch):
    model = small()
    k = 4  # past the end of the games with at most 2 tricks left
    r = model(*inputs(batch), k)[k]
    off = ~ls.supervised(batch, k)
    changed = {name: value.clone() for name, value in batch.items()}
    changed["seat"][off] = 1 - changed["seat"][off]
    changed["winner"][off] = 1 - changed["winner"][off]
    assert float(ls.step_loss(r, batch, k)) == pytest.approx(float(ls.step_loss(r, changed, k)))


def test_segments_carry_the_state_detached(batch):
    model = small()
    segments = ls.segments(model, batch, 5, bptt=2)
    assert len(segments) == 3  # iterations 0-1, 2-3, 4-5
    first = segments[0]()
    first.backward()
    assert model.seat.weight.grad.abs().sum() > 0
    model.zero_grad()
    segments[1]().backward()
    assert model.seat.weight.grad is None or model.seat.weight.grad.abs().sum() == 0  # the input is not reached
    assert model.blocks[0].mlp[0].weight.grad.abs().sum() > 0


def test_segments_stop_one_past_the_last_end(batch):
    short = {name: value[:3] for name, value in batch.items()}
    short["tricks_left"] = torch.tensor([1, 2, 1])
    assert len(ls.segments(small(), short, 5, bptt=1)) == 4  # iterations 0 .. 3


def test_halting_stops_the_loop(batch):
    model = small()
    with torch.no_grad():
        model.to_halt.bias.fill_(50.0)
    probs, iterations = ls.forecast(model, *inputs(batch), cap=20)
    assert (iterations == 1).all()
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    with torch.no_grad():
        model.to_halt.bias.fill_(-50.0)
    _, iterations = ls.forecast(model, *inputs(batch), cap=7)
    assert (iterations == 7).all()


def test_roll_out_and_exactness(batch):
    model = small()
    rolled = ls.roll_out(model, *inputs(batch), 5)
    assert rolled["seat"].shape == (12, 6, 52) and rolled["over"].shape == (12, 6)
    truth = {name: value.numpy() for name, value in batch.items()}
    perfect = ls.exactness(truth, truth)
    assert (perfect["cards"] == 1).all() and (perfect["through"] == 1).all()
    wrong = dict(truth, seat=truth["seat"].copy())
    wrong["seat"][0, 3, 0] = 1 - wrong["seat"][0, 3, 0]
    got = ls.exactness(wrong, truth)
    assert got["positions"][3] == pytest.approx(11 / 12) and got["positions"][4] == 1
    assert got["through"][4] == pytest.approx(11 / 12)


def test_the_same_for_a_seed(batch):
    a, b = small(seed=5), small(seed=5)
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y)
    for model in (a, b):
        optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
        for segment in ls.segments(model, batch, 4, bptt=2):
            optimiser.zero_grad()
            segment().backward()
            optimiser.step()
    np.testing.assert_array_equal(ls.forecast(a, *inputs(batch), cap=9)[0], ls.forecast(b, *inputs(batch), cap=9)[0])
    assert not torch.equal(small(seed=6).to_seat.weight, small(seed=5).to_seat.weight)


def test_three_players(batch):
    traj = tt.game_tricks(4, 3, seed=2)
    rows, _ = tt.trick_starts(traj)
    t = ls.as_tensors(tt.targets(traj, rows[:5], 2))
    model = small(n_players=3)
    assert float(sum(s().detach() for s in ls.segments(model, t, 2, bptt=3))) > 0
    probs, _ = ls.forecast(model, *inputs(t), cap=3)
    assert probs.shape == (5, 3)

"""The one training loop of the torch learners (``forecasting.training.train``): the same
weights as the plain loop each learner once wrote for itself (Adam, a schedule, clipping,
the best held-out epoch kept), the same for a seed, and its progress reports."""

import pytest

torch = pytest.importorskip("torch", reason="the training loop needs torch (pip install 'beggar-env[rl]')")
pytestmark = pytest.mark.usefixtures("torch_threads")  # torch's threads, set once for the session (conftest)

from beggar_env.forecasting import training  # noqa: E402

functional = torch.nn.functional


def toy(seed=3):
    return training.seeded(
        seed, lambda: torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    )


def data(seed, n):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=generator), torch.randint(0, 3, (n,), generator=generator)


X, Y = data(0, 64)
X_VAL, Y_VAL = data(1, 32)
EPOCHS, LR = 6, 0.05


def batches(epoch):
    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(epoch))
    return [order[lo : lo + 16] for lo in range(0, len(X), 16)]


def schedule(optimiser):
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, EPOCHS * 4, eta_min=LR / 20)


def held_out_loss(model):
    with torch.no_grad():
        return float(functional.cross_entropy(model(X_VAL), Y_VAL))


def trained_by_the_loop(**options):
    model = toy()

    def figures(epoch, _):
        return {"epoch": epoch + 1, "val_log_loss": held_out_loss(model)}

    history = training.train(
        model, batches, lambda rows: functional.cross_entropy(model(X[rows]), Y[rows]), lr=LR, epochs=EPOCHS,
        schedule=schedule, clip=0.5, figures=figures, keep_best=True, **options,
    )  # fmt: skip
    return model, history


def trained_by_hand():
    """The loop as StepModel, FullViewForecaster and SequenceForecaster each wrote it."""
    model = toy()
    optimiser = torch.optim.Adam(model.parameters(), lr=LR)
    scheduler = schedule(optimiser)
    best, best_loss, losses = None, float("inf"), []
    for epoch in range(EPOCHS):
        model.train()
        for rows in batches(epoch):
            loss = functional.cross_entropy(model(X[rows]), Y[rows])
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimiser.step()
            scheduler.step()
        model.eval()
        losses.append(held_out_loss(model))
        if losses[-1] < best_loss:
            best, best_loss = {k: v.clone() for k, v in model.state_dict().items()}, losses[-1]
    model.load_state_dict(best)
    return model, losses


def test_the_loop_trains_as_the_plain_loop_did_and_keeps_the_best_epoch():
    model, history = trained_by_the_loop()
    reference, losses = trained_by_hand()
    assert [entry["val_log_loss"] for entry in history] == losses
    assert [entry["epoch"] for entry in history] == list(range(1, EPOCHS + 1))
    for name, weights in reference.state_dict().items():
        assert torch.equal(model.state_dict()[name], weights), name
    assert not model.training
    again, _ = trained_by_the_loop()
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), model.state_dict().values()))


def test_the_loop_reports_its_progress_by_epoch_or_by_the_work_done():
    by_epoch, by_batch = [], []
    trained_by_the_loop(progress=lambda done, total: by_epoch.append((done, total)))
    assert by_epoch == [(epoch, EPOCHS) for epoch in range(1, EPOCHS + 1)]
    counted = iter(range(1, 4 * EPOCHS + 1))
    trained_by_the_loop(progress=lambda *done: by_batch.append(done), work=lambda rows: (next(counted), 4 * EPOCHS))
    assert by_batch == [(i, 4 * EPOCHS) for i in range(1, 4 * EPOCHS + 1)]
    for quiet in (False, None):
        trained_by_the_loop(progress=quiet)
    with pytest.raises(TypeError, match="progress"):
        trained_by_the_loop(progress="yes")


def test_a_training_stopped_and_resumed_from_its_checkpoint_ends_as_one_run(tmp_path):
    whole, whole_history = trained_by_the_loop()
    checkpoint = tmp_path / "checkpoint.pt"
    for epochs in (2, 5, EPOCHS):  # stopped after 2 and 5 epochs, started again each time
        resumed = toy()
        history = training.train(
            resumed, batches, lambda rows, m=resumed: functional.cross_entropy(m(X[rows]), Y[rows]), lr=LR,
            epochs=epochs, schedule=schedule, clip=0.5, keep_best=True, checkpoint=checkpoint,
            figures=lambda epoch, _, m=resumed: {"epoch": epoch + 1, "val_log_loss": held_out_loss(m)},
        )  # fmt: skip
    assert history == whole_history
    for name, value in whole.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[name])

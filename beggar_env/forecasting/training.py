"""One training loop for every torch learner of the package: the step model
(:mod:`~beggar_env.forecasting.step_model`), the networks of the full view
(:mod:`~beggar_env.forecasting.full_view`) and the sequence forecasters
(:mod:`~beggar_env.forecasting.sequence_models`).

:func:`train` holds what they share: Adam and a learning-rate schedule, epochs of batches,
gradients clipped or not, each epoch's held-out figures (the learning curve, ``history``)
and the weights of the best epoch kept, a progress bar or callback. What differs is given
to it: the batches of an epoch, the loss of a batch, the figures of an epoch. :func:`seeded`
makes a model's initial weights from a seed, so that a seed gives the same model, trained
the same way: the loop itself draws no random numbers.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import os
import sys

import numpy as np

from .. import checks, files

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.training", "a CPU-only torch build")


class torch_threads:
    """torch's intra-op threads set for a block (None: as they are), then restored."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.before = torch.get_num_threads()
        if self.n is not None:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)


def seeded(seed, build):
    """The model ``build()`` makes once torch's random numbers are seeded with ``seed``: its
    initial weights are the seed's."""
    torch.manual_seed(seed)
    return build()


class ProgressBar:
    """A training's progress bar on stderr: the work done (``unit``: games, epochs, steps) and
    each epoch's held-out log loss; shown once training takes more than :data:`DELAY`
    seconds, gone when it ends."""

    DELAY = 0.5  # seconds before the bar shows, as the command line's bars

    def __init__(self, description, unit):
        from tqdm import tqdm

        self.bar = tqdm(desc=description, unit=unit, delay=self.DELAY, file=sys.stderr, leave=False)

    def __call__(self, done, total):
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def epoch(self, epoch, epochs, loss):
        self.bar.set_postfix_str(f"epoch {epoch}/{epochs}: held-out log loss {loss:.4f}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.close()


class _Quiet:
    """No bar: a callback, or nothing."""

    def __init__(self, callback):
        self.callback = callback

    def __call__(self, done, total):
        if self.callback is not None:
            self.callback(done, total)

    def epoch(self, epoch, epochs, loss):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def progress_of(progress, description, unit):
    """What ``progress`` asks for: ``True`` a :class:`ProgressBar`; ``False`` or ``None``
    nothing; a callable is called as ``progress(done, total)``. ``TypeError`` for anything
    else."""
    if isinstance(progress, (bool, np.bool_)):
        return ProgressBar(description, unit) if progress else _Quiet(None)
    return _Quiet(checks.callback("progress", progress))


def train(
    model, batches, loss, *, lr, epochs, schedule, clip=None, figures=None, keep_best=False, progress=None,
    work=None, description="training", unit="epoch", checkpoint=None,
):  # fmt: skip
    """Train ``model`` with Adam and return its history: ``epochs`` passes over
    ``batches(epoch)``, a step of the optimiser and of the schedule on each batch's
    ``loss(batch)``; after each pass, in eval mode, ``figures(epoch, last_loss)`` (None, or a
    dict added to the history). With ``keep_best`` the model ends with the weights of the
    epoch whose ``"val_log_loss"`` was lowest; it ends in eval mode.

    Parameters
    ----------
    model : the torch module trained (its initial weights made by :func:`seeded`).
    batches : ``batches(epoch)``, an iterable of the epoch's batches.
    loss : ``loss(batch)``, the scalar tensor minimised on a batch.
    lr : Adam's learning rate.
    epochs : the passes over the batches.
    schedule : ``schedule(optimiser)``, the learning rate's scheduler, stepped once a batch.
    clip : the largest norm of the gradients (None: not clipped).
    figures : ``figures(epoch, last_loss)``, an epoch's entry of the history, or None.
    keep_best : keep the weights of the epoch with the lowest ``"val_log_loss"``.
    progress : True: a progress bar; False or None: nothing; a callable: ``progress(done, total)``.
    work : ``work(batch)``, the ``(done, total)`` of progress after a batch (None: epochs done).
    description : the progress bar's title.
    unit : the progress bar's unit.
    checkpoint : a file that holds the training after each epoch (weights, Adam's and the
        schedule's state, the history), replaced whole; when it exists, training resumes
        from it, so that a run stopped anywhere and started again ends as one run would
        have (given batches that depend on the epoch alone). None: no checkpoint.
    """
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = schedule(optimiser)
    history, best, best_loss = [], None, np.inf
    start = 0
    if checkpoint is not None:
        start, best, best_loss = resume(checkpoint, model, optimiser, scheduler, history)
    with progress_of(progress, description, unit) as shown:
        for epoch in range(start, epochs):
            model.train()
            last = None
            for batch in batches(epoch):
                last = loss(batch)
                optimiser.zero_grad()
                last.backward()
                if clip is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                optimiser.step()
                scheduler.step()
                if work is not None:
                    shown(*work(batch))
            model.eval()
            entry = None if figures is None else figures(epoch, last)
            if entry is not None:
                history.append(entry)
                if keep_best and entry["val_log_loss"] < best_loss:
                    best, best_loss = {k: v.clone() for k, v in model.state_dict().items()}, entry["val_log_loss"]
            if work is None:
                shown(epoch + 1, epochs)
            if entry is not None and "val_log_loss" in entry:
                shown.epoch(epoch + 1, epochs, entry["val_log_loss"])
            if checkpoint is not None:
                save_checkpoint(checkpoint, epoch + 1, model, optimiser, scheduler, history, best, best_loss)
    if best is not None:
        model.load_state_dict(best)
    model.eval()
    return history


def save_checkpoint(path, epochs_done, model, optimiser, scheduler, history, best=None, best_loss=np.inf):
    """The training's state after ``epochs_done`` epochs (with the best epoch's weights so
    far, if kept), the whole of ``path``."""
    state = dict(
        epochs_done=epochs_done,
        model=model.state_dict(),
        optimiser=optimiser.state_dict(),
        scheduler=scheduler.state_dict(),
        history=history,
        best=best,
        best_loss=float(best_loss),
    )
    with files.replacing(path) as f:
        torch.save(state, f)


def resume(path, model, optimiser, scheduler, history):
    """Load a checkpoint into the training's parts if ``path`` exists; the epochs it had
    done, the best epoch's weights and held-out loss (``0, None, inf`` if none)."""
    if not os.path.exists(path):
        return 0, None, np.inf
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    scheduler.load_state_dict(state["scheduler"])
    history[:] = state["history"]
    return int(state["epochs_done"]), state.get("best"), state.get("best_loss", np.inf)


def checkpoint_history(path) -> list:
    """The history a training's checkpoint holds so far ([] when there is none yet)."""
    if not os.path.exists(path):
        return []
    return torch.load(path, map_location="cpu", weights_only=True)["history"]


def save_run(folder, model, **record):
    """A finished training's files in ``folder``: ``history.json`` (``record``, the
    versions of beggar-env, torch and Python added) and ``model.pt`` (:func:`save_model`)."""
    import platform

    from .. import __version__

    versions = {"beggar_env": __version__, "torch": torch.__version__, "python": platform.python_version()}
    files.write_json(os.path.join(folder, "history.json"), {**record, "versions": versions})
    save_model(os.path.join(folder, "model.pt"), model)


def save_model(path, model):
    """A trained model's settings (``model.settings``, its constructor's arguments) and
    weights, the whole of ``path``."""
    with files.replacing(path) as f:
        torch.save({"settings": model.settings, "weights": model.state_dict()}, f)


def load_model(folder, model_class, build):
    """A run's model in eval mode: its ``model.pt`` (:func:`save_model`) made again as
    ``model_class``, or, while it trains, ``build()`` with its ``checkpoint.pt``'s weights."""
    folder = os.fspath(folder)
    saved_path, checkpoint = os.path.join(folder, "model.pt"), os.path.join(folder, "checkpoint.pt")
    if os.path.exists(saved_path):
        saved = torch.load(saved_path, map_location="cpu", weights_only=True)
        model, weights = model_class(**saved["settings"]), saved["weights"]
    else:
        model, weights = build(), torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]
    model.load_state_dict(weights)
    return model.eval()

"""The progress of :func:`beggar_env.forecasting.evaluate` over its phases (the test set
made, the forecasts, the reference's seat prior and Bayes forecaster, the report's
figures): a bar on a terminal, nothing elsewhere, or the caller's own callback."""

import sys

import numpy as np

from .. import checks


class Phases:
    """:func:`evaluate`'s progress over its phases (the test set made, the forecasts, the
    reference's seat prior and Bayes forecaster, the report's figures). ``progress``: None
    (a tqdm bar on stderr when stderr is a terminal, else nothing), True (a bar), False
    (nothing), or a callable ``progress(phase, done, total)``, called with ``done = 0`` as
    each phase starts and ``done = total`` as it ends. Use it as a context manager; a
    :class:`Phases` given as ``progress`` is used as it is."""

    DELAY = 0.5  # seconds before a phase's bar shows, as the command line's bars

    def __new__(cls, progress=None):
        if isinstance(progress, Phases):
            return progress
        return super().__new__(cls)

    def __init__(self, progress=None):
        if progress is self:
            return
        if progress is not None and not isinstance(progress, (bool, np.bool_)) and not callable(progress):
            raise TypeError(
                f"progress must be None (a bar on a terminal), True, False or a callable progress(phase, done, "
                f"total), not {type(progress).__name__} {checks.excerpt(progress)}"
            )
        self.call = progress if callable(progress) else None
        self.bars = self.call is None and (bool(progress) if progress is not None else _stderr_is_a_terminal())
        self.bar = None

    def phase(self, name, total):
        """The start of phase ``name`` (of ``total`` steps); its ``report(done, total)``
        callback, or None when nothing is shown."""
        self.close()
        if self.call is not None:
            self.call(name, 0, total)
            return lambda done, of: self.call(name, done, of)
        if not self.bars:
            return None
        from tqdm import tqdm

        self.bar = bar = tqdm(total=total, desc=name, file=sys.stderr, leave=False, delay=self.DELAY)

        def report(done, of):
            bar.total = of
            bar.update(done - bar.n)

        return report

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _stderr_is_a_terminal():
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False

"""What a forecaster or a policy hands the protocol, checked before it is scored: its
player count, the methods a forecaster with a memory needs, forecasts that are
probabilities, a policy's actions. Anything else is a ``TypeError`` or ``ValueError``
saying what is wrong and where (the first wrong row), never a figure."""

import numbers

import numpy as np

from .. import checks


def check_players(forecaster, test=None):
    """A forecaster's ``n_players`` (if it has one) is the test set's (if given): ``TypeError``
    for one that is not a player count at all (``"2"``), ``ValueError`` for another one."""
    if not hasattr(forecaster, "n_players"):
        return
    n_players = forecaster.n_players
    if not checks.is_integer(n_players):
        raise TypeError(
            f"the forecaster's n_players must be an int (2, 3 or 4), not {type(n_players).__name__} "
            f"{checks.excerpt(n_players)}"
        )
    if test is not None and n_players != test.n_players:
        raise ValueError(
            f"the forecaster's n_players is {n_players}, but the test set is of {test.n_players}-player games"
        )


def check_recurrent(forecaster):
    """A forecaster with a memory (``recurrent = True``) has ``reset_state()`` and ``act(obs, forecast)``."""
    missing = [name for name in ("reset_state", "act") if not callable(getattr(forecaster, name, None))]
    if missing:
        raise TypeError(
            f"the forecaster has recurrent=True, so evaluate plays it step by step in the env: it needs "
            f"{' and '.join(f'{name}()' for name in missing)} (see beggar_env.forecasting.forecasters.Forecaster), "
            f"which {type(forecaster).__name__} lacks"
        )


SUM_TOLERANCE = 1e-4  # how far from 1 a row of forecast probabilities may sum (float32 rounding: about 1e-7)


def check_forecasts(probs, n, n_outcomes, weights=False, who="predict_proba"):
    """Forecasts of ``n`` positions as float64 rows of ``n_outcomes`` probabilities:
    finite real numbers in [0, 1], each row summing to 1 within :data:`SUM_TOLERANCE`
    (``weights``: finite numbers >= 0, as a ``"probs"`` action of the env may be, with a
    finite positive sum). ``ValueError`` saying which row is wrong."""
    try:
        raw = np.asarray(probs)
    except (TypeError, ValueError):
        raw = np.asarray(object())
    what = "weights" if weights else "probabilities"
    if raw.dtype.kind == "O" and raw.ndim == 2:  # Python numbers (not strings numpy would read as numbers)
        if all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in raw.flat):
            try:
                raw = raw.astype(np.float64)
            except (OverflowError, TypeError, ValueError):  # an int too large for a float: not a probability
                pass
    if raw.dtype.kind not in "iuf":  # not strings that numpy would read as numbers, not complex, not True
        got = f"an array of {raw.dtype}" if raw.ndim else checks.excerpt(probs).replace("\n", " ")
        raise ValueError(f"{who} must return real numbers ({what}), not {got}")
    if raw.shape != (n, n_outcomes):
        raise ValueError(f"{who} must return shape ({n}, {n_outcomes}): one row per position, got {raw.shape}")
    probs = raw.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        sums = probs.sum(axis=1)  # infinite where a row overflows: 1.5e308 + 1.5e308
    if weights:
        bad = ~np.isfinite(probs).all(axis=1) | (probs < 0).any(axis=1) | ~np.isfinite(sums) | (sums <= 0)
        rule = "finite weights >= 0 with a finite sum > 0"
    else:
        bad = ~np.isfinite(probs).all(axis=1) | (probs < 0).any(axis=1) | (probs > 1).any(axis=1)
        bad |= ~(np.abs(sums - 1) <= SUM_TOLERANCE)
        rule = f"probabilities in [0, 1] summing to 1 (within {SUM_TOLERANCE:g})"
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{who} must return {rule} in each row; row {row} is {checks.excerpt(raw[row].tolist())}"
            + (f" ({int(bad.sum()):,} rows are wrong)" if bad.sum() > 1 else "")
        )
    return probs


def check_actions(actions, n, n_outcomes, forecast):
    """A policy's actions for ``n`` envs: labels (ints 0 .. n_outcomes - 1) or probability rows."""
    what = f"a policy (an object without predict_proba, not a forecaster) must return {n} actions, one per env"
    try:
        actions = np.asarray(actions)
    except (TypeError, ValueError):
        raise ValueError(f"{what}, not {checks.excerpt(actions)}") from None
    if forecast == "probs":
        if actions.shape != (n, n_outcomes) or not np.issubdtype(actions.dtype, np.number):
            raise ValueError(f"{what}: rows of {n_outcomes} probabilities, not {checks.excerpt(actions)}")
        return check_forecasts(actions, n, n_outcomes, weights=True, who="a policy")
    if (
        actions.shape != (n,)
        or not np.issubdtype(actions.dtype, np.integer)
        or not ((actions >= 0) & (actions < n_outcomes)).all()
    ):
        raise ValueError(f"{what}: labels 0 to {n_outcomes - 1}, not {checks.excerpt(actions)}")
    return actions

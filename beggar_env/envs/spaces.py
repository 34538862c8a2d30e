"""What ``Beggar-v0`` and its vector env take and show, in Gymnasium's terms: the
observation and action spaces, and the checks of what a step (the forecasts) and a
reset (a deal) are given, each refused in one line that names the argument.

The layout, the settings and the compiled kernels that these describe are the task's
(:mod:`beggar_env.task`); an observation row is exactly what
``gymnasium.spaces.flatten`` makes of the ``Dict`` space here.
"""

import numpy as np
from gymnasium import spaces

from .. import checks, core, deals, faces
from ..deals import parse_deal
from ..task import PILE_SLOTS


def observation_space(layout, batch_shape=()):
    """The Gymnasium ``Dict`` space of a :class:`~beggar_env.task.Layout`'s observations
    (``batch_shape`` in front of each field's shape)."""
    return spaces.Dict(  # plain ints: Gymnasium before 1.3 refuses an IntEnum (Card.ACE) as a bound
        {
            name: spaces.Box(int(low), int(high), batch_shape + shape, np.int32)
            for name, shape, low, high in layout.fields
        }
    )


def action_space(config):
    """The action space of an env of ``config``: a label (a seat, or no winner), or a
    weight per outcome."""
    if config.forecast == "label":
        return spaces.Discrete(config.n_outcomes)
    return spaces.Box(0.0, 1.0, (config.n_outcomes,), np.float32)


def check_deal(config, deal, name="options['deal']"):
    """``deal`` parsed, for the envs of ``config``; errors name it ``name`` (where the caller gave it)."""
    try:
        deal = parse_deal(deal)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name}: {error}") from None
    if deal.n_players != config.n_players:
        raise ValueError(f"{name}: the deal has {deal.n_players} players, the env n_players={config.n_players}")
    if deal.n_cards > PILE_SLOTS:
        raise ValueError(f"{name}: the deal has {deal.n_cards} cards; the env plays at most {PILE_SLOTS}")
    return deal


def dealt(config, deal):
    """A checked deal (:func:`check_deal`) as the reset kernels take it: ``core.given_deals``
    of it alone, and its faces (``faces.deal_faces``; none without the faces view)."""
    cards, hand_sizes = deals.pack_deals([deal])
    given = np.zeros((1, 0), np.int8)
    if config.faces:
        given = faces.given_faces([faces.deal_faces(deal)], cards.shape[1])
    return core.given_deals(cards, hand_sizes), given


def forecasts(config, actions, n_envs, name="actions"):
    """Actions of ``n_envs`` envs of ``config`` as the kernels take them: (labels, probs);
    labels -1 when probs are used. ``ValueError`` naming ``name`` (the step's argument) for
    anything else."""
    raw = np.asarray(actions) if not isinstance(actions, (str, bytes, dict)) else np.asarray(object())
    if config.forecast == "label":
        shapes = ((), (1,)) if n_envs == 1 else ((n_envs,),)
        if raw.shape not in shapes or not np.issubdtype(raw.dtype, np.integer):
            what = "an int" if n_envs == 1 else f"an array of {n_envs} ints, one per env, each"
            raise ValueError(
                f"{name}: a 'label' forecast is {what} in 0..{config.n_players} (a seat, or {config.n_players} "
                f"for no winner), got {checks.excerpt(actions)}"
            )
        labels = np.ascontiguousarray(raw.reshape(n_envs), dtype=np.int64)
        if ((raw.reshape(n_envs) < 0) | (raw.reshape(n_envs) > config.n_players)).any():
            raise ValueError(
                f"{name}: a 'label' forecast is a seat 0..{config.n_players - 1} or {config.n_players} "
                f"(no winner), got {checks.excerpt(actions)}"
            )
        return labels, np.zeros((n_envs, config.n_outcomes))
    shape = (config.n_outcomes,) if n_envs == 1 else (n_envs, config.n_outcomes)
    if raw.dtype.kind not in "iuf":  # not '2' (a string numpy would read as a number), not True
        raise ValueError(f"{name}: a 'probs' forecast is numbers (weights), got {checks.excerpt(actions)}")
    if raw.shape not in (shape, (n_envs, config.n_outcomes)):
        raise ValueError(
            f"{name}: a 'probs' forecast has shape {shape}: one weight per seat and one for "
            f"no winner{' in each env' if n_envs > 1 else ''}; got shape {raw.shape}"
        )
    probs = np.ascontiguousarray(raw, dtype=np.float64).reshape(n_envs, config.n_outcomes)  # the kernels' type
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise ValueError(f"{name}: a 'probs' forecast must be finite and >= 0, got {checks.excerpt(actions)}")
    with np.errstate(over="ignore"):
        sums = probs.sum(axis=1)
    if (sums <= 0).any():
        raise ValueError(f"{name}: a 'probs' forecast must not be all zero")
    if not np.isfinite(sums).all():  # [1.5e308, 1.5e308, 0] was scored as if its weights were 0
        raise ValueError(
            f"{name}: a 'probs' forecast's weights must add up to a finite number, got {checks.excerpt(actions)}"
        )
    return np.full(n_envs, -1, np.int64), probs

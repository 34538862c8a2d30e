"""Seeded runs of ``Beggar-v0`` as Minari datasets, for offline RL and imitation: :func:`record`.

Needs Minari with its tools for creating datasets and its Arrow storage, whose Pillow and
pyarrow Minari does not declare: ``pip install 'minari[create,arrow]' pillow``.
Nothing else in the package imports this module.
"""

import gymnasium as gym

from .. import checks
from .wrappers import EveryStepInfo

INSTALL = "pip install 'minari[create,arrow]' pillow"


def require_minari(data_format="arrow"):
    """Minari, or ``ImportError`` in one line saying how to install what it needs (for the
    ``arrow`` format, pyarrow and Pillow too: Minari imports them only when it writes)."""
    try:
        import minari
        from minari import DataCollector  # noqa: F401

        if data_format == "arrow":
            import PIL  # noqa: F401
            import pyarrow  # noqa: F401
    except ImportError as error:
        raise ImportError(f"recording Minari datasets needs {error.name or 'Minari'}: {INSTALL}") from None
    return minari


def record(
    dataset_id: str, policy, episodes: int, *, seed=0, data_format="arrow", description=None, metadata=None, **options
):
    """Play ``episodes`` episodes of ``gym.make("Beggar-v0", **options)`` with ``policy``
    (a callable: observation -> action, e.g. a forecaster's ``act``) and save them as the
    Minari dataset ``dataset_id`` (``"beggar/most-cards-v0"``: Minari's ``namespace/name-vN``).

    Episode ``i`` is dealt by ``reset(seed=seed + i)`` (Minari records each episode's
    seed): the same dataset for the same arguments. Every step's info is recorded, with
    the same keys at every step (:class:`~beggar_env.envs.wrappers.EveryStepInfo`).
    ``metadata`` goes to Minari's ``create_dataset`` (``author``, ``author_email``,
    ``code_permalink``, ...: Minari warns when they are missing). Returns the
    ``minari.MinariDataset``; ``minari.load_dataset(dataset_id)`` reads it back.

    Parameters
    ----------
    dataset_id : Minari's ``namespace/name-vN``.
    policy : a callable, observation -> action.
    episodes : the episodes recorded.
    seed : the seed of the first episode's reset.
    data_format : Minari's storage, ``"arrow"`` or ``"hdf5"``.
    description : the dataset's description (None: one made from the episodes, options and seed).
    metadata : more of Minari's ``create_dataset`` arguments (``author``, ...).
    **options : ``gym.make("Beggar-v0", ...)``'s keywords.
    """
    minari = require_minari(data_format)
    episodes = checks.count("episodes", episodes, 1)
    first = checks.integer("seed", seed, 0, checks.MAX_SEED - episodes + 1)
    if not callable(policy):
        raise TypeError(f"policy must be a callable, observation -> action, not {type(policy).__name__}")
    env = minari.DataCollector(
        EveryStepInfo(gym.make("Beggar-v0", **options)), record_infos=True, data_format=data_format
    )
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=first + episode)
            over = False
            while not over:
                obs, _, terminated, truncated, _ = env.step(policy(obs))
                over = terminated or truncated
        name = getattr(policy, "name", None) or getattr(getattr(policy, "__self__", None), "name", None)
        return env.create_dataset(
            dataset_id=dataset_id,
            algorithm_name=name or getattr(policy, "__name__", type(policy).__name__),
            description=description or f"{episodes} episodes of Beggar-v0({_arguments(options)}) from seed {seed}",
            eval_env=env.spec,  # the env it was recorded in: Minari warns without one
            **(metadata or {}),
        )
    finally:
        env.close()


def _arguments(options):
    return ", ".join(f"{name}={value!r}" for name, value in options.items())

"""Wrappers of ``Beggar-v0`` for tools with their own conventions: :class:`EveryStepInfo`."""

import gymnasium as gym
import numpy as np

from .infos import CYCLE_INFO


class EveryStepInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``Beggar-v0`` with the same info keys, of the same types, at every step.

    The env gives the end facts (``outcome``, ``winner``, ``hand_sizes`` and, for a cycle,
    the four ``cycle_*`` figures) on the step that ends an episode, as Gymnasium's own
    wrappers add theirs. Tools that store every step's info as columns need every key at
    every step (Minari's ``DataCollector(record_infos=True)``): this wrapper gives them,
    with placeholders until the end: ``outcome`` ``"running"``, ``winner`` -1,
    ``hand_sizes`` the hands now, and -1 for each cycle figure (also at the end of an
    episode that is not a cycle, as the engine's result records have it).

    It wraps the env itself (its ``Dict`` observation), inside any observation wrapper.
    """

    PLACEHOLDERS = {"outcome": "running", "winner": -1, **dict.fromkeys(CYCLE_INFO, -1)}

    def __init__(self, env):
        gym.utils.RecordConstructorArgs.__init__(self)  # so that gym.make(spec) makes it again (Minari does)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.observation_space, gym.spaces.Dict) or "hand_sizes" not in env.observation_space.spaces:
            raise TypeError("EveryStepInfo wraps Beggar-v0 itself (its Dict observation), inside observation wrappers")

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, self._every_key(obs, info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._every_key(obs, info)

    def _every_key(self, obs, info):
        return {**self.PLACEHOLDERS, "hand_sizes": np.asarray(obs["hand_sizes"], np.int64), **info}

"""The Gymnasium environments: ``Beggar-v0`` and its native vector env, thin wrappers
around the compiled task kernels (:mod:`beggar_env.task`).

* :mod:`~beggar_env.envs.env`: :class:`BeggarEnv`, ``gym.make("Beggar-v0")``; its
  docstring is the env's manual (``help(beggar_env.envs.BeggarEnv)``);
* :mod:`~beggar_env.envs.vector`: :class:`BeggarVectorEnv`, ``gym.make_vec("Beggar-v0")``,
  every env stepped in one compiled call;
* :mod:`~beggar_env.envs.spaces`: the observation and action spaces, and the checks of
  what a step (the forecasts) and a reset (a deal) are given;
* :mod:`~beggar_env.envs.infos`: what a game that ended says, batched, and one env's info;
* :mod:`~beggar_env.envs.render`: the ``ansi`` and ``rgb_array`` pictures of a table;
* :mod:`~beggar_env.envs.wrappers`: :class:`EveryStepInfo`, every info key at every step;
* :mod:`~beggar_env.envs.sb3`: the vector env as a Stable-Baselines3 ``VecEnv`` (needs
  ``pip install 'beggar-env[rl]'``), and :mod:`~beggar_env.envs.minari`: seeded runs as
  Minari datasets (needs ``pip install 'minari[create]'``); both imported only when asked for.
"""

from .env import BeggarEnv, make
from .vector import BeggarVectorEnv
from .wrappers import EveryStepInfo

__all__ = ["BeggarEnv", "BeggarVectorEnv", "EveryStepInfo", "make"]

"""Stable-Baselines3 on the native vector env: :class:`SB3VecEnv`.

SB3 trains on its own ``VecEnv`` API, not on Gymnasium's vector envs. ``SB3VecEnv`` wraps
``gym.make_vec("Beggar-v0", num_envs=N, autoreset_mode="SameStep", ...)`` (every env
stepped in one compiled call) and speaks SB3's API, exactly as SB3's ``DummyVecEnv``
over ``N`` single ``Beggar-v0`` envs seeded alike would (the tests check it step by step):

* ``reset() -> obs``; ``step(actions) -> obs, rewards (float32), dones, infos``, where
  ``infos`` is a list of one dict per env: the single env's info, ``"TimeLimit.truncated"``,
  and, on the step that ends an episode, ``"terminal_observation"`` (the last observation;
  ``obs`` holds the next episode's first: SB3's auto-reset, the native same-step autoreset);
  ``reset_infos`` holds each env's last reset info;
* ``seed(s)`` seeds env ``i`` with ``s + i`` at the next reset, as ``DummyVecEnv`` does,
  and ``set_options({"deal": ...})`` (one for every env) plays given deals at the next reset.

Observations are flattened by default into one int32 vector per env, exactly as
Gymnasium's ``FlattenObservation`` flattens the single env's ``Dict`` (fields in the
space's sorted key order): SB3's ``MlpPolicy`` then reads them and its rollout buffer
stores one array. With ``flatten=False`` they stay the ``Dict`` for ``MultiInputPolicy``,
which flattens each field and concatenates them anyway (no field here is an image), at
the cost of a buffer and a preprocessing pass per field.

``LogitActions`` lets PPO's Gaussian actions be a calibrated forecast: the policy acts
with unbounded logits, the wrapper hands their softmax to an env made with
``forecast="probs"``, and a proper scoring reward (``reward="log"``) makes the
probabilities that maximise the expected reward the true ones.

Needs Stable-Baselines3 and torch: ``pip install 'beggar-env[rl]'``. Nothing else in the
package imports this module.
"""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from .. import checks

try:
    from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
except ImportError as exc:  # pragma: no cover (the tests of this module skip without SB3)
    raise ImportError(f"beggar_env.envs.sb3 needs Stable-Baselines3 and torch: {checks.install_hint('rl')}") from exc

_FINALS = ("final_obs", "final_info")


def make(num_envs: int, *, flatten: bool = True, **options) -> "SB3VecEnv":
    """``SB3VecEnv(gym.make_vec("Beggar-v0", num_envs=num_envs, autoreset_mode="SameStep",
    **options))``: the options are ``Beggar-v0``'s (``n_players``, ``observation``, ...)."""
    import beggar_env  # noqa: F401 (registers Beggar-v0)

    if "autoreset_mode" in options:
        raise ValueError("SB3VecEnv sets autoreset_mode='SameStep' itself (SB3's auto-reset); do not pass it")
    return SB3VecEnv(
        gym.make_vec("Beggar-v0", num_envs=num_envs, autoreset_mode="SameStep", **options), flatten=flatten
    )


class SB3VecEnv(VecEnv):
    """A Gymnasium vector env with same-step autoreset (``gym.make_vec("Beggar-v0", ...,
    autoreset_mode="SameStep")``), as an SB3 ``VecEnv``: see the module docstring.

    ``venv`` is the wrapped vector env. Its envs have no separate objects: ``get_attr``
    gives the vector env's attribute for each env (``observation_space`` and
    ``action_space``: one env's), ``set_attr`` sets it for all envs at once, and
    ``env_method`` knows ``"render"`` only.
    """

    def __init__(self, venv: VectorEnv, flatten: bool = True):
        if not isinstance(venv, VectorEnv):
            raise TypeError(
                f"SB3VecEnv wraps a Gymnasium vector env (gym.make_vec('Beggar-v0', ...)), not {type(venv).__name__}"
            )
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3VecEnv needs a vector env with autoreset_mode='SameStep' (SB3 resets an env on the step that "
                f"ends its episode), this one has {getattr(mode, 'value', mode)!r}: "
                "use beggar_env.envs.sb3.make(...) or gym.make_vec('Beggar-v0', ..., autoreset_mode='SameStep')"
            )
        self.venv = venv
        self.flatten = checks.boolean("flatten", flatten)
        self._dict_space = venv.single_observation_space
        if not isinstance(self._dict_space, spaces.Dict):
            raise TypeError(f"SB3VecEnv wraps a vector env of Dict observations, not {self._dict_space}")
        self._keys = list(self._dict_space.keys())
        obs_space = spaces.flatten_space(self._dict_space) if self.flatten else self._dict_space
        super().__init__(venv.num_envs, obs_space, venv.single_action_space)
        self._actions = None

    # ------------------------------------------------------------- SB3's API

    def reset(self):
        obs, infos = self.venv.reset(seed=self._reset_seed(), options=self._reset_deals())
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = _unbatch(infos, self.num_envs)
        return self._batch_obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        if actions is None:  # None is how step_wait knows that no actions wait
            raise TypeError(f"actions must be the {self.num_envs} envs' actions (an array, one per env), not None")
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("call step_async(actions) before step_wait()")
        actions, self._actions = self._actions, None  # taken: a refused action is not tried again
        obs, rewards, terminated, truncated, infos = self.venv.step(actions)
        dones = terminated | truncated
        out = _unbatch(infos, self.num_envs)
        for info, cut in zip(out, (truncated & ~terminated).tolist()):
            info["TimeLimit.truncated"] = cut
        for i in np.flatnonzero(dones).tolist():
            self.reset_infos[i] = {k: v for k, v in out[i].items() if k != "TimeLimit.truncated"}
            out[i] = {
                **_unbatch_one(infos["final_info"], i),
                "TimeLimit.truncated": out[i]["TimeLimit.truncated"],
                "terminal_observation": self._one_obs(infos["final_obs"][i]),
            }
        return self._batch_obs(obs), np.asarray(rewards, np.float32), dones, out

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name in ("observation_space", "action_space"):
            value = getattr(self, attr_name)  # one env's, as the policy sees it
        else:
            value = getattr(self.venv, attr_name)  # shared by every env
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        if len(self._indices(indices)) != self.num_envs:
            raise ValueError(
                f"set_attr({attr_name!r}): the native vector env's envs share their attributes; set it for all "
                "envs (indices=None)"
            )
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name != "render" or method_args or method_kwargs:
            raise NotImplementedError(
                f"env_method({method_name!r}): the native vector env steps its envs together and has no per-env "
                "methods; only 'render' (without arguments) is available here (call others on .venv)"
            )
        renders = self.venv.render()
        return [None if renders is None else renders[i] for i in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices=None) -> list[bool]:
        """No env is wrapped, except that flattened observations are those of
        ``FlattenObservation``: True for it (and its bases) when ``flatten``."""
        wrapped = self.flatten and issubclass(gym.wrappers.FlattenObservation, wrapper_class)
        return [wrapped for _ in self._indices(indices)]

    def get_images(self) -> list[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            return [None] * self.num_envs
        return list(self.venv.render())

    # ------------------------------------------------------------ helpers

    def flatten_obs(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """A batch of this env's ``Dict`` observations as ``FlattenObservation`` flattens each."""
        return flatten_obs(self._dict_space, obs)

    def _batch_obs(self, obs):
        if self.flatten:
            return self.flatten_obs(obs)
        return {k: obs[k] for k in self._keys}

    def _one_obs(self, obs):
        if self.flatten:
            return spaces.flatten(self._dict_space, obs)
        return {k: obs[k] for k in self._keys}

    def _indices(self, indices) -> list[int]:
        return list(self._get_indices(indices))

    def seed(self, seed=None):
        """Seed env ``i`` with ``seed + i`` at the next reset (SB3's rule), every one of them
        a seed of ``reset`` (0 .. 2**64-1: a numpy ``uint64`` would wrap past it to 0)."""
        if seed is not None:
            seed = checks.integer("seed", seed, 0, checks.MAX_SEED - (self.num_envs - 1))
        return super().seed(seed)

    def _reset_seed(self):
        seeds = self._seeds
        if all(s is None for s in seeds):
            return None
        if any(s is None for s in seeds):
            raise ValueError("seed every env or none: seed(s) seeds env i with s + i")
        return list(seeds)

    def _reset_deals(self):
        options = self._options
        if not any(options):
            return None
        if any(set(o) != {"deal"} for o in options):
            raise ValueError(
                "set_options: SB3VecEnv takes {'deal': deal} for every env (the native vector env deals all its envs"
                " at a reset), got " + repr(options)[:200]
            )
        return {"deals": [o["deal"] for o in options]}


class LogitActions(VecEnvWrapper):
    """An SB3 ``VecEnv`` made with ``forecast="probs"``, acting with logits: the policy's
    action is ``n_outcomes`` real numbers (``Box(-bound, bound)``, which SB3 clips a
    Gaussian action to), and the env is stepped with their softmax. Use
    :func:`softmax` to read a policy's deterministic action as its forecast."""

    def __init__(self, venv: VecEnv, bound: float = 20.0):
        space = venv.action_space
        if not (isinstance(space, spaces.Box) and space.shape == (space.shape[0],) and (space.low == 0).all()):
            raise ValueError(
                f"LogitActions wraps an env made with forecast='probs' (Box(0, 1) actions), not one acting in {space}"
            )
        bound = checks.number("bound", bound, 0, strict=True)
        logits = spaces.Box(-bound, bound, space.shape, np.float32)
        super().__init__(venv, action_space=logits)

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(softmax(actions))

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        return self.venv.step_wait()


class MappedObservations(VecEnvWrapper):
    """An SB3 ``VecEnv`` of ``Dict`` observations (``flatten=False``) whose policy reads
    ``fn(obs)`` instead: ``fn`` maps a batch of observations (a dict of fields with a
    leading batch axis) to a float matrix, one row per env, e.g. the forecasters'
    features (``beggar_env.forecasting.features.counted_features``). Terminal observations
    are mapped too."""

    def __init__(self, venv: VecEnv, fn):
        if not callable(fn):
            raise TypeError(f"fn must be a callable (observations -> a matrix), not {type(fn).__name__}")
        self.fn = fn
        space = venv.observation_space
        if not isinstance(space, spaces.Dict):
            raise TypeError(f"MappedObservations wraps an env of Dict observations (flatten=False), not {space}")
        probe = self._map_one(space.sample())
        super().__init__(venv, observation_space=spaces.Box(-np.inf, np.inf, probe.shape, np.float32))

    def _map(self, obs, n):
        out = np.asarray(self.fn(obs), np.float32)
        if out.ndim != 2 or len(out) != n:
            raise ValueError(f"fn must map {n} observations to a matrix of {n} rows, not shape {out.shape}")
        return out

    def _map_one(self, obs):
        """One env's observation (no batch axis), mapped as a batch of one."""
        return self._map({k: np.asarray(v)[None] for k, v in obs.items()}, 1)[0]

    def reset(self):
        return self._map(self.venv.reset(), self.num_envs)

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        for i in np.flatnonzero(dones).tolist():
            infos[i]["terminal_observation"] = self._map_one(infos[i]["terminal_observation"])
        return self._map(obs, self.num_envs), rewards, dones, infos


def softmax(logits) -> np.ndarray:
    """Rows of logits as rows of probabilities (float64, each summing to 1)."""
    x = np.asarray(logits, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def flatten_obs(space: spaces.Dict, obs: dict[str, np.ndarray]) -> np.ndarray:
    """A batch of ``Dict`` observations of ``space`` (one env's space; a leading batch axis
    on every field, as the vector env gives them) flattened row by row as Gymnasium's
    ``FlattenObservation`` flattens one: the fields in the space's key order."""
    keys = list(space.keys())
    n = len(obs[keys[0]])
    dtype = np.result_type(*(space[k].dtype for k in keys))
    return np.concatenate([np.reshape(obs[k], (n, -1)) for k in keys], axis=1, dtype=dtype)


def _unbatch(infos: dict, n: int) -> list[dict]:
    """Gymnasium's batched infos (each key with a ``_key`` mask) as one dict per env,
    valued as the single env gives them (Python scalars; arrays stay arrays)."""
    out = [{} for _ in range(n)]
    for key, values in infos.items():
        if key.startswith("_") or key in _FINALS:
            continue
        mask = infos["_" + key]
        if isinstance(values, dict):
            for i in np.flatnonzero(mask).tolist():
                out[i][key] = _unbatch_one(values, i)
        elif values.ndim == 1 and values.dtype != object and mask.all():
            for info, value in zip(out, values.tolist()):  # cards and tricks, every step: kept cheap
                info[key] = value
        else:
            for i in np.flatnonzero(mask).tolist():
                value = values[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out


def _unbatch_one(infos: dict, i: int) -> dict:
    """Env ``i``'s info from batched infos."""
    out = {}
    for key, values in infos.items():
        if key.startswith("_") or not infos["_" + key][i]:
            continue
        value = _unbatch_one(values, i) if isinstance(values, dict) else values[i]
        out[key] = value.item() if isinstance(value, np.generic) else value
    return out

"""The native vector env of ``Beggar-v0``: every env's step in one compiled call."""

from collections.abc import Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .. import checks, core, task
from ..jit import PARALLEL
from ..task import Autoreset
from . import kernels, spaces
from .env import RENDER_MODES, BeggarEnv
from .infos import end_info

AUTORESET_MODES = {
    AutoresetMode.NEXT_STEP: Autoreset.NEXT_STEP,
    AutoresetMode.SAME_STEP: Autoreset.SAME_STEP,
    AutoresetMode.DISABLED: Autoreset.DISABLED,
}


class BeggarVectorEnv(VectorEnv):
    """``num_envs`` Beggar-My-Neighbour games stepped together by the compiled engine.

    Made by ``gym.make_vec("Beggar-v0", num_envs=N, **options)``; it takes the options of
    :class:`beggar_env.envs.BeggarEnv` (see its manual) and behaves exactly like ``N`` of
    those envs, with these differences of form:

    * observations, rewards and flags are batched (a leading axis of size ``num_envs``);
      actions are an array of ``num_envs`` labels, or of ``num_envs`` probability rows;
    * ``reset(seed=s)``: an int seeds env ``i``'s stream of random deals with
      ``core.stream_key(s, i)`` (so env ``i`` deals exactly as a single env reset with
      that seed would), a list gives one seed per env; ``options={"deals": [...]}``
      plays the given deals, one per env (strings or ``Deal``); ``options={"reset_mask":
      mask}`` resets only the envs where ``mask`` is True;
    * ``autoreset_mode`` (``"NextStep"`` by default, ``"SameStep"`` or ``"Disabled"``,
      see Gymnasium's vector API): with next-step autoreset, the step after an episode
      ends deals the env anew (its action is ignored, its reward 0); with same-step
      autoreset the new deal's observation is returned at once and the last one is in
      ``info["final_obs"]`` and ``info["final_info"]``;
    * infos are dicts of arrays, each key with a ``_key`` mask, as ``SyncVectorEnv``
      would build them from the single envs' infos;
    * ``copy`` (True by default): every reset and step returns new observation arrays. With
      ``copy=False`` they are views of one buffer that the next reset or step overwrites, as
      with Gymnasium's ``SyncVectorEnv(copy=False)``: for callers that copy what they keep
      (a rollout buffer), and faster with many envs, where fresh memory at every step costs
      as much as the step itself on some machines.

    The per-env work of a step (scoring, playing, observing, dealing anew) runs in one
    parallel compiled call over all envs.
    """

    metadata = {
        **BeggarEnv.metadata,
        "render_modes": [mode for mode in BeggarEnv.metadata["render_modes"] if mode in RENDER_MODES],  # not "human"
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        n_players: int = 2,
        step_unit: str = "card",
        observation: str = "public",
        forecast: str = "label",
        reward: str = "accuracy",
        max_cards: int | None = None,
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        faces: bool = False,
    ):
        num_envs = checks.count("num_envs", num_envs, 1)
        checks.memory(
            num_envs * task.env_bytes(int(n_players) if checks.is_integer(n_players) and 2 <= n_players <= 4 else 4),
            f"num_envs={num_envs:,} envs",
            "make fewer envs",
        )
        if not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"copy must be True or False, not {type(copy).__name__}")
        if not isinstance(autoreset_mode, AutoresetMode):
            checks.choice("autoreset_mode", autoreset_mode, [mode.value for mode in AutoresetMode])
            autoreset_mode = AutoresetMode(autoreset_mode)
        if render_mode is not None and not isinstance(render_mode, str):
            raise TypeError(
                f"render_mode must be None or one of {', '.join(map(repr, RENDER_MODES))}, "
                f"not {type(render_mode).__name__}"
            )
        self.config = task.EnvConfig(
            n_players, step_unit, observation, forecast, reward, max_cards, render_mode, RENDER_MODES, faces
        )
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.autoreset_mode = autoreset_mode
        self.copy = checks.boolean("copy", copy)
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:  # asked for without Pillow
            self.metadata["render_modes"] = [*self.metadata["render_modes"], render_mode]
        self._autoreset = AUTORESET_MODES[autoreset_mode]
        self._settings = self.config.settings(self._autoreset)
        self.single_observation_space = spaces.observation_space(self.config.layout)
        self.observation_space = spaces.observation_space(self.config.layout, (self.num_envs,))
        self.single_action_space = spaces.action_space(self.config)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._arrays = kernels.new_envs(self.num_envs, self.config.n_players, self.config.faces)
        self._states, self._ahead, self._progress, self._results, self._envs, _ = self._arrays
        self._final_results = np.zeros_like(self._results)
        self._obs = np.zeros((self.num_envs, self.config.layout.size), np.int32)
        self._final_obs = np.zeros_like(self._obs)
        self._all = np.ones(self.num_envs, np.bool_)
        self._seeded = False
        self._started = False

    # ------------------------------------------------------------------ reset

    def reset(self, *, seed=None, options=None):
        options = checks.options("options", options)
        deals = options.pop("deals", None)
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"options: unknown reset options {sorted(options)}; known: 'deals', 'reset_mask'")
        mask = self._check_mask(mask)
        if seed is not None or not self._seeded:
            self._seed(seed, mask)
        obs = self._obs.copy() if self.copy else self._obs  # envs outside reset_mask keep their observation
        if deals is None:
            with PARALLEL:
                kernels.reset_random_parallel(*self._arrays, mask, self._settings, obs)
        else:
            self._deal(deals, mask, obs)
        self._obs = obs
        self._started = True
        return self.config.layout.split(obs), self._infos(mask)

    def _check_mask(self, mask):
        if mask is None:
            return np.ones(self.num_envs, np.bool_)
        mask = np.asarray(mask)
        if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
        if not self._started and not mask.all():
            raise ValueError("the first reset must reset every env (no reset_mask, or an all-True one)")
        return mask

    def _seed(self, seed, mask):
        if isinstance(seed, np.ndarray) and seed.ndim == 0:  # one seed, as a 0-d array
            seed = seed.item()
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} seeds, got {len(seed)}")
            seeds = np.array([checks.seed(s) for s in seed], np.uint64)
        else:
            seeds = core.stream_keys(checks.seed(seed), self.num_envs)
        self._envs["seed"][mask] = seeds[mask]
        self._envs["episode"][mask] = 0
        self._seeded = True

    def _deal(self, deals, mask, obs):
        if isinstance(deals, str) or not isinstance(deals, (Sequence, np.ndarray)) or np.ndim(deals) != 1:
            raise TypeError(
                f"options['deals'] must be a list of {self.num_envs} deals (one per env), not {type(deals).__name__}"
            )
        if len(deals) != self.num_envs:
            raise ValueError(f"options['deals'] must give one deal per env ({self.num_envs}), got {len(deals)}")
        c = self.config
        chosen = {
            i: spaces.check_deal(c, deals[i], f"options['deals'][{i}]") for i in np.flatnonzero(mask)
        }  # before any is dealt
        for i, deal in chosen.items():
            kernels.reset_dealt(*self._arrays, i, *spaces.dealt(c, deal), self._settings, obs)

    # ------------------------------------------------------------------- step

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        labels, probs = spaces.forecasts(self.config, actions, self.num_envs)
        obs = np.empty_like(self._obs) if self.copy else self._obs  # the kernel writes every row
        with PARALLEL:
            if self.config.faces:
                kernels.step_faces_view_parallel(*self._arrays, labels, probs, *self._step_rest(obs))
            else:  # the step without faces takes no face rows
                kernels.step_parallel(*self._arrays[:5], labels, probs, *self._step_rest(obs))
        self._obs = obs
        terminated = self._envs["terminated"].astype(np.bool_)
        infos = self._infos(self._all)
        if self._autoreset == Autoreset.SAME_STEP and terminated.any():
            infos.update(self._same_step_finals(terminated))
        truncated = np.zeros(self.num_envs, np.bool_)
        return self.config.layout.split(obs), self._envs["reward"].copy(), terminated, truncated, infos

    def _step_rest(self, obs):
        return self._settings, obs, self._final_obs, self._final_results

    # ------------------------------------------------------------------ infos

    def _infos(self, selected):
        """The info of the ``selected`` envs: ``cards`` and ``tricks``, and the end facts
        of those whose game is over (just ended, or over from its deal)."""
        infos = {
            "cards": self._states["cards"].astype(np.int64),
            "_cards": selected.copy(),
            "tricks": self._states["tricks"].astype(np.int64),
            "_tricks": selected.copy(),
        }
        infos.update(end_info(self._results, selected & (self._states["status"] != core.Outcome.RUNNING)))
        return infos

    def _same_step_finals(self, ended):
        final_obs = np.full(self.num_envs, None, object)
        for i in np.flatnonzero(ended):  # only the envs that ended this step, as the single env gives them
            final_obs[i] = self.config.layout.split(self._final_obs[i].copy())
        final_info = {
            "cards": np.where(ended, self._final_results["cards"], 0),
            "_cards": ended.copy(),
            "tricks": np.where(ended, self._final_results["tricks"], 0),
            "_tricks": ended.copy(),
            **end_info(self._final_results, ended),
        }
        return {
            "final_obs": final_obs,
            "_final_obs": ended.copy(),
            "final_info": final_info,
            "_final_info": ended.copy(),
        }

    # ----------------------------------------------------------------- render

    def render(self):
        if self.render_mode is None:
            return None
        from . import render

        tables = self.config.layout.split(self._obs)
        draw = render.text_table if self.render_mode == "ansi" else render.draw_table
        return tuple(draw({name: tables[name][i] for name in tables}) for i in range(self.num_envs))

"""The native vector env of ``Beggar-v0``: every env's step in one compiled call."""

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import core, task
from .deals import as_seed
from .env import EnvConfig, check_choice

AUTORESET_MODES = {
    AutoresetMode.NEXT_STEP: task.NEXT_STEP,
    AutoresetMode.SAME_STEP: task.SAME_STEP,
    AutoresetMode.DISABLED: task.DISABLED,
}


class BeggarVectorEnv(VectorEnv):
    """``num_envs`` Beggar-My-Neighbour games stepped together by the compiled engine.

    Made by ``gym.make_vec("Beggar-v0", num_envs=N, **options)``; it takes the options of
    :class:`beggar_env.env.BeggarEnv` (see its manual) and behaves exactly like ``N`` of
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
      would build them from the single envs' infos.

    The per-env work of a step (scoring, playing, observing, dealing anew) runs in one
    parallel compiled call over all envs.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs=1, n_players=2, step_unit="card", observation="public", forecast="label",
                 reward="accuracy", max_cards=None, render_mode=None, autoreset_mode=AutoresetMode.NEXT_STEP):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, not {num_envs!r}")
        if not isinstance(autoreset_mode, AutoresetMode):
            check_choice("autoreset_mode", autoreset_mode, [mode.value for mode in AutoresetMode])
            autoreset_mode = AutoresetMode(autoreset_mode)
        self.config = EnvConfig(n_players, step_unit, observation, forecast, reward, max_cards, render_mode,
                                self.metadata["render_modes"])
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.autoreset_mode = autoreset_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self._autoreset = AUTORESET_MODES[autoreset_mode]
        self._settings = self.config.step_settings(self._autoreset)
        self.single_observation_space = self.config.layout.space()
        self.observation_space = self.config.layout.space((self.num_envs,))
        self.single_action_space = self.config.action_space()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._states, self._ahead, self._results, self._envs = task.new_envs(self.num_envs, self.config.n_players)
        self._final_results = np.zeros_like(self._results)
        self._obs = np.zeros((self.num_envs, self.config.layout.size), np.int32)
        self._final_obs = np.zeros_like(self._obs)
        self._all = np.ones(self.num_envs, np.bool_)
        self._seeded = False
        self._started = False

    # ------------------------------------------------------------------ reset

    def reset(self, *, seed=None, options=None):
        options = dict(options or {})
        deals = options.pop("deals", None)
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; known: 'deals', 'reset_mask'")
        mask = self._check_mask(mask)
        if seed is not None or not self._seeded:
            self._seed(seed, mask)
        obs = self._obs.copy()  # envs outside reset_mask keep their observation
        if deals is None:
            task.reset_random_parallel(self._states, self._ahead, self._results, self._envs, mask,
                                       self.config.max_cards, self.config.full, obs)
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
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} seeds, got {len(seed)}")
            seeds = np.array([as_seed(s) for s in seed], np.uint64)
        else:
            seeds = core.stream_keys(as_seed(seed), self.num_envs)
        self._envs["seed"][mask] = seeds[mask]
        self._envs["episode"][mask] = 0
        self._seeded = True

    def _deal(self, deals, mask, obs):
        if isinstance(deals, str) or len(deals) != self.num_envs:
            raise ValueError(f"options['deals'] must give one deal per env ({self.num_envs})")
        c = self.config
        chosen = {i: c.check_deal(deals[i]) for i in np.flatnonzero(mask)}  # all checked before any is dealt
        for i, deal in chosen.items():
            task.reset_dealt(self._states, self._ahead, self._results, self._envs, i, deal.classes(),
                             np.array(deal.hand_sizes, np.int32), c.max_cards, c.full, obs)

    # ------------------------------------------------------------------- step

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        labels, probs = self.config.forecasts(actions, self.num_envs)
        obs = np.empty_like(self._obs)
        task.step_parallel(self._states, self._ahead, self._results, self._envs, labels, probs, self._settings, obs,
                           self._final_obs, self._final_results)
        self._obs = obs
        terminated = self._envs["terminated"].astype(np.bool_)
        infos = self._infos(self._all)
        if self._autoreset == task.SAME_STEP and terminated.any():
            infos.update(self._same_step_finals(terminated))
        truncated = np.zeros(self.num_envs, np.bool_)
        return self.config.layout.split(obs), self._envs["reward"].copy(), terminated, truncated, infos

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
        infos.update(self._end_infos(selected & (self._states["status"] != core.RUNNING), self._results))
        return infos

    def _end_infos(self, ended, results):
        """The end-of-game keys for the envs in ``ended``, read from ``results``."""
        if not ended.any():
            return {}
        n = self.num_envs
        outcome = np.full(n, None, object)
        outcome[ended] = np.array(core.OUTCOMES, object)[results["outcome"][ended]]
        infos = {"outcome": outcome, "_outcome": ended}
        winner = np.zeros(n, np.int64)
        winner[ended] = results["winner"][ended]
        hand_sizes = np.zeros((n, self.config.n_players), np.int64)
        hand_sizes[ended] = results["hand_sizes"][ended]
        infos.update(winner=winner, _winner=ended, hand_sizes=hand_sizes, _hand_sizes=ended)
        cycles = ended & (results["outcome"] == core.CYCLE)
        if cycles.any():
            for name in ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks"):
                values = np.zeros(n, np.int64)
                values[cycles] = results[name][cycles]
                infos[name], infos["_" + name] = values, cycles
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
            **self._end_infos(ended, self._final_results),
        }
        return {"final_obs": final_obs, "_final_obs": ended.copy(), "final_info": final_info,
                "_final_info": ended.copy()}

    # ----------------------------------------------------------------- render

    def render(self):
        if self.render_mode is None:
            return None
        from . import render

        tables = self.config.layout.split(self._obs)
        draw = render.text_table if self.render_mode == "ansi" else render.draw_table
        return tuple(draw({name: tables[name][i] for name in tables}) for i in range(self.num_envs))

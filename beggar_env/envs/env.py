"""``Beggar-v0``: the Gymnasium environment for forecasting the winner."""

import gymnasium as gym
import numpy as np

from .. import checks, task
from ..core import Outcome
from ..jit import argument_types, bind
from . import kernels, spaces
from .infos import end_info, unbatched
from .render import pillow_installed

_ONE = np.ones(1, np.bool_)
_PLAIN_INTS = (int, np.int64)
RENDER_MODES = ("ansi", "rgb_array")  # accepted always: SB3's make_vec_env asks for rgb_array whatever it needs
SINGLE_RENDER_MODES = ("human", *RENDER_MODES)  # one env's: "human" shows its own table (not the vector env's)


def make(render_mode: str | None = None, **options) -> "BeggarEnv":
    """``Beggar-v0``'s entry point: checks ``render_mode`` before Gymnasium reads it (a
    render mode that is not a string would otherwise fail inside ``gymnasium.make``)."""
    if render_mode is not None and not isinstance(render_mode, str):
        raise TypeError(
            f"render_mode must be None or one of {', '.join(map(repr, SINGLE_RENDER_MODES))}, "
            f"not {type(render_mode).__name__} {checks.excerpt(render_mode)}"
        )
    return BeggarEnv(render_mode=render_mode, **options)


class BeggarEnv(gym.Env):
    """Beggar-My-Neighbour, played out while the agent forecasts who will win.

    ## Description
    Beggar-My-Neighbour (``docs/RULES.md`` in the project) is a card game without decisions: once
    the cards are dealt, the game plays itself. The agent watches the table as the players
    see it and, at every step, forecasts the outcome: which seat will win, or that nobody
    will (a game that never ends, or a draw at the agreed time limit). The game is played
    by the project's compiled rules engine, exactly as the deal says.

    ## Action space
    With ``forecast="label"``: ``Discrete(n_players + 1)``, a seat, or ``n_players`` for
    "no winner". With ``forecast="probs"``: ``Box(0, 1, (n_players + 1,), float32)``,
    weights over the same outcomes, normalised by the env (they must not all be zero).

    ## Observation space
    A ``Dict`` of int32 arrays, new on every call. Its keys are sorted by name, as
    Gymnasium's ``Dict`` keeps them, and this table lists them in that order: it is the
    order of every flat row of the package (``gymnasium.spaces.flatten``,
    ``FlattenObservation``, ``beggar_env.envs.sb3.make``, the vector env's rows and every
    dataset row, whose columns are named ``alive_0 .. pile_51 .. turn``: one layout).
    ``observation="public"`` fields are what players at the table see;
    ``observation="counted"`` adds what a perfect card-counter knows from the public history
    (``docs/forecasting.md``); ``observation="full"`` adds every hand, which makes the
    outcome computable (for oracle baselines); ``faces=True`` adds, at any level, the cards'
    faces (below). In ``known``, a card dealt to a hand and not yet seen is -2; a card it
    took from a pile shows its class.

    | key | shape | level | meaning |
    |---|---|---|---|
    | ``alive`` | (n_players,) | all | 1 for seats still in the game |
    | ``cards`` | () | all | cards played so far |
    | ``court`` | () | all | the seat that laid the last court card, -1 if none |
    | ``hand_faces`` | (n_players, 52) | full, faces | every hand's faces from the top, -1 after the last card |
    | ``hand_sizes`` | (n_players,) | all | cards in each hand |
    | ``hands`` | (n_players, 52) | full | every hand's classes from the top, -1 after the last card |
    | ``known`` | (n_players, 52) | counted | every hand from the top: -2 not yet seen, else its class, -1 after it |
    | ``owed`` | () | all | cards still owed to ``court`` (0: none) |
    | ``pile`` | (52,) | all | the pile in play order: 0 numeral, 1 J, 2 Q, 3 K, 4 A; -1 = empty slot |
    | ``pile_faces`` | (52,) | faces | the pile's faces in play order, -1 after the last card |
    | ``pile_size`` | () | all | cards in the pile |
    | ``played`` | () | faces | the face of the card just played (-1 before the first card) |
    | ``tricks`` | () | all | piles taken so far |
    | ``turn`` | () | all | the seat to play next |
    | ``unseen`` | (5,) | counted | how many cards of each class nobody has seen yet |

    **Faces.** At a real table every card shows its face, one of 52; the rules need only
    its class. With ``faces=True`` the observation shows the faces too, as ids 0..51,
    ``rank * 4 + suit`` (ranks 2..A as 0..12, suits C D H S as 0..3;
    ``beggar_env.faces.FACE_NAMES[f]`` names face ``f``, ``beggar_env.core.CLASS_OF_CARD_ID[f]``
    gives its class, always the class shown beside it). A random deal's faces are its shuffled
    deck's cards (the same seed, the same faces); a given deal's are the faces its cards name
    (``"10H"``), the others by the fixed rule of ``beggar_env.faces.deal_faces``. ``played``
    matters because a card that completes a payment is taken with the pile at once and never
    lies on it: ``pile`` and ``pile_faces`` do not show it, ``played`` does. With
    ``step_unit="trick"``, ``played`` is the trick's last card. Faces are public at a real
    table, so this is a view, not a leak: every game, outcome, reward, info and every other
    field is the same with faces and without (tested).

    ## Rewards
    Every step scores the forecast against the true outcome at once (a dense reward):
    the game is deterministic, so the env knows the outcome from the start (it plays the
    deal ahead at reset, which costs microseconds). ``reward="accuracy"``: 1 if the most
    probable outcome is the true one, else 0. ``"brier"``: minus the squared error of the
    probabilities (0 at best, -2 at worst). ``"log"``: the log probability given to the
    true outcome, clipped at log(1e-6) so it is always finite (0 at best). A label
    forecast counts as probability 1 on that label. Always naming the true outcome earns
    the maximum reward at every step.

    ## Starting state
    A shuffled standard deck dealt one card at a time from seat 0 (so with 3 players
    seat 0 holds 18 cards), drawn from the env's seeded generator; or the deal given as
    ``reset(options={"deal": ...})`` (a string in any notation ``parse_deal`` reads, or a
    ``Deal``, with ``n_players`` hands and at most 52 cards), played exactly as given.

    ## Episode end
    Each step plays one card (``step_unit="card"``) or one trick (``"trick"``: until the
    pile is taken or the game ends). The episode terminates when a player holds every
    card, when the game is found never to end (at the first repeated trick-start
    position: outcome "cycle"), or at the agreed time limit ``max_cards`` (most cards in
    hand wins, a tie is a draw). Episodes are never truncated by the env. A game can be
    over at reset (one hand holds every card): the first step then scores the forecast
    and terminates.

    ## Info
    ``cards`` and ``tricks`` played at every step; when the episode ends also
    ``outcome`` ("win", "cycle" or "limit"), ``winner`` (a seat, or -1 for none: a cycle
    or a draw; an int always, so that vector envs can batch it), ``hand_sizes``
    and, for a cycle, ``cycle_start_cards``, ``cycle_start_tricks``, ``cycle_cards`` and
    ``cycle_tricks``, as Gymnasium's wrappers add their keys at the end.
    ``beggar_env.envs.EveryStepInfo`` gives every key at every step, with placeholders
    until the end, for tools that need them (Minari's ``DataCollector(record_infos=True)``).

    ## Arguments
    ``gym.make("Beggar-v0", n_players=2, step_unit="card", observation="public",
    forecast="label", reward="accuracy", max_cards=None, render_mode=None, faces=False)``;
    ``observation`` is ``"public"``, ``"counted"`` or ``"full"`` (above); ``faces`` (True or
    False) adds the cards' faces to any of them (above);
    ``render_mode`` is ``"human"`` (the text table printed on standard output at every
    ``reset`` and ``step``, at most ``metadata["render_fps"]`` (4) steps a second: a game at
    a pace one can follow; ``render()`` prints it again and returns None), ``"ansi"`` (the
    text table, returned) or ``"rgb_array"`` (a picture of the table: hands as card backs
    with their counts, the pile face up, the honour owed; drawn with Pillow, the ``render``
    extra: ``pip install '.[render]'`` in a checkout; without it the env is made and played,
    ``render()`` says how to install it, and ``metadata`` lists ``"human"`` and ``"ansi"``
    alone, so that ``check_env`` checks what can be drawn). ``gymnasium.wrappers.RecordVideo``
    films ``"rgb_array"`` (it writes with moviepy: the ``video`` extra); the vector env draws
    ``"ansi"`` and ``"rgb_array"``, one table per env. ``max_cards`` is None or
    0 .. 2**63-1. ``gym.make_vec("Beggar-v0", num_envs=N)`` gives the native vector env.

    ## Version history
    * v0: initial version; the ``faces`` option (a view: every game and reward unchanged)
      added later, off by default.
    """

    metadata = {
        "render_modes": list(SINGLE_RENDER_MODES if pillow_installed() else SINGLE_RENDER_MODES[:2]),
        "render_fps": 4,
    }

    def __init__(
        self,
        n_players: int = 2,
        step_unit: str = "card",
        observation: str = "public",
        forecast: str = "label",
        reward: str = "accuracy",
        max_cards: int | None = None,
        render_mode: str | None = None,
        faces: bool = False,
    ):
        self.config = task.EnvConfig(
            n_players, step_unit, observation, forecast, reward, max_cards, render_mode, SINGLE_RENDER_MODES, faces
        )
        self.render_mode = render_mode
        self._terminal = None  # render_mode="human": its frames' pace (render.Terminal), made at the first frame
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:  # asked for without Pillow
            self.metadata = {**self.metadata, "render_modes": [*self.metadata["render_modes"], render_mode]}
        self.observation_space = spaces.observation_space(self.config.layout)
        self.action_space = spaces.action_space(self.config)
        arrays = kernels.new_envs(1, self.config.n_players, self.config.faces)
        self._states, self._ahead, self._progress, self._results, self._envs, self._faces = arrays
        self._obs = np.zeros((1, self.config.layout.size), np.int32)
        self._labels = np.zeros(1, np.int64)  # this step's forecast: a label, or -1 and probs
        self._probs = np.zeros((1, self.config.n_outcomes))
        self._settings = self.config.settings()
        self._label_forecast = self.config.forecast == "label"
        self._n_players = self.config.n_players
        self._split = self.config.layout.split
        self._bind_views()
        self._seeded = False
        self._started = self._playing = False

    _VIEWS = (
        "_arrays",
        "_cards",
        "_tricks",
        "_status",
        "_reward",
        "_terminated",
        "_row",
        "_step_args",
        "_step_kernel",
        "_step_types",
    )

    def _bind_views(self):
        self._arrays = (self._states, self._ahead, self._progress, self._results, self._envs, self._faces)
        self._row = self._obs[0]
        face_rows = (self._faces,) if self.config.faces else ()  # the step without faces takes none
        self._step_args = (
            *self._arrays[:5],
            *face_rows,
            self._labels,
            self._probs,
            self._settings,
            self._obs,
            self._obs,
            self._results,
        )
        self._step_kernel = self._step_types = None  # bound at the first step
        self._cards, self._tricks, self._status = (self._states[name] for name in ("cards", "tricks", "status"))
        self._reward, self._terminated = self._envs["reward"], self._envs["terminated"]

    def __getstate__(self):  # views (and the compiled kernel) do not survive a copy: rebind them
        state = self.__dict__.copy()
        for name in self._VIEWS:
            del state[name]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._bind_views()

    def reset(self, *, seed=None, options=None):
        if (
            seed is not None
        ):  # the package's one seed rule (numpy ints too), before Gymnasium's, which takes Python ints
            seed = int(checks.seed(seed))
        super().reset(seed=seed)
        options = checks.options("options", options)
        deal = options.pop("deal", None)
        if options:
            raise ValueError(f"options: unknown reset options {sorted(options)}; the only option is 'deal'")
        c = self.config
        if seed is not None or not self._seeded:  # a new stream of deals
            self._envs["seed"][0] = checks.seed(seed if seed is not None else self.np_random)
            self._envs["episode"][0] = 0
            self._seeded = True
        if deal is None:
            kernels.reset_random(*self._arrays, _ONE, self._settings, self._obs)
        else:
            dealt, given = spaces.dealt(c, spaces.check_deal(c, deal))
            kernels.reset_dealt(*self._arrays, 0, dealt, given, self._settings, self._obs)
        self._started = self._playing = True
        if self.render_mode == "human":
            self._show(paced=False)
        return self._observation(), self._info(self._status[0] != Outcome.RUNNING)

    def step(self, action):
        if not self._playing:
            raise RuntimeError("the episode has ended: call reset()" if self._started else "call reset() before step()")
        if self._label_forecast and type(action) in _PLAIN_INTS and 0 <= action <= self._n_players:
            self._labels[0] = action  # the common case, kept cheap
        else:
            self._labels[:], self._probs[:] = spaces.forecasts(self.config, action, 1, name="action")
        if self._step_kernel is None:
            self._step_kernel, self._step_types = bind(
                kernels.step_faces_view if self.config.faces else kernels.step, self._step_args
            )
        self._step_kernel(*self._step_args)
        over = self._terminated.item(0) != 0
        self._playing = not over
        if self.render_mode == "human":
            self._show(paced=True)
        return self._observation(), self._reward.item(0), over, False, self._info(over)

    def bound_step_types_match(self):
        """Whether the step's buffers still have the types its bound kernel was compiled
        for (the bound kernel skips numba's checks; see ``jit.bind``). For tests."""
        return self._step_types is None or argument_types(self._step_args) == self._step_types

    def _observation(self):
        return self._split(self._row.copy())

    def _info(self, over):
        info = {"cards": self._cards.item(0), "tricks": self._tricks.item(0)}
        if over:
            info.update(unbatched(end_info(self._results, _ONE)))
        return info

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() was called without a render_mode; pass render_mode= to gym.make")
            return None
        from . import render

        if self.render_mode == "human":
            return self._show(paced=False)
        table = self.config.layout.split(self._obs[0])
        if self.render_mode == "ansi":
            return render.text_table(table)
        return render.draw_table(table)

    def _show(self, paced):
        """``render_mode="human"``: print the table; ``paced`` (a step's), not sooner than
        ``1 / render_fps`` seconds after the last."""
        from . import render

        if self._terminal is None:
            self._terminal = render.Terminal(self.metadata["render_fps"])
        self._terminal.show(render.text_table(self.config.layout.split(self._obs[0])), paced)

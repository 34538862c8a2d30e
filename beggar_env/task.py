"""The forecasting task, shared by the single env, the vector env and the datasets: the
options (:class:`EnvConfig`), the observation layout, the scoring of forecasts, and the
compiled pieces their kernels share: the observation writer and the faces view's deal and
step (the envs' own reset and step kernels are :mod:`beggar_env.envs.kernels`).

The kernels drive the rules through :mod:`beggar_env.core` only (and the faces through
:mod:`beggar_env.faces`). An observation is one flat int32 row; the
Gymnasium ``Dict`` observation is a set of views of that row (see :class:`Layout`). The
Gymnasium pieces (the spaces, the checks of actions and deals, the infos) are the envs'
(:mod:`beggar_env.envs.spaces`, :mod:`beggar_env.envs.infos`): nothing here imports
Gymnasium.
"""

import itertools
import math
from enum import IntEnum

import numba
import numpy as np

from . import checks, core, faces
from .core import Card, Outcome
from .jit import jit

PILE_SLOTS = 52  # env deals hold at most 52 cards
EMPTY = -1  # an unused pile or hand slot; also "nobody" for the court seat
UNKNOWN = -2  # a card that a card-counter has not seen (observation="counted")
INT32_MAX = np.iinfo(np.int32).max
LOG_FLOOR = 1e-6  # the log score of a forecast is clipped at log(1e-6), so it stays finite
CAPACITY = core.capacity_for(PILE_SLOTS)
LAST_FACE = faces.N_FACES - 1


def names(enum):
    """The option names of an enum's members: ``("accuracy", "brier", "log")``."""
    return tuple(member.name.lower() for member in enum)


class Reward(IntEnum):
    ACCURACY = 0
    BRIER = 1
    LOG = 2


class StepUnit(IntEnum):
    CARD = 0
    TRICK = 1


class Observation(IntEnum):
    PUBLIC = 0  # the table as the players see it
    FULL = 1  # and every hand
    COUNTED = 2  # and what a perfect card-counter knows of every hand


class Forecast(IntEnum):
    LABEL = 0
    PROBS = 1


class Autoreset(IntEnum):
    DISABLED = 0
    NEXT_STEP = 1
    SAME_STEP = 2


REWARDS, STEP_UNITS, OBSERVATIONS, FORECASTS = names(Reward), names(StepUnit), names(Observation), names(Forecast)


class Field(IntEnum):
    """The observation fields, in the order they lie in a row: sorted by name, the order in
    which Gymnasium's ``Dict`` space keeps its keys, so that a row is exactly what
    ``gymnasium.spaces.flatten`` (and ``FlattenObservation``) makes of the ``Dict``."""

    ALIVE = 0
    CARDS = 1
    COURT = 2
    HAND_FACES = 3  # faces=True with observation="full" only
    HAND_SIZES = 4
    HANDS = 5  # observation="full" only
    KNOWN = 6  # observation="counted" only
    OWED = 7
    PILE = 8
    PILE_FACES = 9  # faces=True only
    PILE_SIZE = 10
    PLAYED = 11  # faces=True only
    TRICKS = 12
    TURN = 13
    UNSEEN = 14  # observation="counted" only


def slot_names(name, shape):
    """The names of a field's slots in a row: ``name`` for a scalar, ``name_i`` or
    ``name_i_j`` per slot (``pile_0 .. pile_51``, ``hands_1_7``)."""
    if shape == ():
        return [name]
    return [f"{name}_{'_'.join(map(str, index))}" for index in itertools.product(*map(range, shape))]


class Layout:
    """Where each observation field lies in the flat int32 row.

    Public fields: ``hand_sizes``, ``pile`` (card classes in play order, -1 after the
    last card), ``pile_size``, ``turn`` (the seat to play), ``owed`` (cards still owed),
    ``court`` (the seat owed them, -1 if none), ``alive`` (1 for seats still in),
    ``cards`` and ``tricks`` (played so far). ``full`` adds ``hands``: every hand's classes
    from the top, -1 after its last card. ``counted`` adds what a perfect card-counter
    knows from the public history: ``known``, every hand from the top with -2 for a card
    dealt to it and not yet seen, the class of a card it took from a pile, -1 after its
    last card; and ``unseen``, how many cards of each class nobody has seen yet.

    ``faces=True`` adds, at any level, the cards' faces (0..51, ``rank * 4 + suit``, see
    :mod:`beggar_env.faces`): ``pile_faces``, the pile's faces in play order (-1 after the
    last card), and ``played``, the face of the card just played (-1 before the first),
    which shows the card that completes a payment and is taken at once, never lying on the
    pile; with ``full``, ``hand_faces``: every hand's faces from the top, -1 after the last.

    The fields lie in :class:`Field` order, sorted by name as Gymnasium's ``Dict`` space
    sorts its keys: a row equals ``gymnasium.spaces.flatten(space, obs)`` of its ``Dict``
    observation (:func:`beggar_env.envs.spaces.observation_space`), and :attr:`columns`
    names its slots. ``offsets[field]`` is where one starts in the row (-1: not in this
    layout).
    """

    def __init__(self, n_players, observation="public", faces=False):
        p = n_players
        level = Observation[checks.choice("observation", observation, OBSERVATIONS).upper()]
        self.faces = checks.boolean("faces", faces)
        declared = [
            (Field.ALIVE, (p,), 0, 1),
            (Field.CARDS, (), 0, INT32_MAX),
            (Field.COURT, (), EMPTY, p - 1),
            (Field.HAND_SIZES, (p,), 0, PILE_SLOTS),
            (Field.OWED, (), 0, Card.ACE),
            (Field.PILE, (PILE_SLOTS,), EMPTY, Card.ACE),
            (Field.PILE_SIZE, (), 0, PILE_SLOTS),
            (Field.TRICKS, (), 0, INT32_MAX),
            (Field.TURN, (), 0, p - 1),
        ]
        if level == Observation.FULL:
            declared.append((Field.HANDS, (p, PILE_SLOTS), EMPTY, Card.ACE))
        if level == Observation.COUNTED:
            declared.append((Field.KNOWN, (p, PILE_SLOTS), UNKNOWN, Card.ACE))
            declared.append((Field.UNSEEN, (core.N_CLASSES,), 0, PILE_SLOTS))
        if self.faces:
            declared.append((Field.PILE_FACES, (PILE_SLOTS,), EMPTY, LAST_FACE))
            declared.append((Field.PLAYED, (), EMPTY, LAST_FACE))
            if level == Observation.FULL:
                declared.append((Field.HAND_FACES, (p, PILE_SLOTS), EMPTY, LAST_FACE))
        declared.sort(key=lambda entry: entry[0])
        self.observation = level
        self.fields = [(field.name.lower(), shape, low, high) for field, shape, low, high in declared]
        self.offsets = np.full(len(Field), -1, np.int64)
        self.slices = {}
        start = 0
        for field, shape, _, _ in declared:
            size = math.prod(shape)
            self.offsets[field] = start
            self.slices[field.name.lower()] = (slice(start, start + size), shape)
            start += size
        self.size = start
        self.columns = [column for name, shape, _, _ in self.fields for column in slot_names(name, shape)]
        self._row_index = [  # (k, ...) gives a 0-d view where row[k] would give a scalar
            (name, (cut.start, Ellipsis) if shape == () else cut) for name, (cut, shape) in self.slices.items()
        ]
        self._matrices = [name for name, (_, shape) in self.slices.items() if len(shape) > 1]

    def split(self, rows):
        """The fields of flat rows (shape ``(..., size)``) as a dict of views."""
        lead = rows.shape[:-1]
        if lead:
            return {name: rows[..., cut].reshape(lead + shape) for name, (cut, shape) in self.slices.items()}
        # One row, on every env step: precomputed indices, a reshape only for 2-d fields.
        fields = {name: rows[index] for name, index in self._row_index}
        for name in self._matrices:
            fields[name] = fields[name].reshape(self.slices[name][1])
        return fields


SETTINGS_DTYPE = np.dtype(
    [
        ("reward", np.int8),  # a Reward
        ("step_unit", np.int8),  # a StepUnit
        ("autoreset", np.int8),  # an Autoreset
        ("observation", np.int8),  # an Observation level
        ("faces", np.int8),  # 1: the faces view (the kernels keep and show the cards' faces)
        ("max_cards", np.int64),  # the agreed limit (core.NO_LIMIT: none)
    ],
    align=True,
)


class EnvConfig:
    """The options of ``Beggar-v0``, its vector env and the datasets, checked once.

    Parameters
    ----------
    n_players : seats at the table (2 to 4)
    step_unit : ``"card"`` or ``"trick"``
    observation : ``"public"``, ``"counted"`` or ``"full"``
    forecast : ``"label"`` or ``"probs"``
    reward : ``"accuracy"``, ``"brier"`` or ``"log"``
    max_cards : the agreed limit (None: none)
    render_mode : the render mode asked for, or None
    render_modes : the render modes the env offers
    faces : whether observations show the cards' faces (:class:`Layout`)
    """

    def __init__(
        self,
        n_players=2,
        step_unit="card",
        observation="public",
        forecast="label",
        reward="accuracy",
        max_cards=None,
        render_mode=None,
        render_modes=(),
        faces=False,
    ):
        self.n_players = checks.n_players(n_players)
        self.step_unit = checks.choice("step_unit", step_unit, STEP_UNITS)
        self.observation = checks.choice("observation", observation, OBSERVATIONS)
        self.forecast = checks.choice("forecast", forecast, FORECASTS)
        self.reward = checks.choice("reward", reward, REWARDS)
        self.max_cards = checks.limit("max_cards", max_cards)
        if render_mode is not None:  # "rgb_array" draws with Pillow: render() says when it is missing, not the env
            checks.choice("render_mode", render_mode, render_modes)
        self.render_mode = render_mode
        self.faces = checks.boolean("faces", faces)
        self.layout = Layout(self.n_players, self.observation, self.faces)
        self.n_outcomes = self.n_players + 1

    def settings(self, autoreset=Autoreset.DISABLED):
        """The settings record that the kernels take (an array of one)."""
        settings = np.zeros(1, SETTINGS_DTYPE)
        settings["reward"] = Reward[self.reward.upper()]
        settings["step_unit"] = StepUnit[self.step_unit.upper()]
        settings["autoreset"] = autoreset
        settings["observation"] = self.layout.observation
        settings["faces"] = self.faces
        settings["max_cards"] = self.max_cards
        return settings.view(np.recarray) if numba.config.DISABLE_JIT else settings


# --------------------------------------------------------------------------- kernels


@jit
def write_observation(s, out, settings):
    """Write state ``s`` into the flat row ``out`` of a layout without faces, field after
    field in :class:`Field` order, as :class:`Layout` declares them (a test checks every
    field of every level against Gymnasium's ``flatten``); with faces, :func:`write_view`.

    The offsets are counted here rather than read from the layout: stores to ``out``
    could alias offsets read from memory, which costs the env a fifth of its speed."""
    n_players = s.held.shape[0]
    k = 0
    for p in range(n_players):
        out[k + p] = s.alive[p]
    k += n_players
    out[k] = min(s.cards, INT32_MAX)
    out[k + 1] = s.court
    k += 2
    for p in range(n_players):
        out[k + p] = s.held[p]
    k += n_players
    if settings.observation == Observation.FULL:
        k = _write_hands(s, out, k)
    elif settings.observation == Observation.COUNTED:
        after_known = 1 + PILE_SLOTS + 3  # owed, pile, pile_size, tricks, turn: then unseen
        k = _write_known(s, out, k, k + n_players * PILE_SLOTS + after_known)
    out[k] = s.owed
    k += 1
    for j in range(PILE_SLOTS):
        out[k + j] = s.pile[j] if j < s.pile_len else EMPTY
    k += PILE_SLOTS
    out[k] = s.pile_len
    out[k + 1] = min(s.tricks, INT32_MAX)
    out[k + 2] = s.turn


@jit
def write_view(s, out, settings, face_rows, played):
    """Write state ``s`` into the flat row ``out``: :func:`write_observation` without
    faces; with ``settings.faces``, the same fields and the faces' in :class:`Field` order,
    from ``face_rows`` (the game's, :func:`new_faces`: a ring row per hand, then the pile's)
    and ``played`` (the face of the card just played). The two writers are kept apart so
    that the faces cost the row without them nothing."""
    if not settings.faces:
        write_observation(s, out, settings)
        return
    n_players = s.held.shape[0]
    k = 0
    for p in range(n_players):
        out[k + p] = s.alive[p]
    k += n_players
    out[k] = min(s.cards, INT32_MAX)
    out[k + 1] = s.court
    k += 2
    if settings.observation == Observation.FULL:
        k = _write_hand_faces(s, out, k, face_rows)
    for p in range(n_players):
        out[k + p] = s.held[p]
    k += n_players
    if settings.observation == Observation.FULL:
        k = _write_hands(s, out, k)
    elif settings.observation == Observation.COUNTED:
        after_known = 1 + 2 * PILE_SLOTS + 4  # owed, pile, pile_faces, pile_size, played, tricks, turn: then unseen
        k = _write_known(s, out, k, k + n_players * PILE_SLOTS + after_known)
    out[k] = s.owed
    k += 1
    for j in range(PILE_SLOTS):
        out[k + j] = s.pile[j] if j < s.pile_len else EMPTY
        out[k + PILE_SLOTS + j] = face_rows[n_players, j] if j < s.pile_len else EMPTY
    k += 2 * PILE_SLOTS
    out[k] = s.pile_len
    out[k + 1] = played
    out[k + 2] = min(s.tricks, INT32_MAX)
    out[k + 3] = s.turn


@jit
def _write_hand_faces(s, out, k, face_rows):
    """``hand_faces``: every hand's faces from the top, from ``out[k]``; returns the next offset."""
    mask = s.pile.shape[0] - 1
    for p in range(s.held.shape[0]):
        head = s.head[p]
        for j in range(PILE_SLOTS):
            out[k + j] = face_rows[p, (head + j) & mask] if j < s.held[p] else EMPTY
        k += PILE_SLOTS
    return k


@jit
def _write_hands(s, out, k):
    """``hands``: every hand's classes from the top, from ``out[k]``; returns the next offset."""
    mask = s.pile.shape[0] - 1
    for p in range(s.held.shape[0]):
        head = s.head[p]
        for j in range(PILE_SLOTS):
            out[k + j] = s.hands[p, (head + j) & mask] if j < s.held[p] else EMPTY
        k += PILE_SLOTS
    return k


@jit
def _write_known(s, out, k, unseen):
    """``known`` from ``out[k]`` and ``unseen`` from ``out[unseen]`` (the row's last field);
    returns the offset after ``known``."""
    mask = s.pile.shape[0] - 1
    for c in range(core.N_CLASSES):
        out[unseen + c] = 0
    for p in range(s.held.shape[0]):
        head = s.head[p]
        hidden = core.dealt_left(s, p)
        for j in range(PILE_SLOTS):
            if j < hidden:
                card = int(s.hands[p, (head + j) & mask])  # an int8: plus the offset it overflows in plain Python
                out[unseen + card] += 1
                out[k + j] = UNKNOWN
            else:
                out[k + j] = s.hands[p, (head + j) & mask] if j < s.held[p] else EMPTY
        k += PILE_SLOTS
    return k


@jit
def score(label, probs, truth, kind):
    """The reward of a forecast of outcome ``truth`` (a seat, or n_players for none).

    With ``label >= 0`` the forecast is that label; otherwise it is ``probs``, which need
    not sum to 1 (they are normalised here). Accuracy counts the most probable outcome
    (the first, on ties); Brier is minus the squared error; log is the log probability
    of the truth, floored at ``LOG_FLOOR``. The best forecast scores 1, 0 and 0.
    """
    n = probs.shape[0]
    if label >= 0:
        hit = label == truth
        if kind == Reward.ACCURACY:
            return 1.0 if hit else 0.0
        if kind == Reward.BRIER:
            return 0.0 if hit else -2.0
        return 0.0 if hit else math.log(LOG_FLOOR)
    total = 0.0
    best = 0
    for k in range(n):
        total += probs[k]
        if probs[k] > probs[best]:
            best = k
    if kind == Reward.ACCURACY:
        return 1.0 if best == truth else 0.0
    if kind == Reward.BRIER:
        error = 0.0
        for k in range(n):
            d = probs[k] / total - (1.0 if k == truth else 0.0)
            error += d * d
        return -error
    return math.log(max(probs[truth] / total, LOG_FLOOR))


# A batch of envs is: `states[i]`, the game of env i; `ahead[i]`, three scratch records
# (the game played ahead and finish's two); `progress[i]`, finish's progress record;
# `results[i]`, the outcome of env i's game, known from its start; `envs[i]`, the env's
# own record (ENV_DTYPE); `face_rows[i]`, its game's faces (new_faces).

ENV_DTYPE = np.dtype(
    [
        ("truth", np.int64),  # the true outcome's label (core.outcome_label)
        ("seed", np.uint64),  # the env's stream of random deals ...
        ("episode", np.uint64),  # ... and the number of deals drawn from it
        ("reward", np.float64),  # of the last step
        ("terminated", np.uint8),  # by the last step
        ("played", np.int8),  # the face of the card just played (faces on; NO_FACE before the first)
    ],
    align=True,
)


def new_faces(n_games, n_players, shown):
    """The face buffers of a batch of games, one int8 block ``(n_players + 1, CAPACITY)``
    each: a ring row per hand, laid out as the state's hands, then the pile's row
    (:func:`beggar_env.faces.new_faces`'s two arrays in one, so that a kernel takes one
    argument more, not two). Without faces (``shown`` false), one unread slot a game."""
    if not shown:
        return np.full((n_games, 1, 1), faces.NO_FACE, np.int8)
    return np.full((n_games, n_players + 1, CAPACITY), faces.NO_FACE, np.int8)


def env_bytes(n_players):
    """The memory one env of the vector env takes, at most (the largest observation, with
    faces): its game, the three records that play it ahead, its progress and result (and a
    final one), its faces, its observation (and a final one), its slice of the batched
    observation space (a low and a high bound per slot) and of the action space."""
    state = core.state_dtype(n_players, CAPACITY).itemsize
    slots = max(Layout(n_players, level, True).size for level in OBSERVATIONS)
    records = 4 * state + core.new_progress(1).dtype.itemsize + 2 * core.result_dtype(n_players).itemsize
    face_bytes = (n_players + 1) * CAPACITY
    return records + ENV_DTYPE.itemsize + face_bytes + 2 * 4 * slots + 2 * 8 * slots + 2 * 8 * (n_players + 1) + 1


NO_CARDS = np.zeros((0, 1), np.int8)  # core.shuffled_deals' arrays, for compiled code (and no given faces)
NO_HAND_SIZES = np.zeros((0, 1), np.int32)


@jit
def deal_faces(s, face_rows, deals, given, i, deck):
    """Give game ``i`` of ``deals`` (``core.given_deals``' or ``core.shuffled_deals``'
    tuple), just dealt into ``s``, its faces (:func:`beggar_env.faces.deal_into`)."""
    n_players = s.held.shape[0]
    faces.deal_into(s, face_rows[:n_players], face_rows[n_players], deals, given, i, deck)


@jit
def step_faces(s, face_rows, trick):
    """Play a card (``trick``: a trick, card by card to its end) of the running game ``s``
    and move its faces (:func:`beggar_env.faces.step_card`); return the last card's face."""
    n_players = s.held.shape[0]
    hands, pile = face_rows[:n_players], face_rows[n_players]
    before = s.tricks
    face = faces.step_card(s, hands, pile)
    while trick and s.status == Outcome.RUNNING and s.tricks == before:
        face = faces.step_card(s, hands, pile)
    return face

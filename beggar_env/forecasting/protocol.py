"""One evaluation protocol for winner forecasts, for forecasters and for policies acting in
the env (``docs/forecasting.md`` gives the reasons for each choice).

* Test positions: every card step (every decision point of ``Beggar-v0``) of ``games``
  random games from a test seed that no training set uses.
* Metrics per position: accuracy (the most probable outcome is the true one; the first on
  ties, as the env scores it), log loss (natural log, the true outcome's probability
  clipped at 1e-6), Brier score (squared error summed over the ``n_players + 1`` outcomes:
  one scale for 2, 3 and 4 players); and the top-label expected calibration error over
  quantile bins of confidence.
* Slices: all positions; by cards played so far ([0, 26), [26, 52), [52, 104), [104, 208),
  [208, inf)); by progress quartile (cards so far / the game's length: for slicing only,
  never a feature); the open positions, where a card-counter still sees unseen cards of
  two classes or more, and the determined ones, the rest (there the counted view fixes
  the outcome).
* Two tracks (:data:`TRACKS`): the inference track, the open positions (what the unseen
  cards are), and the simulation track, the determined ones (where the outcome is known to
  whoever plays the game forward); each with its gap closed between the seat prior and the
  Bayes forecaster (:func:`gap_intervals`) and its paired difference to Bayes.
* The metrics by horizon: the tricks and the cards still to be played, in bins of powers of 2.
* Position-weighted means (the primary figure, equal to the env's mean reward per step)
  and game-weighted means (each game's mean, averaged); 95% bootstrap intervals that
  resample whole games, for every slice; :func:`compare` gives the paired difference of
  two forecasters on the same positions with the same resampled games.
* Calibration: the top label's reliability and ECE, and each outcome's (``calibration``).
* A report's reference (:func:`reference`): the seat prior and the Bayes forecaster of the
  published tables, evaluated on the same test positions (once per test set and process).

:func:`evaluate` is the one call: any object with ``predict_proba`` (or a policy, a
callable that acts in the vector env), and a player count, give a :class:`Report` of the
published protocol that prints as a row of the published tables and saves as a
submission file (``beggar baselines --forecaster FILE`` adds it to the tables).
"""

import copy
import json
import math
import numbers
import os
import re
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, checks, datasets, files
from ..task import LOG_FLOOR, Layout

PROTOCOL_VERSION = 2  # changes whenever a figure could change (2: each forecaster reads only its level's fields)
REPORT_FORMAT = "beggar-env forecast report"
# The report's layout, within one protocol version: 2 adds the determined slice (the
# simulation track), the reference (gap closed per track, the paired difference to Bayes)
# and the metrics by horizon. A report of layout 1 (no "format_version") is still read: its
# determined slice's position-weighted figures are derived exactly from all and open
# (upgrade_report), its intervals, game-weighted figures and ECE cannot be (null), and it
# has no horizon.
FORMAT_VERSION = 2
PUBLISHED_GAMES = 2000  # test games per player count of the published tables
TEST_SEED = 0x7E57  # test deals: no training set may use this seed (evaluate checks it)
PHASES = ((0, 26), (26, 52), (52, 104), (104, 208), (208, None))
METRICS = ("accuracy", "log_loss", "brier")
ECE_BINS = 10
CARD_BIN, CARD_BINS = 10, 40  # the metrics by cards played: bins of 10 cards, the last one 390+
# The metrics by horizon: the tricks (piles still to be taken, the one being played for
# included) and the cards still to be played from a position to the game's end (or to its
# first repeated position, where the engine stops a game that never ends; or to the agreed
# limit), in bins of powers of 2: 1, 2-3, 4-7, ..., the last one open-ended.
HORIZON_BINS = {"tricks": 7, "cards": 10}  # tricks: 1 .. 64+; cards: 1 .. 512+
TRACKS = (("inference", "open"), ("simulation", "determined"))  # (track, its slice)
GAP_SLICES = ("all", "open", "determined")  # where the gap closed and the difference to Bayes are given
REFERENCE_PRIOR_GAMES, REFERENCE_K = 10**6, 256  # the published tables' seat prior and Bayes forecaster (seed 0)


def phase_name(low, high):
    return f"cards {low}-{high - 1}" if high is not None else f"cards {low}+"


SLICE_NAMES = (
    "all",
    *(phase_name(low, high) for low, high in PHASES),
    *(f"progress Q{q}" for q in range(1, 5)),
    "open",
    "determined",
)


def horizon_names(unit):
    """The names of the horizon bins of ``unit`` ("tricks" or "cards"): "1", "2-3", "4-7", ..., "64+"."""
    count = HORIZON_BINS[unit]
    names = [str(1)] + [f"{1 << b}-{(2 << b) - 1}" for b in range(1, count - 1)]
    return [*names, f"{1 << (count - 1)}+"]


def horizon(data):
    """Per position of ``data`` (a card-step dataset): the tricks and the cards still to be
    played to the game's end: ``{"tricks": ..., "cards": ...}``. The cards count the one
    about to be played (1 at the last card); the tricks count the piles still to be taken,
    the one being played for included (1 in the last trick; a trick that the agreed limit
    cuts short counts as 1 too). The game's end is where ``game_cards`` and ``game_tricks``
    end: its winner, its first repeated position, or the limit."""
    fields = data.fields
    return {
        "tricks": np.maximum(data.game_tricks.astype(np.int64) - fields["tricks"], 1),
        "cards": data.game_cards.astype(np.int64) - fields["cards"],
    }


def horizon_bins(left, unit):
    """The bin (0, 1, ...) of each horizon ``left`` (>= 1) in ``unit``: floor(log2(left)), capped."""
    return np.minimum(np.frexp(np.asarray(left, np.float64))[1] - 1, HORIZON_BINS[unit] - 1)


@dataclass
class TestSet:
    """Every card step of ``games`` random games of the test seed, with the counted
    observation (it holds the public one) and, on demand, the full one (for the oracle)."""

    n_players: int
    games: int
    seed: int
    max_cards: int | None
    data: datasets.Dataset
    _full: datasets.Dataset | None = field(default=None, repr=False)
    _reference: tuple | None = field(default=None, repr=False)  # reference(): kept for the next report

    def __post_init__(self):
        read_only(self.data)

    @classmethod
    def generate(cls, n_players, games, seed=TEST_SEED, max_cards=None, threads=None, progress=None):
        """Every card step of ``games`` random games of ``seed``; ``progress(done, total)``, if
        given, as :func:`beggar_env.datasets.generate` calls it."""
        data = datasets.generate(
            games,
            n_players=n_players,
            observation="counted",
            samples="card",
            seed=seed,
            max_cards=max_cards,
            threads=threads,
            progress=progress,
        )
        return cls(n_players, games, seed, max_cards, data)

    @classmethod
    def published(cls, n_players, progress=None):
        """The published tables' test set for ``n_players`` (kept for the next call;
        ``progress`` as :meth:`generate` calls it, while it is made)."""
        n_players = checks.n_players(n_players)
        if _PUBLISHED.get("test") is None or _PUBLISHED["test"].n_players != n_players:
            _PUBLISHED["test"] = None  # one at a time: 0.5 GB for 2 players
            _PUBLISHED["test"] = cls.generate(n_players, PUBLISHED_GAMES, progress=progress)
        return _PUBLISHED["test"]

    def observations(self, level, progress=None):
        """The test positions as the ``level`` forecaster reads them: exactly the fields of
        that level's observation (a dict), never more (a "public" forecaster does not see
        what a card-counter knows). The arrays are read-only views of the test set, so that
        no forecaster changes the positions the next one reads, nor the labels, the slices
        and the reference (copy one to change it). The full view is made on the first call
        for it (``progress`` as :meth:`generate` calls it)."""
        level = checks.choice("observation", level, ("public", "counted", "full"))
        names = [name for name, _, _, _ in Layout(self.n_players, level).fields]
        if level != "full":
            fields = self.data.fields
            return {name: fields[name] for name in names}
        if self._full is None:
            self._full = read_only(
                datasets.generate(
                    self.games,
                    n_players=self.n_players,
                    observation="full",
                    samples="card",
                    seed=self.seed,
                    max_cards=self.max_cards,
                    progress=progress,
                )
            )
        fields = self._full.fields
        return {name: fields[name] for name in names}

    @property
    def full_view_made(self):
        """Whether the full view of the positions (the oracle's, made on first use) is made."""
        return self._full is not None

    @property
    def labels(self):
        return self.data.label

    @property
    def slices(self):
        """Boolean masks of the positions of each slice, by name."""
        cards = self.data.fields["cards"]
        progress = self.data.progress
        masks = {"all": np.ones(len(cards), bool)}
        for low, high in PHASES:
            masks[phase_name(low, high)] = (cards >= low) & (cards < (high if high is not None else np.inf))
        for q in range(4):
            masks[f"progress Q{q + 1}"] = (progress >= q / 4) & ((progress < (q + 1) / 4) | (q == 3))
        masks["open"] = (self.data.fields["unseen"] > 0).sum(axis=1) >= 2
        masks["determined"] = ~masks["open"]
        return masks

    def reference(self, bootstrap=1000, progress=None):
        """The reference of the gap closed on these positions: the reports (with their
        per-position scores) of the seat prior (:data:`REFERENCE_PRIOR_GAMES` games) and the
        Bayes forecaster (K = :data:`REFERENCE_K`), both seed 0, as the published tables
        make them; evaluated once and kept. The Bayes forecaster takes about 30 s on the
        published 2-player test set on 2 cores, 40 to 60 s for 3 and 4 players.
        ``progress`` as :func:`evaluate` takes it (None: nothing shown here)."""
        from .forecasters import BayesMC, SeatPrior

        if self._reference is None:
            with Phases(progress if progress is not None else False) as phases:
                prior = SeatPrior(self.n_players, games=REFERENCE_PRIOR_GAMES, seed=0, max_cards=self.max_cards)
                prior.fit(progress=phases.phase(f"reference: {prior.name}, its games", prior.games))
                made = []
                for forecaster in (prior, BayesMC(self.n_players, k=REFERENCE_K, seed=0, max_cards=self.max_cards)):
                    shown = phases.phase(f"reference: {forecaster.name}", len(self.labels))
                    probs, seconds = predict(forecaster, self, shown)
                    made.append(report(forecaster.name, probs, self, seconds, bootstrap, forecaster.observation))
            self._reference = tuple(made)
        return self._reference

    @property
    def horizon(self):
        """Per position: the tricks and the cards still to be played (:func:`horizon`)."""
        return horizon(self.data)

    def same(self, other):
        """Whether ``other`` holds the same test positions."""
        return (self.n_players, self.games, self.seed, self.max_cards) == (
            other.n_players,
            other.games,
            other.seed,
            other.max_cards,
        )


_PUBLISHED = {}


class Phases:
    """:func:`evaluate`'s progress over its phases (the test set made, the forecasts, the
    reference's seat prior and Bayes forecaster, the report's figures). ``progress``: None
    (a tqdm bar on stderr when stderr is a terminal, else nothing), True (a bar), False
    (nothing), or a callable ``progress(phase, done, total)``, called with ``done = 0`` as
    each phase starts and ``done = total`` as it ends. Use it as a context manager; a
    :class:`Phases` given as ``progress`` is used as it is."""

    DELAY = 0.5  # seconds before a phase's bar shows, as the command line's bars

    def __new__(cls, progress=None):
        if isinstance(progress, Phases):
            return progress
        return super().__new__(cls)

    def __init__(self, progress=None):
        if progress is self:
            return
        if progress is not None and not isinstance(progress, (bool, np.bool_)) and not callable(progress):
            raise TypeError(
                f"progress must be None (a bar on a terminal), True, False or a callable progress(phase, done, "
                f"total), not {type(progress).__name__} {checks.excerpt(progress)}"
            )
        self.call = progress if callable(progress) else None
        self.bars = self.call is None and (bool(progress) if progress is not None else _stderr_is_a_terminal())
        self.bar = None

    def phase(self, name, total):
        """The start of phase ``name`` (of ``total`` steps); its ``report(done, total)``
        callback, or None when nothing is shown."""
        self.close()
        if self.call is not None:
            self.call(name, 0, total)
            return lambda done, of: self.call(name, done, of)
        if not self.bars:
            return None
        from tqdm import tqdm

        self.bar = bar = tqdm(total=total, desc=name, file=sys.stderr, leave=False, delay=self.DELAY)

        def report(done, of):
            bar.total = of
            bar.update(done - bar.n)

        return report

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _stderr_is_a_terminal():
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def read_only(data):
    """``data`` (a Dataset) with every array read-only, the views it hands out too: a write
    into a test position raises instead of changing it for every later forecaster."""
    for name in data.ARRAYS:
        getattr(data, name).flags.writeable = False
    return data


def position_scores(probs, labels):
    """Per position: accuracy (0/1), log loss, Brier score, and the top label's probability."""
    probs = np.asarray(probs, np.float64)
    probs = probs / probs.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    truth = np.zeros_like(probs)
    truth[rows, labels] = 1
    return {
        "accuracy": (probs.argmax(axis=1) == labels).astype(np.float64),
        "log_loss": -np.log(np.maximum(probs[rows, labels], LOG_FLOOR)),
        "brier": ((probs - truth) ** 2).sum(axis=1),
        "confidence": probs.max(axis=1),
    }


def calibration_bins(confidence, correct, bins=ECE_BINS):
    """Quantile bins of confidence (edges at the quantiles, so that equal confidences share
    a bin): each non-empty bin's (mean confidence, accuracy, size)."""
    edges = np.unique(np.quantile(confidence, np.linspace(0, 1, bins + 1))[1:-1])
    which = np.searchsorted(edges, confidence, side="right")
    sizes = np.bincount(which, minlength=len(edges) + 1)
    kept = sizes > 0
    accuracy = np.bincount(which, weights=correct, minlength=len(sizes))[kept] / sizes[kept]
    mean_confidence = np.bincount(which, weights=confidence, minlength=len(sizes))[kept] / sizes[kept]
    return mean_confidence, accuracy, sizes[kept]


def expected_calibration_error(confidence, correct, bins=ECE_BINS):
    """Top-label ECE over ``bins`` quantile bins of confidence: the mean |accuracy -
    confidence| of the bins (:func:`calibration_bins`), weighted by their sizes."""
    if len(confidence) == 0:
        return float("nan")
    mean_confidence, accuracy, sizes = calibration_bins(confidence, correct, bins)
    return float((np.abs(accuracy - mean_confidence) * sizes).sum() / sizes.sum())


def _game_sums(values, game, n_games):
    return np.bincount(game, weights=values, minlength=n_games), np.bincount(game, minlength=n_games)


def summarise(scores, game, n_games, mask, bootstrap=1000, seed=0):
    """The metrics of the positions in ``mask``: position-weighted value with its 95%
    bootstrap interval (games resampled), game-weighted value, and ECE."""
    game = game[mask]
    out = {"positions": int(mask.sum()), "games": int(len(np.unique(game)))}
    if out["positions"] == 0:
        return out
    weights = np.random.default_rng(seed).multinomial(n_games, np.full(n_games, 1 / n_games), size=bootstrap)
    for name in METRICS:
        sums, counts = _game_sums(scores[name][mask], game, n_games)
        played = counts > 0
        resampled = (weights @ sums) / np.maximum(weights @ counts, 1)
        out[name] = {
            "value": float(sums.sum() / counts.sum()),
            "ci95": [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))],
            "game_weighted": float((sums[played] / counts[played]).mean()),
        }
    out["ece"] = expected_calibration_error(scores["confidence"][mask], scores["accuracy"][mask])
    return out


def outcome_names(n_players):
    """The outcomes' names, in forecast order: each seat, then no winner."""
    return [*(f"seat {seat}" for seat in range(n_players)), "no winner"]


def calibration(probs, labels, bins=ECE_BINS):
    """Each outcome's reliability (quantile bins of its forecast probability: the mean
    probability, the share of positions where it came true, the size) and the class-wise
    ECE: the mean over outcomes of each one's |frequency - probability|, weighted by size."""
    probs = np.asarray(probs, np.float64)
    probs = probs / probs.sum(axis=1, keepdims=True)
    curves, errors = {}, []
    for outcome, name in enumerate(outcome_names(probs.shape[1] - 1)):
        mean_probability, frequency, sizes = calibration_bins(
            probs[:, outcome], (labels == outcome).astype(float), bins
        )
        curves[name] = {
            "probability": mean_probability.tolist(),
            "frequency": frequency.tolist(),
            "size": sizes.tolist(),
        }
        errors.append(float((np.abs(frequency - mean_probability) * sizes).sum() / sizes.sum()))
    return {"by_outcome": curves, "classwise_ece": float(np.mean(errors))}


REPORT_KEYS_V1 = (  # a report of layout 1 (no "format_version")
    "format",
    "protocol_version",
    "forecaster",
    "observation",
    "n_players",
    "positions",
    "games",
    "test_seed",
    "forecasts_per_s",
    "slices",
    "reliability",
    "calibration",
    "by_cards",
)
REPORT_KEYS = (*REPORT_KEYS_V1, "format_version", "by_horizon", "reference")


def _figure_cell(figure, digits=3, between="-"):
    """A figure with its interval, ``0.707 (0.695-0.718)``; ``(n/a)`` where no interval could be had."""
    value = figure["value"] + 0.0  # -0.0 (a gap of a row against itself) shows as 0
    if figure.get("ci95") is None:
        return f"{value:.{digits}f} (n/a)"
    low, high = (end + 0.0 for end in figure["ci95"])
    return f"{value:.{digits}f} ({low:.{digits}f}{between}{high:.{digits}f})"


def _gap_cell(gaps):
    """The gap closed for accuracy and log loss, ``0.88 (0.85 to 0.91) / 0.40 (0.36 to 0.44)``; ``-`` where
    undefined, ``(n/a)`` where no interval could be had."""
    cells = []
    for metric in ("accuracy", "log_loss"):
        gap = gaps.get(metric) or {}
        if gap.get("value") is None:
            cells.append("-")
        else:
            cells.append(_figure_cell(gap, 2, " to "))
    return " / ".join(cells)


class Report(dict):
    """The protocol's report of one forecaster (a dict, as JSON holds it), with the
    per-position scores behind it (:attr:`scores`, not saved) for :func:`compare`.

    ``str(report)`` and :meth:`markdown` give the published tables' columns: accuracy and
    log loss with their 95% intervals on all positions, and on each track (:data:`TRACKS`:
    the open positions, the determined ones) with the gap it closes there between the seat
    prior and the Bayes forecaster (with its interval); :meth:`save` writes the submission
    file that ``beggar baselines --forecaster FILE`` adds to the tables, :meth:`load` reads
    one (a report of layout 1 too, its determined figures derived: :func:`upgrade_report`).
    """

    scores = None  # per position: accuracy, log_loss, brier, confidence; and game
    test = None  # the TestSet of those positions

    @staticmethod
    def header():
        cells = ["forecaster", "accuracy (95% CI)", "log loss (95% CI)"]
        for track, name in TRACKS:
            where = f"{track} ({name})"
            cells += [f"{where}: accuracy (95% CI)", f"{where}: log loss (95% CI)"]
            cells.append(f"{where}: gap closed, accuracy / log loss (95% CI)")
        return cells

    def row(self):
        slices = self["slices"]
        cells = [self["forecaster"], *(_figure_cell(slices["all"][m]) for m in ("accuracy", "log_loss"))]
        reference = self.get("reference")
        for _, name in TRACKS:
            if "accuracy" not in slices[name]:  # no position of this track
                cells += ["-", "-", "-"]
                continue
            cells += [_figure_cell(slices[name][m]) for m in ("accuracy", "log_loss")]
            cells.append(_gap_cell(reference["gap_closed"][name]) if reference else "-")
        return cells

    def markdown(self, header=True):
        """The report as a markdown table row (with the header lines, by default)."""
        lines = ["| " + " | ".join(self.row()) + " |"]
        if header:
            head = self.header()
            lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *lines]
        return "\n".join(lines)

    def __str__(self):
        return self.markdown()

    def save(self, path) -> str:
        """Write the report as a JSON submission file (``.json`` added to a name without a
        suffix), whole or not at all; return its path."""
        path = files.output_path(path, ".json", name="path")
        with files.replacing(path) as f:
            f.write((json.dumps(self, indent=1) + "\n").encode())
        return path

    @classmethod
    def load(cls, path) -> "Report":
        """A report :meth:`save` wrote, checked whole (:func:`check_report`: its structure
        against :data:`REPORT_SCHEMA`, and what a schema cannot say): ``ValueError`` in one
        line naming the file and what is wrong."""
        return cls(check_report(read_report_file(path), os.fspath(path)))


# ------------------------------------------------------------------ report files
# A report file is submitted by anyone (``beggar baselines --forecaster FILE`` adds it to
# the published tables): it is read as untrusted input, checked in full before anything
# is drawn or written. The JSON Schema says the structure, the types and every number's
# range; check_report adds what a schema cannot say (whole numbers written as such, the
# lengths that must agree, the counts that must add up to the positions).

NAME_LENGTH = 80  # characters of a forecaster's name: one cell of the tables
REPORT_FILE_BYTES = 1 << 20  # a report is 11 to 14 KB; this bounds what a file may make the tables read
LOG_LOSS_MOST = -math.log(LOG_FLOOR)  # the true outcome's probability is clipped at LOG_FLOOR


def _numbers(low, high):
    return {"type": "number", "minimum": low, "maximum": high}


_PROBABILITY = _numbers(0, 1)
_BOUNDS = {"accuracy": (0, 1), "log_loss": (0, LOG_LOSS_MOST), "brier": (0, 2)}
_RANGES = {name: _numbers(low, high) for name, (low, high) in _BOUNDS.items()}


def _figure(value):
    return {
        "type": "object",
        "required": ["value", "ci95", "game_weighted"],
        "properties": {
            "value": value,
            "ci95": {"type": "array", "items": value, "minItems": 2, "maxItems": 2},
            "game_weighted": value,
        },
    }


def _curve(*names, count=ECE_BINS):
    """Lists of probabilities (and a ``size`` list of counts), one entry per quantile bin."""
    lists = {name: {"type": "array", "items": _PROBABILITY, "minItems": 1, "maxItems": count} for name in names}
    lists["size"] = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "maxItems": count}
    return {"type": "object", "required": [*names, "size"], "properties": lists}


_COUNT = {"type": "integer", "minimum": 0}
_NON_EMPTY = {"if": {"properties": {"positions": {"exclusiveMinimum": 0}}}, "then": {"required": [*METRICS, "ece"]}}
_SLICE = {  # summarise's figures of a slice (none for an empty one)
    "type": "object",
    "required": ["positions", "games"],
    "additionalProperties": False,
    "properties": {
        "positions": _COUNT,
        "games": _COUNT,
        **{name: _figure(value) for name, value in _RANGES.items()},
        "ece": _PROBABILITY,
    },
    **_NON_EMPTY,
}
_NULL = {"type": "null"}
_DERIVED_SLICE = {  # a layout-1 report's determined slice (upgrade_report): what all and open give exactly
    "type": "object",
    "required": ["positions", "games", "derived"],
    "additionalProperties": False,
    "properties": {
        "positions": _COUNT,
        "games": _NULL,  # the games with a determined position: not in a layout-1 report
        "derived": {"const": True},
        **{
            name: {
                "type": "object",
                "required": ["value", "ci95", "game_weighted"],
                "additionalProperties": False,
                "properties": {"value": value, "ci95": _NULL, "game_weighted": _NULL},
            }
            for name, value in _RANGES.items()
        },
        "ece": _NULL,
    },
    **_NON_EMPTY,
}


def _horizon_curve(unit):
    count = HORIZON_BINS[unit]
    lists = {"positions": {"type": "array", "items": _COUNT, "minItems": count, "maxItems": count}}
    for name, value in _RANGES.items():  # null: an empty bin
        lists[name] = {"type": "array", "items": {"anyOf": [value, _NULL]}, "minItems": count, "maxItems": count}
    return {
        "type": "object",
        "required": ["bins", *lists],
        "additionalProperties": False,
        "properties": {"bins": {"const": horizon_names(unit)}, **lists},
    }


_GAP = {  # the gap closed: undefined (null) where the seat prior and Bayes score the same
    "type": "object",
    "required": ["value", "ci95"],
    "additionalProperties": False,
    "properties": {
        "value": {"type": ["number", "null"]},
        "ci95": {"anyOf": [{"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}, _NULL]},
    },
}
_DIFFERENCE = {
    "type": "object",
    "required": ["difference", "ci95"],
    "additionalProperties": False,
    "properties": {
        "difference": {"type": "number", "minimum": -LOG_LOSS_MOST, "maximum": LOG_LOSS_MOST},
        "ci95": {
            "anyOf": [
                {"type": "array", "items": {"type": "number", "minimum": -LOG_LOSS_MOST, "maximum": LOG_LOSS_MOST},
                 "minItems": 2, "maxItems": 2},
                _NULL,
            ]
        },
    },
}  # fmt: skip


def _per_slice(figure):
    """{slice of GAP_SLICES: {metric: figure}}; a slice with no position has no metrics."""
    metrics = {"type": "object", "required": list(METRICS), "additionalProperties": False}
    metrics["properties"] = {name: figure for name in METRICS}
    return {
        "type": "object",
        "required": list(GAP_SLICES),
        "additionalProperties": False,
        "properties": {name: {"anyOf": [metrics, {"const": {}}]} for name in GAP_SLICES},
    }


_NAME = {"type": "string", "minLength": 1, "maxLength": NAME_LENGTH, "pattern": "^[^|\\x00-\\x1f\\x7f-\\x9f]*$"}
REFERENCE_SCHEMA = {  # the gap closed between the seat prior and Bayes, and the paired difference to Bayes
    "type": "object",
    "required": ["prior", "bayes", "gap_closed", "versus_bayes"],
    "additionalProperties": False,
    "properties": {
        "prior": _NAME,
        "bayes": _NAME,
        "gap_closed": _per_slice(_GAP),
        "versus_bayes": _per_slice(_DIFFERENCE),
    },
}
# Beside its figures a report may carry a few keys of its own (how it was trained, the
# command that made it: "training", "settings", "history"), carried into results.json:
# a few, short names, each value a bounded JSON.
EXTRA_KEYS, EXTRA_KEY_NAME, EXTRA_CHARACTERS = 8, "^[a-z][a-z0-9_]{0,39}$", 4096
REPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": REPORT_FORMAT,
    "type": "object",
    "required": list(REPORT_KEYS),
    "propertyNames": {"pattern": EXTRA_KEY_NAME},
    "maxProperties": len(REPORT_KEYS) + 1 + EXTRA_KEYS,  # 1: the version that wrote it
    "properties": {
        "format": {"const": REPORT_FORMAT},
        "beggar_env": {"type": "string", "maxLength": 40},  # the version that wrote it
        "protocol_version": {"const": PROTOCOL_VERSION},
        "format_version": {"enum": [1, FORMAT_VERSION]},  # 1: read from a layout-1 file (upgrade_report)
        "forecaster": _NAME,
        "observation": {"enum": ["public", "counted", "full"]},
        "n_players": {"type": "integer", "minimum": 2, "maximum": 4},
        "positions": {"type": "integer", "minimum": 1},
        "games": {"type": "integer", "minimum": 1},
        "test_seed": {"const": TEST_SEED},
        "forecasts_per_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e15},
        "slices": {
            "type": "object",
            "required": list(SLICE_NAMES),
            "additionalProperties": False,
            "properties": {name: _SLICE if name != "determined" else {} for name in SLICE_NAMES},  # see "if"
        },
        "reliability": _curve("confidence", "accuracy"),
        "calibration": {
            "type": "object",
            "required": ["by_outcome", "classwise_ece"],
            "properties": {
                "by_outcome": {
                    "type": "object",
                    "minProperties": 3,
                    "maxProperties": 5,
                    "additionalProperties": _curve("probability", "frequency"),
                },
                "classwise_ece": _PROBABILITY,
            },
        },
        "by_cards": {
            "type": "object",
            "required": ["bin", *METRICS],
            "properties": {
                "bin": {"const": CARD_BIN},
                **{
                    name: {"type": "array", "items": value, "minItems": CARD_BINS, "maxItems": CARD_BINS}
                    for name, value in _RANGES.items()
                },
            },
        },
        "by_horizon": {},  # see "if"
        "reference": {"anyOf": [REFERENCE_SCHEMA, _NULL]},  # null: evaluated without one (reference=False)
    },
    "if": {"properties": {"format_version": {"const": 1}}},  # layout 1, upgraded: derived figures, no horizon
    "then": {"properties": {"slices": {"properties": {"determined": _DERIVED_SLICE}}, "by_horizon": _NULL}},
    "else": {
        "properties": {
            "slices": {"properties": {"determined": _SLICE}},
            "by_horizon": {
                "type": "object",
                "required": list(HORIZON_BINS),
                "additionalProperties": False,
                "properties": {unit: _horizon_curve(unit) for unit in HORIZON_BINS},
            },
        }
    },
}


def check_name(name, what="name"):
    """A forecaster's name as the tables show it: a str of 1 to :data:`NAME_LENGTH`
    printable characters, without ``|`` (it would split a table's cell) nor spaces at
    either end. ``TypeError`` or ``ValueError`` naming ``what``."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, not {type(name).__name__} {checks.excerpt(name)}")
    if not 0 < len(name) <= NAME_LENGTH or "|" in name or not name.isprintable() or name != name.strip():
        raise ValueError(
            f"{what} must be 1 to {NAME_LENGTH} printable characters without '|' nor spaces at either end (a cell of "
            f"the tables), not {checks.excerpt(name)}"
        )
    return name


def _layout_1_schema():
    """:data:`REPORT_SCHEMA` as a report of layout 1 was written: no determined slice, no
    horizon, no reference, no ``format_version``."""
    schema = copy.deepcopy(REPORT_SCHEMA)
    for key in ("if", "then", "else"):
        del schema[key]
    schema["required"] = list(REPORT_KEYS_V1)
    for key in ("format_version", "by_horizon", "reference"):
        del schema["properties"][key]
    slices = schema["properties"]["slices"]
    slices["required"].remove("determined")
    del slices["properties"]["determined"]
    return schema


def read_report_file(path) -> dict:
    """A report file's JSON object, checked to be of this format and protocol version
    (with every key of its layout), before the rest is checked (:func:`check_report`):
    ``ValueError`` naming the file."""
    path = checks.path("path", path)
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise ValueError(f"{path}: not a readable JSON report ({error.strerror or error})") from None
    if size > REPORT_FILE_BYTES:
        raise ValueError(f"{path}: {size:,} bytes is not a report (one is about 15 KB; at most {REPORT_FILE_BYTES:,})")
    data = files.read_json(path, limit=REPORT_FILE_BYTES)  # a regular file: not /dev/zero, nor a FIFO
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise ValueError(f"{path}: not a {REPORT_FORMAT} (write one with beggar_env.forecasting.evaluate)")
    layout_1 = "format_version" not in data
    missing = [key for key in (REPORT_KEYS_V1 if layout_1 else REPORT_KEYS) if key not in data]
    if missing:
        raise ValueError(f"{path}: the report lacks {', '.join(missing)}: evaluate the forecaster again")
    if data["protocol_version"] != PROTOCOL_VERSION or data["test_seed"] != TEST_SEED:
        raise ValueError(
            f"{path}: a report of protocol version {checks.excerpt(data['protocol_version'])} (test seed "
            f"{checks.excerpt(data['test_seed'])}); this is version {PROTOCOL_VERSION} (test seed {TEST_SEED}): "
            "evaluate the forecaster again"
        )
    return data


def upgrade_report(record) -> dict:
    """A report of layout 1 (checked against :data:`REPORT_SCHEMA_V1`) as one of this
    layout, marked ``"format_version": 1``: its determined slice's position-weighted
    figures derived exactly from all and open, value = (all x n_all - open x n_open) /
    n_determined (to rounding), with ``"derived": true``; what cannot be derived from a
    report is null: that slice's intervals, game-weighted figures, ECE and games, the
    horizon, and the reference (``beggar baselines`` gives a row its gap closed and its
    difference to Bayes from the figures, without intervals)."""
    record = copy.deepcopy(record)
    slices = record["slices"]
    every, open_ = slices["all"], slices["open"]
    n = every["positions"] - open_["positions"]
    determined = {"positions": n, "games": None, "derived": True}
    if n > 0:
        for name, (low, high) in _BOUNDS.items():
            total = every[name]["value"] * every["positions"] - open_[name]["value"] * open_["positions"]
            value = min(max(total / n, low), high)  # rounding may step just outside the range
            determined[name] = {"value": value, "ci95": None, "game_weighted": None}
        determined["ece"] = None
    slices["determined"] = determined
    record.update(format_version=1, by_horizon=None, reference=None)
    return record


REPORT_SCHEMA_V1 = _layout_1_schema()


def _derived_figure(slices, metric):
    """The determined slice's position-weighted ``metric`` derived from all and open."""
    every, open_ = slices["all"], slices["open"]
    n = every["positions"] - open_["positions"]
    return (every[metric]["value"] * every["positions"] - open_[metric]["value"] * open_["positions"]) / n


def check_report(record, where) -> dict:
    """The report ``record`` (from :func:`read_report_file`) as this layout holds it: a
    report of layout 1 (before the tracks: no ``format_version``) checked as it was written
    (:data:`REPORT_SCHEMA_V1`) and upgraded (:func:`upgrade_report`). Then ``ValueError``
    naming ``where`` (the file) and the first thing wrong in it:
    against :data:`REPORT_SCHEMA` (structure, types, every number's range, at most
    :data:`EXTRA_KEYS` keys of the report's own with short names), then what a
    schema cannot say: every number finite, each key of its own at most
    :data:`EXTRA_CHARACTERS` characters of JSON, the name a cell of the tables
    (:func:`check_name`), whole numbers written as such, each interval low <= high, the
    outcomes those of its player count, and the slices' and curves' counts consistent
    with its positions: open and determined add up to all, a derived figure is what all
    and open give, the horizon's bins add up to the positions (an empty bin has no
    figures, a non-empty one has them), the reference's figures are there for each
    non-empty slice."""

    def refuse(place, what):
        raise ValueError(f"{where}: {place}: {what}")

    if isinstance(record, dict) and isinstance(record.get("forecaster"), str):  # said plainly, not as a pattern
        try:
            check_name(record["forecaster"], "the forecaster's name")
        except ValueError as error:
            refuse("$.forecaster", str(error))
    if isinstance(record, dict):
        _check_own_keys(record, refuse)
    if isinstance(record, dict) and "format_version" not in record:
        files.check_schema(record, REPORT_SCHEMA_V1, where)  # what the upgrade reads, checked first
        record = upgrade_report(record)
    files.check_schema(record, REPORT_SCHEMA, where)

    def walk(value, place):
        if isinstance(value, float) and not math.isfinite(value):
            refuse(place, f"{value} is not a finite number")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{place}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{place}[{i}]")

    def interval(figure, place):
        if figure.get("ci95") is not None and figure["ci95"][0] > figure["ci95"][1]:
            refuse(f"{place}.ci95", f"the interval {figure['ci95']} is upside down")

    walk(record, "$")  # a JSON number too large for a float (1e400) reads as infinity
    n_players, positions, games = record["n_players"], record["positions"], record["games"]
    for key in ("protocol_version", "format_version", "test_seed", "n_players", "games", "positions"):
        if not checks.is_integer(record[key]):  # JSON Schema takes 2.0 for an integer; the tables' keys would not
            refuse(f"$.{key}", f"must be a whole number written without a point, not {record[key]!r}")
    slices = record["slices"]
    for name, figures in slices.items():
        place = f"$.slices[{name!r}]"
        derived = figures.get("derived", False)
        for key in ("positions",) if derived else ("positions", "games"):
            if not checks.is_integer(figures[key]):
                refuse(f"{place}.{key}", f"must be a whole number written without a point, not {figures[key]!r}")
        if figures["positions"] > positions or (not derived and figures["games"] > games):
            refuse(place, f"{figures['positions']} positions of {figures['games']} games, more than the report's")
        if not derived and figures["positions"] and not 0 < figures["games"] <= figures["positions"]:
            refuse(place, f"{figures['positions']} positions cannot be of {figures['games']} games")
        for metric in METRICS:
            if metric in figures:
                interval(figures[metric], f"{place}.{metric}")
    if slices["all"]["positions"] != positions or slices["all"]["games"] != games:
        refuse("$.slices['all']", f"must hold all {positions:,} positions of the {games:,} games")
    if slices["open"]["positions"] + slices["determined"]["positions"] != positions:
        refuse(
            "$.slices['determined']",
            f"{slices['determined']['positions']:,} determined and {slices['open']['positions']:,} open positions "
            f"are not all {positions:,} positions",
        )
    if slices["determined"].get("derived") and slices["determined"]["positions"]:
        for metric in METRICS:
            given, exact = slices["determined"][metric]["value"], _derived_figure(slices, metric)
            if abs(given - exact) > 1e-9 * max(1.0, abs(exact)) * positions / slices["determined"]["positions"]:
                refuse(
                    f"$.slices['determined'].{metric}.value",
                    f"{given!r} is not what all and open give ({exact!r}): a derived figure must be derived",
                )
    outcomes = outcome_names(n_players)
    curves = [("$.reliability", record["reliability"], ("confidence", "accuracy"))]
    by_outcome = record["calibration"]["by_outcome"]
    if list(by_outcome) != outcomes:
        refuse(
            "$.calibration.by_outcome", f"the outcomes of {n_players} players are {outcomes}, not {list(by_outcome)}"
        )
    curves += [(f"$.calibration.by_outcome[{o!r}]", by_outcome[o], ("probability", "frequency")) for o in outcomes]
    for place, curve, names in curves:
        lengths = {len(curve[name]) for name in (*names, "size")}
        if len(lengths) > 1:
            refuse(place, f"{', '.join(names)} and size must have one entry per bin, not {sorted(lengths)} entries")
        if not all(checks.is_integer(size) for size in curve["size"]) or sum(curve["size"]) != positions:
            refuse(f"{place}.size", f"the bins' whole sizes must add up to the {positions:,} positions")
    for unit, curve in (record["by_horizon"] or {}).items():
        place = f"$.by_horizon.{unit}"
        if sum(curve["positions"]) != positions:
            refuse(f"{place}.positions", f"the bins' positions must add up to the {positions:,} positions")
        for metric in METRICS:
            for i, (count, value) in enumerate(zip(curve["positions"], curve[metric])):
                if (count == 0) != (value is None):
                    refuse(f"{place}.{metric}[{i}]", "an empty bin has no figure (null), a bin of positions has one")
    reference = record["reference"]
    for part in ("gap_closed", "versus_bayes") if reference else ():
        for name, metrics in reference[part].items():
            place = f"$.reference.{part}[{name!r}]"
            if bool(metrics) != bool(slices[name]["positions"]):
                refuse(place, "a slice of positions has figures here, an empty one has none ({})")
            for metric, figure in metrics.items():
                interval(figure, f"{place}.{metric}")
                if part == "gap_closed" and figure["value"] is None and figure["ci95"] is not None:
                    refuse(f"{place}.{metric}", "an undefined gap closed (null) has no interval")
    return record


def _check_own_keys(record, refuse):
    """The keys of a report's own, beside its figures (:data:`EXTRA_KEYS` at most, short
    lowercase names, each value at most :data:`EXTRA_CHARACTERS` characters of JSON): said
    plainly, before the schema (whose message would quote the whole report)."""
    own = [key for key in record if key not in REPORT_KEYS and key != "beggar_env"]
    if len(own) > EXTRA_KEYS:
        refuse("$", f"at most {EXTRA_KEYS} keys of the report's own beside its figures, not {len(own)}")
    for key in own:
        if not isinstance(key, str) or not re.fullmatch(EXTRA_KEY_NAME, key):
            refuse("$", f"a key of the report's own must be a short lowercase name ({EXTRA_KEY_NAME}), not "
                   f"{checks.excerpt(key, 40)}")  # fmt: skip
        if len(json.dumps(record[key])) > EXTRA_CHARACTERS:
            refuse(f"$.{key}", f"a key of the report's own must hold at most {EXTRA_CHARACTERS:,} characters of JSON")


def report(name, probs, test, seconds, bootstrap=1000, observation="public", reference=None):
    """The protocol's :class:`Report` of forecasts ``probs`` (one row per test position) of a
    forecaster of ``observation`` level: per slice, each metric's value, 95% interval and
    game-weighted value, and ECE; the top label's reliability diagram and each outcome's;
    the metrics by cards played (bins of ``CARD_BIN`` cards) and by horizon (the tricks and
    the cards still to be played, :data:`HORIZON_BINS`); forecasts per second; and, given
    ``reference`` (the seat prior's and the Bayes forecaster's reports of the same test
    set, with their scores: :func:`reference`), the gap closed and the paired difference
    to Bayes on all positions and each track (:func:`reference_figures`)."""
    scores = position_scores(probs, test.labels)
    game = test.data.game
    mean_confidence, accuracy, sizes = calibration_bins(scores["confidence"], scores["accuracy"])
    bins = np.minimum(test.data.fields["cards"] // CARD_BIN, CARD_BINS - 1)
    counts = np.maximum(np.bincount(bins, minlength=CARD_BINS), 1)
    result = Report(
        {
            "format": REPORT_FORMAT,
            "protocol_version": PROTOCOL_VERSION,
            "format_version": FORMAT_VERSION,
            "beggar_env": __version__,
            "forecaster": name,
            "observation": observation,
            "n_players": test.n_players,
            "positions": len(probs),
            "games": test.games,
            "test_seed": test.seed,
            "forecasts_per_s": len(probs) / seconds if seconds > 0 else float("inf"),
            "slices": {
                slice_name: summarise(scores, game, test.games, mask, bootstrap)
                for slice_name, mask in test.slices.items()
            },
            "reliability": {
                "confidence": mean_confidence.tolist(),
                "accuracy": accuracy.tolist(),
                "size": sizes.tolist(),
            },
            "calibration": calibration(probs, test.labels),
            "by_cards": {
                "bin": CARD_BIN,
                **{m: (np.bincount(bins, weights=scores[m], minlength=CARD_BINS) / counts).tolist() for m in METRICS},
            },
            "by_horizon": by_horizon(scores, test),
            "reference": None,
        }
    )
    result.scores = {**scores, "game": game}
    result.test = test
    if reference is not None:
        result["reference"] = reference_figures(result, *reference, bootstrap=bootstrap)
    return result


def by_horizon(scores, test):
    """Each metric's position-weighted mean in each horizon bin (:func:`horizon_bins`) of
    tricks and of cards still to be played, with the bin's positions; None for an empty bin."""
    out = {}
    for unit, left in test.horizon.items():
        count = HORIZON_BINS[unit]
        bins = horizon_bins(left, unit)
        positions = np.bincount(bins, minlength=count)
        curve = {"bins": horizon_names(unit), "positions": positions.tolist()}
        for metric in METRICS:
            sums = np.bincount(bins, weights=scores[metric], minlength=count)
            curve[metric] = [float(total / n) if n else None for total, n in zip(sums, positions)]
        out[unit] = curve
    return out


def reference(test, bootstrap=1000, progress=None):
    """The reference of the gap closed on ``test`` (a :class:`TestSet` or a player count):
    :meth:`TestSet.reference` (``progress`` as :func:`evaluate` takes it; None: nothing shown)."""
    with Phases(progress if progress is not None else False) as phases:
        return _check_test(test, phases).reference(bootstrap, phases)


def reference_figures(result, prior, best, bootstrap=1000, seed=0):
    """``result``'s reference (as a report holds it): the gap it closes between ``prior``
    and ``best`` (:func:`gap_intervals`) and its paired difference to ``best``
    (:func:`compare`), on all positions and each track, with 95% intervals over the same
    resampled games; the three are reports of the same test set with their scores."""
    return {
        "prior": prior["forecaster"],
        "bayes": best["forecaster"],
        "gap_closed": gap_intervals(result, prior, best, bootstrap=bootstrap, seed=seed),
        "versus_bayes": compare(result, best, bootstrap=bootstrap, seed=seed, slices=GAP_SLICES),
    }


def reference_values(result, prior, best):
    """:func:`reference_figures` from the three reports' figures alone (a report read from
    a file has no per-position scores): the gap closed (:func:`gap_closed`) and the
    difference to ``best`` (the difference of two position-weighted means over the same
    positions is their paired difference), without intervals (None)."""
    gaps, versus = {}, {}
    for name in GAP_SLICES:
        figures = result["slices"][name]
        if not figures["positions"]:
            gaps[name] = versus[name] = {}
            continue
        values = gap_closed(result, prior, best, name)
        gaps[name] = {m: {"value": _defined(values[m]), "ci95": None} for m in METRICS}
        versus[name] = {
            m: {"difference": figures[m]["value"] - best["slices"][name][m]["value"], "ci95": None} for m in METRICS
        }
    return {"prior": prior["forecaster"], "bayes": best["forecaster"], "gap_closed": gaps, "versus_bayes": versus}


def _defined(value):
    return None if value is None or not math.isfinite(value) else float(value)


def gap_intervals(result, prior, best, *, bootstrap=1000, seed=0) -> dict:
    """Per slice of :data:`GAP_SLICES` (all positions, each track) and metric, the gap that
    ``result`` closes between ``prior`` and ``best`` (:func:`gap_closed`: 0 no better than
    the prior, 1 as good as Bayes) and its 95% interval over ``bootstrap`` resamples of
    whole games, the same for the three reports (those of :func:`summarise` for the same
    ``seed``): ``{"value", "ci95"}``, None where the gap is undefined (prior and best score
    the same; an interval is None if they do in any resample); ``{}`` for a slice with no
    position. The three must be reports of one test set made in this process (scores)."""
    for one in (result, prior, best):
        if not isinstance(one, Report) or one.scores is None:
            raise TypeError("gap_intervals takes three reports of evaluate(), made in this process (with their scores)")
    if not (result.test.same(prior.test) and result.test.same(best.test)):
        raise ValueError("the three reports are of different test sets")
    test, game, n_games = result.test, result.scores["game"], result.test.games
    weights = np.random.default_rng(seed).multinomial(n_games, np.full(n_games, 1 / n_games), size=bootstrap)
    masks = test.slices
    out = {}
    for name in GAP_SLICES:
        mask = masks[name]
        if not mask.any():
            out[name] = {}
            continue
        values = gap_closed(result, prior, best, name)
        out[name] = {}
        for metric in METRICS:
            means = []
            for one in (result, prior, best):
                sums, counts = _game_sums(one.scores[metric][mask], game[mask], n_games)
                means.append((weights @ sums) / np.maximum(weights @ counts, 1))
            low, high = means[1], means[2]
            with np.errstate(divide="ignore", invalid="ignore"):
                resampled = (means[0] - low) / (high - low)
            value = _defined(values[metric])
            ci95 = None
            if value is not None and np.isfinite(resampled).all():
                ci95 = [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))]
            out[name][metric] = {"value": value, "ci95": ci95}
    return out


def _check_test(test, phases=None):
    """``test`` as a TestSet: the published one of a player count is made (shown as a phase
    of ``phases``) on first use."""
    if isinstance(test, TestSet):
        return test
    if checks.is_integer(test):
        if not 2 <= test <= 4:
            raise ValueError(f"test must be a player count 2, 3 or 4 (the published test set) or a TestSet, not {test}")
        cached = _PUBLISHED.get("test")
        if phases is None or (cached is not None and cached.n_players == test):
            return TestSet.published(test)
        shown = phases.phase(f"test set: {PUBLISHED_GAMES:,} games of {test} players", 2 * PUBLISHED_GAMES)
        return TestSet.published(test, progress=shown)
    raise TypeError(
        f"test must be a player count (the published test set) or a TestSet, not {type(test).__name__} "
        f"{checks.excerpt(test)}"
    )


def predict(forecaster, test: TestSet, progress=None):
    """A forecaster's forecasts of every test position, and the seconds they took: it reads
    exactly the fields of its declared level (``forecaster.observation``, "public" by
    default). A forecaster with a memory (``recurrent = True``: ``act`` and
    ``reset_state``) plays every test game in the vector env, each from its first step.
    Refuses a forecaster trained on the test seed."""
    if not callable(getattr(forecaster, "predict_proba", None)):
        raise TypeError(
            f"forecaster must have predict_proba(obs) (see beggar_env.forecasting.forecasters), not "
            f"{type(forecaster).__name__} {checks.excerpt(forecaster)}"
        )
    test = _check_test(test)
    checks.callback("progress", progress)
    _check_players(forecaster, test)
    if getattr(forecaster, "trained_on_seed", None) == test.seed:
        raise ValueError(f"{forecaster.name} was trained on the test seed {test.seed}: use another training seed")
    from .forecasters import BayesMC

    level = getattr(forecaster, "observation", "public")
    n = len(test.labels)
    if getattr(forecaster, "recurrent", False):  # its memory needs each game in order: played in the vector env
        _check_recurrent(forecaster)
        forecaster.reset_state()
        probs, seconds = play(lambda obs: forecaster.act(obs, "probs"), test, level, "probs", progress)
        return _check_forecasts(probs, n, test.n_players + 1), seconds
    obs = test.observations(level)
    started = time.perf_counter()
    if isinstance(forecaster, BayesMC):  # minutes of rollouts: show progress
        probs = forecaster.predict_proba(obs, progress=progress)
    else:
        probs = forecaster.predict_proba(obs)
    if progress is not None:
        progress(n, n)
    probs = _check_forecasts(probs, n, test.n_players + 1)
    return probs, time.perf_counter() - started


def _check_players(forecaster, test=None):
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


def _check_recurrent(forecaster):
    """A forecaster with a memory (``recurrent = True``) has ``reset_state()`` and ``act(obs, forecast)``."""
    missing = [name for name in ("reset_state", "act") if not callable(getattr(forecaster, name, None))]
    if missing:
        raise TypeError(
            f"the forecaster has recurrent=True, so evaluate plays it step by step in the env: it needs "
            f"{' and '.join(f'{name}()' for name in missing)} (see beggar_env.forecasting.forecasters.Forecaster), "
            f"which {type(forecaster).__name__} lacks"
        )


SUM_TOLERANCE = 1e-4  # how far from 1 a row of forecast probabilities may sum (float32 rounding: about 1e-7)


def _check_forecasts(probs, n, n_outcomes, weights=False, who="predict_proba"):
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


def evaluate(
    forecaster, test=2, *, bootstrap=1000, progress=None, name=None, observation=None, forecast="label", reference=True
):
    """Evaluate a forecaster on the published protocol: a :class:`Report`.

    ``forecaster`` is any object with ``predict_proba(obs) -> (n, n_players + 1)`` (see
    :mod:`beggar_env.forecasting.forecasters`), reading the level it declares as its
    ``observation`` attribute ("public", "counted" or "full"; "public" if it has none); or
    a policy, a callable ``policy(obs) -> actions`` for a batch of observations, scored by
    acting in the vector env (``observation`` and ``forecast`` say what it reads and plays).
    ``test`` is a player count (2, 3 or 4: the published test set, every card step of
    2,000 games of the test seed) or a :class:`TestSet`. ``name`` defaults to the
    forecaster's ``name`` attribute, or its class's: a str of 1 to 80 printable characters
    without ``|`` (:func:`check_name`: it is a cell of the tables).

    ``predict_proba`` must return probabilities: finite real numbers in [0, 1], each row
    summing to 1 (within :data:`SUM_TOLERANCE`); anything else is refused (``ValueError``
    naming the first wrong row), never scored.

    ``reference``: True (the default) gives the report its gap closed between the seat
    prior and the Bayes forecaster, and its paired difference to Bayes, on all positions
    and on each track, with intervals: both are evaluated on the same test set first, once
    per test set and process (:func:`reference`: about 30 s for the published 2-player
    test set on 2 cores); False leaves them out (``report["reference"]`` is None).

    ``progress``: the first call for a player count takes minutes (the test set made, the
    reference's rollouts), so by default (None) a progress bar (tqdm) on stderr shows each
    phase when stderr is a terminal: the test set made, the forecasts, the reference's seat
    prior and Bayes forecaster, the report's figures. True shows it anywhere, False
    nothing; a callable is called as ``progress(phase, done, total)`` instead (a phase's
    name, its steps done and their total: ``done = 0`` as it starts, ``done = total`` as it
    ends) (:class:`Phases`).
    """
    forecasts = callable(getattr(forecaster, "predict_proba", None))
    if not forecasts and not callable(forecaster):
        raise TypeError(
            f"forecaster must have predict_proba(obs) (see beggar_env.forecasting.forecasters) or be a policy (a "
            f"callable), not {type(forecaster).__name__} {checks.excerpt(forecaster)}"
        )
    if name is None:
        name = check_name(_name(forecaster), "name (by default the forecaster's name attribute)")
    else:
        name = check_name(name, "name")
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    if not isinstance(reference, bool):
        raise TypeError(f"reference must be True or False, not {checks.excerpt(reference)}")
    if forecasts:  # before minutes spent on the test set
        _check_players(forecaster)
        if getattr(forecaster, "recurrent", False):
            _check_recurrent(forecaster)
    with Phases(progress) as phases:
        test = _check_test(test, phases)
        checks.memory(16 * bootstrap * test.games, f"{bootstrap:,} bootstrap resamples", "take fewer (bootstrap=1000)")
        if not forecasts:
            level = observation or getattr(forecaster, "observation", "public")
            return evaluate_policy(
                forecaster, test, name=name, observation=level, forecast=forecast, bootstrap=bootstrap,
                reference=reference, progress=phases,
            )  # fmt: skip
        level = getattr(forecaster, "observation", "public")
        if level == "full" and not test.full_view_made:  # made on first use: a phase of its own
            test.observations(level, progress=phases.phase("test set: the full view", 2 * test.games))
        probs, seconds = predict(forecaster, test, phases.phase(f"forecasts: {name}", len(test.labels)))
        return _report(name, probs, test, seconds, bootstrap, level, reference, phases)


def _report(name, probs, test, seconds, bootstrap, level, wanted, phases):
    """The report, after the reference if ``wanted`` (each a phase of ``phases``)."""
    figures = reference(test, bootstrap, phases) if wanted else None
    done = phases.phase("report: intervals and calibration", 1)
    result = report(name, probs, test, seconds, bootstrap, level, figures)
    if done is not None:
        done(1, 1)
    return result


def _name(forecaster):
    return getattr(forecaster, "name", None) or getattr(forecaster, "__name__", None) or type(forecaster).__name__


def evaluate_policy(
    policy,
    test=2,
    *,
    name="policy",
    observation="counted",
    forecast="label",
    bootstrap=1000,
    reference=True,
    progress=None,
) -> Report:
    """Evaluate a policy acting in the vector env: ``policy(obs) -> actions`` for a batch
    of observations (of the ``observation`` level), labels or probability rows as
    ``forecast`` says, on the test set's deals (``test``: a player count or a
    :class:`TestSet`), one env per game, every step scored as the protocol says
    (``reference`` and ``progress`` as for :func:`evaluate`)."""
    checks.callback("policy", policy)
    name = check_name(name, "name")
    checks.choice("forecast", forecast, ("label", "probs"))
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    if not isinstance(reference, bool):
        raise TypeError(f"reference must be True or False, not {checks.excerpt(reference)}")
    with Phases(progress) as phases:
        test = _check_test(test, phases)
        shown = phases.phase(f"forecasts: {name}, acting in the vector env", len(test.labels))
        probs, seconds = play(policy, test, observation, forecast, shown)
        return _report(name, probs, test, seconds, bootstrap, observation, reference, phases)


def play(policy, test: TestSet, observation, forecast, progress=None):
    """Every test game played in the vector env, all at once (one env per game, from its
    first step, autoreset off), with ``policy``'s action at each step as its forecast:
    (forecasts of every test position, the seconds the policy took)."""
    import gymnasium as gym

    from ..deals import format_deal, random_deals

    deals = [format_deal(d, "compact") for d in random_deals(test.games, test.n_players, test.seed)]
    envs = gym.make_vec(
        "Beggar-v0",
        num_envs=test.games,
        n_players=test.n_players,
        observation=observation,
        forecast=forecast,
        max_cards=test.max_cards,
        autoreset_mode="Disabled",
    )
    obs, _ = envs.reset(options={"deals": deals})
    game = test.data.game
    probs = np.zeros((len(game), test.n_players + 1))
    first_row = np.searchsorted(game, np.arange(test.games))  # game g's rows: first_row[g] + cards
    n_rows = np.bincount(game, minlength=test.games)
    done = np.zeros(test.games, bool)
    seconds, scored = 0.0, 0
    while not done.all():
        started = time.perf_counter()
        actions = _check_actions(policy(obs), test.games, test.n_players + 1, forecast)
        seconds += time.perf_counter() - started
        forecasts = np.eye(test.n_players + 1)[actions] if forecast == "label" else actions
        live = np.flatnonzero(~done & (obs["cards"] < n_rows))
        probs[first_row[live] + obs["cards"][live]] = forecasts[live]
        scored += len(live)
        if progress is not None:
            progress(scored, len(game))
        obs, _, terminated, _, _ = envs.step(actions)
        done |= terminated
    envs.close()
    return probs, seconds


def _check_actions(actions, n, n_outcomes, forecast):
    """A policy's actions for ``n`` envs: labels (ints 0 .. n_outcomes - 1) or probability rows."""
    what = f"a policy (an object without predict_proba, not a forecaster) must return {n} actions, one per env"
    try:
        actions = np.asarray(actions)
    except (TypeError, ValueError):
        raise ValueError(f"{what}, not {checks.excerpt(actions)}") from None
    if forecast == "probs":
        if actions.shape != (n, n_outcomes) or not np.issubdtype(actions.dtype, np.number):
            raise ValueError(f"{what}: rows of {n_outcomes} probabilities, not {checks.excerpt(actions)}")
        return _check_forecasts(actions, n, n_outcomes, weights=True, who="a policy")
    if (
        actions.shape != (n,)
        or not np.issubdtype(actions.dtype, np.integer)
        or not ((actions >= 0) & (actions < n_outcomes)).all()
    ):
        raise ValueError(f"{what}: labels 0 to {n_outcomes - 1}, not {checks.excerpt(actions)}")
    return actions


def compare(a: Report, b: Report, *, bootstrap=1000, seed=0, slices=None) -> dict:
    """The paired difference ``a - b`` of two reports of the same test positions: per slice
    (of ``slices``, by name; all of them by default) and metric, the difference of the
    position-weighted values, and its 95% interval over ``bootstrap`` resamples of whole
    games, the same resample for both (the reports must come from this process: their
    per-position scores are not saved); ``{}`` for a slice with no position."""
    for one in (a, b):
        if not isinstance(one, Report) or one.scores is None:
            raise TypeError("compare takes two reports of evaluate(), made in this process (with their scores)")
    if not a.test.same(b.test):
        raise ValueError("the two reports are of different test sets")
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    test, game, n_games = a.test, a.scores["game"], a.test.games
    weights = np.random.default_rng(seed).multinomial(n_games, np.full(n_games, 1 / n_games), size=bootstrap)
    out = {}
    masks = test.slices
    for slice_name in masks if slices is None else slices:
        mask = masks[slice_name]
        out[slice_name] = {}
        if not mask.any():
            continue
        for metric in METRICS:
            sums_a, counts = _game_sums(a.scores[metric][mask], game[mask], n_games)
            sums_b, _ = _game_sums(b.scores[metric][mask], game[mask], n_games)
            resampled = (weights @ (sums_a - sums_b)) / np.maximum(weights @ counts, 1)
            out[slice_name][metric] = {
                "difference": float((sums_a - sums_b).sum() / counts.sum()),
                "ci95": [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))],
            }
    return out


def gap_closed(result, prior, best, slice_name="all"):
    """Per metric, the fraction of the gap between the seat prior and the Bayes forecaster
    that ``result`` closes on ``slice_name`` (0: no better than the prior, 1: as good as
    Bayes; NaN where the two score the same), from the three reports' figures
    (:func:`gap_intervals` adds the interval)."""
    out = {}
    for name in METRICS:
        low = prior["slices"][slice_name][name]["value"]
        high = best["slices"][slice_name][name]["value"]
        value = result["slices"][slice_name][name]["value"]
        out[name] = (value - low) / (high - low) if high != low else float("nan")
    return out

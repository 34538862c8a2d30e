"""The protocol's report of one forecaster: :class:`Report`, the file it saves as (a JSON
submission file that ``beggar baselines --forecaster FILE`` adds to the published tables),
the layouts it has had and how an older one is read (:func:`upgrade_report`), its JSON
Schema (:data:`REPORT_SCHEMA`) and the rules a schema cannot say (:data:`REPORT_RULES`,
run by :func:`check_report`); :meth:`Report.load` reads one.

A report says what its forecaster was given (``given``): what it uses beyond its
observation and its training data, from a fixed vocabulary (:data:`GIVEN`, defined in
``docs/forecasting.md``): ``"rules engine"`` (it plays the real engine: Bayes, the
oracle), ``"hand-built machine"`` (a game machine written by hand, whatever fills its
rule), ``"teacher"`` (trained on another forecaster's outputs); an empty list for a model
that learns from observations and outcomes alone.
"""

import copy
import json
import math
import os
import re

from .. import checks, files
from ..schemas import NULL, array, integer, interval, nullable, number, obj
from ..task import LOG_FLOOR
from .metrics import (
    CARD_BIN,
    CARD_BINS,
    ECE_BINS,
    GAP_SLICES,
    HORIZON_BINS,
    METRICS,
    SLICE_NAMES,
    TRACKS,
    horizon_names,
)
from .report_rules import REPORT_RULES, derived_figure

PROTOCOL_VERSION = 2  # changes whenever a figure could change (2: each forecaster reads only its level's fields)
TEST_SEED = 0x7E57  # test deals: no training set may use this seed (evaluate checks it)
REPORT_FORMAT = "beggar-env forecast report"
# The report's layout, within one protocol version: 2 added the determined slice (the
# simulation track), the reference (gap closed per track, the paired difference to Bayes)
# and the metrics by horizon; 3 added ``given``. An older report still loads
# (upgrade_report): a layout-1 report (no "format_version") with its determined slice's
# position-weighted figures derived exactly from all and open, the rest null; a report of
# layout 1 or 2 with its ``given`` inferred from its name (the published rows'), or refused.
FORMAT_VERSION = 3
GIVEN = ("rules engine", "hand-built machine", "teacher")  # what a forecaster may be given: docs/forecasting.md
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
REPORT_KEYS_V2 = (*REPORT_KEYS_V1, "format_version", "by_horizon", "reference")
REPORT_KEYS = (*REPORT_KEYS_V2, "given")
# The published rows' names, before reports said what they were given: an older report of
# one of these names is given this (the first pattern that matches its whole name).
GIVEN_BY_NAME = (
    (r".*, distilled from .*", ["teacher"]),
    (r"Bayes \(Monte Carlo, K=\d+\)|oracle", ["rules engine"]),
    (r"learned step, rolled out \(K=\d+\)", ["hand-built machine"]),
    (
        r"uniform|seat prior|most cards|most cards, calibrated|logistic regression \((public|counted)\)"
        r"|gradient-boosted trees \((public|counted|full)\)|MLP \((public|counted|full)\)"
        r"|(GRU|transformer) \((public|counted) stream\)|GRU over each hand \(full\)|looped transformer \(full\)"
        r"|PPO \(counted\)|PPO \(counted features, log reward\)|RecurrentPPO \(public features, log reward\)",
        [],
    ),
)


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
    per-position scores behind it (:attr:`scores`, not saved) for ``protocol.compare``.

    ``str(report)`` and :meth:`markdown` give the published tables' columns: the
    forecaster, what it was given (``given``: see the module; a forecaster without a
    ``given`` attribute is given nothing, ``[]``), accuracy and log loss with their 95%
    intervals on all positions, and on each track (``metrics.TRACKS``: the open positions,
    the determined ones) with the gap it closes there between the seat prior and the Bayes
    forecaster (with its interval); :meth:`save` writes the submission file that ``beggar
    baselines --forecaster FILE`` adds to the tables, :meth:`load` reads one (an older
    layout too: :func:`upgrade_report`).
    """

    scores = None  # per position: accuracy, log_loss, brier, confidence; and game
    test = None  # the TestSet of those positions

    @staticmethod
    def header():
        cells = ["forecaster", "given", "accuracy (95% CI)", "log loss (95% CI)"]
        for track, name in TRACKS:
            where = f"{track} ({name})"
            cells += [f"{where}: accuracy (95% CI)", f"{where}: log loss (95% CI)"]
            cells.append(f"{where}: gap closed, accuracy / log loss (95% CI)")
        return cells

    def row(self):
        slices = self["slices"]
        cells = [self["forecaster"], ", ".join(self["given"]) or "-"]
        cells += [_figure_cell(slices["all"][m]) for m in ("accuracy", "log_loss")]
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


def check_given(given, what="given"):
    """What a forecaster is given beyond its observation and training data, as a report
    holds it: a list of distinct words of :data:`GIVEN`, in that order; None (no ``given``
    attribute) is ``[]``. ``TypeError`` or ``ValueError`` naming ``what``."""
    if given is None:
        return []
    if isinstance(given, str) or not isinstance(given, (list, tuple)):
        raise TypeError(f"{what} must be a list of {list(GIVEN)} (or []), not {checks.excerpt(given)}")
    unknown = [word for word in given if word not in GIVEN]
    if unknown or len(set(given)) != len(given):
        raise ValueError(f"{what} must hold distinct words of {list(GIVEN)}, not {checks.excerpt(list(given))}")
    return [word for word in GIVEN if word in given]


# ------------------------------------------------------------------ report files
# A report file is submitted by anyone (``beggar baselines --forecaster FILE`` adds it to
# the published tables): it is read as untrusted input, checked in full before anything
# is drawn or written. The JSON Schema says the structure, the types and every number's
# range; the rules (report_rules.REPORT_RULES) add what a schema cannot say.

NAME_LENGTH = 80  # characters of a forecaster's name: one cell of the tables
REPORT_FILE_BYTES = 1 << 20  # a report is 11 to 14 KB; this bounds what a file may make the tables read
LOG_LOSS_MOST = -math.log(LOG_FLOOR)  # the true outcome's probability is clipped at LOG_FLOOR
_PROBABILITY = number(0, 1)
_BOUNDS = {"accuracy": (0, 1), "log_loss": (0, LOG_LOSS_MOST), "brier": (0, 2)}
_RANGES = {name: number(low, high) for name, (low, high) in _BOUNDS.items()}
_COUNT = integer(0)
_NON_EMPTY = {"if": {"properties": {"positions": {"exclusiveMinimum": 0}}}, "then": {"required": [*METRICS, "ece"]}}


def _figure(value):
    return obj({"value": value, "ci95": interval(value), "game_weighted": value})


def _curve(*names, count=ECE_BINS):
    """Lists of probabilities (and a ``size`` list of counts), one entry per quantile bin."""
    lists = {name: array(_PROBABILITY, 1, count) for name in names}
    return obj({**lists, "size": array(integer(1), 1, count)})


_FIGURES = {name: _figure(value) for name, value in _RANGES.items()}
_SLICE = {  # summarise's figures of a slice (none for an empty one)
    **obj(
        {"positions": _COUNT, "games": _COUNT, **_FIGURES, "ece": _PROBABILITY}, optional=(*METRICS, "ece"), closed=True
    ),
    **_NON_EMPTY,
}
_DERIVED_SLICE = {  # a layout-1 report's determined slice (upgrade_report): what all and open give exactly
    **obj(
        {
            "positions": _COUNT,
            "games": NULL,  # the games with a determined position: not in a layout-1 report
            "derived": {"const": True},
            **{
                name: obj({"value": value, "ci95": NULL, "game_weighted": NULL}, closed=True)
                for name, value in _RANGES.items()
            },
            "ece": NULL,
        },
        optional=(*METRICS, "ece"),
        closed=True,
    ),
    **_NON_EMPTY,
}


def _horizon_curve(unit):
    count = HORIZON_BINS[unit]
    lists = {"positions": array(_COUNT, count, count)}
    for name, value in _RANGES.items():  # null: an empty bin
        lists[name] = array({"anyOf": [value, NULL]}, count, count)
    return obj({"bins": {"const": horizon_names(unit)}, **lists}, closed=True)


_GAP = obj(  # the gap closed: undefined (null) where the seat prior and Bayes score the same
    {"value": {"type": ["number", "null"]}, "ci95": nullable(interval())}, closed=True
)
_DIFFERENCE = obj(
    {
        "difference": number(-LOG_LOSS_MOST, LOG_LOSS_MOST),
        "ci95": nullable(interval(number(-LOG_LOSS_MOST, LOG_LOSS_MOST))),
    },
    closed=True,
)


def _per_slice(figure):
    """{slice of GAP_SLICES: {metric: figure}}; a slice with no position has no metrics."""
    metrics = obj({name: figure for name in METRICS}, closed=True)
    return obj({name: {"anyOf": [metrics, {"const": {}}]} for name in GAP_SLICES}, closed=True)


_NAME = {"type": "string", "minLength": 1, "maxLength": NAME_LENGTH, "pattern": "^[^|\\x00-\\x1f\\x7f-\\x9f]*$"}
REFERENCE_SCHEMA = obj(  # the gap closed between the seat prior and Bayes, and the paired difference to Bayes
    {"prior": _NAME, "bayes": _NAME, "gap_closed": _per_slice(_GAP), "versus_bayes": _per_slice(_DIFFERENCE)},
    closed=True,
)
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
        "format_version": {"enum": [1, 2, FORMAT_VERSION]},  # 1, 2: read from an older file (upgrade_report)
        "forecaster": _NAME,
        "observation": {"enum": ["public", "counted", "full"]},
        "given": {**array({"enum": list(GIVEN)}, 0, len(GIVEN)), "uniqueItems": True},
        "n_players": integer(2, 4),
        "positions": integer(1),
        "games": integer(1),
        "test_seed": {"const": TEST_SEED},
        "forecasts_per_s": number(high=1e15, above=0),
        "slices": obj({name: _SLICE if name != "determined" else {} for name in SLICE_NAMES}, closed=True),  # "if"
        "reliability": _curve("confidence", "accuracy"),
        "calibration": obj(
            {
                "by_outcome": {
                    "type": "object",
                    "minProperties": 3,
                    "maxProperties": 5,
                    "additionalProperties": _curve("probability", "frequency"),
                },
                "classwise_ece": _PROBABILITY,
            }
        ),
        "by_cards": obj(
            {
                "bin": {"const": CARD_BIN},
                **{name: array(value, CARD_BINS, CARD_BINS) for name, value in _RANGES.items()},
            }
        ),
        "by_horizon": {},  # see "if"
        "reference": nullable(REFERENCE_SCHEMA),  # null: evaluated without one (reference=False)
    },
    "if": {"properties": {"format_version": {"const": 1}}},  # layout 1, upgraded: derived figures, no horizon
    "then": {"properties": {"slices": {"properties": {"determined": _DERIVED_SLICE}}, "by_horizon": NULL}},
    "else": {
        "properties": {
            "slices": {"properties": {"determined": _SLICE}},
            "by_horizon": obj({unit: _horizon_curve(unit) for unit in HORIZON_BINS}, closed=True),
        }
    },
}


def _schema_without_given():
    """:data:`REPORT_SCHEMA` as a report of layout 1 upgraded or of layout 2 was written: no ``given``."""
    schema = copy.deepcopy(REPORT_SCHEMA)
    schema["required"].remove("given")
    del schema["properties"]["given"]
    schema["maxProperties"] = len(REPORT_KEYS_V2) + 1 + EXTRA_KEYS
    schema["properties"]["format_version"] = {"enum": [1, 2]}
    return schema


def _layout_1_schema():
    """:data:`REPORT_SCHEMA` as a report of layout 1 was written: no determined slice, no
    horizon, no reference, no ``format_version``, no ``given``."""
    schema = _schema_without_given()
    for key in ("if", "then", "else"):
        del schema[key]
    schema["required"] = list(REPORT_KEYS_V1)
    for key in ("format_version", "by_horizon", "reference"):
        del schema["properties"][key]
    slices = schema["properties"]["slices"]
    slices["required"].remove("determined")
    del slices["properties"]["determined"]
    return schema


REPORT_SCHEMA_V2 = _schema_without_given()
REPORT_SCHEMA_V1 = _layout_1_schema()


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
    if "format_version" not in data:
        keys = REPORT_KEYS_V1
    else:
        keys = REPORT_KEYS_V2 if data["format_version"] in (1, 2) else REPORT_KEYS
    missing = [key for key in keys if key not in data]
    if missing:
        raise ValueError(f"{path}: the report lacks {', '.join(missing)}: evaluate the forecaster again")
    if data["protocol_version"] != PROTOCOL_VERSION or data["test_seed"] != TEST_SEED:
        raise ValueError(
            f"{path}: a report of protocol version {checks.excerpt(data['protocol_version'])} (test seed "
            f"{checks.excerpt(data['test_seed'])}); this is version {PROTOCOL_VERSION} (test seed {TEST_SEED}): "
            "evaluate the forecaster again"
        )
    return data


def upgrade_report(record, where="the report") -> dict:
    """An older report as one of this layout, keeping its ``format_version`` (1 or 2) to
    say where it came from. A report of layout 1 (checked against
    :data:`REPORT_SCHEMA_V1`), marked ``"format_version": 1``: its determined slice's
    position-weighted figures derived exactly from all and open, value = (all x n_all -
    open x n_open) / n_determined (to rounding), with ``"derived": true``; what cannot be
    derived from a report is null: that slice's intervals, game-weighted figures, ECE and
    games, the horizon, and the reference (``beggar baselines`` gives a row its gap closed
    and its difference to Bayes from the figures, without intervals). A report of layout 1
    or 2 (checked against :data:`REPORT_SCHEMA_V2`) without ``given`` is given what its
    name says (:data:`GIVEN_BY_NAME`, the published rows); another name is refused
    (``ValueError`` naming ``where``): nothing says what its forecaster was given."""
    if "format_version" not in record:
        files.check_schema(record, REPORT_SCHEMA_V1, where)  # what the upgrade reads, checked first
        record = copy.deepcopy(record)
        record["slices"]["determined"] = _derived_slice(record["slices"])
        record.update(format_version=1, by_horizon=None, reference=None)
    if "given" not in record and record["format_version"] in (1, 2):
        files.check_schema(record, REPORT_SCHEMA_V2, where)
        record = {**record, "given": given_by_name(record["forecaster"], where)}
    return record


def _derived_slice(slices):
    """A layout-1 report's determined slice: its position-weighted figures derived from all
    and open (:func:`~beggar_env.forecasting.report_rules.derived_figure`), the rest null."""
    n = slices["all"]["positions"] - slices["open"]["positions"]
    determined = {"positions": n, "games": None, "derived": True}
    if n > 0:
        for name, (low, high) in _BOUNDS.items():
            value = min(max(derived_figure(slices, name), low), high)  # rounding may step just outside the range
            determined[name] = {"value": value, "ci95": None, "game_weighted": None}
        determined["ece"] = None
    return determined


def given_by_name(name, where="the report"):
    """What the published row ``name`` was given (:data:`GIVEN_BY_NAME`), for a report
    written before reports said; ``ValueError`` naming ``where`` for any other name."""
    for pattern, given in GIVEN_BY_NAME:
        if re.fullmatch(pattern, name):
            return list(given)
    raise ValueError(
        f"{where}: $.given: a report of an older layout does not say what its forecaster was given, and "
        f"{checks.excerpt(name)} is not one of the published rows: evaluate the forecaster again (or add "
        f'"given": a list of {list(GIVEN)}, [] for none)'
    )


def check_report(record, where) -> dict:
    """The report ``record`` (from :func:`read_report_file`) as this layout holds it: an
    older one upgraded (:func:`upgrade_report`). ``ValueError`` naming ``where`` (the
    file) and the first thing wrong in it: the name a cell of the tables
    (:func:`check_name`) and the report's own keys (:data:`EXTRA_KEYS` at most, short
    lowercase names, each at most :data:`EXTRA_CHARACTERS` characters of JSON), said
    plainly first; then :data:`REPORT_SCHEMA` (structure, types, every number's range,
    ``given`` words of :data:`GIVEN`); then each rule of :data:`REPORT_RULES` in turn
    (what a schema cannot say: see :mod:`beggar_env.forecasting.report_rules`), the
    message naming the rule."""
    if isinstance(record, dict) and isinstance(record.get("forecaster"), str):  # said plainly, not as a pattern
        try:
            check_name(record["forecaster"], "the forecaster's name")
        except ValueError as error:
            raise ValueError(f"{where}: $.forecaster: {error}") from None
    if isinstance(record, dict):
        _check_own_keys(record, where)
        record = upgrade_report(record, where)
    files.check_schema(record, REPORT_SCHEMA, where)
    for rule in REPORT_RULES:
        try:
            rule(record)
        except ValueError as error:
            raise ValueError(f"{where}: {error} ({rule.__name__})") from None
    return record


def _check_own_keys(record, where):
    """The keys of a report's own, beside its figures (:data:`EXTRA_KEYS` at most, short
    lowercase names, each value at most :data:`EXTRA_CHARACTERS` characters of JSON): said
    plainly, before the schema (whose message would quote the whole report)."""
    own = [key for key in record if key not in REPORT_KEYS and key != "beggar_env"]
    if len(own) > EXTRA_KEYS:
        raise ValueError(
            f"{where}: $: at most {EXTRA_KEYS} keys of the report's own beside its figures, not {len(own)}"
        )
    for key in own:
        if not isinstance(key, str) or not re.fullmatch(EXTRA_KEY_NAME, key):
            raise ValueError(f"{where}: $: a key of the report's own must be a short lowercase name "
                             f"({EXTRA_KEY_NAME}), not {checks.excerpt(key, 40)}")  # fmt: skip
        if len(json.dumps(record[key])) > EXTRA_CHARACTERS:
            raise ValueError(
                f"{where}: $.{key}: a key of the report's own must hold at most {EXTRA_CHARACTERS:,} characters of JSON"
            )

"""The study's results as ``results.json`` holds them: their schema (what the tables and
pictures read, checked before a redraw and before a write), reading and checking them, their
text, and reports added as rows (checked to be of the study's test set, named apart from its
own rows)."""

import json
import os
import re

from ... import checks, files
from ...schemas import NUMBER, array, integer, interval, obj
from ..metrics import GAP_SLICES
from ..report import REFERENCE_SCHEMA, REPORT_SCHEMA, Report, check_report, read_report_file, upgrade_report
from .gaps import add_gaps
from .settings import Protocol, learned, study_names

STRING = {"type": "string"}
COUNT = integer(0)
POSITIVE = integer(1)

_ROW = {  # a row of the tables: a report (report.REPORT_SCHEMA) with its reference: the gap it closes
    "allOf": [REPORT_SCHEMA, obj({"reference": REFERENCE_SCHEMA})]
}
_DIFFERENCE = obj({"difference": NUMBER, "ci95": interval()})  # NaN too: the gap closed between two equal rows
_PAIR = obj(  # the next row against this one
    {
        "this": STRING,
        "next": STRING,
        **{
            name: {"anyOf": [obj({"accuracy": _DIFFERENCE, "log_loss": _DIFFERENCE}), {"const": {}}]}  # {}: none
            for name in GAP_SLICES
        },
    }
)
_SWEEP = obj(  # the Bayes forecaster with K rollouts
    {
        "k": COUNT,
        **{name: NUMBER for name in ("accuracy", "log_loss", "log_loss_open", "log_loss_determined", "floor")},
        "forecasts_per_s": NUMBER,
    }
)
_STATISTICS = obj(
    {
        "games": POSITIVE,
        "cards": obj({name: NUMBER for name in ("mean", "p5", "p50", "p95", "p99", "max")}),
        "tricks": obj({"mean": NUMBER}),
        "cycles": COUNT,
        "cycle_share": NUMBER,
        "seats": array(obj({"seat": COUNT, "rate": NUMBER, "ci95": interval()})),
        "histogram_cards": array(COUNT, 1),
    }
)
_BLOCK = obj(  # one player count's results; paired and the sweep optional, as the tables read them
    {
        "reports": array(_ROW, 1),
        "positions": POSITIVE,
        "open_positions": COUNT,
        "train_samples": COUNT,
        "open_unanimous": NUMBER,
        "game_statistics": _STATISTICS,
        "paired": array(_PAIR),
        "bayes_sweep": array(_SWEEP),
    },
    optional=("paired", "bayes_sweep"),
)
_PROTOCOL = obj(
    {**{name: POSITIVE for name in Protocol.__dataclass_fields__}, "bayes_sweep": array(POSITIVE)},
    optional=("bayes_sweep",),
    closed=True,
)
RESULTS_SCHEMA = obj(  # what the tables and pictures read of results.json: checked before a redraw, and a write
    {
        "command": STRING,
        "added": array(STRING),
        "protocol": _PROTOCOL,
        "players": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"enum": ["2", "3", "4"]},
            "additionalProperties": _BLOCK,
        },
    },
    optional=("command", "added"),
)


def read_report(path, protocol, players):
    """A forecaster's or policy's report (a JSON file of ``Report.save``, from
    ``beggar_env.forecasting.evaluate``), checked to be a whole report of this protocol's
    test set for one of ``players``, named apart from the study's own rows:
    ``ValueError`` in one line naming the file and what is wrong, before any work. The
    checks are those of ``Report.load`` (``report.check_report``: the report's JSON
    Schema and what a schema cannot say); :func:`add_reports` adds those that need the
    study's results (the same test positions, slice by slice)."""
    report = read_report_file(path)
    older = "given" not in report  # upgraded by check_report; renamed here (:func:`renamed`)
    if report["n_players"] not in players or report["games"] != protocol.test_games:
        raise ValueError(
            f"{path}: a report of {checks.excerpt(report['games'])} {checks.excerpt(report['n_players'])}-player test "
            f"games, not of this protocol's test set ({protocol.test_games} games of "
            f"{' or '.join(map(str, players))} players)"
        )
    report = check_report(report, os.fspath(path))  # a report of an older layout upgraded
    if older:
        report["forecaster"] = renamed(report["forecaster"])
    name = report["forecaster"]
    own = {row.casefold() for row in study_names(protocol)}
    if name.casefold() in own or name.casefold().startswith("bayes (monte carlo"):
        raise ValueError(
            f"{path}: $.forecaster: {name!r} is the name of one of the study's own rows: give your forecaster "
            "another name (evaluate(..., name=...))"
        )
    return Report(report)


def add_reports(results, paths):
    """Add forecasters' or policies' reports (``Report.save`` files on the same test set)
    as rows (a row of the same name, added before, is replaced; :func:`place` says where). Every
    report is checked (:func:`read_report`, and its slices' positions against the
    study's) before ``results`` changes: ``ValueError`` naming the file."""
    protocol = Protocol(**{**results["protocol"], "bayes_sweep": tuple(results["protocol"].get("bayes_sweep", ()))})
    reports = [(path, read_report(path, protocol, [int(n) for n in results["players"]])) for path in paths]
    for path, report in reports:
        block = results["players"][str(report["n_players"])]
        _same_positions(path, report, block)
    for path, report in reports:
        block = results["players"][str(report["n_players"])]
        block["reports"] = [r for r in block["reports"] if r["forecaster"] != report["forecaster"]]  # a new run of it
        add_gaps([report], block["reports"])
        block["reports"].insert(place(block["reports"], report, protocol), report)


def place(rows, report, protocol):
    """Where an added row goes among a study's ``rows`` (the oracle last): a reference (given
    the rules engine or a hand-built machine, :func:`~.settings.learned`) just before the
    oracle; a learned model's after the rows added before it but before the references
    added at the end, so that these stay beside the oracle."""
    end = len(rows) - 1
    if learned(report):
        own = set(study_names(protocol))
        while end > 0 and not learned(rows[end - 1]) and rows[end - 1]["forecaster"] not in own:
            end -= 1
    return end


def _same_positions(path, report, block):
    """``ValueError`` unless ``report`` counts the positions of the study's test set, slice
    by slice (a report of another player count's test set, relabelled, does not)."""
    if not block["reports"]:
        return
    study = block["reports"][0]["slices"]
    for name, figures in study.items():
        theirs = report["slices"].get(name, {})
        games = figures["games"] if not theirs.get("derived") else None  # a derived slice's games are not known
        if (theirs.get("positions"), theirs.get("games")) != (figures["positions"], games):
            raise ValueError(
                f"{path}: $.slices[{name!r}]: {theirs.get('positions')} positions of {theirs.get('games')} games, "
                f"where the study's {report['n_players']}-player test set has {figures['positions']} of "
                f"{figures['games']}: not a report of this test set"
            )


def read_results(path):
    """A study's ``results.json`` (:func:`write`), checked against :data:`RESULTS_SCHEMA`
    (every figure the tables and pictures read): ``ValueError`` in one line naming the file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)  # not files.read_json: a gap closed between two equal rows is NaN
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist: run the study first (beggar baselines --out DIR)") from None
    except (OSError, ValueError, RecursionError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0] or type(error).__name__
        raise ValueError(f"{path} cannot be read as JSON: {reason}") from None
    upgrade_results(results, path)
    check_results(results, path)
    return results


RENAMED = (  # a published row's earlier name, which said more than the row is: its name now
    (r"learned step, rolled out \(K=(\d+)\)", r"Bayes over a hand-built machine, learned rule table (K=\1)"),
)


def renamed(name):
    """The name a row of an older layout takes now (:data:`RENAMED`; ``name`` if none): the
    learned step rolled out is Bayes Monte Carlo over a hand-built queue machine whose rule
    table is learned, and is named so (``RolledStep``'s name), as a reference."""
    for old, new in RENAMED:
        if re.fullmatch(old, name):
            return re.sub(old, new, name)
    return name


def upgrade_results(results, where):
    """The rows of a study written before rows said what they were given, as this layout
    holds them (in place): each given what its name says (``report.upgrade_report``, which
    keeps its ``format_version``), and :func:`renamed`. What the upgrade cannot read is left
    as it is, for :func:`check_results` to say what is wrong. Returns ``results``."""
    blocks = results.get("players") if isinstance(results, dict) else None
    for n, block in blocks.items() if isinstance(blocks, dict) else ():
        rows = block.get("reports") if isinstance(block, dict) else None
        for i, row in enumerate(rows if isinstance(rows, list) else ()):
            if isinstance(row, dict) and "format_version" in row and "given" not in row:
                row = upgrade_report(row, f"{where}: $.players['{n}'].reports[{i}]")
                rows[i] = {**row, "forecaster": renamed(row["forecaster"])}
    return results


def check_results(results, where):
    """``ValueError`` naming ``where`` unless ``results`` (as results.json holds them) is what
    the tables and pictures can draw: :data:`RESULTS_SCHEMA`, and every row of a player
    count a report of that player count."""
    blocks = results.get("players") if isinstance(results, dict) else None
    rows = [row for block in (blocks or {}).values() if isinstance(block, dict) for row in block.get("reports", [])]
    if any(isinstance(row, dict) and "format_version" not in row for row in rows if isinstance(rows, list)):
        raise ValueError(
            f"{where}: a study written before the two tracks (its rows have no format_version): run the study "
            "again (beggar baselines --out DIR)"
        )
    files.check_schema(results, RESULTS_SCHEMA, where)
    for n, block in results["players"].items():
        for i, row in enumerate(block["reports"]):
            if row["n_players"] != int(n):
                raise ValueError(f"{where}: $.players['{n}'].reports[{i}]: a report of {row['n_players']} players")


def results_text(results) -> str:
    """``results.json``'s text: compact JSON (no indentation: the published study's is
    440 KB so, 690 KB indented), one line."""
    return json.dumps(results, separators=(",", ":")) + "\n"

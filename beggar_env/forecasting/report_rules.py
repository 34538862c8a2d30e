"""The rules of a report that a JSON Schema cannot say, one small named function each (as
scikit-learn's estimator checks are): :data:`REPORT_RULES`, run in turn by
``report.check_report`` on a report that its schema has taken.

Each rule takes the report (a dict, as JSON holds it, of this layout) and raises
``ValueError("PLACE: WHAT")`` at the first thing it finds wrong; ``check_report`` adds the
file's name before it and the rule's name after it, so that a refusal says where, what
and which rule. A new rule is a function here, added to :data:`REPORT_RULES`, with a test
of a report broken in exactly that way (``tests/test_tracks.py``).
"""

import math

from .. import checks
from .metrics import METRICS, outcome_names


def derived_figure(slices, metric):
    """The determined slice's position-weighted ``metric`` derived from all and open (a
    report of layout 1 has no determined slice of its own): (all x n_all - open x n_open)
    / n_determined."""
    every, open_ = slices["all"], slices["open"]
    n = every["positions"] - open_["positions"]
    return (every[metric]["value"] * every["positions"] - open_[metric]["value"] * open_["positions"]) / n


def _walk(value, place):
    """Every (place, value) of a JSON value, depth first."""
    yield place, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{place}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{place}[{i}]")


def check_finite_numbers(record):
    """Every number finite: a JSON number too large for a float (1e400) reads as infinity."""
    for place, value in _walk(record, "$"):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{place}: {value} is not a finite number")


def _whole(value, place):
    if not checks.is_integer(value):  # JSON Schema takes 2.0 for an integer; the tables' keys would not
        raise ValueError(f"{place}: must be a whole number written without a point, not {value!r}")


def check_whole_numbers(record):
    """The versions, the seed and every count written as whole numbers, without a point."""
    for key in ("protocol_version", "format_version", "test_seed", "n_players", "games", "positions"):
        _whole(record[key], f"$.{key}")
    for name, figures in record["slices"].items():
        for key in ("positions",) if figures.get("derived", False) else ("positions", "games"):
            _whole(figures[key], f"$.slices[{name!r}].{key}")


def check_slice_counts(record):
    """Each slice's positions and games within the report's, at least one position per
    game; all positions in the slice of all."""
    positions, games = record["positions"], record["games"]
    for name, figures in record["slices"].items():
        place, derived = f"$.slices[{name!r}]", figures.get("derived", False)
        if figures["positions"] > positions or (not derived and figures["games"] > games):
            raise ValueError(
                f"{place}: {figures['positions']} positions of {figures['games']} games, more than the report's"
            )
        if not derived and figures["positions"] and not 0 < figures["games"] <= figures["positions"]:
            raise ValueError(f"{place}: {figures['positions']} positions cannot be of {figures['games']} games")
    every = record["slices"]["all"]
    if every["positions"] != positions or every["games"] != games:
        raise ValueError(f"$.slices['all']: must hold all {positions:,} positions of the {games:,} games")


def _interval(figure, place):
    if figure.get("ci95") is not None and figure["ci95"][0] > figure["ci95"][1]:
        raise ValueError(f"{place}.ci95: the interval {figure['ci95']} is upside down")


def check_intervals(record):
    """Each interval low to high: the slices' figures and the reference's."""
    for name, figures in record["slices"].items():
        for metric in METRICS:
            if metric in figures:
                _interval(figures[metric], f"$.slices[{name!r}].{metric}")
    reference = record["reference"]
    for part in ("gap_closed", "versus_bayes") if reference else ():
        for name, metrics in reference[part].items():
            for metric, figure in metrics.items():
                _interval(figure, f"$.reference.{part}[{name!r}].{metric}")


def check_tracks_add_up(record):
    """The open and the determined positions (the two tracks) add up to all of them."""
    slices, positions = record["slices"], record["positions"]
    if slices["open"]["positions"] + slices["determined"]["positions"] != positions:
        raise ValueError(
            f"$.slices['determined']: {slices['determined']['positions']:,} determined and "
            f"{slices['open']['positions']:,} open positions are not all {positions:,} positions"
        )


def check_derived_figures(record):
    """A derived figure (a layout-1 report's determined slice) is what all and open give."""
    slices, positions = record["slices"], record["positions"]
    determined = slices["determined"]
    if not (determined.get("derived") and determined["positions"]):
        return
    for metric in METRICS:
        given, exact = determined[metric]["value"], derived_figure(slices, metric)
        if abs(given - exact) > 1e-9 * max(1.0, abs(exact)) * positions / determined["positions"]:
            raise ValueError(
                f"$.slices['determined'].{metric}.value: {given!r} is not what all and open give ({exact!r}): a "
                "derived figure must be derived"
            )


def check_outcomes(record):
    """The calibration curves' outcomes are those of the report's player count."""
    n_players, by_outcome = record["n_players"], record["calibration"]["by_outcome"]
    outcomes = outcome_names(n_players)
    if list(by_outcome) != outcomes:
        raise ValueError(
            f"$.calibration.by_outcome: the outcomes of {n_players} players are {outcomes}, not {list(by_outcome)}"
        )


def check_curves(record):
    """Each reliability curve has one entry per bin in each list, its bins' whole sizes
    adding up to the positions."""
    positions, by_outcome = record["positions"], record["calibration"]["by_outcome"]
    curves = [("$.reliability", record["reliability"], ("confidence", "accuracy"))]
    curves += [(f"$.calibration.by_outcome[{o!r}]", by_outcome[o], ("probability", "frequency")) for o in by_outcome]
    for place, curve, names in curves:
        lengths = {len(curve[name]) for name in (*names, "size")}
        if len(lengths) > 1:
            raise ValueError(
                f"{place}: {', '.join(names)} and size must have one entry per bin, not {sorted(lengths)} entries"
            )
        if not all(checks.is_integer(size) for size in curve["size"]) or sum(curve["size"]) != positions:
            raise ValueError(f"{place}.size: the bins' whole sizes must add up to the {positions:,} positions")


def check_horizon(record):
    """The horizon's bins add up to the positions; an empty bin has no figure, a bin of positions has one."""
    positions = record["positions"]
    for unit, curve in (record["by_horizon"] or {}).items():
        place = f"$.by_horizon.{unit}"
        if sum(curve["positions"]) != positions:
            raise ValueError(f"{place}.positions: the bins' positions must add up to the {positions:,} positions")
        for metric in METRICS:
            for i, (count, value) in enumerate(zip(curve["positions"], curve[metric])):
                if (count == 0) != (value is None):
                    raise ValueError(
                        f"{place}.{metric}[{i}]: an empty bin has no figure (null), a bin of positions has one"
                    )


def check_reference(record):
    """The reference has figures for each slice of positions and none for an empty one; an
    undefined gap closed (null) has no interval."""
    reference, slices = record["reference"], record["slices"]
    for part in ("gap_closed", "versus_bayes") if reference else ():
        for name, metrics in reference[part].items():
            place = f"$.reference.{part}[{name!r}]"
            if bool(metrics) != bool(slices[name]["positions"]):
                raise ValueError(f"{place}: a slice of positions has figures here, an empty one has none ({{}})")
            for metric, figure in metrics.items():
                if part == "gap_closed" and figure["value"] is None and figure["ci95"] is not None:
                    raise ValueError(f"{place}.{metric}: an undefined gap closed (null) has no interval")


REPORT_RULES = (
    check_finite_numbers,
    check_whole_numbers,
    check_slice_counts,
    check_intervals,
    check_tracks_add_up,
    check_derived_figures,
    check_outcomes,
    check_curves,
    check_horizon,
    check_reference,
)

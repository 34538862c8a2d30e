"""The gap each row of the study closes: its reference against the study's seat prior
and Bayes rows, on all positions and each track, and its paired difference to Bayes."""

from .. import protocol as ev
from ..metrics import reference_values


def add_gaps(reports, among, bootstrap=1000):
    """Each report's reference against the study's seat prior and Bayes rows: the gap it
    closes and its paired difference to Bayes, on all positions and each track
    (``protocol.reference_figures``, with intervals, for a report with its per-position
    scores). A report read from a file has none: the figures are computed from its slices
    (``metrics.reference_values``), and its own intervals are kept where its reference is
    the same (the same rows, the same figures: an ``evaluate`` of the published test set
    against the published study); else it has none."""
    prior = next(r for r in among if r["forecaster"] == "seat prior")
    bayes = next(r for r in among if r["forecaster"].startswith("Bayes (Monte Carlo"))
    for result in reports:
        if getattr(result, "scores", None) is not None and prior.scores is not None and bayes.scores is not None:
            result["reference"] = ev.reference_figures(result, prior, bayes, bootstrap=bootstrap)
            continue
        figures = reference_values(result, prior, bayes)
        if not _same_reference(result.get("reference"), figures):
            result["reference"] = figures


def _same_reference(theirs, ours, tolerance=1e-9):
    """Whether a report's own reference is the study's: the same rows and figures."""
    if not theirs or (theirs["prior"], theirs["bayes"]) != (ours["prior"], ours["bayes"]):
        return False
    for part, key in (("gap_closed", "value"), ("versus_bayes", "difference")):
        for name, metrics in ours[part].items():
            if set(theirs[part].get(name, {})) != set(metrics):
                return False
            for metric, figure in metrics.items():
                a, b = theirs[part][name][metric][key], figure[key]
                if (a is None) != (b is None) or (a is not None and abs(a - b) > tolerance * max(1.0, abs(b))):
                    return False
    return True

"""The protocol's figures: pure functions over arrays of forecasts, labels and games, with
the slices and bins they are taken over (``docs/forecasting.md`` gives the reasons).

* Per position (:func:`position_scores`): accuracy (the most probable outcome is the true
  one; the first on ties, as the env scores it), log loss (natural log, the true outcome's
  probability clipped at ``task.LOG_FLOOR``), Brier score (squared error summed over the
  ``n_players + 1`` outcomes: one scale for 2, 3 and 4 players).
* Calibration: the top label's reliability over quantile bins of confidence and its
  expected calibration error (:func:`calibration_bins`, :func:`expected_calibration_error`);
  each outcome's (:func:`calibration`).
* Slices (:func:`slice_masks`, :data:`SLICE_NAMES`): all positions; by cards played so far
  (:data:`PHASES`); by progress quartile (cards so far / the game's length: for slicing
  only, never a feature); the open positions, where a card-counter still sees unseen cards
  of two classes or more, and the determined ones, the rest. The two tracks
  (:data:`TRACKS`) are the open and the determined slices.
* Bins: by cards played (:func:`by_cards`) and by horizon, the tricks and the cards still
  to be played (:func:`horizon`, :func:`by_horizon`), in bins of powers of 2.
* Intervals: position-weighted means (the primary figure, equal to the env's mean reward
  per step) and game-weighted means; 95% bootstrap intervals that resample whole games,
  drawn by the one :func:`bootstrap_weights` that every figure shares (:func:`summarise`,
  :func:`paired_difference`, :func:`resampled_gaps`): the same seed gives the same
  resampled games to every slice and every report.
* The gap closed between the seat prior and the Bayes forecaster (:func:`gap_closed`).

A new metric goes here: a function of the positions' scores, then a key in
:func:`summarise` (and in the report's schema, :mod:`beggar_env.forecasting.report`).
"""

import math

import numpy as np

from ..task import LOG_FLOOR

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


def phase_name(low, high):
    return f"cards {low}-{high - 1}" if high is not None else f"cards {low}+"


SLICE_NAMES = (
    "all",
    *(phase_name(low, high) for low, high in PHASES),
    *(f"progress Q{q}" for q in range(1, 5)),
    "open",
    "determined",
)


def slice_masks(cards, progress, unseen):
    """Boolean masks of the positions of each slice (:data:`SLICE_NAMES`), by name, from
    the cards played so far, the progress (cards so far / the game's length) and the
    unseen counts of each card class."""
    masks = {"all": np.ones(len(cards), bool)}
    for low, high in PHASES:
        masks[phase_name(low, high)] = (cards >= low) & (cards < (high if high is not None else np.inf))
    for q in range(4):
        masks[f"progress Q{q + 1}"] = (progress >= q / 4) & ((progress < (q + 1) / 4) | (q == 3))
    masks["open"] = (unseen > 0).sum(axis=1) >= 2
    masks["determined"] = ~masks["open"]
    return masks


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


def reliability(scores):
    """The top label's reliability diagram: each quantile bin's mean confidence, accuracy and size."""
    mean_confidence, accuracy, sizes = calibration_bins(scores["confidence"], scores["accuracy"])
    return {"confidence": mean_confidence.tolist(), "accuracy": accuracy.tolist(), "size": sizes.tolist()}


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


# ------------------------------------------------------------------ intervals


def bootstrap_weights(n_games, bootstrap=1000, seed=0):
    """How many times each of ``n_games`` games is drawn in each of ``bootstrap`` resamples
    of whole games (``(bootstrap, n_games)``, each row summing to ``n_games``): the one
    draw behind every interval, so that a seed gives every figure the same resamples."""
    return np.random.default_rng(seed).multinomial(n_games, np.full(n_games, 1 / n_games), size=bootstrap)


def game_sums(values, game, n_games):
    """Per game: the sum of ``values`` over its positions, and its number of positions."""
    return np.bincount(game, weights=values, minlength=n_games), np.bincount(game, minlength=n_games)


def resampled_means(weights, sums, counts):
    """The position-weighted mean in each resample (``weights``: :func:`bootstrap_weights`)
    of per-game ``sums`` over ``counts`` positions (:func:`game_sums`)."""
    return (weights @ sums) / np.maximum(weights @ counts, 1)


def interval95(resampled):
    """The 95% interval of resampled figures: their 2.5th and 97.5th percentiles."""
    return [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))]


def summarise(scores, game, n_games, mask, bootstrap=1000, seed=0):
    """The metrics of the positions in ``mask``: position-weighted value with its 95%
    bootstrap interval (games resampled), game-weighted value, and ECE.

    Parameters
    ----------
    scores : each position's scores (:func:`position_scores`).
    game : each position's game (0 to ``n_games - 1``).
    n_games : the games of the test set.
    mask : the positions of the slice.
    bootstrap : the resamples of whole games behind each interval.
    seed : the seed of the resamples (:func:`bootstrap_weights`).
    """
    game = game[mask]
    out = {"positions": int(mask.sum()), "games": int(len(np.unique(game)))}
    if out["positions"] == 0:
        return out
    weights = bootstrap_weights(n_games, bootstrap, seed)
    for name in METRICS:
        sums, counts = game_sums(scores[name][mask], game, n_games)
        played = counts > 0
        out[name] = {
            "value": float(sums.sum() / counts.sum()),
            "ci95": interval95(resampled_means(weights, sums, counts)),
            "game_weighted": float((sums[played] / counts[played]).mean()),
        }
    out["ece"] = expected_calibration_error(scores["confidence"][mask], scores["accuracy"][mask])
    return out


def paired_difference(a, b, game, n_games, weights):
    """The difference ``a - b`` of two forecasters' scores of the same positions (of games
    ``game``): the difference of their position-weighted means, and its 95% interval over
    the resamples ``weights`` (:func:`bootstrap_weights`), the same games for both."""
    sums_a, counts = game_sums(a, game, n_games)
    sums_b, _ = game_sums(b, game, n_games)
    return {
        "difference": float((sums_a - sums_b).sum() / counts.sum()),
        "ci95": interval95(resampled_means(weights, sums_a - sums_b, counts)),
    }


def gap_closed(result, prior, best, slice_name="all"):
    """Per metric, the fraction of the gap between the seat prior and the Bayes forecaster
    that ``result`` closes on ``slice_name`` (0: no better than the prior, 1: as good as
    Bayes; NaN where the two score the same), from the three reports' figures (their
    ``slices``; ``protocol.gap_intervals`` adds the interval)."""
    out = {}
    for name in METRICS:
        low = prior["slices"][slice_name][name]["value"]
        high = best["slices"][slice_name][name]["value"]
        value = result["slices"][slice_name][name]["value"]
        out[name] = (value - low) / (high - low) if high != low else float("nan")
    return out


def resampled_gaps(result, prior, best, game, n_games, weights):
    """The gap that scores ``result`` close between ``prior`` and ``best`` (three
    forecasters' scores of the same positions, of games ``game``) in each resample of
    ``weights``: infinite or NaN in a resample where prior and best score the same.

    Parameters
    ----------
    result, prior, best : the three forecasters' scores of one metric, a value per position.
    game : each position's game (0 to ``n_games - 1``).
    n_games : the games of the test set.
    weights : the resamples (:func:`bootstrap_weights`).
    """
    means = [resampled_means(weights, *game_sums(values, game, n_games)) for values in (result, prior, best)]
    low, high = means[1], means[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (means[0] - low) / (high - low)


def defined(value):
    """A figure as a report holds it: None for one that is undefined (None, NaN, infinite)."""
    return None if value is None or not math.isfinite(value) else float(value)


# ------------------------------------------------------------------ bins


def by_cards(scores, cards):
    """Each metric's position-weighted mean in bins of :data:`CARD_BIN` cards played so far
    (the last bin open-ended; an empty bin's mean is 0)."""
    bins = np.minimum(cards // CARD_BIN, CARD_BINS - 1)
    counts = np.maximum(np.bincount(bins, minlength=CARD_BINS), 1)
    return {
        "bin": CARD_BIN,
        **{m: (np.bincount(bins, weights=scores[m], minlength=CARD_BINS) / counts).tolist() for m in METRICS},
    }


def by_horizon(scores, left):
    """Each metric's position-weighted mean in each horizon bin (:func:`horizon_bins`) of
    tricks and of cards still to be played (``left``: :func:`horizon`), with the bin's
    positions; None for an empty bin."""
    out = {}
    for unit, remaining in left.items():
        count = HORIZON_BINS[unit]
        bins = horizon_bins(remaining, unit)
        positions = np.bincount(bins, minlength=count)
        curve = {"bins": horizon_names(unit), "positions": positions.tolist()}
        for metric in METRICS:
            sums = np.bincount(bins, weights=scores[metric], minlength=count)
            curve[metric] = [float(total / n) if n else None for total, n in zip(sums, positions)]
        out[unit] = curve
    return out


def reference_values(result, prior, best):
    """A report's reference (as ``protocol.reference_figures`` gives it) from the three
    reports' figures alone (a report read from a file has no per-position scores): the
    gap closed (:func:`gap_closed`) and the difference to ``best`` (the difference of two
    position-weighted means over the same positions is their paired difference), without
    intervals (None)."""
    gaps, versus = {}, {}
    for name in GAP_SLICES:
        figures = result["slices"][name]
        if not figures["positions"]:
            gaps[name] = versus[name] = {}
            continue
        values = gap_closed(result, prior, best, name)
        gaps[name] = {m: {"value": defined(values[m]), "ci95": None} for m in METRICS}
        versus[name] = {
            m: {"difference": figures[m]["value"] - best["slices"][name][m]["value"], "ci95": None} for m in METRICS
        }
    return {"prior": prior["forecaster"], "bayes": best["forecaster"], "gap_closed": gaps, "versus_bayes": versus}

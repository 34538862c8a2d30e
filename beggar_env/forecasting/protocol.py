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
  never a feature); and the open positions, where a card-counter still sees unseen cards
  of two classes or more (elsewhere the table determines the outcome).
* Position-weighted means (the primary figure, equal to the env's mean reward per step)
  and game-weighted means (each game's mean, averaged); 95% bootstrap intervals that
  resample whole games.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .. import checks, datasets
from ..task import LOG_FLOOR

TEST_SEED = 0x7E57  # test deals: no training set may use this seed (evaluate checks it)
PHASES = ((0, 26), (26, 52), (52, 104), (104, 208), (208, None))
METRICS = ("accuracy", "log_loss", "brier")
ECE_BINS = 10
CARD_BIN, CARD_BINS = 10, 40  # the metrics by cards played: bins of 10 cards, the last one 390+


def phase_name(low, high):
    return f"cards {low}-{high - 1}" if high is not None else f"cards {low}+"


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

    @classmethod
    def generate(cls, n_players, games, seed=TEST_SEED, max_cards=None, threads=None):
        data = datasets.generate(
            games,
            n_players=n_players,
            observation="counted",
            samples="card",
            seed=seed,
            max_cards=max_cards,
            threads=threads,
        )
        return cls(n_players, games, seed, max_cards, data)

    def observations(self, level):
        """The test positions as the ``level`` forecaster reads them (a dict of fields)."""
        if level != "full":
            return self.data.fields
        if self._full is None:
            self._full = datasets.generate(
                self.games,
                n_players=self.n_players,
                observation="full",
                samples="card",
                seed=self.seed,
                max_cards=self.max_cards,
            )
        return self._full.fields

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
        return masks


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


REPORT_KEYS = ("forecaster", "n_players", "positions", "games", "forecasts_per_s", "slices", "reliability", "by_cards")


def report(name, probs, test, seconds, bootstrap=1000):
    """The protocol's report of forecasts ``probs`` (one row per test position): per slice,
    each metric's value, 95% interval and game-weighted value, and ECE; the reliability
    diagram and the metrics by cards played (bins of ``CARD_BIN`` cards) of all positions;
    forecasts per second."""
    scores = position_scores(probs, test.labels)
    game = test.data.game
    mean_confidence, accuracy, sizes = calibration_bins(scores["confidence"], scores["accuracy"])
    bins = np.minimum(test.data.fields["cards"] // CARD_BIN, CARD_BINS - 1)
    counts = np.maximum(np.bincount(bins, minlength=CARD_BINS), 1)
    return {
        "forecaster": name,
        "n_players": test.n_players,
        "positions": len(probs),
        "games": test.games,
        "forecasts_per_s": len(probs) / seconds if seconds > 0 else float("inf"),
        "slices": {
            slice_name: summarise(scores, game, test.games, mask, bootstrap) for slice_name, mask in test.slices.items()
        },
        "reliability": {"confidence": mean_confidence.tolist(), "accuracy": accuracy.tolist(), "size": sizes.tolist()},
        "by_cards": {
            "bin": CARD_BIN,
            **{m: (np.bincount(bins, weights=scores[m], minlength=CARD_BINS) / counts).tolist() for m in METRICS},
        },
    }


def _check_test(test):
    if not isinstance(test, TestSet):
        raise TypeError(f"test must be a TestSet (TestSet.generate), not {type(test).__name__} {checks.excerpt(test)}")


def forecast(forecaster, test: TestSet, progress=None):
    """A forecaster's forecasts of every test position, and the seconds they took.
    Refuses a forecaster trained on the test seed."""
    if not callable(getattr(forecaster, "predict_proba", None)):
        raise TypeError(
            f"forecaster must have predict_proba(obs) (see beggar_env.forecasting.forecasters), not "
            f"{type(forecaster).__name__} {checks.excerpt(forecaster)}"
        )
    _check_test(test)
    checks.callback("progress", progress)
    if getattr(forecaster, "n_players", test.n_players) != test.n_players:
        raise ValueError(f"the forecaster is for {forecaster.n_players} players, the test set {test.n_players}")
    if getattr(forecaster, "trained_on_seed", None) == test.seed:
        raise ValueError(f"{forecaster.name} was trained on the test seed {test.seed}: use another training seed")
    from .forecasters import BayesMC

    obs = test.observations(getattr(forecaster, "observation", "public"))
    started = time.perf_counter()
    if isinstance(forecaster, BayesMC):  # minutes of rollouts: show progress
        probs = forecaster.predict_proba(obs, progress=progress)
    else:
        probs = forecaster.predict_proba(obs)
    return probs, time.perf_counter() - started


def evaluate(forecaster, test: TestSet, *, bootstrap=1000, progress=None) -> dict:
    """Evaluate a forecaster (see :mod:`beggar_env.forecasting.forecasters`) on a :class:`TestSet`: the
    protocol's :func:`report` of its forecasts."""
    _check_test(test)
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    checks.memory(16 * bootstrap * test.games, f"{bootstrap:,} bootstrap resamples", "take fewer (bootstrap=1000)")
    probs, seconds = forecast(forecaster, test, progress)
    return report(getattr(forecaster, "name", type(forecaster).__name__), probs, test, seconds, bootstrap)


def evaluate_policy(
    policy, test: TestSet, *, name="policy", observation="counted", forecast="label", bootstrap=1000
) -> dict:
    """Evaluate a policy acting in the vector env: ``policy(obs) -> actions`` for a batch
    of observations, labels or probability rows as ``forecast`` says, on the test set's
    deals, one env per game, every step scored as the protocol says."""
    import gymnasium as gym

    from ..deals import format_deal, random_deals

    checks.choice("forecast", forecast, ("label", "probs"))
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
    game, cards = test.data.game, test.data.fields["cards"]
    probs = np.zeros((len(game), test.n_players + 1))
    row_of = {(g, c): i for i, (g, c) in enumerate(zip(game.tolist(), cards.tolist()))}
    done = np.zeros(test.games, bool)
    seconds = 0.0
    while not done.all():
        started = time.perf_counter()
        actions = np.asarray(policy(obs))
        seconds += time.perf_counter() - started
        forecasts = np.eye(test.n_players + 1)[actions] if forecast == "label" else actions
        for g in np.flatnonzero(~done):
            probs[row_of[(g, int(obs["cards"][g]))]] = forecasts[g]
        obs, _, terminated, _, _ = envs.step(actions)
        done |= terminated
    envs.close()
    return report(name, probs, test, seconds, bootstrap)


def gap_closed(result, prior, best, slice_name="all"):
    """Per metric, the fraction of the gap between the seat prior and the Bayes forecaster
    that ``result`` closes (0: no better than the prior, 1: as good as Bayes)."""
    out = {}
    for name in METRICS:
        low = prior["slices"][slice_name][name]["value"]
        high = best["slices"][slice_name][name]["value"]
        value = result["slices"][slice_name][name]["value"]
        out[name] = (value - low) / (high - low) if high != low else float("nan")
    return out

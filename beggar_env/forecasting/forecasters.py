"""Forecasters of the winner: one small interface, baselines from trivial to Bayes-optimal.

A forecaster turns a batch of observations (a dict of fields with a leading batch axis, as
the vector env and ``Dataset.fields`` give them) into probabilities over the
``n_players + 1`` outcomes (each seat, then "no winner"):

* ``predict_proba(obs)`` -> float64 array (batch, n_players + 1), rows summing to 1;
* ``fit(dataset)`` trains a learned one on a :class:`beggar_env.datasets.Dataset` (the
  others return themselves);
* ``act(obs, forecast)`` is its action in ``Beggar-v0`` or the vector env: a label (the
  most probable outcome) or the probabilities, for one observation or a batch;
* ``observation`` names the level it reads ("public", "counted" or "full");
* ``given`` lists what it uses beyond its observation and its training data, in the words
  of ``report.GIVEN`` (``docs/forecasting.md``): ``["rules engine"]`` for one that plays
  the real engine (:class:`BayesMC`, :class:`Oracle`), ``[]`` for the rest;
* ``reports_progress``: whether ``predict_proba(obs, progress=...)`` takes a
  ``progress(done, total)`` callback (the Bayes forecaster's minutes of rollouts).

Your own model is a forecaster if it has these. The baselines, weakest first:
:class:`Uniform`, :class:`SeatPrior`, :class:`MostCards`, :class:`CalibratedMostCards`,
:class:`Learned` (logistic regression, gradient-boosted trees, an MLP, from
scikit-learn), :class:`BayesMC` (the Bayes posterior given what a card-counter knows, by
Monte Carlo: the ceiling for anything that sees only the table) and :class:`Oracle`
(every hand known: the outcome is determined). ``docs/forecasting.md`` describes them.
"""

import numpy as np

from .. import checks, core, gpu
from ..game import simulate_blocks
from . import features


class Forecaster:
    """The interface (see the module docstring); subclasses set ``name``, ``observation``
    (and ``given``, if they use more than their observation and training data) and
    implement ``predict_proba``."""

    name = "forecaster"
    observation = "public"
    given = ()  # what it uses beyond its observation and training data (report.GIVEN)
    reports_progress = False  # whether predict_proba takes progress=

    def __init__(self, n_players: int = 2):
        self.n_players = checks.n_players(n_players)
        self.n_outcomes = self.n_players + 1

    def fit(self, dataset) -> "Forecaster":
        return self

    def predict_proba(self, obs: dict) -> np.ndarray:
        raise NotImplementedError

    def act(self, obs: dict, forecast: str = "label"):
        """The action for ``Beggar-v0`` (one observation) or its vector env (a batch)."""
        checks.choice("forecast", forecast, ("label", "probs"))
        batched = np.ndim(obs["cards"]) == 1
        probs = self.step_proba(obs if batched else {name: np.asarray(v)[None] for name, v in obs.items()})
        if forecast == "label":
            labels = probs.argmax(axis=1)
            return labels if batched else int(labels[0])
        return probs.astype(np.float32) if batched else probs[0].astype(np.float32)

    def step_proba(self, obs: dict) -> np.ndarray:
        """The forecasts ``act`` plays for a batch of this step's observations: those of
        ``predict_proba`` (a forecaster with a memory also advances it here)."""
        return self.predict_proba(obs)

    def __repr__(self):
        return f"{type(self).__name__}(n_players={self.n_players})"


def _check_dataset(forecaster, dataset):
    if not hasattr(dataset, "fields") or not hasattr(dataset, "label"):
        raise TypeError(f"dataset must be a beggar_env.datasets.Dataset, not {type(dataset).__name__}")
    if dataset.n_players != forecaster.n_players:
        raise ValueError(
            f"dataset: its games have {dataset.n_players} players, "
            f"but {forecaster.name} has n_players={forecaster.n_players}"
        )
    return dataset


def _check_obs(forecaster, obs):
    """The number of positions of a batch of observations (a dict of fields) of the
    forecaster's level and player count. The forecasters that hand the batch to compiled
    code check all of it as well (:func:`beggar_env.forecasting.rollouts.check_positions`)."""
    checks.observations("obs", obs)
    needed = {"public": "cards", "counted": "known", "full": "hands"}[forecaster.observation]
    for name in (needed, "cards", "hand_sizes"):
        if name not in obs:
            raise ValueError(
                f"{forecaster.name} reads observation={forecaster.observation!r}; these observations have no "
                f"{name!r} field"
            )
    if np.ndim(obs["hand_sizes"]) != 2 or np.shape(obs["hand_sizes"])[-1] != forecaster.n_players:
        raise ValueError(
            f"obs['hand_sizes']: {forecaster.name} forecasts {forecaster.n_players} players; "
            f"the observations' hand_sizes have shape {np.shape(obs['hand_sizes'])}"
        )
    return len(obs["cards"])


class Uniform(Forecaster):
    """Every outcome equally likely."""

    name = "uniform"

    def predict_proba(self, obs):
        n = _check_obs(self, obs)
        return np.full((n, self.n_outcomes), 1 / self.n_outcomes)


class SeatPrior(Forecaster):
    """Each seat's win rate for the player count (and the rate of no winner), from
    ``games`` simulated random games: the best forecast that ignores the table."""

    name = "seat prior"

    def __init__(self, n_players=2, games=10**6, seed=0, max_cards=None):
        super().__init__(n_players)
        self.games, self.seed, self.max_cards = checks.count("games", games, 1), seed, max_cards
        self.rates = None

    def fit(self, dataset=None, progress=None):
        """Simulate the games (the dataset, if given, is not used: it holds too few games);
        ``progress(done, total)``, if given, with the games played."""
        counts = np.zeros(self.n_outcomes)
        blocks = simulate_blocks(
            self.games, n_players=self.n_players, seed=self.seed, max_cards=self.max_cards, progress=progress
        )
        for _, block in blocks:
            counts += np.bincount(core.outcome_labels(block.winner, self.n_players), minlength=self.n_outcomes)
        self.rates = counts / counts.sum()
        return self

    def predict_proba(self, obs):
        n = _check_obs(self, obs)
        if self.rates is None:
            self.fit()
        return np.tile(self.rates, (n, 1))


class MostCards(Forecaster):
    """The seat with the most cards in hand wins (ties shared)."""

    name = "most cards"

    def predict_proba(self, obs):
        _check_obs(self, obs)
        hands = obs["hand_sizes"]
        leaders = (hands == hands.max(axis=1, keepdims=True)).astype(float)
        probs = np.zeros((len(hands), self.n_outcomes))
        probs[:, : self.n_players] = leaders / leaders.sum(axis=1, keepdims=True)
        return probs


class CalibratedMostCards(Forecaster):
    """A seat's chance of winning as a function of its cards in hand, fitted: the share of
    training positions where a seat holding that many cards went on to win (smoothed),
    normalised over the seats, with the fitted rate of no winner."""

    name = "most cards, calibrated"

    def __init__(self, n_players=2, smoothing=1.0):
        super().__init__(n_players)
        self.smoothing = checks.number("smoothing", smoothing, 0, strict=True)  # 0: 0/0 for a hand size never seen
        self.win_rate = None  # [seat, cards in hand]
        self.no_winner = None

    def fit(self, dataset):
        _check_dataset(self, dataset)
        hands = dataset.fields["hand_sizes"]
        labels = dataset.label
        wins = np.zeros((self.n_players, core.DECK_SIZE + 1))
        seen = np.zeros_like(wins)
        for seat in range(self.n_players):
            held = np.clip(hands[:, seat], 0, core.DECK_SIZE)
            seen[seat] = np.bincount(held, minlength=core.DECK_SIZE + 1)
            wins[seat] = np.bincount(held[labels == seat], minlength=core.DECK_SIZE + 1)
        prior = (labels[:, None] == np.arange(self.n_players)).mean(axis=0)[:, None]
        self.win_rate = (wins + self.smoothing * prior) / (seen + self.smoothing)
        self.no_winner = float((labels == self.n_players).mean())
        self.trained_on_seed = dataset.seed
        return self

    def predict_proba(self, obs):
        _check_obs(self, obs)
        if self.win_rate is None:
            raise RuntimeError(f"{self.name}: call fit(dataset) first")
        held = np.clip(obs["hand_sizes"], 0, core.DECK_SIZE)
        scores = self.win_rate[np.arange(self.n_players), held] + 1e-12
        probs = np.zeros((len(held), self.n_outcomes))
        probs[:, : self.n_players] = (1 - self.no_winner) * scores / scores.sum(axis=1, keepdims=True)
        probs[:, self.n_players] = self.no_winner
        return probs


HELD_OUT = 0.1  # of a training set's games: the validation games of the learned baselines' early stopping


def held_out_games(dataset, fraction=HELD_OUT, seed=0):
    """A boolean mask of the samples of a random ``fraction`` of the dataset's games: early
    stopping validates on whole games never trained on, not on positions of games whose
    other positions are in the training part (they would pass for the same game)."""
    games = np.unique(dataset.game)
    chosen = np.random.default_rng(seed).permutation(games)[: max(1, int(round(fraction * len(games))))]
    return np.isin(dataset.game, chosen)


class Learned(Forecaster):
    """A scikit-learn classifier on the features of :mod:`beggar_env.forecasting.features` for an
    ``observation`` level ("public" or "counted").

    ``model`` is any classifier with ``fit`` and ``predict_proba`` (a pipeline too); the
    outcomes missing from the training labels get probability 0. ``early_stopping``, if
    given, is ``early_stopping(model, X, y, X_val, y_val)``: it trains on ``X`` and stops
    on the held-out games ``X_val`` (:func:`held_out_games`); without it the model trains on
    every game.

    Parameters
    ----------
    n_players : the player count it forecasts (2, 3 or 4).
    model : a classifier with ``fit`` and ``predict_proba``.
    observation : the level whose features it reads: "public" or "counted".
    name : its name in the tables (by default the model's class and the level).
    early_stopping : None, or ``early_stopping(model, X, y, X_val, y_val)``.
    seed : the seed of the held-out games.
    """

    def __init__(self, n_players=2, model=None, observation="public", name=None, early_stopping=None, seed=0):
        super().__init__(n_players)
        self.observation = checks.choice("observation", observation, tuple(features.FEATURES))
        if model is None or not hasattr(model, "predict_proba"):
            raise TypeError("model must be a scikit-learn classifier (with fit and predict_proba)")
        self.model = model
        self.name = name or f"{type(model).__name__} ({observation})"
        self.early_stopping = checks.callback("early_stopping", early_stopping)
        self.seed = seed

    def fit(self, dataset):
        _check_dataset(self, dataset)
        X, y = features.FEATURES[self.observation](dataset.fields), dataset.label
        if self.early_stopping is None:
            self.model.fit(X, y)
        else:
            held = held_out_games(dataset, seed=self.seed)
            self.early_stopping(self.model, X[~held], y[~held], X[held], y[held])
        self.trained_on_seed = dataset.seed
        return self

    def predict_proba(self, obs):
        _check_obs(self, obs)
        columns = self.model.predict_proba(features.FEATURES[self.observation](obs))
        probs = np.zeros((len(columns), self.n_outcomes))
        probs[:, self.model.classes_] = columns
        return probs


def logistic_regression(n_players=2, observation="public", seed=0):
    """Multinomial logistic regression on standardised features (no early stopping)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300, random_state=seed))
    return Learned(n_players, model, observation, name=f"logistic regression ({observation})")


def _boost_until_held_out_games_stop_improving(model, X, y, X_val, y_val):
    model.fit(X, y, X_val=X_val, y_val=y_val)


def gradient_boosting(n_players=2, observation="public", seed=0, max_iter=200):
    """scikit-learn's HistGradientBoostingClassifier on engineered features, at most
    ``max_iter`` trees, stopping when the log loss of the held-out games stops improving."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.1, early_stopping=True, random_state=seed)
    return Learned(
        n_players,
        model,
        observation,
        name=f"gradient-boosted trees ({observation})",
        early_stopping=_boost_until_held_out_games_stop_improving,
        seed=seed,
    )


PATIENCE = 10  # epochs without a better held-out log loss before the MLP stops


def _train_until_held_out_games_stop_improving(model, X, y, X_val, y_val):
    """Epochs of ``model`` (a scaler, then an MLPClassifier) on ``X`` until the held-out log
    loss has not improved for :data:`PATIENCE` epochs, at most its ``max_iter``; the best
    epoch's weights are kept."""
    import copy

    from sklearn.metrics import log_loss

    scaler, network = model.steps[0][1], model.steps[-1][1]
    scaler.fit(X)
    X, X_val = scaler.transform(X), scaler.transform(X_val)
    classes = np.arange(max(int(y.max(initial=0)), int(y_val.max(initial=0))) + 1)
    best, best_loss, waited = None, np.inf, 0
    for _ in range(network.max_iter):
        network.partial_fit(X, y, classes=classes)
        loss = log_loss(y_val, network.predict_proba(X_val), labels=classes)
        if loss < best_loss - 1e-6:
            best, best_loss, waited = copy.deepcopy(network), loss, 0
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    model.steps[-1] = (model.steps[-1][0], best)


def mlp(n_players=2, observation="counted", seed=0, max_iter=40):
    """A small multilayer perceptron (two hidden layers of 64) on standardised features, at
    most ``max_iter`` epochs, stopping when the log loss of the held-out games stops improving."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(
        StandardScaler(), MLPClassifier(hidden_layer_sizes=(64, 64), max_iter=max_iter, random_state=seed)
    )
    return Learned(
        n_players,
        model,
        observation,
        name=f"MLP ({observation})",
        early_stopping=_train_until_held_out_games_stop_improving,
        seed=seed,
    )


class BayesMC(Forecaster):
    """The Bayes forecaster given what a card-counter knows, by Monte Carlo.

    For each position, the unseen cards are dealt to the unknown places of the hands in
    ``k`` uniformly random arrangements, and each is played to its end by the engine (all
    cores, no Python per game); the outcome frequencies are smoothed by ``alpha`` pseudo-
    counts each, so the log score stays finite. A position whose unseen cards are of one
    class (or none) is determined and is played once, counting as ``k``. As ``k`` grows
    the forecast converges to the exact posterior (``docs/forecasting.md``). With
    ``backend="cuda"`` the rollouts run on a GPU (:mod:`beggar_env.gpu`), with the same
    counts; ``threads`` is then refused. ``max_cards``
    must be the env's agreed limit.

    Parameters
    ----------
    n_players : the player count it forecasts (2, 3 or 4).
    k : the rollouts per position.
    alpha : the pseudo-counts per outcome.
    seed : the seed of the arrangements dealt.
    max_cards : the env's agreed limit (None: none).
    threads : the CPU threads of the rollouts (None: all).
    backend : "local" (the CPUs) or "cuda" (a GPU).
    """

    observation = "counted"
    hands_field = "known"
    given = ("rules engine",)  # its rollouts play the real engine
    reports_progress = True  # predict_proba(obs, progress=...): minutes of rollouts

    @property
    def name(self):
        return f"Bayes (Monte Carlo, K={self.k})"

    ALPHA = 0.5  # pseudo-counts per outcome

    def __init__(self, n_players=2, k=256, alpha=ALPHA, seed=0, max_cards=None, threads=None, backend="local"):
        from .rollouts import BACKENDS

        super().__init__(n_players)
        self.k = checks.count("k", k, 1)
        self.alpha = checks.number("alpha", alpha, 0)
        self.seed = int(checks.seed(seed))
        self.max_cards = checks.limit("max_cards", max_cards)
        self.threads = threads
        self.backend = checks.choice("backend", backend, BACKENDS)  # "cuda": the rollouts on a GPU
        if self.backend == "cuda":
            gpu.check_options(threads, True, self.max_cards, core.NO_LIMIT)
            gpu.require_cuda()
        self.cards_played = 0  # by the rollouts so far: for the benchmarks

    def counts(self, obs, progress=None):
        """Outcome counts of each position (scaled to ``k`` rollouts each)."""
        from .rollouts import play_out

        _check_obs(self, obs)
        counts, rollouts, played = play_out(  # every field checked before the compiled rollouts read it
            obs, self.hands_field, self.k, self.seed, self.max_cards, self.threads, progress, self.backend,
            self.n_players,
        )  # fmt: skip
        self.cards_played += played
        return counts * (self.k / rollouts)[:, None]

    def predict_proba(self, obs, progress=None):
        counts = self.counts(obs, progress)
        return (counts + self.alpha) / (self.k + self.alpha * self.n_outcomes)


class Oracle(BayesMC):
    """Every hand known (``observation="full"``): the outcome is determined; the oracle
    plays the hands out once. A sanity row: accuracy 1."""

    name = "oracle"
    observation = "full"
    hands_field = "hands"

    def __init__(self, n_players=2, max_cards=None, threads=None, backend="local"):
        super().__init__(n_players, k=1, alpha=0.0, max_cards=max_cards, threads=threads, backend=backend)


def baselines(
    n_players, *, seed=0, max_cards=None, prior_games=10**6, bayes_k=256, trees=200, epochs=40
) -> list[Forecaster]:
    """Every baseline of the published table, unfitted, weakest first.

    Parameters
    ----------
    n_players : the player count (2, 3 or 4).
    seed : the seed of the seat prior's games, the learners and the Bayes forecaster.
    max_cards : the env's agreed limit (None: none).
    prior_games : the games behind the seat prior.
    bayes_k : the Bayes forecaster's rollouts per position.
    trees : the gradient-boosted trees' iterations (at most: early stopping).
    epochs : the MLP's epochs (at most: early stopping).
    """
    return [
        Uniform(n_players),
        SeatPrior(n_players, games=prior_games, seed=seed, max_cards=max_cards),
        MostCards(n_players),
        CalibratedMostCards(n_players),
        logistic_regression(n_players, "public", seed),
        gradient_boosting(n_players, "public", seed, trees),
        gradient_boosting(n_players, "counted", seed, trees),
        mlp(n_players, "counted", seed, epochs),
        BayesMC(n_players, k=bayes_k, seed=seed, max_cards=max_cards),
        Oracle(n_players, max_cards=max_cards),
    ]

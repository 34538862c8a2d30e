"""One evaluation protocol for winner forecasts, for forecasters and for policies acting in
the env (``docs/forecasting.md`` gives the reasons for each choice): the test positions
(:class:`TestSet`: every card step of random games of a seed no training set uses, each
forecaster reading exactly the fields of its level), the forecasts, and the reference
(:func:`reference`: the published seat prior and Bayes forecaster on the same positions),
against which each report's gap closed per track (:func:`gap_intervals`) and its paired
difference to Bayes (:func:`compare`) are measured. The figures are
:mod:`~beggar_env.forecasting.metrics`' functions; the report is
:mod:`~beggar_env.forecasting.report`'s.

:func:`evaluate` is the one call: any object with ``predict_proba`` (or a policy, a
callable that acts in the vector env), and a player count, give a ``Report`` of the
published protocol that prints as a row of the published tables and saves as a
submission file (``beggar baselines --forecaster FILE`` adds it to the tables).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, checks, datasets
from ..task import Layout
from . import metrics
from .env_games import play
from .forecaster_checks import check_forecasts, check_players, check_recurrent
from .metrics import GAP_SLICES, METRICS
from .phases import Phases
from .report import FORMAT_VERSION, PROTOCOL_VERSION, REPORT_FORMAT, TEST_SEED, Report, check_given, check_name

PUBLISHED_GAMES = 2000  # test games per player count of the published tables
REFERENCE_PRIOR_GAMES, REFERENCE_K = 10**6, 256  # the published tables' seat prior and Bayes forecaster (seed 0)


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
        given, as :func:`beggar_env.datasets.generate` calls it.

        Parameters
        ----------
        n_players : the player count (2, 3 or 4).
        games : the test games; every card step of each is a test position.
        seed : the seed of their deals (:data:`~beggar_env.forecasting.report.TEST_SEED` for the published ones).
        max_cards : the agreed limit of a game (None: none).
        threads : the CPU threads that play them (None: all).
        progress : None, or ``progress(done, total)``.
        """
        data = _positions(n_players, games, seed, max_cards, "counted", threads, progress)
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
            full = _positions(self.n_players, self.games, self.seed, self.max_cards, "full", None, progress)
            self._full = read_only(full)
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
        """Boolean masks of the positions of each slice, by name (:func:`metrics.slice_masks`)."""
        fields = self.data.fields
        return metrics.slice_masks(fields["cards"], self.data.progress, fields["unseen"])

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
                    made.append(
                        report(forecaster.name, probs, self, seconds, bootstrap, forecaster.observation,
                               given=forecaster.given)
                    )  # fmt: skip
            self._reference = tuple(made)
        return self._reference

    @property
    def horizon(self):
        """Per position: the tricks and the cards still to be played (:func:`metrics.horizon`)."""
        return metrics.horizon(self.data)

    def same(self, other):
        """Whether ``other`` holds the same test positions."""
        return all(getattr(self, key) == getattr(other, key) for key in ("n_players", "games", "seed", "max_cards"))


_PUBLISHED = {}


def _positions(n_players, games, seed, max_cards, observation, threads, progress):
    """Every card step of ``games`` random games of ``seed``, of the ``observation`` level."""
    return datasets.generate(
        games, n_players=n_players, observation=observation, samples="card", seed=seed, max_cards=max_cards,
        threads=threads, progress=progress,
    )  # fmt: skip


def read_only(data):
    """``data`` (a Dataset) with every array read-only, the views it hands out too: a write
    into a test position raises instead of changing it for every later forecaster."""
    for name in data.ARRAYS:
        getattr(data, name).flags.writeable = False
    return data


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
    A forecaster whose ``predict_proba`` takes ``progress`` (``reports_progress = True``,
    as the Bayes forecaster's minutes of rollouts) is given it. Refuses a forecaster
    trained on the test seed."""
    if not callable(getattr(forecaster, "predict_proba", None)):
        raise TypeError(
            f"forecaster must have predict_proba(obs) (see beggar_env.forecasting.forecasters), not "
            f"{type(forecaster).__name__} {checks.excerpt(forecaster)}"
        )
    test = _check_test(test)
    checks.callback("progress", progress)
    check_players(forecaster, test)
    if getattr(forecaster, "trained_on_seed", None) == test.seed:
        raise ValueError(f"{forecaster.name} was trained on the test seed {test.seed}: use another training seed")
    level = getattr(forecaster, "observation", "public")
    n = len(test.labels)
    if getattr(forecaster, "recurrent", False):  # its memory needs each game in order: played in the vector env
        check_recurrent(forecaster)
        forecaster.reset_state()
        probs, seconds = play(lambda obs: forecaster.act(obs, "probs"), test, level, "probs", progress)
        return check_forecasts(probs, n, test.n_players + 1), seconds
    obs = test.observations(level)
    started = time.perf_counter()
    if getattr(forecaster, "reports_progress", False):  # minutes of rollouts: show progress
        probs = forecaster.predict_proba(obs, progress=progress)
    else:
        probs = forecaster.predict_proba(obs)
    if progress is not None:
        progress(n, n)
    probs = check_forecasts(probs, n, test.n_players + 1)
    return probs, time.perf_counter() - started


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
    without ``|`` (:func:`~beggar_env.forecasting.report.check_name`: it is a cell of the
    tables). The report's ``given`` (what the forecaster uses beyond its observation and
    its training data: ``report.GIVEN``) is the forecaster's ``given`` attribute; one
    without it is given nothing (``[]``).

    ``predict_proba`` must return probabilities: finite real numbers in [0, 1], each row
    summing to 1 (within ``forecaster_checks.SUM_TOLERANCE``); anything else is refused (``ValueError``
    naming the first wrong row), never scored.

    ``reference``: True (the default) gives the report its gap closed between the seat
    prior and the Bayes forecaster, and its paired difference to Bayes, on all positions
    and on each track, with intervals: both are evaluated on the same test set first, once
    per test set and process (:func:`reference`: about 30 s for the published 2-player
    test set on 2 cores); False leaves them out (``report["reference"]`` is None).

    ``progress``: the first call for a player count takes minutes (the test set made, the
    reference's rollouts), so by default (None) a tqdm bar on stderr shows each phase when
    stderr is a terminal; True shows it anywhere, False nothing, and a callable is called as
    ``progress(phase, done, total)`` instead (:class:`~beggar_env.forecasting.phases.Phases`).

    Parameters
    ----------
    forecaster : an object with ``predict_proba``, or a policy (a callable).
    test : a player count (the published test set) or a :class:`TestSet`.
    bootstrap : the resamples of whole games behind each interval.
    progress : None (a bar on a terminal), True, False, or ``progress(phase, done, total)``.
    name : the row's name (by default the forecaster's ``name``).
    observation : a policy's level (by default its ``observation`` attribute, else "public").
    forecast : what a policy plays: "label" or "probs".
    reference : whether to give the gap closed and the difference to Bayes.
    """
    forecasts = callable(getattr(forecaster, "predict_proba", None))
    if not forecasts and not callable(forecaster):
        raise TypeError(
            f"forecaster must have predict_proba(obs) (see beggar_env.forecasting.forecasters) or be a policy (a "
            f"callable), not {type(forecaster).__name__} {checks.excerpt(forecaster)}"
        )
    what = "name" if name is not None else "name (by default the forecaster's name attribute)"
    name = check_name(name if name is not None else _name(forecaster), what)
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    if not isinstance(reference, bool):
        raise TypeError(f"reference must be True or False, not {checks.excerpt(reference)}")
    given = _given(forecaster)
    if forecasts:  # before minutes spent on the test set
        check_players(forecaster)
        if getattr(forecaster, "recurrent", False):
            check_recurrent(forecaster)
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
        return _report(name, probs, test, seconds, bootstrap, level, reference, phases, given)


def _report(name, probs, test, seconds, bootstrap, level, wanted, phases, given):
    """The report, after the reference if ``wanted`` (each a phase of ``phases``)."""
    figures = reference(test, bootstrap, phases) if wanted else None
    done = phases.phase("report: intervals and calibration", 1)
    result = report(name, probs, test, seconds, bootstrap, level, figures, given=given)
    if done is not None:
        done(1, 1)
    return result


def _name(forecaster):
    return getattr(forecaster, "name", None) or getattr(forecaster, "__name__", None) or type(forecaster).__name__


def _given(forecaster):
    """A forecaster's or policy's ``given`` attribute (a bound method's: its object's), checked; [] if none."""
    given = getattr(forecaster, "given", getattr(getattr(forecaster, "__self__", None), "given", None))
    return check_given(given, "the forecaster's given attribute")


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
    (``reference`` and ``progress`` as for :func:`evaluate`; ``given``, its ``given``
    attribute, as for a forecaster).

    Parameters
    ----------
    policy : ``policy(obs) -> actions`` for a batch of observations.
    test : a player count (the published test set) or a :class:`TestSet`.
    name : the row's name.
    observation : the level it reads: "public", "counted" or "full".
    forecast : what it plays: "label" or "probs".
    bootstrap : the resamples of whole games behind each interval.
    reference : whether to give the gap closed and the difference to Bayes.
    progress : None (a bar on a terminal), True, False, or ``progress(phase, done, total)``.
    """
    checks.callback("policy", policy)
    name = check_name(name, "name")
    given = _given(policy)
    checks.choice("forecast", forecast, ("label", "probs"))
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    if not isinstance(reference, bool):
        raise TypeError(f"reference must be True or False, not {checks.excerpt(reference)}")
    with Phases(progress) as phases:
        test = _check_test(test, phases)
        shown = phases.phase(f"forecasts: {name}, acting in the vector env", len(test.labels))
        probs, seconds = play(policy, test, observation, forecast, shown)
        return _report(name, probs, test, seconds, bootstrap, observation, reference, phases, given)


def report(name, probs, test, seconds, bootstrap=1000, observation="public", reference=None, *, given=()):
    """The protocol's :class:`Report` of forecasts ``probs`` (one row per test position):
    per slice, each metric's value, 95% interval and game-weighted value, and ECE
    (:func:`metrics.summarise`); the top label's reliability diagram and each outcome's;
    the metrics by cards played and by horizon (:func:`metrics.by_cards`,
    :func:`metrics.by_horizon`); forecasts per second; and, given ``reference`` (the seat
    prior's and the Bayes forecaster's reports of the same test set, with their scores:
    :func:`reference`), the gap closed and the paired difference to Bayes on all positions
    and each track (:func:`reference_figures`).

    Parameters
    ----------
    name : the forecaster's name, a cell of the tables (``report.check_name``).
    probs : the forecasts, one row of ``n_players + 1`` probabilities per test position.
    test : the :class:`TestSet` of those positions.
    seconds : the time the forecasts took.
    bootstrap : the resamples of whole games behind each interval.
    observation : the level the forecaster read: "public", "counted" or "full".
    reference : None, or the seat prior's and the Bayes forecaster's reports (:func:`reference`).
    given : what the forecaster uses beyond its observation and training data (``report.GIVEN``).
    """
    scores = metrics.position_scores(probs, test.labels)
    game = test.data.game
    result = Report(
        {
            "format": REPORT_FORMAT,
            "protocol_version": PROTOCOL_VERSION,
            "format_version": FORMAT_VERSION,
            "beggar_env": __version__,
            "forecaster": name,
            "observation": observation,
            "given": check_given(list(given)),
            "n_players": test.n_players,
            "positions": len(probs),
            "games": test.games,
            "test_seed": test.seed,
            "forecasts_per_s": len(probs) / seconds if seconds > 0 else float("inf"),
            "slices": {
                slice_name: metrics.summarise(scores, game, test.games, mask, bootstrap)
                for slice_name, mask in test.slices.items()
            },
            "reliability": metrics.reliability(scores),
            "calibration": metrics.calibration(probs, test.labels),
            "by_cards": metrics.by_cards(scores, test.data.fields["cards"]),
            "by_horizon": metrics.by_horizon(scores, test.horizon),
            "reference": None,
        }
    )
    result.scores = {**scores, "game": game}
    result.test = test
    if reference is not None:
        result["reference"] = reference_figures(result, *reference, bootstrap=bootstrap)
    return result


def reference(test, bootstrap=1000, progress=None):
    """The reference of the gap closed on ``test`` (a :class:`TestSet` or a player count):
    :meth:`TestSet.reference` (``progress`` as :func:`evaluate` takes it; None: nothing shown)."""
    with Phases(progress if progress is not None else False) as phases:
        return _check_test(test, phases).reference(bootstrap, phases)


def reference_figures(result, prior, best, bootstrap=1000, seed=0):
    """``result``'s reference (as a report holds it): the gap it closes between ``prior``
    and ``best`` (:func:`gap_intervals`) and its paired difference to ``best``
    (:func:`compare`), on all positions and each track, with 95% intervals over the same
    resampled games; the three are reports of the same test set with their scores
    (``metrics.reference_values`` gives the same from their figures alone, without
    intervals)."""
    return {
        "prior": prior["forecaster"],
        "bayes": best["forecaster"],
        "gap_closed": gap_intervals(result, prior, best, bootstrap=bootstrap, seed=seed),
        "versus_bayes": compare(result, best, bootstrap=bootstrap, seed=seed, slices=GAP_SLICES),
    }


def gap_intervals(result, prior, best, *, bootstrap=1000, seed=0) -> dict:
    """Per slice of :data:`GAP_SLICES` (all positions, each track) and metric, the gap that
    ``result`` closes between ``prior`` and ``best`` (:func:`metrics.gap_closed`: 0 no better
    than the prior, 1 as good as Bayes) and its 95% interval over ``bootstrap`` resamples of
    whole games, the same for the three reports (those of :func:`metrics.summarise` for the same
    ``seed``): ``{"value", "ci95"}``, None where the gap is undefined (prior and best score
    the same; an interval is None if they do in any resample); ``{}`` for a slice with no
    position. The three must be reports of one test set made in this process (scores)."""
    _check_reports("gap_intervals", "three", result, prior, best)
    test, game, n_games = result.test, result.scores["game"], result.test.games
    weights = metrics.bootstrap_weights(n_games, bootstrap, seed)
    masks = test.slices
    out = {}
    for name in GAP_SLICES:
        mask = masks[name]
        out[name] = {}
        if not mask.any():
            continue
        values = metrics.gap_closed(result, prior, best, name)
        for metric in METRICS:
            scores = (one.scores[metric][mask] for one in (result, prior, best))
            resampled = metrics.resampled_gaps(*scores, game[mask], n_games, weights)
            value = metrics.defined(values[metric])
            ci95 = metrics.interval95(resampled) if value is not None and np.isfinite(resampled).all() else None
            out[name][metric] = {"value": value, "ci95": ci95}
    return out


def compare(a: Report, b: Report, *, bootstrap=1000, seed=0, slices=None) -> dict:
    """The paired difference ``a - b`` of two reports of the same test positions: per slice
    (of ``slices``, by name; all of them by default) and metric, the difference of the
    position-weighted values, and its 95% interval over ``bootstrap`` resamples of whole
    games, the same resample for both (the reports must come from this process: their
    per-position scores are not saved); ``{}`` for a slice with no position."""
    _check_reports("compare", "two", a, b)
    bootstrap = checks.count("bootstrap", bootstrap, 1)
    test, game, n_games = a.test, a.scores["game"], a.test.games
    weights = metrics.bootstrap_weights(n_games, bootstrap, seed)
    out = {}
    masks = test.slices
    for slice_name in masks if slices is None else slices:
        mask = masks[slice_name]
        out[slice_name] = {}
        if not mask.any():
            continue
        for metric in METRICS:
            out[slice_name][metric] = metrics.paired_difference(
                a.scores[metric][mask], b.scores[metric][mask], game[mask], n_games, weights
            )
    return out


def _check_reports(caller, count, first, *others):
    """``count`` ("two", "three") reports of :func:`evaluate` made in this process (with
    their scores), of one test set, for ``caller``."""
    for one in (first, *others):
        if not isinstance(one, Report) or one.scores is None:
            raise TypeError(f"{caller} takes {count} reports of evaluate(), made in this process (with their scores)")
    if not all(first.test.same(other.test) for other in others):
        raise ValueError(f"the {count} reports are of different test sets")

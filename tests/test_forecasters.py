"""Forecasters and the evaluation protocol: the Bayes forecaster against exact enumeration
of every arrangement on small decks, the oracle, the baselines, and the metrics against
hand-computed values and scikit-learn's."""

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

import beggar_env
from beggar_env import datasets
from beggar_env.forecasting import forecasters as fc
from beggar_env.forecasting import metrics
from beggar_env.forecasting import protocol as ev
from beggar_env.forecasting.report import TEST_SEED

sklearn = pytest.importorskip("sklearn", reason="the learned baselines need scikit-learn: pip install '.[baselines]'")


# ------------------------------------------------- Bayes against exact enumeration


def distinct_arrangements(cards):
    """Every distinct order of a multiset (as tuples)."""
    if not cards:
        yield ()
        return
    for card in sorted(set(cards)):
        rest = list(cards)
        rest.remove(card)
        for tail in distinct_arrangements(rest):
            yield (card, *tail)


def exact_posterior(deal, cards_played, n_players):
    """The exact outcome distribution after ``cards_played`` cards, given the public history,
    under a uniform random deal of the deal's cards: every initial deal that agrees with
    what has been turned so far, each played from the start by ``play``."""
    env = gym.make("Beggar-v0", n_players=n_players, observation="counted")
    obs, _ = env.reset(options={"deal": deal})
    for _ in range(cards_played):
        obs, *_ = env.step(0)
    hidden = (obs["known"] == -2).sum(axis=1)  # the unseen tail of each initial hand
    hands = [list(hand) for hand in beggar_env.parse_deal(deal).hands]
    unseen = [c for c in range(5) for _ in range(int(obs["unseen"][c]))]
    counts = np.zeros(n_players + 1)
    for arrangement in distinct_arrangements(unseen):
        cards = iter(arrangement)
        rebuilt = []
        for seat, hand in enumerate(hands):
            keep = len(hand) - int(hidden[seat])
            rebuilt.append(hand[:keep] + ["-JQKA"[next(cards)] for _ in range(int(hidden[seat]))])
        result = beggar_env.play(beggar_env.Deal(tuple(tuple(h) for h in rebuilt)))
        counts[n_players if result.winner is None else result.winner] += 1
    return counts / counts.sum(), {name: np.asarray(value)[None] for name, value in obs.items()}


SLOW = pytest.mark.slow
SMALL_DEALS = [  # 10 to 14 cards, 2 and 3 players, several court cards: many arrangements
    ("--J-Q-/-K--A-", 2, (0, 2, 4)),
    pytest.param("-Q--J--/--A-K--", 2, (0, 3, 5), marks=SLOW),  # 2 to 3 s each: the first in the fast suite
    pytest.param("J---Q/-K---/--A-", 3, (0, 2, 4), marks=SLOW),
    pytest.param("-A--J/--Q-/-K--", 3, (0, 1, 3), marks=SLOW),
]


@pytest.mark.slow
@pytest.mark.parametrize("deal, n_players, positions", SMALL_DEALS)
def test_bayes_monte_carlo_agrees_with_exact_enumeration(deal, n_players, positions):
    k = 4000
    bayes = fc.BayesMC(n_players, k=k, seed=3)
    uncertain = 0
    for cards_played in positions:
        exact, obs = exact_posterior(deal, cards_played, n_players)
        assert (obs["unseen"][0] > 0).sum() >= 2  # an open position: k rollouts
        estimate = bayes.counts(obs)[0] / k
        tolerance = 5 * np.sqrt(np.maximum(exact * (1 - exact), 1 / k) / k)
        assert (np.abs(estimate - exact) <= tolerance).all(), (deal, cards_played, estimate, exact)
        uncertain += exact.max() < 0.9
    assert uncertain >= 1  # the comparison is not only between certainties


def test_a_determined_position_is_played_once_and_forecast_with_certainty():
    data = datasets.generate(30, observation="counted", seed=11)
    fixed = (data.fields["unseen"] > 0).sum(axis=1) < 2
    obs = {name: value[fixed][:500] for name, value in data.fields.items()}
    bayes = fc.BayesMC(2, k=256)
    probs = bayes.predict_proba(obs)
    assert (probs.argmax(axis=1) == data.label[fixed][:500]).all()
    assert (probs.max(axis=1) > 0.99).all()
    before = bayes.cards_played
    counts, rollouts, played = beggar_env.forecasting.rollouts.play_out(obs, "known", 256, 0, 2**63 - 1)
    assert (rollouts == 1).all() and played > 0 and before > 0


def test_the_oracle_plays_the_hands_out():
    test = ev.TestSet.generate(3, 40, seed=5)
    oracle = fc.Oracle(3)
    probs = oracle.predict_proba(test.observations("full"))
    assert (probs.argmax(axis=1) == test.labels).all() and np.allclose(probs.max(axis=1), 1)


def test_rollouts_respect_the_limit_and_seed():
    data = datasets.generate(20, observation="counted", seed=2, max_cards=60)
    obs = {name: value[:300] for name, value in data.fields.items()}
    limited = fc.BayesMC(2, k=64, seed=1, max_cards=60)
    a = limited.predict_proba(obs)
    assert np.array_equal(a, fc.BayesMC(2, k=64, seed=1, max_cards=60).predict_proba(obs))
    assert not np.array_equal(a, fc.BayesMC(2, k=64, seed=2, max_cards=60).predict_proba(obs))
    fixed = (obs["unseen"] > 0).sum(axis=1) < 2  # with the limit, a determined position is a limit outcome
    assert (a[fixed].argmax(axis=1) == data.label[:300][fixed]).all()
    top = fc.BayesMC(2, k=64, seed=2**64 - 1, max_cards=60).predict_proba(obs)  # every seed: no int64 overflow
    assert np.allclose(top.sum(axis=1), 1) and not np.array_equal(top, a)
    assert np.array_equal(fc.BayesMC(2, k=64, seed=np.uint64(1), max_cards=60).predict_proba(obs), a)


# ------------------------------------------- hostile observations: refused before compiled code

FUZZ_ROWS = 64


def valid_batch(n_players=2, level="counted", seed=1):
    """``FUZZ_ROWS`` positions of a few games, each field a copy of its own."""
    data = datasets.generate(3, n_players=n_players, observation=level, seed=seed)
    return {name: np.array(value[:FUZZ_ROWS]) for name, value in data.fields.items()}


def set_to(name, value):
    def corrupt(o):
        o[name] = (
            np.broadcast_to(np.asarray(value), o[name].shape).astype(o[name].dtype) if np.isscalar(value) else value
        )

    return corrupt


def shift(name, by, row=0):
    def corrupt(o):
        o[name][row] += by

    return corrupt


def first_hidden_to(card):
    def corrupt(o):
        o["known"][tuple(np.argwhere(o["known"] == -2)[0])] = card

    return corrupt


def hidden_to_aces(o):
    o["unseen"][:] = 0
    o["known"][o["known"] == -2] = 4  # the hands' counts stay, the deck would hold 40 aces


def card_after_the_end(o):
    row, seat = np.argwhere(o["known"][:, :, -1] == -1)[0]
    o["known"][row, seat, -1] = 0
    o["hand_sizes"][row, seat] += 1


def drop(name):
    return lambda o: o.pop(name)


def all_out(o):
    o["alive"][:] = 0


def pile_beyond_its_size(o):
    row = int(np.argmax(o["pile_size"] < 52))
    o["pile"][row, o["pile_size"][row]] = 0


def court_to_the_seat_to_play(o):
    owing = np.flatnonzero(o["owed"] > 0)[0]
    o["court"][owing] = o["turn"][owing]


CORRUPTIONS = {  # name -> a change of a valid batch that no position of a game can show
    "unseen at the dtype's maximum (once a segfault)": lambda o: o["unseen"].__setitem__(
        slice(None), np.iinfo(o["unseen"].dtype).max
    ),
    "unseen as uint64's maximum": lambda o: o.__setitem__("unseen", np.full_like(o["unseen"], 2**64 - 1, np.uint64)),
    "one unseen card too many": shift("unseen", 1),
    "an unseen place made a card": first_hidden_to(0),
    "every unseen card an ace": hidden_to_aces,
    "a card after the end of a hand": card_after_the_end,
    "a hand size one too many": shift("hand_sizes", 1),
    "a hand size of 2**31 - 1": set_to("hand_sizes", 2**31 - 1),
    "a pile size one too many": shift("pile_size", 1),
    "a pile size of 60": set_to("pile_size", 60),
    "a card beyond the pile's size": pile_beyond_its_size,
    "a known class of 9": lambda o: o["known"].__setitem__((0, 0, 0), 9),
    "the seat to play out of range": set_to("turn", 2),
    "the seat to play negative": set_to("turn", -1),
    "the court out of range": set_to("court", 7),
    "owed 9": set_to("owed", 9),
    "the court is the seat to play": court_to_the_seat_to_play,
    "nobody in": all_out,
    "cards played negative": set_to("cards", -1),
    "cards played beyond int32": lambda o: o.__setitem__("cards", o["cards"].astype(np.int64) + 2**40),
    "more tricks than cards": lambda o: o.__setitem__("tricks", o["cards"] + 1),
    "no unseen field": drop("unseen"),
    "no turn field": drop("turn"),
    "floats": lambda o: o.__setitem__("pile", o["pile"].astype(float)),
    "strings": lambda o: o.__setitem__("owed", o["owed"].astype(str)),
    "objects": lambda o: o.__setitem__("owed", o["owed"].astype(object)),
    "a short hand field": lambda o: o.__setitem__("known", o["known"][:, :, :51]),
    "a hand_sizes of three players": lambda o: o.__setitem__("hand_sizes", np.zeros((FUZZ_ROWS, 3), int)),
    "fewer rows in one field": lambda o: o.__setitem__("turn", o["turn"][:-1]),
    "cards as a matrix": lambda o: o.__setitem__("cards", o["cards"][:, None]),
}


def forecasters_of_counted_positions():
    """Every forecaster (or call) that hands counted observations to compiled code."""
    calls = {"BayesMC": fc.BayesMC(2, k=2).predict_proba}
    from beggar_env.forecasting import machine  # numba alone: no torch needed

    calls["machine.rolled"] = lambda o: machine.rolled(o, k=2)
    calls["Truncated"] = machine.Truncated(fc.MostCards(2), cards=5, k=2).predict_proba
    return calls


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_hostile_observation_is_refused_naming_its_field_before_compiled_code(corruption):
    """21 of 150 corrupted batches once killed the process (SIGSEGV) and 13 hung: every
    field and every position is checked first (rollouts.check_positions)."""
    for name, call in forecasters_of_counted_positions().items():
        obs = valid_batch()
        CORRUPTIONS[corruption](obs)
        with pytest.raises((ValueError, TypeError)) as caught:
            call(obs)
        message = str(caught.value)
        assert "obs" in message and "\n" not in message, (name, message)


def test_fields_of_any_integer_dtype_are_read_as_their_values():
    """A seat as a bool once reached numpy as a mask (IndexError): every integer dtype is read
    by its values, and forecasts as the int32 fields do."""
    obs = valid_batch()
    expected = fc.BayesMC(2, k=4).predict_proba(obs)
    recast = {**obs, "turn": obs["turn"].astype(bool), "alive": obs["alive"].astype(bool)}
    recast["unseen"] = obs["unseen"].astype(np.uint64)
    recast["known"] = obs["known"].astype(np.int8)
    assert np.array_equal(fc.BayesMC(2, k=4).predict_proba(recast), expected)


def test_the_oracle_refuses_a_full_view_that_no_game_shows():
    obs = valid_batch(level="full")
    fc.Oracle(2).predict_proba(obs)  # a valid batch is played
    obs["hands"][0, 0, 0] = -2  # the full view has no unseen place
    with pytest.raises(ValueError, match=r"obs\['hands'\] must be within -1 to 4"):
        fc.Oracle(2).predict_proba(obs)
    with pytest.raises(TypeError, match="obs must be a dict"):
        fc.Oracle(2).predict_proba([1, 2, 3])


def test_every_reader_of_a_batch_refuses_what_is_not_a_dict_of_fields_alike():
    from beggar_env.forecasting import machine
    from beggar_env.forecasting.rollouts import check_positions

    readers = {
        "uniform": fc.Uniform(2).predict_proba,
        "oracle": fc.Oracle(2).predict_proba,
        "machine.rolled": machine.rolled,
        "check_positions": lambda obs: check_positions(obs, "known", 2),
    }
    for name, read in readers.items():
        with pytest.raises(TypeError, match=r"^obs must be a dict of observation fields, not list \[1, 2, 3\]$"):
            read([1, 2, 3])


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_every_position_of_real_games_passes_the_checks(n_players):
    """The rules are what every position meets: every card step of random games, and the
    env's every step (the last one too) of small deals and of games cut short by a limit."""
    from beggar_env.forecasting.rollouts import check_positions

    deals = {2: ["--J-Q-/-K--A-", "A/-", "AAAA/KKKK"], 3: ["J---Q/-K---/--A-"], 4: ["J-/Q-/K-/A-"]}[n_players]
    for level, hands in (("counted", "known"), ("full", "hands")):
        data = datasets.generate(30, n_players=n_players, observation=level, seed=n_players)
        assert len(check_positions(data.fields, hands, n_players)["cards"]) == len(data)
        env = gym.make("Beggar-v0", n_players=n_players, observation=level, max_cards=40)
        rows = []
        for start in [{"seed": game} for game in range(4)] + [{"options": {"deal": deal}} for deal in deals]:
            obs, _ = env.reset(**start)
            rows.append(obs)
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(0)
                rows.append(obs)
                done = terminated or truncated
        batch = {name: np.stack([row[name] for row in rows]) for name in rows[0]}
        assert len(check_positions(batch, hands, n_players)["cards"]) == len(rows)


FUZZ_VALUES = (-(2**63), -(2**31), -3, -2, -1, 0, 1, 2, 3, 4, 5, 13, 26, 51, 52, 53, 64, 2**31 - 1, 2**40, 2**63 - 1)


def fuzz_case(seed, batch):
    """A batch with one field corrupted at random: random entries set to extreme or nearby
    values, a field dropped, recast or reshaped."""
    rng = np.random.default_rng(seed)
    obs = {name: value.copy() for name, value in batch.items()}
    name = rng.choice(sorted(obs))
    kind = rng.integers(8)
    if kind == 0:
        del obs[name]
    elif kind == 1:
        obs[name] = obs[name].astype(rng.choice(["float32", "int8", "uint64", "bool"]))
    elif kind == 2:
        obs[name] = obs[name].reshape(len(obs[name]), -1)[:, : rng.integers(0, 3)]
    else:
        wide = obs[name].astype(np.int64)
        flat = wide.reshape(-1)
        where = rng.choice(len(flat), size=rng.integers(1, 8))
        flat[where] = rng.choice(FUZZ_VALUES, size=len(where)) if kind < 6 else flat[where] + rng.integers(-2, 3)
        obs[name] = wide
    return obs


def run_fuzz(cases, first=0):
    """Each forecaster of counted positions on ``cases`` corrupted batches: the outcome of
    each, refused (a ValueError or TypeError) or played; anything else raises."""
    batch = valid_batch()
    outcomes = {"refused": 0, "played": 0}
    for seed in range(first, first + cases):
        for name, call in forecasters_of_counted_positions().items():
            print(seed, name, flush=True)  # the last case started, if the child dies
            try:
                probs = call(fuzz_case(seed, batch))
            except (ValueError, TypeError) as error:
                assert "\n" not in str(error), error
                outcomes["refused"] += 1
                continue
            assert probs.shape == (FUZZ_ROWS, 3) and np.isfinite(probs).all(), (seed, name)
            assert ((probs >= 0) & (probs <= 1)).all() and np.allclose(probs.sum(axis=1), 1), (seed, name)
            outcomes["played"] += 1
    return outcomes


def test_random_corruptions_are_refused_or_played_as_positions():
    outcomes = run_fuzz(6)
    assert outcomes["refused"] > outcomes["played"]


@SLOW
def test_many_random_corruptions_never_crash_nor_hang_the_process(tmp_path):
    """300 corrupted batches in a child process, so that a crash (SIGSEGV) or a hang fails
    this test, naming the case, instead of killing the suite."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_forecasters as t; "
        "print('outcomes', t.run_fuzz(300, first=1000))"
    )
    try:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as stopped:
        last = (stopped.stdout or b"").decode().strip().splitlines()[-1:]
        pytest.fail(f"a case hung: {last}")
    last = run.stdout.strip().splitlines()[-1:]
    assert run.returncode == 0, (run.returncode, last, run.stderr[-2000:])
    assert last[0].startswith("outcomes"), last


# --------------------------------------------------------------- baselines


@pytest.fixture(scope="module")
def two_player():
    train = datasets.generate(600, observation="counted", samples=8, seed=101)
    test = ev.TestSet.generate(2, 150, seed=TEST_SEED)
    return train, test


def test_simple_baselines(two_player):
    train, test = two_player
    obs = test.observations("public")
    n = len(obs["cards"])
    assert np.allclose(fc.Uniform(2).predict_proba(obs), 1 / 3)
    prior = fc.SeatPrior(2, games=50_000, seed=4).fit()
    runs = beggar_env.simulate(50_000, seed=4)
    expected = np.bincount(np.where(runs.winner >= 0, runs.winner, 2), minlength=3) / 50_000
    assert np.allclose(prior.predict_proba(obs), expected) and prior.predict_proba(obs).shape == (n, 3)
    most = fc.MostCards(2).predict_proba(obs)
    hands = obs["hand_sizes"]
    assert ((most[:, 0] == 1) == (hands[:, 0] > hands[:, 1])).all() and (
        most[hands[:, 0] == hands[:, 1], :2] == 0.5
    ).all()
    calibrated = fc.CalibratedMostCards(2).fit(train)
    probs = calibrated.predict_proba(obs)
    assert np.allclose(probs.sum(axis=1), 1) and (probs[:, 2] == calibrated.no_winner).all()
    accuracy = metrics.position_scores(probs, test.labels)["accuracy"].mean()
    assert accuracy > metrics.position_scores(most, test.labels)["accuracy"].mean() - 0.02


@pytest.mark.slow
def test_learned_baselines_beat_the_prior_and_counting_helps(two_player):
    train, test = two_player
    prior = ev.evaluate(fc.SeatPrior(2, games=20_000).fit(), test, bootstrap=50)
    public = ev.evaluate(fc.gradient_boosting(2, "public", max_iter=50).fit(train), test, bootstrap=50)
    counted = ev.evaluate(fc.gradient_boosting(2, "counted", max_iter=50).fit(train), test, bootstrap=50)
    logistic = ev.evaluate(fc.logistic_regression(2).fit(train), test, bootstrap=50)
    for result in (public, counted, logistic):
        assert result["slices"]["all"]["log_loss"]["value"] < prior["slices"]["all"]["log_loss"]["value"]
    assert counted["slices"]["all"]["accuracy"]["value"] > public["slices"]["all"]["accuracy"]["value"]


def test_act_gives_env_actions_for_one_observation_and_a_batch(two_player):
    _, test = two_player
    forecaster = fc.MostCards(2)
    env = gym.make("Beggar-v0")
    obs, _ = env.reset(seed=1)
    label = forecaster.act(obs)
    assert isinstance(label, int) and env.action_space.contains(label)
    probs = forecaster.act(obs, "probs")
    assert gym.make("Beggar-v0", forecast="probs").action_space.contains(probs)
    batch = forecaster.act(test.observations("public"))
    assert batch.shape == (len(test.labels),)


def test_forecasters_refuse_observations_they_cannot_read():
    public = datasets.generate(5, seed=1).fields
    with pytest.raises(ValueError, match="counted"):
        fc.BayesMC(2).predict_proba(public)
    with pytest.raises(ValueError, match="3 players"):
        fc.Uniform(3).predict_proba(public)
    with pytest.raises(TypeError, match="classifier"):
        fc.Learned(2, model=object())


# ----------------------------------------------------------------- metrics


def test_metrics_by_hand_and_against_scikit_learn():
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

    probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.0, 1.0, 0.0], [0.4, 0.4, 0.2]])
    labels = np.array([0, 2, 0, 1])
    scores = metrics.position_scores(probs, labels)
    assert scores["accuracy"].tolist() == [1, 0, 0, 0]  # a tie goes to the first, as the env scores it
    assert np.allclose(scores["log_loss"], [-math.log(0.7), -math.log(0.3), -math.log(1e-6), -math.log(0.4)])
    assert np.allclose(scores["brier"], [0.14, 0.78, 2.0, 0.16 + 0.36 + 0.04])
    assert scores["accuracy"].mean() == accuracy_score(labels, probs.argmax(axis=1))
    clipped = np.clip(probs, 1e-6, 1)
    assert np.isclose(scores["log_loss"].mean(), log_loss(labels, clipped / clipped.sum(1, keepdims=True)), atol=1e-5)
    assert np.isclose(scores["brier"].mean(), brier_score_loss(labels, probs, labels=[0, 1, 2], scale_by_half=False))


def test_expected_calibration_error_by_hand():
    confidence = np.array([0.9, 0.9, 0.8, 0.8, 0.6, 0.6])
    correct = np.array([1, 1, 1, 0, 0, 1])
    # three bins of two, sorted by confidence: (0.6, 0.6) acc 0.5, (0.8, 0.8) acc 0.5, (0.9, 0.9) acc 1
    expected = (abs(0.5 - 0.6) + abs(0.5 - 0.8) + abs(1 - 0.9)) / 3
    assert np.isclose(metrics.expected_calibration_error(confidence, correct, bins=3), expected)
    assert metrics.expected_calibration_error(np.array([0.7] * 10), np.array([1] * 7 + [0] * 3), bins=5) < 1e-12


def test_summaries_weigh_positions_and_games_and_bootstrap_whole_games():
    game = np.array([0, 0, 0, 1, 2, 2])
    scores = {"accuracy": np.array([1.0, 1, 1, 0, 0, 1]), "log_loss": np.ones(6), "brier": np.zeros(6)}
    scores["confidence"] = np.full(6, 0.5)
    out = metrics.summarise(scores, game, 3, np.ones(6, bool), bootstrap=400)
    assert out["accuracy"]["value"] == pytest.approx(4 / 6)
    assert out["accuracy"]["game_weighted"] == pytest.approx((1 + 0 + 0.5) / 3)
    low, high = out["accuracy"]["ci95"]
    assert 0 <= low < 4 / 6 < high <= 1 and out["log_loss"]["ci95"] == [1.0, 1.0]


@pytest.mark.slow
def test_the_protocol_report_and_its_slices(two_player):
    _, test = two_player
    result = ev.evaluate(fc.MostCards(2), test, bootstrap=100)
    slices = result["slices"]
    assert slices["all"]["positions"] == len(test.labels) == result["positions"]
    assert sum(slices[metrics.phase_name(lo, hi)]["positions"] for lo, hi in metrics.PHASES) == len(test.labels)
    assert sum(slices[f"progress Q{q}"]["positions"] for q in range(1, 5)) == len(test.labels)
    assert 0 < slices["open"]["positions"] < len(test.labels)
    assert slices["open"]["accuracy"]["value"] < slices["progress Q4"]["accuracy"]["value"]
    scores = metrics.position_scores(fc.MostCards(2).predict_proba(test.observations("public")), test.labels)
    assert slices["all"]["accuracy"]["value"] == pytest.approx(scores["accuracy"].mean())


@pytest.mark.slow
def test_a_policy_in_the_env_scores_as_the_forecaster_does(two_player):
    _, test = two_player
    forecaster = fc.MostCards(2)
    offline = ev.evaluate(forecaster, test, bootstrap=100)
    labels = ev.evaluate_policy(forecaster.act, test, observation="public", bootstrap=100)
    probs = ev.evaluate_policy(
        lambda obs: forecaster.act(obs, "probs"), test, observation="public", forecast="probs", bootstrap=100
    )
    for slice_name in ("all", "open", "cards 0-25", "progress Q3"):
        for metric in ("accuracy", "brier", "log_loss"):
            value = offline["slices"][slice_name][metric]["value"]
            assert probs["slices"][slice_name][metric]["value"] == pytest.approx(value)
        accuracy = offline["slices"][slice_name]["accuracy"]["value"]
        assert labels["slices"][slice_name]["accuracy"]["value"] == pytest.approx(accuracy)


def test_a_forecaster_trained_on_the_test_seed_is_refused(two_player):
    _, test = two_player
    cheat = fc.CalibratedMostCards(2).fit(datasets.generate(50, seed=TEST_SEED))
    with pytest.raises(ValueError, match="test seed"):
        ev.evaluate(cheat, test)


def test_gap_closed():
    def fake(value):
        return {"slices": {"all": {m: {"value": value} for m in metrics.METRICS}}}

    assert metrics.gap_closed(fake(0.75), fake(0.5), fake(1.0))["accuracy"] == pytest.approx(0.5)
    assert metrics.gap_closed(fake(0.5), fake(0.5), fake(1.0))["log_loss"] == 0


def test_one_bootstrap_draw_behind_every_interval():
    """Every interval resamples whole games with the one ``bootstrap_weights``: a seed gives
    the same resamples to a slice's figures and to a paired difference, so the difference
    of a forecaster to one that scores 0 everywhere has the slice's own interval."""
    weights = metrics.bootstrap_weights(5, bootstrap=300, seed=3)
    assert weights.shape == (300, 5) and (weights.sum(axis=1) == 5).all() and (weights >= 0).all()
    assert (metrics.bootstrap_weights(5, bootstrap=300, seed=3) == weights).all()
    game = np.array([0, 0, 1, 2, 2, 2, 3, 4])
    values = np.array([1.0, 0, 1, 1, 0, 0, 1, 1])
    scores = {name: values for name in metrics.METRICS} | {"confidence": np.full(8, 0.5)}
    summary = metrics.summarise(scores, game, 5, np.ones(8, bool), bootstrap=300, seed=3)
    difference = metrics.paired_difference(values, np.zeros(8), game, 5, weights)
    assert difference == {"difference": summary["accuracy"]["value"], "ci95": summary["accuracy"]["ci95"]}
    gaps = metrics.resampled_gaps(values, np.zeros(8), np.ones(8), game, 5, weights)  # prior 0, best 1: the mean itself
    assert metrics.interval95(gaps) == summary["accuracy"]["ci95"]


def test_each_forecaster_says_what_it_was_given():
    """The engine's forecasters are given the rules engine; the rest nothing beyond their
    observation and training data; the Bayes forecaster reports its progress."""
    for forecaster in fc.baselines(2, prior_games=1, bayes_k=4, trees=1, epochs=1):
        engine = isinstance(forecaster, fc.BayesMC)  # the Bayes forecaster and the oracle
        assert tuple(forecaster.given) == (("rules engine",) if engine else ()), forecaster.name
        assert forecaster.reports_progress == engine
    assert list(itertools.islice(distinct_arrangements([0, 0, 1]), 5)) == [(0, 0, 1), (0, 1, 0), (1, 0, 0)]

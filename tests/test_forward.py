"""Playing the game forward: the step's transitions against the engine, the queue machine
with an exact step against the engine game by game (2-4 players), one wrong transition
caught, rollouts with no budget equal to the Bayes forecaster's, the learned step and the
engine equal at every budget (forecasts and the views the leaf reads), the machine with no
torch installed, and (with torch) a step network trained from scratch that is exact and
rolls out as the engine plays, and the networks of the full view."""

import subprocess
import sys

import numpy as np
import pytest

import beggar_env as bg
from beggar_env import core, task
from beggar_env.forecasting import machine, protocol, transitions
from beggar_env.forecasting.forecasters import BayesMC

pytestmark = pytest.mark.usefixtures("torch_threads")  # torch's threads, set once for the session (conftest)


def needs_torch():
    return pytest.importorskip(
        "torch", reason="the learned step and the full view need torch (pip install 'beggar-env[rl]')"
    )


class Exact:
    """A step that is exact on every input that ``games`` random games meet: the engine's own
    outputs in the table (what a learned step that gets them all right holds)."""

    def __init__(self, n_players, games=20_000, seed=5):
        self.n_players, self.seed = n_players, seed
        self._table = transitions.exact_table(games, n_players, seed)

    def table(self):
        return self._table


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_the_tally_is_every_transition_of_its_games_and_the_step_a_function(n_players):
    inputs, outputs = transitions.transitions(5000, n_players, seed=3)  # the first 20-odd games
    seen, after, counts = transitions.tally(40, n_players, seed=3)
    by_row = dict(zip(transitions.codes(seen, n_players), map(tuple, after)))
    assert all(by_row[row] == tuple(out) for row, out in zip(transitions.codes(inputs, n_players), outputs))
    assert (transitions.decode(transitions.codes(inputs, n_players), n_players) == inputs).all()
    assert (transitions.decode_outputs(transitions.out_codes(outputs, n_players), n_players) == outputs).all()
    assert counts.sum() == bg.simulate(40, n_players=n_players, seed=3).cards.sum()
    for j, size in enumerate(transitions.in_sizes(n_players)):
        assert 0 <= inputs[:, j].min() and inputs[:, j].max() < size


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_the_machine_with_an_exact_step_plays_every_game_as_the_engine(n_players):
    games = 1000
    table = transitions.exact_table(games, n_players, seed=11)  # exact on every input these games meet
    labels, cards, tricks = machine.machine_games(table, games, n_players, seed=11)
    engine = bg.simulate(games, n_players=n_players, seed=11)
    np.testing.assert_array_equal(labels, core.outcome_labels(engine.winner, n_players))
    np.testing.assert_array_equal(cards, engine.cards)
    np.testing.assert_array_equal(tricks, engine.tricks)


def planted(table, row, n_players):
    """The table with one wrong transition at ``row``: another winner where the game ends
    there, else another seat to play."""
    wrong = table.copy()
    if wrong[row, 5] > 0:
        wrong[row, 5] = wrong[row, 5] % n_players + 1
    else:
        wrong[row, 0] = (wrong[row, 0] + 1) % n_players
    return wrong


@pytest.mark.parametrize("n_players, sample", [(2, None), (3, 40), (4, 40)])
def test_one_wrong_transition_is_caught(n_players, sample):
    """Every row these games use (2 players: all 150 of them), made wrong one at a time, changes
    some game's outcome, length or tricks."""
    games = 300
    table = transitions.exact_table(games, n_players, seed=12)
    engine = bg.simulate(games, n_players=n_players, seed=12)
    truth = (core.outcome_labels(engine.winner, n_players), engine.cards, engine.tricks)
    used = transitions.codes(transitions.tally(games, n_players, seed=12)[0], n_players)
    if sample:
        used = np.random.default_rng(0).choice(used, sample, replace=False)
    for row in used:
        played = machine.machine_games(planted(table, row, n_players), games, n_players, seed=12)
        assert any((a != b).any() for a, b in zip(played, truth)), f"the wrong row {row} went unnoticed"


def test_a_table_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="shape"):
        machine.machine_games(np.zeros((10, 6), np.int8), 5, 2)


def test_the_machine_and_its_tables_need_no_torch():
    """The machine was in one module with the torch networks: it could not be imported without torch."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from beggar_env.forecasting import machine, transitions\n"
        "try:\n"
        "    from beggar_env.forecasting import step_model\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "beggar_env.forecasting.step_model needs torch" in run.stdout, run.stdout


def test_each_rollout_says_what_it_is_given():
    """The step row is Bayes over a hand-built machine: named so, and given it; the curve's
    points are given what plays forward and whatever their leaf is given."""
    step = Exact(2, games=50)
    rolled = machine.RolledStep(step, k=16)
    assert rolled.name == "Bayes over a hand-built machine, learned rule table (K=16)"
    assert rolled.given == ("hand-built machine",)
    leaf = Recorder()
    assert machine.Truncated(leaf, tricks=2).given == ("rules engine",)
    assert machine.Truncated(leaf, step, tricks=2).given == ("hand-built machine",)
    leaf.given = ("teacher",)
    assert machine.Truncated(leaf, step, cards=5).given == ("hand-built machine", "teacher")


@pytest.fixture(scope="module")
def small_test():
    return protocol.TestSet.generate(2, 12, seed=21)


def test_rolled_out_by_the_engine_to_the_end_is_the_bayes_forecaster(small_test):
    obs = small_test.observations("counted")
    bayes = BayesMC(2, k=16, seed=3).predict_proba(obs)
    np.testing.assert_allclose(machine.rolled(obs, k=16, seed=3), bayes, rtol=0, atol=1e-12)  # the same rollouts


class Recorder:
    """A leaf forecaster that says 'seat 0' with 0.6 and keeps the views it was shown."""

    observation = "counted"
    n_players = 2
    name = "recorder"

    def __init__(self):
        self.seen = []

    def predict_proba(self, obs):
        self.seen.append({name: np.array(value) for name, value in obs.items()})
        probs = np.full((len(obs["cards"]), 3), 0.2)
        probs[:, 0] = 0.6
        return probs


@pytest.mark.slow
@pytest.mark.parametrize("budget", [{"cards": 1}, {"cards": 9}, {"tricks": 1}, {"tricks": 3}])
def test_an_exact_learned_step_and_the_engine_agree_at_every_budget(small_test, budget):
    obs = small_test.observations("counted")
    step = Exact(2, games=100_000)  # every one of the 150 inputs of 2 players
    engine_leaf, learned_leaf = Recorder(), Recorder()
    by_engine = machine.rolled(obs, leaf=engine_leaf, k=4, **budget)
    by_step = machine.rolled(obs, step, leaf=learned_leaf, k=4, **budget)
    np.testing.assert_array_equal(by_engine, by_step)
    for a, b in zip(engine_leaf.seen, learned_leaf.seen):
        assert a.keys() == b.keys() and all((a[name] == b[name]).all() for name in a)
    leaves = engine_leaf.seen[0]
    assert len(leaves["cards"]) > 0 and (leaves["known"] == task.UNKNOWN).any()  # open positions stay open
    assert (leaves["unseen"].sum(axis=1) == (leaves["known"] == task.UNKNOWN).sum(axis=(1, 2))).all()


def test_no_budget_is_the_bayes_forecaster_and_budget_zero_the_leaf(small_test):
    obs = small_test.observations("counted")
    step = Exact(2, games=100_000)
    np.testing.assert_array_equal(machine.rolled(obs, step, k=8), machine.rolled(obs, k=8))
    leaf = Recorder()
    np.testing.assert_array_equal(machine.rolled(obs, step, cards=0, leaf=leaf, k=8), leaf.predict_proba(obs))
    with pytest.raises(ValueError, match="leaf"):
        machine.rolled(obs, tricks=2)
    deep = machine.rolled(obs, tricks=10**6, leaf=Recorder(), k=8)  # every rollout ends: no leaf is asked
    np.testing.assert_allclose(deep, machine.rolled(obs, k=8), atol=1e-12)


@pytest.mark.slow
def test_a_step_network_trained_from_scratch_is_exact_and_rolls_out_as_the_engine_plays():
    needs_torch()
    from beggar_env.forecasting.step_model import StepModel

    step = StepModel(2, games=20_000, steps=1500, hidden=64).fit()
    inputs, outputs = transitions.transitions(200_000, 2, seed=77)
    assert step.exact(inputs, outputs) == (1.0, 0)
    labels, cards, _ = machine.machine_games(step.table(), 500, 2, seed=78)
    engine = bg.simulate(500, n_players=2, seed=78)
    np.testing.assert_array_equal(labels, core.outcome_labels(engine.winner, 2))
    np.testing.assert_array_equal(cards, engine.cards)
    test = protocol.TestSet.generate(2, 10, seed=79)
    obs = test.observations("counted")
    rolled = machine.RolledStep(step, k=16)
    np.testing.assert_allclose(rolled.predict_proba(obs), BayesMC(2, k=16).predict_proba(obs), rtol=0, atol=1e-12)
    assert rolled.name == "Bayes over a hand-built machine, learned rule table (K=16)"
    assert rolled.trained_on_seed == step.seed and rolled.given == ("hand-built machine",)


# --------------------------------------------------------------- the full view


@pytest.fixture(scope="module")
def full_positions():
    from beggar_env import datasets

    return datasets.generate(30, n_players=2, observation="full", samples=6, seed=31)


def test_the_full_features_read_every_hand_as_documented(full_positions):
    from beggar_env.forecasting import features

    obs = full_positions.fields
    x = features.full_features(obs)
    public = features.public_features(obs)
    hands = obs["hands"]
    n, p, _ = hands.shape
    assert x.shape == (n, public.shape[1] + p * 5 + p * features.TOP * 6 + 4 * p * 5 + 5 * p)
    np.testing.assert_array_equal(x[:, : public.shape[1]], public)
    at = public.shape[1]
    for i in range(0, n, 5):
        for seat in range(p):
            hand = [c for c in hands[i, seat] if c >= 0]
            assert list(x[i, at + seat * 5 : at + seat * 5 + 5]) == [hand.count(c) for c in range(5)]
            top = x[i, at + p * 5 + seat * 48 : at + p * 5 + (seat + 1) * 48].reshape(8, 6)
            assert list(top.argmax(axis=1)) == [hand[j] + 1 if j < len(hand) else 0 for j in range(8)]
            first_court = x[i, -5 * p + seat]
            assert first_court == next((j for j, c in enumerate(hand) if c > 0), 52)


@pytest.mark.slow
@pytest.mark.parametrize("net", ["hands", "looped"])
def test_a_full_view_network_trains_and_forecasts_each_position_as_if_alone(full_positions, net):
    needs_torch()
    from beggar_env.forecasting.full_view import FullViewForecaster

    forecaster = FullViewForecaster(2, net, games=20, samples=4, epochs=1, batch=16, data_seed=32)
    forecaster.fit()
    assert forecaster.observation == "full" and forecaster.trained_on_seed == 32 and len(forecaster.history) == 1
    assert forecaster.given == ()
    obs = full_positions.fields
    probs = forecaster.predict_proba(obs)
    assert probs.shape == (len(obs["cards"]), 3) and np.allclose(probs.sum(axis=1), 1)
    for i in (0, 7, len(probs) - 1):  # a batch of one: no padding, no neighbours
        alone = forecaster.predict_proba({name: value[i : i + 1] for name, value in obs.items()})
        np.testing.assert_allclose(alone[0], probs[i], rtol=0, atol=1e-5)


def test_the_looped_model_iterates_more_for_longer_hands():
    torch = needs_torch()
    from beggar_env.forecasting.full_view import LoopedNet

    hands = torch.full((4, 3, 52), -1)
    for row, sizes in enumerate([(52, 0, 0), (30, 20, 2), (21, 17, 14), (18, 17, 17)]):
        for seat, size in enumerate(sizes):
            hands[row, seat, :size] = 0
    net = LoopedNet(3, 10, width=8, heads=2, base=2, per_card=0.5, most=40)
    assert net.iterations(hands).tolist() == [2, 12, 11, 11]  # 2 + half the second-largest hand, rounded up
    net.most = 9
    assert net.iterations(hands).tolist() == [2, 9, 9, 9]

"""The faces view (``faces=True``) of the env, the vector env and the datasets: it adds the
cards' faces (``pile_faces``, ``played``, ``hand_faces`` with the full view) and changes
nothing else: every shared field, reward, label and info is the faces-off run's, every face
shown has the class shown beside it, and a game's faces are the deck's 52, each once."""

import gymnasium as gym
import numpy as np
import pytest

import beggar_env
from beggar_env import core, datasets, faces, task
from beggar_env.core import Card

FACE_FIELDS = ("hand_faces", "pile_faces", "played")
CLASS = core.CLASS_OF_CARD_ID


def classes_of(face_array):
    """The classes of faces, -1 kept."""
    face_array = np.asarray(face_array)
    return np.where(face_array >= 0, CLASS[np.maximum(face_array, 0)], -1)


def check_faces(obs, n_cards=core.DECK_SIZE, before=None):
    """The faces of one observation agree with its classes; with the full view, the game's
    faces are distinct and as many as its cards; ``before`` (the full view before a card
    step) says which face was played."""
    size = int(obs["pile_size"])
    np.testing.assert_array_equal(classes_of(obs["pile_faces"]), obs["pile"])
    assert (obs["pile_faces"][size:] == -1).all() and (obs["pile_faces"][:size] >= 0).all()
    played = int(obs["played"])
    if int(obs["cards"]) == 0:
        assert played == -1
    elif size > 0:  # the card just played lies on top of the pile ...
        assert played == obs["pile_faces"][size - 1]
    else:  # ... or it completed a payment and the pile was taken at once (or it ended the game)
        assert played >= 0
    if "hand_faces" in obs:
        np.testing.assert_array_equal(classes_of(obs["hand_faces"]), obs["hands"])
        shown = np.concatenate([obs["hand_faces"].ravel(), obs["pile_faces"]])
        shown = shown[shown >= 0]
        assert len(shown) == len(set(shown.tolist())) == n_cards
        if before is not None:
            assert played == before["hand_faces"][int(before["turn"]), 0]


def shared(obs):
    return {name: value for name, value in obs.items() if name not in FACE_FIELDS}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("n_players", [2, 3, 4])
@pytest.mark.parametrize("observation", ["public", "counted", "full"])
@pytest.mark.parametrize("step_unit", ["card", "trick"])
def test_the_single_env_with_faces_plays_the_same_games(n_players, observation, step_unit):
    options = dict(n_players=n_players, observation=observation, step_unit=step_unit)
    plain, shown = gym.make("Beggar-v0", **options), gym.make("Beggar-v0", faces=True, **options)
    names = set(plain.observation_space.spaces)
    extra = {"pile_faces", "played"} | ({"hand_faces"} if observation == "full" else set())
    assert set(shown.observation_space.spaces) == names | extra
    rng = np.random.default_rng(n_players)
    for episode in range(3):
        seed = 100 + n_players if episode == 0 else None
        a, info_a = plain.reset(seed=seed)
        b, info_b = shown.reset(seed=seed)
        assert_same(a, shared(b))
        assert info_a == info_b
        check_faces(b)
        terminated, steps = False, 0
        while not terminated and steps < 400:
            action = int(rng.integers(n_players + 1))
            before = b if step_unit == "card" and observation == "full" else None
            a, reward_a, terminated, _, info_a = plain.step(action)
            b, reward_b, terminated_b, _, info_b = shown.step(action)
            assert_same(a, shared(b))
            assert (reward_a, terminated, info_a.keys()) == (reward_b, terminated_b, info_b.keys())
            for key in info_a:
                np.testing.assert_array_equal(info_a[key], info_b[key])
            check_faces(b, before=before)
            assert shown.observation_space.contains(b)
            steps += 1


def test_with_trick_steps_played_is_the_last_card_of_the_trick():
    cards = gym.make("Beggar-v0", faces=True, observation="full")
    tricks = gym.make("Beggar-v0", faces=True, observation="full", step_unit="trick")
    by_card, _ = cards.reset(seed=3)
    by_trick, _ = tricks.reset(seed=3)
    over = False
    while not over:
        by_trick, _, over, _, _ = tricks.step(0)
        ended = False
        while not ended and (by_card["tricks"] < by_trick["tricks"] or over):
            by_card, _, ended, _, _ = cards.step(0)
        assert_same(by_card, by_trick)


def test_a_given_deal_shows_the_faces_it_names():
    env = gym.make("Beggar-v0", faces=True, observation="full")
    obs, _ = env.reset(options={"deal": "10H 7 - K / AS -"})
    names = [[faces.FACE_NAMES[f] for f in hand if f >= 0] for hand in obs["hand_faces"]]
    assert names == [["10H", "7C", "2C", "KC"], ["AS", "2D"]]  # faces.deal_faces' rule for the rest
    deal = beggar_env.random_deal(3, seed=5)
    env = gym.make("Beggar-v0", n_players=3, faces=True, observation="full")
    obs, _ = env.reset(options={"deal": deal})
    for p, hand in enumerate(deal.hands):
        assert [faces.FACE_NAMES[f] for f in obs["hand_faces"][p, : len(hand)]] == list(hand)
    while True:
        before = obs
        obs, _, terminated, _, _ = env.step(0)
        check_faces(obs, before=before)
        if terminated:
            break


def test_random_faces_are_those_of_the_same_deal_given_by_name():
    env = gym.make("Beggar-v0", n_players=2, faces=True, observation="full")
    random_obs, _ = env.reset(seed=9)
    deal = beggar_env.random_deal(2, seed=9)  # the env's first deal from seed 9
    given_obs, _ = gym.make("Beggar-v0", faces=True, observation="full").reset(options={"deal": deal})
    assert_same(random_obs, given_obs)


def test_a_deal_with_fewer_cards_has_as_many_faces():
    env = gym.make("Beggar-v0", n_players=3, faces=True, observation="full")
    obs, _ = env.reset(options={"deal": "J - - / Q - / - - A"})
    while True:
        check_faces(obs, n_cards=8)
        obs, _, terminated, _, _ = env.step(0)
        if terminated:
            break


def test_faces_must_be_a_bool():
    with pytest.raises(TypeError, match="faces must be True or False"):
        gym.make("Beggar-v0", faces="yes")
    with pytest.raises(TypeError, match="faces must be True or False"):
        gym.make_vec("Beggar-v0", num_envs=2, faces=1)


@pytest.mark.parametrize("n_players", [2, 3, 4])
@pytest.mark.parametrize("autoreset_mode", ["NextStep", "SameStep"])
def test_the_vector_env_with_faces_plays_the_same_games(n_players, autoreset_mode):
    options = dict(num_envs=5, n_players=n_players, observation="full", autoreset_mode=autoreset_mode)
    plain, shown = gym.make_vec("Beggar-v0", **options), gym.make_vec("Beggar-v0", faces=True, **options)
    a, _ = plain.reset(seed=7)
    b, _ = shown.reset(seed=7)
    rng = np.random.default_rng(1)
    singles = [gym.make("Beggar-v0", n_players=n_players, observation="full", faces=True) for _ in range(5)]
    single_obs = [env.reset(seed=int(core.stream_key(7, i)))[0] for i, env in enumerate(singles)]
    first_games = True  # until a game ends, each env is the single env of its stream
    for _ in range(300):
        assert_same(a, shared(b))
        for i in range(5):
            one = {name: value[i] for name, value in b.items()}
            check_faces(one)
            if first_games:
                assert_same(one, single_obs[i])
        actions = rng.integers(n_players + 1, size=5)
        a, reward_a, terminated_a, _, info_a = plain.step(actions)
        b, reward_b, terminated_b, _, info_b = shown.step(actions)
        first_games = first_games and not terminated_b.any()
        if first_games:
            single_obs = [env.step(int(actions[i]))[0] for i, env in enumerate(singles)]
        np.testing.assert_array_equal(reward_a, reward_b)
        np.testing.assert_array_equal(terminated_a, terminated_b)
        assert info_a.keys() == info_b.keys()
        for key in info_a:
            if key == "final_obs":
                for x, y in zip(info_a[key], info_b[key]):
                    assert (x is None) == (y is None)
                    if x is not None:
                        assert_same(x, shared(y))
                        check_faces(y)
            elif key == "final_info":
                assert_same(info_a[key], info_b[key])
            else:
                np.testing.assert_array_equal(info_a[key], info_b[key], err_msg=key)


def test_the_vector_env_deals_given_deals_with_their_faces():
    deals = ["10H 7 - K / AS -", beggar_env.random_deal(2, seed=2)]
    envs = gym.make_vec("Beggar-v0", num_envs=2, faces=True, observation="full")
    obs, _ = envs.reset(options={"deals": deals})
    for i, deal in enumerate(deals):
        single, _ = gym.make("Beggar-v0", faces=True, observation="full").reset(options={"deal": deal})
        assert_same({name: value[i] for name, value in obs.items()}, single)


@pytest.mark.parametrize("n_players", [2, 3, 4])
@pytest.mark.parametrize(("observation", "samples"), [("full", "card"), ("counted", "trick"), ("public", 5)])
def test_datasets_with_faces_hold_the_same_samples(n_players, observation, samples):
    options = dict(n_players=n_players, observation=observation, samples=samples, seed=6)
    plain, shown = datasets.generate(8, **options), datasets.generate(8, faces=True, **options)
    assert shown.faces and not plain.faces
    for name in datasets.Dataset.ARRAYS[1:]:
        np.testing.assert_array_equal(getattr(plain, name), getattr(shown, name))
    np.testing.assert_array_equal(plain.label, shown.label)
    assert_same(plain.fields, shared(shown.fields))
    columns = [c for c in shown.columns if c not in plain.columns]
    assert columns == (
        [f"hand_faces_{p}_{j}" for p in range(n_players) for j in range(52)] if observation == "full" else []
    ) + [f"pile_faces_{j}" for j in range(52)] + ["played"]
    for row in range(len(shown)):
        check_faces({name: value[row] for name, value in shown.fields.items()})


def test_dataset_rows_with_faces_are_the_envs(tmp_path):
    data = datasets.generate(3, n_players=3, observation="full", samples="trick", faces=True, seed=12)
    for i, deal in enumerate(beggar_env.random_deals(3, 3, seed=12)):
        env = gym.make("Beggar-v0", n_players=3, observation="full", step_unit="trick", faces=True)
        obs, _ = env.reset(options={"deal": deal})
        rows, terminated = [], False
        while not terminated:
            rows.append(gym.spaces.flatten(env.observation_space, obs))
            obs, _, terminated, _, _ = env.step(0)
        np.testing.assert_array_equal(data.observations[data.game == i], rows)
    data.save(tmp_path / "faces.npz")
    back = datasets.load(tmp_path / "faces.npz")
    assert back.faces and back.columns == data.columns
    np.testing.assert_array_equal(back.observations, data.observations)


def test_parquet_datasets_with_faces_are_read_back(tmp_path):
    pytest.importorskip("pyarrow")
    from beggar_env.datasets import shards

    meta = shards.generate(tmp_path / "d", 5, n_players=2, observation="full", seed=3, faces=True, shard_games=2)
    assert meta["job"]["faces"] is True
    assert ["played", -1, 51] in [[name, low, high] for name, _, low, high in meta["fields"]]
    expected = datasets.generate(5, n_players=2, observation="full", seed=3, faces=True)
    back = datasets.load(tmp_path / "d")
    assert back.faces and back.columns == expected.columns
    np.testing.assert_array_equal(back.observations, expected.observations)
    batch = next(iter(datasets.batches(tmp_path / "d", columns=["played", "pile_faces_0", "hand_faces_1_51"])))
    assert [str(t) for t in batch.schema.types] == ["int8"] * 3


def test_the_layout_with_faces():
    layout = task.Layout(2, "counted", faces=True)
    names = [name for name, *_ in layout.fields]
    assert names == sorted(names) and {"pile_faces", "played"} <= set(names) and "hand_faces" not in names
    full = task.Layout(4, "full", faces=True)
    assert full.slices["hand_faces"][1] == (4, 52) and full.size == task.Layout(4, "full").size + 5 * 52 + 1
    ranges = {name: (low, high) for name, _, low, high in full.fields}
    assert ranges["played"] == ranges["pile_faces"] == ranges["hand_faces"] == (-1, 51)
    assert Card.ACE == 4  # the class fields keep their range beside the faces'


def test_the_dataset_command_takes_faces(tmp_path, capsys):
    from beggar_env import cli

    out = tmp_path / "d.npz"
    args = ["dataset", "--games", "3", "--seed", "4", "--observation", "full", "--faces", "--no-progress"]
    assert cli.main([*args, "--out", str(out)]) == 0
    assert "full observation with faces" in capsys.readouterr().out
    expected = datasets.generate(3, observation="full", faces=True, seed=4)
    np.testing.assert_array_equal(datasets.load(out).observations, expected.observations)

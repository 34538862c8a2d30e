"""Games as sequences and the sequence forecasters: the event encoding against a plain
reading of one observation, the packing of games into windows, the streams' seeding across
epochs, runs and DataLoader workers, Parquet shards against memory, and a recurrent model
that forecasts the same whether it reads whole games, steps with one env or with the
vector env, as the protocol plays it."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the sequence forecasters need torch (pip install 'beggar-env[rl]')")
pytestmark = pytest.mark.usefixtures("torch_threads")  # torch's threads, set once for the session (conftest)

import gymnasium as gym  # noqa: E402

import beggar_env  # noqa: E402, F401 (registers Beggar-v0)
from beggar_env import datasets  # noqa: E402
from beggar_env.forecasting import events, protocol, sequence_models, sequences, training  # noqa: E402
from beggar_env.forecasting.forecasters import BayesMC  # noqa: E402


def plain_public(fields, i):
    """The public encoding of row ``i``, read field by field as the docs describe it."""
    p = len(fields["hand_sizes"][i])
    size = int(fields["pile_size"][i])
    top = [0.0] * 6
    top[0 if size == 0 else int(fields["pile"][i][size - 1]) + 1] = 1.0
    out = top + [1.0 if size == 0 and fields["cards"][i] > 0 else 0.0]
    out += [1.0 if s == fields["turn"][i] else 0.0 for s in range(p)]
    out += [1.0 if o == fields["owed"][i] else 0.0 for o in range(5)]
    out += [1.0 if c == fields["court"][i] else 0.0 for c in range(-1, p)]
    out += [h / 52 for h in fields["hand_sizes"][i]] + [float(a) for a in fields["alive"][i]] + [size / 52]
    out += [np.log1p(float(fields["cards"][i])) / 8, np.log1p(float(fields["tricks"][i])) / 8]
    return np.array(out, np.float32)


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_the_public_encoding_reads_each_observation_as_documented(n_players):
    data = datasets.generate(4, n_players=n_players, observation="public", seed=n_players)
    encoded = events.encode(data.fields)
    assert encoded.shape == (len(data), events.width(n_players))
    for i in range(0, len(data), 7):
        np.testing.assert_allclose(encoded[i], plain_public(data.fields, i), rtol=1e-6, atol=1e-7)
    one = {name: value[5] for name, value in data.fields.items()}
    np.testing.assert_array_equal(events.encode(one), encoded[5])


def test_the_counted_encoding_adds_what_a_card_counter_knows_and_only_reads_its_level():
    data = datasets.generate(3, observation="counted", seed=1)
    fields = data.fields
    encoded = events.encode(fields, "counted")
    public = events.width(2, "public")
    np.testing.assert_array_equal(encoded[:, :public], events.encode(fields, "public"))
    np.testing.assert_allclose(encoded[:, public : public + 5], fields["unseen"] / [36, 4, 4, 4, 4], rtol=1e-6)
    seat0 = encoded[:, public + 5 : public + 5 + 6 + 4 * 7]
    known = fields["known"][:, 0]
    for c, total in enumerate([36, 4, 4, 4, 4]):
        np.testing.assert_allclose(seat0[:, c], (known == c).sum(axis=1) / total, rtol=1e-6)
    np.testing.assert_allclose(seat0[:, 5], (known == -2).sum(axis=1) / 52, rtol=1e-6)
    top = seat0[:, 6:13]  # (none, unknown, numeral, J, Q, K, A)
    assert (top.argmax(axis=1) == np.select([known[:, 0] == -1, known[:, 0] == -2], [0, 1], known[:, 0] + 2)).all()
    public_only = {name: fields[name] for name in fields if name not in ("known", "unseen")}
    with pytest.raises(ValueError, match="'known'"):
        events.encode(public_only, "counted")


def games_of(n_games, seed, observation="public", n_players=2):
    return sequences.encode_dataset(
        datasets.generate(n_games, n_players=n_players, observation=observation, seed=seed), observation
    )


@pytest.mark.parametrize("lanes, window", [(1, 7), (3, 16), (8, 64)])
def test_windows_pack_every_step_once_in_order_with_a_start_where_a_game_begins(lanes, window):
    chunks = [games_of(5, 1), games_of(4, 2)]
    whole = sequences.concat(chunks)
    seen = np.zeros(len(whole.events), int)
    lanes_rows = [[] for _ in range(lanes)]
    for w in sequences.windows(chunks, lanes, window):
        assert w.events.shape == (lanes, window, whole.events.shape[1])
        rows = w.row.numpy()
        valid = w.valid.numpy()
        assert ((rows >= 0) == valid).all()
        for b in range(lanes):
            lane = rows[b][valid[b]]
            assert not valid[b][len(lane) :].any()  # padding only after a lane's last step
            lanes_rows[b].extend(lane.tolist())
            np.testing.assert_array_equal(w.events.numpy()[b][valid[b]], whole.events[lane])
            starts = np.isin(lane, whole.offsets[:-1])
            np.testing.assert_array_equal(w.start.numpy()[b][valid[b]], starts)
            game = np.searchsorted(whole.offsets, lane, side="right") - 1
            np.testing.assert_array_equal(w.label.numpy()[b][valid[b]], whole.label[game])
        np.add.at(seen, rows[valid], 1)
    assert (seen == 1).all()
    for lane in lanes_rows:  # each lane: whole games, each in play order
        for a, b in zip(lane, lane[1:]):
            assert b == a + 1 or b in whole.offsets[:-1]


def test_streams_are_fresh_each_epoch_and_the_same_for_a_seed_and_any_number_of_workers():
    streams = sequences.GameStreams(2, "public", games=9, seed=5, chunk_games=2)
    first = list(streams)
    assert [len(c) for c in first] == [2, 2, 2, 2, 1]
    again = list(sequences.GameStreams(2, "public", games=9, seed=5, chunk_games=2))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.events, b.events)
    expected = datasets.generate(2, observation="public", seed=streams.chunk_seed(3))
    np.testing.assert_array_equal(first[3].events, events.encode(expected.fields))
    streams.set_epoch(1)
    assert not np.array_equal(list(streams)[0].events, first[0].events)
    streams.set_epoch(0)
    loader = torch.utils.data.DataLoader(streams, batch_size=None, num_workers=2, multiprocessing_context="fork")
    through_workers = list(loader)
    assert len(through_workers) == len(first)
    for a, b in zip(first, through_workers):
        np.testing.assert_array_equal(a.events, b.events)
        np.testing.assert_array_equal(a.label, b.label)


def test_soft_labels_are_the_bayes_forecasters_probabilities_at_each_step():
    streams = sequences.GameStreams(2, "public", games=3, seed=2, chunk_games=3, soft_k=8)
    chunk = next(iter(streams))
    data = datasets.generate(3, observation="counted", seed=streams.chunk_seed(0))
    expected = BayesMC(2, k=8, seed=streams.chunk_seed(0)).predict_proba(data.fields)
    np.testing.assert_allclose(chunk.soft, expected, rtol=1e-6)
    np.testing.assert_array_equal(chunk.events, events.encode(data.fields, "public"))  # the public view only


def test_games_from_parquet_shards_are_those_in_memory(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet shards need pyarrow")
    folder = tmp_path / "shards"
    datasets.shards.generate(folder, 7, observation="counted", seed=3, shard_games=3)
    memory = sequences.concat(sequences.from_dataset(datasets.load(folder), "counted", chunk_games=2))
    read = list(sequences.from_shards(folder, "counted", chunk_games=2, batch_size=50))  # games span batches
    assert [len(c) for c in read] == [2, 2, 2, 1]
    read = sequences.concat(read)
    np.testing.assert_array_equal(read.offsets, memory.offsets)
    np.testing.assert_array_equal(read.events, memory.events)
    np.testing.assert_array_equal(read.label, memory.label)
    trick = tmp_path / "trick"
    datasets.shards.generate(trick, 2, samples="trick", seed=3)
    with pytest.raises(ValueError, match="every card step"):
        next(sequences.from_shards(trick))


def untrained(architecture, observation="public"):
    forecaster = sequence_models.SequenceForecaster(
        2, observation, architecture, hidden=16, layers=2, context=12, window=8, seed=3
    )
    forecaster.model = forecaster.new_model().eval()
    forecaster.trained_on_seed = forecaster.seed
    return forecaster


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["gru", "transformer"])
def test_a_recurrent_forecaster_forecasts_the_same_from_whole_games_one_env_or_the_vector_env(architecture):
    forecaster = untrained(architecture, "counted")
    test = protocol.TestSet.generate(2, 6, seed=11)
    whole = forecaster.predict_proba(test.observations("counted"))
    assert whole.shape == (len(test.labels), 3)
    np.testing.assert_allclose(whole.sum(axis=1), 1)
    played, _ = protocol.predict(forecaster, test)  # every game in the vector env, in step with the others
    np.testing.assert_allclose(played, whole, atol=1e-6)

    env = gym.make("Beggar-v0", observation="counted", forecast="probs")
    forecaster.reset_state()
    first_game = test.data.game == 0
    obs, _ = env.reset(options={"deal": beggar_env.format_deal(beggar_env.random_deals(6, 2, 11)[0], "compact")})
    steps = []
    for _ in range(int(first_game.sum())):
        action = forecaster.act(obs, "probs")
        steps.append(action)
        obs, _, terminated, _, _ = env.step(action)
    assert terminated
    np.testing.assert_allclose(np.array(steps), whole[first_game], atol=1e-6)


def test_act_resets_an_envs_memory_where_its_next_game_starts():
    forecaster = untrained("gru")
    envs = gym.make_vec("Beggar-v0", num_envs=3, forecast="probs")  # next-step autoreset
    obs, _ = envs.reset(seed=4)
    forecaster.reset_state()
    restarted = 0
    for _ in range(1500):
        probs = forecaster.act(obs, "probs")
        starting = obs["cards"] == 0
        if starting.any():  # the same forecast as a fresh state's
            fresh = untrained("gru").act({k: v[starting] for k, v in obs.items()}, "probs")
            np.testing.assert_allclose(probs[starting], fresh, atol=1e-6)
            restarted += int(starting.sum())
        obs, *_ = envs.step(probs)
    assert restarted > 3  # the envs started new games along the way


@pytest.mark.slow
def test_training_learns_and_the_saved_forecaster_forecasts_the_same(tmp_path):
    forecaster = sequence_models.SequenceForecaster(
        2, "public", "gru", hidden=16, games=300, epochs=2, lanes=16, window=32, val_games=100, seed=7
    )
    forecaster.fit()
    assert [h["epoch"] for h in forecaster.history] == [1, 2]
    best = min(h["val_log_loss"] for h in forecaster.history)
    assert best < np.log(3)  # better than knowing nothing about three outcomes
    test = protocol.TestSet.generate(2, 4, seed=12)
    obs = test.observations("public")
    forecaster.save(tmp_path / "gru.pt")
    loaded = sequence_models.SequenceForecaster.load(tmp_path / "gru.pt")
    np.testing.assert_allclose(loaded.predict_proba(obs), forecaster.predict_proba(obs))
    with pytest.raises(ValueError, match="first observation must begin a game"):
        forecaster.predict_proba({name: value[3:] for name, value in obs.items()})


@pytest.mark.slow
def test_distillation_trains_on_soft_labels():
    forecaster = sequence_models.SequenceForecaster(
        2,
        "public",
        "transformer",
        "bayes",
        hidden=16,
        context=16,
        games=60,
        epochs=1,
        lanes=8,
        window=16,
        val_games=20,
        soft_k=4,
        seed=8,
    )
    streams = forecaster.streams()
    assert streams.soft_k == 4 and next(iter(streams)).soft is not None
    forecaster.fit()
    assert forecaster.history[0]["val_log_loss"] < 5
    assert forecaster.name == "transformer (public stream, distilled from Bayes)"


def test_a_distilled_forecaster_says_it_had_a_teacher():
    assert sequence_models.SequenceForecaster(2, target="bayes").given == ("teacher",)
    assert sequence_models.SequenceForecaster(2, target="outcome").given == ()


# ------------------------------------------------------------------ model files


def small(architecture="gru"):
    forecaster = sequence_models.SequenceForecaster(
        2, "public", architecture, hidden=8, layers=1, context=8, games=20, epochs=1, lanes=4, window=8, val_games=5
    )
    forecaster.model = forecaster.new_model()
    return forecaster


def test_a_save_that_fails_keeps_the_previous_model(tmp_path, monkeypatch):
    """save wrote in place: a save that failed on a full disk left an unloadable file and
    the previous model gone."""
    path = small().save(tmp_path / "model.pt")
    before = open(path, "rb").read()
    real = torch.save

    def full_disk(obj, f, *args, **kwargs):
        real(obj, f, *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sequence_models.torch, "save", full_disk)
    with pytest.raises(OSError, match="writing .*model.pt failed: No space left on device"):
        small("transformer").save(path)
    assert open(path, "rb").read() == before and sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]
    monkeypatch.undo()
    assert sequence_models.SequenceForecaster.load(path).architecture == "gru"
    assert small().save(tmp_path / "bare").endswith("bare.pt")
    with pytest.raises(ValueError, match="names a .txt file"):
        small().save(tmp_path / "model.txt")


def saved_with(tmp_path, change):
    """A model file whose saved object ``change`` altered."""
    forecaster = small()
    saved = {
        "format": sequence_models.MODEL_FORMAT,
        "settings": forecaster.settings(),
        "state": forecaster.model.state_dict(),
        "history": [],
    }
    change(saved)
    path = tmp_path / "altered.pt"
    torch.save(saved, path)
    return path


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda s: s["settings"].update(hidden=100_000), "hidden must be between 1 and 4096"),  # 19 GB, once
        (lambda s: s["settings"].update(hidden=4000), "weights 'embed.weight' are (8,"),  # 128 MB: not in the file
        (lambda s: s["settings"].update(context=10**9), "context must be"),
        (lambda s: s["settings"].update(threads=10**9), "threads must be"),
        (lambda s: s["settings"].update(n_players=7), "n_players"),
        (lambda s: s["settings"].update(architecture="lstm"), "architecture"),
        (lambda s: s["settings"].pop("lanes"), "its settings are"),
        (lambda s: s["settings"].update(extra=1), "its settings are"),
        (lambda s: s.update(settings=[1, 2]), "its settings are"),
        (lambda s: s["state"].pop("head.bias"), "not those of its settings' model"),
        (lambda s: s["state"].update({"head.bias": torch.zeros(5)}), "'head.bias' are (5,)"),
        (lambda s: s["state"].update({"head.bias": torch.full((3,), float("nan"))}), "not all finite"),
        (lambda s: s["state"].update({"head.bias": torch.zeros(3, dtype=torch.long)}), "not a tensor of real"),
        (lambda s: s.update(history="long"), "history"),
        (lambda s: s.pop("state"), "lacks its settings"),
        (lambda s: s.update(format="something else"), "its format is"),
    ],
)
def test_a_hostile_model_file_is_one_line_naming_it(tmp_path, change, words):
    """load trusted the file: a few hundred bytes could ask for 19 GB, and a broken file
    raised torch's own errors."""
    path = saved_with(tmp_path, change)
    with pytest.raises(ValueError) as caught:
        sequence_models.SequenceForecaster.load(path)
    message = str(caught.value)
    assert str(path) in message and words in message and "\n" not in message, message


def test_a_file_that_is_not_a_model_is_one_line_naming_it(tmp_path):
    good = small().save(tmp_path / "good.pt")
    data = open(good, "rb").read()
    cases = {
        "random.pt": bytes(range(256)) * 4,
        "empty.pt": b"",
        "truncated.pt": data[: len(data) // 2],
        "tail.pt": data[:-30],
        "text.pt": b'{"settings": {}}',
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError) as caught:
            sequence_models.SequenceForecaster.load(tmp_path / name)
        assert str(tmp_path / name) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="no such file"):
        sequence_models.SequenceForecaster.load(tmp_path / "none.pt")
    with pytest.raises(TypeError, match="path"):
        sequence_models.SequenceForecaster.load(3)


def test_torch_s_own_text_is_not_quoted_with_its_terminal_escapes(tmp_path, monkeypatch):
    """torch's refusal of an object it will not unpickle spans lines, holds ANSI escapes
    (\\x1b[1m) and advises loading the file unchecked: the message is one plain line of ours."""
    import datetime

    path = saved_with(tmp_path, lambda s: s.update(history=datetime.date(2020, 1, 1)))
    with pytest.raises(ValueError) as caught:
        sequence_models.SequenceForecaster.load(path)
    message = str(caught.value)
    assert (
        message
        == f"{path}: not a saved SequenceForecaster (it holds a datetime.date, which a model file does not: "
        + ("refused unread)")
    )

    def escaped(*args, **kwargs):
        raise RuntimeError("\x1b[1mPytorchStreamReader failed\x1b[0m reading zip archive\n\tmore")

    monkeypatch.setattr(sequence_models.torch, "load", escaped)
    with pytest.raises(ValueError) as caught:
        sequence_models.SequenceForecaster.load(small().save(tmp_path / "good.pt"))
    assert str(caught.value).endswith("('PytorchStreamReader failed reading zip archive')"), str(caught.value)
    assert "\x1b" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_fit_shows_its_progress_on_stderr_unless_told_not_to(capsys, monkeypatch):
    """fit trained for minutes without a word."""
    monkeypatch.setattr(training.ProgressBar, "DELAY", 0)
    settings = dict(hidden=8, layers=1, games=40, epochs=2, lanes=4, window=16, val_games=10, seed=3)
    sequence_models.SequenceForecaster(2, **settings).fit()
    err = capsys.readouterr().err
    assert "training GRU (public stream)" in err and "80/80" in err and "epoch 2/2: held-out log loss" in err
    for quiet in (False, None):
        sequence_models.SequenceForecaster(2, **settings).fit(progress=quiet)
        assert capsys.readouterr().err == ""
    calls = []
    sequence_models.SequenceForecaster(2, **settings).fit(progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (80, 80) and capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress"):
        sequence_models.SequenceForecaster(2, **settings).fit(progress="yes")

"""The stream model's pieces: its training windows and masks, its rollouts (the cached,
token-by-token network equals the whole-window one), and that it writes whole games."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the stream model needs torch (pip install 'beggar-env[rl]')")

from beggar_env.forecasting import face_streams as fs  # noqa: E402
from beggar_env.forecasting import stream_model as sm  # noqa: E402


@pytest.fixture(scope="module")
def games():
    return fs.random_games(40, 2, seed=3)


def _net(window=32):
    torch.manual_seed(0)
    return sm.StreamNet(2, width=32, layers=2, heads=4, window=window, shift=2).eval()


def test_windows_mask_first_appearances_and_keep_targets(games):
    batch = sm.window_batch(games, 2, 8, 64, np.random.default_rng(1))
    kind, face = batch["kind"].numpy(), batch["face"].numpy()
    next_kind, next_face, next_size = (batch[k].numpy() for k in ("next_kind", "next_face", "next_size"))
    assert (next_kind[:, :-1][next_kind[:, :-1] >= 0] == kind[:, 1:][next_kind[:, :-1] >= 0]).all()  # shifted by one
    for row in range(8):
        window = np.concatenate([face[row, :1], np.where(next_kind[row] >= 0, np.maximum(next_face[row], 0), 0)])
        seen = set(face[row, :1].tolist()) if kind[row, 0] < 2 else set()
        for t in range(64):
            target_kind = next_kind[row, t]
            true_face = face[row, t + 1] if t + 1 < 64 else None
            if target_kind in (0, 1) and true_face is not None:
                assert (next_face[row, t] >= 0) == (true_face in seen)  # copyable: played before in the window
                seen.add(true_face)
            if target_kind in (2, 3):
                assert next_size[row, t] >= 0
            else:
                assert next_size[row, t] == -100
        assert window.shape[0] == 65


def test_windows_drawn_by_length_come_from_games_in_proportion_to_their_lengths(games):
    kind, face, size, offsets = games
    lengths = np.diff(offsets)
    short, long = int(np.argmin(lengths)), int(np.argmax(lengths))
    pair = [np.concatenate([a[offsets[g] : offsets[g + 1]] for g in (short, long)]) for a in (kind, face, size)]
    two = (*pair, np.array([0, lengths[short], lengths[short] + lengths[long]]))
    n = lengths[short] - 1  # a window longer than the short game: padded there, full in the long one
    for by_length, share in ((False, 0.5), (True, lengths[long] / (lengths[short] + lengths[long]))):
        batch = sm.window_batch(two, 2, 4000, n + 5, np.random.default_rng(4), by_length=by_length)
        from_long = (batch["next_kind"].numpy() >= 0).sum(1) > n
        assert abs(from_long.mean() - share) < 0.03


def test_the_own_target_is_the_seats_next_play(games):
    batch = sm.window_batch(games, 2, 8, 64, np.random.default_rng(2))
    kind, face, own = batch["kind"].numpy(), batch["face"].numpy(), batch["own_face"].numpy()
    checked = 0
    for row in range(8):
        for t in range(64):
            later = [u for u in range(t + 1, 64) if kind[row, u] == kind[row, t]]
            if kind[row, t] < 2 and own[row, t] >= 0 and later:
                assert own[row, t] == face[row, later[0]]
                checked += 1
            if kind[row, t] >= 2:
                assert own[row, t] == -100
    assert checked > 40


def test_cached_rollout_steps_equal_the_whole_window():
    model = _net(window=32)
    kind, face, size, _ = fs.random_games(1, 2, seed=4)
    n = 32
    k, f, z = (torch.from_numpy(a[:n].astype(np.int64)).unsqueeze(0) for a in (kind, face, size))
    u = torch.from_numpy(fs.under(kind[:n], face[:n], 2)).unsqueeze(0)
    caches = sm._prefill(model, *sm._last_window(k.numpy(), f.numpy(), z.numpy(), [10], model.window, 2))
    for t in range(10, n):
        if t > 10:
            x = sm._embed(model, *(a[:, t - 1].numpy() for a in (k, f, z, u)), caches)
            caches["x"] = sm._step(model, caches, x)
        cached = sm._head_logits(model, caches["x"])
        whole = model(k[:, :t], f[:, :t], z[:, :t], u[:, :t])
        for a, b in zip(cached, whole[:3], strict=True):
            assert torch.allclose(a, b[:, -1], atol=1e-4)


def test_rollouts_write_tokens_of_the_stream_and_stop_at_end(games):
    model = _net()
    kind, face, size, offsets = games
    rows = [(kind[a:b], face[a:b], size[a:b]) for a, b in zip(offsets[:3], offsets[1:4], strict=True)]
    n = 15
    k = np.stack([r[0][:n] for r in rows]).astype(np.int64)
    f = np.stack([r[1][:n] for r in rows]).astype(np.int64)
    z = np.stack([r[2][:n] for r in rows]).astype(np.int64)
    out_k, out_f, out_z = sm.roll_out(model, k, f, z, [n] * 3, 50)
    written = out_k >= 0
    assert (out_k[written] < fs.bos(2)).all()
    plays = written & (out_k < 2)
    assert ((out_f[plays] >= 0) & (out_f[plays] < 52)).all() and (out_f[written & ~plays] == fs.NO_FACE).all()
    again = sm.roll_out(model, k, f, z, [n] * 3, 50)
    assert all((a == b).all() for a, b in zip(again, (out_k, out_f, out_z), strict=True))  # greedy: deterministic
    ended = (out_k >= 4) & (out_k < 6)
    for row in range(3):
        if ended[row].any():
            assert (out_k[row, ended[row].argmax() + 1 :] == -1).all()


def test_rollouts_play_a_completion_of_the_unseen_cards_before_copying(games):
    model = _net()
    kind, face, size, offsets = games
    n = 12  # a game's first tokens: every seat still holds most of its dealt cards
    k, f, z = (np.stack([a[offsets[g] : offsets[g] + n] for g in range(3)]).astype(np.int64) for a in games[:3])
    rng = np.random.default_rng(0)
    unseen = [[rng.permutation(52)[:5].tolist(), rng.permutation(52)[:5].tolist()] for _ in range(3)]
    with torch.no_grad():  # a network that writes plays alone, of either seat
        model.kind_head.weight.zero_()
        model.kind_head.bias.copy_(torch.tensor([5.0, 5.0, -9, -9, -9, -9]))
    sampled = torch.Generator().manual_seed(1)
    out_k, out_f, _ = sm.roll_out(model, k, f, z, [n] * 3, 60, generator=sampled, unseen=unseen)
    forced = 0
    for row in range(3):
        for seat in range(2):
            played = out_f[row][out_k[row] == seat].tolist()
            first = unseen[row][seat][: len(played)]
            assert played[: len(first)] == first  # the seat's first plays are its dealt cards, in order
            forced += len(first)
    assert forced == 30  # each seat's 5 dealt cards, then copies
    with pytest.raises(ValueError, match="unseen"):
        sm.roll_out(model, k, f, z, [n] * 3, 5, unseen=unseen[:2])

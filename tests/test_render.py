"""The text and picture renderings of a table (beggar_env.envs.render), by hand and via the env."""

import re
import sys

import gymnasium
import numpy as np
import pytest

import beggar_env  # noqa: F401  (registers Beggar-v0)
from beggar_env.envs import render

HEIGHT, WIDTH = 480, 640


def make_table(hand_sizes, pile=(), turn=0, owed=0, court=-1, alive=None, cards=0, tricks=0):
    """A public observation built by hand (pile: card classes in play order)."""
    slots = np.full(52, -1, np.int32)
    slots[: len(pile)] = pile
    n = len(hand_sizes)
    scalar = lambda x: np.array(x, np.int32)  # noqa: E731
    return {
        "hand_sizes": np.array(hand_sizes, np.int32),
        "pile": slots,
        "pile_size": scalar(len(pile)),
        "turn": scalar(turn),
        "owed": scalar(owed),
        "court": scalar(court),
        "alive": np.array([1] * n if alive is None else alive, np.int32),
        "cards": scalar(cards),
        "tricks": scalar(tricks),
    }


def seat_line(text, seat):
    (line,) = [line for line in text.splitlines() if re.match(rf"[> ] seat {seat}:", line)]
    return line


def played_env(n_players, render_mode, steps=7, seed=3, **kwargs):
    env = gymnasium.make("Beggar-v0", n_players=n_players, render_mode=render_mode, **kwargs)
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        obs, _, terminated, _, _ = env.step(0)
        assert not terminated
    return env, obs


# --------------------------------------------------------------------------- text


def test_text_lists_counters_hands_pile_and_payment():
    table = make_table([21, 9, 4], pile=[0, 0, 3, 0, 1], turn=1, owed=2, court=0, cards=45, tricks=3)
    text = render.text_table(table)
    assert "45 cards played" in text and "3 tricks" in text
    for seat, size in enumerate([21, 9, 4]):
        assert re.search(rf"seat {seat}: +{size} cards", seat_line(text, seat))
    assert seat_line(text, 1).startswith(">")
    assert not seat_line(text, 0).startswith(">") and not seat_line(text, 2).startswith(">")
    assert "pile (5): - - K - J" in text
    assert "seat 1 owes 2 cards to seat 0" in text
    assert "(out)" not in text
    assert "\x1b" not in text


def test_text_marks_eliminated_seats_and_singulars():
    table = make_table([33, 0, 1, 12], pile=[4] * 6, turn=2, owed=1, court=0, alive=[1, 0, 1, 1], cards=1)
    text = render.text_table(table)
    assert "(out)" in seat_line(text, 1)
    assert all("(out)" not in seat_line(text, seat) for seat in (0, 2, 3))
    assert re.search(r"seat 2: +1 card\b", seat_line(text, 2))
    assert "1 card played" in text
    assert "pile (6): A A A A A A" in text
    assert "seat 2 owes 1 card to seat 0" in text


def test_text_empty_pile_and_nothing_owed():
    text = render.text_table(make_table([26, 26]))
    assert "pile (0): empty" in text
    assert "no payment owed" in text
    assert "owes" not in text


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_text_from_the_env_matches_its_observation(n_players):
    env, obs = played_env(n_players, "ansi", observation="full")  # the extra `hands` key is ignored
    text = env.render()
    assert isinstance(text, str)
    for seat, size in enumerate(obs["hand_sizes"]):
        assert re.search(rf"seat {seat}: +{size} card", seat_line(text, seat))
    assert seat_line(text, int(obs["turn"])).startswith(">")
    pile = " ".join("-JQKA"[c] for c in obs["pile"][: obs["pile_size"]])
    assert f"pile ({obs['pile_size']}): {pile or 'empty'}" in text
    assert f"{obs['cards']} cards played" in text
    env.close()


# --------------------------------------------------------------------------- picture


def differs(a, b):
    return not np.array_equal(a, b)


def changed_region(a, b):
    """The bounding box (top, bottom, left, right) of the pixels where a and b differ."""
    rows = np.flatnonzero((a != b).any(axis=(1, 2)))
    cols = np.flatnonzero((a != b).any(axis=(0, 2)))
    assert rows.size, "the pictures are identical"
    return rows.min(), rows.max(), cols.min(), cols.max()


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_picture_shape_and_content(n_players):
    sizes = [52 // n_players + (seat < 52 % n_players) for seat in range(n_players)]
    image = render.draw_table(make_table(sizes, pile=[0, 3, 0, 1], turn=1, owed=1, court=0))
    assert image.shape == (HEIGHT, WIDTH, 3)
    assert image.dtype == np.uint8
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20  # far from a uniform picture


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_picture_is_deterministic(n_players):
    table = make_table(list(range(5, 5 + n_players)), pile=[0, 2, 0], turn=0, owed=2, court=n_players - 1)
    copy = {name: value.copy() for name, value in table.items()}
    assert np.array_equal(render.draw_table(table), render.draw_table(copy))


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_picture_changes_with_the_table(n_players):
    sizes = [10] * n_players
    base = render.draw_table(make_table(sizes, pile=[0, 0, 3]))
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 2])))  # another court card
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 0])))  # a numeral
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 3, 0])))  # one card more
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 3], turn=1)))
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 3], owed=3, court=1)))
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 3], cards=3)))
    assert differs(base, render.draw_table(make_table(sizes, pile=[0, 0, 3], tricks=1)))
    assert differs(base, render.draw_table(make_table([11] + sizes[1:], pile=[0, 0, 3])))


def test_picture_greys_an_eliminated_seat():
    playing = render.draw_table(make_table([30, 0, 22], turn=2))
    out = render.draw_table(make_table([30, 0, 22], turn=2, alive=[1, 0, 1]))
    top, bottom, _, _ = changed_region(playing, out)
    assert bottom - top >= render.CARD_H  # the seat's place, not only its label


def test_picture_outlines_the_seat_to_play():
    first, second = (render.draw_table(make_table([26, 26], turn=turn)) for turn in (0, 1))
    lower = HEIGHT // 2
    top, bottom, _, _ = changed_region(first[lower:], second[lower:])  # seat 0's half
    assert bottom - top >= render.CARD_H  # an outline around the hand, not only a label


BOTTOM, LEFT, TOP, RIGHT = "bottom", "left", "top", "right"


def within(box, side):
    """Whether a box lies in the outer third of the picture on that side."""
    top, bottom, left, right = box
    return {
        BOTTOM: top > 2 * HEIGHT / 3,
        TOP: bottom < HEIGHT / 3,
        LEFT: right < WIDTH / 3,
        RIGHT: left > 2 * WIDTH / 3,
    }[side]


@pytest.mark.parametrize(
    "n_players, seat, side",
    [
        (2, 0, BOTTOM),
        (2, 1, TOP),
        (3, 0, BOTTOM),
        (3, 1, LEFT),
        (3, 2, RIGHT),
        (4, 0, BOTTOM),
        (4, 1, LEFT),
        (4, 2, TOP),
        (4, 3, RIGHT),
    ],
)
def test_picture_places_seats_clockwise_from_the_bottom(n_players, seat, side):
    sizes = [0 if p == seat else 52 // (n_players - 1) for p in range(n_players)]
    turn = (seat + 1) % n_players
    alive = [int(p != seat) for p in range(n_players)]
    playing = render.draw_table(make_table(sizes, turn=turn))
    out = render.draw_table(make_table(sizes, turn=turn, alive=alive))  # only the seat's label changes
    assert within(changed_region(playing, out), side)


def test_picture_shows_only_the_last_cards_of_a_long_pile():
    tail = [0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0]
    long = render.draw_table(make_table([10, 10], pile=[0] * 8 + tail))
    assert np.array_equal(long, render.draw_table(make_table([10, 10], pile=[4] * 8 + tail)))
    assert differs(long, render.draw_table(make_table([10, 10], pile=[0] * 8 + tail[:-1] + [1])))
    assert differs(long, render.draw_table(make_table([10, 10], pile=[0] * 9 + tail)))  # its size


@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_picture_from_the_env(n_players):
    env, obs = played_env(n_players, "rgb_array")
    image = env.render()
    assert image.shape == (HEIGHT, WIDTH, 3) and image.dtype == np.uint8
    assert np.array_equal(image, render.draw_table(obs))
    obs, *_ = env.step(0)
    assert differs(image, env.render())
    env.close()


def test_picture_without_pillow_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"beggar-env\[render\]"):
        render.draw_table(make_table([26, 26]))


# --------------------------------------------------------------------------- human


class Clock:
    """time.monotonic and time.sleep for render.Terminal: a clock that moves only when slept
    on (or by ``advance``), and the sleeps asked for."""

    def __init__(self):
        self.now, self.sleeps = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(render, "time", clock)
    return clock


def frames(out):
    return out.split("\n\n")[:-1]


@pytest.mark.parametrize("n_players", [2, 3])
def test_human_prints_the_table_at_reset_and_every_step_at_render_fps(n_players, clock, capsys):
    env = gymnasium.make("Beggar-v0", n_players=n_players, render_mode="human")
    assert env.metadata["render_fps"] == 4 and "human" in env.metadata["render_modes"]
    tables = [render.text_table(env.reset(seed=3)[0])]
    for _ in range(5):
        tables.append(render.text_table(env.step(0)[0]))
    assert frames(capsys.readouterr().out) == tables
    assert clock.sleeps == pytest.approx([1 / 4] * 5)  # the steps' frames, each a quarter second after the last
    clock.advance(1.0)  # a slow program: its next frame does not wait
    env.step(0)
    assert len(clock.sleeps) == 5
    assert env.render() is None  # render() prints the table again, at once
    again = frames(capsys.readouterr().out)
    assert len(again) == 2 and again[0] == again[1] and len(clock.sleeps) == 5
    env.close()


def test_human_passes_check_env_and_the_vector_env_refuses_it(clock, capsys):
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium.make("Beggar-v0", render_mode="human").unwrapped)
    assert "seat 0:" in capsys.readouterr().out
    assert "human" not in gymnasium.make_vec("Beggar-v0", num_envs=2).metadata["render_modes"]
    with pytest.raises(ValueError, match="render_mode"):
        gymnasium.make_vec("Beggar-v0", num_envs=2, render_mode="human")


def test_a_render_fps_that_is_not_a_positive_number_is_named():
    with pytest.raises(ValueError, match="render_fps"):
        render.Terminal(0)
    with pytest.raises(TypeError, match="render_fps"):
        render.Terminal("4")


# --------------------------------------------------------------------------- video


@pytest.mark.slow
def test_record_video_films_a_game_through_rgb_array(tmp_path):
    pytest.importorskip("moviepy", reason="RecordVideo writes with moviepy: pip install 'beggar-env[video]'")
    from gymnasium.wrappers import RecordVideo

    folder = tmp_path / "videos"  # a new folder: RecordVideo warns when it writes into one that exists
    env = RecordVideo(gymnasium.make("Beggar-v0", render_mode="rgb_array"), str(folder), name_prefix="game")
    env.reset(options={"deal": "-J--Q-/--K--A"})
    steps, over = 0, False
    while not over:
        _, _, terminated, truncated, _ = env.step(0)
        steps, over = steps + 1, terminated or truncated
    env.close()
    (video,) = folder.glob("game-episode-0.mp4")
    import imageio_ffmpeg  # moviepy's own reader of ffmpeg

    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(video))
    assert steps >= 5 and frames == steps + 1  # the deal and every step
    assert seconds == pytest.approx(frames / 4, abs=0.3)  # at render_fps

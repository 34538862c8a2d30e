"""Pictures of a Beggar-My-Neighbour table, for the env's ``render()``.

Both functions take ``table``, the public observation of ``Beggar-v0`` (a dict of int32
arrays: ``hand_sizes``, ``pile``, ``pile_size``, ``turn``, ``owed``, ``court``, ``alive``,
``cards``, ``tricks``; other keys, such as ``hands``, are ignored).
:func:`text_table` writes it as plain text, :func:`draw_table` draws it as an RGB image
with Pillow (imported only when a picture is asked for); :class:`Terminal` shows the text
on the terminal at a steady pace (``render_mode="human"``).
"""

import math
import sys
import time
from typing import NamedTuple

import numpy as np

from .. import checks
from ..checks import plural

SYMBOLS = "-JQKA"  # card classes 0..4: numeral, jack, queen, king, ace

WIDTH, HEIGHT = 640, 480
CARD_W, CARD_H = 44, 62
PILE_SHOWN = 12  # the pile picture shows its last cards only
PILE_STEP = 24  # horizontal offset between overlapping pile cards
CARDS_PER_LAYER, MAX_LAYERS, LAYER_STEP = 8, 6, 3  # a hand's stack: one card back per 8 cards

WOOD, FELT, FELT_EDGE = (92, 58, 30), (28, 112, 58), (18, 80, 40)
BACK = (38, 66, 150)
FACE, COURT_FACE = (250, 250, 245), (255, 238, 180)
INK, COURT_INK = (60, 60, 60), (180, 20, 30)
TEXT, TEXT_OUT, GOLD = (245, 245, 245), (170, 170, 170), (255, 210, 0)


class Table(NamedTuple):
    """A table's fields as Python ints and lists (``pile`` trimmed to its cards)."""

    hand_sizes: list
    alive: list
    pile: list
    turn: int
    owed: int
    court: int
    cards: int
    tricks: int


def read_table(table):
    """The :class:`Table` of an observation dict."""
    pile = np.asarray(table["pile"])[: int(table["pile_size"])]
    return Table(
        [int(n) for n in table["hand_sizes"]],
        [bool(a) for a in table["alive"]],
        [int(c) for c in pile],
        *(int(table[name]) for name in ("turn", "owed", "court", "cards", "tricks")),
    )


def _pile_text(pile):
    return " ".join(SYMBOLS[c] for c in pile) or "empty"


def _owed_text(t):
    if t.owed == 0:
        return "no payment owed"
    return f"seat {t.turn} owes {plural(t.owed, 'card')} to seat {t.court}"


def text_table(table):
    """The table as a few lines of plain text: counters, hands, pile and payment owed."""
    t = read_table(table)
    lines = [f"Beggar-My-Neighbour: {plural(t.cards, 'card')} played, {plural(t.tricks, 'trick')}"]
    for seat, (size, alive) in enumerate(zip(t.hand_sizes, t.alive)):
        marker = ">" if seat == t.turn else " "
        status = "" if alive else " (out)"
        lines.append(f"{marker} seat {seat}: {size:2d} {'card ' if size == 1 else 'cards'}{status}")
    lines.append(f"pile ({len(t.pile)}): {_pile_text(t.pile)}")
    lines.append(_owed_text(t))
    return "\n".join(lines)


class Terminal:
    """Frames of text printed on standard output, what ``render_mode="human"`` shows: each
    frame is followed by a blank line, and a paced frame (a step's) waits until ``1 / fps``
    seconds after the last frame, so that a game plays at a pace one can follow (a slower
    program does not wait)."""

    def __init__(self, fps):
        self.fps = checks.number("render_fps", fps, 0, strict=True)
        self.shown_at = None  # time.monotonic() of the last frame

    def show(self, text, paced=True):
        if paced and self.shown_at is not None:
            wait = self.shown_at + 1 / self.fps - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        print(text, end="\n\n", file=sys.stdout, flush=True)
        self.shown_at = time.monotonic()


# --------------------------------------------------------------------------- picture


def pillow_installed() -> bool:
    """Whether Pillow can be imported, so that ``rgb_array`` pictures can be drawn."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


def require_pillow():
    """Pillow's modules for :func:`draw_table`; ``ImportError`` saying how to install it."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as error:
        raise ImportError(
            f"render_mode='rgb_array' draws with Pillow, which is not installed: {checks.install_hint('render')} "
            "(or use render_mode='ansi')"
        ) from error
    return Image, ImageDraw, ImageFont


def _font(image_font, size):
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one fixed-size default font
        return image_font.load_default()


def _seat_centres(n_players):
    """Where each hand lies: seat 0 at the bottom, the others clockwise around the table."""
    centres = []
    for seat in range(n_players):
        angle = math.pi / 2 + 2 * math.pi * seat / n_players
        centres.append((WIDTH / 2 + 250 * math.cos(angle), HEIGHT / 2 - 12 + 155 * math.sin(angle)))
    return centres


def _centred_text(draw, centre, text, font, fill):
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x, y = centre
    draw.text((x - (left + right) / 2, y - (top + bottom) / 2), text, font=font, fill=fill)


def _card(draw, left, top, fill, outline):
    draw.rounded_rectangle((left, top, left + CARD_W, top + CARD_H), radius=5, fill=fill, outline=outline, width=2)


def _draw_hand(draw, fonts, seat, centre, t):
    """A hand as a stack of card backs with its count, and its seat's label below."""
    size, alive = t.hand_sizes[seat], t.alive[seat]
    playing = alive and seat == t.turn
    layers = min(MAX_LAYERS, math.ceil(size / CARDS_PER_LAYER))
    left, top = centre[0] - CARD_W / 2, centre[1] - CARD_H / 2
    depth = LAYER_STEP * max(layers - 1, 0)
    if playing:
        box = (left - 7, top - 7, left + CARD_W + depth + 7, top + CARD_H + depth + 7)
        draw.rounded_rectangle(box, radius=9, outline=GOLD, width=4)
    if layers == 0:  # an empty place, grey once the seat is out
        draw.rounded_rectangle(
            (left, top, left + CARD_W, top + CARD_H), radius=5, outline=FELT_EDGE if alive else TEXT_OUT, width=2
        )
    for k in reversed(range(layers)):  # the bottom card first, the top card last
        _card(draw, left + LAYER_STEP * k, top + LAYER_STEP * k, BACK, TEXT)
    if layers:
        draw.rounded_rectangle((left + 5, top + 5, left + CARD_W - 5, top + CARD_H - 5), radius=3, outline=TEXT)
    _centred_text(draw, centre, str(size), fonts["count"], TEXT if alive else TEXT_OUT)
    label = f"seat {seat}" + (" to play" if playing else "" if alive else " (out)")
    colour = GOLD if playing else TEXT if alive else TEXT_OUT
    _centred_text(draw, (centre[0], top + CARD_H + depth + 18), label, fonts["text"], colour)


def _draw_pile(draw, fonts, pile):
    """The pile face up in the centre, its last cards overlapping left to right."""
    shown = pile[-PILE_SHOWN:]
    width = CARD_W + PILE_STEP * max(len(shown) - 1, 0)
    left, top = (WIDTH - width) / 2, (HEIGHT - CARD_H) / 2 - 12
    if not shown:
        draw.rounded_rectangle((left, top, left + CARD_W, top + CARD_H), radius=5, outline=FELT_EDGE, width=2)
    for k, card in enumerate(shown):
        x = left + k * PILE_STEP
        court = card > 0
        _card(draw, x, top, COURT_FACE if court else FACE, INK)
        _centred_text(draw, (x + 12, top + 15), SYMBOLS[card], fonts["card"], COURT_INK if court else INK)
    caption = f"pile: {plural(len(pile), 'card')}"
    if len(pile) > len(shown):
        caption += f" (last {len(shown)} shown)"
    _centred_text(draw, (WIDTH / 2, top + CARD_H + 16), caption, fonts["text"], TEXT)


def draw_table(table):
    """The table as an RGB picture, a (480, 640, 3) uint8 array (needs Pillow).

    Each hand is a stack of card backs with its count, seat 0 at the bottom and the others
    clockwise; the seat to play is outlined in gold, an eliminated seat's place is grey.
    The pile lies face up in the centre (court cards marked J Q K A, numerals '-'), with
    the payment owed above it and the cards and tricks played in the corner.
    """
    image_module, image_draw, image_font = require_pillow()
    t = read_table(table)
    fonts = {"text": _font(image_font, 14), "count": _font(image_font, 18), "card": _font(image_font, 20)}
    image = image_module.new("RGB", (WIDTH, HEIGHT), WOOD)
    draw = image_draw.Draw(image)
    draw.rounded_rectangle((14, 14, WIDTH - 14, HEIGHT - 14), radius=70, fill=FELT, outline=FELT_EDGE, width=4)
    for seat, centre in enumerate(_seat_centres(len(t.hand_sizes))):
        _draw_hand(draw, fonts, seat, centre, t)
    _draw_pile(draw, fonts, t.pile)
    _centred_text(draw, (WIDTH / 2, HEIGHT / 2 - 70), _owed_text(t), fonts["text"], GOLD if t.owed else TEXT)
    draw.text((34, 26), f"cards {t.cards}  tricks {t.tricks}", font=fonts["text"], fill=TEXT)
    return np.array(image, dtype=np.uint8)

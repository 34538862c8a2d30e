"""Balanced never-ending deals, by backward play from a cycle.

Every position of a cycle is reached from its place before it on the cycle, and maybe
from positions off the cycle; those, their predecessors and so on form the cycle's
*in-tree*: every position whose game reaches the cycle. The trick map gives each position
one successor, so the in-tree holds each position once. :func:`reconstruct` walks it
breadth first (:func:`beggar_env.cycles.backward.expand`, a level at a time), within a
budget of positions, and keeps the *deals* in it: positions whose hands, from the
leader's seat on, have the sizes a game is dealt (26/26; 18/17/17; 13 each). Turned so
that the leader is seat 0, such a position is a deal whose game never ends. Each one is
played forward by the engine before it is reported, and must reach the cycle it came from.
"""

import time
from dataclasses import dataclass

import numpy as np

from .. import checks, files
from ..deals import Deal, format_deal, parse_deal
from . import backward, census, positions, records

MAX_NODES = 10_000_000  # the default budget of positions


@dataclass
class Reconstruction:
    """What a backward walk from a cycle found: the cycle, the balanced deals that reach it
    (compact notation, sorted), positions visited, the deepest level reached, and whether
    the in-tree was walked whole (then ``deals`` is every balanced deal that reaches it)."""

    cycle: census.Cycle
    deals: list
    positions: int
    depth: int
    complete: bool
    seconds: float = 0.0


def cycle_positions(deal):
    """The positions of the cycle a deal's game reaches, in the order played (engine
    arrays: cards, sizes, leader), and the cycle; ``ValueError`` if the game ends."""
    deal = parse_deal(deal)
    cycle = census.cycle_of(deal)
    if cycle is None:
        raise ValueError(f"the game of {format_deal(deal, 'compact')} ends: it reaches no cycle")
    cards, sizes = deal.classes(), np.array(deal.hand_sizes, np.int32)
    state = backward.new_scratch_state(deal.n_players, deal.n_cards)
    seen, played, leader = {}, [], 0
    while (cards.tobytes(), tuple(sizes), leader) not in seen:
        seen[cards.tobytes(), tuple(sizes), leader] = len(played)
        played.append((cards, sizes, leader))
        after_cards, after_sizes = np.empty_like(cards), np.empty_like(sizes)
        leader = backward.trick_after(state, cards, sizes, leader, after_cards, after_sizes)
        cards, sizes = after_cards, after_sizes
    return played[seen[cards.tobytes(), tuple(sizes), leader] :], cycle


def dealt_sizes(n_cards, n_players):
    """Hand sizes as a game is dealt (the first seats one more card)."""
    sizes = np.zeros(n_players, np.int32)
    positions.dealt_sizes(n_cards, n_players, sizes)
    return sizes


def deal_of(cards, sizes, leader):
    """The position turned so that its leader is seat 0: a deal."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    hands = [cards[bounds[p] : bounds[p + 1]] for p in range(len(sizes))]
    turned = hands[leader:] + hands[:leader]
    return Deal.from_classes([hand.tolist() for hand in turned])


def _expand(level):
    """The predecessors of every position of a level (arrays), in order."""
    cards, sizes, leaders = level
    rows = max(4 * len(cards), 64)
    while True:
        out = (np.zeros((rows, cards.shape[1]), np.int8), np.zeros((rows, sizes.shape[1]), np.int32))
        out_leaders, parents = np.zeros(rows, np.int32), np.zeros(rows, np.int64)
        n = backward.expand(cards, sizes, leaders, out[0], out[1], out_leaders, parents)
        if n <= rows:
            return out[0][:n], out[1][:n], out_leaders[:n]
        rows = n


def _off_cycle(level, on_cycle):
    keep = [(c.tobytes(), tuple(s), int(seat)) not in on_cycle for c, s, seat in zip(*level)]
    return tuple(column[np.array(keep, bool)] for column in level)


def _balanced(level, n_cards):
    """Indices of a level's positions that are deals: from the leader's seat on, the dealt sizes."""
    cards, sizes, leaders = level
    n_players = sizes.shape[1]
    want = dealt_sizes(n_cards, n_players)
    turned = np.stack([sizes[np.arange(len(sizes)), (leaders + k) % n_players] for k in range(n_players)], axis=1)
    return np.flatnonzero((turned == want).all(axis=1))


def _imbalance(level, n_cards):
    """How far each position of a level is from a deal: the sum over seats, from the
    leader's on, of the difference from the dealt hand sizes."""
    cards, sizes, leaders = level
    n_players = sizes.shape[1]
    want = dealt_sizes(n_cards, n_players)
    turned = np.stack([sizes[np.arange(len(sizes)), (leaders + k) % n_players] for k in range(n_players)], axis=1)
    return np.abs(turned - want).sum(axis=1)


def reconstruct(deal, max_nodes=MAX_NODES, progress=None, *, out=None, tsv=None) -> Reconstruction:
    """Walk the in-tree of the cycle that ``deal``'s game reaches, breadth first, within
    ``max_nodes`` positions; return the balanced deals found (each replayed by the engine:
    a ``RuntimeError`` if one does not reach the cycle, which would be a bug).
    ``progress(positions, deals)`` after each level. ``out``: a JSON file of the result
    (:func:`record`), ``tsv``: a table of its deals (:func:`table`), each checked before
    the walk and locked during it (after every argument is checked, the deal's cycle found)."""
    max_nodes = checks.count("max_nodes", max_nodes, 1)
    checks.callback("progress", progress)
    cycle = cycle_positions(deal)  # a ValueError before any file is locked: a deal not valid, a game that ends
    with records.output(out) as path, records.output(tsv, "tsv", ".tsv") as table_path:
        found = _reconstruct(cycle, max_nodes, progress)
        records.write(path, "reconstruct", record(found, deal, max_nodes))
        if table_path is not None:
            files.write_bytes(table_path, table(found).encode("utf-8"))
    return found


def record(found: Reconstruction, deal, max_nodes) -> dict:
    """A reconstruction as its JSON file holds it (``deal`` and ``max_nodes`` as asked)."""
    return {
        "deal": deal if isinstance(deal, str) else format_deal(deal, "compact"),
        "max_nodes": max_nodes,
        "cycle": vars(found.cycle),
        "positions": found.positions,
        "depth": found.depth,
        "complete": found.complete,
        "seconds": round(found.seconds, 2),
        "deals": found.deals,
    }


TSV_COLUMNS = ("deal", "hand_sizes", "cycle", "cycle_cards", "cycle_tricks", "cycle_start_cards", "cycle_start_tricks")


def table(found: Reconstruction) -> str:
    """The deals of a reconstruction as a tab-separated table, each with its cycle and
    where its game enters it (played by :func:`beggar_env.play`; ``docs/cycles-deals.tsv``)."""
    from ..game import play

    lines = ["\t".join(TSV_COLUMNS)]
    for deal in found.deals:
        result = play(deal)
        sizes = "/".join(str(len(hand)) for hand in deal.split("/"))
        cycle = found.cycle
        values = (
            deal,
            sizes,
            cycle.key,
            cycle.cards,
            cycle.tricks,
            result.cycle_start_cards,
            result.cycle_start_tricks,
        )
        lines.append("\t".join(str(value) for value in values))
    return "\n".join(lines) + "\n"


def _reconstruct(cycle_and_positions, max_nodes, progress):
    started = time.perf_counter()
    positions, cycle = cycle_and_positions
    n_cards = len(positions[0][0])
    on_cycle = {(c.tobytes(), tuple(s), int(seat)) for c, s, seat in positions}
    level = tuple(np.array(column) for column in zip(*positions))
    found, visited, depth = set(), 0, 0
    while len(level[0]) and visited < max_nodes:
        level = _expand(level)
        if depth == 0:
            level = _off_cycle(level, on_cycle)
        level = tuple(column[: max_nodes - visited] for column in level)
        visited += len(level[0])
        depth += 1 if len(level[0]) else 0
        for i in _balanced(level, n_cards):
            found.add(format_deal(deal_of(level[0][i], level[1][i], int(level[2][i])), "compact"))
        if progress is not None:
            progress(visited, len(found))
    deals = sorted(found)
    for text in deals:
        reached = census.cycle_of(text)
        if reached is None or reached.key != cycle.key:
            raise RuntimeError(
                f"backward play found {text}, but the engine does not play it into the cycle {cycle.key}"
            )
    return Reconstruction(cycle, deals, visited, depth, len(level[0]) == 0, time.perf_counter() - started)


@dataclass
class Extension:
    """Longer games found behind a game by backward play: per start (a trick-start
    position of the game, ``offset`` tricks in), the balanced ancestors more than
    ``offset`` tricks back, each a deal whose game passes through that position later
    than the original did; ``games`` is [(cards, tricks, deal)], longest first, each
    played by the engine; ``positions`` walked in all."""

    deal: str
    cards: int
    tricks: int
    games: list
    positions: int
    starts: int
    seconds: float = 0.0


def game_positions(deal):
    """A game's trick-start positions (engine arrays), from its deal to its end or first repeat."""
    deal = parse_deal(deal)
    cards, sizes, leader = deal.classes(), np.array(deal.hand_sizes, np.int32), 0
    state = backward.new_scratch_state(deal.n_players, deal.n_cards)
    played, seen = [], set()
    while (cards.tobytes(), tuple(sizes), leader) not in seen and sizes.max() < len(cards):
        seen.add((cards.tobytes(), tuple(sizes), leader))
        played.append((cards, sizes, leader))
        after_cards, after_sizes = np.empty_like(cards), np.empty_like(sizes)
        leader = backward.trick_after(state, cards, sizes, leader, after_cards, after_sizes)
        cards, sizes = after_cards, after_sizes
    return played


def extend(deal, offsets=50, max_nodes=100_000, beam=None, progress=None, *, out=None) -> Extension:
    """Longer games behind ``deal``'s: from each of its first ``offsets`` trick-start
    positions (``offset`` tricks in), walk the positions behind it breadth first within
    ``max_nodes`` positions and keep the balanced ones more than ``offset`` tricks back;
    each is played forward by the engine (its length is what is reported). With ``beam``,
    each level keeps only the ``beam`` positions nearest to balanced (the least sum of
    differences from the dealt sizes, ties in order), so the walk goes deeper.
    ``progress(starts done, offsets)`` after each start. ``out``: a JSON file of the result,
    checked before the walk and locked during it.

    Parameters
    ----------
    deal : the deal whose game is extended backwards.
    offsets : the trick-start positions walked back from.
    max_nodes : the positions a walk visits, at most.
    beam : the positions a level keeps (None: all).
    progress : ``progress(starts done, offsets)``, or None.
    out : a JSON file of the result, or None.
    """
    offsets = checks.count("offsets", offsets, 1)
    max_nodes = checks.count("max_nodes", max_nodes, 1)
    beam = None if beam is None else checks.count("beam", beam, 1)
    checks.callback("progress", progress)
    deal = parse_deal(deal)  # before the file is locked
    with records.output(out) as path:
        found = _extend(deal, offsets, max_nodes, beam, progress)
        records.write(
            path,
            "extend",
            {
                "deal": found.deal,
                "cards": found.cards,
                "tricks": found.tricks,
                "offsets": offsets,
                "max_nodes": max_nodes,
                "beam": beam,
                "starts": found.starts,
                "positions": found.positions,
                "seconds": round(found.seconds, 2),
                "games": [{"deal": deal, "cards": cards, "tricks": tricks} for cards, tricks, deal in found.games],
            },
        )
    return found


def _extend(deal, offsets, max_nodes, beam, progress):
    from ..game import play

    started = time.perf_counter()
    original = play(deal)
    positions = game_positions(deal)[:offsets]
    n_cards = deal.n_cards
    found, visited = set(), 0
    for offset, (cards, sizes, leader) in enumerate(positions):
        level = (cards[None, :], sizes[None, :], np.array([leader], np.int32))
        walked, depth = 0, 0
        while len(level[0]) and walked < max_nodes:
            level = _expand(level)
            if beam is not None and len(level[0]) > beam:
                level = tuple(
                    column[np.sort(np.argsort(_imbalance(level, n_cards), kind="stable")[:beam])] for column in level
                )
            level = tuple(column[: max_nodes - walked] for column in level)
            walked += len(level[0])
            depth += 1
            if depth > offset:
                for i in _balanced(level, n_cards):
                    found.add(format_deal(deal_of(level[0][i], level[1][i], int(level[2][i])), "compact"))
        visited += walked
        if progress is not None:
            progress(offset + 1, len(positions))
    games = []
    for text in found:
        result = play(text)
        if result.outcome == "win" and result.tricks > original.tricks:
            games.append((result.cards, result.tricks, text))
        elif result.outcome == "win":
            raise RuntimeError(
                f"backward play found {text} behind {format_deal(deal, 'compact')}, but its game is no longer"
            )
    games.sort(key=lambda g: (-g[0], g[2]))
    seconds = time.perf_counter() - started
    return Extension(
        format_deal(deal, "compact"), original.cards, original.tricks, games, visited, len(positions), seconds
    )

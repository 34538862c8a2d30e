"""Three-player deals that never end, found by backward play from three-player cycle shapes.

A three-player game that never ends has, as far as any census has seen, a seat empty in its
cycle: one player is out and the other two cycle. So every two-player cycle the published
censuses found is seated at a three-player table in its two shapes (``A/B/``: the empty
seat after the leader's opponent, ``A//B``: between them), and the whole in-tree of each
shape is walked back (``beggar_env.cycles.reconstruct``): its balanced positions, turned so
that the leader sits in seat 0, are the three-player deals whose games end in that cycle,
each replayed by the engine into it. This reaches decks far beyond a census of every
three-player deal (28 and 30 cards: 7.8 and 14.7 x 10^9 deals), but only for the cycles
seeded: a three-player game may also end in a two-player cycle that no two-player deal
reaches, so a deck's count here is a lower bound unless its three-player census agrees.

    python studies/three_player_deals.py --out docs/cycles/three-player-backward.json
    python studies/three_player_deals.py --census runs/unfinished/census/every-2x-22-2p.json ...  # more seeds

``--compare`` takes censuses of every three-player deal (``beggar cycles census --players 3``)
and sets their never-ending deals, cycle by cycle, beside the backward count of the same deck.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from beggar_env import files
from beggar_env.cycles import reconstruct, records

REPO = Path(__file__).resolve().parents[1]
SEEDS = [
    *sorted((REPO / "docs" / "cycles").glob("every-2x-*-2p.json")),
    REPO / "docs" / "cycles" / "casella.json",
]
LISTED = 100  # a deck's deals are listed in full up to this many


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--census", nargs="*", default=[], type=Path, help="more two-player censuses to seed from")
    parser.add_argument("--compare", nargs="*", default=[], type=Path, help="three-player censuses of every deal")
    parser.add_argument("--max-nodes", type=int, default=reconstruct.MAX_NODES, help="positions walked per shape")
    return parser.parse_args(argv)


def two_player_keys(path):
    """The cycle keys a two-player census (or a reconstruction, Casella's) lists."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    if record.get("kind") == "beggar-cycles-reconstruct":
        return [record["cycle"]["key"]]
    record = records.read_census(path)
    if record["players"] != 2:
        raise ValueError(f"{path}: a two-player census is needed, this one has {record['players']} players")
    return [cycle["key"] for cycle in record["cycles"]]


def three_seat_shapes(key):
    first, second = key.split("/")
    return [f"{first}/{second}/", f"{first}//{second}"]


def walk_deck(keys, max_nodes):
    """Every three-seat shape of every key walked back: per three-player cycle (by key),
    the deals reaching it; and the positions walked, whether every walk was whole."""
    by_cycle, positions, complete, started = {}, 0, True, time.perf_counter()
    for key in keys:
        for shape in three_seat_shapes(key):
            found = reconstruct.reconstruct(shape, max_nodes)
            positions += found.positions
            complete &= found.complete
            by_cycle.setdefault(found.cycle.key, set()).update(found.deals)
    return {
        "two_player_cycles": len(keys),
        "three_player_cycles": len(by_cycle),
        "cycles_reached": sum(1 for deals in by_cycle.values() if deals),
        "deals": sum(len(deals) for deals in by_cycle.values()),
        "positions": positions,
        "complete": complete,
        "seconds": round(time.perf_counter() - started, 2),
        "by_cycle": {key: sorted(deals) for key, deals in sorted(by_cycle.items()) if deals},
    }


def compared(deck, census_path):
    """A three-player census's never-ending deals beside the backward walk's, cycle by cycle."""
    census = records.read_census(census_path)
    if census["players"] != 3 or not census["complete"] or census["source"] != "every":
        raise ValueError(f"{census_path}: a complete census of every three-player deal is needed")
    reached = {cycle["key"]: cycle["reached"] for cycle in census["cycles"]}
    walked = {key: len(deals) for key, deals in deck["by_cycle"].items()}
    return {
        "census": census_path.name,
        "census_deals": census["games"] - census["ended"],
        "census_cycles": len(reached),
        "same_cycles_and_counts": reached == walked,
    }


def main(argv=None):
    args = parse_args(argv)
    decks = {}
    for path in SEEDS + list(args.census):
        keys = two_player_keys(path)
        if not keys:
            continue
        n_cards = len(keys[0].replace("/", ""))
        print(f"{path.name}: {len(keys)} two-player cycles of {n_cards} cards", file=sys.stderr)
        deck = walk_deck(keys, args.max_nodes)
        path = path.resolve()
        deck["seeds"] = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
        decks[str(n_cards)] = deck
    for path in args.compare:
        n_cards = len(records.read_census(path)["deck"])
        decks[str(n_cards)]["compared"] = compared(decks[str(n_cards)], path)
    decks = dict(sorted(decks.items(), key=lambda item: int(item[0])))
    for deck in decks.values():
        if deck["deals"] > LISTED:  # the counts by cycle stay; the deals themselves are the census's
            deck["by_cycle"] = {key: len(deals) for key, deals in deck["by_cycle"].items()}
    command = "python studies/three_player_deals.py " + " ".join(sys.argv[1:] if argv is None else argv)
    record = {"kind": "three-player-backward", "command": command, "decks": decks}
    files.write_json(Path(args.out), record)
    for n_cards, deck in decks.items():
        print(f"{n_cards} cards: {deck['deals']} three-player deals never end, into {deck['cycles_reached']} cycles")


if __name__ == "__main__":
    main()

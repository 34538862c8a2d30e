"""The indices of the record deals (tests/data/vectors.tsv's two-player deals of the
standard deck) in both numberings of the 52-card deck, as a Markdown table (docs/cli.md,
"Deal indices").

    python examples/deal_indices.py
"""

import csv
from pathlib import Path

from beggar_env import deals

VECTORS = Path(__file__).resolve().parents[1] / "tests" / "data" / "vectors.tsv"


def main():
    standard = sorted(deals.parse_deal(deals.STANDARD_DECK + "/").classes())
    print("| deal | record | index (camicia order) | index (census order) |")
    print("|---|---|---|---|")
    with open(VECTORS, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            deal = deals.parse_deal(row["deal"])
            if deal.hand_sizes != (26, 26) or sorted(deal.classes()) != standard:
                continue
            indices = [deals.deal_index(deal, order) for order in ("camicia", "census")]
            print(f"| {row['name']} | `{row['deal']}` | {indices[0]:,} | {indices[1]:,} |")


if __name__ == "__main__":
    main()

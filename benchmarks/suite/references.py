"""The engine's side-by-side checks: results as columns, compared game by game, and the
plain Python reference of ``tests/reference.py`` (which shares no code with the engine)."""

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


FIELDS = ("outcome", "winner", "cards", "tricks")


def as_columns(results):
    """outcome/winner/cards/tricks as int64 arrays, from an engine recarray or a dict."""
    return {f: np.asarray(results[f], np.int64) for f in FIELDS}


def compare(ctx, name, got, want, cards, sizes):
    """Check ``got`` against ``want`` (column dicts) field by field; report mismatches."""
    bad = np.zeros(len(want["outcome"]), bool)
    for f in FIELDS:
        bad |= got[f] != want[f]
    if not bad.any():
        return True
    from beggar_env import Deal
    from beggar_env.core import OUTCOMES

    idx = np.flatnonzero(bad)
    ctx.fail(f"{name} disagrees with the engine on {len(idx)} of {len(bad)} games")
    for i in idx[:5]:
        hands, start = [], 0
        for size in sizes[i]:
            hands.append(cards[i, start : start + size].tolist())
            start += size
        show = lambda c: (OUTCOMES[c["outcome"][i]], int(c["winner"][i]), int(c["cards"][i]), int(c["tricks"][i]))
        print(f"    game {i} {Deal.from_classes(hands)}: {name} {show(got)}, engine {show(want)}")
    return False


def load_python_reference():
    """``tests/reference.py``'s ``play_reference``, or (None, why)."""
    path = REPO / "tests" / "reference.py"
    if not path.exists():
        return None, f"{path.relative_to(REPO)} not found"
    sys.path.insert(0, str(path.parent))
    try:
        from reference import play_reference
    except Exception as e:  # noqa: BLE001 (report anything), the other benchmarks go on
        return None, f"importing {path.relative_to(REPO)} failed: {type(e).__name__}: {e}"
    finally:
        sys.path.remove(str(path.parent))
    return play_reference, None


def python_columns(results):
    """Columns from the pure-Python reference's dicts (outcome as text or code, winner None or -1)."""
    from beggar_env.core import OUTCOMES

    cols = {f: [] for f in FIELDS}
    for r in results:
        outcome = r["outcome"]
        cols["outcome"].append(OUTCOMES.index(outcome) if isinstance(outcome, str) else int(outcome))
        cols["winner"].append(-1 if r["winner"] is None else int(r["winner"]))
        cols["cards"].append(int(r["cards"]))
        cols["tricks"].append(int(r["tricks"]))
    return {f: np.array(v, np.int64) for f, v in cols.items()}

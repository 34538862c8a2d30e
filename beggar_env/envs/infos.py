"""The envs' infos: what a game that ended says (its outcome, winner, hand sizes and, for
a cycle, its four figures), batched as Gymnasium's vector envs batch infos, and one env's
info from them.
"""

import numpy as np

from .. import core
from ..core import Outcome

CYCLE_INFO = ("cycle_start_cards", "cycle_start_tricks", "cycle_cards", "cycle_tricks")


def end_info(results, ended):
    """The end-of-game info of the envs in ``ended`` (a bool mask), read from their result
    records, batched as Gymnasium's vector envs batch infos: each key with a ``_key`` mask.

    ``outcome`` ("win", "cycle", "limit"), ``winner`` (a seat, or -1 for none: an int, so
    that it batches), ``hand_sizes`` and, for cycles, the four ``cycle_*`` figures. The
    single env gives the same keys for its one env (see :func:`unbatched`).
    """
    if not ended.any():
        return {}
    n = len(ended)
    outcome = np.full(n, None, object)
    outcome[ended] = np.array(core.OUTCOMES, object)[results["outcome"][ended]]
    infos = {"outcome": outcome, "_outcome": ended}
    winner = np.zeros(n, np.int64)
    winner[ended] = results["winner"][ended]
    hand_sizes = np.zeros((n, results["hand_sizes"].shape[1]), np.int64)
    hand_sizes[ended] = results["hand_sizes"][ended]
    infos.update(winner=winner, _winner=ended, hand_sizes=hand_sizes, _hand_sizes=ended)
    cycles = ended & (results["outcome"] == Outcome.CYCLE)
    if cycles.any():
        for name in CYCLE_INFO:
            values = np.zeros(n, np.int64)
            values[cycles] = results[name][cycles]
            infos[name], infos["_" + name] = values, cycles
    return infos


def unbatched(infos, i=0):
    """Env ``i``'s info from batched infos: the keys its mask marks, as Python values
    (arrays stay arrays)."""
    out = {}
    for name, values in infos.items():
        if not name.startswith("_") and infos["_" + name][i]:
            value = values[i]
            out[name] = value.item() if isinstance(value, np.generic) else value
    return out

"""How the benchmarks time: each contender once untimed (numba's compilation, caches, page
faults), then all of them in turn, round after round, each keeping its best time: the
machine may be shared, and interleaving spreads any slow patch over everyone instead of
landing on one contender."""

import time


def interleaved_best(contenders, rounds):
    """Run each contender once untimed (if asked), then ``rounds`` rounds of all of them in turn.

    ``contenders`` maps a name to (function, its rounds or None for all, whether to warm
    it up); returns {name: (best seconds, first timed result, [every timed result])}.
    """
    for fn, _, warm in contenders.values():
        if warm:
            fn()
    best = {name: (float("inf"), None, []) for name in contenders}
    for r in range(rounds):
        for name, (fn, own_rounds, _) in contenders.items():
            if own_rounds is not None and r >= own_rounds:
                continue
            time.sleep(0.05)  # let other threads (OpenMP, numba) go idle between runs
            t = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t
            seconds, first, runs = best[name]
            best[name] = (min(seconds, dt), first if first is not None else out, runs + [out])
    return best


def steps_for(step, seconds):
    """How many calls of ``step()`` take about ``seconds`` (at least 1), timed on a few."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t
        if dt >= min(0.05, seconds / 4):
            return max(1, int(n * seconds / dt))
        n *= 4

"""How the benchmarks print: section titles, rates with a metric suffix, tables, and the
target rows whose verdict never fails a run."""


def section(title):
    print()
    print(f"== {title} " + "=" * max(0, 86 - len(title)))


def fmt_rate(x):
    """A rate with a metric suffix: 512.3 k, 130.4 M."""
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if x >= scale:
            return f"{x / scale:.1f}{suffix}"
    return f"{x:.1f}  "


def verdict(value, target):
    """A target's verdict: timings never fail the run, they only say how they compare."""
    return "ok" if value >= target else "below target"


def targets(rows, first="target"):
    """Print target rows (what, its value, the target, the verdict) after an empty line."""
    print()
    table([first, "value", "target", ""], rows, ["<", ">", "<", "<"])


def table(header, rows, align=None):
    """Print rows (lists of strings) under header, columns left- or right-aligned."""
    align = align or ["<"] + [">"] * (len(header) - 1)
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(f"{str(c):{a}{w}}" for c, a, w in zip(r, align, widths))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))

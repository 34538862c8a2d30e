"""A census's work units and their digests: what lets a stranger check a census, a range
at a time (``docs/cycles.md``, "Work units").

A *unit* is a range of a census's positions, named by (deck, players, first, count) (and
the seed, for the ``random`` source): the positions ``k * size .. (k + 1) * size - 1`` of
the source, for the census's unit ``size``, cut to the census's range. Its *digest* is
what playing it gave, exactly: games, games that ended, a histogram of the ended games'
lengths in cards (bucket ``b`` holds the games of ``c`` cards with ``c.bit_length() == b``:
0; 1; 2-3; 4-7; ...), the longest game (cards, tricks, index: the first of the most cards),
every position that never ends with its cycle (index, key, period in cards and tricks), and
the hash: the sum modulo 2**64 of ``mix64(mix64(index) ^ cards)`` over every position
(``mix64``: SplitMix64's finaliser, ``core.mix64``; ``cards``: played to the end, or to the
first repeated trick-start position of a game that never ends). A sum, so that the chunks
of any number of threads or workers add up to the same digest; each term binds a game's
cards to its index, so that two runs of a unit agree to the bit or differ in the hash.

The *manifest* lists a census's units and their digests, with the engine's version; it is
stored in the census's JSON file (``"manifest"``).
"""

from dataclasses import dataclass, field

from .. import __version__

UNIT = 100_000_000  # positions per unit, by default (about half a minute of one core at 28 cards)
HASH = "sum mod 2**64 of mix64(mix64(index) ^ cards)"
LENGTHS = "log2: bucket b counts the ended games of c cards with c.bit_length() == b"
MASK64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64's finaliser over Python ints (``core.mix64``), for checking by hand."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def hash_term(index: int, cards: int) -> int:
    """One position's term of a unit's hash (``walk.hash_term``), in Python ints."""
    return mix64(mix64(index & MASK64) ^ cards)


@dataclass
class Digest:
    """What the positions ``first .. first + games - 1`` gave (a unit's digest, or part of one)."""

    first: int
    games: int = 0
    ended: int = 0
    lengths: list = field(default_factory=list)  # ended games by length bucket (trailing zeros left out)
    hash: int = 0
    longest_cards: int = 0
    longest_tricks: int = 0
    longest_index: int = -1
    never: list = field(default_factory=list)  # (index, key, cards, tricks) of each position that never ends

    def extend(self, other: "Digest"):
        """Add the digest of the positions right after these."""
        if other.first != self.first + self.games:
            raise ValueError(f"a digest from {other.first:,} does not follow one of {self.first:,} + {self.games:,}")
        self.games += other.games
        self.ended += other.ended
        self.lengths = added(self.lengths, other.lengths)
        self.hash = (self.hash + other.hash) & MASK64
        if other.longest_cards > self.longest_cards:
            self.longest_cards, self.longest_tricks = other.longest_cards, other.longest_tricks
            self.longest_index = other.longest_index
        self.never.extend(other.never)

    def record(self, count) -> dict:
        """The digest as a manifest holds it, for a unit of ``count`` positions."""
        return {
            "first": self.first,
            "count": count,
            "games": self.games,
            "ended": self.ended,
            "lengths": list(self.lengths),
            "hash": f"{self.hash:016x}",
            "longest": {"cards": self.longest_cards, "tricks": self.longest_tricks, "index": self.longest_index},
            "never": [{"index": i, "key": k, "cards": c, "tricks": t} for i, k, c, t in self.never],
        }

    @classmethod
    def from_record(cls, unit: dict) -> "Digest":
        longest = unit["longest"]
        never = [(n["index"], n["key"], n["cards"], n["tricks"]) for n in unit["never"]]
        return cls(
            unit["first"], unit["games"], unit["ended"], list(unit["lengths"]), int(unit["hash"], 16),
            longest["cards"], longest["tricks"], longest["index"], never,
        )  # fmt: skip


def added(a, b) -> list:
    """Two histograms added, bucket by bucket."""
    out = [0] * max(len(a), len(b))
    for histogram in (a, b):
        for at, count in enumerate(histogram):
            out[at] += count
    return out


def trimmed(histogram) -> list:
    """A histogram as a list of Python ints without its trailing zeros."""
    out = [int(count) for count in histogram]
    while out and out[-1] == 0:
        out.pop()
    return out


def merged(digests, part: Digest, size):
    """Add ``part`` to the list of ``digests``: to the last one when it follows it within
    one unit of ``size`` positions, else as a new one."""
    if digests and digests[-1].first + digests[-1].games == part.first and part.first % size != 0:
        digests[-1].extend(part)
    else:
        digests.append(Digest(part.first))
        digests[-1].extend(part)


def spans(first, n, step, size):
    """The positions ``first .. first + n - 1`` as (first, count) pieces of at most ``step``,
    none across a unit's bound (a multiple of ``size``)."""
    at, end = first, first + n
    while at < end:
        stop = min(at + step, end, (at // size + 1) * size)
        yield at, stop - at
        at = stop


def unit_count(digest: Digest, size, last) -> int:
    """The positions of the unit that ``digest`` belongs to, within the census's positions
    up to ``last`` (excluded)."""
    return min((digest.first // size + 1) * size, last) - digest.first


def manifest(digests, size, last) -> dict:
    """The manifest of a census whose positions end before ``last``."""
    return {
        "engine": __version__,
        "unit": size,
        "hash": HASH,
        "lengths": LENGTHS,
        "units": [d.record(unit_count(d, size, last)) for d in digests],
    }

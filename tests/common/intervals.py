"""intervals.py - time intervals as the tests' own readers of traces
measure them: a union of (start, end) pairs, and how much of [lo, hi] it
covers."""


def union(iv):
    """The sorted, disjoint [start, end] lists covering iv's pairs (empty
    ones left out)."""
    out = []
    for s, e in sorted(tuple(x) for x in iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def measure(iv, lo, hi):
    """How much of [lo, hi] the disjoint intervals iv cover."""
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in iv)

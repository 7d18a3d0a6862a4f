"""The pairwise pass of ``fleet --comms``: which nodes to pair, and which node or link is slow; pure.

Nodes are paired so that every node is busy in each round and all pairs of a round run at once
(the circle method of a round-robin tournament: node 0 stays, the others rotate; with an odd
count one node sits a round out). Two rounds give each node two different partners (the
"pairwise quick" pass of Meta's GCM ``check-nccl``), enough to tell a slow node (slow with every
partner) from a slow link (slow with one partner only); all ``n - 1`` rounds measure every pair.

>>> rounds(4)
[[(0, 3), (1, 2)], [(0, 2), (3, 1)], [(0, 1), (2, 3)]]
>>> quick(5)                  # node 0, then node 3, sits a round out
[[(1, 4), (2, 3)], [(0, 4), (1, 2)]]

:func:`analyze` takes the bus bandwidth each pair measured and names what is slow. ``fleet --gather
--comms`` measures it (a two-rank all-reduce per pair, ``envdoctor/fleet/target/gather.py``) and
reads the answer in ``envdoctor/fleet/comms.py``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

Pair = Tuple[int, int]
#: A pair this far below the median of all pairs is slow.
SLOW_FRACTION = 0.05


def rounds(n: int, count: Optional[int] = None) -> List[List[Pair]]:
    """``count`` rounds (all ``n - 1`` by default, ``n`` for an odd ``n``) of disjoint pairs of ``0..n-1``."""
    if n < 2:
        return []
    ring: List[Optional[int]] = list(range(n)) + ([None] if n % 2 else [])
    size = len(ring)
    total = size - 1 if count is None else min(count, size - 1)
    out = []
    for _ in range(total):
        pairs = []
        for i in range(size // 2):
            a, b = ring[i], ring[size - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        out.append(pairs)
        ring = [ring[0], ring[-1]] + ring[1:-1]  # node 0 stays, the rest turn one step
    return out


def quick(n: int) -> List[List[Pair]]:
    """The two rounds of the quick pass: every node has two partners where ``n >= 4`` (an odd ``n``
    leaves one node with one)."""
    return rounds(n, 2)


@dataclass(frozen=True)
class Measured:
    """One pair's result: the bus bandwidth of its all-reduce in GB/s (None: it failed)."""

    a: int
    b: int
    busbw_gbs: Optional[float]


@dataclass(frozen=True)
class Analysis:
    """What the pairwise pass says: the median, the slow pairs, and who is to blame."""

    median_gbs: Optional[float]
    slow_pairs: Tuple[Measured, ...] = ()
    slow_nodes: Tuple[int, ...] = ()  # slow with every partner it had (two at least)
    slow_links: Tuple[Pair, ...] = ()  # slow while both nodes were fine with other partners
    unclear: Tuple[Pair, ...] = ()  # slow, but a node had no other partner to tell
    failed: Tuple[Pair, ...] = ()


def analyze(results: Sequence[Measured], fraction: float = SLOW_FRACTION) -> Analysis:
    """Name the slow nodes and links of a pairwise pass.

    >>> r = [Measured(0, 3, 24.1), Measured(1, 2, 11.0), Measured(0, 2, 11.2), Measured(3, 1, 23.8)]
    >>> analyze(r).slow_nodes
    (2,)
    """
    ok = [m for m in results if m.busbw_gbs is not None]
    failed = tuple((m.a, m.b) for m in results if m.busbw_gbs is None)
    if not ok:
        return Analysis(None, failed=failed)
    median = statistics.median(m.busbw_gbs for m in ok if m.busbw_gbs is not None)
    floor = median * (1 - fraction)
    slow = [m for m in ok if m.busbw_gbs is not None and m.busbw_gbs < floor]
    pairs_of: Dict[int, List[Measured]] = {}
    for m in ok:
        pairs_of.setdefault(m.a, []).append(m)
        pairs_of.setdefault(m.b, []).append(m)
    slow_set = {(m.a, m.b) for m in slow}
    nodes = tuple(sorted(n for n, ms in pairs_of.items() if len(ms) >= 2 and all((m.a, m.b) in slow_set for m in ms)))
    links: List[Pair] = []
    unclear: List[Pair] = []
    for m in slow:
        if m.a in nodes or m.b in nodes:
            continue
        told = all(len(pairs_of[x]) >= 2 for x in (m.a, m.b))
        (links if told else unclear).append((m.a, m.b))
    return Analysis(round(median, 3), tuple(slow), nodes, tuple(links), tuple(unclear), failed)


__all__ = ["Analysis", "Measured", "SLOW_FRACTION", "analyze", "quick", "rounds"]

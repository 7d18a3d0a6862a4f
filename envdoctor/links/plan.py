"""What ``envdoctor comms`` measures and how its figures are computed. Pure.

Sizes are nccl-tests' (``-b 1M`` = 1 MiB; read by :mod:`envdoctor.units`); S is what nccl-tests
calls the size of a collective (its ``size`` column, ``max(sendBytes, recvBytes)``), and the bus
bandwidth is its algorithm bandwidth times nccl-tests' factor (NVIDIA/nccl-tests
``doc/PERFORMANCE.md``, ``src/*.cu`` ``*GetBw``)::

    >>> parse_sizes("1M..4G", factor=4)[:3], busbw_factor("all_reduce", 8)
    ((1048576, 4194304, 16777216), 1.75)
    >>> algbw_gbps(1 << 30, 0.005), busbw_gbps("all_gather", 1 << 30, 0.005, 8)
    (214.748, 187.905)
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from envdoctor import units
from envdoctor.units import SizeError

COLLECTIVES: Tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
#: What S is, per collective (as nccl-tests counts it), for the report and the docs.
SIZE_MEANING: Dict[str, str] = {
    "all_reduce": "the buffer reduced (the same on every rank)",
    "all_gather": "the output: n x each rank's input",
    "reduce_scatter": "the input: n x each rank's output",
    "all_to_all": "one rank's send buffer (n chunks, one per peer)",
}
#: nccl-tests' bus-bandwidth factor as a text, per collective.
FACTOR_TEXT: Dict[str, str] = {
    "all_reduce": "2(n-1)/n",
    "all_gather": "(n-1)/n",
    "reduce_scatter": "(n-1)/n",
    "all_to_all": "(n-1)/n",
}

DEFAULT_SIZES = "1M..4G"  # x4 steps: 1M 4M 16M 64M 256M 1G 4G
DEFAULT_FACTOR = 4
GLOO_SIZES = "64K..4M"  # CPU processes: small messages, or the run takes minutes
WARMUP = 5  # warm-up calls per size (the first two also calibrate)
ITERS = 20  # timed calls per size, as all_reduce_perf -n 20
POINT_BUDGET_S = 0.5  # a size whose 20 calls would take longer runs fewer (3 at least)
PAIR_BYTES = 256 << 20  # one-way copy per GPU pair
GLOO_PAIR_BYTES = 1 << 20  # ... per pair of CPU processes
HOST_BYTES = 256 << 20  # pinned host <-> GPU copy
MAX_BYTES = 64 << 30


def parse_size(text: str) -> int:
    """One size of ``--sizes`` by :func:`envdoctor.units.parse_size`'s rules (``1M`` = 1 MiB as in
    nccl-tests' ``-b``/``-e``, ``1MB`` = 10^6 bytes, a bare number refused), 4 bytes to 64 GiB."""
    return units.parse_size(text, low=4, high=MAX_BYTES)


def parse_sizes(text: str, factor: int = DEFAULT_FACTOR) -> Tuple[int, ...]:
    """``"1M..4G"`` (from, to, times ``factor``), ``"1M,16M,1G"`` or ``"256M"``."""
    if factor < 2:
        raise SizeError("the step factor must be 2 or more")
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo, hi = parse_size(lo_text), parse_size(hi_text)
        if lo > hi:
            raise SizeError(f"{text!r}: the first size is larger than the last")
        out = []
        size = lo
        while size <= hi:
            out.append(size)
            size *= factor
        return tuple(out)
    sizes = tuple(parse_size(part) for part in text.split(",") if part.strip())
    if not sizes:
        raise SizeError("no size given")
    return tuple(sorted(set(sizes)))


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' correction from algorithm to bus bandwidth; 0 with one rank (nothing crosses a link)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    raise ValueError(f"unknown collective {collective!r}")


def algbw_gbps(s_bytes: int, seconds: float) -> Optional[float]:
    """S / t in decimal GB/s, as nccl-tests prints it."""
    if seconds <= 0:
        return None
    return round(s_bytes / seconds / 1e9, 3)


def busbw_gbps(collective: str, s_bytes: int, seconds: float, n: int) -> Optional[float]:
    """algbw x nccl-tests' factor (from the unrounded algbw)."""
    if seconds <= 0:
        return None
    return round(s_bytes / seconds / 1e9 * busbw_factor(collective, n), 3)


def point_budget_s(sizes: Sequence[int], collectives: Sequence[str]) -> float:
    """Seconds the measurement itself may take, at most (for the children's time limit)."""
    return len(sizes) * len(collectives) * (POINT_BUDGET_S * 3 + 1.0)

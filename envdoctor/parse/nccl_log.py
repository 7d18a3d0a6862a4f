"""NCCL's INFO log (``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING``): version, the algorithm and
protocol of each collective call, NVLink SHARP (NVLS) availability, the transports. Pure.

Lines, from NVIDIA/nccl ``src/init.cc``, ``src/enqueue.cc``, ``src/transport/nvls.cc`` (v2.28.9)::

    host:4711:4711 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
    host:4711:4790 [0] NCCL INFO NVLS multicast support is not available on dev 0 (NVLS_NCHANNELS 0)
    host:4711:4790 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    host:4711:4711 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..31}

Rank 0 prints one TUNING line per call. The byte count is the call's count times the element size:
the whole buffer for AllReduce, one rank's part for AllGather and ReduceScatter. NCCL up to 2.23
printed numbers: ``Algo 1 proto 2 time 123.4`` (Algo 0 Tree, 1 Ring, 2 CollNetDirect, 3
CollNetChain, 4 NVLS, 5 NVLSTree, 6 PAT; proto 0 LL, 1 LL128, 2 Simple).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional, Tuple

ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOS = ("LL", "LL128", "Simple")
#: NCCL's function names -> envdoctor's collectives.
FUNCTIONS = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter"}

_VERSION = re.compile(r"NCCL INFO NCCL version (\d+\.\d+\.\d+)")
_TUNING = re.compile(
    r"NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast|Reduce): (\d+) Bytes -> "
    r"Algo (\w+) proto (\w+)"
)
_NVLS = re.compile(r"NVLS multicast support is (not )?available")
_CHANNEL = re.compile(r"NCCL INFO Channel \d+/\d+ : \d+\[[^\]]*\] -> \d+\[[^\]]*\] (?:\[\w+\] )?via (\S+)")


@dataclass(frozen=True)
class NcclLog:
    version: Optional[str] = None
    #: (collective, bytes on the line) -> how often each (algo, proto) was chosen
    tuning: Dict[Tuple[str, int], Dict[Tuple[str, str], int]] = field(default_factory=dict)
    nvls_available: Optional[bool] = None
    transports: Tuple[str, ...] = ()

    def choice(self, collective: str, sizes: Iterable[int]) -> Optional[Tuple[str, str]]:
        """The (algo, proto) NCCL chose most often for this collective at any of these byte counts."""
        counts: Counter = Counter()
        for size in sizes:
            counts.update(self.tuning.get((collective, size), {}))
        return counts.most_common(1)[0][0] if counts else None

    @property
    def nvls_used(self) -> bool:
        return any(algo.upper().startswith("NVLS") for by in self.tuning.values() for algo, _ in by)


def _name(value: str, names: Tuple[str, ...]) -> str:
    if value.isdigit() and int(value) < len(names):
        return names[int(value)]
    for n in names:  # "RING" / "SIMPLE" in some quotes
        if n.lower() == value.lower():
            return n
    return value


def parse_nccl_log(text: str) -> NcclLog:
    version = None
    tuning: Dict[Tuple[str, int], Counter] = {}
    nvls: Optional[bool] = None
    transports = set()
    for line in text.splitlines():
        if "NCCL INFO" not in line:
            continue
        m = _TUNING.search(line)
        if m:
            func = FUNCTIONS.get(m.group(1), m.group(1))
            key = (func, int(m.group(2)))
            tuning.setdefault(key, Counter())[(_name(m.group(3), ALGOS), _name(m.group(4), PROTOS))] += 1
            continue
        m = _VERSION.search(line)
        if m:
            version = version or m.group(1)
            continue
        m = _NVLS.search(line)
        if m:
            available = m.group(1) is None
            nvls = available if nvls is None else (nvls or available)
            continue
        m = _CHANNEL.search(line)
        if m:
            parts = m.group(1).split("/")
            transports.add("/".join(parts[:2]))
    return NcclLog(version, {k: dict(v) for k, v in tuning.items()}, nvls, tuple(sorted(transports)))

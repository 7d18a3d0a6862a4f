"""The facts of one node as the fleet compares them, and the documents they came from.

A fact is a key (``"driver.branch"``) and a value: a string or a number, ``None`` where the node
has no such thing (no driver, no toolkit), and no key at all where it is unknown (torch was not
inspected, the report predates the field). Unknown values are never counted as deviations.

>>> NodeFacts("gpu-03", "hostname", ("reports/gpu-03/check.json",), {"driver.branch": "580"}).value("driver.branch")
'580'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Mapping, Optional, Tuple, Union

from envdoctor.facts.system import SystemFacts
from envdoctor.findings import Finding

Value = Union[str, int, float, None]
#: How a node got its name: a ``node`` key in a document, the host name in its report, the
#: folder its files are in, the file name, or its rank in a gather.
NameSource = Literal["node key", "hostname", "folder", "file name", "rank"]
Status = Literal["reported", "missing", "unreadable"]


@dataclass(frozen=True)
class GpuFacts:
    """One GPU of a node: identity, limits, health counters and what was measured on it."""

    index: int
    name: Optional[str] = None  # "NVIDIA H200"
    uuid: Optional[str] = None
    memory_mib: Optional[int] = None
    power_limit_w: Optional[float] = None
    max_sm_clock_mhz: Optional[int] = None
    ecc_enabled: Optional[bool] = None  # ECC mode now
    ecc_corrected: Optional[int] = None  # volatile counts (since the driver loaded)
    ecc_uncorrected: Optional[int] = None
    remap_pending: Optional[int] = None  # rows waiting for a reset to be remapped
    remap_failure: Optional[int] = None  # a remap that failed: the GPU needs service
    remap_uncorrectable: Optional[int] = None
    #: measured dense matmul TFLOP/s by point, ``"bf16@8192" -> 640.2``
    tflops: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeFacts:
    """One node: its name, where its facts came from, and the facts."""

    name: str
    name_source: NameSource
    sources: Tuple[str, ...]
    values: Mapping[str, Value] = field(default_factory=dict)
    gpus: Tuple[GpuFacts, ...] = ()
    status: Status = "reported"
    rank: Optional[int] = None
    #: the node's system, for the commands of a fix (distribution, package manager)
    system: Optional[SystemFacts] = None
    #: the target Python its report inspected, for a torch fix
    python: Optional[str] = None
    #: the error findings of the node's own ``check``: their fixes are reused
    check_errors: Tuple[Finding, ...] = ()
    #: shown, never compared: host name, when it was collected, envdoctor's version, ...
    info: Mapping[str, str] = field(default_factory=dict)
    #: what was ignored or could not be read, each a line
    notes: Tuple[str, ...] = ()
    kinds: Tuple[str, ...] = ()  # document kinds read: ("report", "bench")
    #: files of this node that could not be read: (path, the one line saying why)
    unreadable: Tuple[Tuple[str, str], ...] = ()
    #: GPU serial numbers, only so that ``--redact`` can mask them wherever they appear
    serials: Tuple[str, ...] = ()

    def value(self, key: str) -> Value:
        return self.values.get(key)

    def knows(self, key: str) -> bool:
        return key in self.values


@dataclass(frozen=True)
class Document:
    """One document of a node: its kind ("report", "bench", "health", ...), data and source."""

    kind: str
    data: Dict[str, Any]
    source: str


@dataclass(frozen=True)
class NodeInput:
    """The documents of one node before extraction, and the names it could go by."""

    documents: Tuple[Document, ...]
    #: candidates, best first: (name, how it was found)
    names: Tuple[Tuple[str, NameSource], ...] = ()
    status: Status = "reported"
    rank: Optional[int] = None
    notes: Tuple[str, ...] = ()
    #: files of this node that could not be read: (path, the one line saying why)
    unreadable: Tuple[Tuple[str, str], ...] = ()
    #: for a node of a gather that did not report: the one line saying why
    problem: Optional[str] = None
    #: shown with the node, never compared (a gather adds rank 0's address)
    info: Mapping[str, str] = field(default_factory=dict)

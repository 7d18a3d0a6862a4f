"""What ``envdoctor burn`` judges a GPU by: Xid codes, clock-event reasons, expected sustained rates.

``data/xid.toml`` and ``data/health.toml`` are read against a schema (the helpers of
:mod:`envdoctor.table.schema`), every row with its source and the date it was checked::

    >>> h = load_health()
    >>> h.xid(79).severity, h.xid(79).meaning
    ('critical', 'GPU has fallen off the bus (no longer reachable over PCIe)')
    >>> h.reason_names(0x44), h.fault_reasons(0x44)
    (('sw_power_cap', 'hw_thermal'), ('hw_thermal',))
    >>> h.expected("NVIDIA H200", "bf16", 8192).sustained_tflops
    660.0
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from envdoctor.table.names import norm_gpu_name
from envdoctor.table.rows import Sourced
from envdoctor.table.schema import Doc, TableError, Where, check_top, fields, load_rows, make_row, one_of, rows, spec_of
from envdoctor.table.source import DataDir, read_doc

XID_SEVERITIES = ("critical", "warning", "app", "info")
REASON_CLASSES = ("benign", "fault")
#: the dtypes burn loads (kept here so the table does not import the burn package)
BURN_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp64")


@dataclass(frozen=True)
class Xid(Sourced):
    """One Xid code: ``Xid(79, ..., severity="critical", ...)``."""

    code: int
    mnemonic: str
    meaning: str
    severity: str  # "critical", "warning", "app", "info"
    action: str
    source: str
    checked: str
    nvidia_immediate: Optional[str] = None
    nvidia_investigatory: Optional[str] = None
    azure_fails: bool = False
    k8s_app_error: bool = False
    gcm_noncritical: bool = False
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Reason(Sourced):
    """One clock-event reason bit, e.g. ``hw_thermal`` (0x40, class "fault")."""

    name: str
    nvml: str
    bit: int
    kind: str  # "benign" or "fault" (``class`` in the file)
    meaning: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Expected(Sourced):
    """The sustained rate of ``dtype`` n x n products on a GPU model, at a power limit."""

    gpu: str
    dtype: str
    n: int
    sustained_tflops: float
    power_limit_w: Optional[float]
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Health:
    xids: Tuple[Xid, ...]
    reasons: Tuple[Reason, ...]
    rates: Tuple[Expected, ...]

    def xid(self, code: int) -> Optional[Xid]:
        return next((x for x in self.xids if x.code == code), None)

    def reason_names(self, mask: Optional[int]) -> Tuple[str, ...]:
        """The set bits of ``mask`` by name, in bit order; a bit not in the table as ``bit_0x800``."""
        if not mask:
            return ()
        known = {r.bit: r.name for r in self.reasons}
        return tuple(known.get(1 << b, f"bit_{1 << b:#x}") for b in range(64) if mask >> b & 1)

    def fault_reasons(self, mask: Optional[int]) -> Tuple[str, ...]:
        """The reasons of ``mask`` that are not benign (unknown bits included)."""
        benign = {r.name for r in self.reasons if r.kind == "benign"}
        return tuple(n for n in self.reason_names(mask) if n not in benign)

    def reason(self, name: str) -> Optional[Reason]:
        return next((r for r in self.reasons if r.name == name), None)

    def expected(self, gpu: str, dtype: str, n: int) -> Optional[Expected]:
        """The row for this GPU name (as NVML or torch reports it), dtype and size, or None."""
        key = norm_gpu_name(gpu)
        return next((e for e in self.rates if norm_gpu_name(e.gpu) == key and e.dtype == dtype and e.n == n), None)


def load_xids(doc: Doc) -> Tuple[Xid, ...]:
    check_top(doc, ("xid",))
    out: Dict[int, Xid] = {}
    for where, raw in rows(doc, "xid", "code"):
        raw = dict(raw)
        buckets = {k: raw.pop(k) for k in ("nvidia_immediate", "nvidia_investigatory") if k in raw}
        for k, b in buckets.items():  # the catalog leaves some buckets empty: "" is allowed here
            if not isinstance(b, str):
                raise where.fail(f"field '{k}' must be a string, not {b!r}")
        v = fields(where, raw, spec_of(Xid, derived=("nvidia_immediate", "nvidia_investigatory")))
        one_of(where, "severity", v["severity"], XID_SEVERITIES)
        if v["code"] in out:
            raise where.fail(f"duplicate Xid {v['code']}")
        v.update({k: b or None for k, b in buckets.items()})
        out[v["code"]] = make_row(Xid, where, v)
    return tuple(out[k] for k in sorted(out))


def load_health_file(doc: Doc) -> Tuple[Tuple[Reason, ...], Tuple[Expected, ...]]:
    check_top(doc, ("reason", "expected"))
    bits: Dict[int, str] = {}

    def reason(where: Where, v: Dict[str, Any]) -> None:
        bit = v["bit"]
        if bit <= 0 or bit & (bit - 1):
            raise where.fail(f"field 'bit': {bit:#x} is not a single bit")
        if bit in bits:
            raise where.fail(f"bit {bit:#x} is also {bits[bit]!r}")
        one_of(where, "class", v["class"], REASON_CLASSES)
        bits[bit] = v["name"]
        v["kind"] = v.pop("class")

    reasons = load_rows(doc, "reason", "name", Reason, reason, renamed=(("kind", "class"),))
    names = [r.name for r in reasons]
    if len(set(names)) != len(names):
        raise TableError(f"{doc.label}: a [[reason]] name appears twice")
    seen = set()

    def expected(where: Where, v: Dict[str, Any]) -> None:
        one_of(where, "dtype", v["dtype"], BURN_DTYPES)
        key = (norm_gpu_name(v["gpu"]), v["dtype"], v["n"])
        if key in seen:
            raise where.fail(f"a second row for {v['gpu']} {v['dtype']} n={v['n']}")
        seen.add(key)

    return reasons, load_rows(doc, "expected", "gpu", Expected, expected)


def build_health(directory: Optional[DataDir] = None) -> Health:
    xids = load_xids(read_doc("xid.toml", directory))
    reasons, rates = load_health_file(read_doc("health.toml", directory))
    return Health(xids, reasons, rates)


@functools.lru_cache(maxsize=1)
def _default() -> Health:
    return build_health()


def load_health(directory: Optional[Path] = None) -> Health:
    """The bundled tables (loaded once), or a fresh load of ``directory``; TableError when broken."""
    return _default() if directory is None else build_health(Path(directory))

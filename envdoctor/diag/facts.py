"""What ``envdoctor diag`` found: one :class:`DiagTest` per test and GPU, a verdict per GPU and per
node; and the thresholds of ``data/diag.toml``. ``envdoctor.diag/1`` is ``to_data`` of
:class:`DiagResult`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Tuple

from envdoctor.checks import Suppressed
from envdoctor.facts.base import ProbeError
from envdoctor.facts.fabric import FabricFacts
from envdoctor.facts.gpu_state import GpuStateFacts
from envdoctor.findings import Finding
from envdoctor.table.names import norm_gpu_name
from envdoctor.table.schema import Doc, check_top, fields, make_row, rows
from envdoctor.table.source import read_doc

SCHEMA = "envdoctor.diag/1"
LEVELS = {1: "quick", 2: "medium", 3: "long"}
#: the time each level promises (issue 22), seconds
BUDGETS = {1: 15.0, 2: 120.0, 3: 900.0}
STATUSES = ("PASS", "WARN", "FAIL", "SKIP", "INFO")  # INFO: measured, no threshold for this GPU
VERDICTS = ("PASS", "WARN", "FAIL")


@dataclass(frozen=True)
class DiagTest:
    """One test on one GPU (``gpu``: NVML index) or on the node (``gpu`` None)."""

    name: str  # check, topo, state, fabric, cuda_op, matmul, ...
    status: str  # PASS, WARN, FAIL, SKIP, INFO
    level: int = 1
    gpu: Optional[int] = None
    figure: Optional[float] = None
    unit: Optional[str] = None
    threshold: Optional[float] = None  # the figure must be >= this (or == for counts of faults)
    warn_threshold: Optional[float] = None
    compare: Optional[str] = None  # ">=", "==", "<="
    source: Optional[str] = None  # where the threshold comes from
    detail: str = ""  # one line: what was measured, or why it was skipped
    codes: Tuple[str, ...] = ()  # findings behind a WARN or FAIL
    seconds: Optional[float] = None


@dataclass(frozen=True)
class GpuVerdict:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    bus_id: Optional[str] = None
    verdict: str = "PASS"
    failed: Tuple[str, ...] = ()  # tests that FAILed
    warned: Tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagSummary:
    """What a script reads first: the verdict, the exit code, the tests by status."""

    verdict: str = "PASS"
    exit_code: int = 0
    passed: int = 0
    warned: int = 0
    failed: int = 0
    skipped: int = 0
    no_threshold: int = 0


@dataclass(frozen=True)
class DiagResult:
    schema: str = SCHEMA
    created_at: Optional[str] = None
    envdoctor_version: Optional[str] = None
    level: int = 1
    level_name: str = "quick"
    budget_s: float = 15.0
    hostname: Optional[str] = None
    python: Optional[str] = None
    device: str = "all"
    verdict: str = "PASS"  # PASS, WARN, FAIL; NO_GPU / ERROR when it could not start
    failed: Tuple[str, ...] = ()  # "burn (GPU 0)", "fabric"
    gpus: Tuple[GpuVerdict, ...] = ()
    tests: Tuple[DiagTest, ...] = ()
    findings: Tuple[Finding, ...] = ()
    state: GpuStateFacts = field(default_factory=GpuStateFacts)
    fabric: FabricFacts = field(default_factory=FabricFacts)
    stage_s: Dict[str, float] = field(default_factory=dict)  # seconds per part
    wall_s: Optional[float] = None
    notes: Tuple[str, ...] = ()
    error: Optional[ProbeError] = None  # the run could not start (no GPU, no torch)
    summary: DiagSummary = field(default_factory=DiagSummary)
    suppressed: Optional[Suppressed] = None  # --suppress CODE: the codes and the findings they hid (no test saw them)


# --- data/diag.toml ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    test: str
    of: str
    warn_below: float
    fail_below: float
    source: str
    checked: str
    note: Optional[str] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Threshold:
    gpu: str
    test: str
    min: float
    unit: str
    source: str
    checked: str
    dtype: Optional[str] = None
    n: Optional[int] = None
    note: Optional[str] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagTable:
    rules: Tuple[Rule, ...] = ()
    thresholds: Tuple[Threshold, ...] = ()

    def rule(self, test: str) -> Optional[Rule]:
        return next((r for r in self.rules if r.test == test), None)

    def threshold(self, gpu: Optional[str], test: str) -> Optional[Threshold]:
        key = norm_gpu_name(gpu or "")
        return next((t for t in self.thresholds if t.test == test and norm_gpu_name(t.gpu) == key), None)


def parse_diag_table(doc: Doc) -> DiagTable:
    check_top(doc, ("rule", "threshold"))
    out_rules = []
    for where, raw in rows(doc, "rule", "test"):
        v = fields(where, raw, {"test": "str", "of": "str", "warn_below": "float", "fail_below": "float"})
        if not 0 < v["fail_below"] <= v["warn_below"] <= 1.5:
            raise where.fail("needs 0 < fail_below <= warn_below")
        out_rules.append(make_row(Rule, where, v))
    out_thresholds = []
    for where, raw in rows(doc, "threshold", "gpu"):
        v = fields(
            where, raw, {"gpu": "str", "test": "str", "min": "float", "unit": "str", "dtype": "str?", "n": "int?"}
        )
        out_thresholds.append(make_row(Threshold, where, v))
    return DiagTable(tuple(out_rules), tuple(out_thresholds))


@functools.lru_cache(maxsize=1)
def _default() -> DiagTable:
    return parse_diag_table(read_doc("diag.toml"))


def load_diag_table(directory: Optional[Path] = None) -> DiagTable:
    """data/diag.toml (loaded once), or a fresh load of ``directory``; TableError when broken."""
    return _default() if directory is None else parse_diag_table(read_doc("diag.toml", Path(directory)))

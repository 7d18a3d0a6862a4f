"""One inspection: probes -> facts (enriched from the table) -> findings.

``check``, ``snapshot``, ``verify`` and ``recommend`` all start here, so the machine is read once
and in one way.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Optional, Tuple

from envdoctor.facts import Facts
from envdoctor.facts.gpu import PciFacts
from envdoctor.findings import Finding, sort_findings
from envdoctor.gpus import with_table_ccs
from envdoctor.probes import collect
from envdoctor.probes.context import Context
from envdoctor.rules import all_rules, evaluate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Inspection:
    facts: Facts
    findings: Tuple[Finding, ...]
    table_error: Optional[str] = None
    #: wall seconds of the steps besides the probes (``facts.probe_seconds``): "table", "findings"
    seconds: Dict[str, float] = field(default_factory=dict)


def load_table_or_error() -> Tuple[Any, Optional[str]]:
    """The compatibility table, or (None, one line saying why it could not be loaded)."""
    try:
        from envdoctor.table import load_table

        return load_table(), None
    except Exception as exc:  # a broken data file must not hide the machine's report
        log.debug("table failed to load", exc_info=True)
        return None, f"{type(exc).__name__}: {exc}"


def enrich(facts: Facts, table: Any) -> Facts:
    """Fill what the table knows about each PCI device (name, compute capability, architecture),
    then the compute capability of a driver GPU that did not report one (``gpus.with_table_ccs``).

    Pure: facts and table in, new facts out. A name from the system's pci.ids is kept.
    """
    if table is None:
        return facts
    facts = _enrich_pci(facts, table)
    try:
        return with_table_ccs(facts, table)
    except Exception:  # a broken row must not stop the report
        log.debug("table lookup failed", exc_info=True)
        return facts


def _enrich_pci(facts: Facts, table: Any) -> Facts:
    if not facts.pci.devices:
        return facts
    devices = []
    for dev in facts.pci.devices:
        model = _safe(table, "gpu_by_pci", dev.device_id)
        arch = _safe(table, "arch_for_pci", dev.device_id)
        cc = getattr(model, "cc", None) or getattr(arch, "cc", None)
        if cc and arch is None:
            arch = _safe(table, "architecture", cc)
        name, source = dev.name, dev.name_source
        if not name and model is not None:
            name, source = model.name, "envdoctor table"
        devices.append(dataclasses.replace(
            dev, name=name, name_source=source, compute_capability=cc,
            architecture=getattr(arch, "name", None),
        ))
    pci: PciFacts = dataclasses.replace(facts.pci, devices=tuple(devices))
    return dataclasses.replace(facts, pci=pci)


def _safe(table: Any, lookup: str, key: str) -> Any:
    """``table.<lookup>(key)``, or None when the table raises (a broken row must not stop the report)."""
    try:
        return getattr(table, lookup)(key)
    except Exception:
        log.debug("table lookup failed", exc_info=True)
        return None


def findings_for(facts: Facts, table: Any, table_error: Optional[str],
                 suppress: Iterable[str] = ()) -> Tuple[Finding, ...]:
    found = list(evaluate(facts, table, suppress))
    if table_error:
        found.append(Finding(
            "ED901", "warning", "envdoctor's compatibility table could not be loaded",
            evidence=(table_error,),
            fix=("pip install --force-reinstall envdoctor   # restores the bundled data/ files",),
            area="envdoctor",
            explanation="Checks that need the table (driver floors, GPU architectures) were skipped.",
        ))
    return sort_findings(found)


def _prepare(skip: Iterable[str]) -> Tuple[Any, Optional[str], float]:
    """The table, and the modules of the checks that will run (imported now, not after the probes)."""
    started = time.monotonic()
    table, error = load_table_or_error()
    took = time.monotonic() - started
    all_rules(skip)
    return table, error, took


def inspect(ctx: Context, skip: Iterable[str] = (), suppress: Iterable[str] = (),
            debug: bool = False) -> Inspection:
    # Parsing the table is CPU work and the probes mostly wait on child processes: overlap them.
    skip = tuple(skip)
    with ThreadPoolExecutor(max_workers=1) as pool:
        loading = pool.submit(_prepare, skip)
        collected = collect(ctx, skip=skip, debug=debug)
        table, table_error, table_seconds = loading.result()
    started = time.monotonic()
    facts = enrich(collected, table)
    findings = findings_for(facts, table, table_error, suppress)
    seconds = {"table": round(table_seconds, 3), "findings": round(time.monotonic() - started, 3)}
    return Inspection(facts, findings, table_error, seconds)

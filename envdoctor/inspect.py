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
from typing import Any, Dict, Iterable, List, Optional, Tuple

from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import PciFacts
from envdoctor.findings import Finding
from envdoctor.gpus import with_table_ccs
from envdoctor.probes import Probing, collect
from envdoctor.probes.context import Context
from envdoctor.rules import all_rules
from envdoctor.rules import run as run_rules

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Inspection:
    facts: Facts
    findings: Tuple[Finding, ...]
    table_error: Optional[str] = None
    #: wall seconds of the steps besides the probes (``facts.probe_seconds``): "table", "findings"
    seconds: Dict[str, float] = field(default_factory=dict)
    #: findings hidden by ``--suppress`` (the report lists them as suppressed)
    suppressed: Tuple[Finding, ...] = ()


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
        devices.append(
            dataclasses.replace(
                dev,
                name=name,
                name_source=source,
                compute_capability=cc,
                architecture=getattr(arch, "name", None),
            )
        )
    pci: PciFacts = dataclasses.replace(facts.pci, devices=tuple(devices))
    return dataclasses.replace(facts, pci=pci)


def _safe(table: Any, lookup: str, key: str) -> Any:
    """``table.<lookup>(key)``, or None when the table raises (a broken row must not stop the report)."""
    try:
        return getattr(table, lookup)(key)
    except Exception:
        log.debug("table lookup failed", exc_info=True)
        return None


#: A failure of these kinds is a part of the machine that should have been read and was not
#: ("not_found" is a program that is not there, "unavailable" a source not consulted here).
FAILED_KINDS = ("timeout", "exit_status", "unparseable", "permission", "crashed", "interrupted")

#: facts area -> (what it is called, the finding areas whose findings already speak for its failure)
_PROBED: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "system": ("the system", ("system",)),
    "pci": ("the PCI bus", ("gpu", "driver")),
    "driver": ("the driver", ("driver", "gpu")),
    "toolkits": ("the CUDA toolkits", ("toolkits",)),
    "conda": ("conda", ("conda",)),
    "docker": ("docker", ("docker", "container")),
    "python": ("the target Python", ("torch",)),
    "torch": ("torch", ("torch",)),
    "links": ("the GPU links", ("links",)),
}


def _area_errors(facts: Facts, area: str) -> List[ProbeError]:
    value = getattr(facts, area)
    errors = [getattr(value, "error", None)]
    if area == "driver":
        errors += [facts.driver.smi_error, facts.driver.nvml_error]
    if area == "toolkits":
        errors += [tk.error for tk in facts.toolkits.toolkits]
    return [e for e in errors if isinstance(e, ProbeError) and e.kind in FAILED_KINDS]


def probe_failures(facts: Facts, findings: Iterable[Finding]) -> Tuple[Finding, ...]:
    """ED902 for each area whose probe failed and that no warning or error finding speaks for, so
    that a report with a hole in it never ends in "no problems found"."""
    covered = {f.area for f in findings if f.severity in ("error", "warning")}
    out = []
    for area, (name, areas) in _PROBED.items():
        if area in facts.skipped:
            continue
        errors = _area_errors(facts, area)
        if not errors or covered.intersection(areas):
            continue
        commands = tuple(dict.fromkeys(e.command for e in errors if e.command))
        out.append(
            Finding(
                "ED902",
                "warning",
                f"envdoctor could not read {name}: this part of the report is missing",
                evidence=tuple(dict.fromkeys(e.message for e in errors)),
                fix=tuple(f"{c}   # run it by hand to see what it says" for c in commands[:3])
                or ("envdoctor check -v   # where each fact came from",),
                area="envdoctor",
                explanation="A command or file envdoctor reads failed; the findings above do not cover it, "
                "so nothing is known about it (not even that it is fine).",
            )
        )
    return tuple(out)


def findings_for(
    facts: Facts, table: Any, table_error: Optional[str], suppress: Iterable[str] = ()
) -> Tuple[Finding, ...]:
    """Every finding of ``facts``, without the codes in ``suppress``."""
    return split_findings(facts, table, table_error, suppress)[0]


def split_findings(
    facts: Facts, table: Any, table_error: Optional[str], suppress: Iterable[str] = ()
) -> Tuple[Tuple[Finding, ...], Tuple[Finding, ...]]:
    """(the findings shown, the findings ``suppress`` hides), each sorted."""
    done = run_rules(facts, table, suppress, table_error=table_error, more=lambda found: probe_failures(facts, found))
    return done.shown, done.hidden


def _prepare(skip: Iterable[str]) -> Tuple[Any, Optional[str], float]:
    """The table, and the modules of the checks that will run (imported now, not after the probes)."""
    started = time.monotonic()
    table, error = load_table_or_error()
    took = time.monotonic() - started
    all_rules(skip)
    return table, error, took


def inspect(
    ctx: Context,
    skip: Iterable[str] = (),
    suppress: Iterable[str] = (),
    debug: bool = False,
    probing: Optional[Probing] = None,
) -> Inspection:
    """``probing``: the probes, already started with the same ``skip`` (``check`` starts them
    before it imports this module, so the target interpreter's child runs meanwhile)."""
    # Parsing the table is CPU work and the probes mostly wait on child processes: overlap them.
    skip = tuple(skip)
    with ThreadPoolExecutor(max_workers=1) as pool:
        loading = pool.submit(_prepare, skip)
        collected = probing.facts() if probing is not None else collect(ctx, skip=skip, debug=debug)
        table, table_error, table_seconds = loading.result()
    started = time.monotonic()
    facts = enrich(collected, table)
    findings, suppressed = split_findings(facts, table, table_error, suppress)
    seconds = {"table": round(table_seconds, 3), "findings": round(time.monotonic() - started, 3)}
    return Inspection(facts, findings, table_error, seconds, suppressed)

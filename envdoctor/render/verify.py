"""``envdoctor verify`` for people (text: regressions, changes, what stayed the same) and for
scripts (the ``envdoctor.verify/1`` document). Renders a Verification; computes nothing."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Dict, List, Literal, Optional, TypedDict

from envdoctor import __version__
from envdoctor.bench.facts import BenchResult
from envdoctor.doctypes import Json
from envdoctor.documents import document
from envdoctor.facts import Facts
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.redact import mask_data
from envdoctor.snapshot import Snapshot, describe
from envdoctor.style import Style
from envdoctor.verify import Verification

SCHEMA = document("verify").schema  # "envdoctor.verify/1"


def when(iso: str | None) -> str:
    """``2026-11-29T17:30:05Z`` -> ``2026-11-29 17:30:05 UTC``; text that is no time is shown as it is."""
    if not iso:
        return "unknown time"
    try:
        moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def header(base: Snapshot) -> str:
    """``Verify against FILE (taken 2026-11-29 17:30:05 UTC, driver 580.159.04, torch 2.11.0+cu130)``."""
    driver, torch_version, _ = describe(base)
    return (
        f"Verify against {base.path} (taken {when(base.created)}, driver {driver or 'none'}, "
        f"torch {torch_version or ('not inspected' if 'torch' in base.facts.skipped else 'none')})"
    )


def _finding_lines(f: Finding, mark: str, kind: str, style: Style) -> list[str]:
    lines = [style(f"  {mark} {f.code} {f.title}", kind)]
    if f.explanation and kind == "error":
        lines.append(f"      {f.explanation}")
    lines.extend(style(f"      - {e}", "dim") for e in f.evidence)
    if f.fix:
        lines.extend(f"      {c}" if c.startswith("#") else f"      $ {c}" for c in f.fix)
    if f.reference and kind == "error":
        lines.append(style(f"      see {f.reference}", "dim"))
    return lines


def render_verification(base: Snapshot, v: Verification, color: bool = False) -> str:
    """The human text: header, regressions (✗), changes (•), unchanged, not compared, result."""
    style = Style(color)
    out = [style(header(base), "bold"), ""]
    if v.regressions:
        out.append(style("Regressions", "bold"))
        for f in v.regressions:
            out.extend(_finding_lines(f, "✗", "error", style))
        out.append("")
    if v.changes:
        out.append(style("Changes", "bold"))
        for f in v.changes:
            out.extend(_finding_lines(f, "•", "info", style))
        out.append("")
    if v.unchanged:
        out.append(style("Unchanged: ", "bold") + "; ".join(v.unchanged))
    if v.not_compared:
        out.append(style("Not compared: ", "bold") + "; ".join(v.not_compared))
    out.append("")
    n, c = len(v.regressions), len(v.changes)
    if n:
        out.append(
            style(
                f"Result: {n} regression(s), {c} change(s). Fix the regressions above, "
                "then run envdoctor verify again.",
                "error",
            )
        )
    else:
        out.append(style("Result: no regressions" + (f"; {c} change(s) listed above." if c else "."), "ok"))
    return "\n".join(out) + "\n"


Strings = List[str]


class Baseline(TypedDict):
    """The snapshot compared against: where it is, when and where it was taken, what it held."""

    path: str
    created: Optional[str]
    host: Optional[str]
    schema: str
    migrated_from: Optional[str]
    driver: Optional[str]
    torch: Optional[str]
    gpus: Strings


class Current(TypedDict):
    """The machine now."""

    collected_at: Optional[str]
    host: Optional[str]
    driver: Optional[str]
    torch: Optional[str]
    gpus: Strings


class Regression(TypedDict):
    """A regression is an error finding of ED701-ED713."""

    code: Annotated[str, Json(pattern="^ED7(0[1-9]|1[0-3])$")]
    severity: Literal["error"]


class Change(TypedDict):
    """A change is an info finding of ED720-ED728."""

    code: Annotated[str, Json(pattern="^ED72[0-8]$")]
    severity: Literal["info"]


class BenchAgain(TypedDict):
    """``verify --bench``: the bench run now and the tolerance it was compared with."""

    tolerance_pct: Annotated[Optional[float], Json(minimum=0, maximum=100)]
    current: Annotated[Dict[str, Any], Json.raw({"$ref": "bench-1.json"})]


class VerifyDocument(TypedDict):
    """The baseline, the machine now, regressions (error findings ED701-ED713), changes (info findings
    ED720-ED728), what stayed the same and what could not be compared."""

    schema: str
    envdoctor_version: str
    created_at: Optional[str]
    baseline: Baseline
    current: Current
    warnings: Strings
    regressions: List[Annotated[Regression, Json.extends(Finding)]]
    changes: List[Annotated[Change, Json.extends(Finding)]]
    unchanged: Strings
    not_compared: Strings
    bench: Optional[BenchAgain]
    exit_code: Annotated[int, Json(enum=[0, 1, 3])]


def verify_document(
    base: Snapshot,
    facts: Facts,
    v: Verification,
    warnings: list[str],
    bench: BenchResult | None,
    tolerance: float | None,
    code: int,
    created_at: str | None = None,
) -> VerifyDocument:
    """The ``envdoctor.verify/1`` document (``envdoctor/schemas/verify-1.json``): keys stable within
    the version, new keys may be added. Secrets are masked."""
    driver, torch_version, gpus = describe(base)
    now = describe(Snapshot(base.path, facts, (), {}))
    doc: VerifyDocument = {
        "schema": SCHEMA,
        "envdoctor_version": __version__,
        "created_at": created_at,
        "baseline": {
            "path": str(base.path),
            "created": base.created,
            "host": base.host,
            "schema": str(base.doc.get("schema", "")),
            "migrated_from": base.migrated_from,
            "driver": driver,
            "torch": torch_version,
            "gpus": list(gpus),
        },
        "current": {
            "collected_at": facts.collected_at,
            "host": facts.system.hostname,
            "driver": now[0],
            "torch": now[1],
            "gpus": list(now[2]),
        },
        "warnings": warnings,
        "regressions": [to_data(f) for f in v.regressions],
        "changes": [to_data(f) for f in v.changes],
        "unchanged": list(v.unchanged),
        "not_compared": list(v.not_compared),
        "bench": ({"tolerance_pct": tolerance, "current": to_data(bench)} if bench is not None else None),
        "exit_code": code,
    }
    masked: VerifyDocument = mask_data(doc)
    return masked

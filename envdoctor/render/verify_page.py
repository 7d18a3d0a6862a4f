"""The HTML page of ``envdoctor verify --html``, from the verify document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from envdoctor.htmlpage import findings, fmt, items, page, para, redact_document, section, table
from envdoctor.redact import Redactor


def verify_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    """Regressions first (with their fixes), then expected changes, the rest unchanged."""
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code", d.get("exit_code") or 0))
    base, now = d.get("baseline") or {}, d.get("current") or {}
    regressions, changes = d.get("regressions") or [], d.get("changes") or []
    if regressions:
        verdict = f"{len(regressions)} regression{'s' if len(regressions) != 1 else ''} since the snapshot"
    elif code == 0:
        verdict = "nothing regressed since the snapshot" + (f" ({len(changes)} expected changes)" if changes else "")
    else:
        verdict = "the comparison could not be completed"
    body = [
        section("Regressions", findings(regressions, "None."), id="regressions"),
        section("Changes", findings(changes, "None."), id="changes"),
        section(
            "Baseline and now",
            table(
                ["", "when", "host", "driver", "torch", "GPUs"],
                [
                    [
                        "baseline",
                        base.get("created"),
                        base.get("host"),
                        base.get("driver"),
                        base.get("torch"),
                        fmt(base.get("gpus")),
                    ],
                    [
                        "now",
                        d.get("created_at") or now.get("collected_at"),
                        now.get("host"),
                        now.get("driver"),
                        now.get("torch"),
                        fmt(now.get("gpus")),
                    ],
                ],
            ),
            para(f"baseline file: {base.get('path')}", "muted"),
            id="pair",
        ),
        section("Unchanged", items(d.get("unchanged") or ()) or para("-", "muted"), id="unchanged"),
    ]
    if d.get("not_compared"):
        body.append(section("Not compared", items(d["not_compared"]), id="not-compared"))
    if d.get("warnings"):
        body.append(section("Warnings", items(d["warnings"], "warning"), id="warnings"))
    bench = d.get("bench")
    if isinstance(bench, Mapping) and isinstance(bench.get("current"), Mapping):
        from envdoctor.bench.page import bench_sections

        body.append(para(f"bench compared with a tolerance of {fmt(bench.get('tolerance_pct'))} %", "muted"))
        body += bench_sections(bench["current"])
    return page("verify", str(now.get("host") or ""), code, verdict, body, d)

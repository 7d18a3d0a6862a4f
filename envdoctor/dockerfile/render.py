"""``envdoctor dockerfile`` output: the text for people and the ``envdoctor.dockerfile/1`` document."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional, Tuple

from envdoctor import __version__
from envdoctor.dockerfile.parse import Dockerfile
from envdoctor.dockerfile.rules import Lint, stage_bases, stage_summary
from envdoctor.facts.serde import to_data
from envdoctor.redact import mask_data, mask_text

SCHEMA = "envdoctor.dockerfile/1"


def _summary(found: Tuple[Lint, ...]) -> Dict[str, int]:
    sev = [x.finding.severity for x in found]
    return {"errors": sev.count("error"), "warnings": sev.count("warning"), "info": sev.count("info"),
            "exit_code": 1 if "error" in sev else 0}


def document(path: str, d: Dockerfile, found: Tuple[Lint, ...], driver: Optional[str], driver_source: Optional[str],
             table: Any, ext: Any) -> Dict[str, Any]:
    findings: List[Dict[str, Any]] = []
    for x in found:
        data = to_data(x.finding)
        data["line"] = x.line
        findings.append(data)
    doc = {
        "schema": SCHEMA,
        "envdoctor_version": __version__,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "path": path,
        "driver": {"version": driver, "source": driver_source},
        "directives": dict(d.directives),
        "stages": stage_summary(d, stage_bases(d, table, ext)),
        "summary": _summary(found),
        "findings": findings,
    }
    masked: Dict[str, Any] = mask_data(doc)
    return masked


def render_text(path: str, d: Dockerfile, found: Tuple[Lint, ...], driver: Optional[str],
                driver_source: Optional[str], table: Any, ext: Any, color: bool = False) -> str:
    from envdoctor.style import Style
    from envdoctor.lines import findings_section

    style = Style(color)
    out = [style(f"{path}: {len(d.stages)} stage(s), {len(d.instructions)} instructions", "bold")]
    for s in stage_summary(d, stage_bases(d, table, ext)):
        facts = ", ".join(x for x in (s["kind"] if s["kind"] != "other" else "not an NVIDIA or PyTorch image",
                                      s["cuda"] and f"CUDA {s['cuda']}", s["torch"] and f"torch {s['torch']}",
                                      {True: "nvcc", False: "no nvcc", None: None}[s["nvcc"]]) if x)
        name = f" AS {s['name']}" if s["name"] else ""
        out.append(f"  line {s['line']}: FROM {s['base']}{name} ({facts})")
    out.append(f"  driver: {driver} ({driver_source})" if driver else f"  driver: {driver_source}")
    out.append("")
    out.extend(findings_section(tuple(x.finding for x in found), style, again=f"envdoctor dockerfile {path}"))
    return mask_text("\n".join(out) + "\n")

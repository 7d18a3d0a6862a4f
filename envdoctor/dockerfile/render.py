"""``envdoctor dockerfile`` output: the text for people and the ``envdoctor.dockerfile/1`` document."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, TypedDict

from envdoctor import __version__
from envdoctor.dockerfile.parse import Dockerfile
from envdoctor.dockerfile.rules import Lint, StageSummary, stage_bases, stage_summary
from envdoctor.doctypes import FindingsSummary, Json
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.findings import summary as findings_summary
from envdoctor.redact import mask_data, mask_text

SCHEMA = "envdoctor.dockerfile/1"


class DriverNamed(TypedDict):
    """The driver the images must run on: ``--driver``, this machine's, or none known."""

    version: Optional[str]
    source: Optional[str]


class LintLine(TypedDict):
    """What a Dockerfile finding has besides a finding's keys: the line it is about."""

    code: Annotated[str, Json(pattern="^ED5[6-9][0-9]$")]
    area: Literal["dockerfile"]
    line: Annotated[int, Json(minimum=1)]


class _DockerfileKeys(TypedDict):
    schema: str
    envdoctor_version: str
    created_at: str
    path: str
    driver: DriverNamed
    stages: List[StageSummary]
    summary: FindingsSummary
    findings: List[Annotated[LintLine, Json.extends(Finding)]]


class DockerfileDocument(_DockerfileKeys, total=False):
    """The stages of a Dockerfile, what envdoctor knows of each base image, and the findings
    (ED560-ED569), each with its line."""

    directives: Dict[str, str]


def _summary(found: Tuple[Lint, ...]) -> FindingsSummary:
    return findings_summary(x.finding for x in found)


def document(
    path: str,
    d: Dockerfile,
    found: Tuple[Lint, ...],
    driver: Optional[str],
    driver_source: Optional[str],
    table: Any,
    ext: Any,
) -> DockerfileDocument:
    findings: List[LintLine] = []
    for x in found:
        data = to_data(x.finding)
        data["line"] = x.line
        findings.append(data)
    doc: DockerfileDocument = {
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
    masked: DockerfileDocument = mask_data(doc)
    return masked


def render_text(
    path: str,
    d: Dockerfile,
    found: Tuple[Lint, ...],
    driver: Optional[str],
    driver_source: Optional[str],
    table: Any,
    ext: Any,
    color: bool = False,
) -> str:
    from envdoctor.lines import findings_section
    from envdoctor.style import Style

    style = Style(color)
    out = [style(f"{path}: {len(d.stages)} stage(s), {len(d.instructions)} instructions", "bold")]
    for s in stage_summary(d, stage_bases(d, table, ext)):
        facts = ", ".join(
            x
            for x in (
                s["kind"] if s["kind"] != "other" else "not an NVIDIA or PyTorch image",
                s["cuda"] and f"CUDA {s['cuda']}",
                s["torch"] and f"torch {s['torch']}",
                {True: "nvcc", False: "no nvcc", None: None}[s["nvcc"]],
            )
            if x
        )
        name = f" AS {s['name']}" if s["name"] else ""
        out.append(f"  line {s['line']}: FROM {s['base']}{name} ({facts})")
    out.append(f"  driver: {driver} ({driver_source})" if driver else f"  driver: {driver_source}")
    out.append("")
    out.extend(findings_section(tuple(x.finding for x in found), style, again=f"envdoctor dockerfile {path}"))
    return mask_text("\n".join(out) + "\n")

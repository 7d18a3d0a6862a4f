"""A Markdown block to paste into a bug report: every fact and finding, in a collapsible section."""

from __future__ import annotations

from typing import List, Tuple

from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.lines import verdict
from envdoctor.render.text import SECTIONS, _skipped
from envdoctor.style import Style


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(facts: Facts, findings: Tuple[Finding, ...]) -> str:
    s = facts.system
    driver = facts.driver.driver_version and f"driver {facts.driver.driver_version}"
    head = ", ".join(
        x for x in (s.os_name, s.arch, driver, facts.torch.version and f"torch {facts.torch.version}") if x
    )
    out: List[str] = [f"<details><summary>envdoctor {facts.envdoctor_version} report: {head}</summary>", ""]
    for title, rows_of in SECTIONS:
        if _skipped(facts, title):
            continue
        out += [f"**{title}**", "", "| | |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in rows_of(facts)]
        out.append("")
    out += ["**Findings**", ""]
    if not findings:
        out.append("none")
    for f in findings:
        out.append(f"- **{f.code}** ({f.severity}) {f.title}")
        out += [f"  - {ev}" for ev in f.evidence]
        if f.fix:
            out += ["  ```sh"] + [f"  {cmd}" for cmd in f.fix] + ["  ```"]
    out += ["", verdict(findings, Style(False)), "", f"<sub>collected {facts.collected_at}</sub>", "", "</details>"]
    return "\n".join(out) + "\n"

"""The versioned JSON report (``"schema": "envdoctor.report/1"``) of ``envdoctor check --json``.

Keys are stable within a schema version; new keys may be added. ``envdoctor/schemas/report-1.json``
is its JSON Schema (``envdoctor.documents`` lists every document), checked in the tests. Human
text output is not a contract; this is. Reading a report back is ``envdoctor.report.parse_report``
(also importable from here, as are ``dumps`` and ``ReportError``, for the callers that did).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Dict, List, Optional, TypedDict

from envdoctor.doctypes import FindingsSummary, Json
from envdoctor.documents import document, dumps
from envdoctor.facts import Facts
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.findings import summary as findings_summary
from envdoctor.redact import Redactor, mask_data
from envdoctor.report import ReportError, parse_report

SCHEMA = document("report").schema


class SuppressedOf(TypedDict):
    """check --suppress CODE: the codes asked for and the findings they hid (not in findings or summary)."""

    codes: List[Annotated[str, Json(pattern="^ED[0-9]{3}$")]]
    findings: List[Finding]


class _ReportKeys(TypedDict):
    schema: str
    envdoctor_version: str
    summary: FindingsSummary
    facts: Facts
    findings: List[Finding]


class ReportDocument(_ReportKeys, total=False):
    """A report read back (verify --baseline, recommend --from, fleet) must hold values a probe writes:
    the patterns below (envdoctor/report.py checks them); an area a report written before it lacks is
    not required. The base of a snapshot (snapshot-1.json)."""

    created_at: str
    collected_at: Annotated[str, Json(description="the older name of created_at, still read")]
    suppressed: SuppressedOf
    bench: Annotated[
        Optional[Dict[str, Any]],
        Json.raw(
            {"oneOf": [{"type": "null"}, {"$ref": "bench-1.json"}]},
            description="check --bench: the short benchmark (null when it could not run)",
        ),
    ]


#: written by check since created_at; saved reports still say collected_at
REPORT_WHEN = {
    "anyOf": [
        {"required": ["created_at"]},
        {"required": ["collected_at"], "description": "reports written before created_at"},
    ]
}


def report_document(
    facts: Facts, findings: Iterable[Finding], extra: dict[str, Any] | None = None, redactor: Redactor | None = None
) -> dict[str, Any]:
    """The report of ``facts`` and ``findings`` (``extra`` keys added at the top level), secrets
    masked, and with ``redactor`` (``--redact``) the personal details too."""
    findings = tuple(findings)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": facts.envdoctor_version,
        "created_at": facts.collected_at,
        "summary": findings_summary(findings),
        "facts": to_data(facts),
        "findings": [to_data(f) for f in findings],
    }
    if extra:
        doc.update(extra)
    doc = mask_data(doc)
    return redactor.data(doc) if redactor else doc


__all__ = ["SCHEMA", "ReportError", "dumps", "parse_report", "report_document"]

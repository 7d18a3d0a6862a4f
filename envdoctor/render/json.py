"""The versioned JSON report (``"schema": "envdoctor.report/1"``) of ``envdoctor check --json``.

Keys are stable within a schema version; new keys may be added. ``envdoctor/schemas/report-1.json``
is its JSON Schema (``envdoctor.documents`` lists every document), checked in the tests. Human
text output is not a contract; this is. Reading a report back is ``envdoctor.report.parse_report``
(also importable from here, as are ``dumps`` and ``ReportError``, for the callers that did).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envdoctor.documents import document, dumps
from envdoctor.facts import Facts
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding, exit_code
from envdoctor.redact import Redactor, mask_data
from envdoctor.report import ReportError, parse_report

SCHEMA = document("report").schema


def report_document(facts: Facts, findings: Iterable[Finding], extra: dict[str, Any] | None = None,
                    redactor: Redactor | None = None) -> dict[str, Any]:
    """The report of ``facts`` and ``findings`` (``extra`` keys added at the top level), secrets
    masked, and with ``redactor`` (``--redact``) the personal details too."""
    findings = tuple(findings)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": facts.envdoctor_version,
        "created_at": facts.collected_at,
        "summary": {
            "errors": sum(f.severity == "error" for f in findings),
            "warnings": sum(f.severity == "warning" for f in findings),
            "info": sum(f.severity == "info" for f in findings),
            "exit_code": exit_code(findings),
        },
        "facts": to_data(facts),
        "findings": [to_data(f) for f in findings],
    }
    if extra:
        doc.update(extra)
    doc = mask_data(doc)
    return redactor.data(doc) if redactor else doc


__all__ = ["SCHEMA", "ReportError", "dumps", "parse_report", "report_document"]

"""The versioned JSON report (``"schema": "envdoctor.report/1"``) and reading it back.

Keys are stable within a schema version; new keys may be added. ``envdoctor/schemas/report-1.json``
is the JSON Schema, checked in the tests. Human text output is not a contract; this is.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Optional, Tuple

from envdoctor.facts import Facts
from envdoctor.facts.serde import DataError, from_data, to_data
from envdoctor.findings import Finding, exit_code
from envdoctor.redact import Redactor, mask_data

SCHEMA = "envdoctor.report/1"


class ReportError(ValueError):
    """A saved report cannot be used (not JSON, not a report, or a schema this envdoctor does not know)."""


def report_document(facts: Facts, findings: Iterable[Finding], extra: Optional[Dict[str, Any]] = None,
                    redactor: Optional[Redactor] = None) -> Dict[str, Any]:
    findings = tuple(findings)
    doc: Dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": facts.envdoctor_version,
        "collected_at": facts.collected_at,
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


def dumps(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)


def parse_report(text: str, source: str = "report") -> Tuple[Facts, Tuple[Finding, ...], Dict[str, Any]]:
    """(facts, findings, whole document) from ``check --json`` output; ReportError when unusable."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ReportError(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ReportError(f"{source} is not an envdoctor report (no 'schema' key)")
    schema = doc["schema"]
    if schema != SCHEMA:
        raise ReportError(f"{source} has schema {schema!r}; this envdoctor reads {SCHEMA!r}")
    try:
        facts = from_data(Facts, doc.get("facts", {}), "facts")
        findings = tuple(from_data(Finding, f, f"findings[{i}]") for i, f in enumerate(doc.get("findings", [])))
    except (DataError, ValueError) as exc:
        raise ReportError(f"{source} does not have the shape of a report: {exc}") from None
    return facts, findings, doc

"""Helpers for the document tests (no tests here): validate a document against its JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from envdoctor import documents

ROOT = Path(__file__).parent.parent
#: what every document written now carries (documents.stamp)
HEADER = ("schema", "envdoctor_version", "created_at", "summary")


def validate(doc: dict[str, Any], kind: str) -> None:
    """jsonschema.ValidationError unless ``doc`` follows the schema of ``kind`` and names it: plain
    ``jsonschema.validate``, no registry (the schema is self-contained, as a stranger gets it)."""
    jsonschema.validate(doc, documents.schema(kind))
    assert doc["schema"] == documents.document(kind).schema


def validate_written(doc: dict[str, Any], kind: str, exit_code: int) -> None:
    """``validate``, and the header every document written now carries, with the command's exit code."""
    validate(doc, kind)
    assert list(doc)[:3] == list(HEADER[:3]) and doc["created_at"] and doc["envdoctor_version"]
    assert "collected_at" not in doc
    assert doc["summary"]["exit_code"] == exit_code


def recorded(path: Path) -> str:
    """A recorded command output without its ``$ command`` first line and ``[rc=N]`` last line."""
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[rc="):
        lines = lines[:-1]
    return "\n".join(lines)

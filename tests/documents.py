"""Helpers for the document tests (no tests here): validate a document against its JSON Schema."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

from envdoctor import documents

ROOT = Path(__file__).parent.parent


@functools.cache
def registry() -> Registry:
    """Every schema of envdoctor/schemas/ by its $id, so that one may refer to another."""
    resources = []
    for row in documents.DOCUMENTS:
        schema = documents.schema(row.kind)
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def validate(doc: dict[str, Any], kind: str) -> None:
    """jsonschema.ValidationError unless ``doc`` follows the schema of ``kind`` and names it."""
    jsonschema.Draft202012Validator(documents.schema(kind), registry=registry()).validate(doc)
    assert doc["schema"] == documents.document(kind).schema


def recorded(path: Path) -> str:
    """A recorded command output without its ``$ command`` first line and ``[rc=N]`` last line."""
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[rc="):
        lines = lines[:-1]
    return "\n".join(lines)

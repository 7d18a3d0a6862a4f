"""Every JSON document envdoctor writes, in one registry: its kind, its ``schema`` name, its JSON
Schema under ``envdoctor/schemas/``, and the one writer (:func:`dumps`) and reader
(:func:`read_document`) of them all.

A document names its own kind and version in its ``"schema"`` key (``"envdoctor.plan/1"``). Keys
are stable within a version; new keys may be added. A change that removes a key or changes its
meaning is a new version: a new row's ``schema``, a new schema file, and a migration from the old
version where envdoctor still reads it (``Document.migrations``).

Adding a document kind is one row in ``DOCUMENTS`` (kind, schema name ``envdoctor.<kind>/<n>``,
schema file ``<kind>-<n>.json``, the noun its messages use, the command that prints it) and that
one schema file. The tests validate what envdoctor emits against it, and fail for a schema name
in the code without a row, or a row without its file.

Reading one back (``verify --baseline``, ``recommend --from``)::

    read_document(text, "report", "before.json").data["facts"]
    read_document('{"schema": "envdoctor.bench/1"}', "report", "b.json")
    # DocumentError: b.json is an envdoctor.bench document, not a report or snapshot
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from envdoctor.parse.jsontext import JsonError, loads

Migration = Callable[[dict[str, Any]], dict[str, Any]]


class DocumentError(ValueError):
    """A document envdoctor cannot use: not JSON, bigger or deeper than the reader allows, not the
    kind asked for, a version this envdoctor cannot read, or values of the wrong shape. The message
    is one line that names the source and says which."""


class OtherKindError(DocumentError):
    """The text is a document of another kind than the ones asked for (``schema`` names it): a
    reader of many files (``fleet DIR``) may pass over it where a broken file is an error."""

    def __init__(self, message: str, schema: str) -> None:
        super().__init__(message)
        self.schema = schema


@dataclass(frozen=True)
class Document:
    """One kind of document: ``Document("plan", "envdoctor.plan/1", "plan-1.json", "plan", ...)``."""

    kind: str  # "report": the name the code asks for
    schema: str  # "envdoctor.report/1": the value of the document's "schema" key
    file: str  # "report-1.json": its JSON Schema, in envdoctor/schemas/
    noun: str  # "report": "... is not an envdoctor report"
    emitted_by: str  # "envdoctor check --json": where a person meets it
    accepts: str = ""  # "a report or snapshot": "... is an envdoctor.bench document, not <accepts>"
    #: older schema name -> function turning such a document into one of the next version
    migrations: Mapping[str, Migration] = field(default_factory=dict)

    @property
    def family(self) -> str:
        """``envdoctor.report``: the schema name without its version."""
        return self.schema.rpartition("/")[0]

    @property
    def version(self) -> int:
        return int(self.schema.rpartition("/")[2])


@dataclass(frozen=True)
class Loaded:
    """A document read back: its data (migrated to the current version) and where it came from."""

    kind: str
    data: dict[str, Any]
    migrated_from: str | None = None  # "envdoctor.report/0" when read through a migration


# --- migrations ---------------------------------------------------------------------------------------


def _report_from_0(doc: dict[str, Any]) -> dict[str, Any]:
    """``envdoctor.report/0``, the pre-release development format, to ``/1``.

    /0 had no summary, called the findings ``problems`` and kept ``host`` and ``created`` at the
    top level::

        {"schema": "envdoctor.report/0", "host": "gpu-01", "created": "2026-11-01T09:00:00Z",
         "envdoctor_version": "0.0.3", "facts": {...}, "problems": [{"code": "ED102", ...}]}
    """
    problems = doc.get("problems") or []
    if not isinstance(problems, list):
        raise DocumentError("'problems' is not a list")
    from envdoctor.findings import summary_of

    findings = [p for p in problems if isinstance(p, dict)]
    severities = [f.get("severity") for f in findings]
    out = {k: v for k, v in doc.items() if k not in ("problems", "host", "created")}
    out.update(
        {
            "schema": "envdoctor.report/1",
            "collected_at": doc.get("created"),
            "summary": summary_of(severities),
            "findings": findings,
            "snapshot": {
                "host": doc.get("host"),
                "created": doc.get("created"),
                "envdoctor_version": doc.get("envdoctor_version"),
            },
        }
    )
    return out


_REPORT_MIGRATIONS: Mapping[str, Migration] = {"envdoctor.report/0": _report_from_0}

#: Every document envdoctor writes. A snapshot is a report with two more keys, so it shares the
#: report's schema name (and its reader) and has a schema file of its own.
DOCUMENTS: tuple[Document, ...] = (
    Document(
        "report",
        "envdoctor.report/1",
        "report-1.json",
        "report",
        "envdoctor check --json",
        accepts="a report or snapshot",
        migrations=_REPORT_MIGRATIONS,
    ),
    Document(
        "snapshot",
        "envdoctor.report/1",
        "snapshot-1.json",
        "report",
        "envdoctor snapshot (a report plus 'snapshot' and, with --bench, 'bench')",
        accepts="a report or snapshot",
        migrations=_REPORT_MIGRATIONS,
    ),
    Document("plan", "envdoctor.plan/1", "plan-1.json", "plan", "envdoctor recommend --json"),
    Document("bench", "envdoctor.bench/1", "bench-1.json", "bench result", "envdoctor bench --json"),
    Document("verify", "envdoctor.verify/1", "verify-1.json", "verify result", "envdoctor verify --json"),
    Document("table", "envdoctor.table/1", "table-1.json", "table answer", "envdoctor table KIND [KEY] --json"),
    Document("stale", "envdoctor.stale/1", "stale-1.json", "staleness answer", "envdoctor table --stale --json"),
    Document("index", "envdoctor.index/1", "index-1.json", "index answer", "envdoctor index --json"),
    Document("burn", "envdoctor.burn/1", "burn-1.json", "burn result", "envdoctor burn --json"),
    Document("fit", "envdoctor.fit/1", "fit-1.json", "fit estimate", "envdoctor fit --json"),
    Document("topo", "envdoctor.topo/1", "topo-1.json", "topology", "envdoctor topo --json"),
    Document("comms", "envdoctor.comms/1", "comms-1.json", "comms result", "envdoctor comms --json"),
    Document("diag", "envdoctor.diag/1", "diag-1.json", "diag result", "envdoctor diag --json"),
    Document("profile", "envdoctor.profile/1", "profile-1.json", "profile result", "envdoctor profile --json"),
    Document(
        "fleet",
        "envdoctor.fleet/1",
        "fleet-1.json",
        "fleet report",
        "envdoctor fleet REPORT.json... --json, envdoctor fleet --gather --json",
    ),
    Document(
        "dockerfile",
        "envdoctor.dockerfile/1",
        "dockerfile-1.json",
        "Dockerfile lint",
        "envdoctor dockerfile [PATH] --json",
    ),
    Document("explain", "envdoctor.explain/1", "explain-1.json", "list of finding codes", "envdoctor explain --json"),
)
_BY_KIND = {d.kind: d for d in DOCUMENTS}
_VERSION = re.compile(r"[0-9]{1,6}")


def document(kind: str) -> Document:
    """The registry row of ``kind``; KeyError for a kind there is none of (a bug of the caller)."""
    return _BY_KIND[kind]


def _schema_file(name: str) -> dict[str, Any]:
    """One file of ``envdoctor/schemas/`` as written (read from the package, so it works from a
    wheel or a zipapp)."""
    from importlib.resources import files

    return dict(json.loads((files("envdoctor") / "schemas" / name).read_text(encoding="utf-8")))


def _refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` value under ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


#: What every document carries besides its ``schema`` (see :func:`stamp`). Not required by the
#: schemas, so that documents recorded before these keys existed still validate; every document
#: envdoctor writes now has them (tests/test_documents.py checks that).
HEADER: dict[str, Any] = {
    "properties": {
        "envdoctor_version": {"type": "string"},
        "created_at": {"type": ["string", "null"], "description": "ISO 8601, UTC (older reports: collected_at)"},
        "summary": {"type": "object", "properties": {"exit_code": {"type": "integer", "enum": [0, 1, 2, 3, 130, 141]}}},
    },
}


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind``, self-contained: every other schema file its ``$ref``s reach
    (``report-1.json#/$defs/error``) is embedded under ``$defs`` with its own ``$id``, so plain
    ``jsonschema.validate(doc, schema(kind))`` resolves every reference offline, and the common
    header (:data:`HEADER`) is added as one more ``allOf`` part. ``envdoctor schema KIND`` prints it."""
    own = document(kind).file
    top = _schema_file(own)
    embedded: dict[str, dict[str, Any]] = {}
    todo = [top]
    while todo:
        for ref in _refs(todo.pop()):
            name = ref.partition("#")[0]
            if name and name != own and name not in embedded:
                embedded[name] = _schema_file(name)
                todo.append(embedded[name])
    for part in embedded.values():
        part.pop("$schema", None)
    if embedded:
        top["$defs"] = {**top.get("$defs", {}), **{f"embedded:{name}": part for name, part in sorted(embedded.items())}}
    top["allOf"] = [*top.get("allOf", ()), HEADER]
    return top


def now_utc() -> str:
    """The ``created_at`` of a document written now: ``2026-12-01T18:59:02+00:00``."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def created_at(doc: Mapping[str, Any]) -> str | None:
    """When ``doc`` was written: ``created_at``, or the ``collected_at`` of reports and topologies
    written before the one name (a saved report still reads)."""
    for key in ("created_at", "collected_at"):
        value = doc.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def stamp(doc: Mapping[str, Any], exit_code: int) -> dict[str, Any]:
    """``doc`` as every document is written: ``schema``, ``envdoctor_version``, ``created_at``
    first (``collected_at`` renamed; now where it had neither), then its own keys, and
    ``summary.exit_code`` set to the exit code of the command that prints it::

        stamp({"schema": "envdoctor.fit/1", "model": "x"}, 1)
        # {"schema": "envdoctor.fit/1", "envdoctor_version": "0.1.0", "created_at": "2026-...",
        #  "model": "x", "summary": {"exit_code": 1}}
    """
    from envdoctor import __version__

    out: dict[str, Any] = {
        "schema": doc.get("schema"),
        "envdoctor_version": doc.get("envdoctor_version") or __version__,
        "created_at": created_at(doc) or now_utc(),
    }
    out.update((k, v) for k, v in doc.items() if k not in out and k != "collected_at")
    summary = out.get("summary")
    out["summary"] = {**(summary if isinstance(summary, dict) else {}), "exit_code": exit_code}
    return out


def dumps(doc: Mapping[str, Any]) -> str:
    """The one way envdoctor prints or writes a document: indented, keys in their order, UTF-8 as is
    (a byte that is not UTF-8, from a path or a variable, written as its escape: ``caf\\xe9``)."""
    from envdoctor.escape import escape_json

    return escape_json(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False))


# --- reading -------------------------------------------------------------------------------------------


def _parse(text: str, row: Document, source: str) -> dict[str, Any]:
    try:
        data = loads(text)
    except JsonError as exc:
        message = str(exc)
        if message.startswith("not valid JSON"):
            line = re.search(r"at line (\d+)", message)
            raise DocumentError(
                f"{source} is not valid JSON (cut short or damaged near line {line.group(1) if line else '?'})"
            ) from None
        raise DocumentError(f"{source} cannot be read as JSON: {message}") from None
    if not isinstance(data, dict):
        raise DocumentError(f"{source} is not an envdoctor {row.noun} (not a JSON object)")
    return data


def _refuse_other(schema_name: str, row: Document, source: str) -> None:
    """DocumentError unless ``schema_name`` is of ``row``'s family."""
    family = schema_name.rpartition("/")[0]
    if family == row.family:
        return
    accepts = row.accepts or f"an envdoctor {row.noun}"
    if schema_name.startswith("envdoctor."):
        raise OtherKindError(f"{source} is an {family or schema_name} document, not {accepts}", schema_name)
    raise OtherKindError(f"{source} is a document of schema {schema_name!r}, not {accepts}", schema_name)


def _migrate(data: dict[str, Any], row: Document, source: str) -> tuple[dict[str, Any], str | None]:
    original = name = data["schema"]
    tail = name.rpartition("/")[2]
    if _VERSION.fullmatch(tail) and int(tail) > row.version:
        raise DocumentError(
            f"{source} was written by a newer envdoctor (schema {name}); this envdoctor reads "
            f"{row.schema} and older: pip install -U envdoctor"
        )
    seen = set()
    while name != row.schema:
        step = row.migrations.get(name)
        if step is None or name in seen:
            raise DocumentError(
                f"{source} has schema {name!r}, which this envdoctor cannot read (it reads {row.schema})"
            )
        seen.add(name)
        try:
            data = step(data)
        except (DocumentError, KeyError, TypeError, ValueError) as exc:
            raise DocumentError(f"{source} (schema {name}) cannot be converted: {exc}") from None
        name = data.get("schema")
        if not isinstance(name, str):
            raise DocumentError(f"{source} (schema {original}) cannot be converted: no schema after a step")
    return data, (original if original != row.schema else None)


def read_document(text: str, kind: str, source: str) -> Loaded:
    """The document of ``kind`` in ``text`` (read from ``source``, named in messages), migrated to
    the version this envdoctor writes.

    Only :class:`DocumentError` is raised, with one line that names ``source``: not JSON, too big
    or too deep (the bounded reader ``envdoctor.parse.jsontext``), not an object, no ``schema``
    key, another kind, a newer version, or a version there is no migration from. The caller then
    decodes the data it needs (``envdoctor.report.parse_report`` for reports) and checks values.
    """
    row = document(kind)
    data = _parse(text, row, source)
    name = data.get("schema")
    if not isinstance(name, str):
        raise DocumentError(f"{source} is not an envdoctor {row.noun} (no 'schema' key)")
    _refuse_other(name, row, source)
    data, migrated_from = _migrate(data, row, source)
    return Loaded(kind, data, migrated_from)


def read_any(text: str, kinds: Sequence[str], source: str) -> Loaded:
    """The document in ``text`` if it is of one of ``kinds`` (the first whose family matches its
    ``schema``: "report" before "snapshot"), read as :func:`read_document` reads it; JSON is
    parsed once. :class:`OtherKindError` for a document of another kind, :class:`DocumentError`
    for anything else::

        read_any(text, ("report", "bench"), "n1/bench.json").kind     # "bench"
    """
    rows = [document(k) for k in kinds]
    nouns = list(dict.fromkeys(r.noun for r in rows))
    noun = nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " or " + nouns[-1]
    data = _parse(text, rows[0], source)
    name = data.get("schema")
    if not isinstance(name, str):
        raise DocumentError(f"{source} is not an envdoctor {noun} (no 'schema' key)")
    family = name.rpartition("/")[0]
    row = next((r for r in rows if r.family == family), None)
    if row is None:
        what = f"an {family} document" if name.startswith("envdoctor.") else f"a document of schema {name!r}"
        raise OtherKindError(f"{source} is {what}, not an envdoctor {noun}", name)
    data, migrated_from = _migrate(data, row, source)
    return Loaded(row.kind, data, migrated_from)


__all__ = [
    "DOCUMENTS",
    "HEADER",
    "Document",
    "DocumentError",
    "Loaded",
    "OtherKindError",
    "created_at",
    "document",
    "dumps",
    "now_utc",
    "read_any",
    "read_document",
    "schema",
    "stamp",
]

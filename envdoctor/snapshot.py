"""Snapshots: saved check reports to compare against after a driver upgrade (``envdoctor verify``).

A snapshot IS an ``envdoctor.report/1`` document (``check --json``) plus two top-level extras:
``"snapshot": {"host", "created", "envdoctor_version"}`` and, with ``--bench``, ``"bench"``
(a ``BenchResult`` as ``serde.to_data`` writes it). So ``check --json > file`` is a usable
baseline too.

The store is ``user_dir("state")/snapshots/`` (``~/.local/state/envdoctor/snapshots``): one file
per snapshot named by its UTC time, never overwritten, and a small file ``latest`` holding the
name of the newest (a file, not a symlink, so it survives copying and odd filesystems)::

    2026-11-29T17-30-05Z.json
    2026-11-29T17-30-05Z-2.json      # a second snapshot in the same second
    latest                           # "2026-11-29T17-30-05Z-2.json\\n"

>>> path = save(doc, store_dir())          # writes the file, then moves the pointer
>>> load(latest(store_dir())).facts.driver.driver_version
'580.159.04'
"""

from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple

from envdoctor import __version__
from envdoctor.atomic import user_dir, write_atomic
from envdoctor.facts import Facts
from envdoctor.facts.bench import BenchResult
from envdoctor.facts.serde import DataError, from_data, to_data
from envdoctor.findings import Finding
from envdoctor.render.json import SCHEMA, ReportError, dumps, parse_report, report_document

LATEST = "latest"
SUFFIX = ".json"
FAMILY = "envdoctor.report/"
#: How to take a baseline, for the messages that need one.
HOW = "envdoctor snapshot"

_NAME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)(?:-(\d+))?\.json$")


class SnapshotError(ValueError):
    """A snapshot cannot be used or written; the message is one line a person can act on."""


@dataclass(frozen=True)
class Snapshot:
    """One baseline read back: the report's facts and findings, its extras, where it came from."""

    path: Path
    facts: Facts
    findings: Tuple[Finding, ...]
    doc: Dict[str, Any]
    created: Optional[str] = None              # "2026-11-29T17:30:05Z"
    host: Optional[str] = None                 # the host name it was taken on
    bench: Optional[BenchResult] = None
    bench_error: Optional[str] = None          # the "bench" section is there but unreadable
    migrated_from: Optional[str] = None        # "envdoctor.report/0" when read through a migration


@dataclass(frozen=True)
class SnapshotInfo:
    """One line of ``envdoctor snapshot --list``."""

    name: str
    path: Path
    created: Optional[str] = None
    driver: Optional[str] = None
    torch: Optional[str] = None
    gpus: Tuple[str, ...] = ()
    bench: bool = False
    latest: bool = False
    skipped: Tuple[str, ...] = ()              # areas not inspected ("torch")
    error: Optional[str] = None                # unreadable: why


# --- where ---------------------------------------------------------------------------------------

def store_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    """``$ENVDOCTOR_STATE_DIR`` or ``$XDG_STATE_HOME/envdoctor`` or ``~/.local/state/envdoctor``, + ``/snapshots``."""
    return user_dir("state", dict(env) if env is not None else None) / "snapshots"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def iso(moment: datetime.datetime) -> str:
    """``2026-11-29T17:30:05Z``."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_name(moment: datetime.datetime, n: int = 1) -> str:
    """``2026-11-29T17-30-05Z.json``; ``...Z-2.json`` for the second one in that second."""
    stem = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H-%M-%SZ")
    return f"{stem}{SUFFIX}" if n <= 1 else f"{stem}-{n}{SUFFIX}"


def _order(path: Path) -> Tuple[str, int, str]:
    m = _NAME.match(path.name)
    if m:
        return m.group(1), int(m.group(2) or 1), path.name
    return "", 0, path.name   # other names sort first (oldest)


def snapshot_files(directory: Path) -> Tuple[Path, ...]:
    """The ``*.json`` files of the store, oldest first (by the time in their name)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return ()
    files = [directory / n for n in names if n.endswith(SUFFIX) and not n.startswith(".")]
    return tuple(sorted((p for p in files if p.is_file()), key=_order))


def latest(directory: Path) -> Optional[Path]:
    """The file ``latest`` names; else (pointer missing, damaged or dangling) the newest file; else None."""
    try:
        name = (directory / LATEST).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        name = ""
    if name and "/" not in name and os.sep not in name and name not in (".", ".."):
        target = directory / name
        if target.is_file():
            return target
    files = snapshot_files(directory)
    return files[-1] if files else None


# --- writing -------------------------------------------------------------------------------------

def snapshot_document(facts: Facts, findings: Iterable[Finding], bench: Optional[BenchResult] = None,
                      created: Optional[str] = None) -> Dict[str, Any]:
    """The report of ``check --json`` plus ``"snapshot"`` (host, created, version) and ``"bench"``.

    Secrets are masked by ``report_document``; the host name stays (verify needs it).
    """
    extra: Dict[str, Any] = {"snapshot": {
        "host": facts.system.hostname,
        "created": created or iso(utc_now()),
        "envdoctor_version": __version__,
    }}
    if bench is not None:
        extra["bench"] = to_data(bench)
    return report_document(facts, findings, extra)


def save(doc: Dict[str, Any], directory: Path, moment: Optional[datetime.datetime] = None) -> Path:
    """Write ``doc`` as a new file of the store, then point ``latest`` at it; return the file.

    Never overwrites: a name already taken gets ``-2``, ``-3``... Both writes are atomic, and the
    pointer moves only after the snapshot is complete, so a crash leaves the old ``latest`` valid.
    """
    moment = moment or utc_now()
    directory.mkdir(parents=True, exist_ok=True)
    n = 1
    while os.path.lexists(directory / file_name(moment, n)):
        n += 1
    path = directory / file_name(moment, n)
    try:
        write_atomic(path, dumps(doc) + "\n")
        write_atomic(directory / LATEST, path.name + "\n")
    except OSError as exc:
        raise SnapshotError(f"cannot write the snapshot in {directory}: {exc.strerror or exc}") from None
    return path


def write_to(doc: Dict[str, Any], path: Path, force: bool = False) -> Path:
    """``snapshot -o FILE``: exactly there, atomically; an existing FILE only with ``force``."""
    if path.is_dir():
        raise SnapshotError(f"{path} is a folder; give a file name, e.g. {path / 'before-upgrade.json'}")
    if os.path.lexists(path) and not force:
        raise SnapshotError(f"{path} already exists; choose another name or pass --force to replace it")
    try:
        return write_atomic(path, dumps(doc) + "\n")
    except OSError as exc:
        raise SnapshotError(f"cannot write {path}: {exc.strerror or exc}") from None


# --- reading -------------------------------------------------------------------------------------

def _from_0(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``envdoctor.report/0``, the pre-release development format, to ``/1``.

    /0 had no summary, called the findings ``problems`` and kept ``host`` and ``created`` at the
    top level::

        {"schema": "envdoctor.report/0", "host": "gpu-01", "created": "2026-11-01T09:00:00Z",
         "envdoctor_version": "0.0.3", "facts": {...}, "problems": [{"code": "ED102", ...}]}
    """
    problems = doc.get("problems") or []
    if not isinstance(problems, list):
        raise ReportError("'problems' is not a list")
    findings = [p for p in problems if isinstance(p, dict)]
    severities = [f.get("severity") for f in findings]
    out = {k: v for k, v in doc.items() if k not in ("problems", "host", "created")}
    out.update({
        "schema": SCHEMA,
        "collected_at": doc.get("created"),
        "summary": {"errors": severities.count("error"), "warnings": severities.count("warning"),
                    "info": severities.count("info"),
                    "exit_code": 1 if "error" in severities else 0},
        "findings": findings,
        "snapshot": {"host": doc.get("host"), "created": doc.get("created"),
                     "envdoctor_version": doc.get("envdoctor_version")},
    })
    return out


#: schema -> function turning a document of that schema into one of the next; applied in a chain
#: until the document is ``SCHEMA``. Add one entry per schema version ever released.
MIGRATIONS: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
    "envdoctor.report/0": _from_0,
}


def _version(schema: str) -> Optional[int]:
    tail = schema[len(FAMILY):] if schema.startswith(FAMILY) else ""
    return int(tail) if tail.isdigit() else None


def migrate(doc: Dict[str, Any], source: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """(document of ``SCHEMA``, the schema it was written in when not that); SnapshotError if unknown."""
    schema = doc.get("schema")
    if not isinstance(schema, str):
        raise SnapshotError(f"{source} is not an envdoctor report (no 'schema' key); take a baseline with: {HOW}")
    original = schema
    if not schema.startswith(FAMILY):
        kind = schema.split("/")[0] if schema.startswith("envdoctor.") else None
        what = f"an {kind} document" if kind else f"a document of schema {schema!r}"
        raise SnapshotError(f"{source} is {what}, not a report or snapshot; take a baseline with: {HOW}")
    current, have = _version(SCHEMA), _version(schema)
    if have is not None and current is not None and have > current:
        raise SnapshotError(f"{source} was written by a newer envdoctor (schema {schema}); this one reads "
                            f"{SCHEMA} and older: pip install -U envdoctor, or take a new baseline with: {HOW}")
    seen = set()
    while schema != SCHEMA:
        step = MIGRATIONS.get(schema)
        if step is None or schema in seen:
            raise SnapshotError(f"{source} has schema {schema!r}, which this envdoctor cannot read; "
                                f"take a new baseline with: {HOW}")
        seen.add(schema)
        try:
            doc = step(doc)
        except (ReportError, KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"{source} (schema {schema}) cannot be converted: {exc}") from None
        schema = doc.get("schema")  # type: ignore[assignment]
    return doc, (original if original != SCHEMA else None)


def read_text(path: Path) -> str:
    """The file's text, or SnapshotError saying in one line why it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SnapshotError(f"{path} does not exist; take a baseline with: {HOW}") from None
    except IsADirectoryError:
        raise SnapshotError(f"{path} is a folder, not a snapshot file") from None
    except PermissionError:
        raise SnapshotError(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.strip():
        raise SnapshotError(f"{path} is empty (an interrupted copy?); take a new baseline with: {HOW}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{path} is not a text file, so not an envdoctor snapshot") from None


def parse(text: str, path: Path) -> Snapshot:
    """A Snapshot from the text of a report or snapshot file (migrated when older)."""
    source = str(path)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        raise SnapshotError(f"{source} is not valid JSON (cut short or damaged near line {line}); "
                            f"take a new baseline with: {HOW}") from None
    if not isinstance(doc, dict):
        raise SnapshotError(f"{source} is not an envdoctor report (not a JSON object); take a baseline with: {HOW}")
    doc, migrated_from = migrate(doc, source)
    try:
        facts, findings, doc = parse_report(json.dumps(doc), source)
    except ReportError as exc:
        raise SnapshotError(str(exc)) from None
    meta = doc.get("snapshot") if isinstance(doc.get("snapshot"), dict) else {}
    bench, bench_error = None, None
    if doc.get("bench") is not None:
        try:
            bench = from_data(BenchResult, doc["bench"], "bench")
        except (DataError, ValueError) as exc:
            bench_error = f"the bench section of {source} is unreadable: {exc}"
    return Snapshot(
        path=path, facts=facts, findings=findings, doc=doc,
        created=_text(meta.get("created")) or facts.collected_at,
        host=_text(meta.get("host")) or facts.system.hostname,
        bench=bench, bench_error=bench_error, migrated_from=migrated_from,
    )


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def load(path: Path) -> Snapshot:
    """Read a baseline; SnapshotError (one line) when it is missing, damaged or of an unknown schema."""
    return parse(read_text(path), path)


def describe(snap: Snapshot) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(driver, torch, GPU names) of a snapshot, for one-line summaries."""
    d, t = snap.facts.driver, snap.facts.torch
    driver = d.driver_version or d.userspace_version or d.kernel_module_version
    return driver, t.version, tuple(g.name or f"GPU {g.index}" for g in d.gpus)


def list_snapshots(directory: Path) -> Tuple[SnapshotInfo, ...]:
    """Every snapshot of the store, oldest first; unreadable ones are listed with the reason."""
    newest = latest(directory)
    out = []
    for path in snapshot_files(directory):
        is_latest = newest is not None and path.name == newest.name
        try:
            snap = load(path)
        except SnapshotError as exc:
            out.append(SnapshotInfo(path.name, path, latest=is_latest, error=str(exc)))
            continue
        driver, torch, gpus = describe(snap)
        out.append(SnapshotInfo(path.name, path, snap.created, driver, torch, gpus,
                                bench=snap.bench is not None, latest=is_latest, skipped=snap.facts.skipped))
    return tuple(out)

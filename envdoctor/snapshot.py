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

Writing one and reading the newest back::

    path = save(doc, store_dir())             # writes the file, then moves the pointer
    load(latest(store_dir())).facts.driver.driver_version     # '580.159.04'

The JSON Schema of the file is ``envdoctor/schemas/snapshot-1.json`` (``envdoctor.documents``).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Dict, Optional, TypedDict

from envdoctor import __version__
from envdoctor.atomic import user_dir, what_it_is, write_atomic
from envdoctor.bench.facts import BenchResult
from envdoctor.doctypes import Json
from envdoctor.documents import DocumentError, dumps, read_document
from envdoctor.facts import Facts
from envdoctor.facts.serde import DataError, from_data, to_data
from envdoctor.findings import Finding
from envdoctor.inputs import InputError, read_input
from envdoctor.render.json import report_document
from envdoctor.report import decode

LATEST = "latest"
SUFFIX = ".json"
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
    findings: tuple[Finding, ...]
    doc: dict[str, Any]
    created: str | None = None  # "2026-11-29T17:30:05Z"
    host: str | None = None  # the host name it was taken on
    bench: BenchResult | None = None
    bench_error: str | None = None  # the "bench" section is there but unreadable
    migrated_from: str | None = None  # "envdoctor.report/0" when read through a migration


@dataclass(frozen=True)
class SnapshotInfo:
    """One line of ``envdoctor snapshot --list``."""

    name: str
    path: Path
    created: str | None = None
    driver: str | None = None
    torch: str | None = None
    gpus: tuple[str, ...] = ()
    bench: bool = False
    latest: bool = False
    skipped: tuple[str, ...] = ()  # areas not inspected ("torch")
    error: str | None = None  # unreadable: why


# --- where ---------------------------------------------------------------------------------------


def store_dir(env: Mapping[str, str] | None = None) -> Path:
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


def _order(path: Path) -> tuple[str, int, str]:
    m = _NAME.match(path.name)
    if m:
        return m.group(1), int(m.group(2) or 1), path.name
    return "", 0, path.name  # other names sort first (oldest)


def snapshot_files(directory: Path) -> tuple[Path, ...]:
    """The ``*.json`` files of the store, oldest first (by the time in their name)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return ()
    files = [directory / n for n in names if n.endswith(SUFFIX) and not n.startswith(".")]
    return tuple(sorted((p for p in files if os.path.isfile(p)), key=_order))


def latest(directory: Path) -> Path | None:
    """The file ``latest`` names; else (pointer missing, damaged or dangling) the newest file; else None."""
    try:
        name = read_input(directory / LATEST, max_bytes=4096).strip()
    except InputError:
        name = ""
    if name and "/" not in name and os.sep not in name and name not in (".", ".."):
        target = directory / name
        if os.path.isfile(target):
            return target
    files = snapshot_files(directory)
    return files[-1] if files else None


# --- writing -------------------------------------------------------------------------------------


class SnapshotMeta(TypedDict):
    """Where and when the snapshot was taken, by which envdoctor."""

    host: Optional[str]
    created: Annotated[str, Json(pattern="^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")]
    envdoctor_version: str


class _SnapshotKeys(TypedDict):
    snapshot: SnapshotMeta


class SnapshotDocument(_SnapshotKeys, total=False):
    """A report (report-1.json) plus 'snapshot' and, with --bench, 'bench'; written into
    ~/.local/state/envdoctor/snapshots/ (or -o FILE). `verify --baseline` reads a plain report too."""

    bench: Annotated[Dict[str, Any], Json.raw({"$ref": "bench-1.json"})]


#: a snapshot is a report first
SNAPSHOT_IS_A_REPORT = {"allOf": [{"$ref": "report-1.json"}]}


def snapshot_document(
    facts: Facts, findings: Iterable[Finding], bench: BenchResult | None = None, created: str | None = None
) -> dict[str, Any]:
    """The report of ``check --json`` plus ``"snapshot"`` (host, created, version) and ``"bench"``.

    Secrets are masked by ``report_document``; the host name stays (verify needs it).
    """
    extra: SnapshotDocument = {
        "snapshot": {
            "host": facts.system.hostname,
            "created": created or iso(utc_now()),
            "envdoctor_version": __version__,
        }
    }
    if bench is not None:
        extra["bench"] = to_data(bench)
    return report_document(facts, findings, dict(extra))


def save(doc: dict[str, Any], directory: Path, moment: datetime.datetime | None = None) -> Path:
    """Write ``doc`` as a new file of the store, then point ``latest`` at it; return the file.

    Never overwrites: a name already taken gets ``-2``, ``-3``... Both writes are atomic, and the
    pointer moves only after the snapshot is complete, so a crash leaves the old ``latest`` valid.
    """
    moment = moment or utc_now()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SnapshotError(
            f"cannot create the snapshot folder {directory}: {exc.strerror or exc} "
            "(ENVDOCTOR_STATE_DIR or XDG_STATE_HOME choose another, or use -o FILE)"
        ) from None
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


def _unwritable(folder: Path) -> str | None:
    """Why files cannot be made in ``folder`` (created first when missing), or None."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent  # the folder that would hold the new folders
    if not os.path.isdir(existing):
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"permission denied in {existing}"
    return None


def check_store(directory: Path) -> None:
    """SnapshotError when snapshots cannot be saved in ``directory`` (checked before the inspection)."""
    why = _unwritable(directory)
    if why:
        raise SnapshotError(
            f"cannot save snapshots in {directory}: {why} (ENVDOCTOR_STATE_DIR or XDG_STATE_HOME "
            "choose another folder, or use -o FILE)"
        )


def check_target(path: Path, force: bool = False) -> None:
    """SnapshotError when ``snapshot -o path`` cannot write there (checked before the inspection
    too, so nobody waits for a write that must fail): a folder, an existing file without
    ``force``, anything but a regular file even with it, a folder that cannot be written."""
    if os.path.isdir(path):
        raise SnapshotError(f"{path} is a folder; give a file name, e.g. {path / 'before-upgrade.json'}")
    try:
        kind = what_it_is(os.stat(path).st_mode)
    except OSError:
        kind = None
    if kind is not None:  # first: --force would not help, only a regular file is replaced
        raise SnapshotError(
            f"cannot write {path}: it is {kind}, not a regular file (envdoctor replaces only regular files)"
        )
    if os.path.lexists(path) and not force:
        raise SnapshotError(f"{path} already exists; choose another name or pass --force to replace it")
    if os.path.lexists(path.parent) and not os.path.isdir(path.parent):
        raise SnapshotError(f"cannot write {path}: {path.parent} is not a folder")
    if not os.path.isdir(path.parent):
        raise SnapshotError(
            f"cannot write {path}: the folder {path.parent} does not exist (-o creates no "
            "folders; make it first or give another path)"
        )
    why = _unwritable(path.parent)
    if why:
        raise SnapshotError(f"cannot write {path}: {why}")


def write_to(doc: dict[str, Any], path: Path, force: bool = False) -> Path:
    """``snapshot -o FILE``: exactly there, atomically; an existing FILE only with ``force``."""
    check_target(path, force)
    try:
        return write_atomic(path, dumps(doc) + "\n")
    except OSError as exc:
        raise SnapshotError(f"cannot write {path}: {exc.strerror or exc}") from None


# --- reading -------------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """The file's text (``envdoctor.inputs.read_input``: a regular file, bounded), or SnapshotError."""
    try:
        text = read_input(path)
    except InputError as exc:
        hint = f"; take a baseline with: {HOW}" if exc.reason.startswith("does not exist") else ""
        raise SnapshotError(f"{exc}{hint}") from None
    if not text.strip():
        raise SnapshotError(f"{path} is empty (an interrupted copy?); take a new baseline with: {HOW}")
    return text


def parse(text: str, path: Path) -> Snapshot:
    """A Snapshot from the text of a report or snapshot file (migrated when older)."""
    source = str(path)
    try:
        loaded = read_document(text, "snapshot", source)
        facts, findings = decode(loaded.data, source)
    except DocumentError as exc:
        raise SnapshotError(f"{exc}; take a new baseline with: {HOW}") from None
    doc = loaded.data
    meta = doc.get("snapshot")
    meta = meta if isinstance(meta, dict) else {}
    bench, bench_error = None, None
    if doc.get("bench") is not None:
        try:
            bench = from_data(BenchResult, doc["bench"], "bench")
        except (DataError, ValueError) as exc:
            bench_error = f"the bench section of {source} is unreadable: {exc}"
    return Snapshot(
        path=path,
        facts=facts,
        findings=findings,
        doc=doc,
        created=_text(meta.get("created")) or facts.collected_at,
        host=_text(meta.get("host")) or facts.system.hostname,
        bench=bench,
        bench_error=bench_error,
        migrated_from=loaded.migrated_from,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def load(path: Path) -> Snapshot:
    """Read a baseline; SnapshotError (one line) when it is missing, damaged or of an unknown schema."""
    return parse(read_text(path), path)


def describe(snap: Snapshot) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(driver, torch, GPU names) of a snapshot, for one-line summaries."""
    d, t = snap.facts.driver, snap.facts.torch
    driver = d.driver_version or d.userspace_version or d.kernel_module_version
    return driver, t.version, tuple(g.name or f"GPU {g.index}" for g in d.gpus)


def list_snapshots(directory: Path) -> tuple[SnapshotInfo, ...]:
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
        out.append(
            SnapshotInfo(
                path.name,
                path,
                snap.created,
                driver,
                torch,
                gpus,
                bench=snap.bench is not None,
                latest=is_latest,
                skipped=snap.facts.skipped,
            )
        )
    return tuple(out)

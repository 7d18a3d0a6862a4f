"""Files, folders and globs named on the command line -> the documents of each node.

Every file is read by ``envdoctor.inputs.read_input`` (regular files only, bounded, never
blocks) and ``envdoctor.documents.read_any`` (one bounded parse, the kind from its ``schema``).
Documents are grouped by node; which node a document belongs to is decided in this order:

1. a ``node`` key at the top of the document (``{"schema": ..., "node": "gpu-07", ...}``) groups
   every document that carries the same value, wherever it lies;
2. a folder holding at most one document of each kind is one node
   (``reports/gpu-07/check.json`` + ``reports/gpu-07/bench.json``);
3. otherwise the file name up to its first dot is the node (``gpu-07.json``, ``gpu-07.bench.json``).

The node's *name* is, best first: the ``node`` key, the host name in its report, then the folder
or file name. Where two nodes would get the same name (containers all called ``vm``), both fall
back to the next candidate (their folder or file name), and a note says so.
"""

from __future__ import annotations

import glob
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from envdoctor.documents import DOCUMENTS, DocumentError, OtherKindError, read_any
from envdoctor.fleet.facts import Document, NameSource, NodeInput
from envdoctor.inputs import InputError, read_input

#: Document kinds the fleet reads, of those envdoctor has (burn, comms and topo join when they land).
WANTED = ("report", "bench", "burn", "comms", "topo")
KINDS: Tuple[str, ...] = tuple(k for k in WANTED if any(d.kind == k for d in DOCUMENTS))
#: The most files one merge reads from folders (a typo of ``/`` must not read the whole disk).
MAX_FILES = 100_000
#: Host names that do not tell nodes apart.
ANONYMOUS_HOSTS = frozenset({"", "<host>", "localhost", "localhost.localdomain"})


class LoadError(ValueError):
    """A path on the command line that names nothing (a usage error: exit 2)."""


@dataclass(frozen=True)
class Skipped:
    """A file that is not a node's document: an unreadable one is a finding, another kind a note."""

    path: str
    reason: str
    unreadable: bool


def expand_paths(args: Sequence[str], max_files: int = MAX_FILES) -> List[Path]:
    """The files named by ``args``: files as given, folders searched for ``*.json`` (hidden folders
    and symlinked folders are not entered), and glob patterns (``reports/*/check.json``, ``**``)
    the shell left unexpanded. LoadError for an argument that names nothing."""
    files: List[Path] = []
    seen = set()

    def add(path: Path) -> None:
        key = os.path.normpath(str(path))
        if key not in seen:
            seen.add(key)
            files.append(path)
            if len(files) > max_files:
                raise LoadError(
                    f"more than {max_files} files under {', '.join(args)[:200]}: name the folders that hold the reports"
                )

    for arg in args:
        try:
            _expand(arg, add)
        except LoadError:
            raise
        except (OSError, ValueError) as exc:  # a NUL, a name past NAME_MAX: no file can be named so
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            shown = arg if len(arg) <= 80 else f"{arg[:40]}... ({len(arg)} characters)"
            raise LoadError(f"{shown!r} names no file: {why}") from None
    return files


def _expand(arg: str, add: Callable[[Path], None]) -> None:
    """Add the files that one command-line argument names (see :func:`expand_paths`)."""
    path = Path(arg)
    if path.is_dir():
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.endswith(".json") and not name.startswith("."):
                    add(Path(root) / name)
    elif path.exists() or path.is_symlink():
        add(path)
    elif any(ch in arg for ch in "*?["):
        matches = sorted(glob.glob(arg, recursive=True))
        if not matches:
            raise LoadError(f"{arg} matches no file")
        for match in matches:
            if Path(match).is_dir():
                raise LoadError(f"{arg} matches the folder {match}: name the folder or the files, not both")
            add(Path(match))
    else:
        raise LoadError(f"{arg} does not exist")


def read_files(files: Sequence[Path]) -> Tuple[List[Document], List[Skipped]]:
    """Each file as a document, or the reason it is not one."""
    docs: List[Document] = []
    skipped: List[Skipped] = []
    for path in files:
        source = str(path)
        try:
            loaded = read_any(read_input(path), KINDS, source)
        except OtherKindError as exc:
            skipped.append(Skipped(source, str(exc), False))
            continue
        except (InputError, DocumentError) as exc:
            skipped.append(Skipped(source, str(exc), True))
            continue
        docs.append(Document(loaded.kind, loaded.data, source))
    return docs, skipped


def _stem(source: str) -> str:
    return Path(source).name.split(".", 1)[0] or Path(source).name


def _folder(source: str) -> str:
    return os.path.dirname(os.path.abspath(source))


def _when(doc: Document) -> str:
    value = doc.data.get("collected_at") or doc.data.get("created_at") or ""
    return value if isinstance(value, str) else ""


def group(docs: Sequence[Document], skipped: Sequence[Skipped] = ()) -> List[NodeInput]:
    """Documents grouped by node, with the names each node may take (see the module's docstring).

    A file that could not be read joins the node of its folder (or file name), so the node is
    named with what failed; a node with nothing readable has the status "unreadable".
    """
    docs = list(docs) + [Document("unreadable", {"reason": s.reason}, s.path) for s in skipped if s.unreadable]
    groups: Dict[Tuple[str, ...], List[Document]] = defaultdict(list)
    names: Dict[Tuple[str, ...], List[Tuple[str, NameSource]]] = {}
    by_folder: Dict[str, List[Document]] = defaultdict(list)
    for doc in docs:
        node = doc.data.get("node")
        if isinstance(node, str) and node.strip():
            key: Tuple[str, ...] = ("node", node.strip()[:200])
            groups[key].append(doc)
            names[key] = [(node.strip()[:200], "node key")]
        else:
            by_folder[_folder(doc.source)].append(doc)
    for folder, members in by_folder.items():
        kinds = [d.kind if d.kind != "snapshot" else "report" for d in members]
        if len(kinds) == len(set(kinds)):
            key = ("folder", folder)
            groups[key].extend(members)
            names[key] = [(os.path.basename(folder) or folder, "folder")]
            continue
        for doc in members:
            key = ("file", folder, _stem(doc.source))
            groups[key].append(doc)
            names[key] = [(_stem(doc.source), "file name")]
    nodes = []
    for key, members in groups.items():
        keep: Dict[str, Document] = {}
        notes = []
        bad = tuple((d.source, str(d.data["reason"])) for d in members if d.kind == "unreadable")
        for doc in sorted((d for d in members if d.kind != "unreadable"), key=_when, reverse=True):
            kind = "report" if doc.kind == "snapshot" else doc.kind
            if kind in keep:
                notes.append(f"{doc.source}: an older {kind} of the same node than {keep[kind].source}; not used")
            else:
                keep[kind] = doc
        ordered = tuple(sorted(keep.values(), key=lambda d: d.source))
        nodes.append(
            NodeInput(
                ordered, tuple(names[key]), "reported" if ordered else "unreadable", notes=tuple(notes), unreadable=bad
            )
        )
    return sorted(nodes, key=lambda n: min([d.source for d in n.documents] + [p for p, _ in n.unreadable]))


def hostname_of(node: NodeInput) -> Optional[str]:
    """The host name the node's report gives, unless it is one that tells nothing (``<host>``)."""
    for doc in node.documents:
        if doc.kind in ("report", "snapshot"):
            facts = doc.data.get("facts")
            system = facts.get("system") if isinstance(facts, dict) else None
            host = system.get("hostname") if isinstance(system, dict) else None
            if isinstance(host, str) and host.strip() not in ANONYMOUS_HOSTS:
                return host.strip()[:200]
    return None


__all__ = [
    "ANONYMOUS_HOSTS",
    "KINDS",
    "LoadError",
    "MAX_FILES",
    "Skipped",
    "expand_paths",
    "group",
    "hostname_of",
    "read_files",
]

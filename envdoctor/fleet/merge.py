"""The fleet's pipeline: node inputs -> named node facts -> the drift, for files and for a gather.

>>> fleet = merge_files(["reports/"])                 # doctest: +SKIP
>>> fleet.drift.exit_code, [v.verdict for v in fleet.drift.verdicts]   # doctest: +SKIP
(1, ['ok', 'ok', 'deviates'])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple

from envdoctor.fleet.drift import SLOW_FRACTION, Drift, analyze
from envdoctor.fleet.extract import ExtractError, extract
from envdoctor.fleet.load import ANONYMOUS_HOSTS, Skipped, expand_paths, group, read_files
from envdoctor.fleet.model import NameSource, NodeFacts, NodeInput
from envdoctor.redact import Redactor


@dataclass(frozen=True)
class GatherInfo:
    """How a gather went: the launcher, who joined, how the reports travelled, how long it took."""

    launcher: str
    world_size: int
    master: str                                # "gpu01:21234"
    transport: Literal["gloo", "store", "none"]  # all_gather over gloo, or the store when some are missing
    joined: Tuple[int, ...] = ()
    missing: Tuple[int, ...] = ()
    late: Tuple[int, ...] = ()
    seconds: Dict[str, float] = dataclasses.field(default_factory=dict)
    error: Optional[str] = None                # the process group's error, when it fell back to the store


@dataclass(frozen=True)
class Fleet:
    """What ``envdoctor fleet`` shows: the drift, and where its inputs came from."""

    drift: Drift
    mode: Literal["files", "gather"]
    created_at: str
    skipped: Tuple[Skipped, ...] = ()          # documents of other kinds, passed over
    gather: Optional[GatherInfo] = None
    redacted: bool = False


def _candidates(node: NodeInput, hostname: Optional[str]) -> List[Tuple[str, NameSource]]:
    """The names ``node`` may take, best first: its node key, its host name, its folder/file/rank."""
    keyed = [n for n in node.names if n[1] == "node key"]
    rest = [n for n in node.names if n[1] != "node key"]
    host: List[Tuple[str, NameSource]] = [(hostname, "hostname")] if hostname else []
    return keyed + host + rest


def unique_names(candidates: Sequence[Sequence[Tuple[str, NameSource]]]) -> Tuple[List[Tuple[str, NameSource]],
                                                                                  List[str]]:
    """One name per node: each its first candidate; nodes that would share a name move on to their
    next one; where none is left, ``#2``, ``#3`` are added. Returns the names and a note per clash.

    >>> unique_names([[("vm", "hostname"), ("h200a", "folder")], [("vm", "hostname"), ("h200b", "folder")]])[0]
    [('h200a', 'folder'), ('h200b', 'folder')]
    """
    position = [0] * len(candidates)
    notes = []
    for _ in range(max((len(c) for c in candidates), default=0)):
        chosen = [c[min(p, len(c) - 1)][0] if c else f"node {i + 1}"
                  for i, (c, p) in enumerate(zip(candidates, position))]
        clashes = {name for name in chosen if chosen.count(name) > 1}
        if not clashes:
            break
        moved = False
        for i, name in enumerate(chosen):
            if name in clashes and position[i] + 1 < len(candidates[i]):
                position[i] += 1
                moved = True
        for name in sorted(clashes):
            sources = {candidates[i][min(position[i], len(candidates[i]) - 1)][1]
                       for i, n in enumerate(chosen) if n == name}
            notes.append(f"{chosen.count(name)} nodes go by the name {name}: named by their "
                         f"{' or '.join(sorted(sources))} instead")
        if not moved:
            break
    result: List[Tuple[str, NameSource]] = []
    used: Dict[str, int] = {}
    for c, p in zip(candidates, position):
        name, source = c[min(p, len(c) - 1)] if c else ("node", "file name")
        used[name] = used.get(name, 0) + 1
        result.append((name if used[name] == 1 else f"{name} #{used[name]}", source))
    return result, notes


def node_facts(inputs: Sequence[NodeInput]) -> Tuple[List[NodeFacts], List[str]]:
    """Every input extracted and named uniquely; a report no probe wrote makes its node unreadable."""
    built = []
    for node in inputs:
        try:
            builder, kinds = extract(node)
        except ExtractError as exc:
            node = dataclasses.replace(node, documents=(), status="unreadable",
                                       unreadable=node.unreadable + ((node.documents[0].source, str(exc)),))
            builder, kinds = extract(node)
        host = builder.hostname if builder.hostname and builder.hostname not in ANONYMOUS_HOSTS else None
        built.append((node, builder, kinds, host))
    names, notes = unique_names([_candidates(node, host) for node, _, _, host in built])
    facts = []
    for (node, builder, kinds, _), (name, source) in zip(built, names):
        facts.append(builder.freeze(node, name, source, kinds))
    return facts, notes


def redact(nodes: Sequence[NodeFacts]) -> Tuple[List[NodeFacts], Redactor]:
    """``--redact``: node-01, node-02, ... for the names (in the order of the sorted names), and a
    Redactor for every host name, user, home folder, GPU serial and UUID in the output."""
    width = max(2, len(str(len(nodes))))
    order = sorted(range(len(nodes)), key=lambda i: nodes[i].name)
    labels = {nodes[i].name: f"node-{k + 1:0{width}d}" for k, i in enumerate(order)}
    redactor = Redactor(None, None, None)
    homes, words = [], []
    for node in nodes:
        label = labels[node.name]
        system = node.system
        if system is not None and system.home and system.home not in ("/", ""):
            homes.append((system.home, "~"))
        words.append((node.name, label))
        if system is not None and system.hostname and system.hostname not in ANONYMOUS_HOSTS:
            words.append((system.hostname, label))
        if system is not None and system.user and len(system.user) >= 2:
            words.append((system.user, "<user>"))
        words.extend((s, "<serial>") for s in node.serials)
    # longest first, so that "gpu-1" does not take a bite out of "gpu-10"; homes before words
    redactor.pairs = homes + sorted(set(words), key=lambda p: -len(p[0]))
    renamed = [dataclasses.replace(n, name=labels[n.name]) for n in nodes]
    return renamed, redactor


def merge(inputs: Sequence[NodeInput], *, mode: Literal["files", "gather"] = "files", table: Any = None,
          skipped: Sequence[Skipped] = (), gather: Optional[GatherInfo] = None, redact_names: bool = False,
          slow_fraction: float = SLOW_FRACTION) -> Tuple[Fleet, Optional[Redactor]]:
    """The fleet of ``inputs``; with ``redact_names`` the nodes are node-01.. and the Redactor that
    the renderers' output must go through is returned too."""
    nodes, notes = node_facts(inputs)
    redactor = None
    if redact_names:
        nodes, redactor = redact(nodes)
    drift = analyze(nodes, table, slow_fraction)
    drift = dataclasses.replace(drift, notes=tuple(notes) + drift.notes)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Fleet(drift, mode, created, tuple(s for s in skipped if not s.unreadable), gather, redact_names), redactor


def merge_files(paths: Sequence[str], **kwargs: Any) -> Tuple[Fleet, Optional[Redactor]]:
    """The fleet of the reports under ``paths`` (files, folders, globs). LoadError for a path that
    names nothing; a file that cannot be read is a finding of its node."""
    docs, skipped = read_files(expand_paths(paths))
    return merge(group(docs, skipped), skipped=skipped, **kwargs)


__all__ = ["Fleet", "GatherInfo", "merge", "merge_files", "node_facts", "redact", "unique_names"]

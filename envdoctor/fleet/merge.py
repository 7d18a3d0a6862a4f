"""The fleet's pipeline: node inputs -> named node facts -> the drift, for files and for a gather.

>>> fleet = merge_files(["reports/"])                 # doctest: +SKIP
>>> fleet.drift.exit_code, [v.verdict for v in fleet.drift.verdicts]   # doctest: +SKIP
(1, ['ok', 'ok', 'deviates'])
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple

from envdoctor.fleet import comms as fleet_comms
from envdoctor.fleet.analysis import ExtractError, extract
from envdoctor.fleet.comms import FleetComms
from envdoctor.fleet.facts import NameSource, NodeFacts, NodeInput
from envdoctor.fleet.load import ANONYMOUS_HOSTS, Skipped, expand_paths, group, read_files
from envdoctor.fleet.rules import SLOW_FRACTION, Drift, analyze
from envdoctor.redact import Redactor


@dataclass(frozen=True)
class GatherInfo:
    """How a gather went: the launcher, who joined, how the reports travelled, how long it took."""

    launcher: str
    world_size: int
    master: str  # "gpu01:21234"
    transport: Literal["gloo", "store", "none"]  # all_gather over gloo, or the store when some are missing
    joined: Tuple[int, ...] = ()
    missing: Tuple[int, ...] = ()
    late: Tuple[int, ...] = ()
    seconds: Dict[str, float] = dataclasses.field(default_factory=dict)
    error: Optional[str] = None  # the process group's error, when it fell back to the store


@dataclass(frozen=True)
class Fleet:
    """What ``envdoctor fleet`` shows: the drift, and where its inputs came from."""

    drift: Drift
    mode: Literal["files", "gather"]
    created_at: str
    skipped: Tuple[Skipped, ...] = ()  # documents of other kinds, passed over
    gather: Optional[GatherInfo] = None
    redacted: bool = False
    comms: Optional[FleetComms] = None  # fleet --gather --comms: the all-reduce and the pairs


def _candidates(node: NodeInput, hostname: Optional[str]) -> List[Tuple[str, NameSource]]:
    """The names ``node`` may take, best first: its node key, its host name, its folder/file/rank."""
    keyed = [n for n in node.names if n[1] == "node key"]
    rest = [n for n in node.names if n[1] != "node key"]
    host: List[Tuple[str, NameSource]] = [(hostname, "hostname")] if hostname else []
    return keyed + host + rest


def unique_names(
    candidates: Sequence[Sequence[Tuple[str, NameSource]]],
) -> Tuple[List[Tuple[str, NameSource]], List[str]]:
    """One name per node: each its first candidate; nodes that would share a name move on to their
    next one; where none is left, ``#2``, ``#3`` are added. Returns the names and a note per clash.

    >>> unique_names([[("vm", "hostname"), ("h200a", "folder")], [("vm", "hostname"), ("h200b", "folder")]])[0]
    [('h200a', 'folder'), ('h200b', 'folder')]
    """
    position = [0] * len(candidates)
    notes = []
    for _ in range(max((len(c) for c in candidates), default=0)):
        chosen = [
            c[min(p, len(c) - 1)][0] if c else f"node {i + 1}" for i, (c, p) in enumerate(zip(candidates, position))
        ]
        clashes = {name for name in chosen if chosen.count(name) > 1}
        if not clashes:
            break
        moved = False
        for i, name in enumerate(chosen):
            if name in clashes and position[i] + 1 < len(candidates[i]):
                position[i] += 1
                moved = True
        for name in sorted(clashes):
            sources = {
                candidates[i][min(position[i], len(candidates[i]) - 1)][1] for i, n in enumerate(chosen) if n == name
            }
            notes.append(
                f"{chosen.count(name)} nodes go by the name {name}: named by their "
                f"{' or '.join(sorted(sources))} instead"
            )
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
            node = dataclasses.replace(
                node,
                documents=(),
                status="unreadable",
                unreadable=node.unreadable + ((node.documents[0].source, str(exc)),),
            )
            builder, kinds = extract(node)
        host = builder.hostname if builder.hostname and builder.hostname not in ANONYMOUS_HOSTS else None
        built.append((node, builder, kinds, host))
    names, notes = unique_names([_candidates(node, host) for node, _, _, host in built])
    facts = []
    for (node, builder, kinds, _), (name, source) in zip(built, names):
        facts.append(builder.freeze(node, name, source, kinds))
    return facts, notes


#: The key of a word's label in :class:`NodeRedactor`'s tree of dotted parts: no part equals it.
_LABEL: Any = object()


class NodeRedactor(Redactor):
    """``--redact`` for many nodes at once: GPU UUIDs as :class:`Redactor` masks them, home folders,
    then every node name, host name, user and serial in one pass over the text (a thousand nodes'
    names are a thousand words: one regular expression each would make the pass quadratic).

    A word is replaced where it stands alone (not inside a longer name: ``gpu-1`` stays in
    ``gpu-10``), also before a dot (``gpu-07.json``, ``gpu-07.cluster.local``).

    >>> NodeRedactor(["/home/ana"], {"gpu-07": "node-01", "ana": "<user>"}).text(
    ...     "gpu-07.json by ana in /home/ana/r; gpu-070 GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38")
    'node-01.json by <user> in ~/r; gpu-070 GPU-<uuid>'
    """

    _TOKEN = re.compile(r"[\w-]+(?:\.[\w-]+)*")

    def __init__(self, homes: Sequence[str], words: Mapping[str, str]) -> None:
        super().__init__(None, None, None)
        self.homes = sorted(set(h for h in homes if h not in ("", "/")), key=len, reverse=True)
        self.words = {w: label for w, label in words.items() if w}
        self.pairs = [(h, "~") for h in self.homes] + list(self.words.items())
        #: names that are no single token ("n4 (rank 3)"): few, each replaced on its own
        self.odd = [(w, label) for w, label in self.words.items() if not self._TOKEN.fullmatch(w)]
        #: the words by their dotted parts: {"gpu-07": {_LABEL: "node-01", "cluster": {...}}}
        self._tree: Dict[str, Any] = {}
        for word, label in self.words.items():
            node = self._tree
            for part in word.split("."):
                node = node.setdefault(part, {})
            node[_LABEL] = label

    def _swap(self, match: re.Match[str]) -> str:
        """The longest word that ``token`` starts with, up to a dot or its end, replaced: the
        token's dotted parts are walked down a tree of the words' parts, so the work is linear in
        the token (joining every prefix of a 40,000-dot word was quadratic: 13.7 s)."""
        token = match.group(0)
        node: Optional[Dict[Any, Any]] = self._tree
        end = 0  # where the part being walked starts
        best: Optional[Tuple[str, int]] = None
        while True:
            dot = token.find(".", end)
            part = token[end:] if dot < 0 else token[end:dot]
            node = node.get(part) if node is not None else None
            if node is None:
                break
            stop = len(token) if dot < 0 else dot
            label = node.get(_LABEL)
            if label is not None:
                best = (label, stop)
            if dot < 0:
                break
            end = dot + 1
        if best is None:
            return token
        return best[0] + token[best[1] :]

    def text(self, text: str) -> str:
        text = self._UUID.sub(lambda m: (m.group(1) or "") + "<uuid>", text)
        for home in self.homes:
            text = text.replace(home, "~")
        for word, label in self.odd:
            if word in text:  # a fast search first: a thousand odd names cost a thousand regex passes
                text = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", label, text)
        return self._TOKEN.sub(self._swap, text)


def redact(nodes: Sequence[NodeFacts]) -> Tuple[List[NodeFacts], Redactor]:
    """``--redact``: node-01, node-02, ... for the names (in the order of the sorted names), and a
    Redactor for every host name, user, home folder, GPU serial and UUID in the output."""
    width = max(2, len(str(len(nodes))))
    order = sorted(range(len(nodes)), key=lambda i: nodes[i].name)
    labels = {nodes[i].name: f"node-{k + 1:0{width}d}" for k, i in enumerate(order)}
    homes: List[str] = []
    words: Dict[str, str] = {}
    hosts = Counter(n.system.hostname for n in nodes if n.system is not None and n.system.hostname)
    for node in nodes:
        system = node.system
        words.update((s, "<serial>") for s in node.serials)
        if system is not None:
            if system.home:
                homes.append(system.home)
            if system.user and len(system.user) >= 2:
                words[system.user] = "<user>"
            if system.hostname and system.hostname not in ANONYMOUS_HOSTS:
                # a host name several nodes share ("vm") names none of them
                words[system.hostname] = labels[node.name] if hosts[system.hostname] == 1 else "<host>"
    words.update(labels)  # the nodes' own names last: they win
    renamed = [dataclasses.replace(n, name=labels[n.name]) for n in nodes]
    return renamed, NodeRedactor(homes, words)


def merge(
    inputs: Sequence[NodeInput],
    *,
    mode: Literal["files", "gather"] = "files",
    table: Any = None,
    skipped: Sequence[Skipped] = (),
    gather: Optional[GatherInfo] = None,
    redact_names: bool = False,
    slow_fraction: float = SLOW_FRACTION,
    comms: Optional[FleetComms] = None,
    suppress: Sequence[str] = (),
) -> Tuple[Fleet, Optional[Redactor]]:
    """The fleet of ``inputs``; with ``redact_names`` the nodes are node-01.. and the Redactor that
    the renderers' output must go through is returned too. ``comms`` (a gather's comms phase) is
    named with the nodes' names and its findings join the others; ``suppress``: ``--suppress`` codes
    (:func:`envdoctor.fleet.rules.analyze` splits them off)."""
    nodes, notes = node_facts(inputs)
    redactor = None
    if redact_names:
        nodes, redactor = redact(nodes)
    extra = []
    if comms is not None:
        comms = fleet_comms.named(comms, {n.rank: n.name for n in nodes if n.rank is not None})
        extra = fleet_comms.findings(comms)
        rates = {
            i.rank: fleet_comms.adapter_gbps(d.data)
            for i in inputs
            if i.rank is not None
            for d in i.documents
            if d.kind == "report"
        }
        extra += fleet_comms.against_adapters(comms, rates)
    drift = analyze(nodes, table, slow_fraction, extra, suppress)
    drift = dataclasses.replace(drift, notes=tuple(notes) + drift.notes)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Fleet(
        drift, mode, created, tuple(s for s in skipped if not s.unreadable), gather, redact_names, comms
    ), redactor


def merge_files(paths: Sequence[str], **kwargs: Any) -> Tuple[Fleet, Optional[Redactor]]:
    """The fleet of the reports under ``paths`` (files, folders, globs). LoadError for a path that
    names nothing; a file that cannot be read is a finding of its node."""
    docs, skipped = read_files(expand_paths(paths))
    return merge(group(docs, skipped), skipped=skipped, **kwargs)


__all__ = ["Fleet", "GatherInfo", "NodeRedactor", "merge", "merge_files", "node_facts", "redact", "unique_names"]

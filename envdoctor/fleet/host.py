"""The host side of ``envdoctor fleet --gather``: this rank's payload, the child that carries it,
and, on rank 0, every rank's payload turned into node inputs.

Each rank inspects its own node the way ``check`` does (``envdoctor.inspect``), with ``--bench``
runs the quick bench on every GPU, reads the GPUs' ECC and row-remap counters through
``envdoctor.nvml``, and hands the payload to ``envdoctor/fleet/target/gather.py`` in the target
interpreter, which carries it to rank 0 over torch.distributed (gloo, or the rendezvous store
when some rank is missing). The payload holds each document as the text envdoctor wrote, so rank 0
reads it back through ``envdoctor.documents`` like any file::

    {"payload": 1, "rank": 3, "host": "gpu10", "documents": {"report": "{\\"schema\\": ...}"},
     "health": {"gpus": [...], "error": null}, "inspect_s": 4.8}

``ENVDOCTOR_NODE`` names the node where its host name is no good name (a Kubernetes pod's host
name is the pod's). ``ENVDOCTOR_FLEET_REPORT`` (for tests and demos only) replaces this rank's inspection with a
recorded report: a path, a path with ``{rank}`` in it, or paths separated by ``:`` of which rank
N takes the N-th. No NVML reading and no bench are added then.

With ``--comms`` the child also runs the comms phase (:func:`comms_config`); rank 0's answer then
carries a ``comms`` key, read by :func:`comms_of`. ``ENVDOCTOR_FLEET_COMMS_DELAY`` (for tests and
demos only, like ``ENVDOCTOR_FLEET_REPORT``) slows one rank's pair transfers: ``RANK:SECONDS``
sleeps that long before each of its pairs' all-reduce calls (a slow node), ``RANK-PEER:SECONDS``
only in the pair of the two (a slow link).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Tuple

from envdoctor.child import ChildRun, run_child
from envdoctor.documents import DocumentError, dumps, read_any
from envdoctor.fleet.facts import Document, NameSource, NodeInput, Status
from envdoctor.fleet.load import KINDS
from envdoctor.fleet.merge import GatherInfo
from envdoctor.inputs import InputError, read_input
from envdoctor.launch import Rendezvous
from envdoctor.parse.jsontext import JsonError, loads_object

REPORT_ENV = "ENVDOCTOR_FLEET_REPORT"
DELAY_ENV = "ENVDOCTOR_FLEET_COMMS_DELAY"
#: The node's name where its host name is no good one (a Kubernetes pod: the downward API's
#: spec.nodeName); it wins over the host name, like a document's ``node`` key.
NODE_ENV = "ENVDOCTOR_NODE"
PAYLOAD_VERSION = 1
#: NVML fields of the health reading.
HEALTH_FIELDS = ("uuid", "ecc_mode", "ecc_corrected", "ecc_uncorrected", "remapped_rows")


class GatherError(RuntimeError):
    """This rank cannot take part (no torch in the target, rank 0 unreachable); one line."""


def recorded_report(env: Mapping[str, str], rank: int) -> Optional[str]:
    """The path ``ENVDOCTOR_FLEET_REPORT`` gives rank ``rank``, or None where it is not set.

    >>> recorded_report({"ENVDOCTOR_FLEET_REPORT": "a.json:b.json"}, 1), recorded_report({}, 0)
    ('b.json', None)
    >>> recorded_report({"ENVDOCTOR_FLEET_REPORT": "r/{rank}.json"}, 3)
    'r/3.json'
    """
    value = env.get(REPORT_ENV, "").strip()
    if not value:
        return None
    if "{rank}" in value:
        return value.replace("{rank}", str(rank))
    paths = [p for p in value.split(os.pathsep) if p]
    if rank >= len(paths):
        raise GatherError(f"{REPORT_ENV} names {len(paths)} reports, none for rank {rank}")
    return paths[rank]


def comms_delay(env: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """``ENVDOCTOR_FLEET_COMMS_DELAY`` as the child's ``delay``; None where it is not set.

    >>> comms_delay({"ENVDOCTOR_FLEET_COMMS_DELAY": "2:0.05"}), comms_delay({})
    ({'rank': 2, 'peer': None, 'seconds': 0.05}, None)
    >>> comms_delay({"ENVDOCTOR_FLEET_COMMS_DELAY": "1-3:0.2"})["peer"]
    3
    """
    value = env.get(DELAY_ENV, "").strip()
    if not value:
        return None
    who, _, seconds = value.partition(":")
    rank, _, peer = who.partition("-")
    try:
        delay = {"rank": int(rank), "peer": int(peer) if peer else None, "seconds": float(seconds)}
    except ValueError:
        raise GatherError(
            f"{DELAY_ENV}={value!r}: give RANK:SECONDS or RANK-PEER:SECONDS (for tests and demos only)"
        ) from None
    if not 0 <= float(delay["seconds"] or 0) <= 3600:
        raise GatherError(f"{DELAY_ENV}={value!r}: the delay is 0 to 3600 seconds")
    return delay


def comms_config(world_size: int, join_timeout: float, env: Mapping[str, str]) -> Dict[str, Any]:
    """The child's ``comms`` configuration: the rounds of the quick pass, the sizes per backend, the
    step timeout (``--join-timeout``), and the test-only delay."""
    from envdoctor.fleet.comms import BYTES
    from envdoctor.fleet.pairs import quick
    from envdoctor.links.plan import ITERS, POINT_BUDGET_S, WARMUP

    return {
        "rounds": [[list(p) for p in r] for r in quick(world_size)],
        "bytes": dict(BYTES),
        "warmup": WARMUP,
        "iters": ITERS,
        "point_budget_s": POINT_BUDGET_S,
        "phase_timeout": join_timeout,
        "delay": comms_delay(env),
    }


def gathered(run: ChildRun) -> Optional[Dict[str, Any]]:
    """Rank 0's gather answer: its result, or, where the comms phase took the child down after the
    reports were in, the ``gathered`` event it emitted first."""
    if run.result is not None:
        return run.result
    events = run.of_kind("gathered")
    if events and isinstance(events[-1].get("result"), dict):
        result: Dict[str, Any] = events[-1]["result"]
        return result
    return None


def comms_of(r: Rendezvous, run: ChildRun) -> Any:
    """Rank 0's comms phase as a :class:`envdoctor.fleet.comms.FleetComms` (None where it was not asked)."""
    from envdoctor.fleet import comms

    result = run.result
    if result is None:
        why = run.error.message if run.error else "rank 0's child ended without its answer"
        return comms.failed(r.world_size, f"rank 0 during {run.stage or 'the comms phase'}: {why}")
    data = result.get("comms")
    return comms.read(data, r.world_size) if isinstance(data, dict) else None


def health(nv: Any = None) -> Dict[str, Any]:
    """Every GPU's ECC mode, ECC counts and row remaps, from NVML (``nv``: a fake in tests)."""
    from envdoctor.nvml import Session

    with Session(nv) as session:
        if not session.ok:
            return {"gpus": [], "error": session.error.message if session.error else "NVML failed"}
        gpus = []
        for reading in session.read_all(HEALTH_FIELDS):
            entry: Dict[str, Any] = {"index": reading.index}
            entry.update({k: v for k, v in reading.values.items() if v is not None})
            gpus.append(entry)
        return {"gpus": gpus, "error": None}


def payload(
    rank: int,
    host: str,
    documents: Mapping[str, str],
    health_data: Optional[Dict[str, Any]],
    inspect_s: float,
    node: Optional[str] = None,
) -> str:
    """This rank's payload as the text the child carries."""
    return json.dumps(
        {
            "payload": PAYLOAD_VERSION,
            "rank": rank,
            "host": host,
            "node": node,
            "documents": dict(documents),
            "health": health_data,
            "inspect_s": round(inspect_s, 3),
        }
    )


def carry(
    r: Rendezvous,
    text: str,
    python: str,
    join_timeout: float,
    env: Mapping[str, str],
    workdir: str,
    on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
    comms: Optional[Dict[str, Any]] = None,
) -> ChildRun:
    """Run the child that carries ``text`` to rank 0 (and, on rank 0, collects every rank's); with
    ``comms`` (:func:`comms_config`) it runs the comms phase after."""
    payload_path = os.path.join(workdir, "payload.json")
    out_dir = os.path.join(workdir, "ranks")
    os.makedirs(out_dir, exist_ok=True)
    with open(payload_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    child_env = dict(env)
    child_env.update(
        {
            "MASTER_ADDR": r.master_addr,
            "MASTER_PORT": str(r.master_port),
            "RANK": str(r.rank),
            "WORLD_SIZE": str(r.world_size),
            "LOCAL_RANK": str(r.local_rank),
        }
    )
    config = {
        "rank": r.rank,
        "world_size": r.world_size,
        "master_addr": r.master_addr,
        "master_port": r.master_port,
        "agent_store": r.agent_store,
        "run_id": r.run_id,
        "join_timeout": join_timeout,
        "payload": payload_path,
        "out_dir": out_dir,
    }
    timeout, idle = 3 * join_timeout + 120, join_timeout + 90
    if comms is not None:
        config["comms"] = comms
        # ready, the group, the all-reduce, each round, the end: a step each; the ranks other than 0
        # give a step twice as long before they stop (rank 0 names who hung)
        steps = 3 + len(comms.get("rounds") or []) + 1
        timeout += steps * (2 * join_timeout + 30)
        idle = 2 * join_timeout + 90
    # torch's import comes first (silent), then the wait for the ranks (it says how many joined)
    return run_child(
        "fleet/target/gather.py",
        config,
        python=python,
        timeout=timeout,
        idle_timeout=idle,
        what="the gather",
        env=child_env,
        on_event=on_event,
    )


def _documents(rank: int, data: Dict[str, Any], source: str) -> Tuple[List[Document], List[str]]:
    docs, problems = [], []
    texts = data.get("documents")
    for kind, text in texts.items() if isinstance(texts, dict) else ():
        if not isinstance(text, str):
            continue
        try:
            loaded = read_any(text, KINDS, f"{source} ({kind})")
        except DocumentError as exc:
            problems.append(str(exc))
            continue
        docs.append(Document(loaded.kind, loaded.data, f"{source}"))
    if isinstance(data.get("health"), dict):
        docs.append(Document("health", data["health"], source))
    return docs, problems


def collect(r: Rendezvous, run: ChildRun) -> Tuple[List[NodeInput], GatherInfo]:
    """Rank 0: every rank's payload as a node input (a missing rank as a missing node)."""
    result: Dict[str, Any] = gathered(run) or {}
    files: Dict[str, Any] = result["files"] if isinstance(result.get("files"), dict) else {}
    joined = [x for x in result.get("joined", []) if isinstance(x, int)]
    late = [x for x in result.get("late", []) if isinstance(x, int)]
    inputs: List[NodeInput] = []
    master = f"{r.master_addr}:{r.master_port}"
    for rank in range(r.world_size):
        source = f"rank {rank}"
        host = r.hosts[rank] if rank < len(r.hosts) else None
        fallback: Tuple[Tuple[str, NameSource], ...] = ((f"{host} (rank {rank})" if host else source, "rank"),)
        path = files.get(str(rank))
        if path is None:
            why = (
                "joined after rank 0 stopped waiting"
                if rank in late
                else "joined but its report never came"
                if rank in joined
                else f"did not join rank 0 at {master} within the join timeout"
            )
            inputs.append(NodeInput((), fallback, "missing", rank, notes=(why,), problem=why, info={"master": master}))
            continue
        try:
            data = loads_object(read_input(path), f"the payload of rank {rank}")
        except (InputError, JsonError) as exc:
            inputs.append(NodeInput((), fallback, "unreadable", rank, unreadable=((source, str(exc)),)))
            continue
        docs, problems = _documents(rank, data, source)
        status: Status = "reported" if docs else "unreadable"
        node = data.get("node")
        names: Tuple[Tuple[str, NameSource], ...] = fallback
        if isinstance(node, str) and node.strip():
            names = ((node.strip()[:200], "node key"),) + fallback
        inputs.append(NodeInput(tuple(docs), names, status, rank, unreadable=tuple((source, p) for p in problems)))
    seconds = {k: float(v) for k, v in (result.get("seconds") or {}).items() if isinstance(v, (int, float))}
    transport: Literal["gloo", "store", "none"] = "none"
    if result.get("transport") == "gloo":
        transport = "gloo"
    elif result.get("transport") == "store":
        transport = "store"
    info = GatherInfo(
        r.launcher,
        r.world_size,
        master,
        transport,
        tuple(joined),
        tuple(x for x in range(r.world_size) if str(x) not in files),
        tuple(late),
        seconds,
        result.get("group_error") if isinstance(result.get("group_error"), str) else None,
    )
    return inputs, info


@dataclass(frozen=True)
class Local:
    """This rank's contribution: the payload text, and what the inspection took."""

    text: str
    host: str
    seconds: float


def local(r: Rendezvous, env: Mapping[str, str], inspect_node: Any, bench: Any = None, nv: Any = None) -> Local:
    """This rank's payload: the recorded report of ``ENVDOCTOR_FLEET_REPORT``, or ``inspect_node()``'s
    report (a callable returning the report document) with ``bench()``'s document and NVML health."""
    started = time.perf_counter()
    host = socket.gethostname()
    node = env.get(NODE_ENV, "").strip() or None
    path = recorded_report(env, r.rank)
    if path is not None:
        try:
            documents = {"report": read_input(Path(path))}
        except InputError as exc:
            raise GatherError(f"{REPORT_ENV}: {exc}") from None
        return Local(
            payload(r.rank, host, documents, None, time.perf_counter() - started, node),
            host,
            time.perf_counter() - started,
        )
    report = inspect_node()
    documents = {"report": dumps(report)}
    if bench is not None:
        documents["bench"] = dumps(bench())
    data = health(nv)
    return Local(
        payload(r.rank, host, documents, data, time.perf_counter() - started, node), host, time.perf_counter() - started
    )


def workdir() -> str:
    return tempfile.mkdtemp(prefix="envdoctor-fleet-")


__all__ = [
    "DELAY_ENV",
    "GatherError",
    "Local",
    "NODE_ENV",
    "REPORT_ENV",
    "carry",
    "collect",
    "comms_config",
    "comms_delay",
    "comms_of",
    "gathered",
    "health",
    "local",
    "payload",
    "recorded_report",
    "workdir",
]

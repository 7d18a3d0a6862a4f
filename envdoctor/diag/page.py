"""The HTML page of ``envdoctor diag --html``, from the diag document: the node's verdict first
(PASS, WARN or FAIL, the failing tests named), the node's tests, then per GPU a table of every test
(figure, threshold, where the threshold comes from, status), the findings with their fixes, the
live state NVML read and the fabric facts::

    diag_page(json.load(open("docs/examples/h200/diag-r2.json")))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, List, Optional

from envdoctor.htmlpage import Cell, findings, fmt, items, kv, page, para, redact_document, section, table
from envdoctor.redact import Redactor

#: a test's status -> the cell class that colours it
STATUS_CLASS = {"PASS": "", "WARN": "warning", "FAIL": "error", "INFO": "info", "SKIP": ""}
HEADERS = ["test", "status", "figure", "threshold", "detail", "source", "seconds"]


def _num(x: Any) -> Any:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def threshold_text(t: Mapping[str, Any]) -> str:
    """``>= 600 TFLOP/s, warn under 3840``; "-" for a test with no threshold.

    >>> threshold_text({"compare": ">=", "threshold": 600.0, "unit": "TFLOP/s"})
    '>= 600 TFLOP/s'
    """
    bound = _num(t.get("threshold"))
    if bound is None:
        return "-"
    text = f"{t.get('compare') or '>='} {fmt(float(bound), 4)} {t.get('unit') or ''}".rstrip()
    warn = _num(t.get("warn_threshold"))
    return text + (f", warn under {fmt(float(warn), 4)}" if warn is not None else "")


def _figure(t: Mapping[str, Any]) -> Any:
    value = _num(t.get("figure"))
    if value is None:
        return Cell("-")
    return Cell(f"{fmt(float(value), 4)} {t.get('unit') or ''}".rstrip(), "num", value)


def tests_table(tests: Sequence[Mapping[str, Any]], id: str) -> str:
    """Every test of one GPU (or of the node) as one row, a FAIL in red, a WARN in yellow."""
    if not tests:
        return para("No test ran here.", "muted")
    rows = [
        [
            t.get("name"),
            Cell(t.get("status"), STATUS_CLASS.get(str(t.get("status")), "")),
            _figure(t),
            threshold_text(t),
            t.get("detail"),
            Cell(t.get("source"), "muted"),
            _num(t.get("seconds")),
        ]
        for t in tests
    ]
    return table(HEADERS, rows, id=id, sortable=True)


def _gpu_name(g: Mapping[str, Any]) -> str:
    bus = f" ({g['bus_id']})" if g.get("bus_id") else ""
    return f"GPU {g.get('index')} {g.get('name') or ''}".strip() + bus


def _gpu_title(g: Mapping[str, Any]) -> str:
    failed = [str(x) for x in g.get("failed") or () if x] or [str(x) for x in g.get("warned") or () if x]
    return f"{_gpu_name(g)}: {g.get('verdict') or '?'}" + (f" ({', '.join(failed)})" if failed else "")


def _state(state: Mapping[str, Any]) -> List[str]:
    out = []
    for g in state.get("gpus") or ():
        if not isinstance(g, Mapping):
            continue
        procs = [p for p in g.get("processes") or () if isinstance(p, Mapping)]
        out.append(
            f"<h3>GPU {fmt(g.get('index'))} {fmt(g.get('name'))}</h3>"
            + kv(
                [
                    ("UUID", g.get("uuid")),
                    ("bus", g.get("bus_id")),
                    ("memory used MiB", g.get("memory_used_mib")),
                    ("memory total MiB", g.get("memory_total_mib")),
                    ("busy %", g.get("utilization_pct")),
                    ("memory busy %", g.get("memory_utilization_pct")),
                    ("processes", len(procs) if g.get("processes") is not None else None),
                    ("processes unreadable", g.get("processes_error")),
                    ("compute mode", g.get("compute_mode")),
                    ("persistence mode", g.get("persistence_mode")),
                    ("MIG mode", g.get("mig_mode")),
                    ("MIG pending", g.get("mig_pending") or None),
                    ("power limit W", g.get("power_limit_w")),
                    ("default power limit W", g.get("default_power_limit_w")),
                    ("SM clock MHz", g.get("sm_clock_mhz")),
                    ("max SM clock MHz", g.get("max_sm_clock_mhz")),
                    ("application SM clock MHz", g.get("app_sm_clock_mhz")),
                    ("throttle reasons mask", g.get("reasons_mask")),
                    ("temperature C", g.get("temperature_c")),
                    ("retired pages pending", g.get("retired_pages_pending")),
                    ("remapped rows pending", g.get("remapped_pending")),
                    ("row remapping failed", g.get("remapped_failure")),
                    ("not readable", g.get("errors") if isinstance(g.get("errors"), Mapping) else None),
                ]
            )
        )
        if procs:
            out.append(
                table(
                    ["pid", "name", "memory MiB"], [[p.get("pid"), p.get("name"), p.get("memory_mib")] for p in procs]
                )
            )
    if state.get("error"):
        out.append(para(f"The live state could not be read: {fmt(state.get('error'))}", "error"))
    return out or [para("Nothing was read.", "muted")]


def _fabric(fabric: Mapping[str, Any]) -> str:
    adapters = [a for a in fabric.get("adapters") or () if isinstance(a, Mapping)]
    return kv(
        [
            ("read from", fabric.get("source")),
            ("network interfaces", fabric.get("interfaces")),
            ("RDMA modules loaded", fabric.get("modules")),
            ("NCCL net plugins", fabric.get("net_plugins")),
            ("NCCL variables", fabric.get("nccl_env") if isinstance(fabric.get("nccl_env"), Mapping) else None),
            ("GPU/adapter placements", fabric.get("placements")),
            ("could not read", fabric.get("error")),
        ]
    ) + (
        table(
            sorted({k for a in adapters for k in a}),
            [[a.get(k) for k in sorted({k for a in adapters for k in a})] for a in adapters],
        )
        if adapters
        else para("No InfiniBand/RoCE adapter.", "muted")
    )


def verdict_text(d: Mapping[str, Any]) -> str:
    """The banner's line: ``PASS: level 2 (medium) on node vm, 53.6 s`` or ``FAIL: burn (GPU 0) (level 2 ...)``.

    >>> verdict_text({"verdict": "FAIL", "failed": ["burn (GPU 0)"], "level": 1, "hostname": "n1"})
    'FAIL: burn (GPU 0) (level 1 on node n1)'
    """
    verdict = str(d.get("verdict") or "no verdict")
    where = (
        f"level {fmt(d.get('level'))}"
        + (f" ({d['level_name']})" if d.get("level_name") else "")
        + (f" on node {d['hostname']}" if d.get("hostname") else "")
    )
    if isinstance(d.get("wall_s"), (int, float)):
        where += f", {float(d['wall_s']):.1f} s"
    err = d.get("error")
    if verdict in ("NO_GPU", "ERROR") and isinstance(err, Mapping) and err.get("message"):
        return f"{verdict}: {err['message']} ({where})"
    named = [str(x) for x in d.get("failed") or () if x]
    if named:
        return f"{verdict}: {', '.join(named)} ({where})"
    return f"{verdict}: {where}"


def diag_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    host = doc.get("hostname")
    if isinstance(host, str) and host:  # diag names its node at the top, not under facts
        d = Redactor(host, None, None).data(d)
    summary = d.get("summary") if isinstance(d.get("summary"), Mapping) else {}
    code = summary.get("exit_code")
    code = int(code) if isinstance(code, int) else 2
    tests = [t for t in d.get("tests") or () if isinstance(t, Mapping)]
    gpus = [g for g in d.get("gpus") or () if isinstance(g, Mapping)]
    body = [
        section(
            "Verdict",
            table(
                ["passed", "warned", "failed", "skipped", "no threshold"],
                [[summary.get(k) for k in ("passed", "warned", "failed", "skipped", "no_threshold")]],
            )
            if summary
            else "",
            table(
                ["GPU", "verdict", "failed", "warned"],
                [
                    [
                        _gpu_name(g),
                        Cell(g.get("verdict"), STATUS_CLASS.get(str(g.get("verdict")), "")),
                        fmt(g.get("failed")),
                        fmt(g.get("warned")),
                    ]
                    for g in gpus
                ],
            )
            if gpus
            else "",
            id="summary",
        )
    ]
    err = d.get("error")
    if isinstance(err, Mapping) and err.get("message"):
        body.append(section("Could not run", para(str(err["message"]), "error"), id="error"))
    node = [t for t in tests if t.get("gpu") is None]
    if node:
        body.append(section("The node", tests_table(node, "tests-node"), id="node"))
    indices = {g.get("index") for g in gpus}
    for g in gpus:
        body.append(
            section(
                _gpu_title(g),
                tests_table([t for t in tests if t.get("gpu") == g.get("index")], f"tests-gpu-{g.get('index')}"),
                id=f"gpu-{g.get('index')}",
            )
        )
    others = [t for t in tests if t.get("gpu") is not None and t.get("gpu") not in indices]
    if others:
        body.append(section("Other tests", tests_table(others, "tests-other"), id="other"))
    body.append(
        section(
            "Findings",
            findings([f for f in d.get("findings") or () if isinstance(f, Mapping)], "No findings: every test passed."),
            id="findings",
        )
    )
    if isinstance(d.get("state"), Mapping):
        body.append(section("Live state", *_state(d["state"]), id="state"))
    if isinstance(d.get("fabric"), Mapping):
        body.append(section("Fabric", _fabric(d["fabric"]), id="fabric"))
    stages = d.get("stage_s") if isinstance(d.get("stage_s"), Mapping) else {}
    body.append(
        section(
            "Run",
            kv(
                [
                    ("level", d.get("level")),
                    ("level name", d.get("level_name")),
                    ("budget s", d.get("budget_s")),
                    ("Python", d.get("python")),
                    ("device", d.get("device")),
                    ("wall s", d.get("wall_s")),
                ]
            ),
            table(["stage", "seconds"], [[k, v] for k, v in stages.items()]) if stages else "",
            items(d.get("notes") or (), "muted"),
            id="run",
        )
    )
    subject = ", ".join(dict.fromkeys(str(g.get("name")) for g in gpus if g.get("name")))
    return page("diag", subject, code, verdict_text(d), body, d)

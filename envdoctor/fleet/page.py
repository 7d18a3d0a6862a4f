"""The HTML page of ``envdoctor fleet --html``, from the fleet document: one row per node (host,
GPU model and count, driver, CUDA, torch, verdict) with the drifted values marked, sortable and
filterable (a few lines of inline script; the page reads without it), what differs, and a
section per node. At 1,000 nodes it stays one file that a browser opens in about a second
(tests/test_html_browser.py measures it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional

from envdoctor.htmlpage import esc, findings, fmt, kv, page, para, redact_document, section, table
from envdoctor.redact import Redactor

#: the node table's columns: (heading, the fact shown, the facts whose drift marks it); the node's
#: name is its host, as in fleet's text and JSON (node-01, ... with --redact)
COLUMNS = (
    ("GPU model", "gpu.models", ("gpu.models",)),
    ("GPUs", "gpu.count", ("gpu.count",)),
    ("driver", "driver.version", ("driver.version", "driver.branch", "driver.kernel_module")),
    ("CUDA (driver)", "driver.cuda", ("driver.cuda",)),
    ("torch", "torch.version", ("torch.version",)),
    ("torch CUDA", "torch.cuda", ("torch.cuda",)),
)
_WORST = {"error": 0, "warning": 1, "info": 2}
_ORDER = {"deviates": 0, "missing": 1, "unreadable": 2, "warning": 3, "ok": 4}


def _node_table(nodes: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> str:
    severity: Dict[str, str] = {str(r.get("key")): str(r.get("severity") or "warning") for r in rows}
    deviating: Dict[str, set] = {str(r.get("key")): set(r.get("deviating") or ()) for r in rows}
    head = "".join(f"<th>{esc(h)}</th>" for h in ("node", "verdict", *(c[0] for c in COLUMNS), "deviates on", "codes"))
    out = [
        '<div class="filter"><label>filter: <input class="filter" type="search" data-table="nodes" '
        'placeholder="e.g. deviates, 570, H200"></label> <span class="muted">click a column to sort; '
        "#sort=driver or #sort=-GPUs and #filter=TEXT in the address do the same</span></div>",
        f'<table id="nodes" class="sortable"><thead><tr>{head}</tr></thead><tbody>',
    ]
    for n in sorted(nodes, key=lambda n: (_ORDER.get(str(n.get("verdict")), 5), str(n.get("name")))):
        name, facts = str(n.get("name")), n.get("facts") or {}
        cells = [
            f'<td><a href="#n-{esc(name)}">{esc(name)}</a></td>',
            f'<td data-k="{_ORDER.get(str(n.get("verdict")), 5)}">{esc(n.get("verdict"))}</td>',
        ]
        for _, key, marks in COLUMNS:
            value = facts.get(key)
            drifts = sorted(
                (severity.get(k, "warning") for k in marks if name in deviating.get(k, ())),
                key=lambda x: _WORST.get(x, 3),
            )
            cls = f' class="{esc(drifts[0])} drift"' if drifts else ""
            sort = f' data-k="{esc(value)}"' if isinstance(value, (int, float)) else ""
            cells.append(f"<td{cls}{sort}>{esc(fmt(value))}</td>")
        cells.append(
            f"<td>{esc(', '.join(map(str, n.get('deviates_on') or ())))}</td>"
            f"<td>{esc(', '.join(map(str, n.get('codes') or ())))}</td>"
        )
        out.append(f'<tr class="v-{esc(n.get("verdict"))}">{"".join(cells)}</tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _differs(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return para("Nothing differs between the nodes that reported.")
    body = []
    for r in rows:
        values = r.get("values") or {}
        groups: Dict[str, List[str]] = {}
        for node in r.get("deviating") or ():
            groups.setdefault(fmt(values.get(node)), []).append(str(node))
        dev = "; ".join(
            f"{v}: {', '.join(ns[:20])}" + (f" (+{len(ns) - 20} more)" if len(ns) > 20 else "")
            for v, ns in sorted(groups.items(), key=lambda kv: -len(kv[1]))
        )
        ref = (
            f"{fmt(r.get('majority'))} ({r.get('count')} of {r.get('known')})"
            if r.get("reference") != "median"
            else f"median {fmt(r.get('majority'))}"
        )
        body.append(
            f'<tr><td class="{esc(r.get("severity"))}">{esc(r.get("label"))}</td><td>{esc(ref)}</td>'
            f"<td>{esc(dev)}</td></tr>"
        )
    return (
        '<table id="differs"><thead><tr><th>fact</th><th>the fleet</th><th>deviating</th></tr></thead><tbody>'
        + "".join(body)
        + "</tbody></table>"
    )


def _node_section(n: Mapping[str, Any], found: Sequence[Mapping[str, Any]], same: Sequence[str]) -> str:
    """The node's own section: its verdict, the facts not shared by every node (those are listed
    once, under What differs), its GPUs and findings."""
    name = str(n.get("name"))
    gpus = [g for g in n.get("gpus") or () if isinstance(g, Mapping)]
    inner = [
        kv(
            [
                ("verdict", n.get("verdict")),
                ("status", n.get("status")),
                ("deviates on", n.get("deviates_on")),
                ("sources", n.get("sources")),
                ("reported", n.get("kinds")),
            ]
        ),
        kv(sorted((str(k), v) for k, v in (n.get("facts") or {}).items() if k not in same)),
        table(
            ["GPU", "name", "memory MiB", "power limit W", "ECC corrected", "ECC uncorrected"],
            [
                [
                    g.get("index"),
                    g.get("name"),
                    g.get("memory_mib"),
                    g.get("power_limit_w"),
                    g.get("ecc_corrected"),
                    g.get("ecc_uncorrected"),
                ]
                for g in gpus
            ],
        )
        if gpus
        else "",
        findings(found, "No findings on this node."),
        *(para(str(x), "muted") for x in n.get("notes") or ()),
    ]
    opened = " open" if n.get("verdict") != "ok" else ""
    return (
        f'<details class="node" id="n-{esc(name)}"{opened}><summary><b>{esc(name)}</b> '
        f"{esc(n.get('verdict'))}, {len(found)} finding{'s' if len(found) != 1 else ''}</summary>"
        + "".join(inner)
        + "</details>"
    )


def _comms(c: Mapping[str, Any]) -> str:
    pairs = [p for p in c.get("pairs") or () if isinstance(p, Mapping)]
    rows = []
    for p in pairs:
        t = p.get("transfer") or {}
        bw = t.get("busbw_gbps")
        cls = ' class="error"' if p.get("slow") else ""
        rows.append(
            f"<tr><td>{esc(p.get('round'))}</td><td>{esc(p.get('a_node'))} - {esc(p.get('b_node'))}</td>"
            f"<td{cls}>{esc(fmt(bw)) if t else 'did not finish'}</td><td>{esc(fmt(t.get('ms')))}</td>"
            f"<td>{esc(fmt(p.get('slow')))}</td></tr>"
        )
    table_html = (
        (
            '<table id="pairs"><thead><tr><th>round</th><th>pair</th><th>busbw GB/s</th><th>time ms</th>'
            "<th>slow</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
        if rows
        else ""
    )
    return section(
        f"Comms over {c.get('backend') or '-'}",
        kv(
            [
                ("status", c.get("status")),
                ("why", c.get("why")),
                ("ranks", c.get("world_size")),
                ("median busbw GB/s", c.get("median_busbw_gbps")),
                ("slow nodes", c.get("slow_nodes")),
                ("slow links", [" - ".join(x) for x in c.get("slow_links") or ()]),
                ("error", c.get("error")),
            ]
        ),
        table_html,
        id="comms",
    )


def fleet_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    s = d.get("summary") or {}
    code = int(s.get("exit_code") or 0)
    nodes = [n for n in d.get("nodes") or () if isinstance(n, Mapping)]
    rows = [r for r in d.get("facts") or () if isinstance(r, Mapping)]
    parts = [f"{s.get('nodes', len(nodes))} nodes"] + [
        f"{s[k]} {w}"
        for k, w in (
            ("deviating", "deviate"),
            ("warning", "with warnings"),
            ("missing", "missing"),
            ("unreadable", "unreadable"),
        )
        if s.get(k)
    ]
    bad = [str(n.get("name")) for n in nodes if n.get("verdict") in ("deviates", "missing", "unreadable")]
    verdict = ", ".join(parts) + (
        f": {', '.join(bad[:10])}{' ...' if len(bad) > 10 else ''}"
        if bad
        else ": the nodes agree on everything compared"
    )
    by_node: Dict[str, List[Mapping[str, Any]]] = {}
    for f in d.get("findings") or ():
        if isinstance(f, Mapping):
            by_node.setdefault(str(f.get("node")), []).append(f)
    same = [x for x in d.get("same") or () if isinstance(x, Mapping)]
    body = [
        section("Nodes", _node_table(nodes, rows), id="node-table"),
        section(
            "What differs",
            _differs(rows),
            para(
                "The same on every node: " + ", ".join(f"{x.get('label')} {fmt(x.get('value'))}" for x in same), "muted"
            )
            if same
            else "",
            id="differs-section",
        ),
    ]
    if isinstance(d.get("comms"), Mapping):
        body.append(_comms(d["comms"]))
    shared = [str(x.get("key")) for x in same] if len(nodes) > 1 else []
    body.append(
        section(
            "Each node", *(_node_section(n, by_node.get(str(n.get("name")), []), shared) for n in nodes), id="each-node"
        )
    )
    if d.get("skipped"):
        body.append(
            section(
                "Files passed over",
                table(["file", "why"], [[x.get("path"), x.get("reason")] for x in d["skipped"]]),
                id="skipped",
            )
        )
    return page("fleet", f"{len(nodes)} nodes", code, verdict, body, d)

"""The HTML page of ``envdoctor topo --html``, from the topo document: every GPU's PCIe, NVLink and
NUMA, the path between every pair as a matrix, each with its expected peak."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.htmlpage import Cell, esc, findings, fmt, page, para, redact_document, section, table
from envdoctor.redact import Redactor


def _pcie(g: Mapping[str, Any]) -> str:
    p = g.get("pcie") or {}
    now = f"Gen{p.get('gen')} x{p.get('width')}" if p.get("gen") else "-"
    most = f"Gen{p.get('max_gen')} x{p.get('max_width')}" if p.get("max_gen") else "-"
    return f"{now} (of {most})"


def _matrix(gpus: List[Mapping[str, Any]], pairs: List[Mapping[str, Any]]) -> str:
    by: Dict[Tuple[Any, Any], Mapping[str, Any]] = {}
    for p in pairs:
        by[(p.get("a"), p.get("b"))] = by[(p.get("b"), p.get("a"))] = p
    idx = [g.get("index") for g in gpus]
    head = "".join(f"<th>GPU{esc(i)}</th>" for i in idx)
    rows = []
    for a in idx:
        cells = []
        for b in idx:
            if a == b:
                cells.append("<td>X</td>")
                continue
            pair = by.get((a, b))
            if pair is None:
                cells.append('<td class="muted">?</td>')
                continue
            peak = (pair.get("peak") or {}).get("gbps")
            cls = "warning" if str(pair.get("path")) == "SYS" else ""
            title = f"{pair.get('path')}: {fmt(peak)} GB/s; P2P read {fmt(pair.get('p2p_read'))}"
            cells.append(
                f'<td class="{cls}" title="{esc(title)}">{esc(pair.get("path"))}'
                f'<br><span class="muted">{esc(fmt(peak))} GB/s</span></td>'
            )
        rows.append(f"<tr><th>GPU{esc(a)}</th>{''.join(cells)}</tr>")
    return f'<table id="matrix"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def topo_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or 0)
    gpus = [g for g in d.get("gpus") or () if isinstance(g, Mapping)]
    pairs = [p for p in d.get("pairs") or () if isinstance(p, Mapping)]
    errors = (d.get("summary") or {}).get("errors") or 0
    if not gpus:
        verdict = "no GPU could be read" + (
            f": {d['error'].get('message')}" if isinstance(d.get("error"), Mapping) else ""
        )
    elif code == 0:
        verdict = f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}, every link as expected"
    else:
        verdict = f"{errors} link problem{'s' if errors != 1 else ''} on {len(gpus)} GPUs"
    body = [
        section("Findings", findings(d.get("findings") or (), "No problems found."), id="findings"),
        section(
            "GPUs",
            table(
                [
                    "GPU",
                    "name",
                    "bus",
                    "PCIe now (of most)",
                    "PCIe peak GB/s",
                    "NUMA",
                    "CPUs",
                    "NVLinks up",
                    "fabric",
                    "MIG",
                    "ECC",
                    "persistence",
                ],
                [
                    [
                        g.get("index"),
                        g.get("name"),
                        g.get("bus_id"),
                        _pcie(g),
                        (g.get("pcie_peak") or {}).get("gbps"),
                        g.get("numa_node"),
                        g.get("cpu_affinity"),
                        Cell(
                            f"{g.get('active_nvlinks')} of {len(g.get('nvlinks') or ())}"
                            if g.get("nvlinks")
                            else (g.get("nvlink_error") or "none"),
                            "error"
                            if g.get("nvlinks") and g.get("active_nvlinks", 0) < len(g.get("nvlinks") or ())
                            else "",
                        ),
                        g.get("fabric_state"),
                        g.get("mig_mode"),
                        g.get("ecc_mode"),
                        g.get("persistence_mode"),
                    ]
                    for g in gpus
                ],
                id="gpus",
                sortable=True,
            ),
            id="gpu-table",
        ),
    ]
    if len(gpus) > 1:
        body.append(
            section(
                "Paths between GPUs",
                _matrix(gpus, pairs),
                para(
                    "NV#: that many bonded NVLinks; PIX/PXB: PCIe switches; PHB: the host bridge; "
                    "NODE: within a NUMA node; SYS: across sockets (slowest). Each with its "
                    "expected one-direction peak.",
                    "muted",
                ),
                id="paths",
            )
        )
        body.append(
            section(
                "Pairs",
                table(
                    ["a", "b", "path", "PCIe path", "NVLinks", "via", "P2P read", "P2P write", "peak GB/s", "basis"],
                    [
                        [
                            p.get("a"),
                            p.get("b"),
                            p.get("path"),
                            p.get("pcie_path"),
                            p.get("nvlinks"),
                            p.get("nvlink_via"),
                            p.get("p2p_read"),
                            p.get("p2p_write"),
                            (p.get("peak") or {}).get("gbps"),
                            (p.get("peak") or {}).get("basis"),
                        ]
                        for p in pairs
                    ],
                    id="pairs",
                    sortable=True,
                ),
                id="pair-table",
            )
        )
    elif gpus:
        body.append(para("One GPU: nothing links it to another GPU here.", "muted"))
    body.append(para(f"read from {d.get('source') or '-'}", "muted"))
    subject = ", ".join(dict.fromkeys(str(g.get("name")) for g in gpus if g.get("name")))
    return page("topo", subject, code, verdict, body, d)

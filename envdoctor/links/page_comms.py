"""The HTML page of ``envdoctor comms --html``, from the comms document: bus bandwidth against size
per collective with the expected peak, the ranks, pairs and host copies."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.htmlpage import (
    Cell,
    Chart,
    Ref,
    Series,
    findings,
    items,
    kv,
    page,
    para,
    redact_document,
    section,
    svg_chart,
    table,
)
from envdoctor.redact import Redactor


def comms_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or 0)
    points = [p for p in d.get("points") or () if isinstance(p, Mapping)]
    ranks = [r for r in d.get("ranks") or () if isinstance(r, Mapping)]
    exp = d.get("expected") or {}
    wrong = sum(int(p.get("wrong") or 0) for p in points)
    measured = [p for p in points if p.get("status") == "ok"]
    if isinstance(d.get("error"), Mapping) and d["error"].get("message"):
        verdict = f"the collectives did not run: {d['error']['message']}"
    elif not measured and not d.get("host_copies"):
        verdict = "nothing was measured"
    else:
        best = max((float(p.get("busbw_gbps") or 0) for p in measured), default=0.0)
        verdict = (
            f"{len(measured)} points over {d.get('world_size')} rank(s) ({d.get('backend')}), best busbw "
            f"{best:g} GB/s" + (f", {wrong} wrong elements" if wrong else ", every result right")
        )
    by: Dict[str, List[Tuple[float, float]]] = defaultdict(list)
    for p in measured:
        if isinstance(p.get("busbw_gbps"), (int, float)) and isinstance(p.get("bytes"), (int, float)):
            by[str(p.get("collective"))].append((float(p["bytes"]), float(p["busbw_gbps"])))
    refs = []
    if isinstance(exp.get("peak_gbps"), (int, float)):
        refs.append(Ref(float(exp["peak_gbps"]), f"expected peak {exp['peak_gbps']:g} GB/s ({exp.get('path')})"))
    if isinstance(exp.get("achievable_gbps"), (int, float)):
        refs.append(Ref(float(exp["achievable_gbps"]), f"achievable {exp['achievable_gbps']:g} GB/s"))
    chart = (
        svg_chart(
            Chart(
                "bus bandwidth by message size",
                "bytes",
                "busbw GB/s",
                tuple(Series(k, tuple(sorted(v))) for k, v in by.items()),
                tuple(refs),
                log_x=True,
                x_format="bytes",
            )
        )
        if by
        else ""
    )
    body = [section("Findings", findings(d.get("findings") or ()), id="findings")]
    if chart:
        body.append(
            section(
                "Bus bandwidth", chart, para(str(exp.get("note") or ""), "muted") if exp.get("note") else "", id="chart"
            )
        )
    body.append(
        section(
            "Points",
            table(
                [
                    "collective",
                    "bytes",
                    "dtype",
                    "status",
                    "time us",
                    "algbw GB/s",
                    "busbw GB/s",
                    "of peak",
                    "wrong",
                    "algo",
                ],
                [
                    [
                        p.get("collective"),
                        p.get("bytes"),
                        p.get("dtype"),
                        Cell(p.get("status"), "" if p.get("status") == "ok" else "error"),
                        p.get("time_us"),
                        p.get("algbw_gbps"),
                        p.get("busbw_gbps"),
                        p.get("ratio"),
                        Cell(p.get("wrong"), "error" if p.get("wrong") else ""),
                        p.get("algo"),
                    ]
                    for p in points
                ],
                id="points",
                sortable=True,
            ),
            id="point-table",
        )
    )
    body.append(
        section(
            "Ranks",
            table(
                ["rank", "status", "host", "device", "stage", "message", "seconds"],
                [
                    [
                        r.get("rank"),
                        Cell(r.get("status"), "" if r.get("status") == "ok" else "error"),
                        r.get("host"),
                        r.get("device"),
                        r.get("stage"),
                        r.get("message"),
                        r.get("seconds"),
                    ]
                    for r in ranks
                ],
            ),
            id="ranks",
        )
    )
    pairs = [p for p in d.get("pairs") or () if isinstance(p, Mapping)]
    if pairs:
        body.append(
            section(
                "GPU pairs",
                table(
                    sorted({k for p in pairs for k in p}),
                    [[p.get(k) for k in sorted({k for q in pairs for k in q})] for p in pairs],
                    id="pairs",
                    sortable=True,
                ),
                id="pair-table",
            )
        )
    copies = [c for c in d.get("host_copies") or () if isinstance(c, Mapping)]
    if copies:
        body.append(
            section(
                "Host copies",
                table(
                    ["direction", "bytes", "GB/s", "expected GB/s", "of expected"],
                    [
                        [c.get("direction"), c.get("bytes"), c.get("gbps"), c.get("expected_gbps"), c.get("ratio")]
                        for c in copies
                    ],
                ),
                id="host-copies",
            )
        )
    body.append(
        section(
            "Run",
            kv(
                [
                    ("backend", d.get("backend")),
                    ("launcher", d.get("launcher")),
                    ("ranks", d.get("world_size")),
                    ("torch", d.get("torch_version")),
                    ("NCCL", d.get("nccl_version")),
                    ("NVLS available", d.get("nvls_available")),
                    ("transports", d.get("transports")),
                    ("method", d.get("method")),
                    ("wall s", d.get("wall_s")),
                ]
            ),
            items(d.get("notes") or (), "muted"),
            id="run",
        )
    )
    return page("comms", f"{d.get('world_size')} rank(s), {d.get('backend')}", code, verdict, body, d)

"""The HTML page of ``envdoctor bench --html``, from the bench document: matmul TFLOP/s and memory
bandwidth against size with the datasheet line, the layers, what bounded each point.

    bench_page(stamp(to_data(result), exit_code(result)))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.htmlpage import (
    Cell,
    Chart,
    Ref,
    Series,
    findings,
    fmt,
    items,
    kv,
    page,
    para,
    pct,
    redact_document,
    section,
    svg_chart,
    table,
)
from envdoctor.redact import Redactor


def _dev_name(devices: Sequence[Mapping[str, Any]], index: Any) -> str:
    d = next((d for d in devices if d.get("index") == index), {})
    return f"GPU {index} {d.get('name') or ''}".strip() if d.get("kind", "cuda") == "cuda" else "CPU"


def _matmul_charts(doc: Mapping[str, Any]) -> List[str]:
    devices = [d for d in doc.get("devices") or () if isinstance(d, Mapping)]
    by: Dict[Tuple[Any, str], List[Tuple[float, float]]] = defaultdict(list)
    for p in doc.get("points") or ():
        if isinstance(p, Mapping) and p.get("tflops") is not None and p.get("status") == "ok":
            by[(p.get("device"), str(p.get("dtype")))].append((float(p["n"]), float(p["tflops"])))
    if not by:
        return []
    out = []
    for dtype in dict.fromkeys(k[1] for k in by):
        series = tuple(
            Series(_dev_name(devices, dev), tuple(sorted(pts))) for (dev, dt), pts in by.items() if dt == dtype
        )
        peaks = {
            float(d["peaks"][dtype])
            for d in devices
            if isinstance(d.get("peaks"), Mapping) and isinstance(d["peaks"].get(dtype), (int, float))
        }
        refs = tuple(Ref(v, f"{dtype} datasheet {v:g} TFLOP/s") for v in sorted(peaks))
        out.append(
            svg_chart(
                Chart(
                    f"matmul {dtype}: TFLOP/s by matrix size n",
                    "n (n x n times n x n)",
                    "TFLOP/s",
                    series,
                    refs,
                    log_x=True,
                )
            )
        )
    return out


def _memory_charts(doc: Mapping[str, Any]) -> List[str]:
    devices = [d for d in doc.get("devices") or () if isinstance(d, Mapping)]
    by: Dict[Tuple[Any, str], List[Tuple[float, float]]] = defaultdict(list)
    for p in doc.get("memory_points") or ():
        if isinstance(p, Mapping) and p.get("gbs") is not None and p.get("status") == "ok":
            by[(p.get("device"), str(p.get("op")))].append((float(p.get("bytes") or 4 * p["n"]), float(p["gbs"])))
    if not by:
        return []
    series = tuple(
        Series(f"{op} {_dev_name(devices, dev)}", tuple(sorted(pts)), dashed=i % 2 == 1)
        for i, ((dev, op), pts) in enumerate(sorted(by.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])))
    )
    sheet = {float(d["bandwidth_gbs"]) for d in devices if isinstance(d.get("bandwidth_gbs"), (int, float))}
    refs = tuple(Ref(v, f"datasheet {v:g} GB/s") for v in sorted(sheet))
    return [
        svg_chart(
            Chart(
                "memory bandwidth by buffer size",
                "one buffer (bytes)",
                "GB/s",
                series,
                refs,
                log_x=True,
                x_format="bytes",
            )
        )
    ]


def bench_sections(doc: Mapping[str, Any]) -> List[str]:
    """The sections of a bench document (also embedded in check --bench and verify --bench pages)."""
    devices = [d for d in doc.get("devices") or () if isinstance(d, Mapping)]
    out = []
    verdicts = [v for v in doc.get("verdicts") or () if isinstance(v, Mapping)]
    if verdicts or doc.get("outliers"):
        out.append(
            section(
                "Verdicts",
                table(
                    ["device", "state", "verdict", "why"],
                    [
                        [
                            _dev_name(devices, v.get("device")),
                            Cell(v.get("state"), "error" if v.get("state") == "not_delivering" else ""),
                            v.get("line"),
                            fmt(v.get("why")),
                        ]
                        for v in verdicts
                    ],
                ),
                items(doc.get("outliers") or (), "error"),
                id="verdicts",
            )
        )
    out.append(section("Findings", findings(doc.get("findings") or ()), id="bench-findings"))
    charts = _matmul_charts(doc) + _memory_charts(doc)
    if charts:
        out.append(section("Charts", *charts, id="charts"))
    points = [p for p in doc.get("points") or () if isinstance(p, Mapping)]
    if points:
        out.append(
            section(
                "Matmul points",
                table(
                    [
                        "device",
                        "dtype",
                        "n",
                        "status",
                        "TFLOP/s",
                        "burst",
                        "datasheet",
                        "of datasheet",
                        "bound",
                        "SM MHz",
                        "W",
                        "throttle",
                    ],
                    [
                        [
                            p.get("device"),
                            p.get("dtype"),
                            p.get("n"),
                            Cell(p.get("status"), "" if p.get("status") == "ok" else "error"),
                            p.get("tflops"),
                            p.get("burst_tflops"),
                            p.get("peak_tflops"),
                            pct(p.get("efficiency")),
                            p.get("bound"),
                            p.get("sm_clock_mhz"),
                            p.get("power_w"),
                            fmt(p.get("reasons")),
                        ]
                        for p in points
                    ],
                    id="points",
                    sortable=True,
                ),
                id="matmul",
            )
        )
    mem = [p for p in doc.get("memory_points") or () if isinstance(p, Mapping)]
    if mem:
        out.append(
            section(
                "Memory points",
                table(
                    ["device", "op", "bytes", "status", "GB/s", "datasheet", "of datasheet"],
                    [
                        [
                            p.get("device"),
                            p.get("op"),
                            p.get("bytes"),
                            p.get("status"),
                            p.get("gbs"),
                            p.get("datasheet_gbs"),
                            pct(p.get("efficiency")),
                        ]
                        for p in mem
                    ],
                    id="memory-points",
                    sortable=True,
                ),
                id="memory",
            )
        )
    layers = [p for p in doc.get("layer_points") or () if isinstance(p, Mapping)]
    if layers:
        out.append(
            section(
                "Layers",
                table(
                    [
                        "device",
                        "layer",
                        "dtype",
                        "attention",
                        "mode",
                        "batch",
                        "seq",
                        "status",
                        "TFLOP/s",
                        "of matmul",
                        "kernel",
                    ],
                    [
                        [
                            p.get("device"),
                            p.get("layer"),
                            p.get("dtype"),
                            p.get("attention"),
                            p.get("mode"),
                            p.get("batch"),
                            p.get("seq"),
                            p.get("status"),
                            p.get("tflops"),
                            pct(p.get("of_matmul")),
                            p.get("kernel"),
                        ]
                        for p in layers
                    ],
                    id="layer-points",
                    sortable=True,
                ),
                para(
                    "A layer's rate against the matmul rate of the same run; above 100 % of it means the layer's "
                    "own products ran faster than the square matmul points, not a faster GPU.",
                    "muted",
                ),
                id="layers",
            )
        )
    out.append(
        section(
            "Devices",
            table(
                [
                    "device",
                    "name",
                    "capability",
                    "SMs",
                    "memory bytes",
                    "max SM MHz",
                    "power limit W",
                    "datasheet",
                    "bandwidth GB/s",
                    "launch us",
                ],
                [
                    [
                        d.get("index"),
                        d.get("name"),
                        d.get("capability"),
                        d.get("multiprocessors"),
                        d.get("memory_bytes"),
                        d.get("max_sm_clock_mhz"),
                        d.get("power_limit_w"),
                        fmt(d.get("peaks")),
                        d.get("bandwidth_gbs"),
                        d.get("launch_us"),
                    ]
                    for d in devices
                ],
            ),
            kv(
                [
                    (
                        "datasheet source",
                        "; ".join(dict.fromkeys(str(d.get("peaks_source")) for d in devices if d.get("peaks_source"))),
                    )
                ]
            ),
            id="devices",
        )
    )
    out.append(
        section(
            "Run",
            kv(
                [
                    ("Python", doc.get("python")),
                    ("chosen by", doc.get("chosen_by")),
                    ("torch", doc.get("torch_version")),
                    ("CUDA", doc.get("torch_cuda")),
                    ("CUDA error", doc.get("cuda_error")),
                    ("suites", doc.get("suites")),
                    ("budget s", doc.get("budget_s")),
                    ("wall s", doc.get("wall_s")),
                    ("sampling", doc.get("sampling")),
                    (
                        "error",
                        (doc.get("error") or {}).get("message") if isinstance(doc.get("error"), Mapping) else None,
                    ),
                ]
            ),
            items(doc.get("notes") or (), "muted"),
            id="run",
        )
    )
    return out


def _verdict(doc: Mapping[str, Any], code: int) -> str:
    err = doc.get("error")
    if isinstance(err, Mapping) and err.get("message"):
        return f"the benchmark did not run: {err['message']}"
    n = sum(1 for p in doc.get("points") or () if isinstance(p, Mapping) and p.get("tflops") is not None)
    n += sum(1 for p in doc.get("memory_points") or () if isinstance(p, Mapping) and p.get("gbs") is not None)
    n += sum(1 for p in doc.get("layer_points") or () if isinstance(p, Mapping) and p.get("tflops") is not None)
    if n == 0:
        return "nothing was measured"
    lines = [str(v.get("line")) for v in doc.get("verdicts") or () if isinstance(v, Mapping) and v.get("line")]
    head = f"{n} point{'s' if n != 1 else ''} measured"
    if code == 0:
        return head + (f"; {lines[0]}" if lines else ": every point right")
    return (
        head
        + "; "
        + (
            next(
                (
                    str(v.get("line"))
                    for v in doc.get("verdicts") or ()
                    if isinstance(v, Mapping) and v.get("state") == "not_delivering"
                ),
                None,
            )
            or "a point failed or is wrong"
        )
    )


def bench_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or 0)
    devices = [x for x in d.get("devices") or () if isinstance(x, Mapping)]
    subject = ", ".join(dict.fromkeys(str(x.get("name")) for x in devices if x.get("name")))
    return page("bench", subject, code, _verdict(d, code), bench_sections(d), d)

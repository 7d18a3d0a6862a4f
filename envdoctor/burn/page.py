"""The HTML page of ``envdoctor burn --html``, from the burn document: the verdict per GPU, then
per GPU the time series of its rate, temperature, power and clocks, the counters and findings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, List, Optional, Tuple

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
    redact_document,
    section,
    svg_chart,
    table,
)
from envdoctor.redact import Redactor


def _gpu_name(g: Mapping[str, Any]) -> str:
    return "CPU" if g.get("kind") == "cpu" else f"GPU {g.get('index')} {g.get('name') or ''}".strip()


def _t0(gpus: Sequence[Mapping[str, Any]]) -> Optional[float]:
    starts = [
        float(s["t"])
        for g in gpus
        for s in g.get("samples") or ()
        if isinstance(s, Mapping) and isinstance(s.get("t"), (int, float))
    ]
    starts += [
        float(i["start"])
        for g in gpus
        for p in g.get("phases") or ()
        if isinstance(p, Mapping)
        for i in p.get("intervals") or ()
        if isinstance(i, Mapping) and isinstance(i.get("start"), (int, float))
    ]
    return min(starts) if starts else None


def _series(g: Mapping[str, Any], key: str, t0: float) -> Tuple[Tuple[float, float], ...]:
    return tuple(
        (float(s["t"]) - t0, float(s[key]))
        for s in g.get("samples") or ()
        if isinstance(s, Mapping) and isinstance(s.get(key), (int, float)) and isinstance(s.get("t"), (int, float))
    )


def _rates(g: Mapping[str, Any], t0: float) -> List[Series]:
    out = []
    for p in g.get("phases") or ():
        if not isinstance(p, Mapping):
            continue
        pts = tuple(
            ((float(i["start"]) + float(i["end"])) / 2 - t0, float(i["tflops"]))
            for i in p.get("intervals") or ()
            if isinstance(i, Mapping) and isinstance(i.get("tflops"), (int, float))
        )
        if pts:
            out.append(Series(f"{p.get('dtype')} n={p.get('n')}", pts))
    return out


def burn_charts(gpus: Sequence[Mapping[str, Any]]) -> List[str]:
    """Four time series, one line per GPU: rate, temperature, power, SM clock (seconds from the start)."""
    t0 = _t0(gpus)
    if t0 is None:
        return [para("Nothing was sampled to draw.", "muted")]
    rate = [Series(f"{_gpu_name(g)} {s.name}", s.points) for g in gpus for s in _rates(g, t0)]
    expected = {
        float(p["expected_tflops"])
        for g in gpus
        for p in g.get("phases") or ()
        if isinstance(p, Mapping) and isinstance(p.get("expected_tflops"), (int, float))
    }
    limits = {float(g["power_limit_w"]) for g in gpus if isinstance(g.get("power_limit_w"), (int, float))}
    slow = {float(g["slowdown_c"]) for g in gpus if isinstance(g.get("slowdown_c"), (int, float))}
    maxclk = {float(g["max_sm_clock_mhz"]) for g in gpus if isinstance(g.get("max_sm_clock_mhz"), (int, float))}

    def per_gpu(key: str) -> Tuple[Series, ...]:
        return tuple(Series(_gpu_name(g), _series(g, key, t0)) for g in gpus if _series(g, key, t0))

    return [
        svg_chart(
            Chart(
                "rate under load",
                "seconds",
                "TFLOP/s",
                tuple(rate),
                tuple(Ref(v, f"expected {v:g} TFLOP/s") for v in sorted(expected)),
            )
        ),
        svg_chart(
            Chart(
                "GPU temperature",
                "seconds",
                "deg C",
                per_gpu("temperature_c"),
                tuple(Ref(v, f"slowdown {v:g} C") for v in sorted(slow)),
            )
        ),
        svg_chart(
            Chart("power", "seconds", "W", per_gpu("power_w"), tuple(Ref(v, f"limit {v:g} W") for v in sorted(limits)))
        ),
        svg_chart(
            Chart(
                "clocks: SM (solid) and memory (dashed)",
                "seconds",
                "MHz",
                per_gpu("sm_clock_mhz")
                + tuple(
                    Series(f"{_gpu_name(g)} memory", _series(g, "mem_clock_mhz", t0), dashed=True)
                    for g in gpus
                    if _series(g, "mem_clock_mhz", t0)
                ),
                tuple(Ref(v, f"SM max {v:g} MHz") for v in sorted(maxclk)),
            )
        ),
    ]


def _gpu_section(g: Mapping[str, Any]) -> str:
    s = g.get("summary") or {}
    phases = [p for p in g.get("phases") or () if isinstance(p, Mapping)]
    deltas = g.get("counter_deltas") or {}
    child = g.get("child") or {}
    return section(
        f"{_gpu_name(g)}: {g.get('verdict')}",
        kv(
            [
                ("UUID", g.get("uuid")),
                ("bus", g.get("pci_bus_id")),
                ("power limit W", g.get("power_limit_w")),
                ("load s", s.get("load_s")),
                ("temperature max C", s.get("temperature_max_c")),
                ("temperature steady C", s.get("temperature_steady_c")),
                ("memory temperature max C", s.get("memory_temperature_max_c")),
                ("power median W", s.get("power_median_w")),
                ("power max W", s.get("power_max_w")),
                ("SM clock median MHz", s.get("sm_clock_median_mhz")),
                ("SM clock min MHz", s.get("sm_clock_min_mhz")),
                ("throttle reasons (samples)", s.get("reasons")),
                ("samples with a fault reason", s.get("fault_samples")),
                ("energy J", s.get("energy_j")),
                ("the child", child.get("message") or child.get("status")),
            ]
        ),
        table(
            ["dtype", "n", "status", "products", "mismatches", "ref error", "bound", "expected TFLOP/s"],
            [
                [
                    p.get("dtype"),
                    p.get("n"),
                    Cell(p.get("status"), "" if p.get("status") == "ok" else "error"),
                    p.get("products"),
                    p.get("mismatches"),
                    p.get("ref_error"),
                    p.get("ref_bound"),
                    p.get("expected_tflops"),
                ]
                for p in phases
            ],
        )
        if phases
        else "",
        kv([(k, v) for k, v in deltas.items() if v]) if isinstance(deltas, Mapping) else "",
        table(
            ["Xid", "when", "what"],
            [
                [x.get("xid"), x.get("t"), x.get("meaning") or x.get("text")]
                for x in g.get("xids") or ()
                if isinstance(x, Mapping)
            ],
        )
        if g.get("xids")
        else "",
        findings(g.get("findings") or (), "No findings: every check passed."),
        items(g.get("notes") or (), "muted"),
        id=f"gpu-{g.get('index')}",
    )


def burn_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or 0)
    gpus = [g for g in d.get("gpus") or () if isinstance(g, Mapping)]
    err = d.get("error")
    if isinstance(err, Mapping) and err.get("message"):
        verdict = f"the load did not run: {err['message']}"
    elif not gpus:
        verdict = "nothing was burned"
    else:
        verdict = ", ".join(f"{_gpu_name(g)} {g.get('verdict')}" for g in gpus)
        if d.get("cpu_run"):
            verdict += " (a CPU run: the products were checked, no GPU health verdict)"
    body = [
        section(
            "Verdicts",
            table(
                ["device", "verdict", "temperature max C", "power median W", "SM clock median MHz", "findings"],
                [
                    [
                        _gpu_name(g),
                        Cell(g.get("verdict"), "error" if g.get("verdict") == "FAULTY" else ""),
                        (g.get("summary") or {}).get("temperature_max_c"),
                        (g.get("summary") or {}).get("power_median_w"),
                        (g.get("summary") or {}).get("sm_clock_median_mhz"),
                        fmt([f.get("code") for f in g.get("findings") or () if isinstance(f, Mapping)]),
                    ]
                    for g in gpus
                ],
            ),
            id="verdicts",
        ),
        section("Over time", *burn_charts(gpus), id="charts"),
    ]
    if d.get("findings"):
        body.append(section("Findings about the run", findings(d["findings"]), id="findings"))
    body += [_gpu_section(g) for g in gpus]
    body.append(
        section(
            "Run",
            kv(
                [
                    ("Python", d.get("python")),
                    ("torch", d.get("torch_version")),
                    ("CUDA", d.get("torch_cuda")),
                    ("seconds per device", d.get("seconds")),
                    ("device", d.get("device")),
                    ("dtypes", d.get("dtypes")),
                    ("wall s", d.get("wall_s")),
                    ("interrupted", d.get("interrupted") or None),
                    ("sampling", d.get("sampling")),
                    ("Xid watch", d.get("xid_watch")),
                ]
            ),
            items(d.get("notes") or (), "muted"),
            id="run",
        )
    )
    subject = ", ".join(dict.fromkeys(str(g.get("name")) for g in gpus if g.get("name")))
    return page("burn", subject, code, verdict, body, d)

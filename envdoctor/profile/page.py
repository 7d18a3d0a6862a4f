"""The HTML page of ``envdoctor profile --html``, from the profile document: the verdict and the
findings first, the step time, where a step's time goes as one stacked bar (each busy category,
the copies, the communication, the idle time) against the step, the host syncs, throughput and MFU::

    profile_page(json.load(open("docs/examples/h200/profile/gpt2-train.json")))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, List, Optional, Tuple

from envdoctor.htmlpage import (
    Cell,
    findings,
    fmt,
    items,
    kv,
    page,
    para,
    pct,
    redact_document,
    section,
    stacked_bar,
    table,
)
from envdoctor.redact import Redactor


def _num(x: Any) -> Optional[float]:
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _ms(x: Any) -> Optional[float]:
    v = _num(x)
    return None if v is None else round(v * 1e3, 3)


def _fixed(x: Any, spec: str) -> Optional[str]:
    v = _num(x)
    return None if v is None else format(v, spec)


def breakdown_parts(b: Mapping[str, Any]) -> List[Tuple[str, float]]:
    """A step's time in ms: each busy category, each copy kind, each collective, then the idle time.

    >>> breakdown_parts({"compute": [{"name": "matmul", "seconds": 0.02}], "idle_s": 0.002})
    [('matmul', 20.0), ('idle', 2.0)]
    """
    parts: List[Tuple[str, float]] = []
    for group, label in (("compute", ""), ("copies", "copy "), ("comms", "comm ")):
        for row in b.get(group) or ():
            if isinstance(row, Mapping) and _num(row.get("seconds")) is not None:
                parts.append((f"{label}{row.get('name')}", float(row["seconds"]) * 1e3))
    if not b.get("comms") and _num(b.get("comm_s")):
        parts.append(("comms", float(b["comm_s"]) * 1e3))
    if _num(b.get("idle_s")) is not None:
        parts.append(("idle", float(b["idle_s"]) * 1e3))
    return parts


def verdict_text(d: Mapping[str, Any], code: int) -> str:
    """``55.5 ms per step, MFU 13.0 %, no findings`` or why nothing was profiled."""
    steps: Mapping[str, Any] = d["steps"] if isinstance(d.get("steps"), Mapping) else {}
    err = d.get("error")
    if code == 2 or steps.get("mean_s") is None:
        return f"nothing was profiled: {fmt(err)}" if err else "nothing was profiled"
    through: Mapping[str, Any] = d["throughput"] if isinstance(d.get("throughput"), Mapping) else {}
    rows = [f for f in d.get("findings") or () if isinstance(f, Mapping)]
    shown = [str(f.get("code")) for f in rows if f.get("severity") in ("error", "warning")]
    text = f"{fmt(_ms(steps.get('mean_s')), 4)} ms per step"
    if _num(through.get("mfu")) is not None:
        text += f", MFU {pct(through['mfu'])}"
    return text + (
        f", advice: {', '.join(shown)}" if shown else ", no findings" if not rows else f", {len(rows)} note(s)"
    )


def _breakdown(b: Mapping[str, Any]) -> List[str]:
    step = _ms(b.get("step_s"))
    parts = breakdown_parts(b)
    rows = [[name, Cell(round(ms, 3), "num"), pct(ms / step) if step else "-"] for name, ms in parts]
    return [
        stacked_bar(
            f"one step on {fmt(b.get('device'))}: where the time goes",
            parts,
            ("step", step) if step else None,
            unit="ms",
        )
        if parts
        else para("Nothing to draw.", "muted"),
        table(["part", "ms per step", "share of the step"], rows, id="breakdown") if rows else "",
        kv(
            [
                ("step ms (profiled)", step),
                ("busy ms", _ms(b.get("busy_s"))),
                ("idle ms", _ms(b.get("idle_s"))),
                ("matmul ms", _ms(b.get("matmul_s"))),
                ("matmul dtype", b.get("matmul_dtype")),
                ("fp32 matmul ms", _ms(b.get("matmul_fp32_s"))),
                ("optimizer ms", _ms(b.get("optimizer_s"))),
                ("data loader ms", _ms(b.get("dataloader_s"))),
                ("communication ms", _ms(b.get("comm_s"))),
                (
                    "communication overlapped",
                    pct(b.get("comm_overlap")) if _num(b.get("comm_overlap")) is not None else None,
                ),
                ("kernels per step", b.get("kernels_per_step")),
                ("launches per step", b.get("launches_per_step")),
                ("median kernel us", b.get("median_kernel_us")),
            ]
        ),
    ]


def profile_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    summary = d.get("summary") if isinstance(d.get("summary"), Mapping) else {}
    code = summary.get("exit_code")
    code = int(code) if isinstance(code, int) else 2
    rows = [f for f in d.get("findings") or () if isinstance(f, Mapping)]
    body = [
        section("Findings", findings(rows, "No findings: nothing in these steps calls for a change."), id="findings")
    ]
    err = d.get("error")
    if err:
        body.append(section("Could not profile", para(fmt(err), "error"), id="error"))
    steps = d.get("steps") if isinstance(d.get("steps"), Mapping) else {}
    figures = d.get("figures") if isinstance(d.get("figures"), Mapping) else {}
    if steps:
        body.append(
            section(
                "Step time",
                kv(
                    [
                        ("mean ms (profiled)", _ms(steps.get("mean_s"))),
                        ("spread", pct(steps.get("spread")) if _num(steps.get("spread")) is not None else None),
                        ("mean ms without the profiler", _ms(steps.get("baseline_s"))),
                        (
                            "profiler overhead",
                            pct(steps.get("overhead")) if _num(steps.get("overhead")) is not None else None,
                        ),
                        ("steps end at", figures.get("mode")),
                        ("optimizer steps seen", figures.get("optimizer_steps")),
                        (
                            "peak allocated GiB",
                            round(figures["peak_allocated"] / 2**30, 2)
                            if _num(figures.get("peak_allocated")) is not None
                            else None,
                        ),
                        (
                            "peak reserved GiB",
                            round(figures["peak_reserved"] / 2**30, 2)
                            if _num(figures.get("peak_reserved")) is not None
                            else None,
                        ),
                    ]
                ),
                id="steps",
            )
        )
    if isinstance(d.get("breakdown"), Mapping):
        body.append(section("Breakdown", *_breakdown(d["breakdown"]), id="breakdown-section"))
    syncs = [s for s in d.get("syncs") or () if isinstance(s, Mapping)]
    body.append(
        section(
            "Host syncs",
            table(
                ["op", "where", "function", "per step", "ms per step"],
                [
                    [s.get("op"), s.get("where"), s.get("function"), s.get("per_step"), _ms(s.get("seconds_per_step"))]
                    for s in syncs
                ],
                id="syncs",
                sortable=True,
            )
            if syncs
            else para("No host sync inside the profiled steps.", "muted"),
            id="syncs-section",
        )
    )
    through = d.get("throughput") if isinstance(d.get("throughput"), Mapping) else {}
    if through:
        body.append(
            section(
                "Throughput",
                kv(
                    [
                        ("FLOPs per step", _fixed(through.get("flops_per_step"), ".3g")),
                        ("TFLOP/s", _fixed(through.get("tflops"), ".1f")),
                        ("datasheet peak TFLOP/s", through.get("peak_tflops")),
                        ("peak dtype", through.get("peak_dtype")),
                        (
                            "MFU (of the datasheet)",
                            pct(through.get("mfu")) if _num(through.get("mfu")) is not None else None,
                        ),
                        ("peak source", through.get("peak_source")),
                        ("bench TFLOP/s", _fixed(through.get("bench_tflops"), ".1f")),
                        (
                            "MFU (of the bench)",
                            pct(through.get("mfu_bench")) if _num(through.get("mfu_bench")) is not None else None,
                        ),
                        ("FLOPs not counted", figures.get("flop_error")),
                    ]
                ),
                id="throughput",
            )
        )
    target = d.get("target") if isinstance(d.get("target"), Mapping) else {}
    script = d.get("script") if isinstance(d.get("script"), Mapping) else {}
    command = d.get("command")
    body.append(
        section(
            "Run",
            kv(
                [
                    ("command", " ".join(str(w) for w in command) if isinstance(command, list) else command),
                    ("rank", d.get("rank")),
                    ("world size", d.get("world_size")),
                    ("device", target.get("device")),
                    ("capability", target.get("capability")),
                    ("torch", target.get("torch")),
                    ("CUDA", target.get("torch_cuda")),
                    ("TF32 matmul", target.get("tf32_matmul")),
                    ("matmul dtypes", figures.get("matmul_dtypes")),
                    ("script finished", script.get("finished")),
                    ("stopped after the steps", script.get("stopped")),
                    ("trace", d.get("trace")),
                ]
            ),
            items(d.get("notes") or (), "muted"),
            id="run",
        )
    )
    subject = str(target.get("device") or "")
    return page("profile", subject, code, verdict_text(d, code), body, d)

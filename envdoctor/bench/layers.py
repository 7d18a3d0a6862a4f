"""Pure analysis of the layers suite: the share of the matmul rate measured in the same run and of
the datasheet, where each call's time goes, a short explanation per layer, and FlopCounterMode.

Where the time of one call goes, from what its counted call did (``ops``, ``other_bytes``):
the products at the matmul rate of this run (``matmul_share``), the bytes of every other
operation (norms, softmax, GELU, residual adds, copies) at the bandwidth measured by the memory
suite, else the datasheet's (``memory_share``), and the CPU's time to issue the call
(``launch_share``): measured by the child where it could (``issue_ms``, a GPU), else one launch
cost per kernel. Their sum below 1 leaves time to kernels slower than a large product.

The bound: ``launch`` when issuing the call takes the CPU at least ``LAUNCH_BOUND`` of the
call's time (the GPU waits for Python: such a point times the CPU, not the GPU); otherwise the
larger of compute and memory. Without a measured issue time, the estimate's largest share, or
``overhead`` where the estimates explain less than ``EXPLAINED`` of the call.

>>> dev = BenchDevice(0, launch_us=6.0, matmul_rates={"bf16": 650.0}, bandwidth_gbs=4800.0)
>>> p = LayerPoint(0, "gpt2", "bf16", "sdpa", "fwd+bwd", 16, 1024, flops=4.08e12, ms=10.85,
...                tflops=376.0, ops=150, other_bytes=12_000_000_000)
>>> q = analyze_layer_point(p, dev, 4200.0, "measured")
>>> round(q.of_matmul, 2), round(q.matmul_share, 2), round(q.memory_share, 2), q.bound
(0.58, 0.58, 0.26, 'compute')
>>> small = replace(p, batch=4, seq=128, flops=3.9e10, ms=1.83, tflops=21.6, issue_ms=1.79)
>>> q = analyze_layer_point(small, dev, 4200.0, "measured")
>>> q.bound, round(q.launch_share, 2)
('launch', 0.98)
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Sequence, Tuple

from envdoctor.bench.attribution import attribute
from envdoctor.bench.chart import format_rate
from envdoctor.bench.facts import LAYER_TITLES, BenchDevice, BenchPoint, FlopCheck, LayerPoint, NvmlSample, Verdict
from envdoctor.bench.memory import rate_label
from envdoctor.units import format_bytes

#: Launches taking at least this share of a call's time: the CPU issuing kernels sets the pace.
LAUNCH_BOUND = 0.8
#: Eager layers must agree with FlopCounterMode within this (the counts are the same products).
EAGER_TOLERANCE = 0.005
#: Products, memory traffic and launches explaining less than this share of a call: "overhead".
EXPLAINED = 0.5


#: What a layer "above 100%" of the matmul rate of its own run means.
ABOVE_MATMUL = (
    "above 100%: the matmul rate of this run is lower than the device reaches (other load while it "
    "ran, or products too small to fill it), not a layer faster than its own products"
)


def _tf(x: Optional[float]) -> str:
    """TFLOP/s in a sentence: 522, 47.3, 0.021."""
    return f"{x:.0f}" if x is not None and x >= 100 else format_rate(x)


def _pct(x: Optional[float]) -> str:
    return "?" if x is None else f"{100 * x:.0f}%"


def analyze_layer_point(
    p: LayerPoint,
    device: BenchDevice,
    bandwidth: Optional[float],
    bandwidth_from: str,
    samples: Sequence[NvmlSample] = (),
) -> LayerPoint:
    """The matmul and datasheet shares, the time split and the bound of one point."""
    p = attribute(p, samples, device.nvml_index)
    rate = device.matmul_rates.get(p.dtype)
    peak = device.peaks.get(p.dtype) if device.kind == "cuda" else None
    p = replace(
        p,
        matmul_tflops=rate,
        peak_tflops=peak,
        of_matmul=p.tflops / rate if (p.tflops and rate) else None,
        efficiency=p.tflops / peak if (p.tflops and peak) else None,
    )
    if not p.ms or p.status != "ok":
        return p
    t = p.ms / 1000.0
    mm = p.flops / (rate * 1e12) / t if rate else None
    mem = p.other_bytes / (bandwidth * 1e9) / t if (bandwidth and p.other_bytes is not None) else None
    issued = p.issue_ms is not None and p.issue_ms > 0
    if issued:
        launch: Optional[float] = (p.issue_ms or 0.0) / p.ms
    else:
        launch = p.ops * device.launch_us / 1e6 / t if (device.launch_us and p.ops) else None
    shares = {"compute": mm, "memory": mem, "launch": launch}
    known = {k: v for k, v in shares.items() if v is not None}
    if not known:
        return p
    gpu = {k: v for k, v in known.items() if k != "launch"}
    if launch is not None and launch >= LAUNCH_BOUND:
        kind = "launch"
    elif issued:
        kind = max(gpu, key=lambda k: gpu[k], default="launch")
    elif sum(known.values()) < EXPLAINED:
        kind = "overhead"
    else:
        kind = max(known, key=lambda k: known[k])
    parts = []
    if mm is not None:
        parts.append(f"products {_pct(mm)} of the time at the {_tf(rate)} TFLOP/s matmul rate")
    if mem is not None and bandwidth:
        parts.append(
            f"other operations {_pct(mem)} ({format_bytes(p.other_bytes or 0)} at the {bandwidth_from} "
            f"{rate_label(bandwidth)})"
        )
    if launch is not None and issued:
        kernels = f" ({p.ops} kernels)" if p.ops else ""
        parts.append(
            f"the CPU takes {p.issue_ms:.3g} ms to issue one call{kernels}, {_pct(launch)} of its "
            f"{p.ms:.3g} ms" + (": the GPU waits for Python" if kind == "launch" else "")
        )
    elif launch is not None:
        kernels = f"{p.ops} kernels x {device.launch_us:.1f} us"
        parts.append(
            f"launches ({kernels}) as long as the call itself"
            if launch >= 1.0
            else f"launches {_pct(launch)} ({kernels})"
        )
    rest = 1.0 - sum(gpu.values())
    if kind == "overhead":
        parts.append("the rest is the cost of issuing many small operations (Python, the dispatcher)")
    elif mm is not None and mem is not None and rest > 0.15 and kind != "launch":
        parts.append(f"{_pct(rest)} left to kernels slower than a large product (attention, small tiles)")
    return replace(p, matmul_share=mm, memory_share=mem, launch_share=launch, bound=kind, bound_why="; ".join(parts))


def _shape(p: LayerPoint) -> Tuple[int, int]:
    return p.batch * p.seq, p.batch


def _find(points: Sequence[LayerPoint], **want: object) -> Optional[LayerPoint]:
    for p in points:
        if p.status == "ok" and p.tflops and all(getattr(p, k) == v for k, v in want.items()):
            return p
    return None


def explain_layer(layer: str, points: Sequence[LayerPoint], device: BenchDevice) -> Optional[str]:
    """One line: the layer's forward+backward at its largest shape against the matmul rate, and why."""
    ok = [p for p in points if p.layer == layer and p.status == "ok" and p.tflops]
    if not ok:
        return None
    dtype = "bf16" if any(p.dtype == "bf16" for p in ok) else ok[0].dtype
    mine = [p for p in ok if p.dtype == dtype]
    big = max(mine, key=_shape)
    b, s = big.batch, big.seq
    main = (
        _find(mine, attention="sdpa", mode="fwd+bwd", batch=b, seq=s)
        or _find(mine, mode="fwd+bwd", batch=b, seq=s)
        or big
    )
    kernel = f" ({main.kernel})" if main.attention == "sdpa" and main.kernel else ""
    attn = "SDPA" if main.attention == "sdpa" else "eager attention"
    text = (
        f"{LAYER_TITLES.get(layer, layer)}, {dtype} b={b} s={s}: {attn}{kernel} {main.mode} "
        f"{_tf(main.tflops)} TFLOP/s, {_pct(main.of_matmul)} of the matmul rate"
    )
    why = []
    if main.memory_share is not None:
        why.append(
            f"its other operations (norms, activations, adds, copies: {format_bytes(main.other_bytes or 0)}) "
            f"take {_pct(main.memory_share)} of its time at the memory's speed"
        )
    eager = _find(mine, attention="eager", mode=main.mode, batch=b, seq=s) if main.attention == "sdpa" else None
    if eager is not None and eager.tflops:
        heads = device.layer_dims.get(layer, {}).get("heads")
        scores = f"{b}x{heads}x{s}x{s} " if heads else ""
        extra = (eager.other_bytes or 0) - (main.other_bytes or 0)
        moved = f": its softmax over the {scores}scores moves {format_bytes(extra)} more a call" if extra > 0 else ""
        why.append(f"eager attention reaches {_tf(eager.tflops)} ({_pct(eager.of_matmul)}){moved}")
    small = min(mine, key=_shape)
    if _shape(small) < _shape(big):
        twin = _find(mine, attention=main.attention, mode=main.mode, batch=small.batch, seq=small.seq) or small
        cpu_bound = twin.bound in ("launch", "overhead")
        cause = (
            "launch-bound: the CPU issues its kernels slower than the GPU runs them"
            if cpu_bound
            else f"{twin.batch * twin.seq} tokens a call fill the GPU less"
        )
        why.append(f"at b={twin.batch} s={twin.seq} {_tf(twin.tflops)} TFLOP/s ({_pct(twin.of_matmul)}): {cause}")
    return text + ("; " + "; ".join(why) if why else "")


def flop_lines(checks: Sequence[FlopCheck]) -> List[str]:
    """FlopCounterMode against the analytic count: eager must agree; SDPA is shown apart."""
    lines: List[str] = []
    failed = [c for c in checks if c.error]
    for c in failed[:2]:
        lines.append(f"FLOP count of {c.layer} ({c.attention}) not checked: {c.error}")
    eager = [c for c in checks if c.attention == "eager" and not c.error and c.counted_fwd_bwd is not None]
    if eager:
        diffs = [
            (abs((c.counted_fwd or 0) / c.analytic_fwd - 1), abs((c.counted_fwd_bwd or 0) / c.analytic_fwd_bwd - 1), c)
            for c in eager
        ]
        off = [(a, b, c) for a, b, c in diffs if max(a, b) > EAGER_TOLERANCE]
        worst = max(max(a, b) for a, b, _ in diffs)
        if not off:
            lines.append(
                f"FLOP count: FlopCounterMode agrees with the analytic count for the {len(eager)} eager "
                f"layers within {100 * worst:.2f}% (fwd and fwd+bwd)"
            )
        for _, _, c in off:
            lines.append(
                f"FLOP count: {c.layer} eager: FlopCounterMode counts {(c.counted_fwd or 0) / 1e9:.1f} / "
                f"{(c.counted_fwd_bwd or 0) / 1e9:.1f} GFLOP (fwd / fwd+bwd) against the analytic "
                f"{c.analytic_fwd / 1e9:.1f} / {c.analytic_fwd_bwd / 1e9:.1f}"
            )
    sdpa = [c for c in checks if c.attention == "sdpa" and not c.error and c.counted_fwd_bwd is not None]
    blind = [
        c
        for c in sdpa
        if c.attention_fwd
        and abs(c.analytic_fwd - (c.counted_fwd or 0) - c.attention_fwd) <= EAGER_TOLERANCE * c.analytic_fwd
    ]
    if blind:
        kernels = sorted({c.kernel or "?" for c in blind})
        lines.append(
            f"FLOP count, SDPA ({'/'.join(kernels)}): FlopCounterMode has no formula for this kernel and "
            "counts only the projections and the ffn, short by exactly the attention scores and values ("
            + ", ".join(c.layer for c in blind)
            + ")"
        )
    rest = [c for c in sdpa if c not in blind]
    if rest:
        parts = []
        for c in rest:
            fwd = (c.counted_fwd or 0) / c.analytic_fwd - 1
            both = (c.counted_fwd_bwd or 0) / c.analytic_fwd_bwd - 1
            fwd_note = f" (fwd {100 * fwd:+.1f}%)" if abs(fwd) > EAGER_TOLERANCE else ""
            parts.append(f"{c.layer} {100 * both:+.1f}%{fwd_note}")
        kernels = sorted({c.kernel or "?" for c in rest})
        lines.append(
            f"FLOP count, SDPA ({'/'.join(kernels)}) fwd+bwd: FlopCounterMode counts more than 3x the "
            "forward, by the scores its backward recomputes: " + ", ".join(parts)
        )
    return lines


def layers_verdict(
    device: BenchDevice,
    points: Sequence[LayerPoint],
    checks: Sequence[FlopCheck],
    reference: Sequence[BenchPoint] = (),
    matmul_ran: bool = True,
) -> Verdict:
    """A summary line per device (no judgement), the explanation per layer, the FLOP check."""
    i = device.index
    ok = [p for p in points if p.status == "ok" and p.tflops]
    wrong = [p for p in points if p.status == "wrong"]
    why: List[str] = []
    for layer in dict.fromkeys(p.layer for p in points):
        line = explain_layer(layer, points, device)
        if line:
            why.append(line)
    for ref in reference:
        floor = 2048 if device.kind == "cuda" else 256
        cause = (
            f"the matmul suite did not measure {ref.dtype} at n >= {floor}"
            if matmul_ran
            else "the matmul suite was not asked for"
        )
        why.append(
            f"the {ref.dtype} matmul rate ({_tf(ref.tflops)} TFLOP/s) comes from one short product at "
            f"n={ref.n} run for the layers: {cause}"
        )
    why.extend(flop_lines(checks))
    if wrong:
        p = wrong[0]
        return Verdict(
            i,
            "not_delivering",
            f"Layers: {p.layer} {p.dtype} {p.attention} {p.mode} b={p.batch} s={p.seq} gave NaN or Inf",
            tuple(why),
            suite="layers",
            code="ED611",
        )
    if not ok:
        return Verdict(i, "none", "Layers: no point was measured", tuple(why), suite="layers")
    best = max(ok, key=lambda p: p.tflops or 0.0)
    rates = ", ".join(f"{d} {_tf(r)}" for d, r in sorted(device.matmul_rates.items()))
    line = (
        f"Layers: up to {_tf(best.tflops)} TFLOP/s ({best.layer} {best.dtype} {best.attention} {best.mode} "
        f"b={best.batch} s={best.seq}), {_pct(best.of_matmul)} of the matmul rate measured in this run"
        + (f" ({rates} TFLOP/s)" if rates else "")
        + (f"; {ABOVE_MATMUL}" if best.of_matmul is not None and best.of_matmul > 1.0 else "")
    )
    return Verdict(i, "none", line, tuple(why), suite="layers")


def bandwidth_for_layers(device: BenchDevice, measured: Optional[float]) -> Tuple[Optional[float], str]:
    """(GB/s, "measured" | "datasheet") for the memory share of the layer points."""
    if measured:
        return measured, "measured"
    if device.kind == "cuda" and device.bandwidth_gbs:
        return device.bandwidth_gbs, "datasheet"
    return None, ""

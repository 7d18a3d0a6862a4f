"""Pure analysis of the memory suite: L2-resident sizes, the datasheet share, the bandwidth verdict.

A size is L2-resident when both its buffers (read and written) fit in the L2 the GPU reports:
such points can run faster than the HBM. The verdict judges the HBM by the best point whose
two buffers span at least ``L2_FACTOR`` L2 caches (with no L2 size known: 256 MiB moved).

>>> dev = BenchDevice(0, name="NVIDIA H200", l2_bytes=50 << 20, bandwidth_gbs=4800.0)
>>> pts = [MemoryPoint(0, "copy", 1 << 28, bytes=1 << 30, moved_bytes=2 << 30, gbs=4232.7)]
>>> memory_verdict(dev, pts).line
'HBM delivers 4.2 TB/s, 88% of the 4.8 TB/s datasheet (c.copy_(a), 1 GiB buffers)'
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Sequence

from envdoctor.bench.attribution import attribute
from envdoctor.bench.facts import BenchDevice, MemoryPoint, NvmlSample, Verdict
from envdoctor.units import format_bytes

#: Sizes whose two buffers span at least this many L2 caches judge the HBM.
L2_FACTOR = 4
#: Without an L2 size (an old torch): points moving at least this many bytes a call.
NO_L2_MOVED = 256 << 20
#: Under this share of the datasheet the bandwidth is an error (ED605); under OK_SHARE a warning (ED606).
LOW_SHARE = 0.65
OK_SHARE = 0.80
STATEMENTS = {"mul": "torch.mul(a, 1.2, out=c)", "copy": "c.copy_(a)"}


def elements_label(n: int) -> str:
    """``elements_label(65536) == '64Ki'``, ``elements_label(1 << 28) == '256Mi'``."""
    for unit, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def rate_label(gbs: float) -> str:
    """``rate_label(4232.7) == '4.2 TB/s'``, ``rate_label(68.5) == '68.5 GB/s'``."""
    return f"{gbs / 1000:.1f} TB/s" if gbs >= 1000 else f"{gbs:.1f} GB/s"


def analyze_memory_point(p: MemoryPoint, device: BenchDevice, samples: Sequence[NvmlSample] = ()) -> MemoryPoint:
    p = attribute(p, samples, device.nvml_index)
    resident = (p.moved_bytes <= device.l2_bytes) if (device.kind == "cuda" and device.l2_bytes) else None
    sheet = device.bandwidth_gbs if device.kind == "cuda" else None
    eff = p.gbs / sheet if (p.gbs is not None and sheet) else None
    return replace(p, l2_resident=resident, datasheet_gbs=sheet, efficiency=eff)


def beyond_l2(p: MemoryPoint, device: BenchDevice) -> bool:
    """Whether the point's two buffers are far past the L2 (what judges the HBM or the CPU's memory)."""
    if device.kind == "cuda" and device.l2_bytes:
        return p.moved_bytes >= L2_FACTOR * device.l2_bytes
    return p.moved_bytes >= NO_L2_MOVED


def best_beyond_l2(device: BenchDevice, points: Sequence[MemoryPoint]) -> Optional[MemoryPoint]:
    ok = [p for p in points if p.status == "ok" and p.gbs and beyond_l2(p, device)]
    return max(ok, key=lambda p: p.gbs or 0.0) if ok else None


def measured_bandwidth(device: BenchDevice, points: Sequence[MemoryPoint]) -> Optional[float]:
    """The device's best measured GB/s past the L2, or None when the suite did not measure one."""
    best = best_beyond_l2(device, points)
    return best.gbs if best is not None else None


def _what(p: MemoryPoint) -> str:
    return f"{STATEMENTS.get(p.op, p.op)}, {format_bytes(p.bytes)} buffers"


def memory_verdict(device: BenchDevice, points: Sequence[MemoryPoint]) -> Verdict:
    """How much of the datasheet bandwidth the HBM delivers (or the CPU's memory: no verdict)."""
    i = device.index
    best = best_beyond_l2(device, points)
    if device.kind == "cpu":
        if best is None:
            return Verdict(i, "none", "CPU memory bandwidth: no size past the caches was measured", suite="memory")
        return Verdict(
            i,
            "none",
            f"CPU memory bandwidth: {rate_label(best.gbs or 0.0)} ({_what(best)}); "
            "torch ran on the CPU, no GPU verdict",
            suite="memory",
        )
    if best is None:
        broken = [p for p in points if p.status != "ok"]
        failures = tuple(f"{p.op} n={p.n}: {p.status}: {p.error}" for p in broken[:4])
        floor = f"{L2_FACTOR}x the {format_bytes(device.l2_bytes)} L2" if device.l2_bytes else format_bytes(NO_L2_MOVED)
        return Verdict(
            i,
            "none",
            f"No bandwidth verdict: no size whose buffers span {floor} was measured",
            failures,
            suite="memory",
        )
    gbs = best.gbs or 0.0
    sheet = device.bandwidth_gbs
    if not sheet:
        return Verdict(
            i,
            "none",
            f"HBM delivers {rate_label(gbs)} ({_what(best)}); this GPU's datasheet "
            "bandwidth is not in envdoctor's table",
            suite="memory",
        )
    share = gbs / sheet
    line = f"{rate_label(gbs)}, {100 * share:.0f}% of the {rate_label(sheet)} datasheet ({_what(best)})"
    why: List[str] = []
    if best.mem_clock_mhz and device.max_mem_clock_mhz and best.mem_clock_mhz < device.max_mem_clock_mhz:
        why.append(f"the memory clock ran at {best.mem_clock_mhz} of {device.max_mem_clock_mhz} MHz")
    if device.peaks_unconfirmed:
        why.append(f"the datasheet figures for {device.model} are unconfirmed in envdoctor's table")
    if share < LOW_SHARE:
        why.insert(
            0,
            f"under {100 * LOW_SHARE:.0f}% of the datasheet: another process on the GPU, a memory "
            "clock held low, or a fault (see `nvidia-smi -q -d CLOCK,PERFORMANCE`)",
        )
        return Verdict(
            i, "not_delivering", "HBM far below its datasheet: " + line, tuple(why), share, suite="memory", code="ED605"
        )
    if share < OK_SHARE:
        why.insert(0, f"under {100 * OK_SHARE:.0f}% of the datasheet, where HBM GPUs usually deliver 85-92%")
        return Verdict(i, "below", "HBM below its datasheet: " + line, tuple(why), share, suite="memory", code="ED606")
    return Verdict(i, "confirmed", "HBM delivers " + line, tuple(why), share, suite="memory")


def l2_note(device: BenchDevice, points: Sequence[MemoryPoint]) -> Optional[str]:
    """One line on the L2-resident sizes that ran faster than the HBM, if any did."""
    resident = [p for p in points if p.l2_resident and p.status == "ok" and p.gbs]
    hbm = measured_bandwidth(device, points)
    if not resident or not device.l2_bytes:
        return None
    fastest = max(resident, key=lambda p: p.gbs or 0.0)
    tail = f", above the {rate_label(hbm)} measured past it" if hbm and (fastest.gbs or 0.0) > hbm else ""
    return (
        f"sizes whose two buffers fit in the {format_bytes(device.l2_bytes)} L2 are served from it: "
        f"up to {rate_label(fastest.gbs or 0.0)} at {format_bytes(fastest.bytes)} buffers{tail}"
    )

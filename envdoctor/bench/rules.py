"""The bench's findings (ED600-ED629), from an analysed BenchResult (pure).

Errors make ``envdoctor bench`` exit 1; warnings and info do not. The verdicts say the same in
the report's words; these are the stable codes for scripts, suppression and search.

>>> from envdoctor.bench.facts import BenchResult, Verdict
>>> r = BenchResult(verdicts=(Verdict(0, "below", "HBM below its datasheet: 3.7 TB/s, 77% ...",
...                                   suite="memory", code="ED606"),))
>>> [(f.code, f.severity) for f in bench_findings(r)]
[('ED606', 'warning')]
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from envdoctor import codes
from envdoctor.bench.chart import format_rate
from envdoctor.bench.facts import BenchResult, LayerPoint, MemoryPoint
from envdoctor.findings import Finding, Severity, sort_findings

#: code -> (title, what it means and what to do). The lead wires these into envdoctor/codes.py.


def _finding(code: str, severity: Severity, evidence: List[str], fix: Tuple[str, ...] = ()) -> Finding:
    entry = codes.CODES[code]
    return Finding(code, severity, entry.title, tuple(evidence[:6]), fix, area="bench", explanation=codes.meaning(code))


def _layer(p: LayerPoint) -> str:
    return f"GPU {p.device} {p.layer} {p.dtype} {p.attention} {p.mode} b={p.batch} s={p.seq}"


#: The slowest repeat of a point this many times its fastest: other load disturbed it (a quiet GPU
#: stays within a few percent, a quiet CPU within about 2x). Repeats faster than ``DISTURBED_MIN_MS``
#: are left out: at a few microseconds a call, timer and scheduler jitter alone spread them.
DISTURBED = 10.0
DISTURBED_MIN_MS = 0.05


def _what(p: Any, devices: Dict[int, str]) -> str:
    who = "CPU" if devices.get(p.device) == "cpu" else f"GPU {p.device}"
    if isinstance(p, LayerPoint):
        return f"{who} {p.layer} {p.dtype} {p.attention} {p.mode} b={p.batch} s={p.seq}"
    if isinstance(p, MemoryPoint):
        return f"{who} memory {p.op} n={p.n}"
    return f"{who} {p.dtype} n={p.n}"


def disturbed(result: BenchResult) -> List[str]:
    """Points whose repeats lie ``DISTURBED`` times apart or more, one line each."""
    devices = {d.index: d.kind for d in result.devices}
    lines = []
    points: Tuple[Any, ...] = (*result.points, *result.memory_points, *result.layer_points)
    for p in points:
        times = [t for t in p.repeats_ms if t and t > 0]
        if p.status != "ok" or len(times) < 3 or min(times) < DISTURBED_MIN_MS or max(times) < DISTURBED * min(times):
            continue
        rate = getattr(p, "tflops", None)
        median = f"its median {format_rate(rate)} TFLOP/s" if rate is not None else "its median"
        lines.append(
            f"{_what(p, devices)}: repeats from {min(times):.3g} to {max(times):.4g} ms a call "
            f"({max(times) / min(times):.0f}x apart): another program used the device meanwhile; "
            f"{median} is not the device's"
        )
    return lines


def bench_findings(result: BenchResult) -> Tuple[Finding, ...]:
    """The findings of one analysed run, errors first."""
    out: List[Finding] = []
    noisy = disturbed(result)
    if noisy:
        out.append(
            _finding(
                "ED613",
                "warning",
                noisy,
                (
                    "top -o %CPU   # what else runs (on a GPU: nvidia-smi, its processes)",
                    "# run envdoctor bench again when the machine is otherwise idle",
                ),
            )
        )
    for v in result.verdicts:
        if v.suite == "matmul" and v.state == "not_delivering":
            out.append(_finding("ED600", "error", [f"GPU {v.device}: {v.line}"] + list(v.why)))
        elif v.suite == "memory" and v.code in ("ED605", "ED606"):
            out.append(
                _finding(
                    v.code,
                    "error" if v.code == "ED605" else "warning",
                    [f"GPU {v.device}: {v.line}"] + list(v.why),
                    ("nvidia-smi", "nvidia-smi -q -d CLOCK,PERFORMANCE"),
                )
            )
    broken = [p for p in result.points if p.status != "ok"]
    if broken:
        out.append(
            _finding("ED601", "error", [f"GPU {p.device} {p.dtype} n={p.n}: {p.status}: {p.error}" for p in broken])
        )
    if result.outliers:
        out.append(_finding("ED602", "error", list(result.outliers)))
    memory = [p for p in result.memory_points if p.status in ("wrong", "failed")]
    if memory:
        out.append(
            _finding("ED607", "error", [f"GPU {p.device} {p.op} n={p.n}: {p.status}: {p.error}" for p in memory])
        )
    cuda = {d.index for d in result.devices if d.kind == "cuda"}
    math = [
        p
        for p in result.layer_points
        if p.device in cuda and p.attention == "sdpa" and p.kernel == "math" and p.dtype in ("fp16", "bf16")
    ]
    if math:
        out.append(
            _finding(
                "ED610",
                "warning",
                [f"{_layer(p)}: {p.kernel_how}" for p in math],
                (
                    'python -c "import torch; b = torch.backends.cuda; print(b.flash_sdp_enabled(), '
                    'b.mem_efficient_sdp_enabled(), b.is_flash_attention_available())"',
                ),
            )
        )
    layers = [p for p in result.layer_points if p.status in ("wrong", "failed")]
    if layers:
        out.append(_finding("ED611", "error", [f"{_layer(p)}: {p.status}: {p.error}" for p in layers]))
    oom = [p for p in result.layer_points if p.status == "skipped" and (p.error or "").startswith("out of memory")]
    if oom:
        out.append(_finding("ED612", "info", [f"{_layer(p)}: {p.error}" for p in oom]))
    return sort_findings(out)

"""The bench's findings (ED600-ED629), from an analysed BenchResult (pure).

Errors make ``envdoctor bench`` exit 1; warnings and info do not. The verdicts say the same in
the report's words; these are the stable codes for scripts, suppression and search.

>>> from envdoctor.facts.bench import BenchResult, Verdict
>>> r = BenchResult(verdicts=(Verdict(0, "below", "HBM below its datasheet: 3.7 TB/s, 77% ...",
...                                   suite="memory", code="ED606"),))
>>> [(f.code, f.severity) for f in bench_findings(r)]
[('ED606', 'warning')]
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from envdoctor.facts.bench import BenchResult, LayerPoint
from envdoctor.findings import Finding, sort_findings

#: code -> (title, what it means and what to do). The lead wires these into envdoctor/codes.py.
CODES: Dict[str, Tuple[str, str]] = {
    "ED600": ("Tensor Cores not delivering",
              "fp16 matrix products run no faster than the GPU's fp32 units allow: torch runs on the CPU, the "
              "fp16 kernels do not use the Tensor Cores (a torch or cuBLAS older than the GPU), or the GPU is "
              "throttled. The verdict's lines say which; `envdoctor check` shows the torch build."),
    "ED601": ("A matrix product failed or computed a wrong result",
              "A matmul point raised an error or its result differs from float64 beyond the dtype's bound. A "
              "wrong result at any speed is a fault of the GPU, its memory, the driver or the library: rerun, "
              "then `envdoctor burn` and `nvidia-smi -q -d ECC,ROW_REMAPPER`."),
    "ED602": ("A GPU is slower than its siblings",
              "With --device all, one GPU's matmul rate is more than 10% under the median of the others at the "
              "same size: look at its clocks, power limit and throttle reasons in the report, and its cooling."),
    "ED605": ("GPU memory bandwidth far below the datasheet",
              "The best copy or a * 1.2 over buffers well past the L2 reached less than 65% of the datasheet "
              "bandwidth. HBM GPUs deliver 85-92% of it. Look for another process on the GPU (`nvidia-smi`), "
              "a memory clock held low (`nvidia-smi -q -d CLOCK`), or a fault."),
    "ED606": ("GPU memory bandwidth below the datasheet",
              "The best copy or a * 1.2 past the L2 reached 65-80% of the datasheet bandwidth, under the usual "
              "85-92%. It can be the load of another process, a memory clock below its maximum, or ECC on a "
              "GDDR card; compare with a second run and with the machine's other GPUs."),
    "ED607": ("A memory-bandwidth point failed or wrote wrong data",
              "A copy or a * 1.2 raised an error other than running out of memory, or its output differs from "
              "what it computes. Wrong data from a plain copy points at the GPU or its memory: rerun, then "
              "`envdoctor burn` and `nvidia-smi -q -d ECC,ROW_REMAPPER`."),
    "ED610": ("scaled_dot_product_attention runs the math kernel on this GPU",
              "SDPA fell back to its unfused math path for fp16/bf16, which materialises the s x s scores like "
              "eager attention: a torch built without the flash and memory-efficient kernels, those kernels "
              "switched off (torch.backends.cuda.enable_flash_sdp(False)), or inputs they refuse. Training "
              "and inference run slower and use more memory than they could."),
    "ED611": ("A transformer layer failed or gave NaN/Inf",
              "A layer point raised an error other than running out of memory, or its output (or its input's "
              "gradient) holds NaN or Inf with inputs and weights that cannot overflow. Rerun; if it stays, "
              "the kernel or the GPU computes wrongly: `envdoctor burn`, and report the torch version."),
    "ED612": ("Layer points skipped: not enough GPU memory",
              "Some layer points ran out of memory and were skipped (the rest were measured). Free the GPU of "
              "other processes, or read the skipped shapes as too large for this GPU."),
}


def _finding(code: str, severity: str, evidence: List[str], fix: Tuple[str, ...] = ()) -> Finding:
    title, explanation = CODES[code]
    return Finding(code, severity, title, tuple(evidence[:6]), fix, area="bench", explanation=explanation)


def _layer(p: LayerPoint) -> str:
    return f"GPU {p.device} {p.layer} {p.dtype} {p.attention} {p.mode} b={p.batch} s={p.seq}"


def bench_findings(result: BenchResult) -> Tuple[Finding, ...]:
    """The findings of one analysed run, errors first."""
    out: List[Finding] = []
    for v in result.verdicts:
        if v.suite == "matmul" and v.state == "not_delivering":
            out.append(_finding("ED600", "error", [f"GPU {v.device}: {v.line}"] + list(v.why)))
        elif v.suite == "memory" and v.code in ("ED605", "ED606"):
            out.append(_finding(v.code, "error" if v.code == "ED605" else "warning",
                                [f"GPU {v.device}: {v.line}"] + list(v.why),
                                ("nvidia-smi", "nvidia-smi -q -d CLOCK,PERFORMANCE")))
    broken = [p for p in result.points if p.status != "ok"]
    if broken:
        out.append(_finding("ED601", "error", [f"GPU {p.device} {p.dtype} n={p.n}: {p.status}: {p.error}"
                                               for p in broken]))
    if result.outliers:
        out.append(_finding("ED602", "error", list(result.outliers)))
    memory = [p for p in result.memory_points if p.status in ("wrong", "failed")]
    if memory:
        out.append(_finding("ED607", "error", [f"GPU {p.device} {p.op} n={p.n}: {p.status}: {p.error}"
                                               for p in memory]))
    cuda = {d.index for d in result.devices if d.kind == "cuda"}
    math = [p for p in result.layer_points if p.device in cuda and p.attention == "sdpa" and p.kernel == "math"
            and p.dtype in ("fp16", "bf16")]
    if math:
        out.append(_finding("ED610", "warning", [f"{_layer(p)}: {p.kernel_how}" for p in math], (
            "python -c \"import torch; b = torch.backends.cuda; print(b.flash_sdp_enabled(), "
            "b.mem_efficient_sdp_enabled(), b.is_flash_attention_available())\"",)))
    layers = [p for p in result.layer_points if p.status in ("wrong", "failed")]
    if layers:
        out.append(_finding("ED611", "error", [f"{_layer(p)}: {p.status}: {p.error}" for p in layers]))
    oom = [p for p in result.layer_points if p.status == "skipped" and (p.error or "").startswith("out of memory")]
    if oom:
        out.append(_finding("ED612", "info", [f"{_layer(p)}: {p.error}" for p in oom]))
    return sort_findings(out)

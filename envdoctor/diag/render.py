"""``envdoctor diag``'s text: one line per test, grouped by node and GPU, then the findings behind a
WARN or FAIL with their fixes, then the verdict line a scheduler's log keeps::

    envdoctor diag -r 1 (quick, up to 15 s) on gpu-01: 1 GPU
      PASS  check        nothing found
      ...
    GPU 0 NVIDIA H200 (00000000:00:06.0): PASS
      PASS  cuda_op      1.07e-07 relative error (<= 0.0001)
    verdict: PASS: node gpu-01, level 1, 6.1 s
"""

from __future__ import annotations

from typing import List, Optional

from envdoctor.diag.facts import DiagResult, DiagTest
from envdoctor.lines import finding_lines, suppressed_line
from envdoctor.style import Style

KIND = {"PASS": "ok", "WARN": "warning", "FAIL": "error", "SKIP": "dim", "INFO": "info"}


def _num(x: Optional[float]) -> str:
    if x is None:
        return "?"
    if x != 0 and (abs(x) < 0.01 or abs(x) >= 1e6):
        return f"{x:.3g}"
    return f"{x:.4g}"


def figure_text(t: DiagTest) -> str:
    """``658.2 TFLOP/s (>= 600)``, ``0 processes (== 0)``, or the detail alone."""
    if t.figure is None:
        return t.detail
    bound = ""
    if t.threshold is not None:
        bound = (
            f" ({t.compare or '>='} {_num(t.threshold)}"
            + (f", warn under {_num(t.warn_threshold)}" if t.warn_threshold is not None else "")
            + ")"
        )
    elif t.status == "INFO":
        bound = " (no threshold for this GPU)"
    text = f"{_num(t.figure)} {t.unit or ''}".rstrip() + bound
    return f"{text}; {t.detail}" if t.detail else text


def test_line(t: DiagTest, style: Style) -> str:
    return f"  {style(t.status.ljust(4), KIND.get(t.status, 'dim'))}  {t.name:<17}{figure_text(t)}"


def verdict_line(r: DiagResult) -> str:
    where = f"node {r.hostname or '?'}, level {r.level}" + (f", {r.wall_s:.1f} s" if r.wall_s is not None else "")
    if r.verdict == "NO_GPU":
        return f"verdict: NO_GPU: {r.error.message if r.error else 'no GPU'} ({where})"
    if r.verdict == "ERROR":
        return f"verdict: could not start: {r.error.message if r.error else '?'} ({where})"
    if r.failed:
        return f"verdict: {r.verdict}: {', '.join(r.failed)} ({where})"
    return f"verdict: {r.verdict}: {where}"


def render_diag_text(r: DiagResult, color: bool = False, verbose: bool = False) -> str:
    style = Style(color)
    lines: List[str] = [
        style(
            f"envdoctor diag -r {r.level} ({r.level_name}, up to {r.budget_s:.0f} s) on "
            f"{r.hostname or '?'}: {len(r.gpus)} GPU(s)",
            "bold",
        )
    ]
    lines += [test_line(t, style) for t in r.tests if t.gpu is None]
    for g in r.gpus:
        lines.append(
            style(f"GPU {g.index} {g.name or '?'} ({g.bus_id or '?'}): ", "bold")
            + style(g.verdict, KIND[g.verdict])
            + (f" ({', '.join(g.failed)})" if g.failed else "")
        )
        lines += [test_line(t, style) for t in r.tests if t.gpu == g.index]
    others = [t for t in r.tests if t.gpu is not None and t.gpu not in {g.index for g in r.gpus}]
    lines += [test_line(t, style) for t in others]
    if verbose:
        lines.append("sources of the thresholds:")
        lines += sorted({f"  {t.name}: {t.source}" for t in r.tests if t.source})
    shown = [f for f in r.findings if f.severity in ("error", "warning")]
    if shown:
        lines.append("")
        lines += finding_lines(shown, style)
    if r.suppressed is not None:
        lines += suppressed_line(r.suppressed.findings, style)
    for n in r.notes:
        lines.append(style(f"note: {n}", "dim"))
    if r.stage_s:
        lines.append(style("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in r.stage_s.items()), "dim"))
    lines.append(style(verdict_line(r), KIND.get(r.verdict, "error")))
    return "\n".join(lines) + "\n"

"""``envdoctor bench``: matrix-product TFLOP/s in the target interpreter, and what they mean.

``host.run_bench`` runs ``child.py`` in the target Python and samples NVML; ``analysis`` is pure
(verdict, bound, efficiency, regressions); ``chart`` draws the terminal chart; the text report is
``envdoctor.render.bench.render_bench_text``.
"""

from __future__ import annotations

from envdoctor.bench.analysis import analyze, compare_bench
from envdoctor.bench.host import QUICK, Progress, resolve_python, run_bench, write_plot

__all__ = ["QUICK", "Progress", "analyze", "compare_bench", "resolve_python", "run_bench", "write_plot"]

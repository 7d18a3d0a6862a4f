"""``envdoctor bench``: matmul TFLOP/s, memory bandwidth and transformer layers in the target
interpreter, and what they mean (docs/bench.md).

``host.run_bench`` runs ``envdoctor/bench/target/bench.py`` in the target Python (one child for the
asked suites) and samples NVML; the analysis is pure: ``analysis`` (matmul: verdict, bound,
efficiency, regressions; it calls the others), ``memory``, ``layers``, ``attribution`` (NVML per
point), ``rules`` (the findings ED600-ED629); ``chart`` draws the terminal charts; the text report is
``envdoctor.bench.render.render_bench_text``; ``facts`` the document's types; ``command`` the Click
command.
"""

from __future__ import annotations

from envdoctor.bench.analysis import analyze, compare_bench
from envdoctor.bench.host import QUICK, Progress, resolve_python, run_bench, write_plot

__all__ = ["QUICK", "Progress", "analyze", "compare_bench", "resolve_python", "run_bench", "write_plot"]

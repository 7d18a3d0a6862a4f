"""Draw the benchmark as a PNG in the target interpreter, with its matplotlib (run by envdoctor.child).

Standard library and matplotlib only, Python 3.8+. Config: one panel per suite, stacked::

    {"path": "bench.png", "title": "NVIDIA H200, torch 2.11.0+cu130", "panels": [
      {"kind": "lines", "title": "matmul", "xlabel": "n (n x n @ n x n)", "ylabel": "TFLOP/s",
       "series": {"fp16": [[128, 1.2], [8192, 640.0]]}, "hlines": {"fp16": 989.4}, "xmax_shade": null},
      {"kind": "lines", "title": "memory", ..., "xmax_shade": 6553600, "shade_label": "L2-resident"},
      {"kind": "bars", "title": "layers", "xlabel": "TFLOP/s", "categories": ["bert sdpa", ...],
       "series": {"fwd": [300.0, ...], "fwd+bwd": [350.0, ...]}, "vline": 650.0, "vline_label": "matmul"}]}

The spec of envdoctor before the suites (``series`` and ``peaks`` at the top) is one "lines"
panel. Answers ``{"path": ...}``, or fails with kind ``no_matplotlib``.
"""

if False:  # for readers and linters: this comes from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure

COLORS = {
    "fp32": "tab:blue",
    "tf32": "tab:cyan",
    "fp16": "tab:green",
    "bf16": "tab:purple",
    "mul": "tab:orange",
    "copy": "tab:cyan",
    "fwd": "tab:green",
    "fwd+bwd": "tab:purple",
}


def lines_panel(ax, panel, ticker):
    series = panel.get("series", {})
    for name, pts in series.items():
        pts = sorted(pts)
        color = COLORS.get(name)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, color=color)
        level = panel.get("hlines", {}).get(name)
        if level:
            ax.axhline(level, linestyle="--", linewidth=0.8, color=color)
    for name, level in panel.get("hlines", {}).items():
        if name not in series and level:
            ax.axhline(level, linestyle="--", linewidth=0.8, color="gray", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    xs = sorted(set(p[0] for pts in series.values() for p in pts))
    if xs:
        ax.set_xticks(xs)
        ax.set_xticklabels([panel.get("xticklabels", {}).get(str(x), str(x)) for x in xs], rotation=0, fontsize=7)
        ax.set_xlim(xs[0] / 1.5, xs[-1] * 1.5)
        shade = panel.get("xmax_shade")
        if shade:
            ax.axvspan(xs[0] / 1.5, shade, alpha=0.12, color="gray", label=panel.get("shade_label"))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
    ax.grid(True, which="both", linewidth=0.3)


def bars_panel(ax, panel):
    cats = panel.get("categories", [])
    series = panel.get("series", {})
    height = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        ys = [i + (k - (len(series) - 1) / 2.0) * height for i in range(len(cats))]
        ax.barh(ys, [v or 0 for v in values], height=height, label=name, color=COLORS.get(name))
    ax.set_yticks(list(range(len(cats))))
    ax.set_yticklabels(cats, fontsize=7)
    ax.invert_yaxis()
    if panel.get("vline"):
        ax.axvline(panel["vline"], linestyle="--", linewidth=0.8, color="gray", label=panel.get("vline_label"))
    ax.grid(True, axis="x", linewidth=0.3)


def main(spec):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as exc:
        raise Failure("no_matplotlib", str(exc)) from None
    panels = spec.get("panels")
    if panels is None:  # the one-panel spec of the matmul-only bench
        panels = [
            {
                "kind": "lines",
                "series": spec.get("series", {}),
                "hlines": spec.get("peaks", {}),
                "xlabel": "n (n x n @ n x n)",
                "ylabel": "TFLOP/s (dashed: datasheet dense peak)",
            }
        ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 4.5 * len(panels)), dpi=120, squeeze=False)
    for ax, panel in zip([row[0] for row in axes], panels):
        if panel.get("kind") == "bars":
            bars_panel(ax, panel)
        else:
            lines_panel(ax, panel, matplotlib.ticker)
        ax.set_xlabel(panel.get("xlabel", ""))
        ax.set_ylabel(panel.get("ylabel", ""))
        if panel.get("title"):
            ax.set_title(panel["title"], fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(spec.get("title", "envdoctor bench"), fontsize=10)
    fig.tight_layout()
    fig.savefig(spec["path"])
    return {"path": spec["path"]}

"""Draw the benchmark as a PNG in the target interpreter, with its matplotlib (run by envdoctor.child).

Standard library and matplotlib only, Python 3.8+. Config::

    {"path": "bench.png", "title": "NVIDIA H200, torch 2.11.0+cu130",
     "series": {"fp16": [[128, 1.2], [8192, 640.0]]}, "peaks": {"fp16": 989.4}}

Answers ``{"path": ...}``, or fails with kind ``no_matplotlib``.
"""

if False:  # for readers and linters: this comes from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure

COLORS = {"fp32": "tab:blue", "tf32": "tab:cyan", "fp16": "tab:green", "bf16": "tab:purple"}


def main(spec):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as exc:
        raise Failure("no_matplotlib", str(exc)) from None
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for dtype, pts in spec.get("series", {}).items():
        pts = sorted(pts)
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        color = COLORS.get(dtype)
        ax.plot(xs, ys, marker="o", label=dtype, color=color)
        peak = spec.get("peaks", {}).get(dtype)
        if peak:
            ax.axhline(peak, linestyle="--", linewidth=0.8, color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({p[0] for pts in spec.get("series", {}).values() for p in pts})
    if sizes:
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(n) for n in sizes])
        ax.set_xlim(sizes[0] / 1.5, sizes[-1] * 1.5)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: "%g" % v))
    ax.set_xlabel("n (n x n @ n x n)")
    ax.set_ylabel("TFLOP/s (dashed: datasheet dense peak)")
    ax.set_title(spec.get("title", "envdoctor bench"))
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(spec["path"])
    return {"path": spec["path"]}

"""Draw ``envdoctor comms`` as a PNG in the target interpreter, with its matplotlib (run by envdoctor.child).

Standard library and matplotlib only, Python 3.8+. Config::

    {"path": "comms.png", "title": "8 x NVIDIA H200, NCCL 2.28.9",
     "series": {"all_reduce": [[1048576, 12.5], [4294967296, 360.1]]}, "peak": 450.0}

Answers ``{"path": ...}``, or fails with kind ``no_matplotlib``.
"""

if False:  # for readers and linters: this comes from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure


def label(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / float(size):g}{unit}"
    return str(n)


def main(spec):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise Failure("no_matplotlib", str(exc)) from None
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    sizes = set()
    for name, pts in sorted(spec.get("series", {}).items()):
        pts = sorted(pts)
        sizes.update(p[0] for p in pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    if spec.get("peak"):
        ax.axhline(spec["peak"], linestyle="--", linewidth=0.8, color="grey", label="expected peak")
    ax.set_xscale("log", base=2)
    if sizes:
        ticks = sorted(sizes)
        ax.set_xticks(ticks)
        ax.set_xticklabels([label(t) for t in ticks])
    ax.set_xlabel("size S (bytes, as nccl-tests counts it)")
    ax.set_ylabel("bus bandwidth, GB/s")
    ax.set_title(spec.get("title", "envdoctor comms"))
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(spec["path"])
    return {"path": spec["path"]}

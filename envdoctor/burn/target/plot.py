"""Draw a burn as a PNG time series in the target interpreter, with its matplotlib (run by envdoctor.child).

Standard library and matplotlib only, Python 3.8+. Config (times in seconds from the first sample)::

    {"path": "/tmp/envdoctor-plot-x/burn.png", "title": "envdoctor burn, torch 2.11.0+cu130",
     "gpus": [{"label": "GPU 0 NVIDIA H200", "rates": {"bf16": [[0.5, 780.1], [1.0, 661.0]]},
               "temperature": [[0.0, 33], [1.0, 56]], "memory_temperature": [], "power": [[0.0, 80.0]],
               "sm_clock": [[0.0, 345]], "throttled": [], "power_limit_w": 700.0, "slowdown_c": 89,
               "verdict": "OK"}]}

Four panels sharing the time axis: TFLOP/s per dtype, temperature (dashed: slowdown threshold),
power (dashed: limit), SM clock; samples with a fault clock-event reason are marked in red.
Answers ``{"path": ...}``, or fails with kind ``no_matplotlib``.
"""

if False:  # for readers and linters: this comes from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure


def _xy(points):
    return [p[0] for p in points], [p[1] for p in points]


def main(spec):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise Failure("no_matplotlib", str(exc)) from None
    fig, axes = plt.subplots(4, 1, sharex=True, figsize=(9, 8), dpi=110)
    rate_ax, temp_ax, power_ax, clock_ax = axes
    for g in spec.get("gpus", []):
        label = g.get("label", "")
        for dtype, points in sorted(g.get("rates", {}).items()):
            if points:
                rate_ax.plot(*_xy(points), linewidth=0.9, label="%s %s" % (label, dtype))
        if g.get("temperature"):
            (line,) = temp_ax.plot(*_xy(g["temperature"]), linewidth=0.9, label=label + " GPU")
            if g.get("slowdown_c"):
                temp_ax.axhline(g["slowdown_c"], linestyle="--", linewidth=0.7, color=line.get_color())
        if g.get("memory_temperature"):
            temp_ax.plot(*_xy(g["memory_temperature"]), linewidth=0.7, linestyle=":", label=label + " memory")
        if g.get("power"):
            (line,) = power_ax.plot(*_xy(g["power"]), linewidth=0.9, label=label)
            if g.get("power_limit_w"):
                power_ax.axhline(g["power_limit_w"], linestyle="--", linewidth=0.7, color=line.get_color())
        if g.get("sm_clock"):
            clock_ax.plot(*_xy(g["sm_clock"]), linewidth=0.9, label=label)
        for t in g.get("throttled", []):
            for ax in axes:
                ax.axvline(t, color="red", alpha=0.25, linewidth=0.8)
    rate_ax.set_ylabel("TFLOP/s")
    temp_ax.set_ylabel("C")
    power_ax.set_ylabel("W")
    clock_ax.set_ylabel("SM MHz")
    clock_ax.set_xlabel("seconds (red: clocks held back by temperature, power brake or HW slowdown)")
    for ax in axes:
        ax.grid(True, linewidth=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    verdicts = ", ".join("%s %s" % (g.get("label", ""), g.get("verdict", "")) for g in spec.get("gpus", []))
    rate_ax.set_title("%s: %s" % (spec.get("title", "envdoctor burn"), verdicts), fontsize=9)
    fig.tight_layout()
    fig.savefig(spec["path"])
    return {"path": spec["path"]}

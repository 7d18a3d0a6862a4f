"""``envdoctor bench``: matmul TFLOP/s in the target interpreter, and are the Tensor Cores there.

Exit codes: 0 all points right and the Tensor Cores delivering (or no verdict due); 1 a point
wrong or failed, Tensor Cores not delivering, a GPU slower than its siblings, or the benchmark
could not run in the target (no torch, a crash, a hang); 2 usage; 3 envdoctor itself failed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional, Tuple

import click

from envdoctor.bench.chart import format_rate
from envdoctor.bench.host import Progress, resolve_python, run_bench, write_plot
from envdoctor.cli.common import (
    EXIT_ERRORS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, debug_option, guarded, python_option, use_color,
)
from envdoctor.documents import dumps
from envdoctor.facts.bench import DEFAULT_BUDGET, DEFAULT_SIZES, DTYPES, BenchResult
from envdoctor.facts.serde import to_data
from envdoctor.render.bench import render_bench_text


class DtypeList(click.ParamType):
    """``fp32,fp16`` -> ("fp32", "fp16"); the option may also be repeated."""

    name = "DTYPES"

    def convert(self, value: Any, param: Any, ctx: Any) -> Tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        names = tuple(v.strip().lower() for v in str(value).split(",") if v.strip())
        bad = [v for v in names if v not in DTYPES]
        if bad or not names:
            self.fail(f"{value!r}: choose from {', '.join(DTYPES)} (comma-separated)", param, ctx)
        return names


class SizeList(click.ParamType):
    """``2048`` or ``512,8192``: matrix sizes n, 1 to 65536."""

    name = "N"

    def convert(self, value: Any, param: Any, ctx: Any) -> Tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        try:
            sizes = tuple(int(v) for v in str(value).split(",") if v.strip())
        except ValueError:
            self.fail(f"{value!r} is not a whole number", param, ctx)
        if not sizes or any(not 1 <= n <= 65536 for n in sizes):
            self.fail(f"{value!r}: sizes go from 1 to 65536", param, ctx)
        return sizes


def _device(ctx: click.Context, param: Any, value: str) -> str:
    value = value.strip().lower()
    if value == "all" or (value.isdigit() and int(value) < 1024):
        return str(int(value)) if value != "all" else value
    raise click.BadParameter(f"{value!r}: give a GPU index (0, 1, ...) or 'all'")


def _progress(stream: Any) -> Any:
    tty = bool(getattr(stream, "isatty", lambda: False)())

    def show(p: Progress) -> None:
        if p.point is None:
            text = f"bench: {p.message}" + (f" ({p.total} points)" if p.total else "")
        else:
            q = p.point
            rate = format_rate(q.tflops) + " TFLOP/s" if q.tflops is not None else q.status
            dev = f"GPU {q.device} " if q.device else ""
            text = f"bench: [{p.done}/{p.total}] {dev}{q.dtype} n={q.n}: {rate}"
        if tty:
            stream.write("\r\x1b[K" + text)
            if p.total and p.done >= p.total:
                stream.write("\r\x1b[K")
        else:
            stream.write(text + "\n")
        stream.flush()

    return show


def exit_code(result: BenchResult) -> int:
    """0 ok; 1 a failed point, Tensor Cores not delivering, a slow GPU, or the run failed in the
    target; 3 envdoctor could not read what the child printed."""
    if result.error is not None:
        if result.error.command == "--device":
            return EXIT_USAGE
        return EXIT_INTERNAL if result.error.kind == "unparseable" else EXIT_ERRORS
    if result.failed_points or result.outliers:
        return EXIT_ERRORS
    if any(v.state == "not_delivering" for v in result.verdicts):
        return EXIT_ERRORS
    return EXIT_OK


def _failure_line(result: BenchResult) -> Optional[str]:
    e = result.error
    if e is None:
        return None
    hint = {
        "not_found": "install torch there (see `envdoctor recommend`) or point --python at one that has it",
        "timeout": "the GPU may be hung or busy: try `nvidia-smi`, a smaller --size or a larger --timeout",
        "crashed": "run `envdoctor check` to see why torch fails in this interpreter",
    }.get(e.kind)
    return f"envdoctor bench: {e.message}" + (f" ({hint})" if hint else "")


@click.command("bench")
@python_option
@click.option("--dtype", "dtypes", type=DtypeList(), multiple=True, metavar="fp32,tf32,fp16,bf16",
              help="Precisions to measure (default: all four; bf16/tf32 only on compute capability 8.0+).")
@click.option("--size", "sizes", type=SizeList(), multiple=True, metavar="N",
              help=f"Matrix size n, repeatable or comma-separated (default: {','.join(map(str, DEFAULT_SIZES))}).")
@click.option("--budget", type=click.FloatRange(min=0.05, max=3600), default=DEFAULT_BUDGET, show_default=True,
              metavar="SECONDS", help="Seconds of measurement per GPU, shared out over the points.")
@click.option("--device", default="0", show_default=True, callback=_device, metavar="N|all",
              help="GPU index in the target's torch, or 'all' (then a GPU >10% slower than the others is flagged).")
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.bench/1").')
@click.option("--plot", type=click.Path(dir_okay=False), default=None, metavar="FILE.png",
              help="Also draw a PNG, with matplotlib from the target environment.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Seconds the whole benchmark may take (default: 3x budget per GPU + 120).")
@click.option("--raw-out", type=click.Path(dir_okay=False), default=None, hidden=True)
@debug_option
@guarded
def bench(python: Optional[str], dtypes: Tuple[Tuple[str, ...], ...], sizes: Tuple[Tuple[int, ...], ...],
          budget: float, device: str, as_json: bool, plot: Optional[str], timeout: Optional[float],
          raw_out: Optional[str], debug: bool) -> None:
    """Time n x n matrix products (fp32, tf32, fp16, bf16) in the target Python's torch.

    \b
    Reports TFLOP/s against the datasheet, what bounds each point (launches, memory,
    arithmetic), the clocks/power/throttling NVML saw, and whether the Tensor Cores deliver.
    \b
    envdoctor bench                         about 12 s on an H200
    envdoctor bench --dtype fp16 --size 8192 --budget 2
    envdoctor bench --device all --json > bench.json
    """
    target, chosen_by = resolve_python(python)
    if target is None:
        raise click.UsageError(f"--python {python}: not found or not executable")
    flat_dtypes = tuple(dict.fromkeys(d for group in dtypes for d in group)) or DTYPES
    flat_sizes = tuple(dict.fromkeys(n for group in sizes for n in group)) or DEFAULT_SIZES
    raw: Optional[dict] = {} if raw_out else None
    result = run_bench(target, flat_dtypes, flat_sizes, budget, device, timeout=timeout,
                       progress=_progress(sys.stderr), chosen_by=chosen_by, raw=raw)
    if getattr(sys.stderr, "isatty", lambda: False)():
        sys.stderr.write("\r\x1b[K")     # clear the progress line (points may have been skipped)
    if raw_out and raw is not None:
        with open(raw_out, "w") as fh:
            json.dump(raw, fh)
    plot_line = None
    if plot:
        if result.points:
            _, plot_line = write_plot(result, plot, target)
        else:
            plot_line = "no plot written: no point was measured"
    failure = _failure_line(result)
    if as_json:
        click.echo(dumps(to_data(result)))
    elif failure and not result.points:
        pass
    else:
        click.echo(render_bench_text(result, color=use_color(), ascii_only=not _utf8(sys.stdout)), nl=False)
    if failure:
        click.echo(failure, err=True)
    if plot_line:
        click.echo(f"envdoctor bench: {plot_line}", err=True)
    sys.exit(exit_code(result))


def _utf8(stream: Any) -> bool:
    enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return enc.startswith("utf8") or os.environ.get("PYTHONIOENCODING", "").lower().startswith("utf")

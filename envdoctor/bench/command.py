"""``envdoctor bench``: matmul TFLOP/s, memory bandwidth and transformer layers in the target
interpreter, and are the Tensor Cores and the HBM delivering.

Exit codes: 0 all points right and the verdicts fine (or, with --cpu, the CPU measured); 1 a point
wrong or failed (a point skipped for lack of memory is not), no point measured at all, Tensor Cores
not delivering, the HBM far below its datasheet, a GPU slower than its siblings, an error finding,
or the benchmark failed in the target (a crash, a hang); 2 usage, no torch in the target, or a torch
that sees no GPU (without --cpu; --device N always); 3 envdoctor itself failed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Tuple

import click

from envdoctor import checks
from envdoctor.bench.chart import format_rate
from envdoctor.bench.facts import (
    DEFAULT_BUDGET,
    DEFAULT_SIZES,
    DEFAULT_SUITES,
    DTYPES,
    SUITES,
    BenchPoint,
    BenchResult,
    LayerPoint,
    MemoryPoint,
)
from envdoctor.bench.host import Progress, describe, resolve_python, run_bench, suite_budgets, write_plot
from envdoctor.bench.memory import rate_label
from envdoctor.bench.render import render_bench_text
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    ChoiceList,
    FilePath,
    ascii_int,
    check_formats,
    check_visible_devices,
    debug_option,
    emit_page,
    gpu_index_or_all,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    seconds,
    suppress_option,
    use_color,
)
from envdoctor.documents import dumps, stamp
from envdoctor.facts.serde import to_data


class SizeList(click.ParamType):
    """``2048`` or ``512,8192``: matrix sizes n, 1 to 65536."""

    name = "N"

    def convert(self, value: Any, param: Any, ctx: Any) -> Tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        parts = [v for v in str(value).split(",") if v.strip()]
        numbers = [ascii_int(v) for v in parts]
        if any(n is None for n in numbers):
            self.fail(f"{str(value)[:40]!r} is not a whole number (ASCII digits)", param, ctx)
        sizes = tuple(n for n in numbers if n is not None)
        if not sizes or any(not 1 <= n <= 65536 for n in sizes):
            self.fail(f"{value!r}: sizes go from 1 to 65536", param, ctx)
        return sizes


def _progress(stream: Any) -> Any:
    tty = bool(getattr(stream, "isatty", lambda: False)())

    def show(p: Progress) -> None:
        if p.point is None:
            text = f"bench: {p.message}" + (f" ({p.total} points)" if p.total else "")
        else:
            text = "bench: " + _point_line(p)
        if tty:
            stream.write("\r\x1b[K" + text)
            if p.total and p.done >= p.total:
                stream.write("\r\x1b[K")
        else:
            stream.write(text + "\n")
        stream.flush()

    return show


def _point_line(p: Progress) -> str:
    """``[3/16] fp16 n=2048: 607.3 TFLOP/s``, ``[20/34] memory copy 256Mi: 4.2 TB/s``, ..."""
    q = p.point
    assert q is not None
    dev = f"GPU {q.device} " if q.device else ""
    where = f"[{p.done}/{p.total}] " if p.suite != "reference" else ""
    if isinstance(q, MemoryPoint):
        rate = rate_label(q.gbs) if q.gbs is not None else q.status
        return f"{where}{dev}memory {q.op} n={q.n}: {rate}"
    if isinstance(q, LayerPoint):
        rate = format_rate(q.tflops) + " TFLOP/s" if q.tflops is not None else q.status
        what = describe(
            {
                "layer": q.layer,
                "dtype": q.dtype,
                "attention": q.attention,
                "mode": q.mode,
                "batch": q.batch,
                "seq": q.seq,
            }
        )
        return f"{where}{dev}layers {what}: {rate}"
    assert isinstance(q, BenchPoint)
    rate = format_rate(q.tflops) + " TFLOP/s" if q.tflops is not None else q.status
    what = "matmul peak for the layers: " if p.suite == "reference" else ""
    return f"{where}{dev}{what}{q.dtype} n={q.n}: {rate}"


#: How bench/host.py words a failure of envdoctor's own benchmark script in the target (a bug).
_OWN_SCRIPT_FAILED = "the benchmark child failed:"


def exit_code(result: BenchResult) -> int:
    """0 ok; 1 a wrong or failed point, a verdict not delivering (Tensor Cores, HBM, a layer), a slow
    GPU, an error finding, or the run failed in the target (a crash, a hang, output that is not the
    benchmark's: garbage or cut-off JSON); 2 the run could not start (no torch in the target, a Python
    that cannot be run or is too old, a --device that is not there); 3 envdoctor's own script failed."""
    if result.error is not None:
        # a run that could not start: no torch in the target, a Python that cannot be run or is too old
        if result.error.command == "--device" or result.error.kind in ("not_found", "permission", "unavailable"):
            return EXIT_USAGE
        return EXIT_INTERNAL if result.error.message.startswith(_OWN_SCRIPT_FAILED) else EXIT_ERRORS
    if result.broken_points or result.outliers or not measured(result):
        return EXIT_ERRORS
    if any(v.state == "not_delivering" for v in result.verdicts):
        return EXIT_ERRORS
    if any(f.severity == "error" for f in result.findings):
        return EXIT_ERRORS
    return EXIT_OK


def measured(result: BenchResult) -> bool:
    """Whether any point of any suite was measured: an answer with nothing in it is a failed run."""
    points: Tuple[Any, ...] = (*result.points, *result.memory_points, *result.layer_points)
    return any(p.status == "ok" for p in points)


def _on_cpu(result: BenchResult) -> bool:
    return bool(result.devices) and all(d.kind == "cpu" for d in result.devices)


def _failure_line(result: BenchResult) -> Optional[str]:
    e = result.error
    if e is None:
        if not measured(result):
            return (
                "envdoctor bench: the target answered but measured nothing (no point of any suite)"
                + (f"; its notes: {'; '.join(result.notes[:2])}" if result.notes else "")
                + "; run `envdoctor check` on it"
            )
        return None
    timeout = "the GPU may be hung or busy: try `nvidia-smi`, a smaller --size or a larger --timeout"
    if _on_cpu(result):
        timeout = (
            "the run on the CPU was too slow for the timeout (a CPU measures about a hundredth of a GPU): "
            "give it a larger --timeout, or a smaller --size and --budget"
        )
    elif not result.devices:
        timeout = (
            "it did not get as far as the measurement (torch import and start-up take seconds, "
            "more on a cold disk): give it a larger --timeout"
        )
    hint = {
        "not_found": (
            "install torch there (`envdoctor recommend --python PATH` plans it for that interpreter) "
            "or point --python at one that has it"
        ),
        "timeout": timeout,
        "crashed": "run `envdoctor check` to see why torch fails in this interpreter",
        "unparseable": "something in this interpreter writes to standard output or ends the process early; "
        "`envdoctor check --python` it to see what",
    }.get(e.kind)
    if e.command == "no_gpu":
        hint = (
            "run bench on a machine with an NVIDIA GPU, or add --cpu to measure the CPU (fp32, labelled; "
            "no Tensor Core verdict)"
        )
    if e.message.startswith(_OWN_SCRIPT_FAILED):
        hint = "a bug in envdoctor's benchmark script: please report it with the output of --debug"
    if e.command == "no_gpu":
        return f"envdoctor bench: {e.message}; {hint}"
    return f"envdoctor bench: {e.message}" + (f" ({hint})" if hint else "")


def _device_note(result: BenchResult, device: str, asked: bool) -> Optional[str]:
    """A GPU index given (--device N) for a run that found no GPU: the run could not do what was asked
    (exit 2, as burn's); ``--cpu`` measures the CPU."""
    if not asked or not _on_cpu(result) or device == "all":
        return None
    return (
        f"envdoctor bench: --device {device}: torch in {result.python} sees no GPU (add --cpu instead to "
        "measure the CPU, or see `envdoctor check`)"
    )


@click.command("bench")
@python_option
@click.option(
    "--suite",
    "suites",
    type=ChoiceList(SUITES, "SUITES", every="all"),
    multiple=True,
    metavar="matmul,memory,layers|all",
    help="What to measure (default: matmul,memory). layers: BERT, GPT-2, T5 and Llama-style layers.",
)
@click.option(
    "--dtype",
    "dtypes",
    type=ChoiceList(DTYPES, "DTYPES"),
    multiple=True,
    metavar="fp32,tf32,fp16,bf16",
    help="Precisions to measure (default: all four; bf16/tf32 only on compute capability 8.0+).",
)
@click.option(
    "--size",
    "sizes",
    type=SizeList(),
    multiple=True,
    metavar="N",
    help=f"Matrix size n, repeatable or comma-separated (default: {','.join(map(str, DEFAULT_SIZES))}).",
)
@click.option(
    "--budget",
    type=seconds(0.05, 3600),
    default=DEFAULT_BUDGET,
    show_default=True,
    metavar="SECONDS",
    help="Seconds of matmul measurement per GPU, shared out over the points; the memory "
    f"and layers suites scale with it ({suite_budgets(DEFAULT_BUDGET)['memory']:g} and "
    f"{suite_budgets(DEFAULT_BUDGET)['layers']:g} s at the default).",
)
@click.option(
    "--device",
    default="0",
    show_default=True,
    callback=gpu_index_or_all,
    metavar="N|all",
    help="GPU index in the target's torch, or 'all' (then a GPU >10% slower than the others is flagged).",
)
@click.option(
    "--cpu",
    is_flag=True,
    help="Where torch sees no GPU, measure the CPU instead of stopping (fp32, labelled; no Tensor Core verdict).",
)
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.bench/1").')
@click.option(
    "--plot",
    type=FilePath(dir_okay=False),
    default=None,
    metavar="FILE.png",
    help="Also draw a PNG, with matplotlib from the target environment.",
)
@click.option(
    "--timeout",
    type=seconds(1),
    default=None,
    metavar="SECONDS",
    help="Seconds the whole benchmark may take (default: 3x the budgets per GPU + 120).",
)
@click.option("--raw-out", type=FilePath(dir_okay=False), default=None, hidden=True)
@html_options
@suppress_option
@debug_option
@guarded
def bench(
    python: Optional[str],
    suites: Tuple[Tuple[str, ...], ...],
    dtypes: Tuple[Tuple[str, ...], ...],
    sizes: Tuple[Tuple[int, ...], ...],
    budget: float,
    device: str,
    as_json: bool,
    plot: Optional[str],
    timeout: Optional[float],
    raw_out: Optional[str],
    debug: bool,
    cpu: bool = False,
    as_html: bool = False,
    html_output: Optional[Path] = None,
    suppress: Tuple[str, ...] = (),
) -> None:
    """Time matrix products, memory bandwidth and transformer layers in the target Python's torch.

    \b
    matmul: n x n products (fp32, tf32, fp16, bf16) against the datasheet, what bounds each
    point, and whether the Tensor Cores deliver. memory: a * 1.2 and copies from 64Ki to 256Mi
    fp32 elements, the L2-resident sizes marked, against the datasheet bandwidth. layers: BERT,
    GPT-2, T5 and Llama-style layers in fp16/bf16, eager and SDPA, fwd and fwd+bwd, against the
    matmul rate of the same run. Clocks, power and throttling from NVML throughout.
    \b
    envdoctor bench                         matmul and memory, about 15 s on an H200
    envdoctor bench --suite all --json > bench.json
    envdoctor bench --suite layers --dtype bf16
    envdoctor bench --dtype fp16 --size 8192 --budget 2
    envdoctor bench --cpu --size 512        no GPU here: fp32 on the CPU, labelled
    """
    check_formats(json=as_json, html=as_html)
    check_visible_devices()
    target, chosen_by = resolve_python(python)
    if target is None:
        raise click.UsageError(f"--python {python}: not found or not executable")
    flat_dtypes = tuple(dict.fromkeys(d for group in dtypes for d in group)) or DTYPES
    flat_sizes = tuple(dict.fromkeys(n for group in sizes for n in group)) or DEFAULT_SIZES
    flat_suites = tuple(dict.fromkeys(x for group in suites for x in group)) or DEFAULT_SUITES
    raw: Optional[dict] = {} if raw_out else None
    source = click.get_current_context().get_parameter_source("device")
    asked = source is not None and source.name != "DEFAULT"
    if cpu and asked:
        raise click.UsageError(f"--cpu measures the CPU: leave --device {device} out")
    result = run_bench(
        target,
        flat_dtypes,
        flat_sizes,
        budget,
        device,
        timeout=timeout,
        progress=_progress(sys.stderr),
        suites=flat_suites,
        chosen_by=chosen_by,
        raw=raw,
        device_required=asked,
        gpu_required=not cpu,
    )
    if suppress:
        result = dataclasses.replace(result, findings=checks.split(result.findings, suppress).shown)
    if getattr(sys.stderr, "isatty", lambda: False)():
        sys.stderr.write("\r\x1b[K")  # clear the progress line (points may have been skipped)
    if raw_out and raw is not None:
        from envdoctor.atomic import write_atomic

        try:
            write_atomic(raw_out, json.dumps(raw))
        except OSError as exc:
            click.echo(f"envdoctor bench: --raw-out {raw_out}: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_USAGE)
    plot_line = None
    if plot and not (result.error is not None and result.error.command == "no_gpu"):
        if result.points or result.memory_points or result.layer_points:
            _, plot_line = write_plot(result, plot, target)
        else:
            plot_line = "no plot written: no point was measured"
    failure = _failure_line(result)
    note = _device_note(result, device, asked)
    if note:  # a GPU was asked for and there is none: a run that could not do what was asked
        click.echo(note, err=True)
        sys.exit(EXIT_USAGE)
    if as_html:
        from envdoctor.bench.page import bench_page

        emit_page(bench_page(stamp(to_data(result), exit_code(result)), machine_redactor()), html_output, "bench")
    elif as_json:
        click.echo(dumps(stamp(to_data(result), exit_code(result))))
    elif failure and (
        not (result.points or result.memory_points or result.layer_points)
        or (result.error is not None and result.error.command == "no_gpu")
    ):
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

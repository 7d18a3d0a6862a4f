"""``envdoctor comms``: NCCL (or gloo) collectives through torch.distributed, with nccl-tests' bus
bandwidth, a correctness check, GPU pair copies and a verdict against the links' expected peak.

Exit codes: 0 no error finding; 1 a wrong result, a rank that failed, bandwidth far below the
expected figure, ranks that answered with nothing measured, or the ranks could not run; 2 usage (a
bad size, GPU index or launcher environment) or no GPU for NCCL (nothing could be measured); 3
envdoctor itself failed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import click

from envdoctor.checks import split_suppressed
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    ChoiceList,
    FilePath,
    Number,
    check_formats,
    check_visible_devices,
    debug_option,
    emit_page,
    gpu_indices,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    seconds,
    suppress_option,
    use_color,
)
from envdoctor.links import plan
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str
from envdoctor.units import SizeError, format_bytes


def _devices(ctx: click.Context, param: Any, value: str) -> Optional[Tuple[int, ...]]:
    text = value.strip().lower()
    if text == "all":
        return None
    try:
        return gpu_indices(text)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}: give GPU indices (0,1,3), each once, or 'all'") from None


def _progress(stream: Any) -> Any:
    tty = bool(getattr(stream, "isatty", lambda: False)())
    state: Dict[str, Any] = {"done": 0, "total": 0, "world": 1}

    def show(p: Any) -> None:
        e = p.event
        if p.rank != 0:
            return
        kind = e.get("kind")
        if kind == "stage" and e.get("stage") in ("import torch", "init_process_group"):
            text = f"comms: rank 0: {e['stage']}"
        elif kind == "plan":
            state.update(
                total=opt_int(e, "points", low=0, high=10**6) or 0,
                world=opt_int(e, "world_size", low=1, high=1 << 20) or 1,
            )
            text = f"comms: {state['world']} rank(s) ready, {state['total']} points"
        elif kind == "point":
            q = e.get("point") if isinstance(e.get("point"), dict) else {}
            state["done"] += 1
            t = opt_float(q, "time_s", low=0, high=86400)
            size = opt_int(q, "bytes", low=0, high=2**63 - 1) or 0
            collective = opt_str(q, "collective", max_chars=32)
            bus = (
                plan.busbw_gbps(collective, size, t, state["world"])
                if t is not None and collective in plan.COLLECTIVES
                else None
            )
            if state["world"] <= 1 and t is not None:
                shown = f"{t * 1e6:.1f} us (one rank: no bandwidth)"
            else:
                shown = f"busbw {bus:g} GB/s" if bus is not None else str(opt_str(q, "status", max_chars=32))
            text = f"comms: [{state['done']}/{state['total']}] {collective} {format_bytes(size)}: " + shown
        elif kind == "pair":
            q = e.get("pair") if isinstance(e.get("pair"), dict) else {}
            text = f"comms: pair {opt_int(q, 'src')} -> {opt_int(q, 'dst')}"
        else:
            return
        stream.write(("\r\x1b[K" + text) if tty else text + "\n")
        stream.flush()

    return show


@click.command("comms")
@python_option
@click.option(
    "--collective",
    "collectives",
    type=ChoiceList(plan.COLLECTIVES, "COLLECTIVES"),
    default=",".join(plan.COLLECTIVES),
    show_default=True,
    metavar="all_reduce,all_gather,...",
    help="Collectives to measure.",
)
@click.option(
    "--sizes",
    default=None,
    metavar="1M..4G",
    help=f"Sizes S: FROM..TO (times --factor), or a list 1M,16M,1G "
    f"(default: {plan.DEFAULT_SIZES} with NCCL, {plan.GLOO_SIZES} with gloo).",
)
@click.option(
    "--factor",
    type=Number(2, 1024, integer=True),
    default=plan.DEFAULT_FACTOR,
    show_default=True,
    help="Step between sizes of a FROM..TO range.",
)
@click.option(
    "--devices",
    default="all",
    show_default=True,
    callback=_devices,
    metavar="all|0,1,...",
    help="GPUs (CUDA indices), one rank each.",
)
@click.option(
    "--backend",
    type=click.Choice(("auto", "nccl", "gloo")),
    default="auto",
    show_default=True,
    help="auto: NCCL on the GPUs, or gloo on the CPU where there is none.",
)
@click.option(
    "--nproc",
    type=Number(1, 1024, integer=True),
    default=None,
    help="Ranks to start (gloo: CPU processes, default 2; nccl: at most this many GPUs).",
)
@click.option(
    "--pairs/--no-pairs",
    default=True,
    show_default=True,
    help="Also copy between every pair of GPUs (which link is slow).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=seconds(1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Time one collective (and joining the group) may take.",
)
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.comms/1").')
@click.option(
    "--plot",
    type=FilePath(dir_okay=False),
    default=None,
    metavar="FILE.png",
    help="Also draw busbw per size, with matplotlib from the target environment.",
)
@click.option("--idle-timeout", type=seconds(1), default=None, hidden=True)
@suppress_option
@html_options
@debug_option
@guarded
def comms(
    python: Optional[str],
    collectives: Tuple[str, ...],
    sizes: Optional[str],
    factor: int,
    devices: Optional[Tuple[int, ...]],
    backend: str,
    nproc: Optional[int],
    pairs: bool,
    timeout_s: float,
    as_json: bool,
    plot: Optional[str],
    idle_timeout: Optional[float],
    suppress: Tuple[str, ...],
    debug: bool,
    as_html: bool = False,
    html_output: Optional[Path] = None,
) -> None:
    """Collectives between GPUs (NCCL) or CPU processes (gloo): bus bandwidth as nccl-tests counts it.

    \b
    One rank per GPU, started by envdoctor, or one per process of torchrun/srun/mpirun (every
    rank runs `envdoctor comms`, rank 0 reports). Per collective and size: time, algbw, busbw
    (all_reduce x 2(n-1)/n, the others x (n-1)/n), a check of the result, the ratio to the
    slowest link's expected peak, the algorithm NCCL chose and whether NVLS was used. One GPU:
    host <-> GPU copy bandwidth instead.
    \b
    envdoctor comms
    envdoctor comms --collective all_reduce --sizes 1G..4G --factor 2
    envdoctor comms --backend gloo --nproc 4
    torchrun --standalone --nproc-per-node 8 -m envdoctor comms
    """
    from envdoctor.child import find_python
    from envdoctor.links.host import CommsOptions, run_comms, write_plot
    from envdoctor.links.render_comms import render_comms_text
    from envdoctor.links.rules_comms import verdicts

    check_formats(json=as_json, html=as_html)
    check_visible_devices()
    target, _ = find_python(python)
    if target is None:
        raise click.UsageError(f"--python {python}: not found or not executable")
    try:
        chosen = plan.parse_sizes(sizes, factor) if sizes else None
    except SizeError as exc:
        raise click.BadParameter(str(exc), param_hint="--sizes") from None
    opts = CommsOptions(
        collectives=collectives,
        sizes=chosen,
        backend=backend,
        devices=devices,
        nproc=nproc,
        pairs=pairs,
        timeout_s=timeout_s,
        idle_timeout_s=idle_timeout,
    )
    result = run_comms(opts, target, progress=_progress(sys.stderr))
    if getattr(sys.stderr, "isatty", lambda: False)():
        sys.stderr.write("\r\x1b[K")
    findings, hidden = split_suppressed(verdicts(result), suppress)
    if result.error is not None and result.error.command in ("--devices", "launcher", "no_gpu", "no_torch"):
        if as_json or as_html:  # a run that could not start still prints its document (as diag's)
            _emit_document(result, findings, EXIT_USAGE, as_html, html_output)
        click.echo(f"envdoctor comms: {result.error.message}", err=True)
        sys.exit(EXIT_USAGE)
    reporter = result.launcher == "envdoctor" or any(x.rank == 0 for x in result.ranks)
    if not reporter:
        mine = result.ranks[0] if result.ranks else None
        click.echo(
            f"envdoctor comms: rank {mine.rank if mine else '?'} of {result.world_size}: "
            f"{mine.status if mine else 'no answer'} (rank 0 reports)",
            err=True,
        )
        sys.exit(EXIT_OK if mine is not None and mine.status == "ok" else EXIT_ERRORS)
    if as_json or as_html:
        _emit_document(
            result,
            findings,
            EXIT_ERRORS if any(f.severity == "error" for f in findings) else EXIT_OK,
            as_html,
            html_output,
        )
    else:
        click.echo(render_comms_text(result, findings, color=use_color(), suppressed=hidden), nl=False)
    if plot:
        click.echo(f"envdoctor comms: {write_plot(result, plot, target)}", err=True)
    sys.exit(EXIT_ERRORS if any(f.severity == "error" for f in findings) else EXIT_OK)


def _emit_document(result: Any, findings: Any, code: int, as_html: bool, html_output: Optional[Path]) -> None:
    """``envdoctor.comms/1`` on stdout, or its page (``--html``), carrying ``code`` in its summary."""
    from envdoctor.documents import dumps, stamp
    from envdoctor.links.render_comms import comms_document
    from envdoctor.redact import mask_data

    doc = stamp(mask_data(comms_document(result, findings)), code)
    if as_html:
        from envdoctor.links.page_comms import comms_page

        emit_page(comms_page(doc, machine_redactor()), html_output, "comms")
    else:
        click.echo(dumps(doc))

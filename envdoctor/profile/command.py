"""``envdoctor profile -- python train.py ARGS``: where the time of the user's own step goes.

Exit codes: 0 the steps were profiled (findings are advice on the user's job, warnings at most);
2 nothing could be profiled, for a reason named in one line (bad options, no torch in the target,
the script failed, hung past --timeout or never reached enough steps; its last output is shown);
3 envdoctor itself failed.
"""

from __future__ import annotations

import glob
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from envdoctor import checks
from envdoctor.atomic import write_atomic
from envdoctor.child import find_python
from envdoctor.clicore import (
    EXIT_OK,
    EXIT_USAGE,
    FilePath,
    Number,
    check_formats,
    debug_option,
    emit_page,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    seconds,
    suppress_option,
    use_color,
)
from envdoctor.documents import dumps
from envdoctor.findings import Finding, exit_code
from envdoctor.launch import LaunchError, rendezvous
from envdoctor.parse.jsontext import JsonError, loads_object
from envdoctor.profile.facts import DEFAULT_STEPS, DEFAULT_TIMEOUT, DEFAULT_WARMUP, Throughput
from envdoctor.profile.host import ProfileRun, problem, run_profile, throughput
from envdoctor.profile.render import document, merged_lines, render_text
from envdoctor.profile.rules import rules
from envdoctor.redact import mask_data, mask_text
from envdoctor.style import Style

#: How long rank 0 waits for the other ranks' reports after its own run.
MERGE_WAIT = 120.0
PYTHONS = ("python", "python3")


def split_command(words: Sequence[str]) -> Tuple[Optional[str], List[str]]:
    """``python train.py --lr 1`` -> (``python``, [``train.py``, ``--lr``, ``1``]); a command that
    starts with the script (as under torchrun) has no interpreter of its own.

    >>> split_command(["python3.11", "train.py", "-x"])
    ('python3.11', ['train.py', '-x'])
    >>> split_command(["train.py", "-x"])
    (None, ['train.py', '-x'])
    """
    if not words:
        return None, []
    first = os.path.basename(words[0])
    if first.startswith(PYTHONS) and not first.endswith(".py"):
        return words[0], list(words[1:])
    return None, list(words)


def _bench_rate(path: Optional[str], dtype: Optional[str]) -> Optional[float]:
    """The best matmul TFLOP/s of ``dtype`` in a bench document (``envdoctor bench --json > FILE``)."""
    if path is None:
        return None
    from envdoctor.documents import DocumentError, read_document
    from envdoctor.inputs import InputError, read_input

    try:
        doc = read_document(read_input(path), "bench", path).data
    except (InputError, DocumentError) as exc:
        raise click.UsageError(f"--bench {path}: {exc}") from None
    rates = [
        float(p["tflops"])
        for p in doc.get("points") or []
        if isinstance(p, dict)
        and p.get("status") == "ok"
        and (dtype is None or p.get("dtype") == dtype)
        and isinstance(p.get("tflops"), (int, float))
    ]
    return max(rates) if rates else None


def _peak(run: ProfileRun) -> Tuple[Optional[Tuple[float, str, str]], Optional[str]]:
    """The datasheet's dense peak for the dtype most matmul time ran in, and that dtype."""
    tgt = run.target
    b = run.breakdown
    if not tgt.get("cuda") or b is None:
        return None, None
    from envdoctor.table import load_table

    try:
        gpu = load_table().gpu(str(tgt.get("device") or ""))
    except Exception:  # a broken table: no peak, said so
        return None, None
    if gpu is None:
        return None, None
    dtype = b.matmul_dtype or "bf16"
    rate = {"bf16": gpu.bf16_tflops, "fp16": gpu.fp16_tflops, "tf32": gpu.tf32_tflops, "fp32": gpu.fp32_tflops}.get(
        dtype
    )
    return ((float(rate), dtype, gpu.source) if rate else None), dtype


def _wait_for_ranks(folder: str, world: int, deadline: float) -> List[Dict[str, Any]]:
    docs: Dict[str, Dict[str, Any]] = {}
    while True:
        for path in glob.glob(os.path.join(folder, "profile-rank*.json")):
            if path in docs:
                continue
            try:
                docs[path] = loads_object(Path(path).read_text(encoding="utf-8", errors="replace"), path)
            except (OSError, JsonError):
                continue
        if len(docs) >= world or time.monotonic() > deadline:
            return list(docs.values())
        time.sleep(0.5)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option(
    "--steps",
    type=Number(1, 1000, integer=True),
    default=DEFAULT_STEPS,
    show_default=True,
    help="Steps profiled (after the warm-up and 3 steps timed without the profiler).",
)
@click.option(
    "--warmup",
    type=Number(0, 100000, integer=True),
    default=DEFAULT_WARMUP,
    show_default=True,
    help="Steps run first and not counted (compilation, the caching allocator's first growth).",
)
@click.option(
    "--steps-by",
    type=click.Choice(["auto", "optimizer", "forward"]),
    default="auto",
    show_default=True,
    help="What ends a step: an optimizer step, the outermost model forward (inference), or the first "
    "of them the script reaches (auto; gradient accumulation wants 'optimizer').",
)
@click.option(
    "--timeout",
    type=seconds(1, 7 * 86400),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds the script may run before it is stopped (and reported).",
)
@click.option(
    "--trace",
    "trace_dir",
    type=FilePath(file_okay=False),
    default=None,
    help="Keep the Chrome/Perfetto trace here (trace-rank<N>.json); under a launcher, every rank's "
    "report (profile-rank<N>.json) too.",
)
@click.option("--stop-after", is_flag=True, help="End the script once the profiled steps are done.")
@click.option(
    "--shapes",
    is_flag=True,
    help="Record every operator's input shapes and dtypes in the trace (slower steps; the FLOPs "
    "and matmul dtypes come from one counted step either way).",
)
@click.option(
    "--bench",
    "bench_file",
    default=None,
    metavar="FILE",
    help="An envdoctor bench --json document of this machine: the MFU against its measured matmul rate.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the envdoctor.profile/1 document.")
@html_options
@python_option
@suppress_option
@debug_option
@guarded
def profile(
    command: Tuple[str, ...],
    steps: int,
    warmup: int,
    steps_by: str,
    timeout: float,
    trace_dir: Optional[str],
    stop_after: bool,
    shapes: bool,
    bench_file: Optional[str],
    as_json: bool,
    python: Optional[str],
    debug: bool,
    suppress: Tuple[str, ...] = (),
    as_html: bool = False,
    html_output: Optional[Path] = None,
) -> None:
    """Profile your own training (or inference) script, unchanged: where each step's time goes.

    \b
    envdoctor profile -- python train.py --lr 3e-4
    torchrun --nproc-per-node 8 -m envdoctor profile --trace /shared/prof -- train.py --lr 3e-4
    envdoctor profile --html -o profile.html -- python train.py
    """
    check_formats(json=as_json, html=as_html)
    words = list(command)
    if words and words[0] == "--":
        words = words[1:]
    interpreter, rest = split_command(words)
    if not rest:
        raise click.UsageError("give the script to profile: envdoctor profile -- python train.py ARGS")
    if rest[0] == "-m":
        raise click.UsageError(
            "python -m MODULE is not supported yet: give the script's path (python path/to/module.py ARGS)"
        )
    if rest[0] == "-c":
        raise click.UsageError(
            "python -c CODE is not supported: put the code in a file and give its path (python step.py ARGS)"
        )
    if rest[0].startswith("-") and not os.path.isfile(rest[0]):
        raise click.UsageError(
            f"python {rest[0]}: an interpreter option before the script is not supported: give "
            "the script's path right after the interpreter (python train.py ARGS)"
        )
    script, args = rest[0], rest[1:]
    if not os.path.isfile(script):
        from envdoctor.atomic import what_it_is

        kind = what_it_is(os.stat(script).st_mode) if os.path.exists(script) else None
        raise click.UsageError(
            f"{script}: "
            + (f"is {kind}, not a script" if kind else "no such script")
            + " (give the path of the Python file to profile)"
        )
    if interpreter is not None and python is None:
        python = interpreter
    target, how = find_python(python)
    if target is None:
        raise click.UsageError(f"{python}: no such Python interpreter")
    try:
        launch = rendezvous(os.environ)
    except LaunchError as exc:
        raise click.UsageError(str(exc)) from None
    rank, world = (launch.rank, launch.world_size) if launch is not None else (0, 1)
    if world > 1 and trace_dir is None:
        raise click.UsageError(
            "under a launcher with several ranks, give --trace DIR (a folder every rank can "
            "write): each rank's report and trace go there, and rank 0 merges them"
        )
    if trace_dir is not None:
        if os.path.lexists(trace_dir) and not os.path.isdir(trace_dir):
            raise click.UsageError(f"--trace {trace_dir}: exists and is not a folder (give a folder for the trace)")
        if not os.path.isdir(trace_dir):
            parent = os.path.dirname(os.path.abspath(trace_dir))
            if not os.path.isdir(parent):
                raise click.UsageError(f"--trace {trace_dir}: the folder {parent} does not exist")
            try:
                os.makedirs(trace_dir, exist_ok=True)
            except OSError as exc:
                raise click.UsageError(f"--trace {trace_dir}: cannot create the folder ({exc.strerror})") from None
    shown = [os.path.basename(interpreter) if interpreter else "python", script] + args
    run = run_profile(
        script,
        args,
        python=target,
        steps=steps,
        warmup=warmup,
        timeout=timeout,
        trace_dir=trace_dir,
        steps_by=steps_by,
        stop_after=stop_after,
        rank=rank,
        detail="full" if shapes else "light",
    )
    peak, dtype = _peak(run)
    through = throughput(run.figures or {}, run.times, run.breakdown, run.target, peak, _bench_rate(bench_file, dtype))
    findings: Tuple[Finding, ...] = ()
    if run.breakdown is not None:
        findings = rules(
            run.breakdown,
            run.syncs,
            (run.figures or {}).get("optimizer"),
            run.target.get("capability"),
            bool(run.target.get("tf32_matmul")),
            run.times,
        )
        findings = checks.split(findings, suppress).shown
    code = EXIT_USAGE if problem(run) is not None else exit_code(findings)
    doc = document(run, through, findings, shown, code, rank, world)
    if trace_dir is not None and world > 1:
        write_atomic(os.path.join(trace_dir, f"profile-rank{rank}.json"), dumps(mask_data(doc)))
    _show(run, through, findings, shown, doc, as_json, rank, world, trace_dir, as_html, html_output)
    sys.exit(code if code != EXIT_OK else EXIT_OK)


def _show(
    run: ProfileRun,
    through: Throughput,
    findings: Tuple[Finding, ...],
    shown: Sequence[str],
    doc: Dict[str, Any],
    as_json: bool,
    rank: int,
    world: int,
    trace_dir: Optional[str],
    as_html: bool = False,
    html_output: Optional[Path] = None,
) -> None:
    merged: List[str] = []
    if world > 1 and rank == 0 and trace_dir is not None:
        docs = _wait_for_ranks(trace_dir, world, time.monotonic() + MERGE_WAIT)
        merged = merged_lines(docs, world)
        doc = dict(doc, ranks=[{"rank": d.get("rank"), "steps": d.get("steps"), "error": d.get("error")} for d in docs])
    if as_json:
        if rank == 0:
            click.echo(dumps(mask_data(doc)))
        return
    if as_html and rank == 0:
        from envdoctor.profile.page import profile_page

        emit_page(profile_page(mask_data(doc), machine_redactor()), html_output, "profile")
        if run.error is not None:
            click.echo(f"envdoctor profile: {mask_text(run.error)}", err=True)
        return
    if rank != 0:
        t = run.times
        click.echo(
            f"envdoctor profile: rank {rank}: "
            + (f"{t.mean_s * 1e3:.1f} ms per step" if t else f"no profile ({run.error})")
            + f"; report in {trace_dir}",
            err=True,
        )
        return
    text = render_text(run, through, findings, shown, Style(use_color()), rank, world)
    if merged:
        text += "\n" + "\n".join(merged) + "\n"
    click.echo(mask_text(text), nl=False)
    if run.error is not None:
        click.echo(f"envdoctor profile: {mask_text(run.error)}", err=True)

"""``envdoctor diag``: may this node take a job? One verdict per GPU and per node, in three levels.

Exit codes: 0 PASS or WARN; 1 FAIL (the failing tests named); 2 could not start for a named reason
(no GPU, no torch in the target, usage); 3 envdoctor itself failed.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Optional, Tuple

import click

from envdoctor.clicore import (
    Number,
    check_formats,
    debug_option,
    emit_page,
    gpu_index_or_all,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    suppress_option,
    use_color,
    verbosity,
    verbosity_options,
)


@click.command("diag")
@click.option(
    "-r",
    "--level",
    type=Number(1, 3, integer=True),
    default=1,
    show_default=True,
    metavar="1|2|3",
    help="1 quick (<= 15 s: check, topo, live state, fabric, a tiny CUDA op per GPU); 2 medium "
    "(<= 2 min: + bench, a 30 s burn, comms); 3 long (<= 15 min: + a 160 s burn, a 50 s memory "
    "test, targeted power, per-link verdicts).",
)
@click.option(
    "--device",
    default="all",
    show_default=True,
    callback=gpu_index_or_all,
    metavar="N|all",
    help="GPU index in the target's torch, or 'all'.",
)
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.diag/1").')
@html_options
@suppress_option
@python_option
@verbosity_options
@debug_option
@guarded
def diag(
    level: int,
    device: str,
    as_json: bool,
    python: Optional[str],
    debug: bool,
    as_html: bool = False,
    html_output: Optional[Path] = None,
    suppress: Tuple[str, ...] = (),
) -> None:
    """Diagnose this node in levels, as DCGM's dcgmi diag -r does: PASS, WARN or FAIL.

    \b
    Every test has its figure, its threshold and where the threshold comes from. A FAIL names the
    failing test and prints the findings' fixes; envdoctor never runs them (docs/diag.md has the
    Slurm prolog/epilog and Kubernetes examples that drain a node on FAIL).
    \b
    envdoctor diag                  level 1 (7 s on an H200)
    envdoctor diag -r 2 --json      level 2 as envdoctor.diag/1
    envdoctor diag --html -o diag.html
    envdoctor diag --suppress ED860 no test counts ED860 (the output lists what it hid)
    """
    from envdoctor.child import find_python
    from envdoctor.diag.host import run_diag
    from envdoctor.diag.render import render_diag_text, verdict_line
    from envdoctor.diag.rules import exit_status
    from envdoctor.documents import dumps, stamp
    from envdoctor.facts.serde import to_data
    from envdoctor.redact import mask_data, mask_text

    check_formats(json=as_json, html=as_html)
    target, _ = find_python(python)
    if target is None:
        raise click.UsageError(f"--python {python}: not found or not executable")
    stop = threading.Event()

    def say(line: str) -> None:
        if verbosity() >= 0:
            sys.stderr.write(f"diag: {line}\n")
            sys.stderr.flush()

    try:
        result = run_diag(level, target, device, progress=say, stop=stop, suppress=suppress)
    except KeyboardInterrupt:
        stop.set()
        raise
    if as_html:
        from envdoctor.diag.page import diag_page

        emit_page(
            diag_page(mask_data(stamp(to_data(result), exit_status(result.verdict))), machine_redactor()),
            html_output,
            "diag",
        )
        sys.stderr.write(mask_text(verdict_line(result)) + "\n")
    elif as_json:
        click.echo(dumps(mask_data(stamp(to_data(result), exit_status(result.verdict)))))
        sys.stderr.write(verdict_line(result) + "\n")
    else:
        click.echo(mask_text(render_diag_text(result, color=use_color(), verbose=verbosity() > 0)), nl=False)
    if result.verdict in ("NO_GPU", "ERROR") and result.error is not None:
        hint = (
            "point --python at an interpreter with torch (`envdoctor recommend --python PATH` plans one)"
            if result.error.kind == "not_found"
            else "see `nvidia-smi -L`"
            if result.error.command == "--device"
            else "run diag on a node with an NVIDIA GPU"
        )
        said = "" if not (as_json or as_html) else f"{result.error.message} "
        click.echo(f"envdoctor diag: {said}({hint})" if said else f"envdoctor diag: {hint}", err=True)
    sys.exit(exit_status(result.verdict))

"""``envdoctor fleet``: merge many nodes' reports and name the node that differs; ``--gather`` collects
them through the launcher already in use (torchrun, srun, mpirun)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import click

from envdoctor.clicore import (
    EXIT_USAGE,
    FilePath,
    Number,
    debug_option,
    guarded,
    make_context,
    python_option,
    root_option,
    seconds,
    suppress_option,
    timeout_option,
    torch_timeout_option,
    use_color,
)
from envdoctor.redact import Redactor, mask_data, mask_text


def _fail(message: str) -> None:
    click.echo(f"envdoctor fleet: {mask_text(message)}", err=True)
    sys.exit(EXIT_USAGE)


def _output(text: str, output: Optional[Path]) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    from envdoctor.atomic import write_atomic

    try:
        write_atomic(output, text)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
    click.echo(f"envdoctor fleet: wrote {output}", err=True)


def _render(fleet: Any, redactor: Optional[Redactor], fmt: str) -> str:
    from envdoctor.documents import dumps, stamp
    from envdoctor.fleet import render

    if fmt == "json":
        doc = mask_data(render.fleet_document(fleet))
        doc = stamp(doc, doc["summary"]["exit_code"])
        return dumps(redactor.data(doc) if redactor else doc) + "\n"
    if fmt == "markdown":
        text = render.render_markdown(fleet)
    elif fmt == "html":
        from envdoctor.clicore import machine_redactor
        from envdoctor.fleet.page import fleet_page

        doc = stamp(mask_data(render.fleet_document(fleet)), render.fleet_document(fleet)["summary"]["exit_code"])
        machine = machine_redactor()  # its user and home; not its host name, which may be a node's
        machine.pairs = [(value, label) for value, label in machine.pairs if label != "<host>"]
        text = fleet_page(redactor.data(doc) if redactor else doc, machine)
    else:
        text = render.render_text(fleet, color=use_color() and redactor is None)
    text = mask_text(text)
    return redactor.text(text) if redactor else text


def _format(as_json: bool, markdown: bool, as_html: bool) -> str:
    if sum((as_json, markdown, as_html)) > 1:
        raise click.UsageError("choose one of --json, --markdown and --html")
    return "json" if as_json else "markdown" if markdown else "html" if as_html else "text"


def _table() -> Any:
    from envdoctor.inspect import load_table_or_error

    return load_table_or_error()[0]


@click.command()
@click.argument("paths", nargs=-1, metavar="[REPORT.json|FOLDER|GLOB]...")
@click.option(
    "--gather",
    is_flag=True,
    help="Run on every node under torchrun, srun or mpirun: each inspects itself, rank 0 prints the fleet.",
)
@click.option("--bench", "with_bench", is_flag=True, help="With --gather: each node also runs the quick matmul bench.")
@click.option(
    "--comms",
    "with_comms",
    is_flag=True,
    help="With --gather: an all-reduce over every node and a pairwise pass that names a slow node or link "
    "(NCCL where every node has a GPU, else gloo).",
)
@click.option(
    "--join-timeout",
    type=seconds(1, 3600),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="With --gather: how long rank 0 waits for the other ranks (and each step).",
)
@click.option(
    "--slow",
    "slow_pct",
    type=Number(0.1, 90, unit="%"),
    default=5.0,
    show_default=True,
    metavar="PERCENT",
    help="A GPU this far below the fleet's median for its model is slow.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document (envdoctor.fleet/1).")
@click.option("--markdown", is_flag=True, help="Print Markdown (tables and findings).")
@click.option(
    "--html",
    "as_html",
    is_flag=True,
    help="Print a self-contained HTML page (sortable, no external files; the nodes by their names, user "
    "names, home paths and GPU UUIDs masked; with --redact the nodes are node-01, ...).",
)
@click.option(
    "-o",
    "--output",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the output to FILE (atomically) instead of printing it.",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Name the nodes node-01, node-02, ...; mask host and user names, home paths, GPU UUIDs and serials.",
)
@suppress_option
@python_option
@timeout_option
@torch_timeout_option
@debug_option
@root_option
@guarded
def fleet(
    paths: Tuple[str, ...],
    gather: bool,
    with_bench: bool,
    with_comms: bool,
    join_timeout: float,
    slow_pct: float,
    as_json: bool,
    markdown: bool,
    as_html: bool,
    output: Optional[Path],
    redact: bool,
    python: Optional[str],
    timeout: float,
    torch_timeout: float,
    debug: bool,
    root: Optional[Path],
    suppress: Tuple[str, ...] = (),
) -> None:
    """Merge reports of many nodes and name the nodes that differ.

    \b
    envdoctor fleet reports/                 one folder per node, or NODE.json files
    envdoctor fleet 'reports/*/check.json'   globs, files and folders mixed
    torchrun --nnodes N --nproc-per-node 1 ... -m envdoctor fleet --gather
    srun -N N --ntasks-per-node=1 envdoctor fleet --gather [--bench] [--comms]

    Documents: check --json reports (and snapshots), bench --json results. A node is named by a
    'node' key in its documents, else its report's host name, else its folder or file name.

    Exit status: 0 no drift that matters, 1 a node deviates on something that matters (driver
    branch, GPU count or models, torch build or NCCL, ECC errors, a slow GPU, its own check's
    errors, a node that did not report, with --comms a slow node or link over NCCL or a node that
    did not finish), 2 usage error or unusable input, 3 envdoctor failed. A code given to
    --suppress is in no verdict and no exit code; the output lists what it hid.
    """
    fmt = _format(as_json, markdown, as_html)
    # The nodes keep their names on a page as in the text and the JSON (an operator finds the bad
    # host by it; host names are not secrets: envdoctor/redact.py masks them with --redact only).
    # The page masks the rest --redact masks (user names, home paths, GPU UUIDs) all the same.
    if gather:
        if paths:
            raise click.UsageError("--gather inspects this node; it takes no report files")
        _gather(
            with_bench,
            with_comms,
            join_timeout,
            slow_pct,
            fmt,
            output,
            redact,
            python,
            timeout,
            root,
            torch_timeout,
            suppress,
        )
        return
    if with_bench:
        raise click.UsageError("--bench goes with --gather (merged files carry their own bench results)")
    if with_comms:
        raise click.UsageError("--comms goes with --gather (it measures between the nodes of a gather)")
    if not paths:
        raise click.UsageError(
            "name the reports to merge (files, folders or globs), or run with --gather under a launcher"
        )
    from envdoctor.fleet.load import LoadError
    from envdoctor.fleet.merge import merge_files

    try:
        result, redactor = merge_files(
            list(paths), table=_table(), redact_names=redact, slow_fraction=slow_pct / 100, suppress=suppress
        )
    except LoadError as exc:
        _fail(str(exc))
        return
    drift = result.drift
    if not any(n.status == "reported" for n in drift.nodes):
        _fail(
            f"none of the files under {', '.join(paths)[:200]} is an envdoctor report or bench result"
            + (f" ({drift.nodes[0].unreadable[0][1]})" if drift.nodes and drift.nodes[0].unreadable else "")
        )
    _output(_render(result, redactor, fmt), output)
    sys.exit(drift.exit_code)


def _gather(
    with_bench: bool,
    with_comms: bool,
    join_timeout: float,
    slow_pct: float,
    fmt: str,
    output: Optional[Path],
    redact: bool,
    python: Optional[str],
    timeout: float,
    root: Optional[Path],
    torch_timeout: float,
    suppress: Tuple[str, ...] = (),
) -> None:
    from envdoctor.child import find_python
    from envdoctor.fleet import host as g
    from envdoctor.fleet.merge import merge
    from envdoctor.fleet.render import rank_line
    from envdoctor.launch import NO_LAUNCHER, LaunchError, rendezvous

    try:
        r = rendezvous(os.environ)
    except LaunchError as exc:
        _fail(str(exc))
        return
    if r is None:
        _fail(
            f"--gather runs under a launcher on every node (torchrun, srun, mpirun); {NO_LAUNCHER}. "
            "To merge saved reports: envdoctor fleet DIR"
        )
        return
    target, how = find_python(python)
    if target is None:
        _fail(f"--python {python}: no such interpreter")
        return
    ctx = make_context(python, timeout, root, torch_timeout)

    def inspect_node() -> Dict[str, Any]:
        from envdoctor.inspect import inspect
        from envdoctor.render.json import report_document

        result = inspect(ctx, suppress=suppress)  # a node's own check hides them too
        return report_document(result.facts, result.findings)

    def bench() -> Dict[str, Any]:
        from envdoctor.bench import QUICK, run_bench
        from envdoctor.facts.serde import to_data

        quick: Dict[str, Any] = dict(QUICK)
        return dict(to_data(run_bench(target, env=ctx.env, chosen_by=how, device="all", **quick)))

    try:
        comms = g.comms_config(r.world_size, join_timeout, os.environ) if with_comms else None
        mine = g.local(r, os.environ, inspect_node, bench if with_bench else None)
    except g.GatherError as exc:
        _fail(str(exc))
        return
    work = g.workdir()
    seen = {"have": -1}

    def progress(event: Dict[str, Any]) -> None:
        if r.rank == 0 and event.get("kind") == "waiting" and event.get("have") != seen["have"]:
            seen["have"] = event.get("have", 0)
            click.echo(
                f"envdoctor fleet: {event.get('have')} of {event.get('want')} ranks {event.get('what')}, "
                f"waiting up to {event.get('left_s')} s more",
                err=True,
            )

    try:
        run = g.carry(r, mine.text, target, join_timeout, os.environ, work, on_event=progress, comms=comms)
        if r.rank != 0:
            # on stderr: the launcher merges every rank's stdout, which holds rank 0's report alone
            if run.ok:
                seconds = float((run.result or {}).get("seconds", {}).get("total", run.seconds))
                took = (run.result or {}).get("comms")
                click.echo(
                    rank_line(
                        r.rank,
                        r.world_size,
                        mine.host,
                        f"{r.master_addr}:{r.master_port}",
                        str((run.result or {}).get("transport", "gloo")),
                        seconds,
                        took.get("status") if isinstance(took, dict) else None,
                    ),
                    err=True,
                )
            elif (run.stage or "").startswith("comms"):
                message = run.error.message if run.error else "failed"
                click.echo(
                    mask_text(
                        f"envdoctor fleet: rank {r.rank} of {r.world_size} ({mine.host}) sent its report; "
                        f"the comms phase failed here: {message}"
                    ),
                    err=True,
                )
            else:
                # never a non-zero exit here: torchrun would stop rank 0 while it still waits for the others
                message = run.error.message if run.error else "failed"
                line = (
                    f"envdoctor fleet: rank {r.rank} of {r.world_size} ({mine.host}) could not send its report "
                    f"to rank 0 at {r.master_addr}:{r.master_port}: {message}"
                )
                click.echo(mask_text(line), err=True)
            sys.exit(0)
        if g.gathered(run) is None:
            message = run.error.message if run.error else "failed"
            _fail(f"rank 0 could not gather the reports: {message}")
        inputs, info = g.collect(r, run)
        phase = g.comms_of(r, run) if with_comms else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result, redactor = merge(
        inputs,
        mode="gather",
        table=_table(),
        gather=info,
        redact_names=redact,
        slow_fraction=slow_pct / 100,
        comms=phase,
        suppress=suppress,
    )
    _output(_render(result, redactor, fmt), output)
    sys.exit(result.drift.exit_code)

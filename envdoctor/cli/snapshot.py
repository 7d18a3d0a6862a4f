"""``envdoctor snapshot`` and ``envdoctor verify``: prove that a driver upgrade broke nothing.

envdoctor snapshot            # before: saves the report to ~/.local/state/envdoctor/snapshots/
sudo apt upgrade && sudo reboot
envdoctor verify              # after: regressions (exit 1), expected changes, the rest unchanged
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from envdoctor import checks
from envdoctor.clicore import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    FilePath,
    Number,
    check_formats,
    debug_option,
    emit_page,
    guarded,
    html_options,
    machine_redactor,
    make_context,
    python_option,
    root_option,
    suppress_option,
    timeout_option,
    torch_timeout_option,
    use_color,
)
from envdoctor.documents import dumps, stamp
from envdoctor.facts import Facts
from envdoctor.inspect import inspect
from envdoctor.probes import SKIPPABLE, internal_failures
from envdoctor.redact import mask_text
from envdoctor.render.snapshot import list_lines, saved_lines
from envdoctor.render.verify import SCHEMA as VERIFY_SCHEMA
from envdoctor.render.verify import render_verification, verify_document
from envdoctor.snapshot import (
    HOW,
    SnapshotError,
    check_store,
    check_target,
    iso,
    latest,
    list_snapshots,
    load,
    save,
    snapshot_document,
    store_dir,
    utc_now,
    write_to,
)
from envdoctor.verify import DEFAULT_TOLERANCE, compare, machine_differences

skip_option = click.option(
    "--skip",
    multiple=True,
    type=click.Choice(SKIPPABLE),
    help="Leave an area out (repeatable); 'torch' skips the slowest probe.",
)


def _usage_exit(message: str) -> NoReturn:
    """A baseline or file that cannot be used: one line on stderr, exit 2."""
    click.echo(f"envdoctor: {mask_text(message)}", err=True)
    sys.exit(EXIT_USAGE)


def _internal_exit(facts: Facts, what: str) -> None:
    broken = internal_failures(facts)
    if broken:
        click.echo(f"envdoctor: could not inspect {', '.join(broken)} (a bug; run with --debug){what}", err=True)
        sys.exit(EXIT_INTERNAL)


def _bench_python(facts: Facts, explicit: str | None, env: dict[str, str]) -> tuple[str | None, str]:
    if facts.python.executable and not explicit:
        return facts.python.executable, facts.python.chosen_by or "python3 on PATH"
    from envdoctor.bench.host import resolve_python

    return resolve_python(explicit, env)


def _run_bench(python: str | None, chosen_by: str, env: dict[str, str], like: Any = None) -> Any:
    """The bench (``envdoctor.bench.host.run_bench``); with ``like``, the baseline's dtypes, sizes and budget."""
    from envdoctor.bench.facts import BenchResult
    from envdoctor.bench.host import run_bench
    from envdoctor.facts.base import ProbeError

    if not python:
        return BenchResult(error=ProbeError("not_found", "no target Python to run the benchmark in (--python)"))
    kwargs: dict[str, Any] = {"env": env, "chosen_by": chosen_by}
    if like is not None:
        if like.dtypes:
            kwargs["dtypes"] = tuple(like.dtypes)
        if like.sizes:
            kwargs["sizes"] = tuple(like.sizes)
        if like.budget_s:
            kwargs["budget"] = like.budget_s
        devices = sorted({p.device for p in like.points})
        kwargs["device"] = "all" if len(devices) > 1 else str(devices[0] if devices else 0)
    click.echo("envdoctor: running the benchmark (about a minute)...", err=True)
    return run_bench(python, **kwargs)


# --- snapshot ------------------------------------------------------------------------------------


@click.command()
@click.option(
    "-o",
    "--output",
    type=FilePath(dir_okay=True, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the snapshot exactly there (not in the snapshot folder; 'latest' is not moved).",
)
@click.option("--force", is_flag=True, help="With -o: replace FILE when it exists.")
@click.option("--bench", "with_bench", is_flag=True, help="Also run the matmul benchmark and keep its results.")
@click.option("--list", "list_them", is_flag=True, help="List the saved snapshots and exit.")
@python_option
@timeout_option
@torch_timeout_option
@skip_option
@debug_option
@root_option
@guarded
def snapshot(
    output: Path | None,
    force: bool,
    with_bench: bool,
    list_them: bool,
    python: str | None,
    timeout: float,
    torch_timeout: float,
    skip: tuple[str, ...],
    debug: bool,
    root: Path | None,
) -> None:
    """Save this machine's full report, to compare against after an upgrade (envdoctor verify).

    Snapshots go to ~/.local/state/envdoctor/snapshots/ (ENVDOCTOR_STATE_DIR or XDG_STATE_HOME move
    it), one file per snapshot named by its UTC time; 'latest' names the newest.

    Exit status: 0 saved, 2 usage error or the file cannot be written, 3 envdoctor itself failed.
    """
    directory = store_dir(os.environ)
    if list_them:
        if output or with_bench or force:
            raise click.UsageError("--list takes no -o, --force or --bench")
        _print_list(directory)
        return
    if force and not output:
        raise click.UsageError("--force goes with -o FILE (snapshots in the folder are never overwritten)")
    try:  # before the inspection: nobody waits for a write that must fail
        if output is not None:
            check_target(output, force)
        else:
            check_store(directory)
    except SnapshotError as exc:
        _usage_exit(str(exc))
    ctx = make_context(python, timeout, root, torch_timeout)
    result = inspect(ctx, skip=skip, debug=debug)
    facts, findings = result.facts, result.findings
    _internal_exit(facts, "; no snapshot written")
    bench = None
    if with_bench:
        exe, chosen_by = _bench_python(facts, python, ctx.env)
        bench = _run_bench(exe, chosen_by, ctx.env)
        _print_bench(bench)
    moment = utc_now()
    doc = snapshot_document(facts, findings, bench, created=iso(moment))
    try:
        path = write_to(doc, output, force) if output else save(doc, directory, moment)
    except SnapshotError as exc:
        _usage_exit(str(exc))
    for line in saved_lines(path, facts, findings, doc, bench, in_store=output is None):
        click.echo(line)


def _print_bench(bench: Any) -> None:
    try:
        from envdoctor.bench.render import render_bench_text

        click.echo(render_bench_text(bench, color=use_color()), nl=False)
    except Exception as exc:  # the summary is a courtesy; the results are saved either way
        click.echo(f"bench: {len(bench.points)} point(s) measured (no summary: {type(exc).__name__})")


def _print_list(directory: Path) -> None:
    if os.path.isdir(directory) and not os.access(directory, os.R_OK | os.X_OK):
        _usage_exit(f"cannot read the snapshot folder {directory}: permission denied")
    for line in list_lines(directory, list_snapshots(directory)):
        click.echo(line)


# --- verify --------------------------------------------------------------------------------------


@click.command()
@click.option(
    "--baseline",
    type=FilePath(path_type=Path),
    default=None,
    metavar="FILE",
    help="The snapshot (or check --json report) to compare with (default: the latest snapshot).",
)
@click.option(
    "--bench",
    "with_bench",
    is_flag=True,
    help="Run the benchmark again and compare it with the baseline's (snapshot --bench).",
)
@click.option(
    "--tolerance",
    type=Number(0, 100, unit="%"),
    default=DEFAULT_TOLERANCE,
    show_default=True,
    metavar="PCT",
    help="With --bench: a point slower by more than this percentage regressed.",
)
@click.option("--json", "as_json", is_flag=True, help=f"Print the versioned JSON result ({VERIFY_SCHEMA}).")
@click.option("--force", is_flag=True, help="Compare even when the baseline looks like another machine's.")
@python_option
@timeout_option
@torch_timeout_option
@skip_option
@html_options
@debug_option
@root_option
@suppress_option
@guarded
def verify(
    baseline: Path | None,
    with_bench: bool,
    tolerance: float,
    as_json: bool,
    force: bool,
    python: str | None,
    timeout: float,
    torch_timeout: float,
    skip: tuple[str, ...],
    debug: bool,
    root: Path | None,
    as_html: bool = False,
    html_output: Path | None = None,
    suppress: tuple[str, ...] = (),
) -> None:
    """Inspect this machine again and compare it with a snapshot taken before an upgrade.

    Regressions first (a reboot is needed, a GPU is gone, torch no longer sees CUDA, the container
    toolkit broke, the bench got slower), then expected changes (the driver version), then what
    stayed the same.

    Exit status: 0 nothing regressed (changes may be listed), 1 a regression, 2 usage error or a
    baseline that cannot be used, 3 envdoctor itself failed.
    """
    check_formats(json=as_json, html=as_html)
    path = baseline
    if path is None:
        directory = store_dir(os.environ)
        path = latest(directory)
        if path is None:
            _usage_exit(
                f"no snapshot to compare with in {directory}; take one first with: {HOW} "
                "(before the upgrade), or pass --baseline FILE"
            )
    try:
        base = load(path)
    except SnapshotError as exc:
        _usage_exit(str(exc))
    if with_bench and base.bench is None:
        _usage_exit(
            base.bench_error
            or f"{path} has no bench results to compare with; take a baseline with: envdoctor snapshot --bench"
        )
    # Inspect what the baseline inspected, in the interpreter it inspected.
    skip = tuple(sorted(set(skip) | {a for a in base.facts.skipped if a in SKIPPABLE}))
    target = python
    if target is None and base.facts.python.executable and os.path.isfile(base.facts.python.executable):
        target = base.facts.python.executable
    ctx = make_context(target, timeout, root, torch_timeout)
    result = inspect(ctx, skip=skip, suppress=suppress, debug=debug)
    facts, findings = result.facts, result.findings
    reasons, notes = machine_differences(base.facts, facts, base.host)
    if reasons and not force:
        _usage_exit(
            f"{path} looks like another machine's snapshot: {'; '.join(reasons)}. "
            "Compare anyway with --force, or take a baseline here with: " + HOW
        )
    warnings = list(notes) + (
        [f"compared with another machine's baseline (--force): {'; '.join(reasons)}"] if reasons else []
    )
    if base.migrated_from:
        warnings.append(f"{path} is in the older format {base.migrated_from}; read through a conversion")
    bench = None
    if with_bench:
        exe, chosen_by = _bench_python(facts, target, ctx.env)
        bench = _run_bench(exe, chosen_by, ctx.env, like=base.bench)
    before = checks.split(base.findings, suppress).shown  # a code hidden now was hidden then too
    verification = compare(base.facts, facts, before, findings, base.bench, bench, tolerance, suppress)
    code = EXIT_INTERNAL if internal_failures(facts) else verification.exit_code
    if as_json or as_html:
        doc = verify_document(
            base,
            facts,
            verification,
            warnings,
            bench,
            tolerance if with_bench else None,
            code,
            created_at=iso(utc_now()),
        )
        if as_html:
            from envdoctor.render.verify_page import verify_page

            emit_page(verify_page(stamp(doc, code), machine_redactor()), html_output, "verify")
        else:
            click.echo(dumps(stamp(doc, code)))
    else:
        for line in warnings:
            click.echo(f"envdoctor: warning: {mask_text(line)}", err=True)
        click.echo(mask_text(render_verification(base, verification, color=use_color())), nl=False)
    if code == EXIT_INTERNAL:
        click.echo(
            f"envdoctor: could not inspect {', '.join(internal_failures(facts))} (a bug; run with --debug)", err=True
        )
    sys.exit(code)

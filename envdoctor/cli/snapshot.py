"""``envdoctor snapshot`` and ``envdoctor verify``: prove that a driver upgrade broke nothing.

    envdoctor snapshot            # before: saves the report to ~/.local/state/envdoctor/snapshots/
    sudo apt upgrade && sudo reboot
    envdoctor verify              # after: regressions (exit 1), expected changes, the rest unchanged
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional, Tuple

import click

from envdoctor import __version__
from envdoctor.cli.common import (EXIT_INTERNAL, EXIT_USAGE, debug_option, guarded, make_context,
                                  python_option, root_option, timeout_option, use_color)
from envdoctor.facts import Facts
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.inspect import inspect
from envdoctor.probes import SKIPPABLE, internal_failures
from envdoctor.redact import mask_data, mask_text
from envdoctor.render import json as render_json
from envdoctor.render.text import Style
from envdoctor.snapshot import (HOW, Snapshot, SnapshotError, describe, latest, list_snapshots, load, save,
                                snapshot_document, store_dir, utc_now, write_to)
from envdoctor.verify import DEFAULT_TOLERANCE, Verification, compare, machine_differences

VERIFY_SCHEMA = "envdoctor.verify/1"

skip_option = click.option(
    "--skip", multiple=True, type=click.Choice(SKIPPABLE),
    help="Leave an area out (repeatable); 'torch' skips the slowest probe.")


def _usage_exit(message: str) -> NoReturn:
    """A baseline or file that cannot be used: one line on stderr, exit 2."""
    click.echo(f"envdoctor: {mask_text(message)}", err=True)
    sys.exit(EXIT_USAGE)


def _internal_exit(facts: Facts, what: str) -> None:
    broken = internal_failures(facts)
    if broken:
        click.echo(f"envdoctor: could not inspect {', '.join(broken)} (a bug; run with --debug){what}", err=True)
        sys.exit(EXIT_INTERNAL)


def _when(iso: Optional[str]) -> str:
    """``2026-11-29T17:30:05Z`` -> ``2026-11-29 17:30:05 UTC``."""
    if not iso:
        return "unknown time"
    try:
        moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bench_python(facts: Facts, explicit: Optional[str], env: Dict[str, str]) -> Tuple[Optional[str], str]:
    if facts.python.executable and not explicit:
        return facts.python.executable, facts.python.chosen_by or "python3 on PATH"
    from envdoctor.bench.host import resolve_python

    return resolve_python(explicit, env)


def _run_bench(python: Optional[str], chosen_by: str, env: Dict[str, str], like: Any = None) -> Any:
    """The bench (``envdoctor.bench.host.run_bench``); with ``like``, the baseline's dtypes, sizes and budget."""
    from envdoctor.bench.host import run_bench
    from envdoctor.facts.base import ProbeError
    from envdoctor.facts.bench import BenchResult

    if not python:
        return BenchResult(error=ProbeError("not_found", "no target Python to run the benchmark in (--python)"))
    kwargs: Dict[str, Any] = {"env": env, "chosen_by": chosen_by}
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
@click.option("-o", "--output", type=click.Path(dir_okay=True, path_type=Path), default=None, metavar="FILE",
              help="Write the snapshot exactly there (not in the snapshot folder; 'latest' is not moved).")
@click.option("--force", is_flag=True, help="With -o: replace FILE when it exists.")
@click.option("--bench", "with_bench", is_flag=True, help="Also run the matmul benchmark and keep its results.")
@click.option("--list", "list_them", is_flag=True, help="List the saved snapshots and exit.")
@python_option
@timeout_option
@skip_option
@debug_option
@root_option
@guarded
def snapshot(output: Optional[Path], force: bool, with_bench: bool, list_them: bool, python: Optional[str],
             timeout: float, skip: Tuple[str, ...], debug: bool, root: Optional[Path]) -> None:
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
    if output is not None and output.is_dir():
        _usage_exit(f"{output} is a folder; give a file name, e.g. {output / 'before-upgrade.json'}")
    if output is not None and output.exists() and not force:
        _usage_exit(f"{output} already exists; choose another name or pass --force to replace it")
    ctx = make_context(python, timeout, root)
    result = inspect(ctx, skip=skip, debug=debug)
    facts, findings = result.facts, result.findings
    _internal_exit(facts, "; no snapshot written")
    bench = None
    if with_bench:
        exe, chosen_by = _bench_python(facts, python, ctx.env)
        bench = _run_bench(exe, chosen_by, ctx.env)
        _print_bench(bench)
    moment = utc_now()
    doc = snapshot_document(facts, findings, bench, created=moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        path = write_to(doc, output, force) if output else save(doc, directory, moment)
    except SnapshotError as exc:
        _usage_exit(str(exc))
    driver, torch_version, gpus = describe(Snapshot(path, facts, findings, doc))
    where = "" if output else " (latest)"
    click.echo(f"Snapshot saved: {path}{where}")
    torch_text = torch_version or ("not inspected" if "torch" in facts.skipped else "none")
    click.echo(f"  driver {driver or 'none'}, torch {torch_text}, {_gpu_summary(gpus)}"
               + (f", bench {len(bench.points)} point(s)" if bench is not None else ""))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        click.echo(f"  note: it records {len(errors)} error finding(s) ({', '.join(f.code for f in errors)}); "
                   "verify compares against this state (envdoctor check shows them)")
    click.echo("After the upgrade (and the reboot), run: envdoctor verify"
               + (f" --baseline {path}" if output else "") + (" --bench" if bench is not None else ""))


def _gpu_summary(gpus: Tuple[str, ...]) -> str:
    if not gpus:
        return "no GPU listed"
    names = sorted(set(gpus))
    return ", ".join(f"{gpus.count(n)}x {n}" for n in names)


def _print_bench(bench: Any) -> None:
    try:
        from envdoctor.render.bench import render_bench_text

        click.echo(render_bench_text(bench, color=use_color()), nl=False)
    except Exception as exc:  # the summary is a courtesy; the results are saved either way
        click.echo(f"bench: {len(bench.points)} point(s) measured (no summary: {type(exc).__name__})")


def _print_list(directory: Path) -> None:
    infos = list_snapshots(directory)
    if not infos:
        click.echo(f"No snapshots in {directory}. Take one with: {HOW}")
        return
    click.echo(f"Snapshots in {directory}:")
    for info in infos:
        mark = "  <- latest" if info.latest else ""
        if info.error:
            click.echo(f"  {info.name}  unreadable: {info.error}{mark}")
            continue
        bench = ", bench" if info.bench else ""
        torch_text = info.torch or ("not inspected" if "torch" in info.skipped else "none")
        click.echo(f"  {info.name}  {_when(info.created)}  driver {info.driver or 'none'}  "
                   f"torch {torch_text}  {_gpu_summary(info.gpus)}{bench}{mark}")


# --- verify --------------------------------------------------------------------------------------

@click.command()
@click.option("--baseline", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="The snapshot (or check --json report) to compare with (default: the latest snapshot).")
@click.option("--bench", "with_bench", is_flag=True,
              help="Run the benchmark again and compare it with the baseline's (snapshot --bench).")
@click.option("--tolerance", type=click.FloatRange(0, 100), default=DEFAULT_TOLERANCE, show_default=True,
              metavar="PCT", help="With --bench: a point slower by more than this percentage regressed.")
@click.option("--json", "as_json", is_flag=True, help=f"Print the versioned JSON result ({VERIFY_SCHEMA}).")
@click.option("--force", is_flag=True, help="Compare even when the baseline looks like another machine's.")
@python_option
@timeout_option
@skip_option
@debug_option
@root_option
@guarded
def verify(baseline: Optional[Path], with_bench: bool, tolerance: float, as_json: bool, force: bool,
           python: Optional[str], timeout: float, skip: Tuple[str, ...], debug: bool, root: Optional[Path]) -> None:
    """Inspect this machine again and compare it with a snapshot taken before an upgrade.

    Regressions first (a reboot is needed, a GPU is gone, torch no longer sees CUDA, the container
    toolkit broke, the bench got slower), then expected changes (the driver version), then what
    stayed the same.

    Exit status: 0 nothing regressed (changes may be listed), 1 a regression, 2 usage error or a
    baseline that cannot be used, 3 envdoctor itself failed.
    """
    path = baseline
    if path is None:
        directory = store_dir(os.environ)
        path = latest(directory)
        if path is None:
            _usage_exit(f"no snapshot to compare with in {directory}; take one first with: {HOW} "
                        "(before the upgrade), or pass --baseline FILE")
    try:
        base = load(path)
    except SnapshotError as exc:
        _usage_exit(str(exc))
    if with_bench and base.bench is None:
        _usage_exit(base.bench_error or f"{path} has no bench results to compare with; "
                    "take a baseline with: envdoctor snapshot --bench")
    # Inspect what the baseline inspected, in the interpreter it inspected.
    skip = tuple(sorted(set(skip) | {a for a in base.facts.skipped if a in SKIPPABLE}))
    target = python
    if target is None and base.facts.python.executable and os.path.isfile(base.facts.python.executable):
        target = base.facts.python.executable
    ctx = make_context(target, timeout, root)
    result = inspect(ctx, skip=skip, debug=debug)
    facts, findings = result.facts, result.findings
    reasons, notes = machine_differences(base.facts, facts, base.host)
    if reasons and not force:
        _usage_exit(f"{path} looks like another machine's snapshot: {'; '.join(reasons)}. "
                    "Compare anyway with --force, or take a baseline here with: " + HOW)
    warnings = list(notes) + ([f"compared with another machine's baseline (--force): {'; '.join(reasons)}"]
                              if reasons else [])
    if base.migrated_from:
        warnings.append(f"{path} is in the older format {base.migrated_from}; read through a conversion")
    bench = None
    if with_bench:
        exe, chosen_by = _bench_python(facts, target, ctx.env)
        bench = _run_bench(exe, chosen_by, ctx.env, like=base.bench)
    verification = compare(base.facts, facts, base.findings, findings,
                           base.bench if with_bench else None, bench, tolerance)
    if base.bench is not None and not with_bench:
        verification = Verification(verification.regressions, verification.changes, verification.unchanged,
                                    verification.not_compared + ("bench: the baseline has one; add --bench to compare",))
    code = EXIT_INTERNAL if internal_failures(facts) else verification.exit_code
    if as_json:
        doc = verify_document(base, facts, verification, warnings, bench, tolerance if with_bench else None, code)
        click.echo(render_json.dumps(doc))
    else:
        for line in warnings:
            click.echo(f"envdoctor: warning: {mask_text(line)}", err=True)
        click.echo(mask_text(render_verification(base, verification, color=use_color())), nl=False)
    if code == EXIT_INTERNAL:
        click.echo(f"envdoctor: could not inspect {', '.join(internal_failures(facts))} "
                   "(a bug; run with --debug)", err=True)
    sys.exit(code)


def _header(base: Snapshot) -> str:
    driver, torch_version, _ = describe(base)
    return (f"Verify against {base.path} (taken {_when(base.created)}, driver {driver or 'none'}, "
            f"torch {torch_version or ('not inspected' if 'torch' in base.facts.skipped else 'none')})")


def _finding_lines(f: Finding, mark: str, kind: str, style: Style) -> List[str]:
    lines = [style(f"  {mark} {f.code} {f.title}", kind)]
    if f.explanation and kind == "error":
        lines.append(f"      {f.explanation}")
    lines.extend(style(f"      - {e}", "dim") for e in f.evidence)
    if f.fix:
        lines.extend(f"      {c}" if c.startswith("#") else f"      $ {c}" for c in f.fix)
    if f.reference and kind == "error":
        lines.append(style(f"      see {f.reference}", "dim"))
    return lines


def render_verification(base: Snapshot, v: Verification, color: bool = False) -> str:
    """The human text: header, regressions (✗), changes (•), unchanged, not compared, result."""
    style = Style(color)
    out = [style(_header(base), "bold"), ""]
    if v.regressions:
        out.append(style("Regressions", "bold"))
        for f in v.regressions:
            out.extend(_finding_lines(f, "✗", "error", style))
        out.append("")
    if v.changes:
        out.append(style("Changes", "bold"))
        for f in v.changes:
            out.extend(_finding_lines(f, "•", "info", style))
        out.append("")
    if v.unchanged:
        out.append(style("Unchanged: ", "bold") + "; ".join(v.unchanged))
    if v.not_compared:
        out.append(style("Not compared: ", "bold") + "; ".join(v.not_compared))
    out.append("")
    n, c = len(v.regressions), len(v.changes)
    if n:
        out.append(style(f"Result: {n} regression(s), {c} change(s). Fix the regressions above, "
                         "then run envdoctor verify again.", "error"))
    else:
        out.append(style("Result: no regressions" + (f"; {c} change(s) listed above." if c else "."), "ok"))
    return "\n".join(out) + "\n"


def verify_document(base: Snapshot, facts: Facts, v: Verification, warnings: List[str], bench: Any,
                    tolerance: Optional[float], code: int) -> Dict[str, Any]:
    """The ``envdoctor.verify/1`` document: keys stable within the version, new keys may be added."""
    driver, torch_version, gpus = describe(base)
    now = describe(Snapshot(base.path, facts, (), {}))
    doc: Dict[str, Any] = {
        "schema": VERIFY_SCHEMA,
        "envdoctor_version": __version__,
        "created_at": utc_now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "baseline": {"path": str(base.path), "created": base.created, "host": base.host,
                     "schema": base.doc.get("schema"), "migrated_from": base.migrated_from,
                     "driver": driver, "torch": torch_version, "gpus": list(gpus)},
        "current": {"collected_at": facts.collected_at, "host": facts.system.hostname,
                    "driver": now[0], "torch": now[1], "gpus": list(now[2])},
        "warnings": warnings,
        "regressions": [to_data(f) for f in v.regressions],
        "changes": [to_data(f) for f in v.changes],
        "unchanged": list(v.unchanged),
        "not_compared": list(v.not_compared),
        "bench": ({"tolerance_pct": tolerance, "current": to_data(bench)} if bench is not None else None),
        "exit_code": code,
    }
    return mask_data(doc)

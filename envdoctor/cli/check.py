"""``envdoctor check``: what is installed, what is broken, and the exact command that fixes it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import click

from envdoctor.clicore import (
    EXIT_INTERNAL,
    check_formats,
    color_option,
    debug_option,
    emit_page,
    finish,
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
    verbosity,
    verbosity_options,
)
from envdoctor.probes import SKIPPABLE, internal_failures, start

if TYPE_CHECKING:
    from envdoctor.facts import Facts
    from envdoctor.inspect import Inspection
    from envdoctor.probes.context import Context
    from envdoctor.redact import Redactor


def redactor_for(facts: Facts) -> Redactor:
    from envdoctor.redact import Redactor

    s = facts.system
    serials = [g.serial for g in facts.driver.gpus if g.serial]
    return Redactor(s.hostname, s.user, s.home, serials)


@click.command()
@python_option
@timeout_option
@torch_timeout_option
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report (envdoctor.report/1).")
@click.option("--markdown", is_flag=True, help="Print a Markdown block to paste into a bug report.")
@click.option("--redact", is_flag=True, help="Mask host name, user name, home paths, GPU UUIDs and serials.")
@click.option(
    "--skip",
    multiple=True,
    type=click.Choice(SKIPPABLE),
    help="Leave an area out (repeatable); 'torch' skips the slowest probe.",
)
@suppress_option
@click.option("--bench", "with_bench", is_flag=True, help="Also run a short matmul benchmark.")
@html_options
@verbosity_options
@color_option
@debug_option
@root_option
@guarded
def check(
    python: Optional[str],
    timeout: float,
    torch_timeout: float,
    as_json: bool,
    markdown: bool,
    redact: bool,
    skip: Tuple[str, ...],
    suppress: Tuple[str, ...],
    with_bench: bool,
    as_html: bool,
    html_output: Optional[Path],
    debug: bool,
    root: Optional[Path],
) -> None:
    """Inspect this machine and say what is broken and how to fix it.

    Exit status: 0 no errors, 1 errors found, 2 usage error, 3 envdoctor itself failed.
    """
    check_formats(json=as_json, markdown=markdown, html=as_html)
    ctx = make_context(python, timeout, root, torch_timeout)
    # the probes first (the target interpreter's child is running when start returns), then the
    # imports of the table, the checks and the renderers, which the probes' waiting hides
    probing = start(ctx, skip=skip, debug=debug)
    from envdoctor.findings import exit_code
    from envdoctor.inspect import inspect
    from envdoctor.redact import mask_text

    result = inspect(ctx, skip=skip, suppress=suppress, debug=debug, probing=probing)
    facts, findings = result.facts, result.findings
    bench_doc = None
    bench_text = ""
    if with_bench:
        bench_doc, bench_text = _short_bench(facts, ctx)
    redactor = redactor_for(facts) if redact else None
    # the renderers load only for the format asked (imports are a good part of check's time)
    if as_html:
        from envdoctor.documents import stamp
        from envdoctor.render import json as render_json
        from envdoctor.render.check_page import check_page

        code = EXIT_INTERNAL if internal_failures(facts) else exit_code(findings)
        # the page masks what --redact masks (check_page), root as a user name aside
        doc = stamp(render_json.report_document(facts, findings, {"bench": bench_doc} if with_bench else None), code)
        emit_page(check_page(doc, machine_redactor()), html_output, "check")
    elif as_json:
        from envdoctor.render import json as render_json

        extra: Dict[str, Any] = {"bench": bench_doc} if with_bench else {}
        from envdoctor.checks import hidden_block

        hid = hidden_block(suppress, result.suppressed)
        if hid is not None:  # the report's key is there only when --suppress was given
            extra["suppressed"] = hid
        click.echo(render_json.dumps(render_json.report_document(facts, findings, extra or None, redactor)))
    else:
        if markdown:
            from envdoctor.render import markdown as render_markdown

            out = render_markdown.render(facts, findings)
        else:
            out = _text(result, color=use_color() and not redact)
        out = mask_text(out + bench_text)
        click.echo(redactor.text(out) if redactor else out, nl=False)
    broken = internal_failures(facts)
    if broken:
        click.echo(f"envdoctor: could not inspect {', '.join(broken)} (a bug; run with --debug)", err=True)
        sys.exit(EXIT_INTERNAL)
    finish(exit_code(findings))  # at once: the report is written


def _text(result: Inspection, color: bool) -> str:
    """The text report: with ``-q`` only the findings and the verdict, with ``-v`` also the sources
    and timings."""
    from envdoctor.lines import finding_lines, suppressed_line, verdict
    from envdoctor.render import text as render_text
    from envdoctor.render.sources import sources_lines
    from envdoctor.style import Style

    style = Style(color)
    level = verbosity()
    if level < 0:
        lines = finding_lines(result.findings, style) + suppressed_line(result.suppressed, style)
        return "\n".join(lines + [verdict(result.findings, style)]) + "\n"
    extra = sources_lines(result.facts, result.seconds, style) if level > 0 else ()
    return render_text.render(result.facts, result.findings, color=color, extra=extra, suppressed=result.suppressed)


def _short_bench(facts: Facts, ctx: Context) -> Tuple[Optional[dict], str]:
    """The short benchmark of ``check --bench`` (fp32 and fp16 at one size; ``envdoctor bench`` is the full one)."""
    from envdoctor.bench import QUICK, run_bench
    from envdoctor.bench.render import render_bench_text
    from envdoctor.facts.serde import to_data

    python = facts.python.executable or sys.executable
    quick: Dict[str, Any] = dict(QUICK)  # the QUICK preset's values are the keyword arguments' types
    # bounded like the torch check: the import, then a few seconds of measurement
    result = run_bench(
        python,
        env=ctx.env,
        chosen_by=facts.python.chosen_by,
        timeout=ctx.torch_timeout + 10 * float(quick["budget"]),
        **quick,
    )
    return to_data(result), "\n" + render_bench_text(result)

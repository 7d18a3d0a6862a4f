"""``envdoctor topo``: the links of every GPU and between GPUs, with each path's expected peak.

Exit codes: 0 no error finding; 1 an error finding (NVLink down on an SXM board, fabric not ready),
or no GPU could be read; 2 usage; 3 envdoctor itself failed.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any, Optional, Tuple

import click

from envdoctor import __version__
from envdoctor.clicore import check_formats, emit_page, html_options, machine_redactor
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_OK,
    debug_option,
    guarded,
    make_context,
    root_option,
    suppress_option,
    timeout_option,
    use_color,
)
from envdoctor.documents import dumps, stamp
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts
from envdoctor.findings import exit_code, run_rules, split_suppressed
from envdoctor.redact import mask_data


def _table() -> Any:
    from envdoctor.table import TableError, load_table

    try:
        return load_table()
    except TableError:
        return None


@click.command("topo")
@timeout_option
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.topo/1").')
@suppress_option
@html_options
@debug_option
@root_option
@guarded
def topo(timeout: float, as_json: bool, suppress: Tuple[str, ...], debug: bool, root: Optional[Path],
         as_html: bool = False, html_output: Optional[Path] = None) -> None:
    """GPU links: PCIe, NVLink, NUMA and the path between every pair of GPUs.

    \b
    Like `nvidia-smi topo -m`, with the expected peak of each path (NVLink generation x links,
    PCIe generation x width; data/links.toml) and findings with fixes: a slot or riser that
    holds the link back, NVLinks down, no P2P (ACS/IOMMU), GPUs split over NUMA nodes, MIG,
    ECC, persistence, Fabric Manager.
    \b
    envdoctor topo
    envdoctor topo --json > topo.json
    """
    from envdoctor.links import probe as links_probe
    from envdoctor.links.render_topo import render_topo_text, topo_document
    from envdoctor.links.rules_topo import RULES
    from envdoctor.links.table import load_links
    from envdoctor.links.analysis_topo import expected

    ctx = make_context(None, timeout, root)
    lf = links_probe.probe(ctx)
    facts = Facts(links=lf, driver=DriverFacts(cuda_visible_devices=ctx.env.get("CUDA_VISIBLE_DEVICES")))
    table = _table()
    findings, hidden = split_suppressed(run_rules(RULES, facts, table), suppress)
    top = expected(lf, load_links())
    check_formats(json=as_json, html=as_html)
    if as_json or as_html:
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        doc = topo_document(lf, top, findings, envdoctor_version=__version__, created_at=now)
        code = EXIT_ERRORS if not lf.gpus or exit_code(findings) else EXIT_OK
        if as_html:
            from envdoctor.links.page_topo import topo_page

            emit_page(topo_page(stamp(mask_data(doc), code), machine_redactor()), html_output, "topo")
        else:
            click.echo(dumps(stamp(mask_data(doc), code)))
    else:
        click.echo(render_topo_text(lf, top, findings, color=use_color(), suppressed=hidden), nl=False)
        from envdoctor.probes import fabric as fabric_probe
        from envdoctor.render.fabric import fabric_lines

        nics = fabric_lines(fabric_probe.probe(ctx))      # the IB/RoCE adapters beside the GPUs
        if nics:
            click.echo("\n".join(["", "fabric:"] + ["  " + line for line in nics]))
    if not lf.gpus:
        if not (as_json or as_html):
            click.echo("envdoctor topo: no GPU could be read; `envdoctor check` says why", err=True)
        sys.exit(EXIT_ERRORS)
    sys.exit(EXIT_OK if exit_code(findings) == 0 else EXIT_ERRORS)

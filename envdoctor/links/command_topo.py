"""``envdoctor topo``: the links of every GPU and between GPUs, with each path's expected peak.

Exit codes: 0 no error finding; 1 an error finding (NVLink down on an SXM board, fabric not ready),
or NVIDIA GPUs on the PCI bus that could not be read; 2 usage, or no GPU on this machine at all (as
diag); 3 envdoctor itself failed.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any, Optional, Tuple

import click

from envdoctor import __version__, checks
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    check_formats,
    debug_option,
    emit_page,
    guarded,
    html_options,
    machine_redactor,
    make_context,
    root_option,
    suppress_option,
    timeout_option,
    use_color,
)
from envdoctor.documents import dumps, stamp
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts
from envdoctor.findings import exit_code
from envdoctor.redact import mask_data


def _table() -> Tuple[Any, Optional[str]]:
    """The main table, or None and why it could not be loaded (finding ED901)."""
    from envdoctor.table import TableError, load_table

    try:
        return load_table(), None
    except TableError as exc:
        return None, str(exc)


def _no_gpu(ctx: Any, lf: Any) -> Tuple[int, str]:
    """The exit code and the line when no GPU could be read: 2 (nothing to look at, as diag's NO_GPU)
    where the PCI bus has no NVIDIA display device either, else 1 (GPUs there that cannot be read)."""
    from envdoctor.probes import pci as pci_probe

    why = lf.error.message if lf.error is not None else "NVML sees no GPU"
    on_bus = len(pci_probe.gpu_addresses(ctx))
    if not on_bus:
        return EXIT_USAGE, (
            f"envdoctor topo: no GPU on this machine: {why}; none on the PCI bus; run topo on a node with an NVIDIA GPU"
        )
    return EXIT_ERRORS, (
        f"envdoctor topo: {on_bus} NVIDIA GPU(s) on the PCI bus, none could be read: {why}; `envdoctor check` says why"
    )


@click.command("topo")
@timeout_option
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.topo/1").')
@suppress_option
@html_options
@debug_option
@root_option
@guarded
def topo(
    timeout: float,
    as_json: bool,
    debug: bool,
    root: Optional[Path],
    as_html: bool = False,
    html_output: Optional[Path] = None,
    suppress: Tuple[str, ...] = (),
) -> None:
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
    from envdoctor.links.analysis_topo import expected
    from envdoctor.links.render_topo import render_topo_text, topo_document
    from envdoctor.links.rules_topo import RULES
    from envdoctor.links.table import load_links

    ctx = make_context(None, timeout, root)
    lf = links_probe.probe(ctx)
    facts = Facts(links=lf, driver=DriverFacts(cuda_visible_devices=ctx.env.get("CUDA_VISIBLE_DEVICES")))
    table, table_error = _table()
    links = load_links()
    found = checks.run(RULES, facts, table, tables={"links": links})
    if table_error:
        found.append(checks.table_broken(table_error))
    done = checks.split(found, suppress)
    findings, hidden = done.shown, done.hidden
    top = expected(lf, links)
    check_formats(json=as_json, html=as_html)
    no_gpu = _no_gpu(ctx, lf) if not lf.gpus else None
    if as_json or as_html:
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        doc = topo_document(lf, top, findings, envdoctor_version=__version__, created_at=now)
        code = no_gpu[0] if no_gpu else EXIT_ERRORS if exit_code(findings) else EXIT_OK
        if as_html:
            from envdoctor.links.page_topo import topo_page

            emit_page(topo_page(stamp(mask_data(doc), code), machine_redactor()), html_output, "topo")
        else:
            click.echo(dumps(stamp(mask_data(doc), code)))
    else:
        click.echo(render_topo_text(lf, top, findings, color=use_color(), suppressed=hidden), nl=False)
        from envdoctor.probes import fabric as fabric_probe
        from envdoctor.render.fabric import fabric_lines

        nics = fabric_lines(fabric_probe.probe(ctx))  # the IB/RoCE adapters beside the GPUs
        if nics:
            click.echo("\n".join(["", "fabric:"] + ["  " + line for line in nics]))
    if no_gpu:
        click.echo(no_gpu[1], err=True)
        sys.exit(no_gpu[0])
    sys.exit(EXIT_OK if exit_code(findings) == 0 else EXIT_ERRORS)

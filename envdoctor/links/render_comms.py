"""``envdoctor comms`` as text and as the versioned document ``envdoctor.comms/1``. Nothing is
computed here: the figures come in a :class:`envdoctor.links.facts_comms.CommsResult`.

    collective      size     calls  time us   algbw   busbw  of peak  NCCL          check
    all_reduce      1 GiB       20   5851.2  183.51  321.14      71%  Ring/Simple   ok
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, TypedDict

from envdoctor.doctypes import FindingsSummary
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.findings import summary as findings_summary
from envdoctor.links.facts_comms import CommsResult
from envdoctor.units import format_bytes


def _f(x: Optional[float], digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _header(r: CommsResult) -> List[str]:
    devices = sorted({x.device for x in r.ranks if x.device})
    who = {"envdoctor": "started by envdoctor"}.get(r.launcher, f"started by {r.launcher}")
    versions = ", ".join(
        x
        for x in (
            f"NCCL {r.nccl_version}" if r.nccl_version else None,
            f"torch {r.torch_version}" if r.torch_version else None,
        )
        if x
    )
    if r.backend == "gloo" and r.world_size == 1 and r.host_copy_note:
        lines = [f"envdoctor comms: no GPU here ({versions or 'torch'} asked in one CPU process)"]
    else:
        lines = [
            f"envdoctor comms: {r.world_size} rank(s), {r.backend}"
            + (f" ({versions})" if versions else "")
            + f", {who}"
            + (f", on {len(r.hosts)} hosts" if len(r.hosts) > 1 else "")
        ]
    if devices:
        lines.append("  devices: " + "; ".join(devices))
    e = r.expected
    if e.peak_gbps:
        achievable = (
            f"; good hardware reaches ~{e.achievable_fraction:.0%} ({e.achievable_gbps:g} GB/s)"
            if e.achievable_gbps and e.achievable_fraction
            else ""
        )
        unconfirmed = " (rate unconfirmed)" if not e.confirmed else ""
        lines.append(
            f"  links: the slowest path between them is {e.path}, {e.peak_gbps:g} GB/s each way "
            f"({e.basis}){unconfirmed}{achievable}"
        )
        if e.published_gbps:
            lines.append(
                f"  published all_reduce busbw for this setup: {e.published_gbps:g} GB/s ({e.published_source})"
            )
    elif e.note:
        lines.append(f"  links: {e.note}")
    if r.backend == "nccl":
        setting = r.nccl_env.get("NCCL_NVLS_ENABLE")
        nvls = [
            f"NCCL_NVLS_ENABLE={setting} (from the environment)"
            if setting is not None
            else "NCCL_NVLS_ENABLE not set (NCCL's default: on where supported)"
        ]
        if r.nvls_available is not None:
            nvls.append("multicast " + ("available" if r.nvls_available else "not available"))
        if r.nvls_used is not None:
            nvls.append("used" if r.nvls_used else "not used")
        lines.append("  NVLS: " + ", ".join(nvls))
        if r.transports:
            lines.append("  NCCL transports: " + ", ".join(r.transports))
        if r.nccl_log:
            lines.append(f"  algorithm: {r.nccl_log}")
    return lines


def table_lines(r: CommsResult) -> List[str]:
    rows = [("collective", "size", "calls", "time us", "algbw", "busbw", "of peak", "NCCL", "check")]
    for p in r.points:
        if p.status != "ok":
            rows.append((p.collective, format_bytes(p.bytes), "-", "-", "-", "-", "-", "-", p.status))
            continue
        alone = r.world_size <= 1  # one rank moves no byte: size/time is not a bandwidth
        rows.append(
            (
                p.collective,
                format_bytes(p.bytes),
                str(p.iters),
                _f(p.time_us, 1),
                "-" if alone else _f(p.algbw_gbps),
                "-" if alone else _f(p.busbw_gbps),
                f"{p.ratio:.0%}" if p.ratio is not None else "-",
                f"{p.algo}/{p.proto}" if p.algo else "-",
                "ok" if p.wrong == 0 else (f"{p.wrong} wrong" if p.wrong else "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {2, 3, 4, 5, 6}
    return [
        "  " + "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    ]


def pair_lines(r: CommsResult) -> List[str]:
    if not r.pairs:
        return []
    n = r.world_size
    grid: Dict[tuple, str] = {(p.src, p.dst): (_f(p.gbps, 1) + ("!" if p.wrong else "")) for p in r.pairs}
    width = max([len(v) for v in grid.values()] + [5])
    what = "GPU pairs" if r.backend == "nccl" else "Pairs of ranks"
    out = [f"{what}: one-way copy, GB/s (rows send, columns receive; {format_bytes(r.pairs[0].bytes)} per copy)"]
    out.append("  " + "src\\dst".ljust(8) + "".join(f"rank {j}".rjust(width + 3) for j in range(n)))
    for i in range(n):
        out.append(
            "  "
            + f"rank {i}".ljust(8)
            + "".join(("-" if i == j else grid.get((i, j), "?")).rjust(width + 3) for j in range(n))
        )
    paths = {p.path for p in r.pairs if p.path}
    if paths:
        peaks = sorted({(p.path, p.expected_gbps) for p in r.pairs if p.path and p.expected_gbps})
        out.append("  expected peaks: " + ", ".join(f"{a} {b:g} GB/s" for a, b in peaks))
    return out


def host_lines(r: CommsResult) -> List[str]:
    if r.host_copy_note:
        return [f"Host <-> GPU: {r.host_copy_note}"]
    if not r.host_copies:
        return []
    parts = []
    for c in r.host_copies:
        of = (
            f" ({c.ratio:.0%} of the {c.expected_gbps:g} GB/s PCIe link)"
            if c.ratio is not None and c.expected_gbps
            else ""
        )
        parts.append(f"{'host -> GPU' if c.direction == 'h2d' else 'GPU -> host'} {_f(c.gbps, 1)} GB/s{of}")
    return [f"Host <-> GPU, pinned, {format_bytes(r.host_copies[0].bytes)}: " + "; ".join(parts)]


def rank_lines(r: CommsResult) -> List[str]:
    bad = [x for x in r.ranks if x.status != "ok"]
    wall = f" (wall {r.wall_s:.1f} s)" if r.wall_s is not None else ""
    if not bad:
        return [f"Ranks: all {len(r.ranks)} ok{wall}"] if r.ranks else []
    out = [f"Ranks: {len(r.ranks) - len(bad)} of {len(r.ranks)} ok{wall}"]
    for x in bad:
        out.append(
            f"  rank {x.rank}: {x.status}"
            + (f" during {x.stage}" if x.stage else "")
            + (f": {x.message}" if x.message else "")
        )
    return out


def render_comms_text(
    r: CommsResult, findings: Iterable[Finding], color: bool = False, suppressed: Iterable[Finding] = ()
) -> str:
    from envdoctor.lines import findings_section
    from envdoctor.style import Style

    style = Style(color)
    findings = tuple(findings)
    out = [style(_header(r)[0], "bold")] + _header(r)[1:]
    if r.error is not None and not r.points and not r.host_copies:
        out.append(f"  failed: {r.error.message}")
    if r.points:
        out.append("")
        out.extend(table_lines(r))
        if r.world_size <= 1:
            out.append(
                "  one rank: no byte crosses a link, so no bandwidth is shown; the times are NCCL's own cost "
                "of a call (all_gather, reduce_scatter and all_to_all copy within the GPU's memory)"
            )
        else:
            out.append(
                "  size: nccl-tests' S (all_gather: the output, reduce_scatter: the input); busbw = algbw x "
                "2(n-1)/n for all_reduce, (n-1)/n for the others; 'of peak': busbw / the slowest path's peak"
            )
    for block in (pair_lines(r), host_lines(r), rank_lines(r), [f"note: {n}" for n in r.notes]):
        if block:
            out.append("")
            out.extend(block)
    out.append("")
    out.extend(findings_section(tuple(findings), style, suppressed, "envdoctor comms"))
    return "\n".join(out) + "\n"


class CommsKeys(TypedDict):
    """What ``comms_document`` adds to the result's own fields."""

    findings: List[Finding]
    summary: FindingsSummary


def comms_document(r: CommsResult, findings: Iterable[Finding]) -> Dict[str, Any]:
    """``envdoctor.comms/1``: the result's fields, its findings and a summary."""
    findings = tuple(findings)
    doc: Dict[str, Any] = to_data(r)
    doc["findings"] = [to_data(f) for f in findings]
    doc["summary"] = findings_summary(findings)
    return doc

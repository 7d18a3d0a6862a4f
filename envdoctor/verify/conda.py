"""Verify checks of conda: ED711 it fails now, ED724 it changed. Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.findings import Finding
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, skip_reason


def conda(pair: Pair) -> Iterator[Outcome]:
    """ED711 conda fails now; ED724 conda changed."""
    reason = skip_reason(pair, "conda")
    if reason:
        yield NotCompared(reason)
        return
    b, a = pair.before.conda, pair.after.conda
    if b.exe and b.error is None and a.exe and a.error is not None:
        yield Finding(
            "ED711",
            "error",
            f"{a.flavor or 'conda'} fails now (it worked in the baseline)",
            evidence=(a.error.message,),
            fix=(f"{a.exe} info",),
            area="conda",
        )
        return
    changes = []
    if b.exe and not a.exe:
        changes.append(
            f"{b.flavor or 'conda'} at {b.exe} is not found now"
            + (f" ({a.error.message})" if a.error is not None else "")
        )
    elif a.exe and not b.exe:
        changes.append(f"{a.flavor or 'conda'} found now at {a.exe}")
    if b.version and a.version and b.version != a.version:
        changes.append(f"{a.flavor or 'conda'} {b.version} -> {a.version}")
    if b.virtual_cuda != a.virtual_cuda and (b.virtual_cuda or a.virtual_cuda):
        changes.append(
            f"__cuda virtual package {b.virtual_cuda or 'none'} -> {a.virtual_cuda or 'none'} (it follows the driver)"
        )
    if b.active_prefix != a.active_prefix and (b.active_prefix or a.active_prefix):
        changes.append(f"active environment {b.active_prefix or 'none'} -> {a.active_prefix or 'none'}")
    pb = {p.name: p.version for p in b.packages}
    pa = {p.name: p.version for p in a.packages}
    for name in sorted(set(pb) | set(pa)):
        if pb.get(name) != pa.get(name):
            changes.append(f"{name} {pb.get(name) or 'absent'} -> {pa.get(name) or 'absent'}")
    if changes:
        yield Finding("ED724", "info", "conda changed: " + changes[0], evidence=tuple(changes[1:]), area="conda")
    elif a.exe:
        yield Same(
            f"{a.flavor or 'conda'} {a.version or ''}".rstrip()
            + (f" (__cuda {a.virtual_cuda})" if a.virtual_cuda else "")
        )

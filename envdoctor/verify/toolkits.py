"""Verify checks of the CUDA toolkits: ED710 nvcc fails now (or extension builds would), ED723 the
toolkits changed. Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.findings import Finding
from envdoctor.parse import version_key
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, skip_reason


def toolkits(pair: Pair) -> Iterator[Outcome]:
    """ED710 nvcc fails now / extension builds would fail; ED723 toolkits changed."""
    reason = skip_reason(pair, "toolkits")
    if reason:
        yield NotCompared(reason)
        return
    b, a = pair.before.toolkits, pair.after.toolkits
    then = {t.root: t for t in b.toolkits}
    now = {t.root: t for t in a.toolkits}
    broken, changes = [], []
    for root, t in then.items():
        u = now.get(root)
        if u is None:
            changes.append(f"CUDA toolkit {root} ({t.release or t.version or '?'}) removed")
        elif t.error is None and u.error is not None:
            broken.append(f"{u.nvcc or root + '/bin/nvcc'}: {u.error.message}")
        elif t.version != u.version:
            changes.append(f"CUDA toolkit {root}: {t.version} -> {u.version}")
    for root, u in now.items():
        if root not in then:
            changes.append(f"CUDA toolkit {root} ({u.release or u.version or '?'}) added")
    if b.nvcc_on_path != a.nvcc_on_path:
        changes.append(f"first nvcc on PATH: {b.nvcc_on_path or 'none'} -> {a.nvcc_on_path or 'none'}")
    if b.extension_status == "ok" and a.extension_status not in (None, "ok"):
        broken.append(
            f"CUDA extension builds would use {a.extension_root or 'nothing'} ({a.extension_rule}): "
            f"{a.extension_status} (was {b.extension_root}, ok)"
        )
    if broken:
        yield Finding(
            "ED710",
            "error",
            "nvcc / the CUDA toolkit no longer works as in the baseline",
            evidence=tuple(broken),
            fix=(
                "nvcc --version",
                "ls -l /usr/local/cuda /usr/local/cuda-*/bin/nvcc",
                "envdoctor check   # the full diagnosis",
            ),
            area="toolkits",
        )
    if changes:
        yield Finding(
            "ED723", "info", "CUDA toolkits changed: " + changes[0], evidence=tuple(changes[1:]), area="toolkits"
        )
    if not broken and not changes:
        releases = sorted({t.release or t.version or "?" for t in a.toolkits}, key=version_key)
        yield Same("CUDA toolkits: " + (", ".join(releases) if releases else "none"))

"""Verify check of the operating system: ED726 the OS, kernel or glibc changed. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.findings import Finding
from envdoctor.verify.pair import Outcome, Pair, Same


def system(pair: Pair) -> Iterator[Outcome]:
    """ED726: OS, kernel, glibc."""
    b, a = pair.before.system, pair.after.system
    changes = []
    for label, x, y in (("OS", b.os_name, a.os_name), ("kernel", b.kernel, a.kernel), ("glibc", b.glibc, a.glibc)):
        if x and y and x != y:
            changes.append(f"{label} {x} -> {y}")
    if changes:
        yield Finding("ED726", "info", "System changed: " + changes[0], evidence=tuple(changes[1:]), area="system")
    elif a.os_name or a.kernel:
        yield Same(f"{a.os_name or a.os_id or 'OS'}, kernel {a.kernel or '?'}")

"""Is the baseline this machine's? Pure: two Facts in, reasons and notes out."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.verify.pair import real


def machine_differences(
    before: Facts, after: Facts, before_host: str | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reasons the baseline looks like another machine, notes), both one-line strings.

    Another machine: none of the baseline's GPU UUIDs is here (both lists known), or the host
    name differs and no GPU UUID says it is the same hardware. A new container on the same host
    has a new host name but the same GPUs: that is the same machine, with a note::

        machine_differences(baseline, now, "gpu-01")
        (("taken on host 'gpu-01', this is 'gpu-02'",), ())
    """
    host_then = before_host or before.system.hostname
    host_now = after.system.hostname
    host_differs = real(host_then) and real(host_now) and host_then != host_now
    then = {(g.uuid or "").lower() for g in before.driver.gpus if real(g.uuid)}
    now = {(g.uuid or "").lower() for g in after.driver.gpus if real(g.uuid)}
    if then and now:
        if then & now:
            note = (
                (
                    f"host name differs ('{host_then}' then, '{host_now}' now) but the GPUs are the same "
                    "(UUIDs match): compared as the same machine",
                )
                if host_differs
                else ()
            )
            return (), note
        return (
            f"none of the baseline's {len(then)} GPU UUID(s) is here ({sorted(then)[0]}... then, "
            f"{sorted(now)[0]}... now)",
        ) + ((f"taken on host '{host_then}', this is '{host_now}'",) if host_differs else ()), ()
    if host_differs:
        return (f"taken on host '{host_then}', this is '{host_now}'",), ()
    return (), ()

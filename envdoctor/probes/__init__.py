"""Read the machine: every probe concurrently, each bounded by its own timeout, none raising.

    facts = collect(Context())          # the real machine
    facts.driver.driver_version         # '580.159.04' on the H200
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, Tuple

from envdoctor import __version__
from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.probes.context import Context

log = logging.getLogger(__name__)

#: area -> module under envdoctor.probes with ``probe(ctx)``. The "python" module answers both
#: the "python" and "torch" areas (one child process of the target interpreter).
#: Ordered by how long each waits on something outside envdoctor: the target interpreter's child
#: first, so it starts before the probes that only read files take the interpreter's time.
AREAS: Dict[str, str] = {
    "python": "python",
    "driver": "driver",
    "toolkits": "toolkit",
    "conda": "conda",
    "docker": "docker",
    "links": "links",
    "system": "system",
    "pci": "pci",
}

#: Areas a user may leave out with ``--skip``.
SKIPPABLE = ("torch", "conda", "docker", "toolkits")


def _run_probe(area: str, ctx: Context, skip: Iterable[str]) -> Tuple[str, Any, float]:
    started = time.monotonic()
    module = importlib.import_module(f"envdoctor.probes.{AREAS[area]}")
    probe: Callable[..., Any] = module.probe
    if area == "python":
        result = probe(ctx, with_torch="torch" not in skip)
    else:
        result = probe(ctx)
    return area, result, time.monotonic() - started


def _failed(area: str, exc: BaseException) -> Any:
    """The empty facts of ``area`` carrying an error that says envdoctor itself failed."""
    err = ProbeError("crashed", f"envdoctor's {area} probe failed ({type(exc).__name__}: {exc}); "
                     "please report it, with the output of --debug")
    default = getattr(Facts(), area)
    return dataclasses.replace(default, error=err)


def _result(future: Future[Tuple[str, Any, float]], ctx: Context) -> Tuple[str, Any, float]:
    """The probe's answer; on Ctrl-C the commands of every probe are stopped before it goes on
    (a probe waiting on a hung conda would otherwise hold the exit until its timeout)."""
    try:
        return future.result()
    except KeyboardInterrupt:
        ctx.stop.set()
        raise


def collect(ctx: Context, skip: Iterable[str] = (), debug: bool = False) -> Facts:
    """Run every probe not in ``skip`` concurrently and gather their facts."""
    skip = frozenset(skip)
    areas = [a for a in AREAS if a not in skip]
    values: Dict[str, Any] = {}
    seconds: Dict[str, float] = {}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(areas) or 1) as pool:
        futures = {area: pool.submit(_run_probe, area, ctx, skip) for area in areas}
        for area, future in futures.items():
            try:
                _, result, took = _result(future, ctx)
            except Exception as exc:  # a bug in envdoctor: report it, keep the rest
                if debug:
                    log.exception("probe %s failed", area)
                result, took = _failed(area, exc), time.monotonic() - started
                if area == "python":
                    values["torch"] = _failed("torch", exc)
            if area == "python" and isinstance(result, tuple):
                values["python"], values["torch"] = result
            else:
                values[area] = result
            seconds[area] = round(took, 3)
    seconds["total"] = round(time.monotonic() - started, 3)
    return Facts(
        collected_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        envdoctor_version=__version__,
        probe_seconds=seconds,
        skipped=tuple(sorted(skip)),
        **values,
    )


def internal_failures(facts: Facts) -> Tuple[str, ...]:
    """Areas whose probe crashed inside envdoctor (exit code 3)."""
    out = []
    for f in dataclasses.fields(facts):
        value = getattr(facts, f.name)
        err = getattr(value, "error", None)
        if isinstance(err, ProbeError) and err.kind == "crashed" and err.message.startswith("envdoctor's"):
            out.append(f.name)
    return tuple(out)

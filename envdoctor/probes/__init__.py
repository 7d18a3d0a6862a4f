"""Read the machine: every probe concurrently, each bounded by its own timeout, none raising.

    facts = collect(Context())          # the real machine
    facts.driver.driver_version         # '580.159.04' on the H200

``start`` starts them and returns at once (the target interpreter's child is a running process by
then); ``check`` calls it before its own imports, so the child works while envdoctor loads.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Tuple

from envdoctor import __version__
from envdoctor.facts.base import ProbeError
from envdoctor.probes.context import Context

if TYPE_CHECKING:
    from envdoctor.facts import Facts

log = logging.getLogger(__name__)

#: area -> module with ``probe(ctx)``: a bare name is a module of envdoctor.probes, a dotted one a
#: plugin's probe (``envdoctor.links.probe``). The "python" module answers both
#: the "python" and "torch" areas (one child process of the target interpreter).
#: Ordered by how long each waits on something outside envdoctor: the target interpreter's child
#: first, so it starts before the probes that only read files take the interpreter's time.
AREAS: Dict[str, str] = {
    "python": "python",
    "driver": "driver",
    "toolkits": "toolkit",
    "conda": "conda",
    "docker": "docker",
    "links": "envdoctor.links.probe",
    "gpu_state": "gpu_state",
    "fabric": "fabric",
    "system": "system",
    "pci": "pci",
}

#: Areas a user may leave out with ``--skip``.
SKIPPABLE = ("torch", "conda", "docker", "toolkits")


def _run_probe(area: str, ctx: Context) -> Tuple[str, Any, float]:
    started = time.monotonic()
    name = AREAS[area]
    module = importlib.import_module(name if "." in name else f"envdoctor.probes.{name}")
    probe: Callable[..., Any] = module.probe
    return area, probe(ctx), time.monotonic() - started


def _failed(area: str, exc: BaseException) -> Any:
    """The empty facts of ``area`` carrying an error that says envdoctor itself failed."""
    from envdoctor.facts import Facts

    err = ProbeError(
        "crashed",
        f"envdoctor's {area} probe failed ({type(exc).__name__}: {exc}); please report it, with the output of --debug",
    )
    default = getattr(Facts(), area)
    return dataclasses.replace(default, error=err)


def _start_python(ctx: Context, skip: Iterable[str]) -> Callable[[], Any]:
    """The python probe started (its child running); the function returned waits for its facts."""
    try:
        module = importlib.import_module("envdoctor.probes.python")
        wait: Callable[[], Any] = module.start(ctx, with_torch="torch" not in skip)
        return wait
    except Exception as exc:  # a bug in envdoctor: reported like a probe that raised
        failure = exc

        def failed() -> Any:
            raise failure

        return failed


#: The areas whose probes read NVML: they share one session (``envdoctor.nvml.Shared``).
NVML_AREAS = frozenset({"driver", "gpu_state", "links"})


class Probing:
    """The probes of one inspection, started; :meth:`facts` waits for them (once)."""

    def __init__(self, ctx: Context, skip: Iterable[str] = (), debug: bool = False) -> None:
        self.skip, self.debug = frozenset(skip), debug
        self.started = time.monotonic()
        areas = [a for a in AREAS if a not in self.skip]
        # the child of the target interpreter first, in this thread: its process is running
        # before the other probes' threads (and the caller's imports) take the interpreter lock
        # (it reads no NVML: the shared session is made after it)
        self._python = _start_python(ctx, self.skip) if "python" in areas else None
        self._nvml = None
        if (
            ctx.nvml_shared is None
            and len(NVML_AREAS.intersection(areas)) > 1
            and not (ctx.nvml is None and str(ctx.root) != "/")
        ):
            from envdoctor.nvml import Shared

            # one NVML session for the driver, GPU state and links probes, closed in facts()
            self._nvml = Shared(ctx.nvml)
            ctx = dataclasses.replace(ctx, nvml_shared=self._nvml)
        self.ctx = ctx
        others = [a for a in areas if a != "python"]
        self._pool = ThreadPoolExecutor(max_workers=len(areas) or 1)
        self._futures: Dict[str, Future[Tuple[str, Any, float]]] = {}
        if self._python is not None:  # waited for in a thread too: its seconds are its own
            self._futures["python"] = self._pool.submit(self._python_result)
        self._futures.update({area: self._pool.submit(_run_probe, area, ctx) for area in others})

    def _python_result(self) -> Tuple[str, Any, float]:
        assert self._python is not None
        return "python", self._python(), time.monotonic() - self.started

    def facts(self) -> Facts:
        """Every probe's facts, gathered."""
        from envdoctor.facts import Facts

        values: Dict[str, Any] = {}
        seconds: Dict[str, float] = {}
        try:
            for area, future in self._futures.items():
                try:
                    _, result, took = _result(future.result, self.ctx)
                except Exception as exc:  # a bug in envdoctor: report it, keep the rest
                    if self.debug:
                        log.exception("probe %s failed", area)
                    result, took = _failed(area, exc), time.monotonic() - self.started
                    if area == "python":
                        values["torch"] = _failed("torch", exc)
                if area == "python" and isinstance(result, tuple):
                    values["python"], values["torch"] = result
                else:
                    values[area] = result
                seconds[area] = round(took, 3)
        finally:
            self._pool.shutdown(wait=True)
            if self._nvml is not None:
                self._nvml.close()
        # the span of the probes (facts() may be called later: check imports its checks meanwhile)
        seconds["total"] = max(seconds.values(), default=round(time.monotonic() - self.started, 3))
        return Facts(
            collected_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            envdoctor_version=__version__,
            probe_seconds=seconds,
            skipped=tuple(sorted(self.skip)),
            **values,
        )


def _result(wait: Callable[[], Tuple[str, Any, float]], ctx: Context) -> Tuple[str, Any, float]:
    """The probe's answer; on Ctrl-C the commands of every probe are stopped before it goes on
    (a probe waiting on a hung conda would otherwise hold the exit until its timeout)."""
    try:
        return wait()
    except KeyboardInterrupt:
        ctx.stop.set()
        raise


def start(ctx: Context, skip: Iterable[str] = (), debug: bool = False) -> Probing:
    """Start every probe not in ``skip`` (the target interpreter's child before the rest)."""
    return Probing(ctx, skip, debug)


def collect(ctx: Context, skip: Iterable[str] = (), debug: bool = False) -> Facts:
    """Run every probe not in ``skip`` concurrently and gather their facts."""
    return start(ctx, skip, debug).facts()


def internal_failures(facts: Facts) -> Tuple[str, ...]:
    """Areas whose probe crashed inside envdoctor (exit code 3)."""
    out = []
    for f in dataclasses.fields(facts):
        value = getattr(facts, f.name)
        err = getattr(value, "error", None)
        if isinstance(err, ProbeError) and err.kind == "crashed" and err.message.startswith("envdoctor's"):
            out.append(f.name)
    return tuple(out)

"""Run ``envdoctor burn``: one child per GPU in the target interpreter, NVML watched meanwhile.

>>> r = run_burn("/opt/torch/.venv/bin/python3", seconds=60)         # doctest: +SKIP
>>> [(g.index, g.verdict, g.phases[0].sustained_tflops) for g in r.gpus]   # doctest: +SKIP
[(0, 'OK', 659.4)]

envdoctor's own process reads NVML (:mod:`envdoctor.nvml`): identity, thresholds and counters
of every GPU at the start and at the end, a sample of every GPU every second, and Xid events in
a thread waiting on NVML's event set. The children (``envdoctor/burn/target/burn.py``) go through the
one child protocol (:func:`envdoctor.child.run_children`), so a GPU whose child hangs or dies
is FAULTY with the reason and the others are still reported; Ctrl-C asks every child to stop
(SIGTERM) and they answer with what they did.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor import codes
from envdoctor.burn import analysis, collect, rules
from envdoctor.burn.facts import CPU_N, GPU_N, BurnGpu, BurnResult, Phase, XidSeen
from envdoctor.child import ChildRun, Job, draw_plot, run_children
from envdoctor.facts.base import ErrorKind, ProbeError
from envdoctor.findings import Finding
from envdoctor.nvml import COUNTERS, SAMPLE, NvmlGpu, Reading, Sampler, Session, XidEvent, XidWatch, match_device
from envdoctor.parse.jsontext import opt_str
from envdoctor.parse.visible import visible_count
from envdoctor.table.health import Health, load_health

SCRIPT = "burn/target/burn.py"
PLOT_SCRIPT = "burn/target/plot.py"
#: seconds a child may take beyond its load and memory test (torch import, CUDA start, a slow disk)
STARTUP_ALLOWANCE = 120.0
#: a child silent this long is hung (its load prints an interval about every INTERVAL seconds)
IDLE_TIMEOUT = 60.0
INTERVAL = 0.5
#: identity and limits read once per GPU
IDENTITY = ("name", "uuid", "pci", "power_limit_w", "max_sm_clock_mhz", "max_mem_clock_mhz", "temperature_thresholds")
#: the counters read at the start and the end
END_FIELDS = COUNTERS + ("nvlinks",)


def memtest_seconds(seconds: float) -> float:
    """The memory test's time limit: 10% of the load, at least 2 s, at most 10 s (6 s for 60 s)."""
    return round(min(10.0, max(2.0, 0.1 * seconds)), 1)


def sample_interval(seconds: float) -> float:
    """1 s up to two hours of load; longer runs keep about 7200 samples per GPU."""
    return 1.0 if seconds <= 7200 else round(seconds / 7200, 1)


def fp64_capabilities() -> Tuple[str, ...]:
    """Compute capabilities whose Tensor Cores take fp64 (data/architectures.toml): the GPUs where
    burn loads fp64 by default. Elsewhere fp64 runs at 1/32-1/64 of fp32 and would only be slow."""
    try:
        from envdoctor.table import load_table

        return tuple(a.cc for a in load_table().architectures if "fp64" in a.tensor_cores)
    except Exception:  # a table being rebuilt or broken: no fp64 by default, --dtype fp64 still works
        return ()


@dataclass
class Watch:
    """NVML in envdoctor's own process during a burn. ``nvml`` is the pynvml module (a fake in tests)."""

    interval: float = 1.0
    nvml: Any = None
    health: Optional[Health] = None
    session: Optional[Session] = None
    identity: List[Reading] = field(default_factory=list)
    start_counters: List[Reading] = field(default_factory=list)
    end_counters: List[Reading] = field(default_factory=list)
    xids: List[XidEvent] = field(default_factory=list)
    status: str = ""
    xid_status: str = ""
    _sampler: Optional[Sampler] = None
    _xid: Optional[XidWatch] = None
    _xid_thread: Optional[threading.Thread] = None
    _xid_stop: threading.Event = field(default_factory=threading.Event)

    @property
    def count(self) -> int:
        return self.session.count if self.session is not None else 0

    def start(self) -> None:
        session = Session(self.nvml)
        if session.error is not None:
            self.status = f"no NVML samples: {session.error.message}"
            self.xid_status = "no Xid watch: NVML is not available"
            return
        if session.count == 0:
            self.status = "no NVML samples: NVML sees no GPU"
            session.close()
            return
        self.session = session
        self.identity = list(session.read_all(IDENTITY))
        self.start_counters = list(session.read_all(END_FIELDS))
        self._sampler = Sampler(session, SAMPLE, self.interval)
        self._sampler.start()
        self._xid = session.watch_xid()
        if self._xid.error:
            self.xid_status = f"no Xid watch: {self._xid.error}"
        else:
            self.xid_status = f"Xid events of {session.count} GPU(s) watched"
            self._xid_thread = threading.Thread(target=self._wait_xids, name="envdoctor-xid", daemon=True)
            self._xid_thread.start()

    def _wait_xids(self) -> None:
        assert self._xid is not None
        while not self._xid_stop.is_set():
            began = time.monotonic()
            got = self._xid.wait(1000)
            self.xids.extend(got)
            if self._xid.error:
                self.xid_status = f"Xid watch ended: {self._xid.error}"
                return
            if not got:  # a binding that answers at once: wait out the second here
                self._xid_stop.wait(max(0.0, 1.0 - (time.monotonic() - began)))

    def stop(self) -> None:
        if self.session is None:
            return
        if self._sampler is not None:
            self._sampler.stop()
        if self._xid is not None:
            self._xid_stop.set()
            if self._xid_thread is not None:
                self._xid_thread.join(timeout=3.0)
            if not self._xid.error:
                for _ in range(100):  # what arrived while the thread was ending
                    got = self._xid.wait(1)
                    if not got:
                        break
                    self.xids.extend(got)
            self._xid.close()
        self.end_counters = list(self.session.read_all(END_FIELDS))
        readings = self._sampler.readings if self._sampler is not None else []
        power = self._sampler.power_kind if self._sampler is not None else ""
        self.status = f"NVML: {len(readings)} samples of {self.count} GPU(s) every {self.interval:g} s ({power})"
        self.session.close()

    def readings(self, nvml_index: int) -> List[Reading]:
        return [r for r in (self._sampler.readings if self._sampler else []) if r.index == nvml_index]


def match_nvml(gpu: BurnGpu, identity: Sequence[Reading], env: Mapping[str, str]) -> Optional[int]:
    """Which NVML GPU a child's torch device is (:func:`envdoctor.nvml.match_device`: UUID, PCI bus
    id, then the index as ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` map it)."""
    gpus = [
        NvmlGpu(r.index, r.values.get("uuid"), (r.values.get("pci") or {}).get("bus_id"), r.values.get("name"))
        for r in identity
    ]
    return match_device(gpu.uuid, gpu.pci_bus_id, gpu.index, gpus, env)


def attach(gpu: BurnGpu, watch: Watch, nvml_index: Optional[int], health: Health) -> BurnGpu:
    """The GPU with its NVML identity, samples, counters and Xids, its phases' figures and summary."""
    phases = tuple(_expected(analysis.phase_figures(p), gpu.name, health) for p in gpu.phases)
    gpu = replace(gpu, phases=phases)
    if nvml_index is None or watch.session is None:
        return gpu
    ident = watch.identity[nvml_index].values if nvml_index < len(watch.identity) else {}
    limits = ident.get("temperature_thresholds") or {}
    samples = tuple(
        analysis.sample(r.values, r.time, health.reason_names, health.fault_reasons) for r in watch.readings(nvml_index)
    )
    start = _counters(watch.start_counters, nvml_index)
    end = _counters(watch.end_counters, nvml_index)
    xids = tuple(_xid(x, health) for x in watch.xids if x.gpu == nvml_index)
    gpu = replace(
        gpu,
        nvml_index=nvml_index,
        name=gpu.name or ident.get("name"),
        power_limit_w=ident.get("power_limit_w"),
        max_sm_clock_mhz=ident.get("max_sm_clock_mhz"),
        max_mem_clock_mhz=ident.get("max_mem_clock_mhz"),
        slowdown_c=limits.get("slowdown"),
        shutdown_c=limits.get("shutdown"),
        gpu_max_c=limits.get("gpu_max"),
        mem_max_c=limits.get("mem_max"),
        samples=samples,
        counters_start=start,
        counters_end=end,
        counter_deltas=analysis.delta(start, end),
        xids=xids,
    )
    return replace(gpu, summary=analysis.summarize(gpu))


def _counters(readings: Sequence[Reading], index: int) -> Any:
    if index >= len(readings):
        return None
    r = readings[index]
    return analysis.counters(r.values, r.errors)


def _expected(p: Phase, name: Optional[str], health: Health) -> Phase:
    e = health.expected(name, p.dtype, p.n) if name else None
    if e is None:
        return p
    return replace(
        p,
        expected_tflops=e.sustained_tflops,
        expected_power_w=e.power_limit_w,
        expected_source=e.source,
        expected_unconfirmed=e.unconfirmed,
    )


def _xid(x: XidEvent, health: Health) -> XidSeen:
    row = health.xid(x.xid)
    if row is None:
        return XidSeen(x.time, x.xid)
    return XidSeen(x.time, x.xid, row.severity, row.meaning, row.action, row.mnemonic)


_FAILURES: Dict[str, Tuple[ErrorKind, str]] = {
    "no_torch": ("not_found", "torch is not installed in {python}"),
    "import_failed": ("crashed", "import torch fails in {python}: {message}"),
    "python_too_old": ("unavailable", "{python}: {message}; envdoctor burn needs Python 3.8 or later"),
    "bad_device": ("unavailable", "{message}"),
    "no_cuda": ("unavailable", "{message}, but NVML sees {count} GPU(s): a CPU burn would say nothing about them"),
    "no_gpu": ("unavailable", "no GPU to load: {message} ({python}) and {nvml}"),
}


def run_burn(
    python: str,
    seconds: float = 60.0,
    device: str = "all",
    dtypes: Sequence[str] = (),
    *,
    env: Optional[Mapping[str, str]] = None,
    nvml: Any = None,
    health: Optional[Health] = None,
    fp64_ccs: Optional[Sequence[str]] = None,
    size: Optional[int] = None,
    memtest_s: Optional[float] = None,
    interval: float = INTERVAL,
    idle_timeout: float = IDLE_TIMEOUT,
    sample_every: Optional[float] = None,
    on_event: Optional[Callable[[int, Dict[str, Any]], None]] = None,
    stop: Optional[threading.Event] = None,
    chosen_by: Optional[str] = None,
    gpu_required: bool = False,
) -> BurnResult:
    """Burn ``device`` ("all" or a torch index) for ``seconds`` per GPU; never raises for a bad target.

    ``on_event(job, event)`` sees every protocol event of job ``job`` (progress). ``stop``, when
    set, ends the load as Ctrl-C does. ``gpu_required``: a target whose torch sees no GPU is a run
    that could not start (error command "no_gpu"), not a load on the CPU (``burn`` without ``--cpu``).
    """
    environ = dict(os.environ if env is None else env)
    health = health or load_health()
    memtest_s = memtest_seconds(seconds) if memtest_s is None else memtest_s
    every = sample_every or sample_interval(seconds)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = BurnResult(
        python=python,
        chosen_by=chosen_by,
        seconds=float(seconds),
        device=str(device),
        dtypes=tuple(dtypes),
        memtest_s=memtest_s,
        created_at=created,
        sample_interval_s=every,
    )
    began = time.monotonic()
    watch = Watch(every, nvml, health)
    watch.start()
    visible = visible_count(environ.get("CUDA_VISIBLE_DEVICES"), watch.count)
    if watch.count and not visible:
        watch.stop()
        return replace(
            base,
            error=ProbeError(
                "unavailable",
                f"CUDA_VISIBLE_DEVICES="
                f"{environ.get('CUDA_VISIBLE_DEVICES')!r} hides all {watch.count} "
                "GPU(s) NVML sees: unset it or name the GPUs to burn",
                "--device",
            ),
        )
    if device == "all":
        targets: List[Any] = list(range(visible)) if visible else ["auto"]
    else:
        if watch.count and not 0 <= int(device) < visible:
            watch.stop()
            seen = f"{visible} GPU(s)" + (" (CUDA_VISIBLE_DEVICES is set)" if visible != watch.count else "")
            return replace(
                base, error=ProbeError("unavailable", f"GPU {device} does not exist: there are {seen}", "--device")
            )
        targets = [int(device)]
    config: Dict[str, Any] = {
        "seconds": float(seconds),
        "dtypes": list(dtypes) or None,
        "interval": interval,
        "fp64_ccs": list(fp64_capabilities() if fp64_ccs is None else fp64_ccs),
        "n": size or GPU_N,
        "cpu_n": size or CPU_N,
        "memtest_seconds": memtest_s,
        "memtest_fraction": 0.9,
        "require_cuda": watch.count > 0,
        "require_gpu": gpu_required,
    }
    timeout = float(seconds) + memtest_s + STARTUP_ALLOWANCE
    jobs = [
        Job(SCRIPT, dict(config, device=t), python, timeout, what="the burn", env=environ, idle_timeout=idle_timeout)
        for t in targets
    ]
    stop = stop or threading.Event()
    try:
        runs, interrupted = run_children(jobs, on_event=on_event, stop=stop)
    finally:
        watch.stop()
    wall = time.monotonic() - began
    result = replace(
        base,
        wall_s=round(wall, 3),
        interrupted=interrupted or stop.is_set(),
        sampling=watch.status or None,
        xid_watch=watch.xid_status or None,
    )
    failure = collect.run_failure(runs)
    if failure is not None:
        kind, template = _FAILURES[str(failure.get("kind"))]
        nvml = (
            "NVML is not available: " + watch.status.replace("no NVML samples: ", "", 1)
            if watch.status and not watch.status.endswith("NVML sees no GPU")
            else "NVML sees none"
        )
        message = template.format(
            python=python, message=opt_str(failure, "message") or "", count=watch.count, nvml=nvml
        )
        command = {"bad_device": "--device", "no_gpu": "no_gpu"}.get(str(failure.get("kind")))
        return replace(result, error=ProbeError(kind, message, command))
    return rules.judge(assemble(result, runs, watch, health, environ), health)


def assemble(
    result: BurnResult, runs: Sequence[ChildRun], watch: Watch, health: Health, env: Mapping[str, str]
) -> BurnResult:
    """The result before the verdict: each child's GPU with its NVML data, versions, run findings."""
    gpus = []
    for i, run in enumerate(runs):
        gpu = collect.from_child(run, i)
        index = match_nvml(gpu, watch.identity, env) if gpu.kind == "cuda" else None
        gpus.append(attach(gpu, watch, index, health))
    python_event = next((e for r in runs for e in r.events if e.get("kind") == "python"), {})
    burned = {g.nvml_index for g in gpus if g.nvml_index is not None}
    others: List[Finding] = []
    for x in watch.xids:
        if x.gpu not in burned:
            seen = _xid(x, health)
            others.append(
                Finding(
                    "ED829",
                    "warning",
                    f"Xid {x.xid} on NVML GPU {x.gpu}, which was not burned",
                    evidence=(f"Xid {x.xid}: {seen.meaning or 'not in envdoctor table'}",),
                    fix=(seen.action or "sudo dmesg | grep -i xid",),
                    reference=rules.XID_CATALOG,
                    area="burn",
                    explanation=codes.meaning("ED829"),
                )
            )
    notes: List[str] = []
    for g in gpus:
        notes.extend(n for n in g.notes if n not in notes)
    return replace(
        result,
        gpus=tuple(gpus),
        cpu_run=bool(gpus) and all(g.kind == "cpu" for g in gpus),
        python_version=opt_str(python_event, "python_version", max_chars=64),
        torch_version=opt_str(python_event, "torch_version", max_chars=128),
        torch_cuda=opt_str(python_event, "torch_cuda", max_chars=32),
        findings=tuple(others),
        notes=tuple(notes),
    )


# --- the PNG ---------------------------------------------------------------------------------


def plot_spec(result: BurnResult, path: str) -> Dict[str, Any]:
    """What burn/target/plot.py draws: per GPU, time series of rate, temperature, power and clock."""
    t0 = min((s.t for g in result.gpus for s in g.samples), default=None)
    if t0 is None:
        t0 = min((i.start for g in result.gpus for p in g.phases for i in p.intervals), default=0.0)
    gpus = []
    for g in result.gpus:
        rates = {
            p.dtype: [[round(i.end - t0, 3), round(i.tflops, 2)] for i in p.intervals if i.tflops] for p in g.phases
        }
        gpus.append(
            {
                "label": ("CPU" if g.kind == "cpu" else f"GPU {g.index}") + (f" {g.name}" if g.name else ""),
                "rates": rates,
                "temperature": [
                    [round(s.t - t0, 3), s.temperature_c] for s in g.samples if s.temperature_c is not None
                ],
                "memory_temperature": [
                    [round(s.t - t0, 3), s.memory_temperature_c]
                    for s in g.samples
                    if s.memory_temperature_c is not None
                ],
                "power": [[round(s.t - t0, 3), s.power_w] for s in g.samples if s.power_w is not None],
                "sm_clock": [[round(s.t - t0, 3), s.sm_clock_mhz] for s in g.samples if s.sm_clock_mhz is not None],
                "throttled": [round(s.t - t0, 3) for s in g.samples if s.fault],
                "power_limit_w": g.power_limit_w,
                "slowdown_c": g.slowdown_c,
                "verdict": g.verdict,
            }
        )
    title = "envdoctor burn" + (f", torch {result.torch_version}" if result.torch_version else "")
    return {"path": str(path), "title": title, "gpus": gpus}


def write_plot(
    result: BurnResult, path: str, python: str, env: Optional[Mapping[str, str]] = None, timeout: float = 60.0
) -> Tuple[bool, str, Optional[str]]:
    """Draw ``result`` to ``path`` with the target's matplotlib: (written, a line saying so, the
    failure kind: "no_matplotlib" when the caller should show the terminal chart instead)."""
    spec = plot_spec(result, path)
    if not any(g["rates"] or g["temperature"] for g in spec["gpus"]):
        return False, "no plot written: nothing was measured", None
    return draw_plot(PLOT_SCRIPT, spec, python, env=env, timeout=timeout)

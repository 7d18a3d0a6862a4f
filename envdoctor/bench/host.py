"""Run the benchmark child in the target interpreter, sample NVML meanwhile, build a BenchResult.

>>> r = run_bench("/opt/torch/.venv/bin/python3")          # doctest: +SKIP
>>> r.points[-1].dtype, round(r.points[-1].tflops), r.verdicts[0].line
('bf16', 659, 'Tensor Cores confirmed: fp16 runs 12.4x fp32')
>>> r = run_bench("/opt/torch/.venv/bin/python3", suites=("matmul", "memory"))   # doctest: +SKIP

The child (``envdoctor/bench/target/bench.py``, with the suites' parts it names) goes through the one
child protocol (:mod:`envdoctor.child`): one child runs every suite asked for, so torch is
imported once. It emits one ``point`` event per point (with its ``suite``), so the host shows
progress and keeps the finished points of a child that later crashes or hangs. NVML is read
through :mod:`envdoctor.nvml` in envdoctor's own process while the child runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.bench import analysis
from envdoctor.bench.facts import (
    DEFAULT_BUDGET,
    DEFAULT_SIZES,
    DTYPES,
    MEMORY_SIZES,
    SUITE_BUDGET,
    BenchDevice,
    BenchPoint,
    BenchResult,
    FlopCheck,
    LayerPoint,
    MemoryPoint,
    NvmlSample,
)
from envdoctor.bench.memory import elements_label
from envdoctor.bench.rules import bench_findings
from envdoctor.child import ChildRun, draw_plot, find_python, run_child
from envdoctor.facts.base import ErrorKind, ProbeError
from envdoctor.facts.serde import DataError, from_data, to_data
from envdoctor.nvml import NvmlGpu, Reading, Session, match_device
from envdoctor.nvml import Sampler as NvmlSampler
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str

SCRIPT = "bench/target/bench.py"
CHILD_SCHEMA = "envdoctor.bench.child/1"
#: Seconds allowed beyond the measurement budget: torch import, CUDA start, allocations.
STARTUP_ALLOWANCE = 120.0
#: More for the layers suite per device: building the layers, the FlopCounterMode checks.
LAYERS_ALLOWANCE = 60.0
SAMPLE_INTERVAL = 0.05
#: A short run for ``envdoctor check --bench``: one compute-bound size, about 1 s of measurement.
QUICK = {"dtypes": ("fp32", "fp16"), "sizes": (4096,), "budget": 1.0}
#: The point type of each suite's events ("reference": the layers suite's own short product).
POINT_TYPES: Dict[str, Any] = {
    "matmul": BenchPoint,
    "memory": MemoryPoint,
    "layers": LayerPoint,
    "reference": BenchPoint,
}
#: Where each suite's points go in the child's document and in BenchResult.
POINT_KEYS = {"matmul": "points", "memory": "memory_points", "layers": "layer_points", "reference": "reference_points"}


@dataclass(frozen=True)
class Progress:
    """What the progress callback receives: ``done`` of ``total`` points, the last one finished
    (a BenchPoint, MemoryPoint or LayerPoint; ``suite`` says which)."""

    done: int
    total: int
    point: Optional[Any] = None
    message: str = ""
    suite: str = "matmul"


def resolve_python(explicit: Optional[str], env: Optional[Mapping[str, str]] = None) -> Tuple[Optional[str], str]:
    """(path or None, chosen_by): ``--python`` else python3/python on PATH else envdoctor's own."""
    return find_python(explicit, env)


# --- NVML sampling ---------------------------------------------------------------------------

#: What a bench sample holds (``NvmlSample``).
SAMPLE_FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "reasons_mask")
#: Identity of each GPU, to match torch's devices with NVML's.
GPU_FIELDS = ("uuid", "pci", "name", "max_sm_clock_mhz", "max_mem_clock_mhz", "power_limit_w")


class Sampler:
    """NVML readings of every GPU every ``interval`` seconds while the child runs.

    ``nvml`` is the pynvml module (tests pass a fake). ``status`` says what was sampled, or why
    nothing was: no nvidia-ml-py, no driver, no GPU.
    """

    def __init__(self, interval: float = SAMPLE_INTERVAL, nvml: Any = None) -> None:
        self.interval = interval
        self.samples: List[NvmlSample] = []
        self.gpus: List[Dict[str, Any]] = []  # per NVML index: uuid, bus id, name, max clock, limit
        self.status = ""
        self._nvml = nvml
        self._session: Optional[Session] = None
        self._sampler: Optional[NvmlSampler] = None

    def start(self) -> bool:
        session = Session(self._nvml)
        if session.error is not None:
            self.status = (
                f"no NVML samples: {session.error.message}"
                if session.error.kind == "not_found"
                else f"no NVML samples: NVML did not start ({session.error.message})"
            )
            return False
        if session.count == 0:
            self.status = "no NVML samples: NVML sees no GPU"
            session.close()
            return False
        self._session = session
        for r in session.read_all(GPU_FIELDS):
            self.gpus.append(
                {
                    "uuid": r.values.get("uuid"),
                    "pci_bus_id": (r.values.get("pci") or {}).get("bus_id"),
                    "name": r.values.get("name"),
                    "max_sm_clock_mhz": r.values.get("max_sm_clock_mhz"),
                    "max_mem_clock_mhz": r.values.get("max_mem_clock_mhz"),
                    "power_limit_w": r.values.get("power_limit_w"),
                }
            )
        self._sampler = NvmlSampler(session, SAMPLE_FIELDS, self.interval)
        return self._sampler.start()

    def stop(self) -> None:
        if self._sampler is None or self._session is None:
            return
        self._sampler.stop()
        self.samples = [_sample(r) for r in self._sampler.readings]
        self.status = (
            f"NVML: {len(self.samples)} samples of {self._session.count} GPU(s) every "
            f"{self.interval * 1000:.0f} ms ({self._sampler.power_kind})"
        )
        self._session.close()


def _sample(r: Reading) -> NvmlSample:
    mask = r.values.get("reasons_mask")
    return NvmlSample(
        t=r.time,
        gpu=r.index,
        sm_clock_mhz=r.values.get("sm_clock_mhz"),
        power_w=r.values.get("power_w"),
        temperature_c=r.values.get("temperature_c"),
        reasons=analysis.decode_reasons(mask),
        reasons_mask=mask,
        mem_clock_mhz=r.values.get("mem_clock_mhz"),
    )


# --- datasheet -------------------------------------------------------------------------------


def lookup_model(name: Optional[str]) -> Any:
    """The table's GpuModel for a device name, or None (no table yet, not in it, table broken)."""
    if not name:
        return None
    try:
        from envdoctor.table import load_table

        return load_table().gpu(name)
    except Exception:
        return None


# --- assembling the result -------------------------------------------------------------------


def build_result(
    doc: Dict[str, Any],
    *,
    samples: Sequence[NvmlSample] = (),
    gpus: Sequence[Dict[str, Any]] = (),
    sampling: Optional[str] = None,
    lookup: Callable[[Optional[str]], Any] = lookup_model,
    env: Optional[Mapping[str, str]] = None,
    **fields: Any,
) -> BenchResult:
    """BenchResult from the child's document, the NVML samples and the datasheet, analysed.

    ``env`` is the child's environment (its ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` say
    which NVML GPU a torch device is where its UUID and bus id do not). Raises DataError when the
    document does not have the child's shape.
    """
    raw_devices = _items(doc.get("devices"))
    nvml_gpus = [NvmlGpu(i, g.get("uuid"), g.get("pci_bus_id"), g.get("name")) for i, g in enumerate(gpus)]
    devices = []
    for i, raw in enumerate(raw_devices):
        d = from_data(BenchDevice, raw, f"devices[{i}]")
        if d.kind == "cuda":
            nvml_index = match_device(d.uuid, d.pci_bus_id, d.index, nvml_gpus, {} if env is None else env)
            extra: Dict[str, Any] = {"nvml_index": nvml_index}
            if nvml_index is not None:
                g = gpus[nvml_index]
                extra.update(
                    max_sm_clock_mhz=g.get("max_sm_clock_mhz"),
                    power_limit_w=g.get("power_limit_w"),
                    max_mem_clock_mhz=g.get("max_mem_clock_mhz"),
                )
            model = lookup(d.name)
            extra.update(analysis.datasheet(model))
            d = replace(d, **extra)
        devices.append(d)
    points = tuple(from_data(BenchPoint, p, f"points[{i}]") for i, p in enumerate(_items(doc.get("points"))))
    suites = tuple(s for s in (opt_str(x, max_chars=32) for x in _items(doc.get("suites"))) if s) or ("matmul",)
    more: Dict[str, Any] = {}
    for suite in ("memory", "layers", "reference"):
        key = POINT_KEYS[suite]
        more[key] = tuple(from_data(POINT_TYPES[suite], p, f"{key}[{i}]") for i, p in enumerate(_items(doc.get(key))))
    more["flop_checks"] = tuple(
        from_data(FlopCheck, c, f"flop_checks[{i}]") for i, c in enumerate(_items(doc.get("flop_checks")))
    )
    suite_s = doc.get("suite_s")
    more["suite_s"] = (
        {str(k)[:32]: v for k, v in ((k, opt_float(v, low=0, high=1e7)) for k, v in suite_s.items()) if v is not None}
        if isinstance(suite_s, dict)
        else {}
    )
    notes = [n for n in (opt_str(x, max_chars=500) for x in _items(doc.get("notes"))) if n]
    if any(d.kind == "cpu" for d in devices):
        notes.append(
            "no GPU usable by torch: fp32 measured on the CPU"
            if "matmul" in suites
            else "no GPU usable by torch: the suites ran on the CPU"
        )
    elif any(p.dtype in ("fp32", "tf32") for p in points):
        notes.append(
            "fp32 measured with TF32 off, tf32 with TF32 on (torch.backends.cuda.matmul, read back during each point)"
        )
    error = doc.get("error")
    if error is not None and not isinstance(error, dict):
        error = {"kind": "internal", "message": opt_str(error) or "the child's error is not an object"}
    result = BenchResult(
        python_version=opt_str(doc, "python_version", max_chars=64),
        torch_version=opt_str(doc, "torch_version", max_chars=128),
        torch_cuda=opt_str(doc, "torch_cuda", max_chars=32),
        cuda_error=opt_str(doc, "cuda_error"),
        nvml_gpus=len(gpus) if gpus else (0 if sampling and "sees no GPU" in sampling else None),
        import_s=opt_float(doc, "import_s", low=0, high=1e7),
        init_s=opt_float(doc, "init_s", low=0, high=1e7),
        measure_s=opt_float(doc, "measure_s", low=0, high=1e7),
        devices=tuple(devices),
        points=points,
        samples=tuple(samples),
        sampling=sampling,
        notes=tuple(notes),
        error=_child_error(error) if error else None,
        suites=suites,
        **more,
        **fields,
    )
    return analysis.analyze(result)


def _items(value: Any) -> List[Any]:
    """A list field of the child's document; anything else (a string, a number) is none."""
    return value if isinstance(value, list) else []


_CHILD_ERRORS: Dict[str, Tuple[ErrorKind, str]] = {
    "no_torch": ("not_found", "torch is not installed in {python}"),
    "import_failed": ("crashed", "import torch fails in {python}: {message}"),
    "python_too_old": ("unavailable", "{python}: {message}; envdoctor bench needs Python 3.8 or later"),
    "bad_device": ("unavailable", "{message}"),  # command "--device": a usage error
    "no_gpu": ("unavailable", "no GPU to measure: {message} ({python}){nvml}"),  # command "no_gpu"
    "usage": ("unparseable", "{message}"),
    "internal": ("unparseable", "the benchmark child failed: {message}"),
}


def _child_error(error: Any, python: str = "the target Python", nvml: str = " and NVML sees none") -> ProbeError:
    crashed: Tuple[ErrorKind, str] = ("crashed", "{message}")
    if not isinstance(error, dict):
        error = {"kind": "internal", "message": opt_str(error) or "the child's error is not an object"}
    kind, template = _CHILD_ERRORS.get(str(opt_str(error, "kind", max_chars=32)), crashed)
    command = {"bad_device": "--device", "no_gpu": "no_gpu"}.get(str(error.get("kind")))
    return ProbeError(kind, template.format(python=python, message=opt_str(error, "message") or "", nvml=nvml), command)


def _nvml_words(sampler: Sampler) -> str:
    """What NVML saw, the end of the no-GPU line: " and NVML sees none", ", but NVML sees 2 GPU(s): ...",
    or why NVML could not look."""
    if sampler.gpus:
        return (
            f", but NVML sees {len(sampler.gpus)} GPU(s): install a CUDA build of torch there "
            "(`envdoctor recommend` plans it)"
        )
    status = sampler.status.replace("no NVML samples: ", "", 1)
    return (
        " and NVML sees none" if not status or status == "NVML sees no GPU" else f" and NVML is not available: {status}"
    )


def _points_from_events(events: Sequence[Dict[str, Any]], suite: str = "matmul") -> List[Dict[str, Any]]:
    """The points of ``suite`` the child streamed (an event without a suite is a matmul point)."""
    return [
        e["point"]
        for e in events
        if e.get("kind") == "point" and isinstance(e.get("point"), dict) and e.get("suite", "matmul") == suite
    ]


def suite_budgets(budget: float) -> Dict[str, float]:
    """Seconds of measurement per device of each suite: --budget is the matmul suite's, the others
    scale with it (``suite_budgets(6.0) == {"matmul": 6.0, "memory": 2.0, "layers": 5.0}``)."""
    return {k: round(v * budget / DEFAULT_BUDGET, 3) for k, v in SUITE_BUDGET.items()}


def run_bench(
    python: str,
    dtypes: Sequence[str] = DTYPES,
    sizes: Sequence[int] = DEFAULT_SIZES,
    budget: float = DEFAULT_BUDGET,
    device: str = "0",
    env: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
    progress: Optional[Callable[[Progress], None]] = None,
    *,
    suites: Sequence[str] = ("matmul",),
    memory_sizes: Sequence[int] = MEMORY_SIZES,
    layers: Optional[Mapping[str, Any]] = None,
    chosen_by: Optional[str] = None,
    nvml: Any = None,
    sample_interval: float = SAMPLE_INTERVAL,
    lookup: Callable[[Optional[str]], Any] = lookup_model,
    raw: Optional[Dict[str, Any]] = None,
    device_required: bool = False,
    gpu_required: bool = False,
) -> BenchResult:
    """Benchmark the ``suites`` ("matmul", "memory", "layers") in the interpreter ``python``;
    never raises for a bad target.

    ``device``: "0", "1", ... or "all". ``budget`` is the matmul suite's seconds per device; the
    memory and layers suites take shares that scale with it (:func:`suite_budgets`). ``layers``
    adds to the layers suite's child config (names, shapes, dims, attentions, modes: for tests and
    benchmarks). ``timeout`` defaults to three times the budgets per device plus two minutes for
    torch import and CUDA start (and one more per device for the layers). ``raw``, when a dict,
    receives the child's events, result, stderr and the samples as they came (for fixtures).
    ``device_required``: the user named a GPU (``--device N``): a torch that sees no GPU is then a
    bad device at once (exit 2), not a run on the CPU. ``gpu_required`` (``bench`` without ``--cpu``):
    so is a torch that sees no GPU at all (error command "no_gpu"); without it the CPU is measured.
    """
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    suites = tuple(s for s in ("matmul", "memory", "layers") if s in suites) or ("matmul",)
    budgets = suite_budgets(budget)
    common: Dict[str, Any] = dict(
        python=python,
        chosen_by=chosen_by,
        dtypes=tuple(dtypes),
        sizes=tuple(sizes),
        budget_s=float(budget),
        created_at=created,
    )
    if "memory" in suites:
        common.update(memory_sizes=tuple(int(n) for n in memory_sizes), memory_budget_s=budgets["memory"])
    if "layers" in suites:
        common["layers_budget_s"] = budgets["layers"]
    sampler = Sampler(sample_interval, nvml)
    sampler.start()
    if timeout is None:
        gpus = max(1, len(sampler.gpus)) if device == "all" else 1
        per_gpu = 3 * sum(budgets[s] for s in suites) + (LAYERS_ALLOWANCE if "layers" in suites else 0.0)
        timeout = STARTUP_ALLOWANCE + per_gpu * gpus
    config: Dict[str, Any] = {
        "suites": list(suites),
        "dtypes": list(dtypes),
        "sizes": [int(n) for n in sizes],
        "budget": float(budget),
        "device": str(device),
    }
    if device_required and str(device) != "all":
        config["device_required"] = True
    if gpu_required:
        config["gpu_required"] = True
    if "memory" in suites:
        config["memory"] = {"sizes": [int(n) for n in memory_sizes], "budget": budgets["memory"]}
    if "layers" in suites:
        config["layers"] = {"budget": budgets["layers"], "dtypes": list(dtypes), **(layers or {})}
    state = {"done": 0, "total": 0}

    def on_event(event: Dict[str, Any]) -> None:
        if progress is None:
            return
        if event.get("kind") == "plan":
            state["total"] = opt_int(event, "points", low=0, high=10**6) or 0
            progress(Progress(0, state["total"], None, "measuring"))
        elif event.get("kind") == "point":
            suite = opt_str(event, "suite", max_chars=32) or "matmul"
            if suite != "reference":
                state["done"] += 1
            try:
                point = from_data(POINT_TYPES.get(suite, BenchPoint), event["point"])
            except (DataError, KeyError):
                point = None
            progress(Progress(state["done"], max(state["total"], state["done"]), point, suite=suite))

    if progress is not None:
        progress(Progress(0, 0, None, f"starting {python}"))
    child = run_child(SCRIPT, config, python=python, timeout=timeout, env=env, on_event=on_event, what="the benchmark")
    sampler.stop()
    common["wall_s"] = round(child.seconds, 3)
    if raw is not None:
        raw.update(
            config=config,
            result=child.result,
            events=list(child.events),
            stderr=child.stderr,
            returncode=child.returncode,
            seconds=child.seconds,
            samples=to_data(sampler.samples),
            gpus=sampler.gpus,
            sampling=sampler.status,
        )
    kw: Dict[str, Any] = dict(
        samples=sampler.samples,
        gpus=sampler.gpus,
        sampling=sampler.status,
        lookup=lookup,
        env=os.environ if env is None else env,
    )
    doc = child.result
    if doc is not None and doc.get("schema") == CHILD_SCHEMA:
        try:
            result = build_result(doc, **kw, **common)
        except DataError as exc:
            return BenchResult(
                **common,
                suites=suites,
                error=ProbeError("unparseable", f"the benchmark child's output does not fit: {exc}"),
            )
        if result.error is not None:
            result = replace(result, error=_child_error(doc["error"], python, _nvml_words(sampler)))
        elif gpu_required and result.devices and all(d.kind == "cpu" for d in result.devices):
            # a child that measured the CPU all the same (an older script, a replay): not what was asked
            build = "is a CPU-only build" if not result.torch_cuda else "sees no GPU"
            error = {"kind": "no_gpu", "message": f"torch {result.torch_version} {build}"}
            result = replace(result, error=_child_error(error, python, _nvml_words(sampler)))
        return result
    # No document: a crash, a hang, or output that is not ours. Keep the points already streamed.
    partial: Dict[str, Any] = {key: _points_from_events(child.events, suite) for suite, key in POINT_KEYS.items()}
    partial["flop_checks"] = [
        e["check"] for e in child.events if e.get("kind") == "flop_check" and isinstance(e.get("check"), dict)
    ]
    partial["devices"] = next((e.get("devices") for e in child.events if e.get("kind") == "plan"), [])
    try:
        result = build_result({"schema": CHILD_SCHEMA, "suites": list(suites), **partial}, **kw, **common)
    except DataError:
        result = BenchResult(**common, suites=suites)
    result = replace(result, error=_run_error(child, python), verdicts=())
    return replace(result, findings=bench_findings(result))  # none from verdicts on unfinished suites


def _run_error(child: ChildRun, python: str) -> ProbeError:
    """Why the benchmark gave no document, in the bench's own words."""
    error = child.error or ProbeError("unparseable", "the benchmark child printed no result")
    if child.result is not None:
        return ProbeError("unparseable", "the benchmark child printed a result that is not the bench's")
    points = [e["point"] for e in child.events if e.get("kind") == "point" and isinstance(e.get("point"), dict)]
    if error.kind == "timeout" and points:
        error = replace(error, message=f"{error.message} (last finished: {describe(points[-1])})")
    return error


def describe(point: Mapping[str, Any]) -> str:
    """A point of any suite in a few words: "fp16 n=8192", "copy n=268435456", "llama bf16 sdpa fwd b=2 s=2048"."""
    if "layer" in point:
        return (
            f"{point.get('layer')} {point.get('dtype')} {point.get('attention')} {point.get('mode')} "
            f"b={point.get('batch')} s={point.get('seq')}"
        )
    if "op" in point:
        return f"{point.get('op')} n={point.get('n')}"
    return f"{point.get('dtype')} n={point.get('n')}"


# --- the PNG ---------------------------------------------------------------------------------


def plot_spec(result: BenchResult, path: str) -> Dict[str, Any]:
    """What child/plot.py draws: one panel per suite that measured something (matmul TFLOP/s by n
    and dtype, with the datasheet peaks; memory GB/s by size with the L2-resident sizes shaded;
    the layers' fwd and fwd+bwd TFLOP/s at their largest shape, against the matmul rate)."""
    many = len(result.devices) > 1
    panels: List[Dict[str, Any]] = []
    series: Dict[str, List[List[float]]] = {}
    for p in result.points:
        if p.status == "ok" and p.tflops:
            key = f"GPU {p.device} {p.dtype}" if many else p.dtype
            series.setdefault(key, []).append([p.n, p.tflops])
    first = result.devices[0] if result.devices else None
    if series:
        panels.append(
            {
                "kind": "lines",
                "title": "matmul",
                "series": series,
                "hlines": dict(first.peaks) if (first is not None and not many) else {},
                "xlabel": "n (n x n @ n x n)",
                "ylabel": "TFLOP/s (dashed: datasheet dense peak)",
            }
        )
    mem: Dict[str, List[List[float]]] = {}
    for m in result.memory_points:
        if m.status == "ok" and m.gbs:
            mem.setdefault(f"GPU {m.device} {m.op}" if many else m.op, []).append([m.n, m.gbs])
    if mem:
        sheet = first.bandwidth_gbs if (first is not None and first.kind == "cuda") else None
        l2 = first.l2_bytes if (first is not None and first.kind == "cuda") else None
        panels.append(
            {
                "kind": "lines",
                "title": "memory (fp32 vectors)",
                "series": mem,
                "hlines": {"datasheet": sheet} if sheet else {},
                "xmax_shade": (l2 / 8.0) if l2 else None,
                "shade_label": "L2-resident",
                "xticklabels": {str(m.n): elements_label(m.n) for m in result.memory_points},
                "xlabel": "fp32 elements per buffer",
                "ylabel": "GB/s (read + written)",
            }
        )
    lay = [p for p in result.layer_points if p.status == "ok" and p.tflops and (not many or p.device == 0)]
    if lay:
        dtype = "bf16" if any(p.dtype == "bf16" for p in lay) else lay[0].dtype
        lay = [p for p in lay if p.dtype == dtype]
        cats: List[str] = []
        values: Dict[str, List[Optional[float]]] = {"fwd": [], "fwd+bwd": []}
        for layer in dict.fromkeys(p.layer for p in lay):
            big = max((p for p in lay if p.layer == layer), key=lambda p: p.batch * p.seq)
            for attn in ("eager", "sdpa"):
                pick = {
                    p.mode: p.tflops
                    for p in lay
                    if p.layer == layer and p.attention == attn and p.batch == big.batch and p.seq == big.seq
                }
                if pick:
                    cats.append(f"{layer} {attn} b={big.batch} s={big.seq}")
                    for mode in values:
                        values[mode].append(pick.get(mode))
        rate = first.matmul_rates.get(dtype) if first is not None else None
        panels.append(
            {
                "kind": "bars",
                "title": f"transformer layers ({dtype}, analytic FLOPs)",
                "categories": cats,
                "series": values,
                "vline": rate,
                "vline_label": f"{dtype} matmul, this run",
                "xlabel": "TFLOP/s",
                "ylabel": "",
            }
        )
    names = sorted({d.name or "?" for d in result.devices})
    title = ", ".join(names) + (f", torch {result.torch_version}" if result.torch_version else "")
    return {"path": str(path), "title": title, "panels": panels}


def write_plot(
    result: BenchResult, path: str, python: str, env: Optional[Mapping[str, str]] = None, timeout: float = 60.0
) -> Tuple[bool, str]:
    """Draw ``result`` to ``path`` with the target's matplotlib: (written, one line saying so)."""
    spec = plot_spec(result, path)
    if not spec["panels"]:
        return False, "no plot written: no point was measured"
    written, line, _ = draw_plot("plot.py", spec, python, env=env, timeout=timeout)
    return written, line

"""Run the benchmark child in the target interpreter, sample NVML meanwhile, build a BenchResult.

>>> r = run_bench("/opt/torch/.venv/bin/python3")          # the H200: about 11 s
>>> r.points[-1].dtype, round(r.points[-1].tflops), r.verdicts[0].line
('bf16', 659, 'Tensor Cores confirmed: fp16 runs 12.4x fp32')

The child streams one event line per point on stderr (``child.EVENT_PREFIX``), so the host shows
progress and keeps the finished points of a child that later crashes or hangs. envdoctor's one
runner (``envdoctor.run.run``) waits for the whole output, so this module has a small streaming
variant with the same rules: argv list, own process group, timeout that kills the group, bounded
output decoded with errors replaced, never raises.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.bench import analysis
from envdoctor.bench.child import CHILD_SCHEMA, EVENT_PREFIX
from envdoctor.facts.base import ProbeError
from envdoctor.facts.bench import (
    DEFAULT_BUDGET, DEFAULT_SIZES, DTYPES, BenchDevice, BenchPoint, BenchResult, NvmlSample,
)
from envdoctor.facts.serde import DataError, from_data, to_data
from envdoctor.run import MAX_OUTPUT, which

CHILD = Path(__file__).with_name("child.py")
#: Seconds allowed beyond the measurement budget: torch import, CUDA start, allocations.
STARTUP_ALLOWANCE = 120.0
SAMPLE_INTERVAL = 0.05
#: A short run for ``envdoctor check --bench``: one compute-bound size, about 1 s of measurement.
QUICK = {"dtypes": ("fp32", "fp16"), "sizes": (4096,), "budget": 1.0}


@dataclass(frozen=True)
class Progress:
    """What the progress callback receives: ``done`` of ``total`` points, the last one finished."""

    done: int
    total: int
    point: Optional[BenchPoint] = None
    message: str = ""


# --- the target interpreter ------------------------------------------------------------------

def resolve_python(explicit: Optional[str], env: Optional[Mapping[str, str]] = None) -> Tuple[Optional[str], str]:
    """(path or None, chosen_by): ``--python`` else python3/python on PATH else envdoctor's own.

    The same rule as the ``python`` probe; kept here so that bench does not depend on it.
    """
    env = os.environ if env is None else env
    if explicit:
        if os.sep in explicit:
            ok = os.path.isfile(explicit) and os.access(explicit, os.X_OK)
            return (explicit if ok else None), "--python"
        return which(explicit, env), "--python"
    for name in ("python3", "python"):
        found = which(name, env)
        if found:
            return found, f"{name} on PATH"
    return sys.executable, "envdoctor's own"


# --- streaming runner ------------------------------------------------------------------------

@dataclass(frozen=True)
class Streamed:
    returncode: Optional[int]
    stdout: str
    stderr: str                      # the lines that were not events
    events: Tuple[Dict[str, Any], ...]
    seconds: float
    error: Optional[ProbeError] = None


def stream(argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None,
           on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Streamed:
    """Run ``argv``; call ``on_event`` for each event line on stderr as it arrives."""
    argv = tuple(str(a) for a in argv)
    shown = " ".join(argv)
    environ = dict(os.environ if env is None else env)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=environ, start_new_session=True)
    except PermissionError as exc:
        return Streamed(None, "", "", (), 0.0, ProbeError("permission", f"{argv[0]}: {exc.strerror}", shown))
    except OSError as exc:
        return Streamed(None, "", "", (), 0.0, ProbeError("not_found", f"{argv[0]}: {exc.strerror or exc}", shown))
    out_chunks: List[bytes] = []
    err_lines: List[str] = []
    events: List[Dict[str, Any]] = []

    def read_out() -> None:
        size = 0
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            if size < MAX_OUTPUT:
                out_chunks.append(chunk)
            size += len(chunk)

    def read_err() -> None:
        size = 0
        for raw in iter(proc.stderr.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if line.startswith(EVENT_PREFIX):
                try:
                    event = json.loads(line[len(EVENT_PREFIX):])
                except ValueError:
                    event = None
                if isinstance(event, dict):
                    events.append(event)
                    if on_event is not None:
                        try:
                            on_event(event)
                        except Exception:   # a broken progress display must not stop the run
                            pass
                    continue
            size += len(raw)
            if size < MAX_OUTPUT:
                err_lines.append(line)

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    for t in readers:
        t.start()
    error = None
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
        error = ProbeError("timeout", f"the benchmark did not finish in {timeout:g} s", shown)
    for t in readers:
        t.join(timeout=5)
    seconds = time.monotonic() - started
    stdout = b"".join(out_chunks)[:MAX_OUTPUT].decode("utf-8", errors="replace")
    stderr = "\n".join(err_lines)
    code = proc.returncode
    if error is None and code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        error = ProbeError("crashed", f"the benchmark child was killed by {name}", shown)
    return Streamed(None if error and error.kind == "timeout" else code, stdout, stderr,
                    tuple(events), seconds, error)


# --- NVML sampling ---------------------------------------------------------------------------

class Sampler:
    """Reads every GPU through NVML every ``interval`` seconds in a thread of envdoctor's process.

    ``nvml`` is the pynvml module (tests pass a fake). ``status`` says what was sampled, or why
    nothing was: no nvidia-ml-py, no driver, no GPU.
    """

    def __init__(self, interval: float = SAMPLE_INTERVAL, nvml: Any = None) -> None:
        self.interval = interval
        self.samples: List[NvmlSample] = []
        self.gpus: List[Dict[str, Any]] = []   # per NVML index: uuid, bus id, name, max clock, limit
        self.status = ""
        self._nvml = nvml
        self._handles: List[Any] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._instant = True

    def start(self) -> bool:
        nv = self._nvml
        if nv is None:
            try:
                import pynvml as nv  # type: ignore
            except ImportError:
                self.status = "no NVML samples: nvidia-ml-py (pynvml) is not installed with envdoctor"
                return False
        try:
            nv.nvmlInit()
            count = nv.nvmlDeviceGetCount()
            self._handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:
            self.status = f"no NVML samples: NVML did not start ({_nvml_text(exc)})"
            return False
        self._nvml = nv
        if not self._handles:
            self.status = "no NVML samples: NVML sees no GPU"
            return False
        for h in self._handles:
            self.gpus.append({
                "uuid": _try(lambda: _text(nv.nvmlDeviceGetUUID(h))),
                "pci_bus_id": _try(lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId)),
                "name": _try(lambda: _text(nv.nvmlDeviceGetName(h))),
                "max_sm_clock_mhz": _try(lambda: int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))),
                "power_limit_w": _try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
            })
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return True

    def _power(self, h: Any) -> Optional[float]:
        nv = self._nvml
        if self._instant:
            field = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
            try:
                v = nv.nvmlDeviceGetFieldValues(h, [field])[0]
                if field is not None and v.nvmlReturn == 0:
                    return _field_value(v) / 1000.0
            except Exception:
                pass
            self._instant = False
        return _try(lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0)

    def sample(self) -> None:
        nv = self._nvml
        t = time.time()
        for i, h in enumerate(self._handles):
            mask = _try(lambda: int(nv.nvmlDeviceGetCurrentClocksEventReasons(h)))
            if mask is None:
                mask = _try(lambda: int(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)))
            self.samples.append(NvmlSample(
                t=t, gpu=i,
                sm_clock_mhz=_try(lambda: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
                power_w=self._power(h),
                temperature_c=_try(lambda: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
                reasons=analysis.decode_reasons(mask),
                reasons_mask=mask,
            ))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2)
            self.sample()
            count = len(self._handles)
            kind = "instant power" if self._instant else "power averaged by the driver"
            self.status = (f"NVML: {len(self.samples)} samples of {count} GPU(s) every "
                           f"{self.interval * 1000:.0f} ms ({kind})")
            _try(self._nvml.nvmlShutdown)


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_text(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _field_value(v: Any) -> float:
    # nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint, 6 ushort
    name = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(v.value, name.get(int(v.valueType), "uiVal")))


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

def _match_nvml(info: BenchDevice, gpus: Sequence[Dict[str, Any]], torch_count: int) -> Optional[int]:
    """Which NVML index is torch's device: by UUID, then PCI bus id, then the only GPU."""
    for i, g in enumerate(gpus):
        if info.uuid and g.get("uuid") and info.uuid.lower() == str(g["uuid"]).lower():
            return i
    for i, g in enumerate(gpus):
        if info.pci_bus_id and g.get("pci_bus_id") and _bus(info.pci_bus_id) == _bus(g["pci_bus_id"]):
            return i
    if len(gpus) == 1 and torch_count == 1:
        return 0
    return None


def _bus(text: str) -> str:
    """'00000000:00:06.0' and '0000:00:06.0' -> '0000:00:06.0'."""
    parts = text.strip().lower().split(":")
    try:
        domain = int(parts[-3], 16) if len(parts) >= 3 else 0
        return f"{domain:04x}:{int(parts[-2], 16):02x}:{parts[-1]}"
    except (ValueError, IndexError):
        return text.strip().lower()


def parse_child(stdout: str) -> Dict[str, Any]:
    """The child's JSON document (the last line of stdout that parses); ValueError otherwise."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            doc = json.loads(line)
            if isinstance(doc, dict) and doc.get("schema") == CHILD_SCHEMA:
                return doc
    raise ValueError("no envdoctor.bench.child JSON on stdout")


def build_result(doc: Dict[str, Any], *, samples: Sequence[NvmlSample] = (),
                 gpus: Sequence[Dict[str, Any]] = (), sampling: Optional[str] = None,
                 lookup: Callable[[Optional[str]], Any] = lookup_model, **fields: Any) -> BenchResult:
    """BenchResult from the child's document, the NVML samples and the datasheet, analysed.

    Raises DataError when the document does not have the child's shape.
    """
    raw_devices = doc.get("devices") or []
    cuda = [d for d in raw_devices if isinstance(d, dict) and d.get("kind") == "cuda"]
    devices = []
    for i, raw in enumerate(raw_devices):
        d = from_data(BenchDevice, raw, f"devices[{i}]")
        if d.kind == "cuda":
            nvml_index = _match_nvml(d, gpus, len(cuda))
            extra: Dict[str, Any] = {"nvml_index": nvml_index}
            if nvml_index is not None:
                g = gpus[nvml_index]
                extra.update(max_sm_clock_mhz=g.get("max_sm_clock_mhz"), power_limit_w=g.get("power_limit_w"))
            model = lookup(d.name)
            extra.update(analysis.datasheet(model))
            d = replace(d, **extra)
        devices.append(d)
    points = tuple(from_data(BenchPoint, p, f"points[{i}]") for i, p in enumerate(doc.get("points") or []))
    notes = [str(n) for n in doc.get("notes") or []]
    if any(d.kind == "cpu" for d in devices):
        notes.append("no GPU usable by torch: fp32 measured on the CPU")
    elif any(p.dtype in ("fp32", "tf32") for p in points):
        notes.append("fp32 measured with TF32 off, tf32 with TF32 on "
                     "(torch.backends.cuda.matmul, read back during each point)")
    error = doc.get("error")
    result = BenchResult(
        python_version=doc.get("python_version"),
        torch_version=doc.get("torch_version"),
        torch_cuda=doc.get("torch_cuda"),
        cuda_error=doc.get("cuda_error"),
        nvml_gpus=len(gpus) if gpus else (0 if sampling and "sees no GPU" in sampling else None),
        import_s=doc.get("import_s"),
        init_s=doc.get("init_s"),
        measure_s=doc.get("measure_s"),
        devices=tuple(devices),
        points=points,
        samples=tuple(samples),
        sampling=sampling,
        notes=tuple(notes),
        error=_child_error(error) if error else None,
        **fields,
    )
    return analysis.analyze(result)


_CHILD_ERRORS = {
    "no_torch": ("not_found", "torch is not installed in {python}"),
    "import_failed": ("crashed", "import torch fails in {python}: {message}"),
    "python_too_old": ("unavailable", "{python}: {message}; envdoctor bench needs Python 3.8 or later"),
    "bad_device": ("unavailable", "{message}"),   # command "--device": a usage error
    "usage": ("unparseable", "{message}"),
    "internal": ("unparseable", "the benchmark child failed: {message}"),
}


def _child_error(error: Dict[str, Any], python: str = "the target Python") -> ProbeError:
    kind, template = _CHILD_ERRORS.get(str(error.get("kind")), ("crashed", "{message}"))
    command = "--device" if error.get("kind") == "bad_device" else None
    return ProbeError(kind, template.format(python=python, message=error.get("message", "")), command)


def _points_from_events(events: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [e["point"] for e in events if e.get("event") == "point" and isinstance(e.get("point"), dict)]


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
    chosen_by: Optional[str] = None,
    nvml: Any = None,
    sample_interval: float = SAMPLE_INTERVAL,
    lookup: Callable[[Optional[str]], Any] = lookup_model,
    raw: Optional[Dict[str, Any]] = None,
) -> BenchResult:
    """Benchmark ``a @ b`` in the interpreter ``python``; never raises for a bad target.

    ``device``: "0", "1", ... or "all". ``timeout`` defaults to the budget per device plus two
    minutes for torch import and CUDA start. ``raw``, when a dict, receives the child's stdout,
    stderr and the samples as they came (for recording fixtures).
    """
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    common: Dict[str, Any] = dict(python=python, chosen_by=chosen_by, dtypes=tuple(dtypes),
                                  sizes=tuple(sizes), budget_s=float(budget), created_at=created)
    sampler = Sampler(sample_interval, nvml)
    sampler.start()
    if timeout is None:
        gpus = max(1, len(sampler.gpus)) if device == "all" else 1
        timeout = STARTUP_ALLOWANCE + 3 * budget * gpus
    config = {"dtypes": list(dtypes), "sizes": [int(n) for n in sizes], "budget": float(budget),
              "device": str(device)}
    state = {"done": 0, "total": 0}

    def on_event(event: Dict[str, Any]) -> None:
        if progress is None:
            return
        if event.get("event") == "plan":
            state["total"] = int(event.get("points") or 0)
            progress(Progress(0, state["total"], None, "measuring"))
        elif event.get("event") == "point":
            state["done"] += 1
            try:
                point = from_data(BenchPoint, event["point"])
            except (DataError, KeyError):
                point = None
            progress(Progress(state["done"], max(state["total"], state["done"]), point))

    if progress is not None:
        progress(Progress(0, 0, None, f"starting {python}"))
    ran = stream([python, str(CHILD), json.dumps(config)], timeout=timeout, env=env, on_event=on_event)
    sampler.stop()
    common["wall_s"] = round(ran.seconds, 3)
    if raw is not None:
        raw.update(argv=[python, "child.py", json.dumps(config)], stdout=ran.stdout, stderr=ran.stderr,
                   events=list(ran.events), returncode=ran.returncode, seconds=ran.seconds,
                   samples=to_data(sampler.samples), gpus=sampler.gpus,
                   sampling=sampler.status)
    kw = dict(samples=sampler.samples, gpus=sampler.gpus, sampling=sampler.status, lookup=lookup)
    try:
        doc = parse_child(ran.stdout)
    except ValueError:
        doc = None
    if doc is not None and ran.error is None:
        try:
            result = build_result(doc, **kw, **common)
        except DataError as exc:
            return BenchResult(**common, error=ProbeError("unparseable", f"the benchmark child's output "
                                                          f"does not fit: {exc}"))
        if result.error is not None:
            result = replace(result, error=_child_error(doc["error"], python))
        return result
    # No document: a crash, a hang, or output that is not ours. Keep the points already streamed.
    if ran.error is not None:
        error = ran.error
        last = ran.events[-1].get("point") if ran.events else None
        if error.kind == "timeout" and isinstance(last, dict):
            error = replace(error, message=f"{error.message} (last finished: {last.get('dtype')} n={last.get('n')})")
    elif ran.returncode:
        tail = ran.stderr.strip().splitlines()
        last = tail[-1] if tail else "no output"
        if last.startswith("SyntaxError"):
            last += f" ({python} is probably older than Python 3.8)"
        error = ProbeError("exit_status", f"the benchmark child exited with status {ran.returncode}: {last}")
    else:
        error = ProbeError("unparseable", "the benchmark child printed no result")
    partial = {"points": _points_from_events(ran.events),
               "devices": next((e.get("devices") for e in ran.events if e.get("event") == "plan"), [])}
    try:
        result = build_result({"schema": CHILD_SCHEMA, **partial}, **kw, **common)
    except DataError:
        result = BenchResult(**common)
    return replace(result, error=error, verdicts=())


# --- the PNG ---------------------------------------------------------------------------------

PLOT_CHILD = Path(__file__).with_name("plot_child.py")


def plot_spec(result: BenchResult, path: str) -> Dict[str, Any]:
    """What plot_child.py draws: per dtype (and GPU, with several) the (n, TFLOP/s) points."""
    many = len(result.devices) > 1
    series: Dict[str, List[List[float]]] = {}
    peaks: Dict[str, float] = {}
    for p in result.points:
        if p.status == "ok" and p.tflops:
            key = f"GPU {p.device} {p.dtype}" if many else p.dtype
            series.setdefault(key, []).append([p.n, p.tflops])
    if not many and result.devices:
        peaks = dict(result.devices[0].peaks)
    names = sorted({d.name or "?" for d in result.devices})
    title = ", ".join(names) + (f", torch {result.torch_version}" if result.torch_version else "")
    return {"path": str(path), "title": title, "series": series, "peaks": peaks}


def write_plot(result: BenchResult, path: str, python: str, env: Optional[Mapping[str, str]] = None,
               timeout: float = 60.0) -> Tuple[bool, str]:
    """Draw ``result`` to ``path`` with the target's matplotlib: (written, one line saying so)."""
    from envdoctor.run import run

    spec = plot_spec(result, os.path.abspath(path))
    if not spec["series"]:
        return False, "no plot written: no point was measured"
    ran = run([python, str(PLOT_CHILD)], timeout=timeout, env=env, stdin=json.dumps(spec))
    try:
        answer = json.loads(ran.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        answer = {"ok": False, "kind": "failed", "message": ran.error.message if ran.error else "no answer"}
    if answer.get("ok"):
        return True, f"plot written to {path}"
    if answer.get("kind") == "no_matplotlib":
        return False, (f"no plot written: matplotlib is not installed in {python} "
                       f"({python} -m pip install matplotlib)")
    return False, f"no plot written: {answer.get('message')}"

"""What ``fit --measure`` measured, typed: built from the child's document and the host's NVML reading (pure).

The child (``envdoctor/fit/target/measure.py``) reports raw readings; this module turns them into
the figures the estimate is compared with. The **context** (what the process holds outside the
caching allocator: the CUDA context, cuBLAS handles, loaded kernels) is

    context = free device memory before the child started (NVML, on the host)
              - free device memory at the end of the measured step (cudaMemGetInfo, in the child)
              - memory_reserved at that moment

so memory that other processes held before is not counted. Without NVML the first term is
CUDA's total (then another process on the GPU counts as context, and the document says so). The
**measured peak** is ``max_memory_reserved + context``, what ``fit`` predicts as ``peak_bytes``.
On the CPU the peak is the largest sum of live tensor bytes (no reserve, no context).

>>> doc = {"schema": "envdoctor.fit.child/1", "status": "measured", "builder": "reference",
...        "device": {"kind": "cuda", "name": "NVIDIA H200", "index": 0},
...        "memory": {"cuda_total": 150_000_000_000, "cuda_free_end": 139_000_000_000,
...                   "reserved_end": 10_000_000_000, "weights_bytes": 2_000_000_000},
...        "phases": [{"name": "backward", "peak_allocated": 9_000_000_000, "peak_reserved": 10_000_000_000}],
...        "timing": {"step_s": [0.5, 0.4, 0.6], "tokens_per_step": 4096}}
>>> m = measurement_from_child(doc, nvml_free_before=149_750_000_000)
>>> m.context_bytes, m.peak_bytes, m.step_s, m.tokens_per_s
(750000000, 10750000000, 0.5, 8192.0)
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envdoctor.parse.jsontext import opt_float, opt_int, opt_str

Status = Literal["measured", "oom", "unavailable", "failed", "stopped", "no_gpu", "no_torch"]
CHILD_SCHEMA = "envdoctor.fit.child/1"
#: how the measured terms are named (the estimate's term names where they are the same thing)
MEASURED_TERMS = (
    "weights",
    "gradients",
    "optimizer",
    "activations",
    "autocast_copies",
    "kv_cache",
    "context",
    "allocator_reserve",
)


class MeasurementError(ValueError):
    """The child's document does not have the shape this version of envdoctor reads."""


@dataclass(frozen=True)
class PhaseMemory:
    """One measured phase: the allocator's peaks during it, and what stayed allocated after it."""

    name: str  # "forward", "backward", "optimizer step", "generate", "build"
    peak_allocated: int
    peak_reserved: int | None  # None on the CPU
    allocated_after: int | None = None


@dataclass(frozen=True)
class MatmulPeak:
    """The one matmul point the child ran for the MFU (``envdoctor bench``'s method)."""

    dtype: str
    n: int
    status: str  # "ok", "wrong", "failed"
    tflops: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Measurement:
    status: Status
    message: str | None = None  # why not measured (unavailable, failed, no GPU), or the OOM's error
    device_kind: Literal["cuda", "cpu"] | None = None
    device_name: str | None = None
    device_index: int | None = None
    device_uuid: str | None = None
    device_total_bytes: int | None = None
    builder: Literal["transformers", "reference"] | None = None
    python: str | None = None
    torch_version: str | None = None
    versions: tuple[tuple[str, str], ...] = ()  # transformers, peft, bitsandbytes, accelerate found
    tf32: bool | None = None
    max_allocated: int | None = None
    max_reserved: int | None = None
    context_bytes: int | None = None
    context_how: str | None = None
    context_init_bytes: int | None = None  # right after CUDA started, before the model
    other_bytes: int | None = None  # held by other processes before the child started
    peak_bytes: int | None = None  # reserved + context (CUDA); live tensor bytes (CPU)
    peak_basis: str = ""
    phases: tuple[PhaseMemory, ...] = ()
    terms: tuple[tuple[str, int], ...] = ()  # measured directly (MEASURED_TERMS)
    oom_phase: str | None = None
    step_s: float | None = None  # median of the timed steps (or the generate call)
    step_times: tuple[float, ...] = ()
    tokens_per_step: int | None = None
    tokens_per_s: float | None = None
    loss: float | None = None
    params: int | None = None
    trainable_params: int | None = None
    matmul: MatmulPeak | None = None
    alloc_conf: str | None = None
    notes: tuple[str, ...] = ()
    seconds: float | None = None  # the child's wall time

    def term(self, name: str) -> int | None:
        return dict(self.terms).get(name)

    @property
    def cpu(self) -> bool:
        return self.device_kind == "cpu"


def _dict(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = data.get(key)
    return v if isinstance(v, Mapping) else {}


def _max(values: Sequence[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _phases(raw: Any) -> tuple[PhaseMemory, ...]:
    out = []
    for i, p in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or opt_int(p, "peak_allocated") is None:
            raise MeasurementError(f"phases[{i}] has no name or peak_allocated")
        out.append(
            PhaseMemory(
                p["name"], opt_int(p, "peak_allocated") or 0, opt_int(p, "peak_reserved"), opt_int(p, "allocated_after")
            )
        )
    return tuple(out)


def _matmul(raw: Mapping[str, Any]) -> MatmulPeak | None:
    if not raw:
        return None
    return MatmulPeak(
        dtype=opt_str(raw, "dtype") or "?",
        n=opt_int(raw, "n") or 0,
        status=opt_str(raw, "status") or "?",
        tflops=opt_float(raw, "tflops"),
        error=opt_str(raw, "error"),
    )


def measurement_from_child(
    doc: Mapping[str, Any], nvml_free_before: int | None = None, seconds: float | None = None
) -> Measurement:
    """The Measurement of one child document; ``nvml_free_before`` is the measured GPU's free bytes
    (NVML) read by the host before the child started. Raises MeasurementError for a foreign shape."""
    if doc.get("schema") != CHILD_SCHEMA:
        raise MeasurementError(f"the child's document is not {CHILD_SCHEMA}")
    status = doc.get("status")
    if status not in ("measured", "oom", "unavailable", "failed", "no_gpu"):
        raise MeasurementError(f"unknown status {status!r}")
    device = _dict(doc, "device")
    mem = _dict(doc, "memory")
    kind = device.get("kind") if device.get("kind") in ("cuda", "cpu") else None
    phases = _phases(doc.get("phases"))
    measured = [p for p in phases if p.name != "build"]
    oom = _dict(doc, "oom")
    max_alloc = _max([*(p.peak_allocated for p in measured), opt_int(oom, "peak_allocated")])
    max_res = _max([*(p.peak_reserved for p in measured), opt_int(oom, "peak_reserved")])
    total = opt_int(mem, "cuda_total") or opt_int(device, "memory_bytes")
    context = context_init = other = None
    how = None
    free_end, reserved_end = opt_int(mem, "cuda_free_end"), opt_int(mem, "reserved_end")
    if kind == "cuda" and free_end is not None and reserved_end is not None:
        if nvml_free_before is not None:
            context = nvml_free_before - free_end - reserved_end
            how = (
                "NVML free before the child - cudaMemGetInfo free at the end of the measured step - "
                "memory_reserved then"
            )
            if total is not None:
                other = max(0, total - nvml_free_before)
        elif total is not None:
            context = total - free_end - reserved_end
            how = (
                "cudaMemGetInfo total - free at the end of the measured step - memory_reserved then (no NVML: "
                "memory of other processes on this GPU counts here too)"
            )
        free_init, res_init = opt_int(mem, "cuda_free_init"), opt_int(mem, "reserved_init")
        base = nvml_free_before if nvml_free_before is not None else total
        if base is not None and free_init is not None and res_init is not None:
            context_init = base - free_init - res_init
    if kind == "cuda":
        peak = (max_res + context) if (max_res is not None and context is not None) else None
        basis = "max_memory_reserved + context"
    else:
        peak = max_alloc
        basis = "peak live tensor bytes on the CPU (no allocator reserve, no context)"
    terms: list[tuple[str, int]] = []
    for name, key in (
        ("weights", "weights_bytes"),
        ("gradients", "gradient_bytes"),
        ("optimizer", "optimizer_bytes"),
        ("activations", "saved_bytes"),
        ("autocast_copies", "autocast_copy_bytes"),
        ("kv_cache", "kv_cache_bytes"),
    ):
        v = opt_int(mem, key)
        if v is not None:
            terms.append((name, v))
    if context is not None:
        terms.append(("context", context))
    if max_res is not None and max_alloc is not None and status == "measured":
        terms.append(("allocator_reserve", max_res - max_alloc))
    timing = _dict(doc, "timing")
    times = tuple(float(t) for t in (timing.get("step_s") or []) if isinstance(t, (int, float)) and t > 0)
    step = statistics.median(times) if times else None
    tokens = opt_int(timing, "tokens_per_step")
    versions = tuple((k, v) for k, v in sorted(_dict(doc, "versions").items()) if isinstance(v, str))
    builder = doc.get("builder") if doc.get("builder") in ("transformers", "reference") else None
    notes = tuple(str(n) for n in doc.get("notes") or [] if isinstance(n, str))
    return Measurement(
        status=status,
        message=opt_str(oom, "message") if oom else opt_str(doc, "message"),
        device_kind=kind,
        device_name=opt_str(device, "name"),
        device_index=opt_int(device, "index"),
        device_uuid=opt_str(device, "uuid"),
        device_total_bytes=total,
        builder=builder,
        python=opt_str(doc, "python"),
        torch_version=opt_str(doc, "torch_version"),
        versions=versions,
        tf32=doc.get("tf32") if isinstance(doc.get("tf32"), bool) else None,
        max_allocated=max_alloc,
        max_reserved=max_res,
        context_bytes=context,
        context_how=how,
        context_init_bytes=context_init,
        other_bytes=other,
        peak_bytes=peak,
        peak_basis=basis,
        phases=phases,
        terms=tuple(terms),
        oom_phase=opt_str(oom, "phase") if oom else None,
        step_s=step,
        step_times=times,
        tokens_per_step=tokens,
        tokens_per_s=(tokens / step) if (tokens and step) else None,
        loss=opt_float(doc, "loss"),
        params=opt_int(doc, "params"),
        trainable_params=opt_int(doc, "trainable_params"),
        matmul=_matmul(_dict(doc, "matmul")),
        alloc_conf=opt_str(doc, "alloc_conf"),
        notes=notes,
        seconds=seconds,
    )

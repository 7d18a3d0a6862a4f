"""The estimate beside the measurement, term by term and phase by phase, its error, and the MFU (pure).

The error is ``(estimate - measured) / measured`` of the peak: positive when the estimate is above
what the run needed. The target (issue 13, shared/reference §1.5): within +-10% and never more
than 5% under, so ``-0.05 <= error <= 0.10``.

MFU is model FLOPs per second (``estimate.flops``, the PaLM/nanoGPT convention: 6N + 12·L·H·Q·T
per training token, 2N + 4·L·H·Q·T per token of inference; gradient checkpointing's recompute is
not counted) over (a) the GPU's datasheet dense peak for the compute dtype and (b) the matmul
rate ``envdoctor bench``'s method measured in the same run; each also with the causal variant
(attention halved).

>>> compare_error(110, 100), compare_error(94, 100), within_target(0.1), within_target(-0.06)
(0.1, -0.06, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envdoctor.fit.estimate import Estimate, Phase
from envdoctor.fit.facts import Measurement

TARGET_OVER = 0.10
TARGET_UNDER = -0.05
#: table field of each compute dtype's dense datasheet peak
_PEAK_FIELD = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "fp16": "fp16_tflops", "bf16": "bf16_tflops"}


@dataclass(frozen=True)
class Row:
    """One quantity both sides give: ``estimate`` and ``measured`` bytes, ``error`` as above."""

    name: str
    label: str
    estimate: int | None
    measured: int | None
    error: float | None
    note: str = ""


@dataclass(frozen=True)
class Mfu:
    convention: str
    dtype: str  # the compute dtype the peaks are for
    flops_per_step: float
    flops_per_step_causal: float
    achieved_tflops: float
    achieved_tflops_causal: float
    datasheet_tflops: float | None = None
    datasheet_source: str | None = None
    datasheet_unconfirmed: bool = False
    mfu_datasheet: float | None = None
    mfu_datasheet_causal: float | None = None
    matmul_tflops: float | None = None
    matmul_n: int | None = None
    mfu_matmul: float | None = None
    mfu_matmul_causal: float | None = None


@dataclass(frozen=True)
class Comparison:
    basis: str  # what the peak row compares
    peak: Row
    rows: tuple[Row, ...]  # the allocated peak and the terms
    phases: tuple[Row, ...]
    mfu: Mfu | None
    estimate_fits_device: bool | None  # the estimate's verdict for the measured GPU (None on the CPU)

    @property
    def error(self) -> float | None:
        return self.peak.error

    @property
    def within_target(self) -> bool | None:
        return None if self.peak.error is None else within_target(self.peak.error)


def compare_error(estimate: int | None, measured: int | None) -> float | None:
    if estimate is None or measured is None or measured <= 0:
        return None
    return round((estimate - measured) / measured, 6)


def within_target(error: float) -> bool:
    return TARGET_UNDER <= error <= TARGET_OVER


def _row(name: str, label: str, estimate: int | None, measured: int | None, note: str = "") -> Row:
    return Row(name, label, estimate, measured, compare_error(estimate, measured), note)


def _allocated(est: Estimate, phase_names: tuple[str, ...] | None = None) -> int:
    """What a phase (the largest of ``phase_names``, or of the workload's phases) allocates: context and
    reserve left out. The model build is left out by default: the measured peak allocated is reset
    after it (its blocks stay reserved, so the peak reserved + context does include it)."""

    def alloc(p: Phase) -> int:
        # NCCL's buffers are outside torch's allocator (and --measure runs on one GPU, with none)
        return sum(t.bytes for t in p.terms if t.name not in ("context", "allocator_reserve", "nccl"))

    if phase_names is None:
        return max(alloc(p) for p in est.phases if p.name != "model build")
    phases = [p for p in est.phases if p.name in phase_names] or [p for p in est.phases if p.name == est.peak_phase]
    return max(alloc(p) for p in phases)


def _term(est: Estimate, name: str, phase: str | None = None) -> int | None:
    for p in est.phases:
        if phase is not None and p.name != phase:
            continue
        for t in p.terms:
            if t.name == name:
                return t.bytes
    return None


def compare(est: Estimate, m: Measurement, gpu_model: Any = None) -> Comparison:
    """``gpu_model``: the table's ``GpuModel`` of the measured GPU (for the datasheet peak), or None."""
    w = est.workload
    allocated = _allocated(est)
    if m.cpu:
        peak = _row(
            "peak",
            "peak allocated (CPU: live tensor bytes)",
            allocated,
            m.peak_bytes,
            "the CPU has no allocator reserve and no CUDA context; compared without them",
        )
        rows: list[Row] = []
    else:
        # NCCL's buffers: a child on one GPU runs no collective, so it cannot see them (none on one GPU)
        nccl = _term(est, "nccl", est.peak_phase) or 0
        peak = _row("peak", "peak (reserved + context)", est.peak_bytes - nccl, m.peak_bytes)
        rows = [_row("allocated", "peak allocated", allocated, m.max_allocated)]
    step_phase = "optimizer step" if w.train else None
    rows.append(_row("weights", "weights", _term(est, "weights"), m.term("weights")))
    if w.train:
        rows.append(_row("gradients", "gradients", _term(est, "gradients", "optimizer step"), m.term("gradients")))
        rows.append(_row("optimizer", "optimizer states", _term(est, "optimizer"), m.term("optimizer")))
        acts = _term(est, "activations")
        if m.term("activations") is not None and acts is not None:
            V = est.spec.vocab
            per_logit = 4 + (2 if est.spec.traits.logit_softcap and w.dtype != "fp32" else 0)
            kept = w.batch * w.seq * V * per_logit
            rows.append(
                _row(
                    "activations",
                    "saved for backward (activations + the loss's fp32 log-softmax)",
                    acts + kept,
                    m.term("activations"),
                    f"estimate: activations + b*s*V x {per_logit} B",
                )
            )
        if m.term("autocast_copies") is not None:
            rows.append(
                _row(
                    "autocast_copies",
                    "autocast weight copies",
                    _term(est, "autocast_copies") or 0,
                    m.term("autocast_copies"),
                )
            )
    elif est.spec.kind != "encoder":
        last = est.phases[-1].name
        rows.append(_row("kv_cache", "KV cache", _term(est, "kv_cache", last), m.term("kv_cache")))
    if not m.cpu:
        rows.append(_row("context", "CUDA context + cuBLAS", _term(est, "context"), m.term("context")))
        rows.append(
            _row(
                "allocator_reserve",
                "allocator reserve",
                _term(est, "allocator_reserve", est.peak_phase),
                m.term("allocator_reserve"),
            )
        )
    phases: list[Row] = []
    measured = {p.name: p for p in m.phases}
    if w.train:
        back = measured.get("backward")
        if back is not None:
            phases.append(
                _row(
                    "backward",
                    "backward (allocated)",
                    _allocated(est, ("loss backward", "backward of the last layer")),
                    back.peak_allocated,
                )
            )
        step = measured.get("optimizer step")
        if step is not None and step_phase is not None:
            phases.append(
                _row(
                    "optimizer step", "optimizer step (allocated)", _allocated(est, (step_phase,)), step.peak_allocated
                )
            )
    fits = None if m.cpu or m.device_total_bytes is None else est.peak_bytes <= m.device_total_bytes
    basis = peak.label
    return Comparison(
        basis,
        peak,
        tuple(r for r in rows if r.estimate is not None or r.measured is not None),
        tuple(phases),
        mfu_of(est, m, gpu_model),
        fits,
    )


def compute_dtype(est: Estimate, m: Measurement | None = None) -> str:
    """The dtype the matrix products run in: --amp, else --dtype (fp32 with TF32 when the run had it on)."""
    w = est.workload
    if w.amp:
        return w.amp
    if w.dtype == "fp32" and m is not None and m.tf32:
        return "tf32"
    return w.dtype


def mfu_of(est: Estimate, m: Measurement, gpu_model: Any = None) -> Mfu | None:
    """None without a timed step."""
    if not m.step_s or m.status != "measured":
        return None
    f = est.flops
    dtype = compute_dtype(est, m)
    achieved = f.per_step / m.step_s / 1e12
    achieved_c = f.per_step_causal / m.step_s / 1e12
    sheet = getattr(gpu_model, _PEAK_FIELD[dtype], None) if gpu_model is not None else None
    sheet = float(sheet) if isinstance(sheet, (int, float)) and sheet > 0 else None
    mm = m.matmul.tflops if m.matmul is not None and m.matmul.status == "ok" and m.matmul.tflops else None
    convention = (
        "PaLM/nanoGPT model FLOPs: "
        + f.convention.split(": ", 1)[-1]
        + "; recompute not counted; the causal variant halves the attention term"
    )
    return Mfu(
        convention=convention,
        dtype=dtype,
        flops_per_step=f.per_step,
        flops_per_step_causal=f.per_step_causal,
        achieved_tflops=round(achieved, 6),
        achieved_tflops_causal=round(achieved_c, 6),
        datasheet_tflops=sheet,
        datasheet_source=getattr(gpu_model, "source", None) if sheet else None,
        datasheet_unconfirmed=bool(
            sheet
            and (
                getattr(gpu_model, "unconfirmed", False)
                or _PEAK_FIELD[dtype] in (getattr(gpu_model, "unconfirmed_fields", ()) or ())
            )
        ),
        mfu_datasheet=round(achieved / sheet, 6) if sheet else None,
        mfu_datasheet_causal=round(achieved_c / sheet, 6) if sheet else None,
        matmul_tflops=mm,
        matmul_n=m.matmul.n if mm and m.matmul is not None else None,
        mfu_matmul=round(achieved / mm, 6) if mm else None,
        mfu_matmul_causal=round(achieved_c / mm, 6) if mm else None,
    )

"""``envdoctor fit`` for people (text, not a stable interface) and for scripts (``envdoctor.fit/1``).

The JSON document holds at least ``peak_bytes`` (one GPU's predicted peak, context included),
``terms`` (bytes per term at the peak) and ``term_details`` (each term's formula and inputs). Its
one typed definition is :class:`FitDocument` here, which :func:`fit_document` returns (mypy checks
it); ``envdoctor/schemas/fit-1.json`` is generated from it by ``tools/make_schema.py``. Keys
written since the first fit documents (``peak_low_bytes``, ``activation_detail``, ...) are not
required, so a document written before them still validates.
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Literal, Optional, TypedDict

from envdoctor.doctypes import Count, Json
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.fit.analysis import TARGET_OVER, TARGET_UNDER, Comparison, Mfu, Row
from envdoctor.fit.estimate import Term
from envdoctor.fit.facts import MatmulPeak, Measurement, PhaseMemory, Status
from envdoctor.fit.verdict import FitReport
from envdoctor.fit.workload import Amp, Attention, Dtype, KvDtype, Loop, Mode, Optimizer, Quant, Workload
from envdoctor.units import format_bytes

SCHEMA = "envdoctor.fit/1"
GIB = 2**30

_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer states",
    "optimizer_step": "optimizer step temporaries",
    "activations": "activations",
    "layer_working": "layer working set",
    "logits": "logits and loss",
    "held_logits": "logits the loop holds",
    "kv_cache": "KV cache",
    "autocast_copies": "autocast weight copies",
    "zero_gathered": "ZeRO-3 gathered layers",
    "ddp_buckets": "DDP gradient buckets",
    "build_copy": "tied head before tying (build)",
    "context": "CUDA context + cuBLAS",
    "nccl": "NCCL buffers",
    "allocator_reserve": "allocator reserve",
}


# --- the document's type (envdoctor.fit/1) ---------------------------------------------------------

#: an integer of 1 or more (a batch, a layer count, a number of GPUs)
Positive = Annotated[int, Json(minimum=1)]
#: a number of 0 or more (FLOPs, bytes per token)
Amount = Annotated[float, Json(minimum=0)]
#: bytes per term name (the names of ``term_details``)
TermBytes = Dict[str, Count]


class _TermKeys(TypedDict):
    name: Annotated[
        str,
        Json(
            description="the term: weights, gradients, optimizer, activations, kv_cache, "
            "context, allocator_reserve, ..."
        ),
    ]
    bytes: Count
    formula: str
    inputs: Annotated[Dict[str, Any], Json(description="the figures the formula takes, by name")]


class TermDetail(_TermKeys, total=False):
    """One term of the estimate: its bytes, the formula in words and the figures it took."""

    note: str


class _SavedKeys(TypedDict):
    tensor: str
    bytes_per_token: Amount


class SavedTensor(_SavedKeys, total=False):
    """One tensor a layer keeps for backward, in bytes per token, and the operations that keep it."""

    kept_by: List[str]


class _ModelKeys(TypedDict):
    name: str
    architecture: str
    family: str
    params_total: Count
    params_trainable: Count
    hidden_size: Positive
    layers: Positive
    heads: Positive
    kv_heads: Positive
    vocab_size: Positive


class FitModel(_ModelKeys, total=False):
    """The model's shape as the estimate read it (config.json or a bundled row)."""

    source: str
    intermediate_size: int
    decoder_layers: int
    head_dim: int
    tie_word_embeddings: bool
    experts: int
    experts_per_token: int


class _WorkloadKeys(TypedDict):
    mode: Mode
    batch: Positive
    seq: Positive
    dtype: Dtype
    attention: Attention


class FitWorkload(_WorkloadKeys, total=False):
    """The run the estimate is for: the options of ``envdoctor fit`` as they were taken."""

    new_tokens: Count
    amp: Optional[Amp]
    quant: Optional[Quant]
    kv_dtype: Optional[KvDtype]
    optimizer: Optimizer
    grad_checkpointing: bool
    lora_rank: Count
    lora_targets: List[str]
    zero: Annotated[int, Json(minimum=0, maximum=3)]
    gpus: Positive
    loop: Loop
    alloc_conf: Optional[str]
    tp: Positive
    ddp: bool
    device_map: Optional[Literal["auto"]]
    pp: Positive


class _PhaseKeys(TypedDict):
    name: str
    bytes: Count
    terms: TermBytes


class FitPhase(_PhaseKeys, total=False):
    """One moment of the run (the forward, the backward, the optimizer step, prefill, ...) and what is
    held then."""

    term_details: List[TermDetail]


class _FlopsKeys(TypedDict):
    convention: str
    per_token: Amount
    per_step: Amount


class FitFlops(_FlopsKeys, total=False):
    """Model FLOPs per token and per step, the convention named (causal attention counted whole and as half)."""

    n_matmul_params: int
    n_params_with_embeddings: int
    per_token_causal: Amount
    per_step_causal: Amount
    tokens_per_step: Count


class _GpuKeys(TypedDict):
    name: str
    total_bytes: Count
    fits: bool
    spare_bytes: Annotated[int, Json(description="negative: short by that much")]


class GpuVerdict(_GpuKeys, total=False):
    """One GPU's verdict against the memory a process can allocate on it (``source`` says where that figure
    came from); ``problem`` when it cannot run the workload whatever its memory (bf16 below sm_80)."""

    source: str
    cc: Optional[str]
    problem: Optional[str]
    note: Annotated[
        Optional[str],
        Json(description="how this GPU runs it unlike the estimate printed (SDPA's math kernel below sm_80)"),
    ]
    tight: Annotated[
        Optional[str],
        Json(
            description="it fits with under 5% of the usable memory spare at the upper edge: why that is close "
            "(null otherwise)"
        ),
    ]


class _WayKeys(TypedDict):
    label: str
    peak_bytes: Count
    fits: bool


class WayToFit(_WayKeys, total=False):
    """A change that makes the run fit the GPU of ``ways_for``: its flags (to add or set; ``without``:
    the given flags to leave out) and the new peak."""

    flags: str
    without: List[str]


class MeasuredDevice(TypedDict, total=False):
    kind: Optional[Literal["cuda", "cpu"]]
    name: Optional[str]
    index: Optional[int]
    uuid: Optional[str]
    total_bytes: Optional[int]


class _RowKeys(TypedDict):
    name: str
    label: str
    estimate: Optional[int]
    measured: Optional[int]
    error: Annotated[Optional[float], Json(description="(estimate - measured) / measured")]


class ComparedRow(_RowKeys, total=False):
    """One quantity both the estimate and the measurement give, in bytes, and the estimate's error."""

    note: str


class ErrorTarget(TypedDict, total=False):
    under: float
    over: float


class _ComparisonKeys(TypedDict):
    basis: str
    error: Optional[float]
    within_target: Optional[bool]
    target: ErrorTarget
    peak: ComparedRow
    rows: List[ComparedRow]
    phases: List[ComparedRow]


class Compared(_ComparisonKeys, total=False):
    """The estimate beside the measurement: the peak, the terms and the phases, and the peak's error
    against its target."""

    estimate_fits_device: Optional[bool]


class MeasureFinding(TypedDict):
    """A finding of ``fit --measure`` (ED630-ED699)."""

    code: Annotated[str, Json(pattern="^ED6[3-9][0-9]$")]


class _MeasurementKeys(TypedDict):
    status: Status
    message: Optional[str]
    device: MeasuredDevice
    builder: Optional[Literal["transformers", "reference"]]
    peak_bytes: Optional[int]
    peak_basis: str
    max_allocated: Optional[int]
    max_reserved: Optional[int]
    context_bytes: Optional[int]
    phases: List[PhaseMemory]
    terms: Dict[str, int]
    step_s: Optional[float]
    tokens_per_s: Optional[float]
    matmul: Optional[MatmulPeak]
    comparison: Optional[Compared]
    mfu: Optional[Mfu]
    findings: List[Annotated[MeasureFinding, Json.extends(Finding)]]
    notes: List[str]


class MeasurementSection(_MeasurementKeys, total=False):
    """``fit --measure``'s run: the measured peak (max_memory_reserved + context on a GPU, live tensor bytes
    on the CPU), the context, per-phase peaks, terms measured directly, timing, the MFU, the comparison
    with the estimate and the findings ED630-ED638."""

    python: Optional[str]
    torch_version: Optional[str]
    versions: Dict[str, str]
    tf32: Optional[bool]
    context_how: Optional[str]
    context_init_bytes: Optional[int]
    other_bytes: Optional[int]
    oom_phase: Optional[str]
    step_times: List[float]
    tokens_per_step: Optional[int]
    loss: Optional[float]
    params: Optional[int]
    trainable_params: Optional[int]
    alloc_conf: Optional[str]
    seconds: Optional[float]


class FitSummary(TypedDict):
    exit_code: Annotated[
        int,
        Json(
            enum=[0, 1, 2], description="the exit code of the command that printed it: 2 when --measure could not start"
        ),
    ]


class _FitKeys(TypedDict):
    schema: str
    model: FitModel
    workload: FitWorkload
    peak_bytes: Annotated[
        int, Json(minimum=0, description="one GPU's predicted peak device memory, CUDA context included")
    ]
    peak_phase: str
    terms: Annotated[TermBytes, Json(description="the bytes of each term at the peak phase")]
    term_details: List[TermDetail]
    phases: List[FitPhase]
    flops: FitFlops
    gpus: List[GpuVerdict]
    ways: List[WayToFit]
    max_batch: Annotated[
        Optional[int], Json(minimum=0, description="the largest --batch that fits limits_for; null: not even 1")
    ]
    max_seq: Annotated[Optional[int], Json(minimum=0)]
    notes: List[str]


class FitDocument(_FitKeys, total=False):
    """Will the model fit: one GPU's predicted peak memory, term by term and phase by phase, a verdict per
    GPU, the ways to fit and the largest batch and context; with --measure, the run beside it."""

    envdoctor_version: str
    created_at: str
    peak_low_bytes: Count
    peak_high_bytes: Count
    activation_detail: Annotated[
        Dict[str, List[SavedTensor]], Json(description="per kind of layer, the tensors it keeps for backward")
    ]
    ways_for: Optional[str]
    limits_for: Optional[str]
    limits_with: Annotated[
        str,
        Json(
            description="flags max_batch and max_seq assume beyond those given "
            "(--dtype fp16 where limits_for cannot run bf16)"
        ),
    ]
    measurement: MeasurementSection
    summary: FitSummary


def gib(n: float) -> str:
    return format_bytes(n, places=2, unit="GiB")


def _workload_line(w: Workload) -> str:
    parts: list[str] = []
    if w.train:
        parts.append(f"training, batch {w.batch} x {w.seq} tokens")
    else:
        parts.append(
            f"inference, batch {w.batch}, {w.seq}-token prompt"
            + (f" + {w.new_tokens} new tokens" if w.new_tokens else "")
        )
    parts.append(f"{w.dtype} weights" + (f" under autocast {w.amp}" if w.amp else ""))
    if w.quant:
        parts.append(f"{w.quant} quantised base")
    if w.train:
        opt = {
            "adamw": "AdamW (fused)",
            "adamw_foreach": "AdamW (foreach)",
            "adamw8bit": "8-bit AdamW",
            "sgd": "SGD with momentum",
            "adafactor": "Adafactor",
        }[w.optimizer]
        parts.append(opt)
        if w.lora_rank:
            parts.append(f"LoRA r={w.lora_rank}")
        if w.grad_checkpointing:
            parts.append("gradient checkpointing")
        parts.append(
            "custom loop (outputs.logits kept through backward)"
            if w.loop == "custom"
            else "HF Trainer loop (logits freed before backward)"
        )
        if w.pp > 1:
            parts.append(f"pipeline over {w.pp} stages (1F1B, the fuller stage)")
        elif w.zero or w.gpus > 1:
            parts.append(f"ZeRO-{w.zero} over {w.gpus} GPUs" if w.zero else f"DDP over {w.gpus} GPUs")
    elif w.tp > 1:
        parts.append(f"tensor parallel over {w.tp} GPUs (one GPU's share)")
    elif w.device_map:
        parts.append(f'device_map="auto" over {w.gpus} GPUs (the fullest GPU)')
    parts.append(f"{w.attention} attention")
    if w.alloc_conf:
        parts.append(f"PYTORCH_CUDA_ALLOC_CONF={w.alloc_conf}")
    return ", ".join(parts)


def render_fit_text(report: FitReport, list_ways: bool = True, judged: str = "") -> str:
    est = report.estimate
    spec, w = est.spec, est.workload
    trained = (
        f", {est.params_trainable / 1e6:.1f}M trained" if w.train and est.params_trainable != est.params_total else ""
    )
    lines = [f"envdoctor fit {spec.name} ({spec.architecture}, {est.params_total / 1e9:.2f}B parameters{trained})"]
    if spec.source and spec.source != spec.name:
        lines.append(f"  from {spec.source}")
    lines += [
        "  " + _workload_line(w),
        "",
        f"Peak per GPU: {gib(est.peak_bytes)} (at the {est.peak_phase}); "
        f"with the allocator's{' and NCCL' + chr(39) + 's' if est.term('nccl').bytes else ''} band "
        f"{gib(est.peak_low_bytes)} to {gib(est.peak_high_bytes)}, "
        "verdicts use the upper edge",
    ]
    width = max(len(_LABELS[t.name]) for t in est.terms)
    for t in est.terms:
        lines.append(f"  {_LABELS[t.name]:<{width}}  {gib(t.bytes):>11}  {t.formula}")
    others = [p for p in est.phases if p.name != est.peak_phase]
    if others:
        lines.append("  other moments: " + ", ".join(f"{p.name} {gib(p.bytes)}" for p in others))
    f = est.flops
    unit = "per training token" if w.train else "per token (forward)"
    lines.append(
        f"  FLOPs {unit}: {f.per_token / 1e9:.1f} G ({f.per_token_causal / 1e9:.1f} G counting causal "
        f"attention as half); per step of {f.tokens_per_step} tokens: {f.per_step / 1e12:.1f} TFLOP"
    )
    if report.verdicts:
        lines += ["", "GPU verdicts:"]
        name_w = max(len(v.gpu.name) for v in report.verdicts)
        if judged:
            lines.append("  " + judged)
        for v in report.verdicts:
            if v.problem:
                state = f"cannot run it: {v.problem}"
            else:
                state = f"fits, {gib(v.spare_bytes)} spare" if v.fits else f"does not fit by {gib(-v.spare_bytes)}"
                if v.tight:
                    state += ", tight"
            lines.append(f"  {v.gpu.name:<{name_w}}  {gib(v.gpu.total_bytes):>11} usable  {state}")
            lines.append(f"  {'':<{name_w}}  {'':>11} ({v.gpu.source})")
            if v.note:
                lines.append(f"  {'':<{name_w}}  {'':>11} {v.note}")
            if v.tight:
                lines.append(f"  {'':<{name_w}}  {'':>11} {v.tight}")
    else:
        lines += [
            "",
            "No GPU given: add --gpu NAME (from the table) or --memory SIZE for a verdict."
            + (f" {judged}" if judged else ""),
        ]
    if list_ways and report.ways and report.ways_for:
        lines += ["", f"Ways to fit {report.ways_for.name} ({gib(report.ways_for.total_bytes)}):"]
        shown = [x.flags + (f" (without {', '.join(x.without)})" if x.without else "") for x in report.ways]
        flag_w = max(len(f) for f in shown)
        for x, flags in zip(report.ways, shown):
            state = "fits" if x.fits else "still too big"
            lines.append(f"  {flags:<{flag_w}}  {gib(x.peak_bytes):>11}  {state}: {x.label}")
    if report.limit_gpu is not None:
        g = report.limit_gpu
        mb = "none (not even 1)" if report.max_batch is None else str(report.max_batch)
        ms = "none" if report.max_seq is None else str(report.max_seq)
        if report.max_seq is not None and spec.max_positions and report.max_seq == spec.max_positions - w.new_tokens:
            ms += f" (the model's {spec.max_positions} positions)"
        given = (
            f"with {report.limits_with} and the other options as given"
            if report.limits_with
            else "with the other options as given"
        )
        lines.append(f"On {g.name} ({gib(g.total_bytes)}), {given}: largest --batch {mb}, longest --seq {ms}")
    if est.notes:
        lines += [""] + [f"note: {n}" for n in est.notes]
    return "\n".join(lines) + "\n"


def _term_data(t: Term) -> TermDetail:
    out: TermDetail = {"name": t.name, "bytes": t.bytes, "formula": t.formula, "inputs": dict(t.inputs)}
    if t.note:
        out["note"] = t.note
    return out


def fit_document(report: FitReport, measurement: Optional[MeasurementSection] = None) -> FitDocument:
    """``envdoctor.fit/1``; ``measurement`` (from :func:`measurement_data`) is added under its key when given."""
    doc = _fit_document(report)
    if measurement is not None:
        doc["measurement"] = measurement
    return doc


def _fit_document(report: FitReport) -> FitDocument:
    est = report.estimate
    spec, w = est.spec, est.workload
    f = est.flops
    model: FitModel = {
        "name": spec.name,
        "architecture": spec.architecture,
        "family": spec.family,
        "source": spec.source,
        "params_total": est.params_total,
        "params_trainable": est.params_trainable,
        "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate,
        "layers": spec.layers,
        "decoder_layers": spec.decoder_layers,
        "heads": spec.heads,
        "kv_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab,
        "tie_word_embeddings": spec.tie_embeddings,
        "experts": spec.experts,
        "experts_per_token": spec.experts_per_token,
    }
    workload: FitWorkload = {
        "mode": w.mode,
        "batch": w.batch,
        "seq": w.seq,
        "new_tokens": w.new_tokens,
        "dtype": w.dtype,
        "amp": w.amp,
        "quant": w.quant,
        "kv_dtype": w.kv_dtype,
        "optimizer": w.optimizer,
        "grad_checkpointing": w.grad_checkpointing,
        "lora_rank": w.lora_rank,
        "lora_targets": list(w.lora_targets),
        "zero": w.zero,
        "gpus": w.gpus,
        "attention": w.attention,
        "loop": w.loop,
        "alloc_conf": w.alloc_conf or None,
        "tp": w.tp,
        "ddp": w.ddp,
        "device_map": "auto" if w.device_map else None,
        "pp": w.pp,
    }
    phases: List[FitPhase] = [
        {
            "name": p.name,
            "bytes": p.bytes,
            "terms": {t.name: t.bytes for t in p.terms},
            "term_details": [_term_data(t) for t in p.terms],
        }
        for p in est.phases
    ]
    flops: FitFlops = {
        "convention": f.convention,
        "n_matmul_params": f.n_matmul,
        "n_params_with_embeddings": f.n_all,
        "per_token": f.per_token,
        "per_token_causal": f.per_token_causal,
        "per_step": f.per_step,
        "per_step_causal": f.per_step_causal,
        "tokens_per_step": f.tokens_per_step,
    }
    gpus: List[GpuVerdict] = [
        {
            "name": v.gpu.name,
            "total_bytes": v.gpu.total_bytes,
            "source": v.gpu.source,
            "fits": v.fits,
            "spare_bytes": v.spare_bytes,
            "cc": v.gpu.cc,
            "problem": v.problem,
            "note": v.note,
            "tight": v.tight,
        }
        for v in report.verdicts
    ]
    ways: List[WayToFit] = [
        {"label": x.label, "flags": x.flags, "peak_bytes": x.peak_bytes, "fits": x.fits, "without": list(x.without)}
        for x in report.ways
    ]
    saved: Dict[str, List[SavedTensor]] = {
        kind: [{"tensor": x.name, "bytes_per_token": x.bytes_per_token, "kept_by": list(x.savers)} for x in tensors]
        for kind, tensors in est.activation_detail
    }
    return {
        "schema": SCHEMA,
        "model": model,
        "workload": workload,
        "peak_bytes": est.peak_bytes,
        "peak_low_bytes": est.peak_low_bytes,
        "peak_high_bytes": est.peak_high_bytes,
        "peak_phase": est.peak_phase,
        "terms": {t.name: t.bytes for t in est.terms},
        "term_details": [_term_data(t) for t in est.terms],
        "activation_detail": saved,
        "phases": phases,
        "flops": flops,
        "gpus": gpus,
        "ways_for": report.ways_for.name if report.ways_for else None,
        "ways": ways,
        "max_batch": report.max_batch,
        "max_seq": report.max_seq,
        "limits_for": report.limit_gpu.name if report.limit_gpu else None,
        "limits_with": report.limits_with,
        "notes": list(est.notes),
    }


# --- --measure ---------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:+.1f}%"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return format_bytes(n, places=2, unit="GiB" if abs(n) >= GIB else "MiB")


def _rate(tflops: float) -> str:
    return f"{tflops:.1f} TFLOP/s" if tflops >= 1 else f"{tflops * 1000:.2f} GFLOP/s"


def _state_line(m: Measurement) -> str:
    if m.status == "measured":
        return ""
    if m.status == "oom":
        return f"  out of memory during {m.oom_phase or 'the run'}: {m.message or ''}".rstrip()
    words = {
        "unavailable": "not measured",
        "failed": "the measurement failed",
        "stopped": "stopped",
        "no_gpu": "no GPU",
        "no_torch": "no torch",
    }
    return f"  {words.get(m.status, m.status)}: {m.message or ''}".rstrip()


def render_measurement_text(m: Measurement, cmp: Comparison | None, findings: tuple[Finding, ...]) -> str:
    """The ``--measure`` section: the estimate beside the measurement, the time, the MFU, the findings."""
    if m.cpu:
        head = (
            "Measured on the CPU (a tiny config, clearly not a GPU: live tensor bytes, no allocator reserve "
            "or CUDA context)"
        )
    elif m.device_name:
        head = (
            f"Measured on {m.device_name} (GPU {m.device_index if m.device_index is not None else 0}"
            + (f", {gib(m.device_total_bytes)}" if m.device_total_bytes else "")
            + ")"
        )
    else:
        head = "Measurement"
    lib = [f"torch {m.torch_version}"] if m.torch_version else []
    lib += [f"{k} {v}" for k, v in m.versions if k in ("transformers", "peft", "bitsandbytes")]
    if m.builder:
        lib.append(
            "built with transformers"
            if m.builder == "transformers"
            else "built as envdoctor's reference decoder (no transformers)"
        )
    lines = ["", head + (", " + ", ".join(lib) if lib else "") + (", random weights" if m.builder else "")]
    state = _state_line(m)
    if state:
        lines.append(state)
    if cmp is not None:
        rows = [cmp.peak, *cmp.rows, *cmp.phases]
        width = max(len(r.label) for r in rows)
        lines.append(f"  {'':<{width}}  {'estimate':>11}  {'measured':>11}  error")
        for r in rows:
            lines.append(f"  {r.label:<{width}}  {_size(r.estimate):>11}  {_size(r.measured):>11}  {_pct(r.error)}")
        if cmp.error is not None:
            verdict = "within" if cmp.within_target else "outside"
            lines.append(
                f"  the estimate's error {_pct(cmp.error)} of the measured peak: {verdict} its target "
                f"({TARGET_UNDER * 100:+.0f}% to {TARGET_OVER * 100:+.0f}%)"
            )
    if m.context_how:
        lines.append(f"  context = {m.context_how}")
    if m.step_s:
        times = f" (median of {len(m.step_times)})" if len(m.step_times) > 1 else ""
        what = "step" if m.phases and any(p.name == "optimizer step" for p in m.phases) else "call"
        rate = f", {m.tokens_per_s:,.0f} tokens/s" if m.tokens_per_s else ""
        loss = f", loss {m.loss:.3f}" if m.loss is not None else ""
        lines.append(f"  {what} {m.step_s:.4g} s{times}{rate}{loss}")
    mfu = cmp.mfu if cmp is not None else None
    if mfu is not None:
        parts = []
        if mfu.mfu_datasheet is not None:
            parts.append(
                f"{mfu.mfu_datasheet * 100:.1f}% of the datasheet {mfu.dtype} {mfu.datasheet_tflops:.1f} "
                f"TFLOP/s" + (" (unconfirmed)" if mfu.datasheet_unconfirmed else "")
            )
        if mfu.mfu_matmul is not None:
            parts.append(
                f"{mfu.mfu_matmul * 100:.1f}% of the {mfu.dtype} matmul measured now "
                f"({_rate(mfu.matmul_tflops or 0)}, n={mfu.matmul_n})"
            )
        causal = [f"{x * 100:.1f}%" for x in (mfu.mfu_datasheet_causal, mfu.mfu_matmul_causal) if x is not None]
        lines.append(
            f"  model FLOPs {_rate(mfu.achieved_tflops)}"
            + (": " + ", ".join(parts) if parts else "")
            + (f"; counting causal attention as half: {' / '.join(causal)}" if causal else "")
        )
        lines.append("  MFU convention: " + mfu.convention)
    elif m.matmul is not None and m.matmul.status != "ok":
        mm = m.matmul
        lines.append(f"  matmul peak {mm.dtype} n={mm.n}: {mm.status} {mm.error or ''}".rstrip())
    lines += [f"  note: {n}" for n in m.notes]
    for f in findings:
        lines.append(f"{f.code} {f.severity}: {f.title}")
        lines += [f"  {e}" for e in f.evidence]
    return "\n".join(lines) + "\n"


def _row_data(r: Row) -> ComparedRow:
    out: ComparedRow = {
        "name": r.name,
        "label": r.label,
        "estimate": r.estimate,
        "measured": r.measured,
        "error": r.error,
    }
    if r.note:
        out["note"] = r.note
    return out


def measurement_data(m: Measurement, cmp: Comparison | None, findings: tuple[Finding, ...]) -> MeasurementSection:
    """The ``measurement`` key of ``envdoctor.fit/1``."""
    comparison: Optional[Compared] = None
    if cmp is not None:
        comparison = {
            "basis": cmp.basis,
            "error": cmp.error,
            "within_target": cmp.within_target,
            "target": {"under": TARGET_UNDER, "over": TARGET_OVER},
            "estimate_fits_device": cmp.estimate_fits_device,
            "peak": _row_data(cmp.peak),
            "rows": [_row_data(r) for r in cmp.rows],
            "phases": [_row_data(r) for r in cmp.phases],
        }
    return {
        "status": m.status,
        "message": m.message,
        "device": {
            "kind": m.device_kind,
            "name": m.device_name,
            "index": m.device_index,
            "uuid": m.device_uuid,
            "total_bytes": m.device_total_bytes,
        },
        "builder": m.builder,
        "python": m.python,
        "torch_version": m.torch_version,
        "versions": dict(m.versions),
        "tf32": m.tf32,
        "peak_bytes": m.peak_bytes,
        "peak_basis": m.peak_basis,
        "max_allocated": m.max_allocated,
        "max_reserved": m.max_reserved,
        "context_bytes": m.context_bytes,
        "context_how": m.context_how,
        "context_init_bytes": m.context_init_bytes,
        "other_bytes": m.other_bytes,
        "phases": [to_data(p) for p in m.phases],
        "terms": dict(m.terms),
        "oom_phase": m.oom_phase,
        "step_s": m.step_s,
        "step_times": list(m.step_times),
        "tokens_per_step": m.tokens_per_step,
        "tokens_per_s": m.tokens_per_s,
        "loss": m.loss,
        "params": m.params,
        "trainable_params": m.trainable_params,
        "matmul": to_data(m.matmul) if m.matmul is not None else None,
        "comparison": comparison,
        "mfu": to_data(cmp.mfu) if cmp is not None and cmp.mfu is not None else None,
        "findings": [to_data(f) for f in findings],
        "alloc_conf": m.alloc_conf,
        "notes": list(m.notes),
        "seconds": m.seconds,
    }

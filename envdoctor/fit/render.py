"""``envdoctor fit`` for people (text, not a stable interface) and for scripts (``envdoctor.fit/1``).

The JSON document holds at least ``peak_bytes`` (one GPU's predicted peak, context included),
``terms`` (bytes per term at the peak) and ``term_details`` (each term's formula and inputs).
"""

from __future__ import annotations

from typing import Any

from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.fit.analysis import TARGET_OVER, TARGET_UNDER, Comparison, Row
from envdoctor.fit.estimate import Term
from envdoctor.fit.facts import Measurement
from envdoctor.fit.verdict import FitReport
from envdoctor.fit.workload import Workload
from envdoctor.units import format_bytes

SCHEMA = "envdoctor.fit/1"
GIB = 2**30

_LABELS = {
    "weights": "weights", "gradients": "gradients", "optimizer": "optimizer states",
    "optimizer_step": "optimizer step temporaries", "activations": "activations",
    "layer_working": "layer working set", "logits": "logits and loss",
    "held_logits": "logits the loop holds", "kv_cache": "KV cache",
    "autocast_copies": "autocast weight copies", "zero_gathered": "ZeRO-3 gathered layers",
    "ddp_buckets": "DDP gradient buckets", "build_copy": "tied head before tying (build)",
    "context": "CUDA context + cuBLAS", "allocator_reserve": "allocator reserve",
}


def gib(n: float) -> str:
    return format_bytes(n, places=2, unit="GiB")


def _workload_line(w: Workload) -> str:
    parts: list[str] = []
    if w.train:
        parts.append(f"training, batch {w.batch} x {w.seq} tokens")
    else:
        parts.append(f"inference, batch {w.batch}, {w.seq}-token prompt"
                     + (f" + {w.new_tokens} new tokens" if w.new_tokens else ""))
    parts.append(f"{w.dtype} weights" + (f" under autocast {w.amp}" if w.amp else ""))
    if w.quant:
        parts.append(f"{w.quant} quantised base")
    if w.train:
        opt = {"adamw": "AdamW (fused)", "adamw_foreach": "AdamW (foreach)", "adamw8bit": "8-bit AdamW",
               "sgd": "SGD with momentum", "adafactor": "Adafactor"}[w.optimizer]
        parts.append(opt)
        if w.lora_rank:
            parts.append(f"LoRA r={w.lora_rank}")
        if w.grad_checkpointing:
            parts.append("gradient checkpointing")
        parts.append("custom loop (outputs.logits kept through backward)" if w.loop == "custom"
                     else "HF Trainer loop (logits freed before backward)")
        if w.pp > 1:
            parts.append(f"pipeline over {w.pp} stages (1F1B, the fuller stage)")
        elif w.zero or w.gpus > 1:
            parts.append(f"ZeRO-{w.zero} over {w.gpus} GPUs" if w.zero else f"DDP over {w.gpus} GPUs")
    elif w.tp > 1:
        parts.append(f"tensor parallel over {w.tp} GPUs (one GPU's share)")
    elif w.device_map:
        parts.append(f"device_map=\"auto\" over {w.gpus} GPUs (the fullest GPU)")
    parts.append(f"{w.attention} attention")
    if w.alloc_conf:
        parts.append(f"PYTORCH_CUDA_ALLOC_CONF={w.alloc_conf}")
    return ", ".join(parts)


def render_fit_text(report: FitReport, list_ways: bool = True, judged: str = "") -> str:
    est = report.estimate
    spec, w = est.spec, est.workload
    trained = (f", {est.params_trainable / 1e6:.1f}M trained"
               if w.train and est.params_trainable != est.params_total else "")
    lines = [f"envdoctor fit {spec.name} ({spec.architecture}, {est.params_total / 1e9:.2f}B parameters{trained})"]
    if spec.source and spec.source != spec.name:
        lines.append(f"  from {spec.source}")
    lines += ["  " + _workload_line(w), "", f"Peak per GPU: {gib(est.peak_bytes)} (at the {est.peak_phase}); "
              f"with the allocator's band {gib(est.peak_low_bytes)} to {gib(est.peak_high_bytes)}, "
              "verdicts use the upper edge"]
    width = max(len(_LABELS[t.name]) for t in est.terms)
    for t in est.terms:
        lines.append(f"  {_LABELS[t.name]:<{width}}  {gib(t.bytes):>11}  {t.formula}")
    others = [p for p in est.phases if p.name != est.peak_phase]
    if others:
        lines.append("  other moments: " + ", ".join(f"{p.name} {gib(p.bytes)}" for p in others))
    f = est.flops
    unit = "per training token" if w.train else "per token (forward)"
    lines.append(f"  FLOPs {unit}: {f.per_token / 1e9:.1f} G ({f.per_token_causal / 1e9:.1f} G counting causal "
                 f"attention as half); per step of {f.tokens_per_step} tokens: {f.per_step / 1e12:.1f} TFLOP")
    if report.verdicts:
        lines += ["", "GPU verdicts:"]
        name_w = max(len(v.gpu.name) for v in report.verdicts)
        if judged:
            lines.append("  " + judged)
        for v in report.verdicts:
            if v.problem:
                state = f"cannot run it: {v.problem}"
            else:
                state = (f"fits, {gib(v.spare_bytes)} spare" if v.fits else f"does not fit by {gib(-v.spare_bytes)}")
            lines.append(f"  {v.gpu.name:<{name_w}}  {gib(v.gpu.total_bytes):>11} usable  {state}")
            lines.append(f"  {'':<{name_w}}  {'':>11} ({v.gpu.source})")
    else:
        lines += ["", "No GPU given: add --gpu NAME (from the table) or --memory SIZE for a verdict."
                  + (f" {judged}" if judged else "")]
    if list_ways and report.ways and report.ways_for:
        lines += ["", f"Ways to fit {report.ways_for.name} ({gib(report.ways_for.total_bytes)}):"]
        flag_w = max(len(x.flags) for x in report.ways)
        for x in report.ways:
            state = "fits" if x.fits else "still too big"
            lines.append(f"  {x.flags:<{flag_w}}  {gib(x.peak_bytes):>11}  {state}: {x.label}")
    if report.limit_gpu is not None:
        g = report.limit_gpu
        mb = "none (not even 1)" if report.max_batch is None else str(report.max_batch)
        ms = "none" if report.max_seq is None else str(report.max_seq)
        lines.append(f"On {g.name} ({gib(g.total_bytes)}), with the other options as given: largest --batch "
                     f"{mb}, longest --seq {ms}")
    if est.notes:
        lines += [""] + [f"note: {n}" for n in est.notes]
    return "\n".join(lines) + "\n"


def _term_data(t: Term) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name, "bytes": t.bytes, "formula": t.formula, "inputs": dict(t.inputs)}
    if t.note:
        out["note"] = t.note
    return out


def fit_document(report: FitReport, model_extra: dict[str, Any] | None = None,
                 measurement: dict[str, Any] | None = None) -> dict[str, Any]:
    """``envdoctor.fit/1``; ``measurement`` (from :func:`measurement_data`) is added under its key when given."""
    doc = _fit_document(report, model_extra)
    if measurement is not None:
        doc["measurement"] = measurement
    return doc


def _fit_document(report: FitReport, model_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    est = report.estimate
    spec, w = est.spec, est.workload
    f = est.flops
    model: dict[str, Any] = {
        "name": spec.name, "architecture": spec.architecture, "family": spec.family, "source": spec.source,
        "params_total": est.params_total, "params_trainable": est.params_trainable, "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate, "layers": spec.layers, "decoder_layers": spec.decoder_layers,
        "heads": spec.heads, "kv_heads": spec.kv_heads, "head_dim": spec.head_dim, "vocab_size": spec.vocab,
        "tie_word_embeddings": spec.tie_embeddings, "experts": spec.experts,
        "experts_per_token": spec.experts_per_token,
    }
    model.update(model_extra or {})
    return {
        "schema": SCHEMA,
        "model": model,
        "workload": {"mode": w.mode, "batch": w.batch, "seq": w.seq, "new_tokens": w.new_tokens, "dtype": w.dtype,
                     "amp": w.amp, "quant": w.quant, "kv_dtype": w.kv_dtype, "optimizer": w.optimizer,
                     "grad_checkpointing": w.grad_checkpointing, "lora_rank": w.lora_rank,
                     "lora_targets": list(w.lora_targets), "zero": w.zero, "gpus": w.gpus, "attention": w.attention,
                     "loop": w.loop, "alloc_conf": w.alloc_conf or None, "tp": w.tp, "ddp": w.ddp,
                     "device_map": "auto" if w.device_map else None, "pp": w.pp},
        "peak_bytes": est.peak_bytes,
        "peak_low_bytes": est.peak_low_bytes,
        "peak_high_bytes": est.peak_high_bytes,
        "peak_phase": est.peak_phase,
        "terms": {t.name: t.bytes for t in est.terms},
        "term_details": [_term_data(t) for t in est.terms],
        "activation_detail": {kind: [{"tensor": x.name, "bytes_per_token": x.bytes_per_token, "kept_by": list(x.savers)}
                                     for x in saved] for kind, saved in est.activation_detail},
        "phases": [{"name": p.name, "bytes": p.bytes, "terms": {t.name: t.bytes for t in p.terms},
                    "term_details": [_term_data(t) for t in p.terms]} for p in est.phases],
        "flops": {"convention": f.convention, "n_matmul_params": f.n_matmul, "n_params_with_embeddings": f.n_all,
                  "per_token": f.per_token, "per_token_causal": f.per_token_causal, "per_step": f.per_step,
                  "per_step_causal": f.per_step_causal, "tokens_per_step": f.tokens_per_step},
        "gpus": [{"name": v.gpu.name, "total_bytes": v.gpu.total_bytes, "source": v.gpu.source, "fits": v.fits,
                  "spare_bytes": v.spare_bytes, "cc": v.gpu.cc, "problem": v.problem} for v in report.verdicts],
        "ways_for": report.ways_for.name if report.ways_for else None,
        "ways": [{"label": x.label, "flags": x.flags, "peak_bytes": x.peak_bytes, "fits": x.fits} for x in report.ways],
        "max_batch": report.max_batch,
        "max_seq": report.max_seq,
        "limits_for": report.limit_gpu.name if report.limit_gpu else None,
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
    words = {"unavailable": "not measured", "failed": "the measurement failed", "stopped": "stopped",
             "no_gpu": "no GPU", "no_torch": "no torch"}
    return f"  {words.get(m.status, m.status)}: {m.message or ''}".rstrip()


def render_measurement_text(m: Measurement, cmp: Comparison | None, findings: tuple[Finding, ...]) -> str:
    """The ``--measure`` section: the estimate beside the measurement, the time, the MFU, the findings."""
    if m.cpu:
        head = ("Measured on the CPU (a tiny config, clearly not a GPU: live tensor bytes, no allocator reserve "
                "or CUDA context)")
    elif m.device_name:
        head = (f"Measured on {m.device_name} (GPU {m.device_index if m.device_index is not None else 0}"
                + (f", {gib(m.device_total_bytes)}" if m.device_total_bytes else "") + ")")
    else:
        head = "Measurement"
    lib = [f"torch {m.torch_version}"] if m.torch_version else []
    lib += [f"{k} {v}" for k, v in m.versions if k in ("transformers", "peft", "bitsandbytes")]
    if m.builder:
        lib.append("built with transformers" if m.builder == "transformers"
                   else "built as envdoctor's reference decoder (no transformers)")
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
            lines.append(f"  the estimate's error {_pct(cmp.error)} of the measured peak: {verdict} its target "
                         f"({TARGET_UNDER * 100:+.0f}% to {TARGET_OVER * 100:+.0f}%)")
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
            parts.append(f"{mfu.mfu_datasheet * 100:.1f}% of the datasheet {mfu.dtype} {mfu.datasheet_tflops:.1f} "
                         f"TFLOP/s" + (" (unconfirmed)" if mfu.datasheet_unconfirmed else ""))
        if mfu.mfu_matmul is not None:
            parts.append(f"{mfu.mfu_matmul * 100:.1f}% of the {mfu.dtype} matmul measured now "
                         f"({_rate(mfu.matmul_tflops or 0)}, n={mfu.matmul_n})")
        causal = [f"{x * 100:.1f}%" for x in (mfu.mfu_datasheet_causal, mfu.mfu_matmul_causal) if x is not None]
        lines.append(f"  model FLOPs {_rate(mfu.achieved_tflops)}" + (": " + ", ".join(parts) if parts else "")
                     + (f"; counting causal attention as half: {' / '.join(causal)}" if causal else ""))
        lines.append("  MFU convention: " + mfu.convention)
    elif m.matmul is not None and m.matmul.status != "ok":
        mm = m.matmul
        lines.append(f"  matmul peak {mm.dtype} n={mm.n}: {mm.status} {mm.error or ''}".rstrip())
    lines += [f"  note: {n}" for n in m.notes]
    for f in findings:
        lines.append(f"{f.code} {f.severity}: {f.title}")
        lines += [f"  {e}" for e in f.evidence]
    return "\n".join(lines) + "\n"


def _row_data(r: Row) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r.name, "label": r.label, "estimate": r.estimate, "measured": r.measured,
                           "error": r.error}
    if r.note:
        out["note"] = r.note
    return out


def measurement_data(m: Measurement, cmp: Comparison | None, findings: tuple[Finding, ...]) -> dict[str, Any]:
    """The ``measurement`` key of ``envdoctor.fit/1``."""
    comparison = None
    if cmp is not None:
        comparison = {"basis": cmp.basis, "error": cmp.error, "within_target": cmp.within_target,
                      "target": {"under": TARGET_UNDER, "over": TARGET_OVER},
                      "estimate_fits_device": cmp.estimate_fits_device, "peak": _row_data(cmp.peak),
                      "rows": [_row_data(r) for r in cmp.rows], "phases": [_row_data(r) for r in cmp.phases]}
    return {
        "status": m.status, "message": m.message,
        "device": {"kind": m.device_kind, "name": m.device_name, "index": m.device_index, "uuid": m.device_uuid,
                   "total_bytes": m.device_total_bytes},
        "builder": m.builder, "python": m.python, "torch_version": m.torch_version, "versions": dict(m.versions),
        "tf32": m.tf32, "peak_bytes": m.peak_bytes, "peak_basis": m.peak_basis, "max_allocated": m.max_allocated,
        "max_reserved": m.max_reserved, "context_bytes": m.context_bytes, "context_how": m.context_how,
        "context_init_bytes": m.context_init_bytes, "other_bytes": m.other_bytes,
        "phases": [to_data(p) for p in m.phases], "terms": dict(m.terms), "oom_phase": m.oom_phase,
        "step_s": m.step_s, "step_times": list(m.step_times), "tokens_per_step": m.tokens_per_step,
        "tokens_per_s": m.tokens_per_s, "loss": m.loss, "params": m.params, "trainable_params": m.trainable_params,
        "matmul": to_data(m.matmul) if m.matmul is not None else None,
        "comparison": comparison, "mfu": to_data(cmp.mfu) if cmp is not None and cmp.mfu is not None else None,
        "findings": [to_data(f) for f in findings], "alloc_conf": m.alloc_conf, "notes": list(m.notes),
        "seconds": m.seconds,
    }

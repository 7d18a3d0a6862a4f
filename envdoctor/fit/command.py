"""``envdoctor fit``: will this model fit on these GPUs, for inference or training.

Exit codes: 0 it fits every GPU given (or none was given); 1 it does not fit one of them (judged
at the allocator band's upper edge against the memory a process can allocate), a GPU cannot run
the dtype (bf16 below sm_80), or ``--measure`` gave an error finding (out of memory where the
estimate fits, a failed measurement);
2 usage or an unusable config (one line naming the field or the limit; ``--measure`` without a GPU
and without ``--cpu``, or without torch in the target: with ``--json``/``--html`` the document is
still printed, its ``measurement.status`` ``no_gpu``/``no_torch`` and its summary's exit code 2,
and the one line follows on stderr); 3 envdoctor itself failed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import click

from envdoctor import checks
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    AsciiInt,
    check_formats,
    debug_option,
    emit_page,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    seconds,
    suppress_option,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envdoctor.fit.render import MeasurementSection
    from envdoctor.fit.verdict import Gpu

_DTYPES = ("fp32", "bf16", "fp16")
_OPTIMIZERS = ("adamw", "adamw-foreach", "adamw8bit", "sgd", "adafactor")


#: options of PYTORCH_CUDA_ALLOC_CONF whose value is one number (c10's CUDAAllocatorConfig)
_ALLOC_NUMBERS = (
    "max_split_size_mb",
    "garbage_collection_threshold",
    "pinned_num_register_threads",
    "pinned_reserve_segment_size_mb",
    "per_process_memory_fraction",
    "max_non_split_rounding_mb",
)


#: of those, the ones torch reads as a whole number (c10's ConfigTokenizer::toSizeT, std::stoull):
#: ``1e3`` or ``1_000`` would be read as 1
_ALLOC_WHOLE = (
    "max_split_size_mb",
    "pinned_num_register_threads",
    "pinned_reserve_segment_size_mb",
    "max_non_split_rounding_mb",
)


def memory_fraction(conf: str) -> float:
    """``per_process_memory_fraction`` of a valid allocator setting (the last one given, as torch
    keeps it), 1.0 without one: the share of each GPU the process may allocate.

    >>> memory_fraction("expandable_segments:True,per_process_memory_fraction:0.5")
    0.5
    >>> memory_fraction("")
    1.0
    """
    found = 1.0
    for item in _alloc_items(conf):
        key, _, value = (x.strip() for x in item.partition(":"))
        if key == "per_process_memory_fraction":
            found = float(value)
    return found


#: options torch reads as a boolean: exactly ``True`` or ``False`` (c10's ConfigTokenizer::toBool,
#: pytorch/pytorch@0ac71663 c10/core/AllocatorConfig.h; ``true`` is refused at the first allocation)
_ALLOC_BOOLS = (
    "expandable_segments",
    "pinned_use_background_threads",
    "pinned_use_cuda_host_register",
    "release_lock_on_cudamalloc",
    "graph_capture_record_stream_reuse",
)
#: the allocator backends torch knows (CUDAAllocatorConfig's ``backend``)
_ALLOC_BACKENDS = ("native", "cudaMallocAsync")


def _alloc_items(conf: str) -> list[str]:
    """The ``key:value`` items of an allocator setting, split by commas outside brackets, stripped."""
    items, depth, part = [], 0, ""
    for c in conf:
        depth += (c == "[") - (c == "]")
        if c == "," and depth == 0:
            items.append(part)
            part = ""
        else:
            part += c
    items.append(part)
    return [i.strip() for i in items]


def alloc_conf_problem(conf: str) -> str:
    """What is wrong with a PYTORCH_CUDA_ALLOC_CONF string, or "" when nothing is; pure.

    The shape is judged (``key:value`` items split by commas, a bracketed list kept whole, a number
    where one is expected, ``True``/``False`` exactly where torch takes a boolean, the ranges torch
    checks: ``max_split_size_mb`` >= 20, ``garbage_collection_threshold`` in (0, 1),
    pytorch/pytorch@0ac71663 c10/core/AllocatorConfig.cpp), not an unknown key's name, which newer
    torch releases extend.

    >>> alloc_conf_problem("expandable_segments:True,max_split_size_mb:512")
    ''
    >>> alloc_conf_problem("max_split_size_mb:NaN")
    "max_split_size_mb takes a whole number of MiB (torch reads it with std::stoull), not 'NaN'"
    >>> alloc_conf_problem("expandable_segments:true")
    "expandable_segments takes True or False (torch's spelling), not 'true'"
    """
    for item in _alloc_items(conf):
        if not item:
            continue
        key, colon, value = (s.strip() for s in item.partition(":"))
        if not colon or not key or not value or not key.replace("_", "").isalnum():
            return f"{item!r} is not a key:value item like expandable_segments:True"
        if key in _ALLOC_WHOLE and not (value.isascii() and value.isdigit() and int(value) < 2**44):
            return f"{key} takes a whole number of MiB (torch reads it with std::stoull), not {value!r}"
        if key in _ALLOC_NUMBERS:
            try:
                number = float(value)
            except ValueError:
                number = float("nan")
            if not (number >= 0 and number != float("inf")):
                return f"{key} takes a number, not {value!r}"
            if key == "per_process_memory_fraction" and not 0 < number <= 1:
                return f"per_process_memory_fraction must be in (0, 1], not {value!r}"
            if key in ("max_split_size_mb", "max_non_split_rounding_mb") and number < 20:
                return f"{key} must be at least 20 (torch: 'too small, must be >= 20'), not {value!r}"
            if key == "garbage_collection_threshold" and not 0 < number < 1:
                return f"garbage_collection_threshold must be between 0.0 and 1.0 (exclusive), not {value!r}"
        if key in _ALLOC_BOOLS and value not in ("True", "False"):
            return f"{key} takes True or False (torch's spelling), not {value!r}"
        if key == "backend" and value not in _ALLOC_BACKENDS:
            return f"backend is native or cudaMallocAsync, not {value!r}"
    return ""


def alloc_conf_note(conf: str) -> str:
    """What the estimate does not model in a valid PYTORCH_CUDA_ALLOC_CONF, "" when nothing; pure.

    >>> alloc_conf_note("expandable_segments:True")
    ''
    >>> alloc_conf_note("backend:cudaMallocAsync")[:40]
    'backend:cudaMallocAsync: the reserve is '
    """
    keys = [i.partition(":")[0].strip() for i in _alloc_items(conf) if ":" in i]
    if "backend:cudaMallocAsync" in conf.replace(" ", ""):
        return (
            "backend:cudaMallocAsync: the reserve is a model of torch's native caching allocator; "
            "CUDA's own pool (cudaMallocAsync) is not modelled, so the band is not its band"
        )
    modelled = ("expandable_segments", "backend", "per_process_memory_fraction")
    other = [k for k in keys if k and k not in modelled and not k.startswith("pinned_")]
    if other:
        return f"{', '.join(sorted(set(other)))}: not modelled (the reserve is the default allocator's for these)"
    return ""


def _shared(gpus: Sequence[Gpu], share: float) -> list[Gpu]:
    """``gpus`` as a process capped at ``share`` of each (``per_process_memory_fraction``) sees them:
    torch refuses an allocation past that share; the same GPUs below 1.0 is not given."""
    if share >= 1:
        return list(gpus)
    return [
        dataclasses.replace(
            g, total_bytes=int(g.total_bytes * share), source=f"{g.source}; x {share:g} (per_process_memory_fraction)"
        )
        for g in gpus
    ]


def _fail(message: str) -> None:
    click.echo(f"envdoctor fit: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _gpus(names: tuple[str, ...], sizes: tuple[str, ...], ecc: str | None, local: bool) -> tuple[list, str]:
    """The GPUs to judge against and a line saying which memory figure was used: ``--gpu`` names
    from the table (their usable memory, data/fit.toml), ``--memory`` sizes, and with neither this
    machine's GPUs (NVML free memory) when NVML answers."""
    from envdoctor.fit.usable import load_usable, local_gpus, usable_gpu
    from envdoctor.fit.verdict import Gpu
    from envdoctor.table import load_table
    from envdoctor.units import parse_size

    out = []
    table = load_table()
    for name in names:
        if len(name) > 200:
            _fail(f"--gpu: a name of {len(name)} characters is no GPU's name (`envdoctor table gpu` lists them)")
        g = table.gpu(name)
        if g is None:
            _fail(
                f"--gpu {name[:80]!r}: not in the table (`envdoctor table gpu` lists them); "
                "--memory SIZE judges against any GPU, e.g. --memory 16GiB"
            )
            raise AssertionError  # unreachable; keeps mypy's flow analysis happy
        if not g.memory_gib:
            _fail(f"--gpu {name!r}: the table has no memory figure for {g.name}; give --memory")
        out.append(usable_gpu(g.name, g.memory_gib, g.cc, g.is_datacenter(), load_usable(), ecc))
    for size in sizes:
        try:
            out.append(
                Gpu(
                    f"--memory {size}",
                    parse_size(size),
                    "given: taken as what a process can allocate (torch's 'total capacity', below the datasheet)",
                )
            )
        except ValueError as exc:
            _fail(f"--memory: {exc}")
    if out or not local:
        return out, ""
    found, why = local_gpus()
    if not found:
        return [], f"(this machine: {why})" if why else ""
    return found, "Judged against this machine's GPUs (NVML free memory now; --gpu NAME or --memory SIZE for others)."


def _table_gpus() -> list:
    from envdoctor.fit.usable import load_usable, usable_gpu
    from envdoctor.table import load_table

    rows = load_usable()
    return [usable_gpu(g.name, g.memory_gib, g.cc, g.is_datacenter(), rows) for g in load_table().gpus if g.memory_gib]


@click.command("fit")
@click.argument("model", required=False)
@click.option("--infer", "mode", flag_value="infer", default=True, help="Inference with generate (the default).")
@click.option("--train", "mode", flag_value="train", help="One training step.")
@click.option("--batch", type=AsciiInt(), default=1, show_default=True, help="Sequences per GPU (the micro-batch).")
@click.option(
    "--seq",
    type=AsciiInt(),
    default=None,
    help="Tokens per sequence, the prompt for --infer (default 2048, or the model's learned positions).",
)
@click.option(
    "--new-tokens", type=AsciiInt(), default=None, help="Tokens to generate with --infer (default 256; 0 for encoders)."
)
@click.option(
    "--dtype",
    type=click.Choice(_DTYPES),
    default=None,
    help="The weights' dtype (default: the checkpoint's torch_dtype, as transformers 5 loads it).",
)
@click.option("--amp", type=click.Choice(("bf16", "fp16")), default=None, help="--train: fp32 weights under autocast.")
@click.option(
    "--quant",
    type=click.Choice(("int8", "int4")),
    default=None,
    help="bitsandbytes weights (int4: NF4 + double quantisation; with --train it needs --lora: QLoRA).",
)
@click.option(
    "--kv-dtype",
    type=click.Choice(("fp32", "bf16", "fp16", "int8")),
    default=None,
    help="--infer: the KV cache's dtype (default: the compute dtype).",
)
@click.option(
    "--optimizer",
    type=click.Choice(_OPTIMIZERS),
    default="adamw",
    show_default=True,
    help="adamw is fused (HF Trainer's default on torch >= 2.8); adamw-foreach is torch.optim.AdamW's own "
    "default (one more state-sized copy at the step).",
)
@click.option("--grad-checkpointing", is_flag=True, help="--train: recompute each layer in backward.")
@click.option(
    "--lora",
    "lora_rank",
    type=AsciiInt(),
    default=0,
    metavar="R",
    help="--train: LoRA adapters of rank R, base frozen.",
)
@click.option(
    "--lora-targets",
    default=None,
    metavar="NAMES",
    help="Comma-separated linears to adapt (default: every linear of the blocks).",
)
@click.option(
    "--zero", type=AsciiInt(), default=0, show_default=True, help="--train: ZeRO stage 0-3 (FSDP full shard = 3)."
)
@click.option(
    "--gpus",
    "n_gpus",
    type=AsciiInt(),
    default=1,
    show_default=True,
    help="GPUs the job spreads over; give a strategy: --ddp, --zero K / --fsdp, or --tp N.",
)
@click.option("--ddp", is_flag=True, help="--train: data parallel replicas over --gpus N (DDP's gradient buckets).")
@click.option("--fsdp", is_flag=True, help="--train: FSDP full shard over --gpus N (counted as ZeRO-3).")
@click.option(
    "--device-map",
    "device_map",
    type=click.Choice(("auto",)),
    default=None,
    help='--infer: from_pretrained(device_map="auto") over --gpus N (the fullest GPU is reported).',
)
@click.option(
    "--pp",
    type=AsciiInt(),
    default=1,
    show_default=True,
    help="--train: pipeline stages over N GPUs (1F1B; --batch is the micro-batch).",
)
@click.option(
    "--tp",
    type=AsciiInt(),
    default=1,
    show_default=True,
    help="--infer: tensor parallel over N GPUs (Megatron column/row splits; one GPU's share).",
)
@click.option("--attention", type=click.Choice(("sdpa", "eager")), default="sdpa", show_default=True)
@click.option(
    "--loop",
    type=click.Choice(("custom", "trainer")),
    default="custom",
    show_default=True,
    help="--train: custom keeps outputs.logits through backward (outputs = model(**batch); "
    "outputs.loss.backward(), the examples' loop); trainer frees them first (HF Trainer).",
)
@click.option(
    "--gpu", "gpu_names", multiple=True, metavar="NAME", help="Judge against this GPU from the table (repeatable)."
)
@click.option(
    "--memory",
    "sizes",
    multiple=True,
    metavar="SIZE",
    help="Judge against this much memory a process can allocate (torch's 'total capacity', below the "
    "datasheet's: an RTX 4090 gives 23.68GiB): 24GiB, 80GB (repeatable).",
)
@click.option(
    "--alloc-conf",
    default=None,
    metavar="CONF",
    help="PYTORCH_CUDA_ALLOC_CONF the job runs with (default: this shell's); expandable_segments:True "
    "changes the allocator reserve.",
)
@click.option(
    "--ecc",
    type=click.Choice(("on", "off")),
    default=None,
    help="--gpu: judge against the usable memory with ECC on or off where they differ (default: on).",
)
@click.option(
    "--local/--no-local",
    default=True,
    show_default=True,
    help="With no --gpu and no --memory, judge against this machine's GPUs (NVML free memory).",
)
@click.option(
    "--measure",
    is_flag=True,
    help="Also run it in the target Python on its first GPU (random weights, nothing downloaded) and "
    "print the measurement beside the estimate.",
)
@click.option("--cpu", is_flag=True, help="--measure on the CPU instead (tiny configs only; tensor bytes, labelled).")
@click.option(
    "--builder",
    type=click.Choice(("auto", "transformers", "reference")),
    default="auto",
    show_default=True,
    help="--measure: transformers' model, or envdoctor's plain-torch reference decoder "
    "(Llama-style decoders; auto: transformers where installed).",
)
@python_option
@click.option(
    "--timeout",
    type=seconds(1),
    default=None,
    metavar="SECONDS",
    help="--measure: seconds the measurement may take (default: from the model's size and FLOPs).",
)
@click.option("--list", "list_models", is_flag=True, help="List the bundled models and exit.")
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.fit/1").')
@html_options
@suppress_option
@debug_option
@guarded
def fit(
    model: str | None,
    mode: str,
    batch: int,
    seq: int | None,
    new_tokens: int | None,
    dtype: str | None,
    amp: str | None,
    quant: str | None,
    kv_dtype: str | None,
    optimizer: str,
    grad_checkpointing: bool,
    lora_rank: int,
    lora_targets: str | None,
    zero: int,
    n_gpus: int,
    ddp: bool,
    fsdp: bool,
    device_map: str | None,
    pp: int,
    tp: int,
    attention: str,
    loop: str,
    gpu_names: tuple[str, ...],
    sizes: tuple[str, ...],
    alloc_conf: str | None,
    ecc: str | None,
    local: bool,
    measure: bool,
    cpu: bool,
    builder: str,
    python: str | None,
    timeout: float | None,
    list_models: bool,
    as_json: bool,
    debug: bool,
    as_html: bool = False,
    html_output: Path | None = None,
    suppress: tuple[str, ...] = (),
) -> None:
    """Will MODEL fit: the peak memory per GPU, term by term, and what would make it fit.

    \b
    MODEL is a Hugging Face config.json, a directory holding one, or a bundled name (--list).
    Nothing is downloaded; no GPU is needed.
    \b
    envdoctor fit Llama-3.1-8B --gpu "RTX 4090"
    envdoctor fit ./config.json --train --batch 4 --seq 4096 --lora 16 --gpu H200
    envdoctor fit Qwen2.5-7B --train --dtype fp32 --amp bf16 --zero 3 --gpus 8 --memory 80GiB --json
    envdoctor fit Llama-3.2-1B --train --seq 4096 --measure      (runs it on this machine's GPU)
    """
    from envdoctor.documents import dumps, stamp
    from envdoctor.fit.config import ConfigError
    from envdoctor.fit.constants import load_constants
    from envdoctor.fit.estimate import lora_target_names
    from envdoctor.fit.models import bundled_models
    from envdoctor.fit.render import fit_document, render_fit_text
    from envdoctor.fit.resolve import resolve_model_config
    from envdoctor.fit.verdict import fit_report
    from envdoctor.fit.workload import Workload, default_dtype

    check_formats(json=as_json, html=as_html)
    if list_models:
        for m in bundled_models().models:
            flag = " (unconfirmed: " + ", ".join(m.unconfirmed_fields) + ")" if m.unconfirmed_fields else ""
            flag = " (unconfirmed)" if m.unconfirmed else flag
            click.echo(f"{m.name:26} {m.spec.architecture:28} {m.source}{flag}")
        sys.exit(EXIT_OK)
    if not model:
        _fail("give MODEL: a config.json, a directory holding one, or a bundled name (--list shows them)")
        return
    try:
        spec, raw = resolve_model_config(model)
    except ConfigError as exc:
        _fail(str(exc))
        return
    targets: tuple[str, ...] = ()
    if lora_targets:
        targets = tuple(t.strip() for t in lora_targets.split(",") if t.strip())
        known = lora_target_names(spec)
        bad = [t for t in targets if t not in known and not any(k.split(".")[-1] == t for k in known)]
        if bad:
            _fail(f"--lora-targets {bad[0]!r} is not a linear of {spec.name}'s blocks (known: {', '.join(known)})")
    if new_tokens is None:
        new_tokens = 0 if mode == "train" or spec.kind == "encoder" else 256
    if seq is None:
        seq = 2048
        if spec.traits.learned_positions and spec.max_positions:
            seq = min(seq, spec.max_positions - new_tokens)
    if alloc_conf is None:
        # torch reads PYTORCH_ALLOC_CONF first, then PYTORCH_CUDA_ALLOC_CONF (c10/core/AllocatorConfig.cpp)
        alloc_conf = os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
    if len(alloc_conf) > 1000 or any(not (c.isascii() and c.isprintable()) for c in alloc_conf):
        _fail("--alloc-conf (or PYTORCH_CUDA_ALLOC_CONF) is not a setting like expandable_segments:True")
    wrong = alloc_conf_problem(alloc_conf)
    if wrong:
        _fail(
            f"--alloc-conf (or PYTORCH_CUDA_ALLOC_CONF) {alloc_conf!r}: {wrong} "
            "(torch refuses it at the first CUDA allocation)"
        )
    if fsdp:
        if n_gpus < 2:
            _fail("--fsdp shards over --gpus N; give N of 2 or more")
        if zero not in (0, 3):
            _fail(f"--fsdp is ZeRO-3's layout (full shard); it does not go with --zero {zero}")
        zero = 3
    if tp > 1 and n_gpus == 1:
        n_gpus = tp
    if pp > 1 and n_gpus == 1:
        n_gpus = pp
    # the Choice options hold the Literal values Workload declares (Click types them as str)
    fields: dict[str, Any] = dict(
        mode=mode,
        batch=batch,
        seq=seq,
        new_tokens=new_tokens,
        dtype=dtype or ("fp32" if amp else default_dtype(spec)),
        amp=amp,
        quant=quant,
        kv_dtype=kv_dtype,
        optimizer=optimizer.replace("-", "_"),
        grad_checkpointing=grad_checkpointing,
        lora_rank=lora_rank,
        lora_targets=targets,
        zero=zero,
        gpus=n_gpus,
        attention=attention,
        loop=loop,
        alloc_conf=alloc_conf.strip(),
        ddp=ddp,
        tp=tp,
        device_map=device_map == "auto",
        pp=pp,
    )
    w = Workload(**fields)
    problems: list[str] = w.problems(spec)
    if problems:
        _fail(problems[0])
    if ecc and not gpu_names:
        _fail(
            f"--ecc {ecc} picks a --gpu NAME's usable figure; give --gpu (this machine's NVML figure "
            "and a --memory size already are what they are)"
        )
    if cpu and not measure:
        _fail("--cpu goes with --measure (it measures on the CPU)")
    if measure and (w.gpus > 1 or w.zero):
        what = (
            f"--tp {w.tp}"
            if w.tp > 1
            else f"--pp {w.pp}"
            if w.pp > 1
            else "--device-map auto"
            if w.device_map
            else f"--zero {w.zero}"
            if w.zero
            else "--ddp"
        )
        _fail(
            f"--measure runs on one GPU, so it cannot measure {what} over --gpus {w.gpus}; "
            "measure the one-GPU run (without --zero, --ddp, --tp and --gpus) and read the split estimate alone"
        )
    gpus, judged = _gpus(gpu_names, sizes, ecc, local)
    share = memory_fraction(w.alloc_conf)
    gpus = _shared(gpus, share)
    report = fit_report(spec, w, gpus, _shared(_table_gpus(), share), load_constants())
    unmodelled = alloc_conf_note(w.alloc_conf)
    if unmodelled:
        est = report.estimate
        report = dataclasses.replace(report, estimate=dataclasses.replace(est, notes=(*est.notes, unmodelled)))
    failed = any(not v.fits for v in report.verdicts)
    section: Optional[MeasurementSection] = None
    text, stopped = "", ""
    if measure:
        section, text, measured_error, stopped = _measure(spec, raw, report, cpu, builder, python, timeout, suppress)
        failed = failed or measured_error
    code = EXIT_USAGE if stopped else EXIT_ERRORS if failed else EXIT_OK
    if as_html:
        from envdoctor.fit.page import fit_page

        doc = stamp(fit_document(report, measurement=section), code)
        emit_page(fit_page(doc, machine_redactor()), html_output, "fit")
    elif as_json:
        click.echo(dumps(stamp(fit_document(report, measurement=section), code)))
    elif not stopped:
        click.echo(render_fit_text(report, judged=judged) + text, nl=False)
    if stopped:  # a measurement that could not start: its one line last (the document carries the 2)
        _fail(stopped)
    sys.exit(code)


def _measure(
    spec: Any,
    raw: dict,
    report: Any,
    cpu: bool,
    builder: str,
    python: str | None,
    timeout: float | None,
    suppress: tuple[str, ...] = (),
) -> tuple[MeasurementSection, str, bool, str]:
    """Run the measurement: (its document section, its text, whether a finding is an error, and the
    one line saying why it could not start, "" when it ran: no torch in the target, no GPU)."""
    from envdoctor.child import find_python
    from envdoctor.fit.analysis import compare
    from envdoctor.fit.host import cpu_problem, run_measure
    from envdoctor.fit.render import measurement_data, render_measurement_text
    from envdoctor.fit.rules import measure_findings
    from envdoctor.table import load_table

    est = report.estimate
    target, _ = find_python(python)
    if target is None:
        _fail(f"--python {python}: not found or not executable")
        raise AssertionError
    if cpu:
        problem = cpu_problem(est)
        if problem:
            _fail(problem)
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())

    def progress(event: dict) -> None:
        if event.get("kind") == "stage":
            text = f"fit --measure: {event.get('stage')}"
            sys.stderr.write(("\r\x1b[K" + text) if tty else text + "\n")
            sys.stderr.flush()

    m = run_measure(spec, raw, est, target, cpu=cpu, builder=builder, timeout=timeout, on_event=progress)
    if tty:
        sys.stderr.write("\r\x1b[K")
    stopped = ""
    if m.status == "no_torch":
        stopped = f"--measure: {m.message}"
    if m.status == "no_gpu":
        stopped = (
            f"--measure needs a GPU: {m.message}; add --cpu to measure a tiny config on the CPU (labelled as such)"
        )
    cmp = None
    if m.status in ("measured", "oom"):
        gpu_model = None
        if m.device_name and not m.cpu:
            try:
                gpu_model = load_table().gpu(m.device_name)
            except Exception:  # noqa: BLE001 - a broken table leaves the MFU without its datasheet peak
                gpu_model = None
        cmp = compare(est, m, gpu_model)
    findings = checks.split(measure_findings(est, m, cmp), suppress).shown
    return (
        measurement_data(m, cmp, findings),
        render_measurement_text(m, cmp, findings),
        any(f.severity == "error" for f in findings),
        stopped,
    )

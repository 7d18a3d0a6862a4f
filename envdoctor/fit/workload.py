"""What the user wants to run: the options of ``envdoctor fit`` as one frozen value, with limits.

>>> Workload(mode="train", batch=0).problems(None)
['--batch must be between 1 and 65536 (got 0)']
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from envdoctor.fit.spec import ModelSpec

Mode = Literal["train", "infer"]
Dtype = Literal["fp32", "bf16", "fp16"]
Amp = Literal["bf16", "fp16"]
Quant = Literal["int8", "int4"]
KvDtype = Literal["fp32", "bf16", "fp16", "int8"]
#: adamw: fused (HF Trainer's default on torch >= 2.8); adamw_foreach: torch.optim.AdamW's own default
Optimizer = Literal["adamw", "adamw_foreach", "adamw8bit", "sgd", "adafactor"]
Attention = Literal["sdpa", "eager"]
#: custom: ``outputs = model(**batch); loss = outputs.loss; loss.backward()`` (the examples' and
#: accelerate's loop) keeps ``outputs.logits`` through backward and into the next forward;
#: trainer: HF Trainer's ``compute_loss`` returns the loss only, so the logits are freed first
Loop = Literal["custom", "trainer"]

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}
TORCH_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

MAX_BATCH = 65536
MAX_SEQ = 1 << 20  # 1,048,576 tokens: the longest contexts of released models
MAX_GPUS = 4096
MAX_LORA_RANK = 4096
MAX_TP = 512


@dataclass(frozen=True)
class Workload:
    """``batch`` is per GPU (the micro-batch); ``seq`` the prompt or training length; ``gpus`` the
    data-parallel degree for ``zero`` (0: plain DDP when gpus > 1)."""

    mode: Mode = "train"
    batch: int = 1
    seq: int = 2048
    new_tokens: int = 0
    dtype: Dtype = "bf16"
    amp: Amp | None = None
    quant: Quant | None = None
    kv_dtype: KvDtype | None = None
    optimizer: Optimizer = "adamw"
    grad_checkpointing: bool = False
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()
    zero: int = 0
    gpus: int = 1
    attention: Attention = "sdpa"
    loop: Loop = "custom"
    #: PYTORCH_CUDA_ALLOC_CONF as the job will run (``expandable_segments:True`` changes the reserve)
    alloc_conf: str = ""
    #: the strategy over ``gpus``: ``ddp`` replicas, ``zero`` (FSDP full shard = ZeRO-3), or ``tp``
    #: tensor parallel (Megatron column/row splits; --infer only)
    ddp: bool = False
    tp: int = 1
    #: ``from_pretrained(device_map="auto")`` over ``gpus`` (accelerate's balanced split of the layers)
    device_map: bool = False
    #: pipeline stages (1F1B schedule, ``batch`` is the micro-batch; --train only)
    pp: int = 1

    def with_(self, **changes: object) -> Workload:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def train(self) -> bool:
        return self.mode == "train"

    def problems(self, spec: ModelSpec | None) -> list[str]:
        """Usage problems, one line each (empty: the workload can be estimated)."""
        out: list[str] = []
        for flag, value, lo, hi in (
            ("--batch", self.batch, 1, MAX_BATCH),
            ("--seq", self.seq, 1, MAX_SEQ),
            ("--new-tokens", self.new_tokens, 0, MAX_SEQ),
            ("--gpus", self.gpus, 1, MAX_GPUS),
            ("--zero", self.zero, 0, 3),
        ):
            if not lo <= value <= hi:
                out.append(f"{flag} must be between {lo} and {hi} (got {value})")
        if self.lora_rank and not 1 <= self.lora_rank <= MAX_LORA_RANK:
            out.append(f"--lora must be between 1 and {MAX_LORA_RANK} (got {self.lora_rank})")
        if self.train:
            if self.new_tokens:
                out.append("--new-tokens is for --infer (generation); training has no new tokens")
            if self.quant and not self.lora_rank:
                out.append("--quant in training needs --lora R (QLoRA: frozen quantised base, trained adapters)")
            if self.kv_dtype:
                out.append("--kv-dtype is for --infer (the KV cache)")
        else:
            for flag, on in (
                ("--lora", self.lora_rank),
                ("--zero", self.zero),
                ("--grad-checkpointing", self.grad_checkpointing),
                ("--amp", self.amp),
            ):
                if on:
                    out.append(f"{flag} is for --train")
            if self.optimizer != "adamw":
                out.append("--optimizer is for --train")
            if self.loop != "custom":
                out.append(f"--loop {self.loop} is for --train (the training loop's logits)")
        if self.zero and self.gpus < 2:
            out.append(f"--zero {self.zero} shards over --gpus N; give N of 2 or more")
        if not 1 <= self.tp <= MAX_TP:
            out.append(f"--tp must be between 1 and {MAX_TP} (got {self.tp})")
        strategies = [
            name
            for name, on in (
                ("--ddp", self.ddp),
                (f"--zero {self.zero}", self.zero),
                (f"--tp {self.tp}", self.tp > 1),
                ("--device-map auto", self.device_map),
                (f"--pp {self.pp}", self.pp > 1),
            )
            if on
        ]
        if self.gpus > 1 and not strategies:
            out.append(
                f"--gpus {self.gpus} needs a strategy: "
                + (
                    "--ddp (replicas), --zero 1|2|3 or --fsdp (sharded states; FSDP full shard is ZeRO-3), "
                    f"--pp {self.gpus} (pipeline stages) or --tp {self.gpus} (tensor parallel, --infer)"
                    if self.train
                    else f"--tp {self.gpus} (tensor parallel: each GPU holds 1/{self.gpus} of the weights and KV "
                    "cache) "
                    "or --device-map auto (accelerate's split of the layers)"
                )
            )
        if len(strategies) > 1:
            out.append(f"{' and '.join(strategies)}: give one strategy (combinations are not modelled)")
        if self.tp > 1:
            if self.train:
                out.append(
                    "--tp is modelled for --infer only (training with tensor parallel: not yet); "
                    "for training use --zero 3 / --fsdp or --ddp"
                )
            if self.gpus not in (1, self.tp):
                out.append(
                    f"--tp {self.tp} with --gpus {self.gpus}: data parallel over tensor-parallel groups "
                    "is not modelled; give --gpus {self.tp} or leave --gpus out".replace("{self.tp}", str(self.tp))
                )
        if not 1 <= self.pp <= MAX_TP:
            out.append(f"--pp must be between 1 and {MAX_TP} (got {self.pp})")
        if self.pp > 1:
            if not self.train:
                out.append(
                    "--pp is modelled for --train (1F1B pipeline stages); for inference use --tp N or --device-map auto"
                )
            if self.gpus not in (1, self.pp):
                out.append(
                    f"--pp {self.pp} with --gpus {self.gpus}: data parallel over pipelines is not "
                    f"modelled; give --gpus {self.pp} or leave --gpus out"
                )
        if self.device_map and self.train:
            out.append(
                "--device-map auto is for --infer (from_pretrained's layer split); for training use "
                "--zero 3 / --fsdp or --ddp"
            )
        if self.device_map and self.gpus < 2:
            out.append("--device-map auto splits the layers over --gpus N; give N of 2 or more")
        if self.ddp and self.gpus < 2:
            out.append("--ddp replicates over --gpus N; give N of 2 or more")
        if self.amp and self.dtype != "fp32":
            out.append(
                f"--amp {self.amp} runs fp32 weights under autocast; use it with --dtype fp32 "
                f"(or --dtype {self.amp} alone for pure {self.amp} weights)"
            )
        if self.lora_targets and not self.lora_rank:
            out.append("--lora-targets needs --lora R")
        if spec is not None:
            out += self._model_problems(spec)
        return out

    def _model_problems(self, spec: ModelSpec) -> list[str]:
        out: list[str] = []
        if self.pp > 1 and self.pp > spec.total_layers:
            out.append(f"--pp {self.pp}: {spec.name} has {spec.total_layers} layers, fewer than the stages")
        if self.device_map and self.gpus > spec.total_layers:
            out.append(
                f"--device-map auto over --gpus {self.gpus}: {spec.name} has {spec.total_layers} layers, "
                "fewer than the GPUs (accelerate places whole layers)"
            )
        if self.tp > 1 and spec.heads % self.tp:
            out.append(f"--tp {self.tp}: {spec.name}'s {spec.heads} attention heads do not split over {self.tp} GPUs")
        if self.tp > 1 and spec.kv_heads >= self.tp and spec.kv_heads % self.tp:
            out.append(f"--tp {self.tp}: {spec.name}'s {spec.kv_heads} KV heads do not split over {self.tp} GPUs")
        # fewer KV heads than GPUs: each is replicated tp / kv times, which must be whole, and the MLP's
        # width is split in equal columns (vLLM's QKVParallelLinear and MergedColumnParallelLinear: divide())
        if self.tp > 1 and 0 < spec.kv_heads < self.tp and self.tp % spec.kv_heads:
            out.append(
                f"--tp {self.tp}: {spec.name}'s {spec.kv_heads} KV heads are replicated only over a multiple "
                f"of {spec.kv_heads} GPUs"
            )
        widths = {w for w in (spec.intermediate if not spec.experts else 0, spec.expert_intermediate) if w}
        if self.tp > 1 and any(w % self.tp for w in widths):
            out.append(
                f"--tp {self.tp}: {spec.name}'s MLP width {sorted(widths)[0]} does not split into {self.tp} "
                "equal columns"
            )
        if self.quant and spec.experts:
            # transformers 5 keeps an MoE's experts as fused 3-D parameters (MixtralExperts.gate_up_proj),
            # which bitsandbytes' nn.Linear swap skips: they stay in --dtype (bitsandbytes#1849), the bulk
            # of the weights; counted quantised, a Mixtral-8x7B at int4 was 22.8 GiB for ~85 GiB real
            out.append(
                f"--quant {self.quant} on {spec.name}: bitsandbytes does not quantise transformers 5's fused "
                "MoE experts (https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1849: they "
                "stay in --dtype), which fit does not model yet; estimate it without --quant (an upper bound)"
            )
        length = self.seq + self.new_tokens
        if spec.traits.learned_positions and spec.max_positions and length > spec.max_positions:
            out.append(f"{spec.name} has {spec.max_positions} learned positions; --seq + --new-tokens is {length}")
        if spec.kind == "encoder" and self.new_tokens:
            out.append(
                f"{spec.name} is an encoder ({spec.architecture}): it does not generate, so "
                "--new-tokens and the KV cache do not apply"
            )
        return out


def default_dtype(spec: ModelSpec) -> Dtype:
    """transformers 5 loads the checkpoint's dtype by default (``dtype="auto"``); fp32 when unknown."""
    name = TORCH_DTYPES.get((spec.dtype or "").lower())
    return name if name in ("fp32", "bf16", "fp16") else "fp32"  # type: ignore[return-value]

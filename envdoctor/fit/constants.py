"""The measured and documented constants of the estimate, from ``data/fit.toml``.

Each constant there carries ``source`` and ``checked``; this module reads them into one frozen
:class:`Constants` the pure estimate takes as a parameter (tests pass their own).

>>> c = load_constants()
>>> c.context_bytes // 2**20, c.cublas_bytes // 2**20
(529, 188)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envdoctor.table import TableError
from envdoctor.table.schema import Doc, Where, check_top, fields, rows
from envdoctor.table.source import read_doc

MIB = 2**20


@dataclass(frozen=True)
class Constants:
    """Values the formulas need that come from measurement or from a library's defaults."""

    context_bytes: int = 529 * MIB  # CUDA context after the first allocation (H200, torch 2.11+cu130)
    cublas_bytes: int = 188 * MIB  # more after the first bf16 matmul (cuBLAS handle, workspace, kernels)
    allocator_reserve: float = 0.06  # the flat reserve before issue 28 (kept for old data files; unused)
    #: the allocator model (docs/fit.md, "The allocator reserve"): reserved above allocated at a moment =
    #: segments + f x what is transient then (training / inference) + stranded x the freed logits' block
    allocator_segments_bytes: int = 3 * 20 * MIB
    allocator_transient_train: float = 0.12
    allocator_transient_infer: float = 0.25
    allocator_stranded_factor: float = 0.0
    #: the band around that model's variable part (fifth round: the upper edge covers all 116 in-sample rows)
    allocator_band_low: float = 0.15
    allocator_band_high: float = 2.0
    #: the upper edge is at least this share of what is allocated at the moment
    allocator_floor: float = 0.10
    #: MoE training: the in-sample Mixtral row reserved 8% of allocated in its backward
    allocator_floor_moe: float = 0.12
    #: gradient checkpointing (docs/fit.md, "The third round"): f of the transient, x the loss's gradient
    #: block (b*s*V x 4 B upcast), x one layer's recomputed activations; MoE training's f
    allocator_transient_ckpt: float = 0.0
    allocator_ckpt_grad_block: float = 0.8
    allocator_ckpt_grad_block_custom: float = 0.8
    allocator_ckpt_recompute: float = 1.0
    allocator_transient_moe: float = 0.2
    #: generation: x the generated tokens' KV cache, the previous K/V blocks torch.cat leaves cached every token
    allocator_kv_cat: float = 2.5
    #: training without checkpointing: x the loss's second fp32 gradient block (fourth round)
    allocator_grad_block: float = 0.2
    #: training: x the optimizer states, which take the first step's freed blocks (fourth round)
    allocator_states: float = 0.2
    nf4_bytes_per_param: float = 0.5 + 8 / 64 / 8 + 32 / (64 * 256) / 8  # NF4 + double quantisation (QLoRA)
    int8_bytes_per_param: float = 1.0  # LLM.int8 weights (per-row fp32 scales not counted)
    adam8bit_bytes_per_param: float = 2 + 2 * 4 / 256  # two 8-bit states + an fp32 absmax per 256-block each
    lora_adapter_bytes: int = 4  # PEFT keeps adapters in fp32 (autocast_adapter_dtype=True)
    #: NCCL's own memory per communicator that runs collectives (allocated outside torch's caching
    #: allocator, docs/fit.md "NCCL's own memory"): the point, the band's edges, the upper edge for tensor
    #: parallel (vLLM's custom all-reduce besides), NVLS's buffers on the upper edge of a group of 4+ GPUs,
    #: and one send/recv peer of a pipeline stage
    nccl_comm_bytes: int = 656 * MIB
    nccl_comm_low_bytes: int = 225 * MIB
    nccl_comm_high_bytes: int = 1024 * MIB
    nccl_tp_high_bytes: int = 1833 * MIB
    nccl_nvls_bytes: int = 1126 * MIB
    nccl_p2p_peer_bytes: int = 320 * MIB


_NAMES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "cuda_context_mib": ("context_bytes", lambda v: int(v * MIB)),
    "cublas_mib": ("cublas_bytes", lambda v: int(v * MIB)),
    "allocator_reserve_fraction": ("allocator_reserve", float),
    "nf4_double_quant_bits_per_param": ("nf4_bytes_per_param", lambda v: float(v) / 8),
    "int8_bytes_per_param": ("int8_bytes_per_param", float),
    "adam8bit_bytes_per_param": ("adam8bit_bytes_per_param", float),
    "lora_adapter_bytes": ("lora_adapter_bytes", int),
    "allocator_segments_mib": ("allocator_segments_bytes", lambda v: int(v * MIB)),
    "allocator_transient_train": ("allocator_transient_train", float),
    "allocator_transient_infer": ("allocator_transient_infer", float),
    "allocator_stranded_factor": ("allocator_stranded_factor", float),
    "allocator_band_low": ("allocator_band_low", float),
    "allocator_band_high": ("allocator_band_high", float),
    "allocator_floor": ("allocator_floor", float),
    "allocator_floor_moe": ("allocator_floor_moe", float),
    "allocator_ckpt_grad_block": ("allocator_ckpt_grad_block", float),
    "allocator_ckpt_grad_block_custom": ("allocator_ckpt_grad_block_custom", float),
    "allocator_transient_ckpt": ("allocator_transient_ckpt", float),
    "allocator_transient_moe": ("allocator_transient_moe", float),
    "allocator_ckpt_recompute": ("allocator_ckpt_recompute", float),
    "allocator_kv_cat": ("allocator_kv_cat", float),
    "allocator_grad_block": ("allocator_grad_block", float),
    "allocator_states": ("allocator_states", float),
    "nccl_communicator_mib": ("nccl_comm_bytes", lambda v: int(v * MIB)),
    "nccl_communicator_low_mib": ("nccl_comm_low_bytes", lambda v: int(v * MIB)),
    "nccl_communicator_high_mib": ("nccl_comm_high_bytes", lambda v: int(v * MIB)),
    "nccl_tensor_parallel_high_mib": ("nccl_tp_high_bytes", lambda v: int(v * MIB)),
    "nccl_nvls_mib": ("nccl_nvls_bytes", lambda v: int(v * MIB)),
    "nccl_p2p_peer_mib": ("nccl_p2p_peer_bytes", lambda v: int(v * MIB)),
}
#: constants a data file may leave out (the dataclass default stands): the flat reserve of old files,
#: and the allocator model's and NCCL's, which older copies of fit.toml (tests' frozen table) predate
_OPTIONAL = {
    "allocator_reserve_fraction",
    "allocator_segments_mib",
    "allocator_transient_train",
    "allocator_transient_infer",
    "allocator_stranded_factor",
    "allocator_band_low",
    "allocator_band_high",
    "allocator_floor",
    "allocator_floor_moe",
    "allocator_ckpt_grad_block",
    "allocator_ckpt_recompute",
    "allocator_transient_ckpt",
    "allocator_transient_moe",
    "allocator_ckpt_grad_block_custom",
    "allocator_kv_cat",
    "allocator_grad_block",
    "allocator_states",
    "nccl_communicator_mib",
    "nccl_communicator_low_mib",
    "nccl_communicator_high_mib",
    "nccl_tensor_parallel_high_mib",
    "nccl_nvls_mib",
    "nccl_p2p_peer_mib",
}


def read_constants(path: Path) -> Constants:
    """Constants from one ``fit.toml``; TableError naming the row when it is broken."""
    return constants_of(read_doc(path.name, path.parent))


def constants_of(doc: Doc) -> Constants:
    check_top(doc, ("constant", "usable"))
    values: dict[str, Any] = {}
    for where, raw in rows(doc, "constant", "name"):
        v = fields(where, raw, {"name": "str", "value": "float", "unit": "str"})
        if v["name"] not in _NAMES:
            raise where.fail(f"unknown constant {v['name']!r} (known: {', '.join(_NAMES)})")
        attr, convert = _NAMES[v["name"]]
        values[attr] = convert(v["value"])
    missing = [n for n, (attr, _) in _NAMES.items() if attr not in values and n not in _OPTIONAL]
    if missing:
        raise Where(doc.label, "constant", "-").fail(f"missing constants: {', '.join(missing)}")
    return Constants(**values)


@functools.lru_cache(maxsize=1)
def _default() -> Constants:
    return constants_of(read_doc("fit.toml"))


def load_constants(path: Path | None = None) -> Constants:
    """The bundled constants (cached), or those of ``path``."""
    return _default() if path is None else read_constants(path)


__all__ = ["Constants", "load_constants", "read_constants", "TableError", "MIB"]

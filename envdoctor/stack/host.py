"""The host side of the extension check: what the torch child is asked, and its answer as facts.

The libraries are not found by a child of their own: ``probes/python.py`` adds
:func:`child_config` to the config of ``child/torch_probe.py``, whose part
``stack/target/extensions.py`` answers under ``extensions``; :func:`interpret` turns that into
:class:`~envdoctor.stack.facts.StackFacts` (pure, never raises)::

    >>> interpret({"installed": [{"name": "xformers", "dist": "xformers", "version": "0.0.32",
    ...            "info": "/site/xformers-0.0.32.dist-info", "requires": ["torch==2.8.0"]}]}).get("xformers").requires
    ('torch==2.8.0',)
"""

from __future__ import annotations

import signal as _signal
from typing import Any, Dict, Mapping, Optional, Tuple

from envdoctor.stack.facts import BuildEnvironment, DeepSpeedBuild, DirectUrl, Extension, ImportOutcome, StackFacts

#: The libraries checked: (name, distribution names as PyPI spells them, the module to import).
#: Which module proves a library loads is knowledge of how to probe it, so it lives here; what each
#: supports (pins, GPU architectures, wheels) is data (data/extensions.toml).
CATALOG: Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...]], ...] = (
    ("flash-attn", ("flash-attn", "flash_attn"), ("flash_attn",)),
    ("flash-attn-3", ("flash-attn-3", "flash_attn_3", "flashattn-hopper"), ("flash_attn_interface", "flash_attn_3")),
    ("xformers", ("xformers",), ("xformers",)),
    ("bitsandbytes", ("bitsandbytes",), ("bitsandbytes",)),
    ("deepspeed", ("deepspeed",), ("deepspeed",)),
    ("apex", ("apex",), ("apex",)),
    ("vllm", ("vllm",), ("vllm",)),
    ("sglang", ("sglang",), ("sglang",)),
    ("sgl-kernel", ("sgl-kernel",), ("sgl_kernel",)),
    ("flashinfer", ("flashinfer-python", "flashinfer"), ("flashinfer",)),
    ("triton", ("triton", "pytorch-triton"), ("triton",)),
    (
        "transformer-engine",
        ("transformer-engine", "transformer-engine-torch", "transformer-engine-cu12"),
        ("transformer_engine",),
    ),
    ("torchvision", ("torchvision",), ("torchvision",)),
    ("torchaudio", ("torchaudio",), ("torchaudio",)),
    ("torchao", ("torchao",), ("torchao",)),
    ("auto-gptq", ("auto-gptq", "auto_gptq"), ("auto_gptq",)),
    ("gptqmodel", ("gptqmodel",), ("gptqmodel",)),
    ("mamba-ssm", ("mamba-ssm", "mamba_ssm"), ("mamba_ssm",)),
    ("causal-conv1d", ("causal-conv1d", "causal_conv1d"), ("causal_conv1d",)),
)

#: The most seconds all imports together may take; never more than what is left of the torch
#: check's own bound (``--torch-timeout``, which covers the whole child).
IMPORT_BUDGET = 60.0
#: Seconds kept at the end of the child's bound for its answer.
MARGIN = 2.0


def child_config(timeout: float, imports: bool = True) -> Dict[str, Any]:
    """The ``extensions`` part of the torch child's config: the imports end ``deadline`` seconds
    after the child started (its whole bound is ``timeout``)."""
    return {
        "catalog": [{"name": n, "dists": list(d), "modules": list(m)} for n, d, m in CATALOG],
        "budget": min(IMPORT_BUDGET, max(0.0, timeout - MARGIN)),
        "deadline": max(0.0, timeout - MARGIN),
        "imports": imports,
    }


def _str(value: Any, limit: int = 4000) -> Optional[str]:
    return value[:limit] if isinstance(value, str) else None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strs(value: Any, limit: int = 200) -> Tuple[str, ...]:
    return tuple(v[:1000] for v in value[:limit] if isinstance(v, str)) if isinstance(value, list) else ()


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _flags(value: Any) -> Dict[str, bool]:
    if not isinstance(value, dict):
        return {}
    return {str(k)[:80]: v for k, v in list(value.items())[:100] if isinstance(v, bool)}


def _outcome(module: str, data: Any) -> ImportOutcome:
    if not isinstance(data, dict):
        return ImportOutcome(module, start_error="no answer")
    code = _int(data.get("returncode"))
    ok = data.get("ok") if isinstance(data.get("ok"), bool) else None
    compat = data.get("compatible_ops")
    return ImportOutcome(
        module,
        ok=ok,
        version=_str(data.get("version"), 100),
        error_type=_str(data.get("type"), 100),
        message=_str(data.get("message")),
        where=_strs(data.get("where"), 5),
        stderr=_str(data.get("stderr")),
        returncode=code,
        signal=-code if code is not None and code < 0 else None,
        timed_out=data.get("timeout") is True,
        seconds=data.get("seconds") if isinstance(data.get("seconds"), float) else None,
        torch_error=_str(data.get("torch_error")),
        start_error=_str(data.get("start_error")),
        compatible_ops={str(k)[:80]: (v if isinstance(v, bool) else None) for k, v in list(compat.items())[:100]}
        if isinstance(compat, dict)
        else {},
    )


def _deepspeed(data: Any) -> Optional[DeepSpeedBuild]:
    if not isinstance(data, dict) or not isinstance(data.get("path"), str):
        return None
    info = _dict(data.get("torch_info"))
    torch_version, cuda_version = (
        _str(str(info.get(k)) if info.get(k) is not None else None, 40) for k in ("version", "cuda_version")
    )
    return DeepSpeedBuild(
        data["path"],
        installed_ops=_flags(data.get("installed_ops")),
        compatible_ops=_flags(data.get("compatible_ops")),
        torch_version=torch_version,
        cuda_version=cuda_version,
        unreadable=data.get("unreadable") is True,
    )


def _direct(data: Any) -> Optional[DirectUrl]:
    if not isinstance(data, dict):
        return None
    return DirectUrl(
        url=_str(data.get("url"), 500) or "",
        editable=data.get("editable") is True,
        vcs=_str(data.get("vcs"), 20),
        commit=_str(data.get("commit"), 64),
        archive=data.get("archive") is True,
        unreadable=data.get("unreadable") is True,
    )


_REQUIRED = ("name", "dist", "version", "info")


def interpret(data: Any, error: Optional[str] = None) -> StackFacts:
    """The ``extensions`` part of the child's answer as facts; None or garbage: not checked."""
    if not isinstance(data, Mapping):
        return StackFacts(error=error)
    imports = _dict(data.get("imports"))
    extensions = []
    for item in (data.get("installed") or [])[:100] if isinstance(data.get("installed"), list) else []:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in _REQUIRED):
            continue
        modules = _strs(item.get("modules"), 4)
        outcome = None
        if modules and modules[0] in imports:
            outcome = _outcome(modules[0], imports[modules[0]])
        extensions.append(
            Extension(
                item["name"][:80],
                item["dist"][:80],
                item["version"][:100],
                item["info"][:1000],
                installer=_str(item.get("installer"), 40),
                direct_url=_direct(item.get("direct_url")),
                requires=_strs(item.get("requires")),
                wheel_tags=_strs(item.get("wheel_tags"), 20),
                modules=modules,
                metadata_error=_str(item.get("metadata_error"), 500),
                outcome=outcome,
                deepspeed=_deepspeed(item.get("deepspeed_build")),
            )
        )
    build = _dict(data.get("build"))
    env = _dict(build.get("env"))
    abi = data.get("torch_cxx11_abi")
    return StackFacts(
        checked=True,
        extensions=tuple(extensions),
        torch_cxx11_abi=abi if isinstance(abi, bool) else None,
        build=BuildEnvironment(
            ninja=_str(build.get("ninja"), 500),
            cpus=_int(build.get("cpus")),
            memory_bytes=_int(build.get("memory_bytes")),
            available_bytes=_int(build.get("available_bytes")),
            env={str(k)[:60]: v[:300] for k, v in env.items() if isinstance(v, str)},
        ),
        imports_skipped=_str(data.get("imports_skipped"), 200),
        seconds=data.get("seconds") if isinstance(data.get("seconds"), float) else None,
        error=error,
    )


def signal_name(number: Optional[int]) -> str:
    """``signal_name(11)`` -> "SIGSEGV"."""
    if number is None:
        return "a signal"
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

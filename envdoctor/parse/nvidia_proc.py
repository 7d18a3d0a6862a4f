"""Parsers of the NVIDIA kernel module's files under /proc and /sys. Pure."""

from __future__ import annotations

import re
from typing import Optional

_VERSION = re.compile(r"\d{1,6}\.\d{1,6}(?:\.\d{1,6})?")


def parse_proc_version(text: str) -> tuple[Optional[str], Optional[str]]:
    """``/proc/driver/nvidia/version`` -> (version, flavor).

    >>> parse_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
    ...                    "Release Build  (nixbld@)")
    ('580.159.04', 'open')
    >>> parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024")
    ('550.90.07', 'proprietary')
    """
    at = text.find("NVRM version:")
    if at < 0:
        return None, None
    line = text[at + len("NVRM version:") :].split("\n", 1)[0][:1000]
    words = line.split()
    for i, word in enumerate(words):
        if _VERSION.fullmatch(word):
            flavor = "open" if "Open Kernel Module" in " ".join(words[:i]) else "proprietary"
            return word, flavor
    return None, None


def parse_module_version(text: str) -> Optional[str]:
    """``/sys/module/nvidia/version`` holds the bare version: ``580.159.04``."""
    value = text.strip()
    return value if re.fullmatch(r"\d+\.\d+(\.\d+)?", value) else None


def parse_gpu_information(text: str) -> dict[str, str]:
    """``/proc/driver/nvidia/gpus/0000:00:06.0/information``::

    Model: 		 NVIDIA H200
    GPU UUID: 	 GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4
    Bus Location: 	 0000:00:06.0
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            out[key.strip()] = value.strip()
    return out


def parse_library_version(filename: str) -> Optional[str]:
    """``libnvidia-ml.so.580.159.04`` -> ``580.159.04`` (the user-space driver's version)."""
    m = re.fullmatch(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)", filename)
    return m.group(1) if m else None

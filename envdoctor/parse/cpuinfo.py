"""``/proc/cpuinfo`` -> the CPU model and the number of logical CPUs.

On the development machine (Debian 12 container, two vCPUs; ``tests/fixtures/cpu-nvcc13-docker-client``)::

    processor	: 0
    vendor_id	: AuthenticAMD
    cpu family	: 25
    model		: 1
    model name	: AMD EPYC
    ...
    flags		: fpu vme de pse tsc ... avx2 ...

ARM kernels write no ``model name``: one block per CPU with ``CPU implementer``/``CPU part`` (the
names ``lscpu`` gives them come from its own table, which envdoctor does not copy), so the model is
written from those two numbers. The flags, cache sizes and vulnerability lines ``lscpu`` adds are
left out on purpose (see docs/check.md: long, and not what a torch install depends on).
"""

from __future__ import annotations

from typing import Optional

#: Read at most this much of the file (a 512-CPU host writes about 1.5 MB; the first block names it).
LIMIT = 1 << 21
_MODEL_KEYS = ("model name", "hardware", "cpu model", "processor name", "cpu")


def parse_cpuinfo(text: str) -> tuple[Optional[str], Optional[int]]:
    """(model, logical CPUs) from ``/proc/cpuinfo``; None for what the text does not say.

    >>> parse_cpuinfo("processor\\t: 0\\nmodel name\\t: AMD EPYC\\n\\nprocessor\\t: 1\\nmodel name\\t: AMD EPYC\\n")
    ('AMD EPYC', 2)
    >>> parse_cpuinfo("processor\\t: 0\\nCPU implementer\\t: 0x41\\nCPU part\\t: 0xd4f\\n")
    ('ARM CPU implementer 0x41, part 0xd4f', 1)
    """
    model: Optional[str] = None
    implementer = part = None
    count = 0
    for line in text[:LIMIT].splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), " ".join(value.split())[:200]
        if key == "processor" and value.isdigit():
            count += 1
        elif model is None and key in _MODEL_KEYS and value and not value.isdigit():
            model = value
        elif key == "cpu implementer" and implementer is None:
            implementer = value
        elif key == "cpu part" and part is None:
            part = value
    if model is None and implementer:
        model = f"ARM CPU implementer {implementer}" + (f", part {part}" if part else "")
    return model, count or None

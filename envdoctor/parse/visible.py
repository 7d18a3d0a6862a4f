"""``CUDA_VISIBLE_DEVICES`` as CUDA reads it: how many of NVML's GPUs a CUDA program will see.

NVML ignores the variable; CUDA reads its entries up to the first one it cannot use (a negative
index, an index past the last GPU, an empty entry), and some values hide every GPU.
"""

from __future__ import annotations

from typing import Optional

#: Values that hide every GPU from CUDA (NoDevFiles is what some container runtimes set).
HIDES_ALL = ("", "-1", "none", "NoDevFiles")


def visible_count(value: Optional[str], nvml_count: int) -> int:
    """How many GPUs CUDA sees: ``nvml_count`` cut by ``value`` (unset: all of them).

    >>> visible_count("2,3", 8), visible_count("1,-1,2", 8), visible_count("NoDevFiles", 8), visible_count(None, 8)
    (2, 1, 0, 8)
    >>> visible_count("2,9,1", 4), visible_count("GPU-1234,GPU-5678", 8)
    (1, 2)
    """
    if value is None:
        return nvml_count
    if value.strip() in HIDES_ALL:
        return 0
    count = 0
    for entry in (e.strip() for e in value.split(",")):     # CUDA stops at the first entry it cannot use
        if not entry or (entry.lstrip("-").isdigit() and (int(entry) < 0 or int(entry) >= max(nvml_count, 1))):
            break
        count += 1
    return min(count, nvml_count) if nvml_count else count

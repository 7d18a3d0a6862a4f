"""``CUDA_VISIBLE_DEVICES`` as CUDA reads it: how many of NVML's GPUs a CUDA program will see.

NVML ignores the variable; CUDA reads its entries up to the first one it cannot use (a negative
index, an index past the last GPU, an empty entry), and some values hide every GPU.

The variable is the user's input: :func:`check_visible` refuses (with the line to print) a value
whose entries are neither GPU indices in ASCII digits nor ``GPU-``/``MIG-`` UUIDs (``"²"``,
``"٣"``, which Python's ``int`` reads as 3, an index of twelve digits).
"""

from __future__ import annotations

from typing import Optional

from envdoctor.parse import ParseError

#: Values that hide every GPU from CUDA (NoDevFiles is what some container runtimes set).
HIDES_ALL = ("", "-1", "none", "NoDevFiles")
#: GPU indices go below this (as ``--device`` takes them).
MAX_INDEX = 1024
#: The accepted form, as the refusal says it.
FORM = "GPU indices in ASCII digits (0,1,3), GPU-/MIG- UUIDs, or -1 for none"


class VisibleError(ParseError):
    """CUDA_VISIBLE_DEVICES holds an entry that is not a GPU index or UUID; the message says which."""


def _index(entry: str) -> Optional[int]:
    """An entry as an index (negative allowed: CUDA stops there), ASCII digits only; None otherwise."""
    digits = entry[1:] if entry.startswith("-") else entry
    if not digits or len(digits) > 6 or not digits.isascii() or not digits.isdigit():
        return None
    return -int(digits) if entry.startswith("-") else int(digits)


def check_visible(value: Optional[str]) -> None:
    """VisibleError when ``value`` (the variable, None when unset) is not of :data:`FORM`.

    >>> check_visible("0,1"), check_visible("GPU-c7d3a8fe"), check_visible("NoDevFiles"), check_visible(None)
    (None, None, None, None)
    >>> try:
    ...     check_visible("\\u00b2")
    ... except VisibleError as exc:
    ...     print(str(exc).split(";")[0])
    CUDA_VISIBLE_DEVICES='²' (the variable): '²' is not a GPU index or UUID
    """
    if value is None or value.strip() in HIDES_ALL:
        return
    for entry in (e.strip() for e in value.split(",")):
        if not entry or entry.upper().startswith(("GPU-", "MIG-")):
            continue
        index = _index(entry)
        if index is None or index >= MAX_INDEX:
            shown = value if len(value) <= 40 else value[:40] + "..."
            raise VisibleError(
                f"CUDA_VISIBLE_DEVICES={shown!r} (the variable): {entry[:40]!r} is not a GPU index "
                f"or UUID; give {FORM}, or unset it"
            )


def visible_count(value: Optional[str], nvml_count: int) -> int:
    """How many GPUs CUDA sees: ``nvml_count`` cut by ``value`` (unset: all of them). An entry
    that is not an index in ASCII digits nor a UUID ends the list, as CUDA's parser does.

    >>> visible_count("2,3", 8), visible_count("1,-1,2", 8), visible_count("NoDevFiles", 8), visible_count(None, 8)
    (2, 1, 0, 8)
    >>> visible_count("2,9,1", 4), visible_count("GPU-1234,GPU-5678", 8), visible_count("0,\\u0663", 8)
    (1, 2, 1)
    """
    if value is None:
        return nvml_count
    if value.strip() in HIDES_ALL:
        return 0
    count = 0
    for entry in (e.strip() for e in value.split(",")):  # CUDA stops at the first entry it cannot use
        if entry.upper().startswith(("GPU-", "MIG-")):
            count += 1
            continue
        index = _index(entry)
        if index is None or index < 0 or index >= max(nvml_count, 1):
            break
        count += 1
    return min(count, nvml_count) if nvml_count else count

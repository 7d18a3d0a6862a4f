"""Memory sizes as people write them: ``24GiB``, ``80GB``, ``16G``, ``81920MiB``.

>>> parse_size("24GiB"), parse_size("1.5 TB"), parse_size("16G")
(25769803776, 1500000000000, 17179869184)
"""

from __future__ import annotations

import re

_UNITS = {"": 2**30, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*([0-9]{1,40}(?:\.[0-9]{1,40})?)\s*([a-zA-Z]*)\s*$", re.ASCII)
MAX_BYTES = 2**50      # 1 PiB: no GPU comes near


def parse_size(text: str) -> int:
    """Bytes; a bare number or K/M/G/T are binary (GiB), KB/MB/GB/TB decimal. ValueError otherwise."""
    m = _SIZE.match(text or "")
    if not m or m.group(2).lower() not in _UNITS:
        shown = repr(text) if len(text or "") <= 40 else repr(text[:40]) + "..."
        raise ValueError(f"{shown} is not a size like 24GiB, 80GB or 81920MiB (ASCII digits, at most 40)")
    number = float(m.group(1)) * _UNITS[m.group(2).lower()]    # finite: 40 digits x 2**40 < 1e53
    if not number <= MAX_BYTES:
        raise ValueError(f"{text!r}: a GPU's memory is between 1 byte and 1 PiB")
    value = int(number)
    if not 0 < value <= MAX_BYTES:
        raise ValueError(f"{text!r}: a GPU's memory is between 1 byte and 1 PiB")
    return value

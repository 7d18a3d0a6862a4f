"""Sizes in bytes as people write them, and bytes as envdoctor writes them: the one parser and the
one formatter, for every command (``fit --memory``, ``comms --sizes``, every report line).

The rules of :func:`parse_size`:

- a number in ASCII digits (at most 40, and 40 after the point), with an optional fraction
  (``1.5``), then a unit; spaces may stand around and between them, the case of the unit does not
  matter;
- ``KiB``, ``MiB``, ``GiB``, ``TiB`` are powers of 1024 and ``KB``, ``MB``, ``GB``, ``TB`` powers of
  1000: ``1GB`` is 10^9 bytes and ``1GiB`` 2^30, everywhere;
- ``K``, ``M``, ``G``, ``T`` alone are powers of 1024 (as nccl-tests' ``-b``/``-e`` and ``free -g``
  read them); ``B`` is bytes;
- a bare number is refused: ``64`` is bytes to nccl-tests and GiB to a person who means a GPU's
  memory, so it has to say which;
- the value is rounded down to whole bytes and must lie in the caller's range.

>>> parse_size("24GiB"), parse_size("80GB"), parse_size("1.5 M"), parse_size("4096b")
(25769803776, 80000000000, 1572864, 4096)

:func:`format_bytes` writes binary units: the largest of B, KiB, MiB, GiB, TiB, PiB that the value
reaches, a whole value without decimals and any other with ``places`` of them (or a fixed
``unit`` and always ``places`` decimals, for columns).

>>> format_bytes(1 << 20), format_bytes(3 << 29), format_bytes(100), format_bytes(0)
('1 MiB', '1.5 GiB', '100 B', '0 B')
>>> format_bytes(16 << 30, unit="GiB", places=2)
'16.00 GiB'
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Dict, Optional

_BINARY = (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
_UNITS: Dict[str, int] = {
    "b": 1,
    "k": 2**10,
    "m": 2**20,
    "g": 2**30,
    "t": 2**40,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = re.compile(r"\s*([0-9]{1,40}(?:\.[0-9]{1,40})?)\s*([A-Za-z]*)\s*", re.ASCII)

#: The largest size envdoctor reads unless a caller says less: 1 PiB.
MAX_SIZE = 2**50


class SizeError(ValueError):
    """A size envdoctor cannot read; the message says what it takes."""


def parse_size(text: str, low: int = 1, high: int = MAX_SIZE) -> int:
    """Bytes from ``text`` by the rules above; :class:`SizeError` (a ``ValueError``) otherwise.

    >>> parse_size("64")
    Traceback (most recent call last):
    ...
    envdoctor.units.SizeError: '64' has no unit: say 64B (bytes), 64KiB, 64GB (64 x 10^9) or 64GiB (64 x 2^30)
    """
    m = _SIZE.fullmatch(text or "")
    if not m or m.group(2).lower() not in _UNITS and m.group(2):
        shown = repr(text) if len(text or "") <= 40 else repr(text[:40]) + "..."
        raise SizeError(f"{shown} is not a size like 64KiB, 16M, 80GB or 24GiB (ASCII digits, at most 40)")
    number, unit = m.group(1), m.group(2).lower()
    if not unit:
        raise SizeError(
            f"{text!r} has no unit: say {number}B (bytes), {number}KiB, {number}GB "
            f"({number} x 10^9) or {number}GiB ({number} x 2^30)"
        )
    value = int(Fraction(number) * _UNITS[unit])
    if not low <= value <= high:
        raise SizeError(f"{text!r} is outside {format_bytes(low)} to {format_bytes(high)}")
    return value


def format_bytes(n: float, places: int = 1, unit: Optional[str] = None) -> str:
    """``n`` bytes in the largest binary unit it reaches (a whole value without decimals), or in
    ``unit`` with always ``places`` decimals."""
    if unit is not None:
        return f"{n / dict(_BINARY)[unit]:.{places}f} {unit}"
    name, size = next(((u, s) for u, s in _BINARY if abs(n) >= s), ("B", 1))
    value = n / size
    return f"{int(value)} {name}" if value == int(value) else f"{value:.{places}f} {name}"


__all__ = ["MAX_SIZE", "SizeError", "format_bytes", "parse_size"]

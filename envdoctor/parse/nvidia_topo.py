"""``nvidia-smi topo -m``: the connection matrix between GPUs (and NICs), with its legend. Pure.

The H200 (one GPU; the header is underlined with ANSI escapes, cells are separated by tabs)::

    \\tGPU0\\tCPU Affinity\\tNUMA Affinity\\tGPU NUMA ID
    GPU0\\t X \\t0-15\\t0\\t\\tN/A

    Legend:

      X    = Self
      SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
      ...
      NV#  = Connection traversing a bonded set of # NVLinks

Eight H100 on NVSwitch print ``NV18`` between every pair; two RTX 3090 with a bridge ``NV4``; PCIe
paths are ``PIX``/``PXB``/``PHB``/``NODE``/``SYS``. Newer drivers name the NICs ``NIC0``... and map
them in a ``NIC Legend:`` (``NIC0: mlx5_0``); older ones put ``mlx5_0`` in the header and have no
``NUMA Affinity`` column. A newer nvidia-smi was seen printing the header with no separators at all
(``GPU0GPU1NIC0NIC1CPU AffinityNUMA AffinityGPU NUMA ID``, rows padded with spaces); the column
names are split apart again. The affinity cells may be empty or ``N/A``, and nvidia-smi pads some of
them with an extra tab; text copied from a web page has spaces instead of tabs.

>>> m = parse_topo("\\tGPU0\\tGPU1\\tCPU Affinity\\tNUMA Affinity\\nGPU0\\t X \\tNV4\\t0-15\\t0\\n"
...                "GPU1\\tNV4\\t X \\t0-15\\t0\\n")
>>> m.link("GPU0", "GPU1"), m.nvlinks("GPU0", "GPU1"), m.rows["GPU1"].numa_affinity
('NV4', 4, '0')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from envdoctor.parse import ParseError

#: The legend's codes for a path, best first (what NVML's common ancestor calls them in brackets).
PATHS: Tuple[str, ...] = ("NV#", "PIX", "PXB", "PHB", "NODE", "SYS")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|N/A)$")
_LEGEND = re.compile(r"^\s*(X|NV#|PIX|PXB|PHB|NODE|SYS|SOC)\s*=\s*(.+?)\s*$")
_GLUED = re.compile(r"GPU\d+|NIC\d+|mlx\d+_\d+")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")


class TopoParseError(ParseError):
    """The text is not a ``nvidia-smi topo -m`` matrix."""


@dataclass(frozen=True)
class TopoRow:
    """One device's row: its cell towards each column device, and its affinities as printed."""

    name: str  # "GPU0", "NIC1", "mlx5_0"
    cells: Dict[str, str] = field(default_factory=dict)  # column device -> "NV18", "PIX", "X", ...
    cpu_affinity: Optional[str] = None  # "0-15", "0-7,16-23"; None when empty or N/A
    numa_affinity: Optional[str] = None  # "0", "0-3"; None when empty or N/A
    gpu_numa_id: Optional[str] = None  # None for "N/A"


@dataclass(frozen=True)
class TopoMatrix:
    devices: Tuple[str, ...]  # column order: GPUs first, then NICs
    rows: Dict[str, TopoRow]
    legend: Dict[str, str] = field(default_factory=dict)  # "PIX" -> "Connection traversing ..."
    nics: Dict[str, str] = field(default_factory=dict)  # "NIC0" -> "mlx5_0"

    @property
    def gpus(self) -> Tuple[str, ...]:
        return tuple(d for d in self.devices if re.fullmatch(r"GPU\d+", d))

    def link(self, a: str, b: str) -> Optional[str]:
        row = self.rows.get(a)
        return row.cells.get(b) if row else None

    def nvlinks(self, a: str, b: str) -> int:
        """Bonded NVLinks between two devices (``NV18`` -> 18); 0 for a PCIe path."""
        cell = self.link(a, b) or ""
        return int(cell[2:]) if re.fullmatch(r"NV\d+", cell) else 0


def _cells(line: str) -> Tuple[str, ...]:
    """Tab-separated cells (stripped, empty ones kept), or whitespace-separated words."""
    if "\t" in line:
        return tuple(c.strip() for c in line.split("\t"))
    return tuple(line.split())


def _header(line: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(device columns, affinity columns) of the header line."""
    text = line
    for i, name in enumerate(_AFFINITY_COLUMNS):
        text = text.replace(name, f" \x00{i} ")  # spaced: newer nvidia-smi glues some columns together
    devices: List[str] = []
    affinity: List[str] = []
    for w in (w for w in re.split(r"[\t ]+", text) if w):
        if w.startswith("\x00"):
            affinity.append(_AFFINITY_COLUMNS[int(w[1:])])
        elif affinity:
            raise TopoParseError(f"column {w!r} after the affinity columns")
        else:
            devices.extend(_devices(w))
    return tuple(devices), tuple(affinity)


def _devices(word: str) -> Tuple[str, ...]:
    """``"GPU0GPU1NIC0"`` (a header printed without separators) -> its device names; else the word."""
    glued = _GLUED.findall(word)
    return tuple(glued) if len(glued) > 1 and "".join(glued) == word else (word,)


def _is_header(line: str) -> bool:
    """The line that names the columns: GPU0 and no cell of the matrix (X, NV4, PIX, ...)."""
    if not re.search(r"(?<![A-Za-z0-9])GPU0(?!\d)", line):
        return False
    text = line
    for name in _AFFINITY_COLUMNS:
        text = text.replace(name, " ")
    return not any(_CELL.match(w) for w in text.split())


def _value(text: str) -> Optional[str]:
    return None if text in ("", "N/A") else text


def _row(line: str, devices: Tuple[str, ...], affinity: Tuple[str, ...]) -> TopoRow:
    cells = _cells(line)
    name = cells[0]
    rest = [c for c in cells[1:]] if "\t" in line else list(cells[1:])
    matrix = [c for c in rest if c][: len(devices)]
    if len(matrix) < len(devices) or not all(_CELL.match(c) for c in matrix):
        raise TopoParseError(f"row {name}: expected {len(devices)} cells like NV18/PIX/SYS, got {matrix}")
    # What follows the device cells: the affinities, some possibly empty (only tabs can show that).
    used = 0
    for i, c in enumerate(rest):
        if c:
            used += 1
        if used == len(devices):
            tail = rest[i + 1 :]
            break
    else:  # pragma: no cover - len(matrix) == len(devices) guarantees the break
        tail = []
    words = [c for c in tail if c]
    values: Dict[str, Optional[str]] = {}
    if affinity and words:
        columns = list(affinity)
        if len(words) < len(columns) and tail and tail[0] == "" and "CPU Affinity" in columns:
            columns.remove("CPU Affinity")  # "\t\t1\t\tN/A": the CPU cell is empty
        while len(words) < len(columns):  # no tabs to tell: the leftmost are missing
            columns.pop(0)
        values = {col: _value(w) for col, w in zip(columns, words[-len(columns) :])}
    cells_by_device = {d: ("X" if c == "X" else c) for d, c in zip(devices, matrix)}
    return TopoRow(
        name, cells_by_device, values.get("CPU Affinity"), values.get("NUMA Affinity"), values.get("GPU NUMA ID")
    )


def parse_topo(text: str) -> TopoMatrix:
    """Parse ``nvidia-smi topo -m``; raises :class:`TopoParseError` when there is no matrix."""
    lines = [_ANSI.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        raise TopoParseError("no header line with GPU0 (is this `nvidia-smi topo -m` output?)")
    devices, affinity = _header(lines[start])
    rows: Dict[str, TopoRow] = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            if rows:
                break
            continue
        first = _cells(line)[0] if _cells(line) else ""
        if first not in devices:
            break
        rows[first] = _row(line, devices, affinity)
    if not rows:
        raise TopoParseError("a header but no rows")
    legend: Dict[str, str] = {}
    nics: Dict[str, str] = {}
    for line in lines[start + 1 :]:
        m = _LEGEND.match(line)
        if m:
            legend[m.group(1)] = m.group(2)
            continue
        n = _NIC_LEGEND.match(line)
        if n:
            nics[n.group(1)] = n.group(2)
    return TopoMatrix(devices, rows, legend, nics)

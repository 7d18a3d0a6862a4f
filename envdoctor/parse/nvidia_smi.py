"""Parsers of ``nvidia-smi`` output. Pure functions; they raise ``SmiParseError`` on garbage.

The query the driver probe runs (header kept so columns are matched by name, not position)::

    $ nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap,memory.total,pci.bus_id,... --format=csv,nounits
    index, name, uuid, driver_version, compute_cap, memory.total [MiB], pci.bus_id, ...
    0, NVIDIA H200, GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4, 580.159.04, 9.0, 143771, 00000000:00:06.0, ...
"""

from __future__ import annotations

import csv
import io
import re
from typing import Optional

from envdoctor.facts.gpu import GpuInfo
from envdoctor.parse import ParseError

#: The fields asked of nvidia-smi. compute_cap needs a driver of about R510 or newer.
QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "compute_cap",
    "memory.total",
    "pci.bus_id",
    "serial",
    "power.limit",
    "clocks.max.sm",
)

_NOT_AVAILABLE = {"", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]"}


class SmiParseError(ParseError):
    """nvidia-smi printed something that is not what was asked for."""


#: A field longer than this is not a value nvidia-smi prints (csv's own limit is 131072).
MAX_FIELD = 4096
_UNITS = (" MiB", " MHz", " W", " %", "MiB", "MHz", "W", "%")


def _clean(value: str) -> Optional[str]:
    value = value.strip()
    if value.lower() in _NOT_AVAILABLE:
        return None
    # units are present when the output was not asked with nounits: "143771 MiB", "700.00 W"
    for unit in _UNITS:
        if value.endswith(unit) and value[: -len(unit)][-1:].isdigit():
            return value[: -len(unit)].rstrip()
    return value


def _num(value: Optional[str], kind: type) -> Optional[float]:
    if value is None:
        return None
    if len(value) > 40:  # no measurement has 40 digits; int() refuses 4,300 anyway
        return None
    try:
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            return None
        return kind(number) if kind is int else number
    except (ValueError, OverflowError):
        return None


def _header(cell: str) -> str:
    """``memory.total [MiB]`` -> ``memory.total`` (a slice, not a backtracking regex)."""
    cell = cell.strip()
    if cell.endswith("]") and "[" in cell:
        cell = cell[: cell.index("[")].rstrip()
    return cell


def _csv_rows(lines: list[str]) -> list[list[str]]:
    if any(len(line) > MAX_FIELD * 16 for line in lines):
        raise SmiParseError(f"nvidia-smi printed a line of more than {MAX_FIELD * 16} characters")
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    except csv.Error as exc:
        raise SmiParseError(f"nvidia-smi printed CSV that cannot be read ({exc})") from None
    if any(len(cell) > MAX_FIELD for row in rows for cell in row):
        raise SmiParseError(f"nvidia-smi printed a field of more than {MAX_FIELD} characters")
    return rows


def parse_query_gpu(text: str) -> tuple[GpuInfo, ...]:
    """Parse ``--query-gpu=... --format=csv`` (with its header line) into GPUs.

    >>> parse_query_gpu("index, name\\n0, NVIDIA H200\\n")[0].name
    'NVIDIA H200'
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise SmiParseError("nvidia-smi printed nothing")
    if "\x00" in text:
        raise SmiParseError("nvidia-smi printed binary data, not CSV")
    rows = _csv_rows(lines)
    header = [_header(h) for h in rows[0]]
    if "index" not in header:
        raise SmiParseError(f"nvidia-smi printed no CSV header: {lines[0][:80]!r}")
    gpus: list[GpuInfo] = []
    for row in rows[1:]:
        if len(row) != len(header):
            raise SmiParseError(f"nvidia-smi printed a row of {len(row)} fields for {len(header)} columns")
        rec: dict[str, Optional[str]] = {h: _clean(v) for h, v in zip(header, row)}
        index = _num(rec.get("index"), int)
        if index is None:
            raise SmiParseError(f"nvidia-smi printed a GPU index that is not a number: {row[0]!r}")
        cap = rec.get("compute_cap")
        gpus.append(
            GpuInfo(
                index=int(index),
                name=rec.get("name"),
                uuid=rec.get("uuid"),
                compute_capability=cap if cap and re.fullmatch(r"\d+\.\d+", cap) else None,
                memory_total_mib=_num(rec.get("memory.total"), int),  # type: ignore[arg-type]
                pci_bus_id=rec.get("pci.bus_id"),
                serial=rec.get("serial"),
                power_limit_w=_num(rec.get("power.limit"), float),
                max_sm_clock_mhz=_num(rec.get("clocks.max.sm"), int),  # type: ignore[arg-type]
                source="nvidia-smi",
            )
        )
    return tuple(gpus)


def query_driver_version(text: str) -> Optional[str]:
    """The driver_version column of the query output (the same on every row)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or "\x00" in text:
        return None
    try:
        rows = _csv_rows(lines)
    except SmiParseError:
        return None
    header = [_header(h) for h in rows[0]]
    if "driver_version" not in header or len(rows[1]) != len(header):
        return None
    return _clean(rows[1][header.index("driver_version")])


def parse_version(text: str) -> dict[str, str]:
    """``nvidia-smi --version`` (R525 and newer)::

        NVIDIA-SMI version  : 580.159.04
        NVML version        : 580.159
        DRIVER version      : 580.159.04
        CUDA Version        : 13.0

    -> {"smi": "580.159.04", "nvml": "580.159", "driver": "580.159.04", "cuda": "13.0"}
    """
    keys = {"nvidia-smi version": "smi", "nvml version": "nvml", "driver version": "driver", "cuda version": "cuda"}
    out: dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        name = keys.get(key.strip().lower())
        if name and value.strip():
            out[name] = value.strip()
    if "driver" not in out and "cuda" not in out:
        raise SmiParseError("nvidia-smi --version printed no driver or CUDA version")
    return out


_BANNER = re.compile(r"Driver Version:\s*(?P<driver>[\d.]+)\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A)")


def parse_banner(text: str) -> dict[str, str]:
    """The header of plain ``nvidia-smi``: ``| NVIDIA-SMI 580.159.04  Driver Version: 580.159.04
    CUDA Version: 13.0 |`` -> {"driver": "580.159.04", "cuda": "13.0"}."""
    m = _BANNER.search(text)
    if not m:
        raise SmiParseError("nvidia-smi printed no 'Driver Version ... CUDA Version' banner")
    out = {"driver": m.group("driver")}
    if m.group("cuda") != "N/A":
        out["cuda"] = m.group("cuda")
    return out


_LIB_VERSION = re.compile(r"NVML library version:\s*([\d.]+)")


def library_version_in_error(text: str) -> Optional[str]:
    """Newer drivers add ``NVML library version: 570.124`` after the mismatch message."""
    m = _LIB_VERSION.search(text)
    return m.group(1) if m else None


def is_mismatch(text: str) -> bool:
    return "Driver/library version mismatch" in text


def is_no_driver(text: str) -> bool:
    """``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver...``"""
    return "couldn't communicate with the NVIDIA driver" in text or "Driver Not Loaded" in text


def is_no_devices(text: str) -> bool:
    return "No devices were found" in text

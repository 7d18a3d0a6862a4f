"""Look up an NVIDIA device name in the system's ``pci.ids``. Pure.

The file lists vendors at column 0 and their devices after one tab::

    10de  NVIDIA Corporation
    \t2335  GH100 [H200 SXM 141GB]
"""

from __future__ import annotations


def nvidia_devices(text: str) -> dict[str, str]:
    """All devices of vendor 10de: {"0x2335": "GH100 [H200 SXM 141GB]"}."""
    out: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            if inside:
                break
            inside = line.lower().startswith("10de ")
            continue
        if inside and not line.startswith("\t\t"):
            dev, _, name = line.strip().partition(" ")
            if len(dev) == 4:
                out["0x" + dev.lower()] = name.strip()
    return out

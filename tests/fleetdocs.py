"""Recorded reports of real machines, and edited copies of them, for the fleet tests (no tests here).

- ``h200()``: tests/fixtures/h200-driver580-cuda13/envdoctor-check.json (one H200, driver 580.159.04,
  torch 2.11.0+cu130, host name ``vm``);
- ``h200_docs()``: docs/examples/h200/check.json, another H200 instance of the same image (other
  GPU UUID and serial, the same host name ``vm``);
- ``cpu()``: docs/examples/cpu-ci/check.json, the CPU development machine (no GPU, torch
  2.13.0+cpu, recorded with ``--redact``: host ``<host>``);
- ``bench2()``: tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json, two H200s, bf16 n=8192
  at 659.8 and 673.1 TFLOP/s.

The edits are the ones drift brings, each written out where it is made.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _recorded_json(path: Path) -> Dict[str, Any]:
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[rc="):
        lines = lines[:-1]
    return json.loads("\n".join(lines))


def h200() -> Dict[str, Any]:
    return json.loads((FIXTURES / "h200-driver580-cuda13" / "envdoctor-check.json").read_text())


def h200_docs() -> Dict[str, Any]:
    return _recorded_json(ROOT / "docs" / "examples" / "h200" / "check.json")


def cpu() -> Dict[str, Any]:
    return _recorded_json(ROOT / "docs" / "examples" / "cpu-ci" / "check.json")


def bench2() -> Dict[str, Any]:
    return json.loads((FIXTURES / "h200x2-bench" / "bench-fp16-bf16-8192.json").read_text())


def host(doc: Dict[str, Any], name: str) -> Dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["facts"]["system"]["hostname"] = name
    return doc


def gpus(doc: Dict[str, Any], n: int, uuids: Optional[List[str]] = None) -> Dict[str, Any]:
    """The report's one H200 as ``n`` H200s (new indices, bus ids, UUIDs and serials)."""
    doc = copy.deepcopy(doc)
    first = doc["facts"]["driver"]["gpus"][0]
    out = []
    for i in range(n):
        g = dict(first)
        g["index"] = i
        g["uuid"] = uuids[i] if uuids else first["uuid"][:-2] + f"{i:02d}"
        g["serial"] = first["serial"][:-2] + f"{i:02d}"
        g["pci_bus_id"] = f"00000000:00:{6 + i:02X}.0"
        out.append(g)
    doc["facts"]["driver"]["gpus"] = out
    doc["facts"]["driver"]["smi_gpus"] = [dict(g, source="nvidia-smi") for g in out]
    return doc


def driver(doc: Dict[str, Any], version: str, cuda: str) -> Dict[str, Any]:
    """The node kept another driver (an unattended upgrade that skipped it)."""
    doc = copy.deepcopy(doc)
    d = doc["facts"]["driver"]
    d["driver_version"] = d["userspace_version"] = d["kernel_module_version"] = version
    d["driver_cuda"] = cuda
    return doc


def torch(
    doc: Dict[str, Any], version: str, cuda: Optional[str], cudnn: Optional[str], nccl: Optional[str]
) -> Dict[str, Any]:
    """The node's image has another torch."""
    doc = copy.deepcopy(doc)
    t = doc["facts"]["torch"]
    t.update(version=version, cuda=cuda, cudnn_version=cudnn, nccl_version=nccl)
    return doc


def bench_with(doc: Dict[str, Any], bf16: Dict[int, float]) -> Dict[str, Any]:
    """The two-H200 bench with the bf16 n=8192 rate of some GPUs replaced (a slow GPU)."""
    doc = copy.deepcopy(doc)
    for p in doc["points"]:
        if p["dtype"] == "bf16" and p["device"] in bf16:
            p["tflops"] = bf16[p["device"]]
    return doc


def bench_uuids(bench: Dict[str, Any]) -> List[str]:
    return [d["uuid"] for d in bench["devices"]]


def write(folder: Path, doc: Dict[str, Any], name: str = "check.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc, indent=1))
    return path

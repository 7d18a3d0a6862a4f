"""Helpers for the bench tests (no tests here): recorded H200 runs, a fake NVML, fake targets."""

from __future__ import annotations

import json
import shlex
import stat
import types
from pathlib import Path
from typing import Any, Dict, List, Optional

from envdoctor.bench.facts import NvmlSample
from envdoctor.facts.serde import from_data
from tests.fakenvml import FakeNvml as _RecordedNvml

H200_BENCH = Path(__file__).parent / "fixtures" / "h200-bench"

#: The H200's datasheet as a GpuModel-like object, written by hand (not read from the table).
H200_MODEL = types.SimpleNamespace(
    name="NVIDIA H200",
    cc="9.0",
    bandwidth_gbs=4800.0,
    fp32_tflops=67.0,
    tf32_tflops=494.5,
    fp16_tflops=989.0,
    bf16_tflops=989.0,
    fp16_half_rate_accum=False,
    unconfirmed=False,
    unconfirmed_fields=(),
    source="hand-written for the tests",
)


def recorded_run(name: str) -> Dict[str, Any]:
    """``tests/fixtures/h200-bench/<name>.json``: what ``--raw-out`` wrote on the H200."""
    return json.loads((H200_BENCH / f"{name}.json").read_text())


def samples(raw: Dict[str, Any]) -> List[NvmlSample]:
    return [from_data(NvmlSample, s) for s in raw["samples"]]


def protocol_line(kind: str, **fields: Any) -> str:
    return json.dumps({"envdoctor_child": 2, "kind": kind, **fields})


def child_doc(raw: Dict[str, Any]) -> Dict[str, Any]:
    """The bench child's document in a recording (recorded as its whole stdout, before protocol 2)."""
    return json.loads(raw["stdout"])


def fake_python(
    tmp: Path,
    *,
    stdout: str = "",
    events: Optional[List[Dict[str, Any]]] = None,
    result: Optional[Dict[str, Any]] = None,
    stderr: str = "",
    rc: int = 0,
    hang: bool = False,
    signal: Optional[int] = None,
    name: str = "python3",
) -> str:
    """An executable that answers like a child: protocol lines (the events, then the result) and any
    other ``stdout`` on stdout, ``stderr`` on stderr, then an exit. Recorded events name their kind
    "event" (protocol 1): they are written as protocol-2 lines with the same fields."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / f"{name}.stdout"
    err = tmp / f"{name}.stderr"
    lines = []
    for e in events or []:
        fields = {k: v for k, v in e.items() if k not in ("event", "kind")}
        lines.append(protocol_line(e.get("kind") or e["event"], **fields))
    out.write_text("".join(line + "\n" for line in lines) + stdout)
    tail = tmp / f"{name}.result"
    tail.write_text(protocol_line("result", result=result) + "\n" if result is not None else "")
    err.write_text(stderr)
    body = ["#!/bin/sh", "cat > /dev/null", f"cat {shlex.quote(str(err))} >&2", f"cat {shlex.quote(str(out))}"]
    if hang:
        body.append("exec sleep 60")
    if signal is not None:
        body.append(f"kill -{signal} $$")
    body += [f"cat {shlex.quote(str(tail))}", f"exit {rc}"]
    exe = tmp / name
    exe.write_text("\n".join(body) + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe)


def replay(tmp: Path, raw: Dict[str, Any], **kw: Any) -> str:
    """A fake target Python that answers what the H200 child answered (its events, then its document)."""
    return fake_python(tmp, events=raw["events"], result=child_doc(raw), stderr=raw["stderr"], **kw)


class FakeNvml(_RecordedNvml):
    """The H200's recorded NVML answers, ``gpus`` of them, each at a fixed clock, power and throttle
    mask; ``fail`` makes nvmlInit fail with that text."""

    def __init__(
        self, gpus: int = 1, clock: int = 1410, power_mw: int = 699000, mask: int = 0x4, fail: Optional[str] = None
    ) -> None:
        recorded = _RecordedNvml.recorded("h200-driver580-cuda13", gpus=gpus)
        super().__init__(recorded.recording, init_error=(999, fail) if fail else None)
        for i in range(gpus):
            self.set(i, "nvmlDeviceGetUUID", f"GPU-f07bb63c-cd2e-fe8d-534a-d4b919fe973{i}")
            self.set(i, "nvmlDeviceGetClockInfo:1", clock)
            self.set(i, "nvmlDeviceGetTemperature:0", 61)
            self.set(i, "nvmlDeviceGetCurrentClocksEventReasons", mask)
            self.set(i, "nvmlDeviceGetPowerUsage", power_mw)
            self.set(
                i, "nvmlDeviceGetFieldValues:186", [{"nvmlReturn": 0, "valueType": 1, "value": {"uiVal": power_mw}}]
            )

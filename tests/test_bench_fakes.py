"""Helpers for the bench tests (no tests here): recorded H200 runs, a fake NVML, fake targets."""

from __future__ import annotations

import json
import shlex
import stat
import types
from pathlib import Path
from typing import Any, Dict, List, Optional

from envdoctor.bench.child import EVENT_PREFIX
from envdoctor.facts.bench import NvmlSample
from envdoctor.facts.serde import from_data

H200_BENCH = Path(__file__).parent / "fixtures" / "h200-bench"

#: The H200's datasheet as a GpuModel-like object, written by hand (not read from the table).
H200_MODEL = types.SimpleNamespace(
    name="NVIDIA H200", cc="9.0", bandwidth_gbs=4800.0, fp32_tflops=67.0, tf32_tflops=494.5,
    fp16_tflops=989.0, bf16_tflops=989.0, fp16_half_rate_accum=False, unconfirmed=False,
    unconfirmed_fields=(), source="hand-written for the tests",
)


def recorded_run(name: str) -> Dict[str, Any]:
    """``tests/fixtures/h200-bench/<name>.json``: what ``--raw-out`` wrote on the H200."""
    return json.loads((H200_BENCH / f"{name}.json").read_text())


def samples(raw: Dict[str, Any]) -> List[NvmlSample]:
    return [from_data(NvmlSample, s) for s in raw["samples"]]


def fake_python(tmp: Path, *, stdout: str = "", events: Optional[List[Dict[str, Any]]] = None,
                stderr: str = "", rc: int = 0, hang: bool = False, signal: Optional[int] = None,
                name: str = "python3") -> str:
    """An executable that answers like the benchmark child: events on stderr, stdout, exit."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / f"{name}.stdout"
    err = tmp / f"{name}.stderr"
    out.write_text(stdout)
    lines = [EVENT_PREFIX + json.dumps(e) for e in events or []]
    err.write_text("".join(line + "\n" for line in lines) + stderr)
    body = ["#!/bin/sh", f"cat {shlex.quote(str(err))} >&2"]
    if hang:
        body.append("exec sleep 60")
    if signal is not None:
        body.append(f"kill -{signal} $$")
    body += [f"cat {shlex.quote(str(out))}", f"exit {rc}"]
    exe = tmp / name
    exe.write_text("\n".join(body) + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe)


def replay(tmp: Path, raw: Dict[str, Any], **kw: Any) -> str:
    """A fake target Python that prints exactly what the H200 child printed."""
    return fake_python(tmp, stdout=raw["stdout"], events=raw["events"], stderr=raw["stderr"], **kw)


class FakeNvml:
    """Just enough of pynvml: ``gpus`` GPUs, each at a fixed clock, power and throttle mask."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_FI_DEV_POWER_INSTANT = 186

    def __init__(self, gpus: int = 1, clock: int = 1410, power_mw: int = 699000, mask: int = 0x4,
                 fail: Optional[Exception] = None) -> None:
        self.gpus, self.clock, self.power_mw, self.mask, self.fail = gpus, clock, power_mw, mask, fail

    def nvmlInit(self) -> None:
        if self.fail:
            raise self.fail

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-f07bb63c-cd2e-fe8d-534a-d4b919fe973{h}"

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return types.SimpleNamespace(busId=f"00000000:00:0{6 + h}.0".encode())

    def nvmlDeviceGetName(self, h: int) -> str:
        return "NVIDIA H200"

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return 1980

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return 700000

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return self.clock

    def nvmlDeviceGetTemperature(self, h: int, kind: int) -> int:
        return 61

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self.mask

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self.power_mw

    def nvmlDeviceGetFieldValues(self, h: int, ids: List[int]) -> List[Any]:
        value = types.SimpleNamespace(uiVal=self.power_mw)
        return [types.SimpleNamespace(nvmlReturn=0, valueType=1, value=value)]

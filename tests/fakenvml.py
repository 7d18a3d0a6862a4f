"""One fake pynvml for every test: it replays a recording of pynvml answers (JSON).

A recording maps function names to answers, per GPU; arguments after the handle go after a
colon (``"nvmlDeviceGetClockInfo:1"`` answers ``nvmlDeviceGetClockInfo(h, 1)``). An answer
``{"error": 3}`` raises the real ``pynvml.NVMLError`` with that code; a function with no answer
raises Not Supported, as a GPU without the feature does. Objects come back as namespaces.

>>> nv = FakeNvml.recorded("h200-driver580-cuda13")
>>> nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(0))
'NVIDIA H200'
"""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pynvml

FIXTURES = Path(__file__).parent / "fixtures"


def _obj(value: Any) -> Any:
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: _obj(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_obj(v) for v in value]
    return value


class Handle:
    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"Handle({self.index})"


class RecordedError(pynvml.NVMLError):
    """pynvml's error with the text a real driver printed (pynvml asks the library for it)."""

    def __new__(cls, value: int, message: str) -> RecordedError:
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __init__(self, value: int, message: str) -> None:
        Exception.__init__(self, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class FakeNvml:
    NVMLError = pynvml.NVMLError

    def __init__(self, recording: Dict[str, Any], init_error: Optional[Any] = None, hang: float = 0.0) -> None:
        self.recording = copy.deepcopy(recording)
        self.init_error = init_error  # a code, or (code, the driver's text)
        self.hang = hang
        self.calls: List[str] = []
        self.events: List[Any] = []  # (gpu index, xid) waiting to be delivered
        self._handles = [Handle(i) for i in range(len(self.recording.get("gpus", [])))]

    @classmethod
    def recorded(cls, machine: str, gpus: Optional[int] = None, name: str = "nvml.json", **kw: Any) -> FakeNvml:
        """The recording ``name`` of ``machine``; ``gpus=N`` repeats its first GPU N times (new UUIDs)."""
        data = json.loads((FIXTURES / machine / name).read_text())
        if gpus is not None:
            first = data["gpus"][0]
            data["gpus"] = []
            for i in range(gpus):
                g = copy.deepcopy(first)
                g["nvmlDeviceGetUUID"] = g["nvmlDeviceGetUUID"][:-2] + f"{i:02d}"
                g["nvmlDeviceGetPciInfo"]["busId"] = f"00000000:00:{6 + i:02X}.0"
                data["gpus"].append(g)
        return cls(data, **kw)

    def set(self, gpu: int, name: str, value: Any) -> None:
        """Change one answer (a test's fault): ``set(0, "nvmlDeviceGetRemappedRows", [0, 0, 1, 0])``."""
        self.recording["gpus"][gpu][name] = value

    def __getattr__(self, name: str) -> Any:
        real = getattr(pynvml, name, None)
        if not name.startswith("nvml") or (real is not None and not callable(real)):
            return getattr(pynvml, name)  # constants and structure types
        if name.startswith("nvmlSystem"):
            return lambda: self._answer(self.recording["system"], name, ())
        return self._device_call(name)

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.hang:
            import time

            time.sleep(self.hang)
        if isinstance(self.init_error, tuple):
            raise RecordedError(*self.init_error)
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self._handles)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Handle:
        return self._handles[i]

    # events: tests queue (gpu, xid) with ``self.events.append((0, 79))``
    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceRegisterEvents(self, handle: Handle, kinds: int, event_set: Any) -> None:
        self._answer(self.recording["gpus"][handle.index], "nvmlDeviceRegisterEvents", (), default=None)

    def nvmlEventSetWait_v2(self, event_set: Any, timeout_ms: int) -> Any:
        if not self.events:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        gpu, xid = self.events.pop(0)
        return types.SimpleNamespace(device=self._handles[gpu], eventData=xid, eventType=8)

    def nvmlEventSetFree(self, event_set: Any) -> None:
        pass

    def _device_call(self, name: str) -> Callable[..., Any]:
        def call(handle: Handle, *args: Any) -> Any:
            self.calls.append(name)
            gpu = self.recording["gpus"][handle.index]
            if name in ("nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus"):
                other = args[0].index  # the second handle: its index is part of the key
                rest = tuple(a[0] if isinstance(a, tuple) else a for a in args[1:])
                key = name + ":" + ",".join(str(a) for a in (other,) + rest)
                if key in gpu:
                    return self._answer(gpu, key, ())
                args = rest
            if name == "nvmlDeviceGetFieldValues":
                args = tuple(args[0])
            if name == "nvmlDeviceGetGpuFabricInfo":
                args = ()
            return self._answer(gpu, name, args)

        return call

    def _answer(self, table: Dict[str, Any], name: str, args: tuple, default: Any = "unsupported") -> Any:
        key = name + (":" + ",".join(str(a) for a in args) if args else "")
        value = table.get(key, table.get(name, default))
        if value == "unsupported":
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if isinstance(value, dict) and set(value) == {"error"}:
            raise pynvml.NVMLError(int(value["error"]))
        return _obj(value)

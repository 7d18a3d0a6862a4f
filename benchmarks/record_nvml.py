"""Record what pynvml answers on this machine, in the format tests/fakenvml.py replays.

Run on a GPU machine::

    python benchmarks/record_nvml.py > tests/fixtures/<machine>/nvml.json

It runs envdoctor's own NVML session (every field of envdoctor.nvml.FIELDS for every GPU, every
pair of GPUs, an XID event-set registration) through a proxy of the pynvml module that writes
down each call, its arguments after the handle, and its answer or its NVML error code. So the
recording holds exactly the calls envdoctor makes, answered by the real driver.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import sys
from typing import Any, Dict, List

import pynvml  # a recording tool: it wraps the real module, as envdoctor.nvml's caller

from envdoctor.nvml import FIELDS, PAIR_FIELDS, Session


def plain(value: Any) -> Any:
    """pynvml's answers as JSON: structures as objects, ctypes arrays as lists, bytes as text."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, ctypes.Array):
        return [plain(v) for v in value]
    if isinstance(value, ctypes.Structure):
        return {name: plain(getattr(value, name)) for name, *_ in value._fields_}
    if isinstance(value, ctypes._SimpleCData):
        return value.value
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if hasattr(value, "__dict__"):  # an answer object of another binding (a test's fake)
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


class Recorder:
    """The pynvml module, with every device call written down per GPU."""

    def __init__(self) -> None:
        self.gpus: List[Dict[str, Any]] = []
        self.system: Dict[str, Any] = {}
        self.handles: Dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        real = getattr(pynvml, name)
        if not callable(real) or not name.startswith("nvml") or isinstance(real, type):
            return real
        if name == "nvmlDeviceGetHandleByIndex":

            def by_index(i: int) -> Any:
                h = real(i)
                self.handles[id(h)] = i
                while len(self.gpus) <= i:
                    self.gpus.append({})
                return h

            return by_index
        if name.startswith("nvmlSystem"):
            return lambda *a: self._call(self.system, name, real, a, ())
        if name.startswith("nvmlDevice") and name not in ("nvmlDeviceGetCount",):

            def device_call(h: Any, *args: Any) -> Any:
                gpu = self.handles.get(id(h))
                if gpu is None:
                    return real(h, *args)
                shown = args
                if name in ("nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus"):
                    shown = (self.handles.get(id(args[0]), -1),) + args[1:]  # the other GPU's index
                if name == "nvmlDeviceGetFieldValues":
                    shown = tuple(args[0])
                if name in ("nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetGpuFabricInfoV"):
                    shown = ()
                if name == "nvmlDeviceRegisterEvents":
                    shown = ()  # the event set is this run's own
                return self._call(self.gpus[gpu], name, real, (h,) + args, shown, fabric="Fabric" in name)

            return device_call
        return real

    def _call(
        self, table: Dict[str, Any], name: str, real: Any, args: tuple, shown: tuple, fabric: bool = False
    ) -> Any:
        key = name + (":" + ",".join(str(a) for a in shown) if shown else "")
        try:
            value = real(*args)
        except pynvml.NVMLError as exc:
            table[key] = {"error": int(getattr(exc, "value", 999))}
            raise
        if fabric:  # the answer is the structure passed by reference
            table[key] = plain(args[1]._obj) if hasattr(args[1], "_obj") else plain(value)
        else:
            table[key] = plain(value)
        return value


def main() -> int:
    rec = Recorder()
    with Session(rec) as s:
        if not s.ok:
            print(f"NVML did not start: {s.error}", file=sys.stderr)
            return 1
        s.system()
        for i in range(s.count):
            s.read(i, FIELDS)
            for j in range(s.count):
                if i != j:
                    s.pair(i, j, PAIR_FIELDS)
        watch = s.watch_xid()
        watch.close()
    try:
        from importlib.metadata import version

        binding = version("nvidia-ml-py")
    except Exception:  # noqa: BLE001 - only for the note
        binding = "?"
    doc = {
        "_about": f"recorded by benchmarks/record_nvml.py on {datetime.date.today()} "
        f"(nvidia-ml-py {binding}); replayed by tests/fakenvml.py",
        "system": rec.system,
        "gpus": rec.gpus,
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

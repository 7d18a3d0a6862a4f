"""benchmarks/record_nvml.py records what envdoctor asks; the fake replays it to the same answers."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

from envdoctor.nvml import FIELDS, Session
from tests.fakenvml import FakeNvml


def load_recorder():
    path = Path(__file__).parent.parent / "benchmarks" / "record_nvml.py"
    spec = importlib.util.spec_from_file_location("record_nvml", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_recording_replays_to_the_same_readings(monkeypatch):
    recorder = load_recorder()
    source = FakeNvml.recorded("h200-driver580-cuda13", gpus=2)
    source.set(1, "nvmlDeviceGetP2PStatus:0,1", 5)  # GPU 1 -> GPU 0: no P2P write
    monkeypatch.setattr(recorder, "pynvml", source)  # the "driver" being recorded
    out = io.StringIO()
    with redirect_stdout(out):
        assert recorder.main() == 0
    recording = json.loads(out.getvalue())
    assert set(recording) == {"_about", "system", "gpus"} and len(recording["gpus"]) == 2
    with Session(source) as a, Session(FakeNvml(recording)) as b:
        for i in range(2):
            assert a.read(i, FIELDS).values == b.read(i, FIELDS).values
        assert b.pair(1, 0).values["p2p_write"] == "not supported" and b.pair(0, 1).values["p2p_write"] == "ok"
    assert recording["gpus"][0]["nvmlDeviceGetNumaNodeId"] == {"error": 3}
    assert sys.modules.get("record_nvml") is None

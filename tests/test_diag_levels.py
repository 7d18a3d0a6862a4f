"""``envdoctor diag -r 2`` and ``-r 3`` end to end, every part through its real host code: one fake
target interpreter answers each child by the script it is sent, with the H200's recorded answers
(the torch child of tests/fixtures/h200-driver580-cuda13, the bench suites of
tests/fixtures/h200-bench-suites, burn's healthy H200 child of tests/test_burn_fakes.py, comms'
host copies of docs/examples/h200/comms.json), and the H200's recorded NVML. Then one fault: wrong
products in the burn, which must FAIL the node naming the burn."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests.documents import validate
from tests.fakenvml import FakeNvml
from tests.test_burn_fakes import _FAKE as BURN_FAKE
from tests.test_burn_fakes import healthy_steps, miscompare_steps

FIX = Path(__file__).parent / "fixtures"
H200 = FIX / "h200-driver580-cuda13"

DISPATCH = r"""
import json, os, sys, time
spec = json.load(open(%(spec)r))
text = sys.stdin.read()
def line(kind, **fields):
    fields.update({"envdoctor_child": 2, "kind": kind, "t": time.time()})
    sys.stdout.write(json.dumps(fields) + "\n"); sys.stdout.flush()
if "envdoctor diag's tiny CUDA operation" in text:
    line("stage", stage="import torch")
    for d in spec["gpu"]["devices"]:
        line("device", device=d)
    line("result", result=spec["gpu"])
elif "def _tiny_ops(" in text:
    for raw in spec["torch"]:
        sys.stdout.write(raw + "\n")
    sys.stdout.flush()
elif 'CHILD_SCHEMA = "envdoctor.bench.child/1"' in text:
    for e in spec["bench_events"]:
        sys.stdout.write(json.dumps(e) + "\n")
    line("result", result=spec["bench"])
elif 'CHILD_SCHEMA = "envdoctor.burn.child/1"' in text:
    os.execv(sys.executable, [sys.executable, %(burn)r, "-"] + sys.argv[2:])
elif 'CHILD_SCHEMA = "envdoctor.comms.child/1"' in text:
    line("result", result=spec["comms"])
else:
    line("error", error={"kind": "internal", "message": "the fake target has no answer for this script"})
"""


def _exe(path: Path, text: str) -> str:
    path.write_text(f"#!{sys.executable}\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def recorded_torch_child():
    lines = (H200 / "torch-child-protocol2.txt").read_text().splitlines()
    return [x for x in lines if x.startswith("{")]


def comms_answer():
    """One rank's answer in comms.py's format, with the host copies the H200 measured (docs/examples/h200)."""
    doc = json.loads((Path(__file__).parent.parent / "docs/examples/h200/comms.json").read_text())
    device = {"index": 0, "name": "NVIDIA H200", "pci_bus_id": "0000:00:06.0", "uuid": "GPU-c7d3a8fe"}
    directions = [
        {"direction": c["direction"], "iters": c["iters"], "time_s": c["bytes"] / (c["gbps"] * 1e9)}
        for c in doc["host_copies"]
    ]
    return {
        "schema": "envdoctor.comms.child/1",
        "rank": 0,
        "world_size": 1,
        "local_rank": 0,
        "host": "node1",
        "backend": "nccl",
        "torch_version": "2.11.0+cu130",
        "nccl_version": "2.28.9",
        "device": device,
        "points": [],
        "pairs": [],
        "notes": [],
        "env": {},
        "host_copies": {"status": "ok", "bytes": 256 << 20, "pinned": True, "directions": directions},
        "ranks": [{"rank": 0, "local_rank": 0, "host": "node1", "device": device}],
    }


def target(tmp: Path, burn_steps) -> str:
    bench = json.loads((FIX / "h200-bench-suites/all.json").read_text())
    gpu = {
        "torch_version": "2.11.0+cu130",
        "torch_cuda": "13.0",
        "count": 1,
        "devices": [
            {
                "index": 0,
                "kind": "cuda",
                "name": "NVIDIA H200",
                "capability": "9.0",
                "uuid": "GPU-c7d3a8fe",
                "ok": True,
                "rel_error": 1.1e-07,
                "init_ms": 402.1,
                "op_ms": 3.2,
                "error": None,
            }
        ],
    }
    spec = {
        "gpu": gpu,
        "torch": recorded_torch_child(),
        "bench": bench["result"],
        "bench_events": bench["events"],
        "comms": comms_answer(),
    }
    (tmp / "spec.json").write_text(json.dumps(spec))
    (tmp / "burn.json").write_text(json.dumps({"*": burn_steps}))
    burn = _exe(tmp / "burnfake", BURN_FAKE % {"path": str(tmp / "burn.json")})
    return _exe(tmp / "python3", DISPATCH % {"spec": str(tmp / "spec.json"), "burn": burn})


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNvml.recorded("h200-driver580-cuda13")
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def diag(*args):
    return CliRunner().invoke(cli, ["diag", *args])


def statuses(doc):
    return {(t["name"], t["gpu"]): t["status"] for t in doc["tests"]}


def test_level_2_on_the_recorded_h200_passes_every_test_with_its_figure(tmp_path, nvml):
    r = diag("-r", "2", "--json", "--python", target(tmp_path, healthy_steps(0)))
    doc = json.loads(r.stdout)
    validate(doc, "diag")
    s = statuses(doc)
    for name in ("cuda_op", "state", "matmul", "memory_bandwidth", "burn", "memtest", "host_copy"):
        assert s[(name, 0)] == "PASS", (name, doc["tests"])
    assert s[("topo", None)] == "PASS" and s[("fabric", None)] == "PASS"
    figures = {t["name"]: t["figure"] for t in doc["tests"] if t["gpu"] == 0}
    assert round(figures["matmul"], 1) == 662.4 and round(figures["memory_bandwidth"]) == 4271
    assert figures["burn"] == 659.4
    copies = [(t["detail"][:3], t["figure"], t["threshold"]) for t in doc["tests"] if t["name"] == "host_copy"]
    assert copies == [("h2d", 55.393, 25.21), ("d2h", 55.285, 25.21)]
    assert set(doc["stage_s"]) == {"state", "check", "cuda_op", "bench", "burn", "comms"}
    assert doc["gpus"][0]["name"] == "NVIDIA H200"
    assert s[("check", None)] == "PASS" and r.exit_code == 0 and doc["verdict"] == "PASS", r.output
    assert doc["summary"] == {
        "verdict": "PASS",
        "exit_code": 0,
        "passed": 11,
        "warned": 0,
        "failed": 0,
        "skipped": 0,
        "no_threshold": 0,
    }


def test_level_3_adds_power_and_warns_on_a_memory_test_of_one_pattern(tmp_path, nvml):
    r = diag("-r", "3", "--json", "--python", target(tmp_path, healthy_steps(0)))
    doc = json.loads(r.stdout)
    s = statuses(doc)
    power = next(t for t in doc["tests"] if t["name"] == "power")
    # the recorded NVML is idle (128 W at 1980 MHz): below the limit at the top clock is no fault
    assert power["status"] == "PASS" and "at its top clock" in power["detail"]
    assert s[("memtest", 0)] == "WARN"
    assert (r.exit_code, doc["verdict"], doc["failed"]) == (0, "WARN", ["memtest (GPU 0)"]), r.output


def test_wrong_products_in_the_burn_fail_the_node_naming_the_burn(tmp_path, nvml):
    steps = miscompare_steps()
    r = diag("-r", "2", "--python", target(tmp_path, steps))
    assert r.exit_code == 1, r.output
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("verdict: FAIL:") and "burn (GPU 0)" in last
    assert "ED800" in r.stdout


def test_two_gpus_one_held_by_another_job_fails_that_gpu_only_and_loads_none(tmp_path, monkeypatch):
    fake = FakeNvml.recorded("h200-driver580-cuda13", gpus=2)
    fake.set(1, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 999999, "usedGpuMemory": 60 << 30}])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    py = target(tmp_path, healthy_steps(0))
    spec = json.loads((tmp_path / "spec.json").read_text())
    spec["gpu"]["count"] = 2
    spec["gpu"]["devices"].append(dict(spec["gpu"]["devices"][0], index=1))
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    r = diag("-r", "2", "--json", "--python", py)
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["failed"] == ["state (GPU 1)"], r.output
    assert [(g["index"], g["verdict"], g["failed"]) for g in doc["gpus"]] == [(0, "PASS", []), (1, "FAIL", ["state"])]
    assert [t["name"] for t in doc["tests"] if t["level"] == 2] == ["load"]  # nothing loaded
    assert doc["notes"][0].startswith("levels 2-2 not run: GPU 1 is not free")


def test_a_device_past_the_last_gpu_is_a_usage_error(tmp_path, nvml):
    r = diag("--device", "3", "--python", target(tmp_path, healthy_steps(0)))
    assert r.exit_code == 2 and "--device 3: GPU 3 does not exist: there are 1 GPU(s)" in r.stdout
    assert "see `nvidia-smi -L`" in r.stderr


def test_suppress_takes_a_finding_out_of_every_test_and_the_exit_code_and_says_so(tmp_path, nvml):
    """The same wrong products as above with --suppress ED800: the burn no longer fails, the node
    passes (exit 0), and both the text and the document say what was hidden."""
    py = target(tmp_path, miscompare_steps())
    r = diag("-r", "2", "--json", "--suppress", "ed800", "--python", py)
    doc = json.loads(r.stdout)
    validate(doc, "diag")
    assert r.exit_code == 0 and doc["verdict"] == "PASS", r.output
    assert statuses(doc)[("burn", 0)] == "PASS"
    assert doc["suppressed"]["codes"] == ["ED800"]
    assert [f["code"] for f in doc["suppressed"]["findings"]] == ["ED800"]
    assert "ED800" not in [f["code"] for f in doc["findings"]]
    text = diag("-r", "2", "--suppress", "ED800", "--python", py)
    assert text.exit_code == 0 and "suppressed (--suppress): ED800 (error)" in text.stdout, text.output
    plain = json.loads(diag("-r", "2", "--json", "--python", py).stdout)
    assert plain["suppressed"] is None and plain["verdict"] == "FAIL"


@pytest.mark.parametrize("code, why", [("ED8000", "finding codes look like ED305"), ("ED899", "no such finding code")])
def test_diag_refuses_a_code_that_is_not_in_the_registry(tmp_path, code, why):
    r = diag("--suppress", code, "--python", sys.executable)
    assert r.exit_code == 2 and why in r.output, r.output

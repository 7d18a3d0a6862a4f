"""The one NVML wrapper (envdoctor/nvml.py) against the H200's recorded answers and their faults."""

from __future__ import annotations

import time

import pynvml
import pytest

from envdoctor.nvml import (
    COUNTERS,
    FIELDS,
    IDENTITY,
    NOT_SUPPORTED,
    SAMPLE,
    Sampler,
    Session,
)
from tests.fakenvml import FakeNvml

H200 = "h200-driver580-cuda13"


def test_h200_identity_and_links():
    with Session(FakeNvml.recorded(H200)) as s:
        assert s.ok and s.count == 1
        assert s.system().values == {
            "driver_version": "580.159.04",
            "cuda_version": "13.0",
            "nvml_version": "13.580.159.04",
        }
        r = s.read(
            0, IDENTITY + ("pcie", "numa_node", "gpu_numa_id", "cpu_affinity", "nvlinks", "temperature_thresholds")
        )
    assert r.values["name"] == "NVIDIA H200" and r.values["compute_capability"] == "9.0"
    assert r.values["pci"] == {"bus_id": "00000000:00:06.0", "device_id": "0x2335"}
    assert r.values["memory"]["total"] == 150754820096 and r.values["power_limit_w"] == 700.0
    assert r.values["pcie"] == {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "gpu_max_gen": 5}
    assert r.values["cpu_affinity"] == list(range(16))  # nvidia-smi topo -m: 0-15
    assert r.values["temperature_thresholds"]["slowdown"] == 89
    assert r.values["numa_node"] == 0  # nvidia-smi topo -m: NUMA Affinity 0
    # what the H200 does not have is an answer, not a failure
    assert r.errors == {"gpu_numa_id": NOT_SUPPORTED, "nvlinks": NOT_SUPPORTED}


def test_every_field_answers_or_says_why():
    with Session(FakeNvml.recorded(H200)) as s:
        r = s.read(0, FIELDS)
    assert set(r.values) == set(FIELDS)
    for name, value in r.values.items():
        assert (value is None) == (name in r.errors), name
    assert r.values["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": 0, "failure": 0}
    assert r.values["power_w"] == 128.15 and r.values["energy_j"] == 30543.648
    assert r.values["power_violation_ns"] == 13627817536


def test_a_field_that_fails_keeps_the_gpu_and_the_other_fields():
    nv = FakeNvml.recorded(H200)
    nv.set(0, "nvmlDeviceGetTemperature:0", {"error": 999})  # NVML_ERROR_UNKNOWN
    with Session(nv) as s:
        r = s.read(0, SAMPLE)
    assert r.values["temperature_c"] is None and r.errors["temperature_c"].startswith("NVML: ")
    assert r.values["sm_clock_mhz"] == 1980


def test_a_gpu_whose_handle_fails_does_not_hide_the_others():
    nv = FakeNvml.recorded(H200, gpus=2)
    real = nv.nvmlDeviceGetHandleByIndex

    def handle(i):
        if i == 0:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return real(i)

    nv.nvmlDeviceGetHandleByIndex = handle
    with Session(nv) as s:
        first, second = s.read_all(("name",))
    assert first.values == {"name": None} and "GPU is lost" in first.errors["name"]
    assert second.values == {"name": "NVIDIA H200"}


def test_init_failures_are_explained():
    for code, text, kind, words in (
        (12, "NVML Shared Library Not Found", "not_found", "libnvidia-ml.so.1 not found"),
        (9, "Driver Not Loaded", "unavailable", "no NVIDIA kernel module"),
        (18, "Driver/library version mismatch", "exit_status", "version mismatch"),
    ):
        s = Session(FakeNvml.recorded(H200, init_error=(code, text)))
        assert not s.ok and s.error.kind == kind and words in s.error.message and s.count == 0


def test_an_old_binding_without_a_function_is_a_field_error_not_a_crash():
    nv = FakeNvml.recorded(H200)
    nv.nvmlDeviceGetCurrentClocksEventReasons = None  # calling None: TypeError, as a missing symbol would
    with Session(nv) as s:
        r = s.read(0, ("reasons_mask", "name"))
    assert r.values["name"] == "NVIDIA H200" and r.errors["reasons_mask"].startswith("this nvidia-ml-py cannot ask it")


def test_counters_and_pairs():
    nv = FakeNvml.recorded(H200, gpus=2)
    nv.set(1, "nvmlDeviceGetRemappedRows", [0, 1, 1, 0])
    with Session(nv) as s:
        counters = s.read_all(COUNTERS)
        pair = s.pair(0, 1)
    assert counters[1].values["remapped_rows"] == {"correctable": 0, "uncorrectable": 1, "pending": 1, "failure": 0}
    assert pair.values == {"path": "X", "p2p_read": "ok", "p2p_write": "ok", "p2p_nvlink": "ok"}


def test_xid_events_arrive_with_the_gpu_index():
    nv = FakeNvml.recorded(H200, gpus=2)
    with Session(nv) as s:
        watch = s.watch_xid()
        assert watch.wait(1) == []
        nv.events.append((1, 79))
        (event,) = watch.wait(1)
        watch.close()
    assert (event.gpu, event.xid) == (1, 79)


def test_the_sampler_reads_every_gpu_until_stopped():
    with Session(FakeNvml.recorded(H200, gpus=2)) as s:
        sampler = Sampler(s, SAMPLE, 0.01)
        assert sampler.start()
        time.sleep(0.05)
        sampler.stop()
    assert {r.index for r in sampler.readings} == {0, 1} and len(sampler.readings) >= 6
    assert sampler.power_kind == "instant power"


def test_nvml_is_imported_in_one_module_only():
    import pathlib
    import re

    import envdoctor

    root = pathlib.Path(envdoctor.__file__).parent
    importers = [p for p in root.rglob("*.py") if re.search(r"^\s*(import pynvml|from pynvml)", p.read_text(), re.M)]
    assert [p.name for p in importers] == ["nvml.py"]


def test_nvlinks_of_an_nvswitch_gpu_with_one_link_down():
    """An HGX H100/H200 GPU has 18 NVLink 4.0 links (NVML reports version 6); link 3 is down here."""
    nv = FakeNvml.recorded(H200)
    for link in range(18):
        nv.set(0, f"nvmlDeviceGetNvLinkState:{link}", 0 if link == 3 else 1)
        nv.set(0, f"nvmlDeviceGetNvLinkVersion:{link}", 6)
        nv.set(0, f"nvmlDeviceGetNvLinkRemotePciInfo:{link}", {"busId": "00000000:05:00.0"})
    nv.set(0, "nvmlDeviceGetNvLinkState:18", {"error": 2})  # past the last link
    with Session(nv) as s:
        links = s.read(0, ("nvlinks",)).values["nvlinks"]
    assert len(links) == 18 and [x["link"] for x in links if not x["active"]] == [3]
    assert links[0]["generation"] == "4.0" and links[0]["remote_bus_id"] == "00000000:05:00.0"


def test_the_real_h200_recording_replays_to_what_nvidia_smi_said():
    """benchmarks/record_nvml.py on the H200 (idle), against nvidia-smi -q and topo -m of that machine."""
    with Session(FakeNvml.recorded("h200-driver580-cuda13", name="nvml-recorded.json")) as s:
        r = s.read(0, FIELDS)
    v = r.values
    assert (v["name"], v["compute_capability"], v["power_limit_w"], v["max_sm_clock_mhz"]) == (
        "NVIDIA H200",
        "9.0",
        700.0,
        1980,
    )
    assert v["pcie"] == {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "gpu_max_gen": 5}
    assert v["numa_node"] == 0 and v["cpu_affinity"] == list(range(16))  # topo -m: 0-15, NUMA 0
    assert v["temperature_thresholds"] == {"shutdown": 95, "slowdown": 89, "mem_max": 95, "gpu_max": 87}
    assert v["ecc_mode"] == {"current": 1, "pending": 1} and v["mig_mode"] == {"current": 0, "pending": 0}
    assert v["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": 0, "failure": 0}
    assert v["reasons_mask"] == 1 and v["sm_clock_mhz"] == 345  # idle: GpuIdle, 345 MHz
    assert r.errors["nvlinks"] == NOT_SUPPORTED and r.errors["fabric"] == NOT_SUPPORTED


# --- the one bounded NVML read (nvml.bounded), for every NVML probe -------------------------------------


def test_bounded_gives_the_answer_the_late_value_or_raises_what_the_read_raised():
    import threading

    from envdoctor.nvml import bounded

    assert bounded(lambda: 7, 1.0, "t", lambda e: -1) == 7
    hold = threading.Event()
    late = bounded(lambda: hold.wait(5) and 1, 0.2, "envdoctor-test-hang", lambda e: (e.kind, e.message))
    hold.set()
    assert late == ("timeout", "NVML did not answer in 0.2 s")

    def broken():
        raise ValueError("a bug in a reader")

    with pytest.raises(ValueError, match="a bug in a reader"):
        bounded(broken, 1.0, "t", lambda e: None)


def test_links_and_gpu_state_read_nvml_through_the_one_bounded_read(monkeypatch, tmp_path):
    """links/probe.py and probes/gpu_state.py ran the same thread, join and timeout each; now both
    go through nvml.bounded (a hung NVML is the same timeout in both)."""
    import envdoctor.nvml as nvml
    from envdoctor.links import probe as links
    from envdoctor.probes import gpu_state
    from envdoctor.probes.context import Context
    from tests.fakenvml import FakeNvml

    names = []
    real = nvml.bounded

    def spy(read, timeout, name, late):
        names.append(name)
        return real(read, timeout, name, late)

    monkeypatch.setattr(links, "bounded", spy)
    monkeypatch.setattr(gpu_state, "bounded", spy)
    hung = FakeNvml.recorded("h200-driver580-cuda13", hang=2.0)
    ctx = Context(root=tmp_path, env={}, timeout=0.3, nvml=hung)
    assert links.probe(ctx).error.message == gpu_state.probe(ctx).error.message == "NVML did not answer in 0.3 s"
    assert names == ["envdoctor-links", "envdoctor-gpu-state"]


FINISH = r"""
import sys, time
from envdoctor import clicore, nvml

def read():
    time.sleep(float(sys.argv[2]))
    open(sys.argv[1], "w").write("done")
    return "late answer"

clicore.own_process()
print(nvml.bounded(read, 0.05, "envdoctor-test-nvml", lambda e: e.message), flush=True)
clicore.finish(0)
"""


@pytest.mark.parametrize("sleep, written", [(0.2, True), (30.0, False)])
def test_finish_waits_a_bounded_time_for_an_nvml_read_given_up_on(tmp_path, sleep, written):
    """clicore.finish ends envdoctor's process without teardown: a thread of nvml.bounded that did
    not answer in its timeout is waited for (nvml.settle: 0.2 s, it finishes its work), but not
    past nvml.SETTLE_S (30 s: the process ends anyway, well before)."""
    import subprocess
    import sys
    import time

    out = tmp_path / "done.txt"
    began = time.monotonic()
    r = subprocess.run([sys.executable, "-c", FINISH, str(out), str(sleep)], capture_output=True, text=True, timeout=20)
    took = time.monotonic() - began
    assert r.returncode == 0 and r.stdout == "NVML did not answer in 0.05 s\n", r.stderr
    assert out.exists() is written
    assert took < 10, took


def test_settle_waits_for_each_thread_given_up_on_once():
    import threading

    import envdoctor.nvml as nvml

    nvml.settle(0.0)  # the threads other tests' hung fakes left behind
    gate = threading.Event()
    assert nvml.bounded(gate.wait, 0.01, "envdoctor-test-hang", lambda e: e.kind) == "timeout"
    assert nvml.settle(0.05) == ["envdoctor-test-hang"]  # still running: left to the exit
    assert nvml.settle(0.05) == []  # waited for once: a later command does not wait again
    gate.set()

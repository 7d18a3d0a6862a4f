"""The burn host with fake target interpreters (protocol-2 lines, one scenario per GPU) and the
H200's recorded NVML answers (tests/fakenvml.py): a hung or dead GPU, Xids, ECC, a stop."""

from __future__ import annotations

import signal
import threading

from envdoctor.burn.host import run_burn
from tests.fakenvml import FakeNvml
from tests.test_burn_fakes import fake_target, healthy_steps


def two_h200s():
    return FakeNvml.recorded("h200-driver580-cuda13", gpus=2)


def run(python, nvml, **kw):
    kw.setdefault("seconds", 5.0)
    kw.setdefault("memtest_s", 0.5)
    kw.setdefault("sample_every", 0.2)
    kw.setdefault("idle_timeout", 2.0)
    return run_burn(python, nvml=nvml, env={"PATH": "/usr/bin:/bin"}, **kw)


def test_two_healthy_gpus_are_ok_with_their_nvml_samples(tmp_path):
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": healthy_steps(1)})
    r = run(py, two_h200s())
    assert [(g.index, g.nvml_index, g.verdict) for g in r.gpus] == [(0, 0, "OK"), (1, 1, "OK")]
    g = r.gpus[0]
    assert g.phases[0].burst_tflops == 780.0 and g.samples and g.summary.temperature_max_c == 48
    assert (g.slowdown_c, g.power_limit_w, g.counter_deltas.ecc_uncorrected) == (89, 700.0, 0)
    assert r.torch_version == "2.11.0+cu130" and r.xid_watch == "Xid events of 2 GPU(s) watched"
    assert [f.code for f in g.findings] == ["ED827"]  # under a second of load: no rate verdict


def test_a_gpu_that_hangs_mid_run_is_faulty_and_the_other_is_reported(tmp_path):
    hang = healthy_steps(1, extra=[("hang",)])
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": hang})
    r = run(py, two_h200s())
    ok, hung = r.gpus
    assert ok.verdict == "OK" and ok.phases[0].status == "ok"
    assert hung.verdict == "FAULTY" and [f.code for f in hung.findings if f.severity == "error"] == ["ED816"]
    assert hung.child.state == "hung" and hung.child.stage == "load bf16"
    assert hung.phases[0].status == "missing" and len(hung.phases[0].intervals) == 6  # what it did before
    assert "printed nothing for 2 s" in hung.findings[0].evidence[0]


def test_a_gpu_whose_process_is_killed_mid_run_is_faulty(tmp_path):
    die = healthy_steps(1, extra=[("die", int(signal.SIGKILL))])
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": die})
    r = run(py, two_h200s())
    assert [g.verdict for g in r.gpus] == ["OK", "FAULTY"]
    assert [f.code for f in r.gpus[1].findings if f.severity == "error"] == ["ED817"]
    assert "killed by SIGKILL during load bf16" in r.gpus[1].findings[0].evidence[0]


def test_a_critical_xid_during_the_run_makes_its_gpu_faulty(tmp_path):
    nv = two_h200s()
    nv.events.extend([(1, 79), (0, 13)])
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": healthy_steps(1)})
    r = run(py, nv)
    zero, one = r.gpus
    assert one.verdict == "FAULTY" and [x.xid for x in one.xids] == [79] and one.xids[0].severity == "critical"
    assert "ED807" in [f.code for f in one.findings]
    assert zero.verdict == "OK" and "ED808" in [f.code for f in zero.findings]


def test_an_xid_on_a_gpu_not_burned_is_reported_for_the_run(tmp_path):
    nv = two_h200s()
    nv.events.append((1, 48))
    r = run(fake_target(tmp_path, {"0": healthy_steps(0)}), nv, device="0")
    assert [g.verdict for g in r.gpus] == ["OK"] and [f.code for f in r.findings] == ["ED829"]


def test_uncorrected_ecc_errors_that_appear_during_the_run_make_the_gpu_faulty(tmp_path):
    nv = two_h200s()

    def on_event(job, event):
        if job == 0 and event.get("kind") == "interval":
            nv.set(0, "nvmlDeviceGetTotalEccErrors:1,0", 2)  # volatile uncorrected, GPU 0
            nv.set(0, "nvmlDeviceGetRemappedRows", [0, 1, 1, 0])

    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": healthy_steps(1)})
    r = run(py, nv, on_event=on_event)
    assert r.gpus[0].counter_deltas.ecc_uncorrected == 2
    assert [f.code for f in r.gpus[0].findings if f.severity == "error"] == ["ED803", "ED805"]
    assert r.gpus[1].verdict == "OK"


def test_a_stop_reaches_every_child_and_they_answer(tmp_path):
    slow = healthy_steps(0, rates=[660.0] * 100, each=0.1)
    py = fake_target(tmp_path, {"0": slow, "1": healthy_steps(1, rates=[660.0] * 100, each=0.1)})
    stop = threading.Event()
    threading.Timer(1.5, stop.set).start()
    r = run(py, two_h200s(), seconds=30.0, stop=stop)
    assert r.interrupted and [g.child.state for g in r.gpus] == ["stopped", "stopped"]
    assert all(g.verdict == "OK" for g in r.gpus) and r.wall_s < 8


def test_a_device_past_the_last_gpu_is_a_usage_error_before_anything_starts(tmp_path):
    r = run(fake_target(tmp_path, {"*": [("hang",)]}), two_h200s(), device="2")
    assert r.error.command == "--device" and r.error.message == "GPU 2 does not exist: there are 2 GPU(s)"


def test_a_cpu_only_torch_on_a_gpu_machine_is_not_burned_on_the_cpu(tmp_path):
    fail = [
        ("emit", "error", {"error": {"kind": "no_cuda", "message": "torch 2.13.0+cpu is a CPU-only build"}}),
        ("exit", 0),
    ]
    r = run(fake_target(tmp_path, {"*": fail}), two_h200s())
    assert r.gpus == () and r.error.kind == "unavailable"
    assert r.error.message == (
        "torch 2.13.0+cpu is a CPU-only build, but NVML sees 2 GPU(s): a CPU burn would say nothing about them"
    )


def test_cuda_visible_devices_that_hides_every_gpu_is_a_usage_error(tmp_path):
    r = run_burn(
        fake_target(tmp_path, {"*": [("hang",)]}),
        seconds=5.0,
        nvml=two_h200s(),
        env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert r.error.command == "--device" and "CUDA_VISIBLE_DEVICES='' hides all 2 GPU(s)" in r.error.message

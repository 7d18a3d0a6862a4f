"""``envdoctor diag``: each test against the recorded healthy H200 (burn's 150 s series, bench's
suites, NVML's answers) and one perturbation at a time, which must FAIL with the test named; the
live GPU state through the fake NVML; the fabric from fake sysfs roots in the kernel's formats; the
command on this CPU box (a clear "no GPU", exit 2) and with the H200's NVML but a CPU torch."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.burn import analysis
from envdoctor.burn.rules import judge
from envdoctor.cli import cli
from envdoctor.diag import rules
from envdoctor.diag.facts import DiagTest, load_diag_table, parse_diag_table
from envdoctor.diag.render import render_diag_text
from envdoctor.facts.gpu_state import GpuStateFacts
from envdoctor.probes import fabric as fabric_probe
from envdoctor.probes.context import Context
from envdoctor.probes.gpu_state import probe as state_probe
from envdoctor.rules.fabric import fabric_findings
from envdoctor.rules.gpu_state import state_findings
from envdoctor.table.health import load_health
from envdoctor.table.schema import Doc, TableError
from tests.documents import validate
from tests.fakenvml import FakeNvml
from tests.test_bench_suites_h200 import analysed
from tests.test_burn_fakes import h200_gpu, result_of
from tests.torchtest import needs_torch

H = load_health()
T = load_diag_table()


def by(tests, name, gpu=0):
    return next(t for t in tests if t.name == name and t.gpu == gpu)


def burn_of(gpu, level=3):
    r = judge(result_of(gpu), H)
    return rules.burn_tests(r, level, T.rule("power"), T.rule("power_clock"))


def with_samples(gpu, change):
    g = replace(gpu, samples=tuple(change(s) for s in gpu.samples))
    return replace(g, summary=analysis.summarize(g))


# --- bench, burn, power: the recorded H200 and one fault each ------------------------------------


def test_recorded_h200_bench_passes_matmul_and_hbm_with_their_sources():
    tests = rules.bench_tests(analysed(), T)
    mm, hbm = by(tests, "matmul"), by(tests, "memory_bandwidth")
    assert (mm.status, round(mm.figure, 1), mm.threshold) == ("PASS", 662.4, 600.0)
    assert "docs/benchmarks.md" in mm.source
    assert (hbm.status, round(hbm.figure), hbm.threshold, hbm.warn_threshold) == ("PASS", 4271, 3120.0, 3840.0)
    assert "4800 GB/s datasheet" in hbm.source


def test_hbm_at_half_its_recorded_rate_fails_memory_bandwidth():
    r = analysed()
    slow = replace(r, memory_points=tuple(replace(p, gbs=p.gbs / 2) for p in r.memory_points))
    tests = rules.bench_tests(slow, T)
    assert by(tests, "memory_bandwidth").status == "FAIL" and by(tests, "matmul").status == "PASS"
    assert rules.node_verdict(tests) == ("FAIL", ("memory_bandwidth (GPU 0)",))


def test_a_gpu_without_a_threshold_is_measured_and_says_so():
    r = analysed()
    other = replace(r, devices=tuple(replace(d, name="NVIDIA H999", bandwidth_gbs=None) for d in r.devices))
    tests = rules.bench_tests(other, T)
    mm = by(tests, "matmul")
    assert mm.status == "INFO" and round(mm.figure) == 662 and mm.threshold is None
    assert "no threshold for NVIDIA H999" in mm.detail
    assert rules.node_verdict(tests)[0] == "PASS" and rules.no_threshold(tests) == {"matmul": 1, "memory_bandwidth": 1}


def test_recorded_h200_burn_passes_burn_memtest_and_holds_its_power_limit():
    tests = burn_of(h200_gpu())
    b, m, p = by(tests, "burn"), by(tests, "memtest"), by(tests, "power")
    assert (b.status, b.figure, b.threshold) == ("PASS", 659.4, 594.0)
    assert m.status == "WARN"  # level 3 wants every pattern; the recording ran one
    assert p.status == "PASS" and 0.98 < p.figure < 1.0 and p.threshold == 0.75
    assert "targeted-power" in p.source


def test_wrong_products_fail_the_burn_by_name():
    g = h200_gpu()
    bad = replace(g.phases[0], mismatches=3, bad_products=1, first_bad_product=51234, status="miscompare")
    tests = burn_of(replace(g, phases=(bad,)), level=2)
    b = by(tests, "burn")
    assert b.status == "FAIL" and "ED800" in b.codes and "3 miscompares" in b.detail
    assert rules.node_verdict(tests) == ("FAIL", ("burn (GPU 0)",))


def test_a_throttled_gpu_fails_power_and_burn():
    hw = 0x8 | 0x4  # hw_slowdown with the power cap

    def throttle(s):
        return replace(
            s,
            power_w=300.0,
            sm_clock_mhz=700,
            reasons_mask=hw,
            reasons=H.reason_names(hw),
            fault=bool(H.fault_reasons(hw)),
        )

    g = with_samples(h200_gpu(), throttle)
    tests = burn_of(g)
    p = by(tests, "power")
    assert p.status == "FAIL" and round(p.figure, 3) == 0.429 and "held back" in p.detail
    assert by(tests, "burn").status == "FAIL"
    verdict, failed = rules.node_verdict(tests)
    assert verdict == "FAIL" and "power (GPU 0)" in failed and "burn (GPU 0)" in failed


def test_below_the_power_limit_at_the_top_clock_is_a_light_load_not_a_fault():
    g = with_samples(h200_gpu(), lambda s: replace(s, power_w=400.0, sm_clock_mhz=1980))
    assert by(burn_of(g), "power").status == "PASS"


def test_memory_pattern_mismatch_fails_memtest():
    g = h200_gpu()
    m = replace(g.memtest, mismatches=2, status="mismatch")
    assert by(burn_of(replace(g, memtest=m), level=2), "memtest").status == "FAIL"


# --- the live state (fake NVML, fake /proc) ------------------------------------------------------


@pytest.fixture
def nv():
    return FakeNvml.recorded("h200-driver580-cuda13")


def state(nv, root=None):
    return state_probe(Context(root=root or Path("/"), nvml=nv))


def test_the_recorded_idle_h200_is_free(nv):
    s = state(nv)
    g = s.gpus[0]
    assert (g.compute_mode, g.persistence_mode, g.mig_mode, g.power_limit_w, g.processes) == (
        "default",
        True,
        False,
        700.0,
        (),
    )
    assert state_findings(s, wanted=True) == []
    assert by(rules.inspection_tests((), s), "state").status == "PASS"


def test_a_busy_gpu_fails_state_when_a_job_wants_it_and_warns_in_check(nv, tmp_path):
    (tmp_path / "proc/4242").mkdir(parents=True)
    (tmp_path / "proc/4242/comm").write_text("python3\n")
    (tmp_path / "proc/4242/stat").write_text("4242 (python3) S 1 4242 4242 0 -1 4194560 0 0\n")
    nv.set(0, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 4242, "usedGpuMemory": 70 << 30}])
    nv.set(0, "nvmlDeviceGetUtilizationRates", {"gpu": 97, "memory": 40})
    s = state(nv, tmp_path)
    assert s.gpus[0].processes[0].name == "python3" and s.gpus[0].processes[0].used_mib == 71680
    assert [(f.code, f.severity) for f in state_findings(s)] == [("ED160", "warning")]
    t = by(rules.inspection_tests((), s), "state")
    assert t.status == "FAIL" and t.figure == 1.0 and "ED160" in t.codes
    assert "pid 4242 python3 (compute, 71680 MiB)" in state_findings(s, wanted=True)[0].evidence[0]


def test_a_zombie_and_a_pid_of_another_container(nv, tmp_path):
    (tmp_path / "proc/77").mkdir(parents=True)
    (tmp_path / "proc/77/stat").write_text("77 (train (old)) Z 1 77 77 0 -1 4227084 0 0\n")
    nv.set(
        0,
        "nvmlDeviceGetComputeRunningProcesses",
        [{"pid": 77, "usedGpuMemory": 1 << 30}, {"pid": 9999, "usedGpuMemory": 1 << 30}],
    )
    s = state(nv, tmp_path)
    zombie, hidden = s.gpus[0].processes
    assert (zombie.state, zombie.visible, hidden.visible) == ("Z", True, False)
    found = {f.code: f for f in state_findings(s, wanted=True)}
    assert set(found) == {"ED160", "ED161"} and "sudo nvidia-smi --gpu-reset -i 0" in found["ED161"].fix
    assert "pid not visible here" in found["ED160"].evidence[0]


def test_exclusive_process_mode_with_a_process_and_operator_limits(nv):
    nv.set(0, "nvmlDeviceGetComputeMode", 3)
    nv.set(0, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 1, "usedGpuMemory": 1 << 20}])
    nv.set(0, "nvmlDeviceGetEnforcedPowerLimit", 400000)
    nv.set(0, "nvmlDeviceGetRemappedRows", [0, 0, 1, 0])
    nv.set(0, "nvmlDeviceGetApplicationsClock:1", 1200)
    nv.set(0, "nvmlDeviceGetDefaultApplicationsClock:1", 1980)
    codes = {(f.code, f.severity) for f in state_findings(state(nv), wanted=True)}
    assert codes == {
        ("ED160", "error"),
        ("ED162", "error"),
        ("ED163", "warning"),
        ("ED164", "warning"),
        ("ED165", "warning"),
    }


# --- the fabric (fake sysfs roots) -----------------------------------------------------------------


def ib_root(tmp: Path, state: str = "4: ACTIVE", phys: str = "5: LinkUp", peermem: bool = True) -> Path:
    """A node with one GPU and one ConnectX port under the same PCIe switch, files as the kernel writes them."""
    sw = tmp / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    gpu, nic = sw / "0000:02:00.0/0000:03:00.0", sw / "0000:02:04.0/0000:04:00.0"
    for d, vendor, klass in ((gpu, "0x10de", "0x030200"), (nic, "0x15b3", "0x020700")):
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(klass + "\n")
        (d / "numa_node").write_text("0\n")
    pci = tmp / "sys/bus/pci/devices"
    pci.mkdir(parents=True)
    for d in (gpu, nic):
        (pci / d.name).symlink_to(os.path.relpath(d, pci))
    port = tmp / "sys/class/infiniband/mlx5_0/ports/1"
    port.mkdir(parents=True)
    ib = port.parent.parent
    (ib / "device").symlink_to(os.path.relpath(nic, ib))
    (ib / "fw_ver").write_text("28.39.1002\n")
    (ib / "node_type").write_text("1: CA\n")
    for name, text in (
        ("state", state),
        ("phys_state", phys),
        ("rate", "400 Gb/sec (4X NDR)"),
        ("link_layer", "InfiniBand"),
    ):
        (port / name).write_text(text + "\n")
    (tmp / "sys/class/net/ib0").mkdir(parents=True)
    (tmp / "sys/class/net/eth0").mkdir(parents=True)
    (tmp / "proc").mkdir(exist_ok=True)
    (tmp / "proc/modules").write_text(
        ("nvidia_peermem 16384 0 - Live 0x0 (O)\n" if peermem else "")
        + "mlx5_ib 471040 0 - Live 0x0\nib_core 434176 2 mlx5_ib, Live 0x0\n"
    )
    return tmp


def test_an_active_port_under_the_gpus_switch_with_peermem_is_clean(tmp_path):
    f = fabric_probe.probe(Context(root=ib_root(tmp_path), env={}))
    a = f.adapters[0]
    assert (a.name, a.firmware, a.node_type, a.pci_address, a.numa_node) == (
        "mlx5_0",
        "28.39.1002",
        "CA",
        "0000:04:00.0",
        0,
    )
    assert (a.ports[0].state, a.ports[0].phys_state, a.ports[0].rate_gbps, a.ports[0].link_layer) == (
        "ACTIVE",
        "LinkUp",
        400.0,
        "InfiniBand",
    )
    assert [(p.gpu_bus_id, p.adapter, p.path) for p in f.placements] == [("0000:03:00.0", "mlx5_0", "PIX")]
    assert "nvidia_peermem" in f.modules
    assert [x.code for x in fabric_findings(f)] == ["ED865"]  # no net plugin: info only


def test_a_down_link_fails_the_fabric_test(tmp_path):
    f = fabric_probe.probe(Context(root=ib_root(tmp_path, "1: DOWN", "3: Disabled"), env={}))
    found = fabric_findings(f)
    assert found[0].code == "ED860" and found[0].severity == "error" and "DOWN" in found[0].title
    t = by(rules.inspection_tests(tuple(found), GpuStateFacts()), "fabric", None)
    assert t.status == "FAIL" and t.codes == ("ED860",)


def test_ib_without_gpudirect_and_nccl_variables_that_name_nothing(tmp_path):
    env = {
        "NCCL_SOCKET_IFNAME": "enp",
        "NCCL_IB_HCA": "mlx5_1,mlx5_0:1",
        "NCCL_IB_DISABLE": "1",
        "NCCL_P2P_DISABLE": "0",
    }
    f = fabric_probe.probe(Context(root=ib_root(tmp_path, peermem=False), env=env))
    codes = [(x.code, x.severity) for x in fabric_findings(f, open_module=False)]
    assert codes == [
        ("ED861", "warning"),
        ("ED865", "info"),
        ("ED862", "error"),
        ("ED863", "error"),
        ("ED864", "warning"),
    ]
    assert "mlx5_1" in fabric_findings(f)[-2].evidence[0]
    # an exclusion names nothing that must exist; a prefix that matches is fine
    ok = fabric_probe.probe(Context(root=tmp_path, env={"NCCL_SOCKET_IFNAME": "^docker,lo", "NCCL_IB_HCA": "mlx5"}))
    assert [x.code for x in fabric_findings(ok, open_module=True)] == ["ED865"]


def test_a_node_without_ib_has_no_fabric_finding(tmp_path):
    assert fabric_findings(fabric_probe.probe(Context(root=tmp_path, env={}))) == []


# --- the verdicts, the table, the text -------------------------------------------------------------


def test_warn_exits_0_fail_1_no_gpu_2():
    assert rules.node_verdict([DiagTest("check", "WARN"), DiagTest("burn", "PASS", gpu=0)]) == ("WARN", ("check",))
    assert [rules.exit_status(v) for v in ("PASS", "WARN", "FAIL", "NO_GPU", "ERROR")] == [0, 0, 1, 2, 2]
    v = rules.gpu_verdicts([DiagTest("fabric", "FAIL"), DiagTest("burn", "PASS", gpu=0)], [{"index": 0}])
    assert v[0].verdict == "FAIL" and v[0].failed == ("fabric",)


def test_diag_toml_rejects_a_fail_fraction_above_the_warn_one():
    doc = Doc(
        "diag.toml",
        {
            "rule": [
                {
                    "test": "power",
                    "of": "x",
                    "warn_below": 0.5,
                    "fail_below": 0.9,
                    "source": "s",
                    "checked": "2026-12-01",
                }
            ]
        },
    )
    with pytest.raises(TableError, match="fail_below <= warn_below"):
        parse_diag_table(doc)


# --- the command -------------------------------------------------------------------------------------


def test_a_cpu_box_gets_a_clear_no_gpu_verdict_exit_2_and_a_valid_document(monkeypatch):
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setattr("builtins.__import__", _no_pynvml(__import__))
    r = CliRunner().invoke(cli, ["diag", "--json"])
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    validate(doc, "diag")
    assert doc["verdict"] == "NO_GPU" and doc["summary"]["exit_code"] == 2 and "no GPU" in doc["error"]["message"]
    assert "verdict: NO_GPU: no GPU on this machine" in r.stderr


@needs_torch
def test_nvml_sees_an_h200_but_torch_is_cpu_only_fails_the_cuda_op_and_skips_the_load(monkeypatch):
    fake = FakeNvml.recorded("h200-driver580-cuda13")
    fake.set(0, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 999999, "usedGpuMemory": 1 << 30}])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    r = CliRunner().invoke(cli, ["diag", "-r", "2"])
    assert r.exit_code == 1, r.output
    out = r.stdout
    assert "FAIL  cuda_op          torch was built without CUDA, but NVML sees 1 GPU(s)" in out
    assert "GPU 0 NVIDIA H200 (00000000:00:06.0): FAIL" in out and "ED160" in out
    assert "levels 2-2 not run: the tiny CUDA op did not pass" in out
    assert "verdict: FAIL:" in out and "state (GPU 0)" in out.splitlines()[-1]


def _no_pynvml(real):
    def imp(name, *a, **kw):
        if name == "pynvml":
            raise ImportError("no pynvml here")
        return real(name, *a, **kw)

    return imp


def test_the_text_names_every_test_its_figure_and_threshold():
    tests = rules.bench_tests(analysed(), T) + burn_of(h200_gpu())
    from envdoctor.diag.facts import DiagResult
    from envdoctor.diag.rules import gpu_verdicts, node_verdict

    verdict, failed = node_verdict(tests)
    r = DiagResult(
        level=3,
        level_name="long",
        budget_s=900.0,
        hostname="gpu-01",
        tests=tuple(tests),
        verdict=verdict,
        failed=failed,
        gpus=gpu_verdicts(tests, [{"index": 0, "name": "NVIDIA H200"}]),
    )
    text = render_diag_text(r)
    assert "  PASS  matmul           662.4 TFLOP/s (>= 600)" in text
    assert "  PASS  power            0.9" in text and "(>= 0.75, warn under 0.9)" in text
    assert text.splitlines()[-1] == "verdict: WARN: memtest (GPU 0) (node gpu-01, level 3)"


def test_check_shows_each_gpus_live_state_and_topo_the_adapters(monkeypatch, tmp_path):
    fake = FakeNvml.recorded("h200-driver580-cuda13")
    fake.set(0, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 999999, "usedGpuMemory": 2 << 30}])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    r = CliRunner().invoke(
        cli, ["check", "--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
    )
    assert "GPU 0 now          1 process(es) (pid 999999 (not visible here) 2048 MiB), 0% busy" in r.output
    assert "ED160 warning: GPU 0 (NVIDIA H200, 00000000:00:06.0) is in use by another process" in r.output
    t = CliRunner().invoke(cli, ["topo", "--root", str(ib_root(tmp_path, "1: DOWN", "3: Disabled"))])
    assert (
        "fabric:\n  NIC mlx5_0 (0000:04:00.0, NUMA 0, fw 28.39.1002): port 1 DOWN 400 Gb/s InfiniBand\n"
        "    GPU 0000:03:00.0: PIX" in t.output
    )


def test_a_target_without_torch_could_not_start_exit_2(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml.recorded("h200-driver580-cuda13"))
    bare = tmp_path / "venv"
    import venv

    venv.create(bare, with_pip=False)
    r = CliRunner().invoke(cli, ["diag", "--python", str(bare / "bin/python")])
    assert r.exit_code == 2, r.output
    assert "verdict: could not start:" in r.stdout and "torch is not installed" in r.stdout
    assert "point --python at an interpreter with torch" in r.stderr


def test_fleet_comms_pair_between_nodes_far_below_their_adapters_rate():
    from envdoctor.fleet import comms
    from envdoctor.fleet.facts import Document, NodeInput
    from envdoctor.fleet.merge import merge
    from tests import fleetdocs as fd
    from tests.test_fleet_comms import answer

    def report(rate):
        doc = fd.h200()
        doc["facts"]["fabric"] = {
            "adapters": [
                {
                    "name": "mlx5_0",
                    "ports": [{"port": 1, "state": "ACTIVE", "rate_gbps": rate, "link_layer": "InfiniBand"}],
                }
            ]
        }
        return doc

    inputs = [
        NodeInput((Document("report", report(400.0), f"rank {r}"),), ((f"gpu{r + 1}", "node key"),), "reported", r)
        for r in range(4)
    ]
    # 256 MiB in 10 ms: 26.8 GB/s, over half of NDR's 50 GB/s; 20 ms: 13.4 GB/s, under it
    fleet, _ = merge(inputs, mode="gather", comms=comms.read(answer([0.01, 0.02, 0.01, 0.01]), 4))
    slow = [nf for nf in fleet.drift.findings if nf.finding.code == "ED786"]
    assert [(nf.node, nf.finding.title) for nf in slow] == [
        ("gpu2", "gpu2 - gpu3: 13.4 GB/s between the nodes, under 50% of the adapters' 50 GB/s (400 Gb/s)")
    ]
    gloo = comms.read(answer([0.01, 0.02, 0.01, 0.01], backend="gloo"), 4)
    assert comms.against_adapters(comms.named(gloo, {}), {r: 50.0 for r in range(4)}) == []


def test_envdoctors_own_child_on_the_gpu_is_not_another_job(nv, tmp_path):
    me = os.getpid()
    (tmp_path / "proc/5151").mkdir(parents=True)
    (tmp_path / "proc/5151/comm").write_text("python3\n")
    (tmp_path / "proc/5151/stat").write_text(f"5151 (python3) R {me} 5151 5151 0 -1 4194560 0 0\n")
    nv.set(0, "nvmlDeviceGetComputeRunningProcesses", [{"pid": 5151, "usedGpuMemory": 500 << 20}])
    nv.set(0, "nvmlDeviceGetUtilizationRates", {"gpu": 35, "memory": 1})
    s = state(nv, tmp_path)
    assert (s.gpus[0].processes, s.gpus[0].own_processes) == ((), 1)
    assert state_findings(s, wanted=True) == []


def test_the_recorded_h200_live_state_reads_say_it_is_free(nv):
    recorded = json.loads((Path(__file__).parent / "fixtures/h200-diag/nvml-state.json").read_text())["gpus"][0]
    for call, answer in recorded.items():
        nv.set(0, call, answer)
    g = state(nv).gpus[0]
    assert (g.processes, g.processes_error, g.mig_devices, g.app_sm_clock_mhz, g.default_app_sm_clock_mhz) == (
        (),
        None,
        0,
        1980,
        1980,
    )
    assert g.retired_pages_pending is None and g.errors["retired_pages_pending"] == "not supported"
    assert state_findings(state(nv), wanted=True) == []


def test_a_target_that_crashes_on_a_cpu_box_is_not_called_no_torch(monkeypatch, tmp_path):
    """A --python that crashes (or hangs) said 'no torch to ask', as if torch were missing."""
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setattr("builtins.__import__", _no_pynvml(__import__))
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    broken.chmod(0o755)
    r = CliRunner().invoke(cli, ["diag", "--json", "--python", str(broken)])
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    validate(doc, "diag")
    assert doc["verdict"] == "NO_GPU" and "no torch to ask" not in doc["error"]["message"]
    assert "torch could not be asked: " in doc["error"]["message"]


def test_topo_is_skipped_not_passed_where_no_gpu_was_seen(nv, tmp_path):
    """Nothing measured is never PASS: with no GPU (no NVML, none in the state) topo looked at no
    link; with a GPU and no topo finding it passes, as before."""
    from envdoctor.facts.base import ProbeError

    none = GpuStateFacts(error=ProbeError("unavailable", "NVML library libnvidia-ml.so.1 not found"))
    t = by(rules.inspection_tests((), none), "topo", None)
    assert t.status == "SKIP" and "no GPU" in t.detail
    assert by(rules.inspection_tests((), state(nv, tmp_path)), "topo", None).status == "PASS"

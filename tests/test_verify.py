"""verify.compare: the baseline recorded on the H200 test machine against hand-made "after" states.

Every expected answer is written by hand; the "after" facts are the fixture's with one thing changed.
"""

import dataclasses
from pathlib import Path

import pytest

from envdoctor.bench.facts import BenchDevice, BenchPoint, BenchResult
from envdoctor.facts import ProbeError
from envdoctor.facts.conda import CondaFacts
from envdoctor.facts.docker import DockerFacts
from envdoctor.facts.gpu import GpuInfo
from envdoctor.facts.toolkit import Toolkit, ToolkitFacts
from envdoctor.findings import Finding
from envdoctor.snapshot import load
from envdoctor.verify import compare, machine_differences

FIXTURE = Path(__file__).parent / "fixtures" / "snapshots" / "h200-580.json"
BASE = load(FIXTURE)
B = BASE.facts
UUID = "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4"


def after(facts=B, **areas):
    """The baseline's facts with whole areas replaced: after(driver=..., torch=...)."""
    return dataclasses.replace(facts, **areas)


def driver(**changes):
    return dataclasses.replace(B.driver, **changes)


def torch(**changes):
    return dataclasses.replace(B.torch, **changes)


def codes(findings):
    return [f.code for f in findings]


def with_all_areas(facts):
    return dataclasses.replace(facts, skipped=())


def test_ed701_inside_a_container_says_on_the_host_as_check_ed102_does():
    """Issue 26: verify printed a bare `sudo reboot` inside a container; check's ED102 says
    "# on the host: sudo reboot ... # then restart this container"."""
    from envdoctor.facts.system import SystemFacts

    mismatch = ProbeError("exit_status", "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch")
    now = after(
        driver=driver(
            userspace_version="590.44.01",
            driver_version="580.159.04",
            driver_cuda=None,
            gpus=(),
            smi_gpus=(),
            smi_error=mismatch,
            mismatch=True,
        ),
        torch=torch(cuda_available=False, device_count=0, tiny_op=None),
    )
    now = dataclasses.replace(now, system=dataclasses.replace(now.system or SystemFacts(), container="docker"))
    (r,) = compare(B, now).regressions
    assert r.code == "ED701" and "sudo reboot" not in r.fix
    assert r.fix[0] == "# on the host: sudo reboot" and "# then restart this container" in r.fix
    assert all(c.startswith("#") or c.startswith("envdoctor ") for c in r.fix)
    host = dataclasses.replace(now, system=dataclasses.replace(now.system, container=None))
    assert compare(B, host).regressions[0].fix[0] == "sudo reboot"  # on the machine itself


def test_same_machine_nothing_regressed():
    v = compare(B, B, BASE.findings, BASE.findings)
    assert v.regressions == () and v.changes == () and v.exit_code == 0
    assert "driver 580.159.04 (CUDA 13.0)" in v.unchanged
    assert "GPUs 1x NVIDIA H200" in v.unchanged
    assert "torch 2.11.0+cu130 (CUDA 13.0, sees 1 GPU(s), tiny op ok)" in v.unchanged
    assert "docker: not inspected in the baseline (skipped)" in v.not_compared


def test_upgrade_without_reboot_is_one_regression_and_the_driver_change():
    mismatch = ProbeError("exit_status", "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch")
    now = after(
        driver=driver(
            userspace_version="590.44.01",
            driver_version="580.159.04",
            driver_cuda=None,
            gpus=(),
            smi_gpus=(),
            smi_error=mismatch,
            mismatch=True,
        ),
        torch=torch(cuda_available=False, device_count=0, tiny_op=None, cuda_error="CUDA driver initialization failed"),
    )
    v = compare(B, now)
    assert codes(v.regressions) == ["ED701"]
    r = v.regressions[0]
    assert "kernel module 580.159.04 still loaded (/sys/module/nvidia/version)" in r.evidence
    assert mismatch.message in r.evidence and r.fix[0] == "# on the host: sudo reboot"  # B is a container
    assert [f.title for f in v.changes] == [
        "Driver 580.159.04 -> 590.44.01 (upgrade, installed; loads at the next reboot)"
    ]
    assert any("not until the reboot" in n for n in v.not_compared)
    assert v.exit_code == 1


def test_clean_upgrade_is_a_change_not_a_regression():
    now = after(
        driver=driver(
            kernel_module_version="590.44.01",
            userspace_version="590.44.01",
            driver_version="590.44.01",
            driver_cuda="13.1",
        )
    )
    v = compare(B, now)
    assert v.regressions == () and v.exit_code == 0
    assert codes(v.changes) == ["ED720"]
    assert v.changes[0].title == "Driver 580.159.04 -> 590.44.01 (upgrade)"
    assert v.changes[0].evidence == ("driver's CUDA 13.0 -> 13.1",)


def test_upgrade_with_a_cdi_spec_says_to_regenerate_it():
    base = after(docker=DockerFacts(cdi_specs=("/etc/cdi/nvidia.yaml",)), skipped=())
    now = after(base, driver=driver(driver_version="590.44.01", kernel_module_version="590.44.01"))
    v = compare(base, now)
    change = [f for f in v.changes if f.code == "ED720"][0]
    assert change.fix[0].startswith("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")


def test_a_lost_gpu():
    second = GpuInfo(1, "NVIDIA H200", "GPU-0b1e2c3d-0000-4000-8000-000000000002", "9.0", 143771)
    base = after(driver=driver(gpus=B.driver.gpus + (second,)))
    v = compare(base, B)
    assert codes(v.regressions) == ["ED702"]
    r = v.regressions[0]
    assert r.title == "GPU missing: 1 of the baseline's 2 GPU(s) are gone"
    assert r.evidence[0] == "missing: GPU 1: NVIDIA H200, GPU-0b1e2c3d-0000-4000-8000-000000000002"
    assert any("Xid 79" in c for c in r.fix)


def test_no_devices_found_means_every_gpu_is_missing():
    gone = ProbeError("exit_status", "nvidia-smi: No devices were found")
    v = compare(B, after(driver=driver(gpus=(), smi_gpus=(), smi_error=gone)))
    assert codes(v.regressions) == ["ED702"]
    assert "1 of the baseline's 1 GPU(s) are gone" in v.regressions[0].title


def test_memory_down_is_a_changed_gpu_a_few_mib_is_only_a_change():
    less = dataclasses.replace(B.driver.gpus[0], memory_total_mib=71000)
    v = compare(B, after(driver=driver(gpus=(less,))))
    assert codes(v.regressions) == ["ED703"]
    assert v.regressions[0].evidence == (f"GPU 0: NVIDIA H200, {UUID}: memory 143771 MiB -> 71000 MiB",)
    nudge = dataclasses.replace(B.driver.gpus[0], memory_total_mib=143760)
    v = compare(B, after(driver=driver(gpus=(nudge,))))
    assert v.regressions == () and codes(v.changes) == ["ED721"]


def test_gpus_matched_by_index_when_uuids_were_redacted():
    masked = dataclasses.replace(B.driver.gpus[0], uuid="GPU-<uuid>")
    base = after(driver=driver(gpus=(masked,)))
    assert compare(base, B).regressions == ()


def test_nvidia_smi_failing_now():
    hung = ProbeError("timeout", "nvidia-smi did not answer in 10 s")
    now = after(driver=driver(smi_error=hung, smi_gpus=(), gpus=()))
    v = compare(B, now)
    assert codes(v.regressions) == ["ED704"]
    assert v.regressions[0].evidence == ("nvidia-smi: worked in the baseline, now: nvidia-smi did not answer in 10 s",)
    assert "GPUs: the driver cannot list them now (see ED704)" in v.not_compared


def test_nvml_failing_now():
    base = after(driver=driver(nvml_error=None, nvml_version="13.580.159.04"))
    now = after(driver=driver(nvml_error=ProbeError("unavailable", "NVML: Driver Not Loaded")))
    v = compare(base, now)
    assert codes(v.regressions) == ["ED704"]


def test_driver_gone_after_a_kernel_update():
    base = after(driver=driver(nvml_error=None))
    now = after(
        driver=dataclasses.replace(B.driver.__class__(), smi_path=None),
        system=dataclasses.replace(B.system, kernel="6.19.2-generic"),
    )
    v = compare(base, now)
    r = [f for f in v.regressions if f.code == "ED704"][0]
    assert r.title == "nvidia-smi / NVML fail now (they worked in the baseline)"
    assert r.evidence[0] == "driver 580.159.04 in the baseline; no NVIDIA kernel module or driver library now"
    assert any("the kernel changed: 6.18.44-fc-v657-gpu -> 6.19.2-generic" in e for e in r.evidence)
    assert any(c.startswith("dkms status") for c in r.fix)
    assert "ED726" in codes(v.changes)


def test_driver_downgrade_below_torch_cuda():
    now = after(
        driver=driver(
            driver_version="575.57.08",
            kernel_module_version="575.57.08",
            userspace_version="575.57.08",
            driver_cuda="12.9",
        )
    )
    v = compare(B, now)
    assert codes(v.regressions) == ["ED705"]
    assert v.regressions[0].title == "The driver's CUDA 12.9 is now older than torch's CUDA 13.0"
    assert v.changes[0].title == "Driver 580.159.04 -> 575.57.08 (downgrade)"


def test_driver_cuda_lower_already_in_the_baseline_is_not_new():
    base = after(driver=driver(driver_cuda="12.9"))
    assert "ED705" not in codes(compare(base, base).regressions)


@pytest.mark.parametrize(
    "change, code, title",
    [
        (dict(installed=False, version=None), "ED706", "torch is no longer installed in /opt/torch/.venv/bin/python3"),
        (
            dict(import_error="ImportError: libcudnn.so.9: cannot open shared object file"),
            "ED706",
            "torch no longer imports",
        ),
        (
            dict(error=ProbeError("timeout", "import torch did not finish in 60 s")),
            "ED706",
            "torch's check fails now in /opt/torch/.venv/bin/python3",
        ),
        (
            dict(
                cuda_available=False,
                device_count=0,
                tiny_op=None,
                cuda_error="CUDA driver version is insufficient for CUDA runtime version",
            ),
            "ED707",
            "torch no longer sees the GPUs",
        ),
        (
            dict(tiny_op="RuntimeError: CUDA error: no kernel image is available for execution on the device"),
            "ED708",
            "The tiny CUDA operation fails now",
        ),
    ],
)
def test_torch_regressions(change, code, title):
    v = compare(B, after(torch=torch(**change)))
    assert codes(v.regressions) == [code]
    assert v.regressions[0].title == title


def test_torch_stopped_seeing_cuda_shows_the_reason():
    now = after(
        torch=torch(
            cuda_available=False,
            device_count=0,
            tiny_op=None,
            cuda_error="CUDA driver version is insufficient for CUDA runtime version",
        )
    )
    r = compare(B, now).regressions[0]
    assert r.evidence == (
        "torch 2.11.0+cu130: torch.cuda.is_available() was True, is False now",
        "CUDA driver version is insufficient for CUDA runtime version",
    )


def test_torch_upgrade_is_a_change():
    v = compare(B, after(torch=torch(version="2.12.0+cu130", cudnn_version="9.20.0")))
    assert v.regressions == ()
    assert v.changes[0].title == "torch changed: torch 2.11.0+cu130 -> 2.12.0+cu130"
    assert v.changes[0].evidence == ("cuDNN 9.19.0 -> 9.20.0",)


def test_torch_of_another_interpreter_is_compared_only_when_asked_for():
    other = dataclasses.replace(B.python, executable="/usr/bin/python3", chosen_by="python3 on PATH")
    v = compare(B, after(python=other, torch=torch(installed=False)))
    assert v.regressions == ()
    assert (
        "torch: the baseline inspected /opt/torch/.venv/bin/python3, now /usr/bin/python3 (pass --python to compare)"
    ) in v.not_compared
    asked = dataclasses.replace(other, chosen_by="--python")
    v = compare(B, after(python=asked, torch=torch(installed=False)))
    assert codes(v.regressions) == ["ED706"]
    assert "the baseline inspected /opt/torch/.venv/bin/python3, now /usr/bin/python3" in v.regressions[0].evidence


def test_torch_not_inspected_now_is_not_compared():
    v = compare(B, after(skipped=B.skipped + ("torch",), torch=torch(installed=False)))
    assert v.regressions == ()
    assert "torch: not inspected now (skipped with --skip torch)" in v.not_compared


DOCKER_OK = DockerFacts(
    client="/usr/bin/docker",
    client_version="28.2.2",
    daemon="ok",
    server_version="28.2.2",
    runtimes=("io.containerd.runc.v2", "nvidia", "runc"),
    cdi_specs=("/etc/cdi/nvidia.yaml",),
    cdi_devices=("nvidia.com/gpu=0", "nvidia.com/gpu=all"),
    nvidia_ctk="/usr/bin/nvidia-ctk",
    nvidia_ctk_version="1.17.8",
)


def test_container_toolkit_broken():
    base = with_all_areas(after(docker=DOCKER_OK))
    now = after(
        base,
        docker=dataclasses.replace(DOCKER_OK, runtimes=("io.containerd.runc.v2", "runc"), cdi_specs=(), cdi_devices=()),
    )
    v = compare(base, now)
    assert codes(v.regressions) == ["ED709"]
    r = v.regressions[0]
    assert r.evidence == (
        "the nvidia runtime is no longer registered with docker (runtimes now: io.containerd.runc.v2, runc)",
        "docker no longer discovers CDI GPUs (nvidia.com/gpu=0, nvidia.com/gpu=all in the baseline)",
        "the CDI spec is gone: /etc/cdi/nvidia.yaml",
    )
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in r.fix
    assert r.fix[-1].startswith("docker run --rm --gpus all")


def test_docker_daemon_down_and_version_change():
    base = with_all_areas(after(docker=DOCKER_OK))
    down = dataclasses.replace(
        DOCKER_OK,
        daemon="not_running",
        daemon_error="Cannot connect to the Docker daemon",
        runtimes=(),
        cdi_devices=(),
        server_version=None,
        nvidia_ctk_version="1.18.0",
    )
    v = compare(base, after(base, docker=down))
    assert codes(v.regressions) == ["ED709"]
    assert v.regressions[0].evidence == (
        "the docker daemon answered in the baseline; now: not_running (Cannot connect to the Docker daemon)",
    )
    assert [f.title for f in v.changes] == ["Container tools changed: nvidia-ctk 1.17.8 -> 1.18.0"]


TK = Toolkit("/usr/local/cuda-13.0", "/usr/local/cuda-13.0/bin/nvcc", "13.0.88", "13.0")


def test_nvcc_failing_now_and_toolkit_changes():
    base = with_all_areas(after(toolkits=ToolkitFacts(toolkits=(TK,), nvcc_on_path=TK.nvcc)))
    broken = dataclasses.replace(TK, error=ProbeError("exit_status", "nvcc exited with status 127"))
    v = compare(base, after(base, toolkits=ToolkitFacts(toolkits=(broken,), nvcc_on_path=TK.nvcc)))
    assert codes(v.regressions) == ["ED710"]
    removed = compare(base, after(base, toolkits=ToolkitFacts()))
    assert removed.regressions == ()
    assert [f.title for f in removed.changes] == [
        "CUDA toolkits changed: CUDA toolkit /usr/local/cuda-13.0 (13.0) removed"
    ]


def test_conda_failing_and_changing():
    good = CondaFacts(exe="/opt/conda/bin/conda", flavor="conda", version="25.5.1", virtual_cuda="13.0")
    base = with_all_areas(after(conda=good))
    v = compare(base, after(base, conda=dataclasses.replace(good, error=ProbeError("timeout", "conda info timed out"))))
    assert codes(v.regressions) == ["ED711"]
    v = compare(base, after(base, conda=dataclasses.replace(good, virtual_cuda="13.1")))
    assert v.regressions == ()
    assert v.changes[0].title == "conda changed: __cuda virtual package 13.0 -> 13.1 (it follows the driver)"


def bench(tflops, clock=1980, power=690.0, reasons=(), error=None):
    return BenchResult(
        dtypes=("bf16",),
        sizes=(8192,),
        budget_s=2.0,
        devices=(BenchDevice(0, name="NVIDIA H200", max_sm_clock_mhz=1980, power_limit_w=700.0),),
        points=(BenchPoint(0, "bf16", 8192, tflops=tflops, sm_clock_mhz=clock, power_w=power, reasons=reasons),)
        if tflops
        else (),
        error=error,
    )


def test_slower_bench_is_a_regression_with_clock_context():
    v = compare(
        B, B, before_bench=bench(640.0), after_bench=bench(540.0, clock=1600, power=700.0, reasons=("sw_power_cap",))
    )
    assert codes(v.regressions) == ["ED712"]
    r = v.regressions[0]
    assert r.title == ("Bench slower: GPU 0 (NVIDIA H200) bf16 n=8192: 640.0 -> 540.0 TFLOP/s (-15.6%, tolerance 10%)")
    assert "SM clock 1980 -> 1600 MHz (max 1980)" in r.evidence
    assert any("sw_power_cap" in e for e in r.evidence)


def test_cpu_bench_is_labelled_as_the_cpu_with_enough_digits():
    """Issue 12: ``verify --bench`` printed "GPU 0 (x86_64)" and "0.1 -> 0.0 TFLOP/s" for a CPU."""

    def cpu(tflops):
        return BenchResult(
            dtypes=("fp32",),
            sizes=(2048,),
            budget_s=2.0,
            devices=(BenchDevice(0, kind="cpu", name="x86_64"),),
            points=(BenchPoint(0, "fp32", 2048, tflops=tflops),),
        )

    v = compare(B, B, before_bench=cpu(0.105), after_bench=cpu(0.041))
    (r,) = v.regressions
    assert r.title == "Bench slower: CPU (x86_64) fp32 n=2048: 0.105 -> 0.041 TFLOP/s (-61.0%, tolerance 10%)"
    assert r.fix == ("envdoctor bench   # measure again with nothing else running (the CPU is shared)",)
    # the audit of issue 12: "0.053 -> 0.000 TFLOP/s" for a CPU run at a small size
    (tiny,) = compare(B, B, before_bench=cpu(0.053), after_bench=cpu(0.000153)).regressions
    assert "0.053 -> 0.000153 TFLOP/s" in tiny.title


def test_bench_within_tolerance_is_unchanged():
    v = compare(B, B, before_bench=bench(640.0), after_bench=bench(600.0), tolerance_pct=10)
    assert v.regressions == ()
    assert "bench: 1 of 1 point(s) within 10% of the baseline" in v.unchanged
    stricter = compare(B, B, before_bench=bench(640.0), after_bench=bench(600.0), tolerance_pct=5)
    assert codes(stricter.regressions) == ["ED712"]


def test_slower_launch_bound_point_is_only_a_change():
    """On the H200 a launch-bound point (fp16 n=512) ran 13.7% slower between two runs minutes apart."""
    before = bench(22.0)
    before = dataclasses.replace(before, points=(dataclasses.replace(before.points[0], n=512, bound="launch"),))
    now = dataclasses.replace(before, points=(dataclasses.replace(before.points[0], tflops=19.0),))
    v = compare(B, B, before_bench=before, after_bench=now)
    assert v.regressions == ()
    assert [f.title for f in v.changes] == ["Bench slower at 1 small, launch-sensitive point(s)"]
    assert v.changes[0].evidence == ("GPU 0 (NVIDIA H200) bf16 n=512: 22.0 -> 19.0 TFLOP/s (-13.6%)",)


def test_failed_point_is_a_regression():
    failed = dataclasses.replace(bench(640.0).points[0], status="failed", tflops=None, error="CUDA out of memory")
    v = compare(B, B, before_bench=bench(640.0), after_bench=dataclasses.replace(bench(640.0), points=(failed,)))
    assert [f.title for f in v.regressions] == [
        "Bench point fails now: GPU 0 (NVIDIA H200) bf16 n=8192 (was 640.0 TFLOP/s)"
    ]


def test_bench_that_no_longer_runs():
    v = compare(
        B,
        B,
        before_bench=bench(640.0),
        after_bench=bench(None, error=ProbeError("exit_status", "RuntimeError: No CUDA GPUs are available")),
    )
    assert [f.title for f in v.regressions] == ["The benchmark no longer runs"]


def test_new_error_findings_and_fixed_ones():
    new = Finding(
        "ED107",
        "error",
        "CUDA_VISIBLE_DEVICES hides every GPU",
        evidence=("CUDA_VISIBLE_DEVICES='7'",),
        fix=("unset CUDA_VISIBLE_DEVICES",),
        area="gpu",
    )
    old = Finding("ED110", "error", "wrong kernel module flavour", area="driver")
    own = Finding("ED900", "error", "a bug in envdoctor", area="envdoctor")
    hidden = Finding("ED501", "error", "docker broken", area="docker")  # docker skipped in the baseline
    v = compare(B, B, (old,), (new, own, hidden))
    assert codes(v.regressions) == ["ED713"]
    assert v.regressions[0].title == "New problem ED107: CUDA_VISIBLE_DEVICES hides every GPU"
    assert v.regressions[0].fix == ("unset CUDA_VISIBLE_DEVICES",)
    assert [f.title for f in v.changes] == ["Fixed since the baseline: ED110 wrong kernel module flavour"]


def test_consequences_of_the_mismatch_are_not_repeated_as_new_problems():
    mismatch = Finding("ED102", "error", "Driver upgraded without a reboot", area="driver")
    no_cuda = Finding("ED201", "error", "torch cannot use the GPU", area="torch")
    conda = Finding("ED401", "error", "conda env broken", area="conda")
    now = after(driver=driver(userspace_version="590.44.01", mismatch=True, gpus=()), skipped=("docker", "toolkits"))
    v = compare(after(skipped=("docker", "toolkits")), now, (), (mismatch, no_cuda, conda))
    assert [f.title for f in v.regressions][1:] == ["New problem ED401: conda env broken"]
    assert codes(v.regressions) == ["ED701", "ED713"]


def test_regressions_come_in_order_of_importance():
    now = after(
        driver=driver(driver_cuda="12.9", smi_error=ProbeError("timeout", "nvidia-smi hung")),
        torch=torch(import_error="ImportError: boom"),
    )
    v = compare(B, now, (), (Finding("ED107", "error", "x", area="gpu"),))
    assert codes(v.regressions) == sorted(codes(v.regressions))
    assert codes(v.regressions)[0] == "ED704" and codes(v.regressions)[-1] == "ED713"


def test_machine_differences():
    here = after(system=dataclasses.replace(B.system, hostname="gpu-02"))
    assert machine_differences(B, B, "h200-vm") == ((), ())
    # a new container on the same host: new host name, same GPUs
    reasons, notes = machine_differences(B, here, "h200-vm")
    assert reasons == () and "the GPUs are the same (UUIDs match)" in notes[0]
    # other GPUs
    other = dataclasses.replace(B.driver.gpus[0], uuid="GPU-11111111-2222-3333-4444-555555555555")
    reasons, _ = machine_differences(B, after(here, driver=driver(gpus=(other,))), "h200-vm")
    assert reasons[0].startswith("none of the baseline's 1 GPU UUID(s) is here")
    assert reasons[1] == "taken on host 'h200-vm', this is 'gpu-02'"
    # no GPU list now: only the host name can tell
    reasons, _ = machine_differences(B, after(here, driver=driver(gpus=())), "h200-vm")
    assert reasons == ("taken on host 'h200-vm', this is 'gpu-02'",)
    # a redacted baseline host cannot tell anything
    assert machine_differences(B, after(here, driver=driver(gpus=())), "<host>") == ((), ())


def test_small_compute_bound_point_slower_on_a_rerun_is_only_a_change():
    """On the H200, fp32 n=512 (16 output tiles for 132 SMs, classed compute-bound) ran 16.4 then
    10.8 TFLOP/s in two runs minutes apart: the same machine must not report a regression."""

    def small(tflops):
        b = bench(tflops)
        dev = dataclasses.replace(b.devices[0], multiprocessors=132, launch_us=10.2)
        return dataclasses.replace(
            b, devices=(dev,), points=(dataclasses.replace(b.points[0], dtype="fp32", n=512, bound="compute"),)
        )

    v = compare(B, B, before_bench=small(16.4), after_bench=small(10.8))
    assert v.regressions == ()
    assert codes(v.changes) == ["ED728"]
    big = compare(B, B, before_bench=bench(640.0), after_bench=bench(540.0))
    assert codes(big.regressions) == ["ED712"]  # n=8192 fills the GPU: still a regression


def test_container_toolkit_removed_on_rhel_gets_the_dnf_install():
    """ED709 printed `sudo apt-get install -y nvidia-container-toolkit   # or dnf` on every distribution."""
    from envdoctor.facts import SystemFacts

    rocky = SystemFacts(os_id="rocky", os_version="9.4", os_like=("rhel", "centos", "fedora"), arch="x86_64")
    base = with_all_areas(after(docker=DOCKER_OK, system=rocky))
    gone = dataclasses.replace(DOCKER_OK, nvidia_ctk=None, nvidia_ctk_version=None)
    (r,) = compare(base, after(base, docker=gone)).regressions
    assert "sudo dnf install -y nvidia-container-toolkit" in r.fix
    assert not any("apt-get" in f for f in r.fix)


def test_unchanged_toolkits_list_cuda_12_10_after_12_9():
    """Release strings were sorted as text: "12.10" came before "12.9"."""
    tks = tuple(
        Toolkit(f"/usr/local/cuda-{r}", f"/usr/local/cuda-{r}/bin/nvcc", f"{r}.0", r) for r in ("12.9", "12.10", "11.8")
    )
    base = with_all_areas(after(toolkits=ToolkitFacts(toolkits=tks)))
    v = compare(base, base)
    assert "CUDA toolkits: 11.8, 12.9, 12.10" in v.unchanged


# --- the registry of checks ---------------------------------------------------------------------


def test_every_code_of_the_table_comes_from_a_registered_check():
    """A check written but left out of CHECKS (or the table) fails here."""
    import inspect
    import re

    import envdoctor.verify as verify
    from envdoctor.verify.findings import new_and_resolved

    listed = set(re.findall(r"^(ED7\d\d) ", verify.__doc__, re.M))
    sources = "".join(inspect.getsource(check) for check in verify.CHECKS + (new_and_resolved,))
    emitted = set(re.findall(r'"(ED7\d\d)"', sources))
    assert listed == emitted and len(listed) == 22


def test_nvidia_smi_replaced_by_a_directory_says_so():
    """Issue 12 sibling: a directory named nvidia-smi on PATH is not "not found"."""
    from envdoctor.facts.base import ProbeError

    base = after(B, driver=dataclasses.replace(B.driver, smi_path="/usr/bin/nvidia-smi", smi_error=None))
    now = after(
        B,
        driver=dataclasses.replace(
            B.driver,
            smi_path=None,
            smi_error=ProbeError(
                "not_found",
                "nvidia-smi: not installed (/usr/bin/nvidia-smi is a directory, not a program)",
                "nvidia-smi",
            ),
        ),
    )
    v = compare(base, now)
    assert any(
        "nvidia-smi was at /usr/bin/nvidia-smi; nvidia-smi: not installed (/usr/bin/nvidia-smi is a "
        "directory, not a program)" in e
        for f in v.regressions
        for e in f.evidence
    ), v.regressions


def test_suppress_hides_a_regression_and_a_crashing_check_is_one_ed900_naming_it(monkeypatch):
    """verify had no --suppress and ran its checks bare: one raising check ended the command with
    exit 3 and no comparison. Now both go through the one runner (envdoctor/checks.py)."""
    import envdoctor.verify as verify

    mismatch = ProbeError("exit_status", "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch")
    now = after(
        driver=driver(
            userspace_version="590.44.01",
            driver_version="580.159.04",
            driver_cuda=None,
            gpus=(),
            smi_gpus=(),
            smi_error=mismatch,
            mismatch=True,
        )
    )
    v = compare(B, now, suppress=["ed701"])
    assert "ED701" not in codes(v.regressions) and v.changes

    def broken(pair):
        raise ValueError("no such GPU")

    monkeypatch.setattr(verify, "CHECKS", (broken,) + verify.CHECKS)
    v = compare(B, B, BASE.findings, BASE.findings)
    (ed900,) = [f for f in v.changes if f.code == "ED900"]
    assert "broken: ValueError: no such GPU" in ed900.title and v.unchanged  # the other checks ran

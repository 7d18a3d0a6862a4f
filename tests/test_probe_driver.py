"""The driver probe on the recorded H200 and on every fault the issue names."""

import os
import time

from envdoctor.probes import driver
from tests.fakes import FakeBin
from tests.machines import SMI_MISMATCH, SMI_NO_DRIVER, FakeNvml, cpu_box, h200, h200_smi


def test_h200_every_fact_with_its_source(tmp_path):
    d = driver.probe(h200(tmp_path))
    assert d.kernel_module_version == "580.159.04" and d.kernel_module_flavor == "open"
    assert d.kernel_module_source == "/sys/module/nvidia/version"
    assert d.userspace_version == "580.159.04"
    assert d.sources["userspace_version"] == "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04"
    assert (d.driver_version, d.driver_cuda) == ("580.159.04", "13.0")
    assert d.sources["driver_version"] == "nvml" and d.sources["driver_cuda"] == "nvml"
    (g,) = d.gpus
    assert (g.name, g.compute_capability, g.memory_total_mib, g.source) == ("NVIDIA H200", "9.0", 143771, "nvml")
    assert len(d.smi_gpus) == 1 and d.smi_gpus[0].uuid == g.uuid  # the cross-check source agrees
    assert not d.mismatch and d.smi_error is None and d.nvml_error is None
    assert "/dev/nvidia0" in d.dev_nodes


def test_nvml_absent_falls_back_to_nvidia_smi(tmp_path):
    d = driver.probe(h200(tmp_path, nvml=FakeNvml(fail=(12, "NVML Shared Library Not Found"))))
    assert d.nvml_error.kind == "not_found" and "libnvidia-ml.so.1" in d.nvml_error.message
    assert d.driver_version == "580.159.04" and d.sources["driver_version"] == "nvidia-smi"
    assert d.driver_cuda == "13.0" and d.sources["driver_cuda"] == "nvidia-smi"
    assert d.gpus[0].source == "nvidia-smi" and d.gpus[0].compute_capability == "9.0"


def test_upgrade_without_reboot_is_a_mismatch(tmp_path):
    ctx = h200(
        tmp_path,
        nvml=FakeNvml(fail=(18, "Driver/library version mismatch")),
        files={
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
            "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
            "/sys/module/nvidia/version": "580.159.04\n",
        },
    )
    bin = FakeBin(tmp_path / "b2")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=5, nvml=ctx.nvml))
    assert d.mismatch
    assert d.kernel_module_version == "580.159.04" and d.userspace_version == "590.44.01"
    assert "Driver/library version mismatch" in d.smi_error.message
    assert d.gpus == ()


def test_mismatch_seen_from_the_versions_alone(tmp_path):
    ctx = h200(
        tmp_path,
        files={
            "/sys/module/nvidia/version": "570.133.20\n",
            "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build\n",
        },
    )
    d = driver.probe(ctx)
    assert d.mismatch and d.kernel_module_version == "570.133.20" and d.userspace_version == "580.159.04"


def test_nvidia_smi_missing(tmp_path):
    ctx = h200(tmp_path)
    os.remove(os.path.join(ctx.env["PATH"].split(":")[0], "nvidia-smi"))
    d = driver.probe(ctx)
    assert d.smi_path is None and d.smi_error is None and d.driver_version == "580.159.04"


def test_nvidia_smi_cannot_talk_to_the_driver(tmp_path):
    ctx = h200(
        tmp_path,
        nvml=FakeNvml(fail=(9, "Driver Not Loaded")),
        files={"/sys/module/nvidia/version": None, "/proc/driver/nvidia/version": None},
    )
    bin = FakeBin(tmp_path / "b2")
    bin.add("nvidia-smi", stdout=SMI_NO_DRIVER, rc=9)
    d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=5, nvml=ctx.nvml))
    assert d.kernel_module_version is None and d.driver_version is None
    assert d.smi_error.message.startswith("nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate")
    assert d.nvml_error.message == "NVML: Driver Not Loaded (no NVIDIA kernel module is running)"


def test_nvidia_smi_hangs_and_the_report_still_comes(tmp_path):
    ctx = h200(tmp_path, timeout=1.0)
    bin = FakeBin(tmp_path / "b2")
    bin.add("nvidia-smi", hang=True)
    started = time.monotonic()
    d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=1.0, nvml=ctx.nvml))
    assert time.monotonic() - started < 10
    assert d.smi_error.kind == "timeout" and "did not answer in 1 s" in d.smi_error.message
    assert d.driver_version == "580.159.04"  # NVML still answered


def test_nvml_that_hangs_is_abandoned(tmp_path):
    started = time.monotonic()
    d = driver.probe(h200(tmp_path, nvml=FakeNvml(hang=True), timeout=1.0))
    assert time.monotonic() - started < 10
    assert d.nvml_error.kind == "timeout" and d.gpus[0].source == "nvidia-smi"


def test_nvidia_smi_garbage_and_truncated(tmp_path):
    for n, text in enumerate(("\x00\x7fELF garbage", "index, name, uuid\n0, NVIDIA H2")):
        ctx = h200(tmp_path / str(n), nvml=FakeNvml(fail=(12, "NVML Shared Library Not Found")))
        bin = FakeBin(tmp_path / f"b{n}")
        h200_smi(bin, query=text)
        d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=5, nvml=ctx.nvml))
        assert d.smi_error.kind == "unparseable" and d.gpus == ()
        assert d.kernel_module_version == "580.159.04"


def test_old_driver_without_compute_cap_field(tmp_path):
    ctx = h200(tmp_path, nvml=FakeNvml(fail=(12, "NVML Shared Library Not Found")))
    bin = FakeBin(tmp_path / "b2")
    bin.add_script(
        "nvidia-smi",
        """case "$1" in
  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; exit 2;;
  --query-gpu=*) printf 'index, name, uuid, driver_version, memory.total [MiB]\\n0, Tesla V100-SXM2-16GB, GPU-9, 470.256.02, 16160\\n'; exit 0;;
  --version) echo 'Invalid combination of input arguments.'; exit 2;;
esac
printf '| NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4     |\\n'""",
    )
    d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=5, nvml=ctx.nvml))
    assert d.gpus[0].name == "Tesla V100-SXM2-16GB" and d.gpus[0].compute_capability is None
    assert d.driver_version == "470.256.02" and d.driver_cuda == "11.4"


def test_proc_and_sys_missing_or_unreadable(tmp_path):
    ctx = h200(tmp_path, files={"/sys/module/nvidia/version": None, "/proc/driver/nvidia/version": None})
    (ctx.root / "proc/driver/nvidia/version").mkdir(parents=True)  # unreadable: a folder where a file should be
    d = driver.probe(ctx)
    assert d.kernel_module_version is None and d.error is not None and d.error.kind == "unavailable"
    assert d.driver_version == "580.159.04"  # NVML still answers


def test_machine_without_gpu(tmp_path):
    d = driver.probe(cpu_box(tmp_path))
    assert d.driver_version is None and d.gpus == () and d.smi_path is None
    assert d.nvml_error.kind == "not_found" and not d.mismatch and d.dev_nodes == ()


def test_wsl2_nvidia_smi_outside_path(tmp_path):
    ctx = cpu_box(tmp_path)
    wsl = ctx.root / "usr/lib/wsl/lib"
    wsl.mkdir(parents=True)
    (wsl / "nvidia-smi").write_text(
        "#!/bin/sh\necho 'index, name, uuid, driver_version\n0, NVIDIA GeForce RTX 4090, GPU-1, 566.36'\n"
    )
    (wsl / "nvidia-smi").chmod(0o755)
    d = driver.probe(ctx)
    assert d.smi_path.endswith("/usr/lib/wsl/lib/nvidia-smi") and d.gpus[0].name == "NVIDIA GeForce RTX 4090"


def test_cuda_visible_devices_is_noted(tmp_path):
    d = driver.probe(h200(tmp_path, env={"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "0"}))
    assert d.cuda_visible_devices == "" and d.nvidia_visible_devices == "0"


def test_after_an_upgrade_without_reboot_check_recommend_and_verify_name_one_driver(tmp_path):
    # recommend took the loaded kernel module (580.159.04), verify the installed library (590.44.01)
    from envdoctor.advise.machine import Machine
    from envdoctor.facts import Facts
    from envdoctor.facts.gpu import driver_in_effect
    from envdoctor.verify.pair import driver_of

    ctx = h200(
        tmp_path,
        nvml=FakeNvml(fail=(18, "Driver/library version mismatch")),
        files={
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
            "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
            "/sys/module/nvidia/version": "580.159.04\n",
        },
    )
    bin = FakeBin(tmp_path / "b2")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    d = driver.probe(ctx.__class__(root=ctx.root, env=bin.env(), timeout=5, nvml=ctx.nvml))
    assert d.driver_version == "580.159.04" and d.mismatch  # the probe's own answer: what is loaded
    assert driver_in_effect(d) == Machine(Facts(driver=d)).driver == driver_of(d) == "590.44.01"
    healthy = driver.probe(h200(tmp_path / "ok"))
    assert driver_in_effect(healthy) == Machine(Facts(driver=healthy)).driver == driver_of(healthy) == "580.159.04"


def test_a_failing_nvml_start_leaves_no_nvidia_smi_thread_running(tmp_path, monkeypatch):
    """nvidia-smi's thread starts first; when NVML's start raises, the probe waits for it and it
    asks nothing more (no --version for the CUDA version) before the failure goes up."""
    import threading

    import pytest

    ctx = h200(tmp_path)
    fakes = ctx.env["PATH"].split(":")[0]
    os.rename(os.path.join(fakes, "nvidia-smi"), os.path.join(fakes, "nvidia-smi.real"))
    calls = tmp_path / "calls.txt"
    smi = os.path.join(fakes, "nvidia-smi")
    with open(smi, "w") as f:
        f.write(f'#!/bin/sh\necho "$*" >> {calls}\nsleep 0.3\nexec {fakes}/nvidia-smi.real "$@"\n')
    os.chmod(smi, 0o755)

    def boom(ctx):
        raise RuntimeError("simulated bug in NVML's start")

    monkeypatch.setattr(driver, "_start_nvml", boom)
    with pytest.raises(RuntimeError, match="simulated bug"):
        driver.probe(ctx)
    assert not [t for t in threading.enumerate() if t.name == "envdoctor-nvidia-smi"]
    asked = calls.read_text().splitlines()
    assert len(asked) == 1 and asked[0].startswith("--query-gpu="), asked

"""Verify checks of the driver: ED701 reboot pending, ED704 NVML/nvidia-smi fail, ED705 its CUDA
below torch's, ED720 its version changed. Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import commands
from envdoctor.facts.gpu import DriverFacts, mismatch_evidence
from envdoctor.findings import Finding
from envdoctor.parse import release
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, driver_of, lower, not_inspected

REF_MISMATCH = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"
REF_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/"


def _nvml_ok(d: DriverFacts) -> bool:
    return d.nvml_error is None and bool(d.nvml_version or any(g.source == "nvml" for g in d.gpus))


def _smi_ok(d: DriverFacts) -> bool:
    return bool(d.smi_path) and d.smi_error is None


def reboot_pending(pair: Pair) -> Iterator[Outcome]:
    """ED701: the new driver is installed, the old kernel module still runs."""
    before, d = pair.before, pair.after.driver
    if not pair.rebooting:
        return
    evidence = mismatch_evidence(d, after_upgrade=True)
    if before.driver.mismatch:
        evidence.append("the baseline was taken in the same state")
    yield Finding(
        "ED701",
        "error",
        "Driver upgraded without a reboot: the new driver is installed, the old kernel module runs",
        evidence=tuple(evidence),
        fix=commands.on_host(pair.after.system, commands.reload_modules())
        + ("envdoctor verify   # again, after the reboot",),
        reference=REF_MISMATCH,
        area="driver",
        explanation="Until the new module is loaded, nvidia-smi, NVML, containers and every CUDA program fail "
        "with 'Driver/library version mismatch'; the GPU and torch checks are compared after the reboot.",
    )
    yield NotCompared("GPUs, NVML/nvidia-smi and torch's use of the GPU: not until the reboot (ED701)")


def answers(pair: Pair) -> Iterator[Outcome]:
    """ED704: NVML or nvidia-smi fails now where it worked, or the driver is gone."""
    before, after = pair.before, pair.after
    b, a = before.driver, after.driver
    if pair.rebooting:
        return
    failures = []
    if _nvml_ok(b) and a.nvml_error is not None and "No devices" not in a.nvml_error.message:
        failures.append(f"NVML: worked in the baseline, now: {a.nvml_error.message}")
    if _smi_ok(b):
        if not a.smi_path:  # "not found", or what is there now: "... is a directory, not a program"
            now = a.smi_error.message if a.smi_error is not None else "it is not found now"
            failures.append(f"nvidia-smi was at {b.smi_path}; {now}")
        elif a.smi_error is not None and "No devices" not in a.smi_error.message:
            failures.append(f"nvidia-smi: worked in the baseline, now: {a.smi_error.message}")
    gone = bool(driver_of(b)) and not driver_of(a)
    if not failures and not gone:
        if _nvml_ok(b) or _smi_ok(b):
            yield Same("NVML / nvidia-smi answer")
        return
    evidence = list(failures)
    if gone:
        evidence.insert(0, f"driver {driver_of(b)} in the baseline; no NVIDIA kernel module or driver library now")
    if before.system.kernel and after.system.kernel and before.system.kernel != after.system.kernel:
        evidence.append(
            f"the kernel changed: {before.system.kernel} -> {after.system.kernel} "
            "(the nvidia module must be built for the running kernel)"
        )
    text = " ".join(evidence)
    fix: tuple[str, ...]
    if "Unknown Error" in text and after.system.container:
        fix = (
            "# inside a container: the host reset the device cgroups (systemctl daemon-reload); restart the container,",
            "# and on the host use CDI (sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml) or no-cgroups",
        )
    else:
        fix = (
            "nvidia-smi",
            "dkms status   # is the module built for the running kernel (uname -r)?",
            "sudo dmesg | grep -iE 'nvrm|nvidia|xid' | tail -20",
            "lsmod | grep nvidia || sudo modprobe nvidia",
        )
    yield Finding(
        "ED704",
        "error",
        "The NVIDIA driver is gone"
        if gone and not failures
        else "nvidia-smi / NVML fail now (they worked in the baseline)",
        evidence=tuple(evidence),
        fix=fix,
        reference=REF_MISMATCH,
        area="driver",
    )


def version_changed(pair: Pair) -> Iterator[Outcome]:
    """ED720: the driver version itself, expected after an upgrade."""
    before, after = pair.before, pair.after
    b, a = before.driver, after.driver
    then = driver_of(b)
    now = driver_of(a)
    if not then or not now:
        return
    if then == now and (a.mismatch or b.driver_cuda == a.driver_cuda or not a.driver_cuda):
        yield Same(f"driver {now}" + (f" (CUDA {a.driver_cuda})" if a.driver_cuda else ""))
        return
    vb, va = release(then), release(now)
    direction = "upgrade" if vb and va and va > vb else ("downgrade" if vb and va and va < vb else "change")
    state = ", installed; loads at the next reboot" if a.mismatch else ""
    title = (
        f"Driver {then} -> {now} ({direction}{state})"
        if then != now
        else f"Driver CUDA {b.driver_cuda} -> {a.driver_cuda}"
    )
    evidence = []
    if b.driver_cuda and a.driver_cuda and not a.mismatch:
        evidence.append(
            f"driver's CUDA {b.driver_cuda} -> {a.driver_cuda}"
            if b.driver_cuda != a.driver_cuda
            else f"driver's CUDA {a.driver_cuda} (unchanged)"
        )
    if b.kernel_module_flavor and a.kernel_module_flavor and b.kernel_module_flavor != a.kernel_module_flavor:
        evidence.append(f"kernel module {b.kernel_module_flavor} -> {a.kernel_module_flavor}")
    fix: tuple[str, ...] = ()
    specs = after.docker.cdi_specs or before.docker.cdi_specs
    if specs and not a.mismatch:
        evidence.append(f"CDI spec {specs[0]} names the driver's files by version")
        fix = ("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml   # unless nvidia-cdi-refresh does it",)
    yield Finding(
        "ED720",
        "info",
        title,
        evidence=tuple(evidence),
        fix=fix,
        area="driver",
        explanation="Expected after a driver update.",
    )


def cuda_below_torch(pair: Pair) -> Iterator[Outcome]:
    """ED705: the driver's CUDA now older than torch's CUDA (torch from now, else from the baseline)."""
    before, after = pair.before, pair.after
    if pair.rebooting:
        return
    torch_now = after.torch if (not not_inspected(after, "torch") and after.torch.cuda) else None
    torch_cuda = torch_now.cuda if torch_now else before.torch.cuda
    version = torch_now.version if torch_now else before.torch.version
    dc = after.driver.driver_cuda
    if not lower(dc, torch_cuda):
        return
    if lower(before.driver.driver_cuda, before.torch.cuda):
        return  # the baseline had the same problem: not a regression
    yield Finding(
        "ED705",
        "error",
        f"The driver's CUDA {dc} is now older than torch's CUDA {torch_cuda}",
        evidence=(
            f"driver {after.driver.driver_version}: CUDA {dc} (baseline: {before.driver.driver_cuda})",
            f"torch {version} was built for CUDA {torch_cuda}" + ("" if torch_now else " (as in the baseline)"),
        ),
        fix=("envdoctor recommend   # a torch build for this driver, or the driver this torch needs",),
        reference=REF_COMPAT,
        area="driver",
        explanation="A torch build needs a driver that supports its CUDA; with an older one CUDA fails to start "
        "or kernels fail to load (minor-version compatibility covers only part of it).",
    )

"""Compare a baseline (a snapshot taken before a driver upgrade) with the machine now.

Pure: facts, findings and bench results in, a ``Verification`` out; nothing here reads the
machine. Regressions are error findings, expected changes info findings, codes ED7xx:

====== ======== ==================================================================================
code   severity meaning
====== ======== ==================================================================================
ED701  error    driver upgraded without a reboot: kernel module and user-space driver differ
ED702  error    a GPU of the baseline is missing (fewer GPUs, a UUID gone)
ED703  error    a GPU changed (name, compute capability, or memory down by more than 1%)
ED704  error    nvidia-smi or NVML fails now (worked in the baseline), or the driver is gone
ED705  error    the driver's CUDA is now older than torch's CUDA
ED706  error    torch no longer imports (or is gone, or its check crashes/hangs)
ED707  error    torch no longer sees the GPUs (cuda_available True -> False, or fewer devices)
ED708  error    the tiny CUDA operation fails now
ED709  error    the container toolkit no longer works (daemon, nvidia runtime, CDI, nvidia-ctk)
ED710  error    nvcc fails now, or CUDA extension builds would now fail
ED711  error    conda fails now
ED712  error    a bench point is slower than the baseline by more than the tolerance, or failed
ED713  error    a new error finding of ``envdoctor check`` that the baseline did not have
ED720  info     the driver version changed (before -> after)
ED721  info     GPUs added, or memory reported slightly differently
ED722  info     torch changed (version, CUDA, cuDNN, NCCL, torchvision)
ED723  info     CUDA toolkits changed (added, removed, version, which nvcc is first on PATH)
ED724  info     conda changed (version, the __cuda virtual package, CUDA packages)
ED725  info     docker / container toolkit versions changed
ED726  info     the OS, kernel or glibc changed
ED727  info     an error of the baseline is gone now
ED728  info     a bench point slower at a launch-bound size (the CPU's launch rate, not the GPU)
====== ======== ==================================================================================

>>> v = compare(before.facts, after.facts, before.findings, after.findings)
>>> [f.code for f in v.regressions], [f.title for f in v.changes]
(['ED701'], ['Driver 580.159.04 -> 590.44.01 (upgrade, installed; loads at the next reboot)'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Tuple

from envdoctor import commands
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, GpuInfo
from envdoctor.findings import Finding
from envdoctor.parse import release, version_key

DEFAULT_TOLERANCE = 10.0
#: A GPU whose memory dropped by more than this fraction changed (a driver may reserve a few MiB more).
MEMORY_DROP = 0.01

REF_MISMATCH = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"
REF_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/"
REF_XID = "https://docs.nvidia.com/deploy/xid-errors/index.html"
REF_CONTAINER = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
REF_CDI = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"

#: finding codes of ``check`` that a verify finding already reports (check code -> verify code)
COVERED = {"ED102": "ED701", "ED103": "ED704"}
#: --skip area -> Finding.area values it hides
_FINDING_AREAS = {"torch": ("torch",), "toolkits": ("toolkits",), "conda": ("conda",), "docker": ("docker",)}


@dataclass(frozen=True)
class Verification:
    """What verify found: regressions (errors), changes (info), and what was the same."""

    regressions: Tuple[Finding, ...] = ()
    changes: Tuple[Finding, ...] = ()
    unchanged: Tuple[str, ...] = ()            # "driver 580.159.04 (CUDA 13.0)"
    not_compared: Tuple[str, ...] = ()         # "torch: skipped now (--skip torch)"

    @property
    def exit_code(self) -> int:
        """0 nothing regressed (changes may be listed), 1 a regression."""
        return 1 if self.regressions else 0


@dataclass
class _Out:
    found: List[Finding] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    not_compared: List[str] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.found.append(finding)

    def codes(self) -> set:
        return {f.code for f in self.found}


# --- small helpers --------------------------------------------------------------------------------


def _lower(a: Optional[str], b: Optional[str]) -> bool:
    """a < b as versions; False when either is unknown."""
    va, vb = release(a), release(b)
    return va is not None and vb is not None and va < vb


def _real(value: Optional[str]) -> bool:
    """A value that was recorded and not masked by ``--redact`` ("GPU-<uuid>", "<host>")."""
    return bool(value) and "<" not in str(value)


def _not_inspected(facts: Facts, area: str) -> Optional[str]:
    """Why ``area`` of ``facts`` cannot be compared, or None."""
    if area in facts.skipped:
        return "skipped"
    attr = {"toolkits": "toolkits"}.get(area, area)
    err = getattr(getattr(facts, attr, None), "error", None)
    if err is not None and err.kind == "crashed" and str(err.message).startswith("envdoctor's"):
        return "envdoctor's probe failed"
    return None


def _skip_reason(before: Facts, after: Facts, area: str) -> Optional[str]:
    then, now = _not_inspected(before, area), _not_inspected(after, area)
    if then:
        return f"{area}: not inspected in the baseline ({then})"
    if now:
        return f"{area}: not inspected now ({now}{' with --skip ' + area if now == 'skipped' else ''})"
    return None


def _gpu_label(g: GpuInfo) -> str:
    uuid = f", {g.uuid}" if _real(g.uuid) else ""
    return f"GPU {g.index}: {g.name or 'unknown'}{uuid}"


def _mib(value: Optional[int]) -> str:
    return f"{value} MiB" if value else "? MiB"


def _nvml_ok(d: DriverFacts) -> bool:
    return d.nvml_error is None and bool(d.nvml_version or any(g.source == "nvml" for g in d.gpus))


def _smi_ok(d: DriverFacts) -> bool:
    return bool(d.smi_path) and d.smi_error is None


def _no_devices(d: DriverFacts) -> bool:
    return any(e is not None and "No devices" in e.message for e in (d.nvml_error, d.smi_error))


def _listable(d: DriverFacts) -> bool:
    """The driver could list the GPUs now (possibly none: "No devices were found")."""
    return bool(d.gpus) or _no_devices(d)


def _driver_of(d: DriverFacts) -> Optional[str]:
    return d.driver_version or d.userspace_version or d.kernel_module_version


# --- the comparison ---------------------------------------------------------------------------------

def compare(before: Facts, after: Facts, before_findings: Iterable[Finding] = (),
            after_findings: Iterable[Finding] = (), before_bench: Any = None, after_bench: Any = None,
            tolerance_pct: float = DEFAULT_TOLERANCE) -> Verification:
    """Regressions and changes from ``before`` (the baseline) to ``after`` (the machine now).

    ``before_bench`` / ``after_bench`` are ``BenchResult``s; pass both to compare the bench
    (``envdoctor.bench.analysis.compare_bench`` with ``tolerance_pct``).
    """
    out = _Out()
    rebooting = _mismatch(before, after, out)
    _gpus(before, after, out, rebooting)
    _driver_sources(before, after, out, rebooting)
    _driver_change(before, after, out)
    _driver_cuda(before, after, out, rebooting)
    _torch(before, after, out, rebooting)
    _docker(before, after, out)
    _toolkits(before, after, out)
    _conda(before, after, out)
    _system(before, after, out)
    if before_bench is not None and after_bench is not None:
        _bench(before_bench, after_bench, tolerance_pct, out)
    _new_and_resolved(before, after, tuple(before_findings), tuple(after_findings), out, rebooting)
    regressions = tuple(sorted((f for f in out.found if f.severity == "error"), key=lambda f: f.code))
    changes = tuple(sorted((f for f in out.found if f.severity != "error"), key=lambda f: f.code))
    return Verification(regressions, changes, tuple(out.unchanged), tuple(out.not_compared))


def _mismatch(before: Facts, after: Facts, out: _Out) -> bool:
    """ED701. True when the machine waits for a reboot: GPU and torch checks are then meaningless."""
    d = after.driver
    if not d.mismatch:
        return False
    evidence = []
    if d.kernel_module_version:
        evidence.append(f"kernel module {d.kernel_module_version} still loaded ({d.kernel_module_source})")
    if d.userspace_version:
        evidence.append(f"user-space driver {d.userspace_version} installed ({d.sources.get('userspace_version')})")
    evidence.extend(e.message for e in (d.smi_error, d.nvml_error) if e is not None and "mismatch" in e.message)
    if before.driver.mismatch:
        evidence.append("the baseline was taken in the same state")
    out.add(Finding(
        "ED701", "error", "Driver upgraded without a reboot: the new driver is installed, the old kernel module runs",
        evidence=tuple(evidence), fix=commands.reload_modules() + ("envdoctor verify   # again, after the reboot",),
        reference=REF_MISMATCH, area="driver",
        explanation="Until the new module is loaded, nvidia-smi, NVML, containers and every CUDA program fail "
                    "with 'Driver/library version mismatch'; the GPU and torch checks are compared after the reboot.",
    ))
    out.not_compared.append("GPUs, NVML/nvidia-smi and torch's use of the GPU: not until the reboot (ED701)")
    return True


def _gpus(before: Facts, after: Facts, out: _Out, rebooting: bool) -> None:
    """ED702 missing, ED703 changed, ED721 added / memory reported slightly differently."""
    b, a = before.driver.gpus, after.driver.gpus
    if rebooting:
        return
    if not b:
        if a:
            out.add(Finding("ED721", "info", f"GPUs found now: {len(a)} (none in the baseline)",
                            evidence=tuple(_gpu_label(g) for g in a), area="gpu"))
        return
    if not _listable(after.driver):
        out.not_compared.append("GPUs: the driver cannot list them now (see ED704)")
        return
    by_uuid = all(_real(g.uuid) for g in b) and all(_real(g.uuid) for g in a)
    key = (lambda g: g.uuid.lower()) if by_uuid else (lambda g: g.index)  # type: ignore[union-attr]
    now = {key(g): g for g in a}
    then = {key(g): g for g in b}
    missing = [g for g in b if key(g) not in now]
    added = [g for g in a if key(g) not in then]
    changed, nudged = [], []
    for g in b:
        h = now.get(key(g))
        if h is None:
            continue
        what = []
        if g.name and h.name and g.name != h.name:
            what.append(f"name {g.name} -> {h.name}")
        if g.compute_capability and h.compute_capability and g.compute_capability != h.compute_capability:
            what.append(f"compute capability {g.compute_capability} -> {h.compute_capability}")
        if g.memory_total_mib and h.memory_total_mib and g.memory_total_mib != h.memory_total_mib:
            text = f"memory {_mib(g.memory_total_mib)} -> {_mib(h.memory_total_mib)}"
            if (g.memory_total_mib - h.memory_total_mib) / g.memory_total_mib > MEMORY_DROP:
                what.append(text)
            else:
                nudged.append(f"GPU {h.index} ({h.name}): {text}")
        if what:
            changed.append(f"{_gpu_label(h)}: " + ", ".join(what))
    if missing:
        pci = len(after.pci.devices)
        evidence = [f"missing: {_gpu_label(g)}" for g in missing]
        evidence.append(f"the driver sees {len(a)} GPU(s) now ({after.driver.sources.get('gpus') or 'nvidia-smi'}), "
                        f"{len(b)} in the baseline")
        if after.pci.devices or before.pci.devices:
            evidence.append(f"NVIDIA devices on the PCI bus: {len(before.pci.devices)} then, {pci} now")
        out.add(Finding(
            "ED702", "error", f"GPU missing: {len(missing)} of the baseline's {len(b)} GPU(s) are gone",
            evidence=tuple(evidence),
            fix=("nvidia-smi -L",
                 "sudo dmesg | grep -iE 'xid|nvrm|fallen off' | tail -20   # Xid 79: the GPU fell off the bus",
                 "sudo reboot   # a GPU that fell off the bus comes back only after a reset or a reboot"),
            reference=REF_XID, area="gpu",
            explanation="A GPU that NVML no longer lists is invisible to CUDA, containers and torch.",
        ))
    if changed:
        out.add(Finding(
            "ED703", "error", "GPU changed since the baseline", evidence=tuple(changed),
            fix=("nvidia-smi -q | grep -iE 'product name|uuid|fb memory|retired|remapp|mig mode' -A2",),
            reference=REF_XID, area="gpu",
            explanation="Less memory on the same GPU points to MIG mode, retired or remapped memory rows, or a "
                        "different board; a different name to a replaced board or a misread.",
        ))
    if added or nudged:
        evidence = [f"added: {_gpu_label(g)}" for g in added] + nudged
        title = f"GPUs added: {len(added)}" if added else "GPU memory reported slightly differently"
        out.add(Finding("ED721", "info", title, evidence=tuple(evidence), area="gpu",
                        explanation="A driver update may reserve a little more or less memory." if nudged else None))
    if not (missing or changed or added):
        names = [g.name or "?" for g in a]
        out.unchanged.append("GPUs " + ", ".join(f"{names.count(n)}x {n}" for n in sorted(set(names))))


def _driver_sources(before: Facts, after: Facts, out: _Out, rebooting: bool) -> None:
    """ED704: NVML or nvidia-smi fails now where it worked, or the driver is gone."""
    b, a = before.driver, after.driver
    if rebooting:
        return
    failures = []
    if _nvml_ok(b) and a.nvml_error is not None and "No devices" not in a.nvml_error.message:
        failures.append(f"NVML: worked in the baseline, now: {a.nvml_error.message}")
    if _smi_ok(b):
        if not a.smi_path:
            failures.append(f"nvidia-smi was at {b.smi_path}; it is not found now")
        elif a.smi_error is not None and "No devices" not in a.smi_error.message:
            failures.append(f"nvidia-smi: worked in the baseline, now: {a.smi_error.message}")
    gone = bool(_driver_of(b)) and not _driver_of(a)
    if not failures and not gone:
        if _nvml_ok(b) or _smi_ok(b):
            out.unchanged.append("NVML / nvidia-smi answer")
        return
    evidence = list(failures)
    if gone:
        evidence.insert(0, f"driver {_driver_of(b)} in the baseline; no NVIDIA kernel module or driver library now")
    if before.system.kernel and after.system.kernel and before.system.kernel != after.system.kernel:
        evidence.append(f"the kernel changed: {before.system.kernel} -> {after.system.kernel} "
                        "(the nvidia module must be built for the running kernel)")
    text = " ".join(evidence)
    if "Unknown Error" in text and after.system.container:
        fix: Tuple[str, ...] = (
            "# inside a container: the host reset the device cgroups (systemctl daemon-reload); restart the container,",
            "# and on the host use CDI (sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml) or no-cgroups")
    else:
        fix = ("nvidia-smi", "dkms status   # is the module built for the running kernel (uname -r)?",
               "sudo dmesg | grep -iE 'nvrm|nvidia|xid' | tail -20", "lsmod | grep nvidia || sudo modprobe nvidia")
    out.add(Finding(
        "ED704", "error", "The NVIDIA driver is gone" if gone and not failures
        else "nvidia-smi / NVML fail now (they worked in the baseline)",
        evidence=tuple(evidence), fix=fix, reference=REF_MISMATCH, area="driver",
    ))


def _driver_change(before: Facts, after: Facts, out: _Out) -> None:
    """ED720: the driver version itself, expected after an upgrade."""
    b, a = before.driver, after.driver
    then = _driver_of(b)
    now = a.userspace_version if a.mismatch else (a.driver_version or a.userspace_version)
    if not then or not now:
        return
    if then == now and (a.mismatch or b.driver_cuda == a.driver_cuda or not a.driver_cuda):
        out.unchanged.append(f"driver {now}" + (f" (CUDA {a.driver_cuda})" if a.driver_cuda else ""))
        return
    vb, va = release(then), release(now)
    direction = "upgrade" if vb and va and va > vb else ("downgrade" if vb and va and va < vb else "change")
    state = ", installed; loads at the next reboot" if a.mismatch else ""
    title = f"Driver {then} -> {now} ({direction}{state})" if then != now else f"Driver CUDA {b.driver_cuda} -> {a.driver_cuda}"
    evidence = []
    if b.driver_cuda and a.driver_cuda and not a.mismatch:
        evidence.append(f"driver's CUDA {b.driver_cuda} -> {a.driver_cuda}" if b.driver_cuda != a.driver_cuda
                        else f"driver's CUDA {a.driver_cuda} (unchanged)")
    if b.kernel_module_flavor and a.kernel_module_flavor and b.kernel_module_flavor != a.kernel_module_flavor:
        evidence.append(f"kernel module {b.kernel_module_flavor} -> {a.kernel_module_flavor}")
    fix: Tuple[str, ...] = ()
    specs = after.docker.cdi_specs or before.docker.cdi_specs
    if specs and not a.mismatch:
        evidence.append(f"CDI spec {specs[0]} names the driver's files by version")
        fix = ("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml   # unless nvidia-cdi-refresh does it",)
    out.add(Finding("ED720", "info", title, evidence=tuple(evidence), fix=fix, area="driver",
                    explanation="Expected after a driver update."))


def _driver_cuda(before: Facts, after: Facts, out: _Out, rebooting: bool) -> None:
    """ED705: the driver's CUDA now older than torch's CUDA (torch from now, else from the baseline)."""
    if rebooting:
        return
    torch_now = after.torch if (not _not_inspected(after, "torch") and after.torch.cuda) else None
    torch_cuda = torch_now.cuda if torch_now else before.torch.cuda
    version = torch_now.version if torch_now else before.torch.version
    dc = after.driver.driver_cuda
    if not _lower(dc, torch_cuda):
        return
    if _lower(before.driver.driver_cuda, before.torch.cuda):
        return  # the baseline had the same problem: not a regression
    out.add(Finding(
        "ED705", "error", f"The driver's CUDA {dc} is now older than torch's CUDA {torch_cuda}",
        evidence=(f"driver {after.driver.driver_version}: CUDA {dc} (baseline: {before.driver.driver_cuda})",
                  f"torch {version} was built for CUDA {torch_cuda}" + ("" if torch_now else " (as in the baseline)")),
        fix=("envdoctor recommend   # a torch build for this driver, or the driver this torch needs",),
        reference=REF_COMPAT, area="driver",
        explanation="A torch build needs a driver that supports its CUDA; with an older one CUDA fails to start "
                    "or kernels fail to load (minor-version compatibility covers only part of it).",
    ))


def _torch(before: Facts, after: Facts, out: _Out, rebooting: bool) -> None:
    """ED706 import, ED707 GPUs visible, ED708 tiny op; ED722 what changed."""
    reason = _skip_reason(before, after, "torch")
    if reason:
        out.not_compared.append(reason)
        return
    bt, at = before.torch, after.torch
    evidence_py = []
    bp, ap = before.python.executable, after.python.executable
    if bp and ap and bp != ap:
        if after.python.chosen_by != "--python":  # another interpreter by accident: not like with like
            out.not_compared.append(f"torch: the baseline inspected {bp}, now {ap} (pass --python to compare)")
            return
        evidence_py.append(f"the baseline inspected {bp}, now {ap}")
    was_ok = bt.installed and not bt.import_error and bt.error is None
    where = ap or "the target Python"
    if was_ok:
        title = None
        evidence: List[str] = []
        if at.error is not None:
            title = f"torch's check fails now in {where}"
            evidence = [at.error.message] + ([f"last step: {at.stage}"] if at.stage else [])
            if at.stderr_tail:
                evidence.append("stderr: " + at.stderr_tail.strip().splitlines()[-1])
        elif not at.installed:
            title = f"torch is no longer installed in {where}"
            evidence = [f"the baseline had torch {bt.version} ({bt.location or bp})"]
        elif at.import_error:
            title = "torch no longer imports"
            evidence = [at.import_error.strip().splitlines()[-1] if at.import_error.strip() else at.import_error]
        if title:
            out.add(Finding("ED706", "error", title, evidence=tuple(evidence + evidence_py),
                            fix=(f"{ap or 'python3'} -c 'import torch; print(torch.__version__)'",
                                 "envdoctor check   # the full diagnosis"), area="torch"))
            return
    imports_now = at.installed and not at.import_error and at.error is None
    regressed = False
    if was_ok and imports_now and not rebooting:
        if bt.cuda_available and at.cuda_available is False:
            evidence = [f"torch {at.version}: torch.cuda.is_available() was True, is False now"]
            if at.cuda_error:
                evidence.append(at.cuda_error)
            evidence.extend(w for w in at.warnings[:2])
            out.add(Finding(
                "ED707", "error", "torch no longer sees the GPUs", evidence=tuple(evidence + evidence_py),
                fix=("nvidia-smi", "envdoctor check   # why CUDA does not start"), area="torch",
                explanation="A driver update without a reboot, a driver whose CUDA is older than torch's, "
                            "or a container that lost its device nodes all end here: torch falls back to the CPU.",
            ))
            regressed = True
        elif bt.device_count and at.device_count is not None and at.cuda_available and at.device_count < bt.device_count:
            out.add(Finding("ED707", "error", f"torch sees fewer GPUs: {bt.device_count} -> {at.device_count}",
                            evidence=tuple([f"CUDA_VISIBLE_DEVICES={after.driver.cuda_visible_devices!r}"]
                                           if after.driver.cuda_visible_devices is not None else []) + tuple(evidence_py),
                            fix=("nvidia-smi -L",), area="torch"))
            regressed = True
        elif bt.tiny_op == "ok" and at.cuda_available and at.tiny_op != "ok":
            out.add(Finding(
                "ED708", "error", "The tiny CUDA operation fails now",
                evidence=(f"torch.ones(1, device='cuda') ... .item(): {at.tiny_op or 'did not finish'}",) + tuple(evidence_py),
                fix=("envdoctor check   # the full diagnosis", "sudo dmesg | grep -iE 'nvrm|xid' | tail -20"),
                area="torch",
                explanation="CUDA starts but a kernel cannot run: a driver too old for torch's CUDA, a GPU "
                            "architecture the build lacks, or a GPU in an error state.",
            ))
            regressed = True
    changes = []
    if bt.version != at.version:
        changes.append(f"torch {bt.version or 'not installed'} -> {at.version or 'not installed'}")
    for label, x, y in (("CUDA", bt.cuda, at.cuda), ("cuDNN", bt.cudnn_version, at.cudnn_version),
                        ("NCCL", bt.nccl_version, at.nccl_version), ("torchvision", bt.torchvision, at.torchvision),
                        ("torchaudio", bt.torchaudio, at.torchaudio)):
        if x != y and (x or y):
            changes.append(f"{label} {x or 'none'} -> {y or 'none'}")
    if not was_ok and imports_now and at.installed:
        changes.append("torch imports now" + (f" (baseline: {bt.import_error or (bt.error.message if bt.error else 'not installed')})"))
    if changes:
        out.add(Finding("ED722", "info", "torch changed: " + changes[0], evidence=tuple(changes[1:] + evidence_py),
                        area="torch"))
    elif not regressed and imports_now:
        gpu = ""
        if at.cuda_available and not rebooting:
            gpu = f", sees {at.device_count} GPU(s)" + (", tiny op ok" if at.tiny_op == "ok" else "")
        out.unchanged.append(f"torch {at.version}" + (f" (CUDA {at.cuda}{gpu})" if at.cuda else " (CPU build)"))


def _docker(before: Facts, after: Facts, out: _Out) -> None:
    """ED709 the container toolkit no longer works; ED725 versions changed."""
    reason = _skip_reason(before, after, "docker")
    if reason:
        out.not_compared.append(reason)
        return
    b, a = before.docker, after.docker
    broken, fix = [], []
    if b.client and not a.client:
        broken.append(f"docker was at {b.client}; it is not found now")
    elif b.daemon == "ok" and a.daemon != "ok":
        broken.append(f"the docker daemon answered in the baseline; now: {a.daemon or 'unknown'}"
                      + (f" ({a.daemon_error})" if a.daemon_error else ""))
        fix += ["sudo systemctl start docker", "sudo systemctl status docker --no-pager | tail -20"]
    if a.daemon == "ok":
        if "nvidia" in b.runtimes and "nvidia" not in a.runtimes:
            broken.append(f"the nvidia runtime is no longer registered with docker (runtimes now: {', '.join(a.runtimes) or 'none'})")
            fix += list(commands.configure_docker(bool(a.rootless))[:-1])
        if b.cdi_devices and not a.cdi_devices:
            broken.append("docker no longer discovers CDI GPUs (" + ", ".join(b.cdi_devices[:3]) + " in the baseline)")
    if b.cdi_specs and not a.cdi_specs:
        broken.append("the CDI spec is gone: " + ", ".join(b.cdi_specs))
    if (b.cdi_specs and not a.cdi_specs) or (a.daemon == "ok" and b.cdi_devices and not a.cdi_devices):
        fix.append("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    for label, x, y in (("nvidia-ctk", b.nvidia_ctk, a.nvidia_ctk),
                        ("nvidia-container-cli", b.nvidia_container_cli, a.nvidia_container_cli),
                        ("nvidia-container-runtime", b.nvidia_container_runtime, a.nvidia_container_runtime)):
        if x and not y:
            broken.append(f"{label} was at {x}; it is not found now")
            fix += list(commands.install_container_toolkit(after.system))
    if broken:
        fix.append(f"{commands.DOCKER_GPU_TEST}   # the check that containers get the GPU")
        out.add(Finding("ED709", "error", "The NVIDIA Container Toolkit no longer works as in the baseline",
                        evidence=tuple(broken), fix=tuple(dict.fromkeys(fix)), reference=REF_CONTAINER,
                        area="docker"))
    changes = []
    for label, x, y in (("docker client", b.client_version, a.client_version),
                        ("docker daemon", b.server_version, a.server_version),
                        ("nvidia-ctk", b.nvidia_ctk_version, a.nvidia_ctk_version),
                        ("nvidia-container-cli", b.nvidia_container_cli_version, a.nvidia_container_cli_version),
                        ("podman", b.podman_version, a.podman_version)):
        if x and y and x != y:
            changes.append(f"{label} {x} -> {y}")
        elif y and not x:
            changes.append(f"{label} {y} found now")
    new_runtimes = [r for r in a.runtimes if r not in b.runtimes]
    if new_runtimes and a.daemon == "ok" and b.daemon == "ok":
        changes.append("docker runtimes added: " + ", ".join(new_runtimes))
    if changes:
        out.add(Finding("ED725", "info", "Container tools changed: " + changes[0], evidence=tuple(changes[1:]),
                        area="docker"))
    if not broken and not changes and (a.client or a.podman):
        parts = [f"docker {a.client_version}" if a.client_version else "docker"]
        if a.daemon:
            parts.append(f"daemon {a.daemon}")
        if "nvidia" in a.runtimes:
            parts.append("nvidia runtime")
        if a.cdi_specs:
            parts.append("CDI")
        out.unchanged.append(", ".join(parts))


def _toolkits(before: Facts, after: Facts, out: _Out) -> None:
    """ED710 nvcc fails now / extension builds would fail; ED723 toolkits changed."""
    reason = _skip_reason(before, after, "toolkits")
    if reason:
        out.not_compared.append(reason)
        return
    b, a = before.toolkits, after.toolkits
    then = {t.root: t for t in b.toolkits}
    now = {t.root: t for t in a.toolkits}
    broken, changes = [], []
    for root, t in then.items():
        u = now.get(root)
        if u is None:
            changes.append(f"CUDA toolkit {root} ({t.release or t.version or '?'}) removed")
        elif t.error is None and u.error is not None:
            broken.append(f"{u.nvcc or root + '/bin/nvcc'}: {u.error.message}")
        elif t.version != u.version:
            changes.append(f"CUDA toolkit {root}: {t.version} -> {u.version}")
    for root, u in now.items():
        if root not in then:
            changes.append(f"CUDA toolkit {root} ({u.release or u.version or '?'}) added")
    if b.nvcc_on_path != a.nvcc_on_path:
        changes.append(f"first nvcc on PATH: {b.nvcc_on_path or 'none'} -> {a.nvcc_on_path or 'none'}")
    if b.extension_status == "ok" and a.extension_status not in (None, "ok"):
        broken.append(f"CUDA extension builds would use {a.extension_root or 'nothing'} ({a.extension_rule}): "
                      f"{a.extension_status} (was {b.extension_root}, ok)")
    if broken:
        out.add(Finding("ED710", "error", "nvcc / the CUDA toolkit no longer works as in the baseline",
                        evidence=tuple(broken),
                        fix=("nvcc --version", "ls -l /usr/local/cuda /usr/local/cuda-*/bin/nvcc",
                             "envdoctor check   # the full diagnosis"), area="toolkits"))
    if changes:
        out.add(Finding("ED723", "info", "CUDA toolkits changed: " + changes[0], evidence=tuple(changes[1:]),
                        area="toolkits"))
    if not broken and not changes:
        releases = sorted({t.release or t.version or "?" for t in a.toolkits}, key=version_key)
        out.unchanged.append("CUDA toolkits: " + (", ".join(releases) if releases else "none"))


def _conda(before: Facts, after: Facts, out: _Out) -> None:
    """ED711 conda fails now; ED724 conda changed."""
    reason = _skip_reason(before, after, "conda")
    if reason:
        out.not_compared.append(reason)
        return
    b, a = before.conda, after.conda
    if b.exe and b.error is None and a.exe and a.error is not None:
        out.add(Finding("ED711", "error", f"{a.flavor or 'conda'} fails now (it worked in the baseline)",
                        evidence=(a.error.message,), fix=(f"{a.exe} info",), area="conda"))
        return
    changes = []
    if b.exe and not a.exe:
        changes.append(f"{b.flavor or 'conda'} at {b.exe} is not found now")
    elif a.exe and not b.exe:
        changes.append(f"{a.flavor or 'conda'} found now at {a.exe}")
    if b.version and a.version and b.version != a.version:
        changes.append(f"{a.flavor or 'conda'} {b.version} -> {a.version}")
    if b.virtual_cuda != a.virtual_cuda and (b.virtual_cuda or a.virtual_cuda):
        changes.append(f"__cuda virtual package {b.virtual_cuda or 'none'} -> {a.virtual_cuda or 'none'} "
                       "(it follows the driver)")
    if b.active_prefix != a.active_prefix and (b.active_prefix or a.active_prefix):
        changes.append(f"active environment {b.active_prefix or 'none'} -> {a.active_prefix or 'none'}")
    pb = {p.name: p.version for p in b.packages}
    pa = {p.name: p.version for p in a.packages}
    for name in sorted(set(pb) | set(pa)):
        if pb.get(name) != pa.get(name):
            changes.append(f"{name} {pb.get(name) or 'absent'} -> {pa.get(name) or 'absent'}")
    if changes:
        out.add(Finding("ED724", "info", "conda changed: " + changes[0], evidence=tuple(changes[1:]), area="conda"))
    elif a.exe:
        out.unchanged.append(f"{a.flavor or 'conda'} {a.version or ''}".rstrip()
                             + (f" (__cuda {a.virtual_cuda})" if a.virtual_cuda else ""))


def _system(before: Facts, after: Facts, out: _Out) -> None:
    """ED726: OS, kernel, glibc."""
    b, a = before.system, after.system
    changes = []
    for label, x, y in (("OS", b.os_name, a.os_name), ("kernel", b.kernel, a.kernel), ("glibc", b.glibc, a.glibc)):
        if x and y and x != y:
            changes.append(f"{label} {x} -> {y}")
    if changes:
        out.add(Finding("ED726", "info", "System changed: " + changes[0], evidence=tuple(changes[1:]), area="system"))
    elif a.os_name or a.kernel:
        out.unchanged.append(f"{a.os_name or a.os_id or 'OS'}, kernel {a.kernel or '?'}")


def _steady(point: Any, sms: Optional[int]) -> bool:
    """A compute-bound point whose product fills the GPU: its speed is the GPU's, run after run."""
    from envdoctor.bench.analysis import TILE

    if point.bound == "launch":
        return False
    tiles = (-(-point.n // TILE)) ** 2
    return tiles >= (sms or 100)


def _bench(before: Any, after: Any, tolerance_pct: float, out: _Out) -> None:
    """ED712 per point slower than the tolerance (or failed), with clocks/power context.

    A point that is launch-bound (then or now), or too small to give every SM an output tile,
    measures how fast the CPU issues products more than the GPU; such points vary by a third or
    more from run to run on the same machine (seen on the H200: every n <= 512 point 35% slower
    in a second run minutes later), so their slowdown is ED728, a change, not a regression.
    A failed point is a regression whatever its size.
    """
    from envdoctor.bench.analysis import compare_bench  # the bench package loads only when asked

    base_ok = [p for p in before.points if p.status == "ok" and p.tflops]
    if not base_ok:
        out.not_compared.append("bench: the baseline has no measured point")
        return
    names = {d.index: d.name for d in list(before.devices) + list(after.devices) if d.name}
    fix = ("nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE   # throttle reasons, clocks, power limit",
           "envdoctor bench   # measure again on an idle GPU")
    now_ok = [p for p in after.points if p.status == "ok" and p.tflops]
    if after.error is not None and not now_ok:
        out.add(Finding("ED712", "error", "The benchmark no longer runs",
                        evidence=(after.error.message, f"the baseline measured {len(base_ok)} point(s)"),
                        fix=("envdoctor check   # why torch cannot use the GPU",), area="bench"))
        return
    points = {}
    for p in list(before.points) + list(after.points):
        points.setdefault((p.device, p.dtype, p.n), []).append(p)
    sms = {d.index: d.multiprocessors for d in list(before.devices) + list(after.devices) if d.multiprocessors}
    launch_bound, slow = [], 0
    for r in compare_bench(before, after, tolerance_pct):
        where = f"GPU {r.device}" + (f" ({names[r.device]})" if r.device in names else "")
        if r.current_tflops is None:
            title = f"Bench point fails now: {where} {r.dtype} n={r.n} (was {r.baseline_tflops:.1f} TFLOP/s)"
        elif not all(_steady(p, sms.get(r.device)) for p in points.get((r.device, r.dtype, r.n), ())):
            launch_bound.append(f"{where} {r.dtype} n={r.n}: {r.baseline_tflops:.1f} -> {r.current_tflops:.1f} "
                                f"TFLOP/s ({r.change_pct:+.1f}%)")
            continue
        else:
            title = (f"Bench slower: {where} {r.dtype} n={r.n}: {r.baseline_tflops:.1f} -> {r.current_tflops:.1f} "
                     f"TFLOP/s ({r.change_pct:+.1f}%, tolerance {tolerance_pct:g}%)")
        slow += 1
        out.add(Finding("ED712", "error", title, evidence=tuple(r.context), fix=fix, area="bench"))
    if launch_bound:
        out.add(Finding("ED728", "info", f"Bench slower at {len(launch_bound)} small, launch-sensitive point(s)",
                        evidence=tuple(launch_bound), area="bench",
                        explanation="Small products measure how fast the CPU issues them more than the GPU "
                                    "(launch-bound, or too few output tiles to fill every SM); they vary by a "
                                    "third from run to run."))
    if after.error is not None:
        out.add(Finding("ED712", "error", "The benchmark stopped early",
                        evidence=(after.error.message, f"{len(now_ok)} of the baseline's {len(base_ok)} point(s) measured"),
                        fix=fix, area="bench"))
    compared = {(p.device, p.dtype, p.n) for p in now_ok} & {(p.device, p.dtype, p.n) for p in base_ok}
    within = len(compared) - slow - len(launch_bound)
    if not compared:
        out.not_compared.append("bench: no point measured both times (other sizes or dtypes)")
    elif within > 0:
        out.unchanged.append(f"bench: {within} of {len(compared)} point(s) within {tolerance_pct:g}% of the baseline")


def _hidden_areas(before: Facts, after: Facts) -> set:
    hidden = set()
    for area, finding_areas in _FINDING_AREAS.items():
        if _not_inspected(before, area) or _not_inspected(after, area):
            hidden.update(finding_areas)
    return hidden


def _new_and_resolved(before: Facts, after: Facts, bf: Tuple[Finding, ...], af: Tuple[Finding, ...],
                      out: _Out, rebooting: bool = False) -> None:
    """ED713: error findings of the check now that the baseline did not have; ED727: the reverse.

    Until the reboot (ED701) the driver, GPU and torch findings are its consequences: left out.
    """
    hidden = _hidden_areas(before, after)
    if rebooting:
        hidden.update(("driver", "gpu", "torch"))
    reported = out.codes()

    def counts(f: Finding) -> bool:
        return f.severity == "error" and not f.code.startswith("ED9") and f.area not in hidden

    then = {f.code for f in bf}
    now = {f.code for f in af}
    for f in af:
        if not counts(f) or f.code in then or COVERED.get(f.code) in reported:
            continue
        out.add(Finding("ED713", "error", f"New problem {f.code}: {f.title}", evidence=f.evidence, fix=f.fix,
                        reference=f.reference, area=f.area, explanation=f.explanation))
    gone = [f for f in bf if counts(f) and f.code not in now]
    if gone:
        out.add(Finding("ED727", "info", f"Fixed since the baseline: {gone[0].code} {gone[0].title}",
                        evidence=tuple(f"{f.code} {f.title}" for f in gone[1:]), area="verify"))


# --- is it the same machine? ------------------------------------------------------------------------

def machine_differences(before: Facts, after: Facts, before_host: Optional[str] = None
                        ) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(reasons the baseline looks like another machine, notes), both one-line strings.

    Another machine: none of the baseline's GPU UUIDs is here (both lists known), or the host
    name differs and no GPU UUID says it is the same hardware. A new container on the same host
    has a new host name but the same GPUs: that is the same machine, with a note.

    >>> machine_differences(baseline, now, "gpu-01")
    (("taken on host 'gpu-01', this is 'gpu-02'",), ())
    """
    host_then = before_host or before.system.hostname
    host_now = after.system.hostname
    host_differs = _real(host_then) and _real(host_now) and host_then != host_now
    then = {g.uuid.lower() for g in before.driver.gpus if _real(g.uuid)}  # type: ignore[union-attr]
    now = {g.uuid.lower() for g in after.driver.gpus if _real(g.uuid)}    # type: ignore[union-attr]
    if then and now:
        if then & now:
            note = (f"host name differs ('{host_then}' then, '{host_now}' now) but the GPUs are the same "
                    "(UUIDs match): compared as the same machine",) if host_differs else ()
            return (), note
        return (f"none of the baseline's {len(then)} GPU UUID(s) is here ({sorted(then)[0]}... then, "
                f"{sorted(now)[0]}... now)",) + ((f"taken on host '{host_then}', this is '{host_now}'",)
                                                 if host_differs else ()), ()
    if host_differs:
        return (f"taken on host '{host_then}', this is '{host_now}'",), ()
    return (), ()


def summary_line(facts: Facts) -> Tuple[Optional[str], Optional[str]]:
    """(driver, torch) of ``facts`` for headers: ("580.159.04", "2.11.0+cu130")."""
    return _driver_of(facts.driver), facts.torch.version


__all__ = ["DEFAULT_TOLERANCE", "Verification", "compare", "machine_differences", "summary_line"]

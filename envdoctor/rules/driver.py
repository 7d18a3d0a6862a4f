"""ED1xx: the driver, the GPUs, WSL and container access. Pure: facts and table in, findings out."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Optional

from envdoctor import commands
from envdoctor.codes import CODES
from envdoctor.compat import open_modules
from envdoctor.facts import Facts, PciDevice
from envdoctor.facts.gpu import driver_in_effect, mismatch_evidence
from envdoctor.findings import Finding, Severity
from envdoctor.gpus import PCI, machine_gpus
from envdoctor.parse import major
from envdoctor.parse.visible import HIDES_ALL
from envdoctor.table import Architecture, Table

REF_MISMATCH = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"
REF_INSTALL = commands.DRIVER_GUIDE
REF_CONTAINER = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/user-guide.html"
REF_WSL = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
REF_VISIBLE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"
REF_ARCH = "https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html"
REF_OPEN = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html"
REF_VFIO = "https://docs.kernel.org/driver-api/vfio.html"
#: The kernel driver that reserves a PCI device for passing through to a virtual machine.
VFIO = "vfio-pci"


def _gpu_ccs(facts: Facts, table: Optional[Table]) -> list[tuple[str, str]]:
    """(label, compute capability) of every GPU whose capability is known (:func:`machine_gpus`)."""
    return [
        (g.name or (str(g.pci_id) if g.kind == PCI else f"GPU {g.index}"), g.cc)
        for g in machine_gpus(facts, table)
        if g.cc
    ]


def _driver_gone(facts: Facts) -> bool:
    d = facts.driver
    return not d.kernel_module_version and not d.gpus and not d.mismatch


def _userspace(facts: Facts) -> Optional[str]:
    """How the installed user-space driver shows itself while no kernel module is loaded; None
    when there is none (no libnvidia-ml, no nvidia-smi)."""
    d = facts.driver
    if d.userspace_version:
        return f"user-space driver {d.userspace_version} installed ({d.sources.get('userspace_version') or 'library'})"
    if d.smi_path:
        return f"nvidia-smi installed at {d.smi_path}"
    if d.nvml_error is not None and "Driver Not Loaded" in d.nvml_error.message:
        return f"the NVML library libnvidia-ml.so.1 is installed ({d.nvml_error.message})"
    return None


def _pci_line(d: PciDevice) -> str:
    name = d.name or "NVIDIA device " + d.device_id
    return f"PCI {d.address}: {name} (kernel driver in use: {d.kernel_driver or 'none'})"


def no_driver(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED101: an NVIDIA GPU sits on the PCI bus but no NVIDIA kernel module is loaded: the driver
    is not installed (install it), or it is and its module did not load (build and load the
    module: no reinstall). GPUs bound to vfio-pci are left to ED113."""
    if not facts.pci.devices or not _driver_gone(facts) or facts.system.container or facts.system.wsl:
        return
    devices = [d for d in facts.pci.devices if d.kernel_driver != VFIO]
    if not devices:
        return  # every NVIDIA GPU is passed through to a virtual machine (ED113)
    s = facts.system
    evidence = [_pci_line(d) for d in devices]
    evidence.append("no NVIDIA kernel module loaded (/sys/module/nvidia and /proc/driver/nvidia absent)")
    installed = _userspace(facts)
    if installed:
        evidence.append(installed)
    fix: list[str] = []
    nouveau = bool(s.nouveau_loaded or any(d.kernel_driver == "nouveau" for d in devices))
    if nouveau:
        evidence.append("nouveau (the open-source driver) is loaded and holds the GPU (/proc/modules)")
    if s.secure_boot:
        evidence.append(
            f"Secure Boot is enabled ({s.secure_boot_source}): the kernel loads only modules "
            "signed with an enrolled key"
        )
    if installed:
        title = "The NVIDIA driver is installed, but its kernel module is not loaded"
        if nouveau:
            fix.extend(commands.blacklist_nouveau(s))
            why = "nouveau holds the GPU, so the NVIDIA module cannot take it: blacklist nouveau and reboot."
        else:
            fix.extend(commands.load_module(s, table, s.secure_boot))
            why = (
                "The driver's libraries are installed; its kernel module is what is missing. Usually it was "
                "not built for the running kernel (a kernel update without that kernel's headers, so DKMS "
                "could not rebuild it), Secure Boot refused it, or it failed to load (the kernel log says "
                "why). Reinstalling the driver does not change any of these."
            )
    else:
        title = "NVIDIA GPU found on the PCI bus, but no NVIDIA driver is installed"
        if nouveau:
            fix.extend(commands.blacklist_nouveau(s)[:-1])
        branch, flavour = _branch_for(facts, table)
        install = list(commands.driver_install(s, branch, flavour, table=table))
        headers = commands.kernel_headers_install(s, table)
        if len(install) >= 2 and install[-1] == "sudo reboot" and not headers.startswith("#"):
            # DKMS builds the module against the running kernel's headers; a package manager left
            # alone may install the newest kernel's instead (NVIDIA's pre-installation actions)
            install.insert(len(install) - 2, headers)
        if s.secure_boot and install and install[-1] == "sudo reboot":
            install = install[:-1] + [
                "# Secure Boot: if DKMS built the module (dkms status lists nvidia), it "
                "signed it with its own key; queue that key for the next boot:",
                *commands.mok_enroll(s, table),
            ]
        fix.extend(install)
        why = "No NVIDIA driver is installed (no libnvidia-ml, no nvidia-smi)" + (
            "; nouveau holds the GPU meanwhile, so it is blacklisted first." if nouveau else "."
        )
    passed = [d for d in facts.pci.devices if d.kernel_driver == VFIO]
    if passed:
        evidence.append(f"{len(passed)} more bound to vfio-pci, for a virtual machine (ED113)")
    yield Finding(
        "ED101",
        "error",
        title,
        evidence=tuple(evidence),
        fix=tuple(dict.fromkeys(fix)),
        reference=REF_INSTALL,
        area="driver",
        explanation=why,
    )


def passed_through(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED113: NVIDIA GPUs bound to vfio-pci are reserved for a virtual machine: not a missing driver."""
    vfio = [d for d in facts.pci.devices if d.kernel_driver == VFIO]
    if not vfio or facts.system.container:
        return
    yield Finding(
        "ED113",
        "info",
        f"{len(vfio)} NVIDIA GPU(s) bound to vfio-pci: passed through to a virtual machine",
        evidence=tuple(_pci_line(d) for d in vfio),
        fix=(
            f"lspci -nnk -s {vfio[0].address}   # 'Kernel driver in use: vfio-pci'",
            "grep -rn vfio /etc/modprobe.d /etc/default/grub /proc/cmdline   # where vfio-pci is told to take it",
            "# to use the GPU on this host instead: remove its id from vfio-pci.ids= there, then reboot",
        ),
        reference=REF_VFIO,
        area="gpu",
        explanation="vfio-pci holds the GPU on purpose, so that a virtual machine can drive it with its own NVIDIA "
        "driver; installing the driver here changes nothing while it is bound. Inside that VM, run "
        "envdoctor there.",
    )


def _branch_for(facts: Facts, table: Optional[Table]) -> tuple[Optional[str], bool]:
    """The driver branch to install for these GPUs (the one ``recommend`` plans for: the newest
    long-term branch, or the last one of a retired GPU) and whether they take the open modules.
    Without a table: no branch (the distribution's default driver), open modules."""
    from envdoctor.advise.drivers import recommended_branch

    ccs: list[Optional[str]] = [cc for _, cc in _gpu_ccs(facts, table)]
    branch = recommended_branch(table, ccs) if table is not None else None
    return branch, open_modules(table, ccs)


def _architecture(table: Optional[Table], cc: Optional[str]) -> Optional[Architecture]:
    return table.architecture(cc) if table is not None and cc else None


def mismatch(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED102: the loaded kernel module and the installed user-space driver differ (no reboot yet)."""
    d = facts.driver
    if not d.mismatch:
        return
    evidence = mismatch_evidence(d)
    yield Finding(
        "ED102",
        "error",
        CODES["ED102"].title,
        evidence=tuple(evidence),
        fix=commands.on_host(facts.system, commands.reload_modules()),
        reference=REF_MISMATCH,
        area="driver",
        explanation="Until the new module is loaded, NVML, nvidia-smi and every CUDA program fail with "
        "'Driver/library version mismatch'. To stop silent upgrades, hold the driver "
        "packages (sudo apt-mark hold 'nvidia-*' or dnf versionlock).",
    )


def smi_or_nvml_failing(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED103: nvidia-smi or NVML fails while a driver is there (mismatch and no-driver excluded)."""
    d = facts.driver
    if d.mismatch or facts.system.wsl == "wsl1":
        return
    failures = []
    if d.smi_error and d.smi_error.kind != "not_found" and "No devices were found" not in d.smi_error.message:
        failures.append(d.smi_error.message)
    nvml_expected = bool(d.kernel_module_version or d.smi_path)
    if (
        d.nvml_error
        and nvml_expected
        and d.nvml_error.kind not in ("unavailable",)
        and "No devices" not in d.nvml_error.message
    ):
        failures.append(d.nvml_error.message)
    if not failures:
        return
    if _driver_gone(facts) and facts.pci.devices and not facts.system.container:
        return  # ED101 says it better
    both = not d.gpus
    fix: tuple[str, ...]
    text = " ".join(failures)
    s = facts.system
    if "Unknown Error" in text and s.container:
        fix = (
            "# inside a container: the host reset its device cgroups (systemctl daemon-reload);",
            "# restart the container, and on the host use CDI or set no-cgroups as the container toolkit guide says",
        )
    elif s.wsl == "wsl2" and ("couldn't communicate" in text or "Driver Not Loaded" in text):
        fix = (
            "ls -l /usr/lib/wsl/lib/   # libcuda.so, libnvidia-ml.so.1 and nvidia-smi come from the Windows driver",
            "# in Windows: update the NVIDIA driver, then in PowerShell: wsl --shutdown, and start the "
            "distribution again",
        )
    elif "couldn't communicate" in text or "Driver Not Loaded" in text:
        fix = ("lsmod | grep nvidia",) + commands.on_host(
            s, ("sudo modprobe nvidia", "dkms status", "sudo dmesg | grep -iE 'nvrm|nvidia' | tail -20")
        )
    elif d.smi_error and d.smi_error.kind == "timeout":
        fix = commands.on_host(
            s, ("sudo dmesg | grep -iE 'nvrm|xid' | tail -20   # a hung GPU logs Xid errors",), restart=False
        ) + ("nvidia-smi -q | head -40",)
    else:
        fix = ("nvidia-smi",) + commands.on_host(s, ("sudo dmesg | grep -iE 'nvrm|nvidia' | tail -20",), restart=False)
    yield Finding(
        "ED103",
        "error" if both else "warning",
        "nvidia-smi / NVML cannot read the driver" if both else "One source of driver facts fails",
        evidence=tuple(failures) + ((f"the other source answered: {d.sources.get('gpus')}",) if not both else ()),
        fix=fix,
        reference=REF_INSTALL,
        area="driver",
    )


def smi_without_gpu(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED104: nvidia-smi is installed but there is no NVIDIA GPU to drive."""
    d = facts.driver
    no_devices = any(e is not None and "No devices" in e.message for e in (d.smi_error, d.nvml_error))
    if not d.smi_path or d.gpus or facts.pci.devices or facts.system.container:
        return
    if not (no_devices or d.kernel_module_version):
        return
    yield Finding(
        "ED104",
        "warning",
        CODES["ED104"].title,
        evidence=(f"nvidia-smi at {d.smi_path}", "no NVIDIA display/3D controller on the PCI bus"),
        fix=("lspci -nn | grep -i nvidia   # is the card seated / passed through to this VM?",),
        reference=REF_INSTALL,
        area="gpu",
        explanation="On a cloud VM, check that the instance type has a GPU; on a workstation, that "
        "the card is seated and powered.",
    )


def container_without_gpu(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED105: inside a container with no NVIDIA device nodes."""
    s, d = facts.system, facts.driver
    if not s.container or d.gpus or d.dev_nodes or d.mismatch:
        return
    visible = d.nvidia_visible_devices
    asked = visible not in (None, "", "void", "none")
    if not (asked or d.smi_path or facts.pci.devices):
        return  # a CPU-only container on a host whose PCI bus shows no NVIDIA GPU: nothing is wrong
    severity: Severity = "error" if (asked or d.smi_path) else "warning"
    evidence = [f"inside a {s.container} container ({s.container_evidence})", "no /dev/nvidia* device nodes"]
    if visible is not None:
        evidence.append(f"NVIDIA_VISIBLE_DEVICES={visible}")
    fix = {
        "docker": (
            "docker run --gpus all ...            # NVIDIA Container Toolkit with Docker >= 19.03",
            "docker run --device nvidia.com/gpu=all ...   # or through CDI",
        ),
        "podman": (
            "podman run --device nvidia.com/gpu=all ...   "
            "# CDI: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        ),
        "kubernetes": (
            "# request the GPU in the pod spec: resources: {limits: {nvidia.com/gpu: 1}}",
            "# and install the NVIDIA device plugin or GPU Operator on the cluster",
        ),
        "apptainer": ("apptainer exec --nv IMAGE ...",),
    }.get(s.container or "", ("# start the container with the GPU passed through (e.g. docker run --gpus all)",))
    fix = commands.on_host(s, fix, restart=False)
    yield Finding(
        "ED105",
        severity,
        CODES["ED105"].title,
        evidence=tuple(evidence),
        fix=fix,
        reference=REF_CONTAINER,
        area="container",
        explanation="Restart the container with the GPU passed through. If the host has no NVIDIA "
        "GPU, this is expected and torch will run on the CPU.",
    )


def wsl_driver(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED106: a Linux driver installed inside WSL2, or WSL1 (which has no GPU support)."""
    s, d = facts.system, facts.driver
    if s.wsl == "wsl1":
        yield Finding(
            "ED106",
            "error",
            "WSL1 has no GPU support; CUDA needs WSL2",
            evidence=("/proc/version names a WSL1 kernel",),
            fix=("# in Windows PowerShell:", "wsl --set-version <distribution> 2"),
            reference=REF_WSL,
            area="driver",
        )
        return
    if s.wsl != "wsl2":
        return
    inside = d.sources.get("userspace_version", "")
    if d.kernel_module_version or (inside.startswith("/") and not inside.startswith("/usr/lib/wsl/")):
        yield Finding(
            "ED106",
            "error",
            "A Linux NVIDIA driver is installed inside WSL2",
            evidence=(
                f"driver library at {inside}" if inside else f"kernel module {d.kernel_module_version}",
                "under WSL2 the Windows driver provides libcuda and NVML in /usr/lib/wsl/lib",
            ),
            fix=_remove_linux_driver(facts, inside)
            + ("# then in Windows PowerShell: wsl --shutdown, and start the distribution again",),
            reference=REF_WSL,
            area="driver",
            explanation="The Linux driver's libraries shadow the ones WSL2 maps in from Windows.",
        )


def _remove_linux_driver(facts: Facts, library: str) -> tuple[str, ...]:
    """Remove the package that installed the Linux driver's NVML library inside WSL2 (the package
    manager takes the driver packages that need it along); never libnvidia-container*, which the
    NVIDIA Container Toolkit needs there too."""
    fam = commands.family(facts.system)
    if library.startswith("/") and fam == "debian":
        return (
            f'sudo apt-get remove --purge "$(dpkg -S {shlex.quote(library)} | cut -d: -f1)"   '
            "# the package of that library, and the driver packages that need it",
        )
    if library.startswith("/") and fam in ("rhel", "suse"):
        manager = "zypper remove" if fam == "suse" else "dnf remove"
        return (
            f"sudo {manager} \"$(rpm -qf --qf '%{{NAME}}' {shlex.quote(library)})\"   "
            "# the package of that library, and the driver packages that need it",
        )
    return (
        "dpkg -l 'nvidia-driver-*' 'libnvidia-compute-*' 'cuda-drivers*' 2>/dev/null | grep ^ii   "
        "# the Linux driver's packages: remove those (not libnvidia-container*, the container toolkit's)",
    )


def _visible_hides_all(value: str, count: int, uuids: list[str]) -> bool:
    entries = [e.strip() for e in value.split(",")]
    if value.strip() in HIDES_ALL:
        return True
    for entry in entries:  # CUDA stops at the first invalid entry
        if entry.isascii() and entry.isdigit():  # "²" and "٣" are str.isdigit() too, and no index
            return len(entry) > 6 or int(entry) >= count
        if entry.upper().startswith(("GPU-", "MIG-")):
            return not any(u.lower().startswith(entry.lower()) for u in uuids)
        return True
    return True


def visible_devices(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED107: CUDA_VISIBLE_DEVICES hides every GPU the driver sees."""
    d = facts.driver
    value = d.cuda_visible_devices
    if value is None or not d.gpus:
        return
    uuids = [g.uuid for g in d.gpus if g.uuid]
    if _visible_hides_all(value, len(d.gpus), uuids):
        yield Finding(
            "ED107",
            "error",
            CODES["ED107"].title,
            evidence=(
                f"CUDA_VISIBLE_DEVICES={value!r}",
                f"the driver sees {len(d.gpus)} GPU(s): " + ", ".join(f"{g.index}: {g.name}" for g in d.gpus),
            ),
            fix=("unset CUDA_VISIBLE_DEVICES", "# or pick GPUs by index: export CUDA_VISIBLE_DEVICES=0"),
            reference=REF_VISIBLE,
            area="gpu",
        )


def architecture_support(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED108: driver branch too new for the GPU; ED109: too old; ED110: wrong kernel-module flavour."""
    d = facts.driver
    driver = driver_in_effect(d)
    branch = major(driver)
    if branch is None:
        return
    for label, cc in _gpu_ccs(facts, table):
        arch = _architecture(table, cc)
        if arch is None:
            continue  # no row: nothing is known about its driver support
        name = arch.name
        last, first = major(arch.last_driver_branch), major(arch.min_driver_branch)
        if last is not None and branch > last:
            yield Finding(
                "ED108",
                "error",
                f"Driver branch {branch} no longer supports {label} ({name}, {cc})",
                evidence=(f"driver {driver}", f"{name} is supported up to branch R{last} ({arch.source})"),
                fix=commands.driver_install(facts.system, str(last), open_modules(table, [cc]), table=table),
                reference=REF_ARCH,
                area="driver",
                explanation=f"Install the R{last} branch, the last one for {name}.",
            )
        elif first is not None and branch < first:
            yield Finding(
                "ED109",
                "error",
                f"Driver {driver} is too old for {label} ({name}, {cc})",
                evidence=(f"driver {driver}", f"{name} needs branch R{first} or newer ({arch.source})"),
                fix=commands.driver_install(facts.system, None, open_modules(table, [cc]), table=table),
                reference=REF_ARCH,
                area="driver",
            )
        yield from _kernel_module_flavor(facts, table, label, cc, arch, last)


def _kernel_module_flavor(
    facts: Facts, table: Optional[Table], label: str, cc: str, arch: Architecture, last: Optional[int]
) -> Iterable[Finding]:
    """ED110: the loaded kernel module flavour cannot drive the GPU (the architecture's
    ``kernel_modules`` row: "proprietary" for Maxwell, Pascal, Volta; "open" for Blackwell)."""
    flavor = facts.driver.kernel_module_flavor
    doubt = "" if arch.confirmed("kernel_modules") else ", unconfirmed"
    where = f"envdoctor table: {arch.kernel_modules_source}{doubt}"
    if flavor == "open" and arch.kernel_modules == "proprietary":
        yield Finding(
            "ED110",
            "error",
            f"The open kernel module does not drive {label} ({arch.name})",
            evidence=(
                "/proc/driver/nvidia/version: NVIDIA UNIX Open Kernel Module",
                f"{arch.name} ({cc}) needs the proprietary kernel modules ({where})",
            ),
            fix=commands.driver_install(facts.system, str(last) if last else None, open_modules=False, table=table),
            reference=REF_OPEN,
            area="driver",
        )
    elif flavor == "proprietary" and arch.kernel_modules == "open":
        yield Finding(
            "ED110",
            "error",
            f"{label} ({arch.name}) needs the open kernel module",
            evidence=(
                "/proc/driver/nvidia/version: the proprietary kernel module is loaded",
                f"{arch.name} ({cc}) is supported only by the open kernel modules ({where})",
            ),
            fix=commands.driver_install(facts.system, None, open_modules=True, table=table),
            reference=REF_OPEN,
            area="driver",
        )


def sources_disagree(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED111: NVML and nvidia-smi count a different number of GPUs."""
    d = facts.driver
    nvml = [g for g in d.gpus if g.source == "nvml"]
    if nvml and d.smi_gpus and len(nvml) != len(d.smi_gpus):
        yield Finding(
            "ED111",
            "warning",
            CODES["ED111"].title,
            evidence=(f"NVML: {len(nvml)} GPU(s)", f"nvidia-smi: {len(d.smi_gpus)} GPU(s)"),
            fix=("nvidia-smi -L",)
            + commands.on_host(facts.system, ("sudo dmesg | grep -iE 'nvrm|xid' | tail -20",), restart=False),
            reference=REF_INSTALL,
            area="gpu",
            explanation="A GPU that fell off the bus (Xid 79) or is excluded shows in one and not the other.",
        )


def no_gpu(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
    """ED112: no NVIDIA GPU anywhere: say so, so the CPU wheel is a choice and not an accident."""
    d = facts.driver
    if facts.pci.devices or d.gpus or d.kernel_module_version or d.mismatch or d.dev_nodes:
        return
    if facts.pci.error or not facts.pci.source:
        return  # the bus could not be read: no claim
    t = facts.torch
    # a torch that imports already runs on the CPU: recommend would change nothing, so send nobody there
    working = t.installed and t.error is None and not t.import_error and t.version is not None
    # without --python, recommend plans for the python3 on PATH, not the interpreter check was given
    where = (
        f" --python {shlex.quote(facts.python.executable)}"
        if facts.python.chosen_by == "--python" and facts.python.executable
        else ""
    )
    yield Finding(
        "ED112",
        "info",
        CODES["ED112"].title,
        evidence=(f"no NVIDIA display/3D controller in {facts.pci.source or '/sys/bus/pci/devices'}",)
        + ((f"torch {t.version} imports here and runs on the CPU",) if working else ()),
        fix=() if working else (f"envdoctor recommend{where}   # CPU wheels",),
        area="gpu",
    )


RULES = (
    no_driver,
    passed_through,
    mismatch,
    smi_or_nvml_failing,
    smi_without_gpu,
    container_without_gpu,
    wsl_driver,
    visible_devices,
    architecture_support,
    sources_disagree,
    no_gpu,
)

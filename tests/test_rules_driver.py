"""ED1xx: each finding fires on the state it names and stays quiet on a healthy machine."""

from dataclasses import replace

import pytest

from envdoctor.facts import DriverFacts, Facts, GpuInfo, PciDevice, PciFacts, ProbeError, SystemFacts
from envdoctor.rules import driver as rules
from tests.tables import table

UBUNTU = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64")
H200_GPU = GpuInfo(0, "NVIDIA H200", "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4", "9.0", 143771, source="nvml")
HEALTHY = Facts(
    system=UBUNTU,
    pci=PciFacts(
        devices=(
            PciDevice("0000:00:06.0", "0x10de", "0x2335", "0x030200", kernel_driver="nvidia", compute_capability="9.0"),
        )
    ),
    driver=DriverFacts(
        kernel_module_version="580.159.04",
        kernel_module_source="/sys/module/nvidia/version",
        kernel_module_flavor="open",
        userspace_version="580.159.04",
        driver_version="580.159.04",
        driver_cuda="13.0",
        gpus=(H200_GPU,),
        smi_path="/usr/bin/nvidia-smi",
        smi_gpus=(replace(H200_GPU, source="nvidia-smi"),),
        dev_nodes=("/dev/nvidia0",),
    ),
)
#: Kepler (last branch R470), Pascal (R580), Hopper (from R520), Blackwell 12.0 (from R570, open
#: modules only); no [[branch]] rows, and only Debian 12 of NVIDIA's repositories.
TABLE = table("four-archs")
LIBNVML = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so"


def codes(facts, table=TABLE):
    return [f.code for rule in rules.RULES for f in rule(facts, table)]


def no_driver_facts(**system):
    return replace(
        HEALTHY,
        system=replace(UBUNTU, **system),
        pci=PciFacts(devices=(replace(HEALTHY.pci.devices[0], kernel_driver=None),)),
        driver=DriverFacts(nvml_error=ProbeError("not_found", "NVML library not found")),
    )


def test_healthy_h200_is_quiet():
    assert codes(HEALTHY) == []


def test_gpu_without_driver_on_ubuntu():
    (f,) = [f for f in rules.no_driver(no_driver_facts(), TABLE)]
    assert f.code == "ED101" and f.severity == "error"
    assert f.fix == (
        "sudo apt-get update",
        "sudo apt-get install -y linux-headers-$(uname -r)",
        "sudo ubuntu-drivers install",
        "sudo reboot",
    )
    assert f.title == "NVIDIA GPU found on the PCI bus, but no NVIDIA driver is installed"


def test_gpu_without_driver_because_of_nouveau_and_secure_boot():
    facts = no_driver_facts(nouveau_loaded=True, secure_boot=True, secure_boot_source="efivars SecureBoot")
    (f,) = rules.no_driver(facts, TABLE)
    assert "nouveau" in f.explanation and any("Secure Boot" in e for e in f.evidence)
    assert f.fix[0].startswith("printf 'blacklist nouveau") and "sudo update-initramfs -u" in f.fix


def test_secure_boot_enrols_the_key_the_distributions_dkms_made_after_the_install():
    """ED101 told Ubuntu to `mokutil --import /var/lib/dkms/mok.pub` before installing anything: DKMS
    makes its key when it first builds the module, and Ubuntu's DKMS signs with shim-signed's MOK."""
    ubuntu = no_driver_facts(secure_boot=True, secure_boot_source="efivars SecureBoot")
    (f,) = rules.no_driver(ubuntu, TABLE)
    assert f.fix == (
        "sudo apt-get update",
        "sudo apt-get install -y linux-headers-$(uname -r)",
        "sudo ubuntu-drivers install",
        "# Secure Boot: if DKMS built the module (dkms status lists nvidia), it signed it with its own key; "
        "queue that key for the next boot:",
        "sudo update-secureboot-policy --enroll-key   # queues /var/lib/shim-signed/mok/MOK.der; "
        "asks for a one-time password",
        "sudo reboot   # at the blue MOK manager screen: Enroll MOK, Continue, Yes, the password",
    )
    debian = no_driver_facts(
        os_id="debian", os_version="12", os_like=(), secure_boot=True, secure_boot_source="efivars SecureBoot"
    )
    (f,) = rules.no_driver(debian, TABLE)
    assert f.fix[2:] == (
        "sudo apt-get update",
        "sudo apt-get install -y linux-headers-$(uname -r)",
        "sudo apt-get install -y nvidia-open",
        "# Secure Boot: if DKMS built the module (dkms status lists nvidia), it signed it with its own key; "
        "queue that key for the next boot:",
        "sudo mokutil --import /var/lib/dkms/mok.pub   # asks for a one-time password",
        "sudo reboot   # at the blue MOK manager screen: Enroll MOK, Continue, Yes, the password",
    )


#: The user-space driver 580.95.05 of Debian 12 without its kernel module (the machine after a
#: kernel update whose headers were not installed): the library is there, NVML says Driver Not Loaded.
USERSPACE_ONLY = DriverFacts(
    userspace_version="580.95.05",
    smi_path="/usr/bin/nvidia-smi",
    sources={"userspace_version": "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05"},
    nvml_error=ProbeError("unavailable", "NVML: Driver Not Loaded (no NVIDIA kernel module is running)"),
    smi_error=ProbeError(
        "exit_status", "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    ),
)


def test_driver_installed_but_module_not_loaded_points_at_the_module_not_an_install():
    """ED101 prescribed installing the driver when the user-space driver was installed and only its
    kernel module was missing."""
    facts = replace(no_driver_facts(), driver=USERSPACE_ONLY)
    assert codes(facts) == ["ED101"]
    (f,) = rules.no_driver(facts, TABLE)
    assert f.title == "The NVIDIA driver is installed, but its kernel module is not loaded"
    assert "user-space driver 580.95.05 installed (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05)" in f.evidence
    assert f.fix == (
        "dkms status   # is an nvidia module built and installed for the running kernel (uname -r)?",
        "sudo apt-get install -y linux-headers-$(uname -r)",
        "sudo dkms autoinstall   # builds the module for the running kernel",
        "sudo modprobe nvidia && nvidia-smi",
        "sudo dmesg | grep -i nvidia | tail -20   # the kernel's reason when modprobe fails",
        "# if modprobe says 'Key was rejected by service', Secure Boot is on: the module loads once the key it "
        "was signed with is enrolled",
        "sudo update-secureboot-policy --enroll-key   # queues /var/lib/shim-signed/mok/MOK.der; "
        "asks for a one-time password",
        "sudo reboot   # at the blue MOK manager screen: Enroll MOK, Continue, Yes, the password",
    )
    assert "Reinstalling the driver does not change" in f.explanation
    # Secure Boot known off: no key step; RHEL 9: its own headers (unconfirmed in this table: said so)
    rhel = replace(
        facts,
        system=SystemFacts(
            os_id="rocky",
            os_version="9.4",
            os_like=("rhel", "centos", "fedora"),
            secure_boot=False,
            secure_boot_source="efivars SecureBoot",
        ),
    )
    (f,) = rules.no_driver(rhel, TABLE)
    assert f.fix[1:] == (
        "sudo dnf install -y kernel-devel-matched kernel-headers   # package names unconfirmed in envdoctor's table",
        "sudo dkms autoinstall   # builds the module for the running kernel",
        "sudo modprobe nvidia && nvidia-smi",
        "sudo dmesg | grep -i nvidia | tail -20   # the kernel's reason when modprobe fails",
    )
    assert not any("dnf module" in c or "nvidia-open" in c for c in f.fix)


def test_gpu_bound_to_vfio_pci_is_passed_through_not_missing_a_driver():
    """A GPU bound to vfio-pci got ED101 and a driver install: it is reserved for a virtual machine."""
    facts = no_driver_facts()
    vfio = replace(facts.pci.devices[0], kernel_driver="vfio-pci", name="GH100 [H200 SXM 141GB]")
    facts = replace(facts, pci=PciFacts(devices=(vfio,), source="/sys/bus/pci/devices"))
    assert codes(facts) == ["ED113"]
    (f,) = rules.passed_through(facts, TABLE)
    assert f.severity == "info"
    assert f.evidence == ("PCI 0000:00:06.0: GH100 [H200 SXM 141GB] (kernel driver in use: vfio-pci)",)
    assert f.fix[0] == "lspci -nnk -s 0000:00:06.0   # 'Kernel driver in use: vfio-pci'"
    assert not any("install" in c for c in f.fix)
    # a second GPU without any driver still gets ED101, which names the passed-through one
    free = replace(facts.pci.devices[0], address="0000:00:07.0", kernel_driver=None)
    both = replace(facts, pci=PciFacts(devices=(vfio, free), source="/sys/bus/pci/devices"))
    assert sorted(codes(both)) == ["ED101", "ED113"]
    (f,) = rules.no_driver(both, TABLE)
    assert "1 more bound to vfio-pci, for a virtual machine (ED113)" in f.evidence


def test_gpu_without_driver_pascal_takes_the_last_proprietary_branch_on_debian():
    facts = no_driver_facts(os_id="debian", os_version="12", os_like=())
    facts = replace(facts, pci=PciFacts(devices=(replace(facts.pci.devices[0], compute_capability="6.1"),)))
    (f,) = rules.no_driver(facts, TABLE)
    assert "sudo apt-get install -y cuda-drivers-580" in f.fix
    assert (
        f.fix[0]
        == "wget https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
    )


def test_mismatch_after_upgrade():
    err = ProbeError("exit_status", "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch")
    facts = replace(
        HEALTHY,
        driver=replace(
            HEALTHY.driver,
            userspace_version="590.44.01",
            mismatch=True,
            gpus=(),
            smi_error=err,
            sources={"userspace_version": LIBNVML + ".590.44.01"},
        ),
    )
    assert codes(facts) == ["ED102"]
    (f,) = rules.mismatch(facts, TABLE)
    assert f.fix[0] == "sudo reboot" and "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia" in f.fix
    assert "kernel module 580.159.04 (/sys/module/nvidia/version)" in f.evidence


def test_nvidia_smi_failing_with_its_real_message():
    err = ProbeError(
        "exit_status", "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    facts = replace(
        HEALTHY,
        driver=replace(
            HEALTHY.driver,
            gpus=(),
            smi_gpus=(),
            smi_error=err,
            nvml_error=ProbeError("unavailable", "NVML: Driver Not Loaded"),
        ),
    )
    (f,) = rules.smi_or_nvml_failing(facts, TABLE)
    assert f.code == "ED103" and f.severity == "error" and err.message in f.evidence


def test_one_failing_source_is_a_warning():
    err = ProbeError("timeout", "nvidia-smi did not answer in 10 s")
    facts = replace(HEALTHY, driver=replace(HEALTHY.driver, smi_error=err))
    (f,) = rules.smi_or_nvml_failing(facts, TABLE)
    assert f.severity == "warning"


def test_nvidia_smi_without_any_gpu():
    err = ProbeError("exit_status", "nvidia-smi: No devices were found")
    facts = Facts(
        system=UBUNTU,
        driver=DriverFacts(smi_path="/usr/bin/nvidia-smi", kernel_module_version="580.159.04", smi_error=err),
    )
    assert "ED104" in codes(facts)


def test_container_without_gpu_access():
    host_gpu = PciFacts(devices=HEALTHY.pci.devices, source="/sys/bus/pci/devices")
    base = Facts(system=replace(UBUNTU, container="docker", container_evidence="/.dockerenv exists"), pci=host_gpu)
    (f,) = rules.container_without_gpu(base, TABLE)
    assert f.code == "ED105" and f.severity == "warning" and f.fix[0].startswith("# on the host: docker run --gpus all")
    asked = replace(base, pci=PciFacts(source="/sys/bus/pci/devices"), driver=DriverFacts(nvidia_visible_devices="all"))
    assert next(iter(rules.container_without_gpu(asked, TABLE))).severity == "error"
    assert list(rules.container_without_gpu(replace(HEALTHY, system=base.system), TABLE)) == []


def test_wsl2_with_a_linux_driver_inside_and_wsl1():
    facts = replace(
        HEALTHY,
        system=replace(UBUNTU, wsl="wsl2"),
        pci=PciFacts(),
        driver=replace(
            HEALTHY.driver, kernel_module_version=None, sources={"userspace_version": LIBNVML + ".550.54.14"}
        ),
    )
    assert codes(facts) == ["ED106"]
    wsl = {"userspace_version": "/usr/lib/wsl/lib/libnvidia-ml.so.1"}
    fine = replace(facts, driver=replace(facts.driver, sources=wsl))
    assert "ED106" not in codes(fine)
    assert "ED106" in codes(replace(Facts(), system=replace(UBUNTU, wsl="wsl1")))


@pytest.mark.parametrize(
    "value,fires",
    [
        ("", True),
        ("-1", True),
        ("1", True),
        ("GPU-deadbeef", True),
        ("0", False),
        ("GPU-c7d3a8fe", False),
        ("0,1", False),
        # issue 27: '²' raised ValueError in int(); '٣' is no index to CUDA
        ("\u00b2", True),
        ("\u0663", True),
        ("999999999999", True),
    ],
)
def test_cuda_visible_devices(value, fires):
    facts = replace(HEALTHY, driver=replace(HEALTHY.driver, cuda_visible_devices=value))
    assert ("ED107" in codes(facts)) is fires


def test_kepler_on_a_new_branch_and_blackwell_on_an_old_one():
    k80 = replace(H200_GPU, name="Tesla K80", compute_capability="3.5")
    kepler = replace(
        HEALTHY,
        driver=replace(HEALTHY.driver, kernel_module_flavor="proprietary", driver_version="535.104.05", gpus=(k80,)),
    )
    (f,) = [f for f in rules.architecture_support(kepler, TABLE)]
    assert f.code == "ED108" and "R470" in f.evidence[1] and "sudo apt-get install -y nvidia-driver-470" in f.fix
    rtx5090 = replace(H200_GPU, name="NVIDIA GeForce RTX 5090", compute_capability="12.0")
    blackwell = replace(HEALTHY, driver=replace(HEALTHY.driver, driver_version="560.35.03", gpus=(rtx5090,)))
    assert [f.code for f in rules.architecture_support(blackwell, TABLE)] == ["ED109"]
    assert list(rules.architecture_support(HEALTHY, TABLE)) == []


def test_open_module_on_pascal_and_proprietary_on_blackwell():
    pascal = replace(HEALTHY, driver=replace(HEALTHY.driver, gpus=(replace(H200_GPU, compute_capability="6.1"),)))
    assert [f.code for f in rules.architecture_support(pascal, TABLE)] == ["ED110"]
    rtx = replace(
        HEALTHY,
        driver=replace(
            HEALTHY.driver, kernel_module_flavor="proprietary", gpus=(replace(H200_GPU, compute_capability="12.0"),)
        ),
    )
    assert [f.code for f in rules.architecture_support(rtx, TABLE)] == ["ED110"]


def test_sources_disagree_on_gpu_count():
    facts = replace(HEALTHY, driver=replace(HEALTHY.driver, smi_gpus=HEALTHY.driver.smi_gpus * 2))
    assert codes(facts) == ["ED111"]


def test_no_gpu_at_all_is_info_outside_containers():
    assert codes(Facts(system=UBUNTU, pci=PciFacts(source="/sys/bus/pci/devices"))) == ["ED112"]


def test_cpu_only_container_is_not_told_it_lacks_gpu_access():
    """This CI container (no NVIDIA device on its PCI bus, nothing asked for) got ED105: a false alarm."""
    cpu = Facts(
        system=replace(UBUNTU, container="docker", container_evidence="/.dockerenv exists"),
        pci=PciFacts(source="/sys/bus/pci/devices"),
    )
    assert codes(cpu) == ["ED112"]
    unread = replace(cpu, pci=PciFacts())
    assert codes(unread) == []


def test_rules_survive_a_missing_table():
    assert codes(HEALTHY, table=None) == []


def test_checks_of_a_skipped_area_stay_quiet():
    from envdoctor.facts import TorchFacts
    from envdoctor.rules import evaluate
    from envdoctor.table import load_table

    cpu_torch = replace(HEALTHY, torch=TorchFacts(installed=True, version="2.13.0+cpu"))
    assert "ED204" in [f.code for f in evaluate(cpu_torch, load_table())]
    skipped = replace(cpu_torch, skipped=("torch", "toolkits"))
    assert not [f for f in evaluate(skipped, load_table()) if f.code.startswith(("ED2", "ED3"))]


def test_gpu_without_driver_gets_the_branch_recommend_plans_for():
    """ED101 said `ubuntu-drivers install` while recommend planned R580 for the same RTX 3090."""
    from envdoctor.table import load_table

    facts = no_driver_facts()
    facts = replace(facts, pci=PciFacts(devices=(replace(facts.pci.devices[0], compute_capability="8.6"),)))
    (f,) = rules.no_driver(facts, load_table())  # the frozen table names no kernel headers: none installed
    assert f.fix == ("sudo apt-get update", "sudo apt-get install -y nvidia-driver-580-open", "sudo reboot")


DOCKER = replace(UBUNTU, container="docker", container_evidence="/.dockerenv exists")


def test_inside_a_container_module_dkms_and_reboot_fixes_are_for_the_host():
    """Inside a container ED102 said `sudo reboot` and `sudo rmmod ...`, ED103 `sudo modprobe nvidia`
    and `dkms status`, ED108 an apt-get install of the driver: none of them can run there."""
    err = ProbeError("exit_status", "nvidia-smi: Failed to initialize NVML: Driver/library version mismatch")
    mismatch = replace(
        HEALTHY,
        system=DOCKER,
        driver=replace(HEALTHY.driver, userspace_version="590.44.01", mismatch=True, gpus=(), smi_error=err),
    )
    (f,) = rules.mismatch(mismatch, TABLE)
    assert f.fix[0] == "# on the host: sudo reboot" and f.fix[-1] == "# then restart this container"
    assert all(c.startswith("#") for c in f.fix)
    lost = ProbeError(
        "exit_status", "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    gone = replace(HEALTHY, system=DOCKER, driver=replace(HEALTHY.driver, gpus=(), smi_gpus=(), smi_error=lost))
    (f,) = rules.smi_or_nvml_failing(gone, TABLE)
    assert f.fix == (
        "lsmod | grep nvidia",
        "# on the host: sudo modprobe nvidia",
        "# on the host: dkms status",
        "# on the host: sudo dmesg | grep -iE 'nvrm|nvidia' | tail -20",
        "# then restart this container",
    )
    k80 = replace(H200_GPU, name="Tesla K80", compute_capability="3.5")
    kepler = replace(
        HEALTHY,
        system=DOCKER,
        driver=replace(HEALTHY.driver, kernel_module_flavor="proprietary", driver_version="535.104.05", gpus=(k80,)),
    )
    (f,) = rules.architecture_support(kepler, TABLE)
    assert f.code == "ED108" and f.fix == (
        "# on the host: install the NVIDIA driver R470 with the proprietary kernel modules (this container's "
        "distribution is not the host's: envdoctor check run on the host prints the commands)",
        "# then restart this container, so it gets the new driver's libraries",
    )


def test_wsl2_driver_fixes_name_the_windows_driver_and_remove_only_the_linux_one():
    """ED106 removed 'libnvidia-*' inside WSL2, which takes the container toolkit's libnvidia-container
    with it; ED103 under WSL2 said `sudo modprobe nvidia`, which WSL2 has no module for."""
    wsl = replace(
        HEALTHY,
        system=replace(UBUNTU, wsl="wsl2"),
        pci=PciFacts(),
        driver=replace(
            HEALTHY.driver, kernel_module_version=None, sources={"userspace_version": LIBNVML + ".550.54.14"}
        ),
    )
    (f,) = rules.wsl_driver(wsl, TABLE)
    assert f.fix[0] == (
        'sudo apt-get remove --purge "$(dpkg -S /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14 '
        '| cut -d: -f1)"   # the package of that library, and the driver packages that need it'
    )
    assert "libnvidia-*" not in " ".join(f.fix)
    lost = ProbeError(
        "exit_status", "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    broken = replace(
        HEALTHY,
        system=replace(UBUNTU, wsl="wsl2"),
        pci=PciFacts(),
        driver=replace(
            HEALTHY.driver,
            kernel_module_version=None,
            gpus=(),
            smi_gpus=(),
            smi_error=lost,
            smi_path="/usr/lib/wsl/lib/nvidia-smi",
        ),
    )
    (f,) = rules.smi_or_nvml_failing(broken, TABLE)
    assert not any("modprobe" in c or "dkms" in c for c in f.fix) and "wsl --shutdown" in f.fix[-1]

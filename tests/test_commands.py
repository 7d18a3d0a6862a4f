"""The exact commands envdoctor prints, with hand-written expectations."""

from envdoctor import commands
from envdoctor.facts import SystemFacts

UBUNTU = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64")
DEBIAN = SystemFacts(os_id="debian", os_version="12", arch="x86_64")
ROCKY = SystemFacts(os_id="rocky", os_version="9.4", os_like=("rhel", "centos", "fedora"), arch="x86_64")
FEDORA = SystemFacts(os_id="fedora", os_version="41", arch="x86_64")
SLES = SystemFacts(os_id="sles", os_version="15.6", arch="aarch64")
REPO = "https://developer.download.nvidia.com/compute/cuda/repos"


def test_driver_on_ubuntu_uses_the_archive_packages():
    assert commands.driver_install(UBUNTU, "580") == (
        "sudo apt-get update", "sudo apt-get install -y nvidia-driver-580-open", "sudo reboot")
    assert commands.driver_install(UBUNTU, "470", open_modules=False)[1] == "sudo apt-get install -y nvidia-driver-470"


def test_driver_elsewhere_comes_from_nvidias_repository():
    assert commands.driver_install(DEBIAN, None) == (
        f"wget {REPO}/debian12/x86_64/cuda-keyring_1.1-1_all.deb", "sudo dpkg -i cuda-keyring_1.1-1_all.deb",
        "sudo apt-get update", "sudo apt-get install -y nvidia-open", "sudo reboot")
    assert commands.driver_install(ROCKY, "580", open_modules=False)[0] == \
        f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo"


# NVIDIA Driver Installation Guide (R580 and later), "Kernel Modules", Table "Open GPU kernel module
# installation": RHEL/Rocky/Alma/Oracle 8/9 and Amazon Linux 2023 hold a branch with the DNF module
# stream, `dnf module enable nvidia-driver:580-open` then `dnf install nvidia-open` (latest:
# `nvidia-driver:open-dkms`); RHEL 10 and Fedora use `dnf versionlock \*nvidia\*580\*` and the
# unversioned package. The proprietary streams are XXX-dkms / latest-dkms with cuda-drivers
# (NVIDIA/yum-packaging-dkms-nvidia README). No branch-suffixed `nvidia-open-580` on dnf.

def test_rhel_9_pins_the_branch_with_the_module_stream_not_a_package_suffix():
    assert commands.driver_install(ROCKY, "580") == (
        f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo", "sudo dnf clean expire-cache",
        "sudo dnf module enable -y nvidia-driver:580-open", "sudo dnf install -y nvidia-open", "sudo reboot")
    assert commands.driver_install(ROCKY, "580", open_modules=False)[2:] == (
        "sudo dnf module enable -y nvidia-driver:580-dkms", "sudo dnf install -y cuda-drivers", "sudo reboot")
    assert commands.driver_install(ROCKY, None)[2:4] == (
        "sudo dnf module enable -y nvidia-driver:open-dkms", "sudo dnf install -y nvidia-open")
    amazon = SystemFacts(os_id="amzn", os_version="2023", arch="x86_64")
    assert "sudo dnf module enable -y nvidia-driver:580-open" in commands.driver_install(amazon, "580")
    assert not any("nvidia-open-580" in c or "cuda-drivers-580" in c
                   for s in (ROCKY, amazon) for c in commands.driver_install(s, "580"))


def test_rhel_10_and_fedora_pin_the_branch_with_versionlock():
    rhel10 = SystemFacts(os_id="rhel", os_version="10.0", arch="x86_64")
    assert commands.driver_install(rhel10, "580")[2:] == (
        "sudo dnf install -y python3-dnf-plugin-versionlock", "sudo dnf versionlock '*nvidia*580*'",
        "sudo dnf install -y nvidia-open", "sudo reboot")
    assert commands.driver_install(FEDORA, "580")[2:] == (   # dnf5: versionlock is built in, "add"
        "sudo dnf versionlock add '*nvidia*580*'", "sudo dnf install -y nvidia-open", "sudo reboot")
    assert commands.driver_install(FEDORA, None)[2:] == ("sudo dnf install -y nvidia-open", "sudo reboot")


def test_fedora_41_takes_the_dnf5_form():
    assert commands.nvidia_repo_install(FEDORA, ("cuda-toolkit-12-8",))[0] == \
        f"sudo dnf config-manager addrepo --from-repofile={REPO}/fedora41/x86_64/cuda-fedora41.repo"


def test_toolkit_on_suse_arm_and_in_wsl():
    assert commands.cuda_toolkit_install(SLES, "12.8")[:3] == (
        f"sudo zypper addrepo {REPO}/sles156/sbsa/cuda-sles156.repo", "sudo zypper refresh",
        "sudo zypper install -y cuda-toolkit-12-8")
    wsl = SystemFacts(os_id="ubuntu", os_version="22.04", os_like=("debian",), arch="x86_64", wsl="wsl2")
    steps = commands.cuda_toolkit_install(wsl, "12.8")
    assert steps[0] == f"wget {REPO}/wsl-ubuntu/x86_64/cuda-keyring_1.1-1_all.deb"
    assert "sudo apt-get install -y cuda-toolkit-12-8" in steps and steps[-2:] == (
        "export CUDA_HOME=/usr/local/cuda-12.8", 'export PATH="/usr/local/cuda-12.8/bin:$PATH"')
    assert commands.driver_install(wsl, "580")[0].startswith("# WSL2: install or upgrade the NVIDIA driver on Windows")


def test_unknown_distribution_gets_a_pointer_not_a_made_up_command():
    arch = SystemFacts(os_id="arch", os_version=None, arch="x86_64")
    assert commands.nvidia_repo_install(arch, ("nvidia-open",)) == ()
    assert commands.driver_install(arch, None)[0].startswith("# install the NVIDIA driver")


def test_container_toolkit_and_docker_configuration():
    assert commands.install_container_toolkit(UBUNTU)[-1] == "sudo apt-get install -y nvidia-container-toolkit"
    assert commands.install_container_toolkit(ROCKY)[-1] == "sudo dnf install -y nvidia-container-toolkit"
    assert commands.configure_docker() == ("sudo nvidia-ctk runtime configure --runtime=docker",
                                           "sudo systemctl restart docker", "docker run --rm --gpus all ubuntu nvidia-smi")
    assert commands.configure_docker(rootless=True)[1] == "systemctl --user restart docker"

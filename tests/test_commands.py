"""The exact commands envdoctor prints, with hand-written expectations."""

from envdoctor import commands
from envdoctor.facts import SystemFacts
from envdoctor.table import load_table

T = load_table()

UBUNTU = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64")
DEBIAN = SystemFacts(os_id="debian", os_version="12", arch="x86_64")
ROCKY = SystemFacts(os_id="rocky", os_version="9.4", os_like=("rhel", "centos", "fedora"), arch="x86_64")
FEDORA = SystemFacts(os_id="fedora", os_version="41", arch="x86_64")
SLES = SystemFacts(os_id="sles", os_version="15.6", arch="aarch64")
REPO = "https://developer.download.nvidia.com/compute/cuda/repos"


def test_driver_on_ubuntu_uses_the_archive_packages():
    assert commands.driver_install(UBUNTU, "580") == (
        "sudo apt-get update",
        "sudo apt-get install -y nvidia-driver-580-open",
        "sudo reboot",
    )
    assert commands.driver_install(UBUNTU, "470", open_modules=False)[1] == "sudo apt-get install -y nvidia-driver-470"


def test_driver_elsewhere_comes_from_nvidias_repository():
    assert commands.driver_install(DEBIAN, None) == (
        f"wget {REPO}/debian12/x86_64/cuda-keyring_1.1-1_all.deb",
        "sudo dpkg -i cuda-keyring_1.1-1_all.deb",
        "sudo apt-get update",
        "sudo apt-get install -y nvidia-open",
        "sudo reboot",
    )
    assert (
        commands.driver_install(ROCKY, "580", open_modules=False)[0]
        == f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo"
    )


# NVIDIA Driver Installation Guide (R580 and later), "Kernel Modules", Table "Open GPU kernel module
# installation": RHEL/Rocky/Alma/Oracle 8/9 and Amazon Linux 2023 hold a branch with the DNF module
# stream, `dnf module enable nvidia-driver:580-open` then `dnf install nvidia-open` (latest:
# `nvidia-driver:open-dkms`); RHEL 10 and Fedora use `dnf versionlock \*nvidia\*580\*` and the
# unversioned package. The proprietary streams are XXX-dkms / latest-dkms with cuda-drivers
# (NVIDIA/yum-packaging-dkms-nvidia README). No branch-suffixed `nvidia-open-580` on dnf.


def test_rhel_9_pins_the_branch_with_the_module_stream_not_a_package_suffix():
    assert commands.driver_install(ROCKY, "580") == (
        f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo",
        "sudo dnf clean expire-cache",
        "sudo dnf module enable -y nvidia-driver:580-open",
        "sudo dnf install -y nvidia-open",
        "sudo reboot",
    )
    assert commands.driver_install(ROCKY, "580", open_modules=False)[2:] == (
        "sudo dnf module enable -y nvidia-driver:580-dkms",
        "sudo dnf install -y cuda-drivers",
        "sudo reboot",
    )
    assert commands.driver_install(ROCKY, None)[2:4] == (
        "sudo dnf module enable -y nvidia-driver:open-dkms",
        "sudo dnf install -y nvidia-open",
    )
    amazon = SystemFacts(os_id="amzn", os_version="2023", arch="x86_64")
    assert "sudo dnf module enable -y nvidia-driver:580-open" in commands.driver_install(amazon, "580", table=T)
    assert not any(
        "nvidia-open-580" in c or "cuda-drivers-580" in c
        for s in (ROCKY, amazon)
        for c in commands.driver_install(s, "580", table=T)
    )


def test_rhel_10_and_fedora_pin_the_branch_with_versionlock():
    rhel10 = SystemFacts(os_id="rhel", os_version="10.0", arch="x86_64")
    assert commands.driver_install(rhel10, "580")[2:] == (
        "sudo dnf install -y python3-dnf-plugin-versionlock",
        "sudo dnf versionlock '*nvidia*580*'",
        "sudo dnf install -y nvidia-open",
        "sudo reboot",
    )
    assert commands.driver_install(FEDORA, "580")[2:] == (  # dnf5: versionlock is built in, "add"
        "sudo dnf versionlock add '*nvidia*580*'",
        "sudo dnf install -y nvidia-open",
        "sudo reboot",
    )
    assert commands.driver_install(FEDORA, None)[2:] == ("sudo dnf install -y nvidia-open", "sudo reboot")


def test_fedora_41_takes_the_dnf5_form():
    assert (
        commands.nvidia_repo_install(FEDORA, ("cuda-toolkit-12-8",))[0]
        == f"sudo dnf config-manager addrepo --from-repofile={REPO}/fedora41/x86_64/cuda-fedora41.repo"
    )


def test_toolkit_on_suse_arm_and_in_wsl():
    assert commands.cuda_toolkit_install(SLES, "12.8", table=T)[:3] == (
        f"sudo zypper addrepo {REPO}/sles15/sbsa/cuda-sles15.repo",
        "sudo zypper refresh",
        "sudo zypper install -y cuda-toolkit-12-8",
    )
    wsl = SystemFacts(os_id="ubuntu", os_version="22.04", os_like=("debian",), arch="x86_64", wsl="wsl2")
    steps = commands.cuda_toolkit_install(wsl, "12.8")
    assert steps[0] == f"wget {REPO}/wsl-ubuntu/x86_64/cuda-keyring_1.1-1_all.deb"
    assert "sudo apt-get install -y cuda-toolkit-12-8" in steps and steps[-2:] == (
        "export CUDA_HOME=/usr/local/cuda-12.8",
        'export PATH="/usr/local/cuda-12.8/bin:$PATH"',
    )
    assert commands.driver_install(wsl, "580")[0].startswith("# WSL2: install or upgrade the NVIDIA driver on Windows")


def test_unknown_distribution_gets_a_pointer_not_a_made_up_command():
    arch = SystemFacts(os_id="arch", os_version=None, arch="x86_64")
    assert commands.nvidia_repo_install(arch, ("nvidia-open",)) == ()
    assert commands.driver_install(arch, None)[0].startswith("# install the NVIDIA driver")


def test_container_toolkit_and_docker_configuration():
    assert commands.install_container_toolkit(UBUNTU)[-1] == "sudo apt-get install -y nvidia-container-toolkit"
    assert commands.install_container_toolkit(ROCKY)[-1] == "sudo dnf install -y nvidia-container-toolkit"
    assert commands.configure_docker() == (
        "sudo nvidia-ctk runtime configure --runtime=docker",
        "sudo systemctl restart docker",
        "docker run --rm --gpus all ubuntu nvidia-smi",
    )
    assert commands.configure_docker(rootless=True)[1] == "systemctl --user restart docker"


# NVIDIA's repository folders (https://developer.download.nvidia.com/compute/cuda/repos/): one per
# major release (sles15, opensuse15, rhel9), taken from data/distros.toml, whose rows name the
# derivatives that share one (also_ids: Oracle Linux 9 uses rhel9).


def test_repository_folder_comes_from_the_table_row():
    leap = SystemFacts(os_id="opensuse-leap", os_version="15.6", os_like=("suse", "opensuse"), arch="x86_64")
    ol = SystemFacts(os_id="ol", os_version="9.6", os_like=("fedora",), arch="x86_64")
    sles = SystemFacts(os_id="sles", os_version="15.6", arch="x86_64")
    assert commands.repository(sles, T) == ("sles15", "zypper")
    assert (
        commands.nvidia_repo_install(sles, ("cuda-toolkit-12-8",), table=T)[0]
        == f"sudo zypper addrepo {REPO}/sles15/x86_64/cuda-sles15.repo"
    )
    assert (
        commands.nvidia_repo_install(leap, ("cuda-toolkit-12-8",), table=T)[0]
        == f"sudo zypper addrepo {REPO}/opensuse15/x86_64/cuda-opensuse15.repo"
    )
    assert commands.driver_install(ol, "580", table=T) == (
        f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo",
        "sudo dnf clean expire-cache",
        "sudo dnf module enable -y nvidia-driver:580-open",
        "sudo dnf install -y nvidia-open",
        "sudo reboot",
    )
    assert (
        commands.cuda_toolkit_install(ROCKY, "12.8", table=T)[0]
        == f"sudo dnf config-manager --add-repo {REPO}/rhel9/x86_64/cuda-rhel9.repo"
    )


def test_distributions_nvidia_does_not_serve_get_the_guide_not_a_made_up_url():
    mint = SystemFacts(os_id="linuxmint", os_version="22", os_like=("ubuntu", "debian"), arch="x86_64")
    pop = SystemFacts(os_id="pop", os_version="22.04", os_like=("ubuntu", "debian"), arch="x86_64")
    for s in (mint, pop):
        for table in (T, None):
            assert commands.nvidia_repo_install(s, ("cuda-toolkit-12-8",), table=table) == ()
            assert commands.driver_install(s, "580", table=table) == (
                f"# install the NVIDIA driver 580 for your distribution: {commands.DRIVER_GUIDE}",
            )
            first = commands.cuda_toolkit_install(s, "12.8", table=table)[0]
            assert first.startswith("# install the CUDA 12.8 toolkit")
    ubuntu2504 = SystemFacts(os_id="ubuntu", os_version="25.04", arch="x86_64")  # no row: no repository
    assert commands.repository(ubuntu2504, T) is None and commands.repository(ubuntu2504) == ("ubuntu2504", "apt")


def test_without_a_table_only_the_well_known_ids_are_guessed():
    assert commands.repository(ROCKY) == ("rhel9", "dnf")
    assert commands.repository(SystemFacts(os_id="almalinux", os_version="8.10")) == ("rhel8", "dnf")
    assert commands.repository(DEBIAN) == ("debian12", "apt") and commands.repository(FEDORA) == ("fedora41", "dnf")
    for os_id, version in (("sles", "15.6"), ("opensuse-leap", "15.6"), ("ol", "9.6"), ("amzn", "2023")):
        assert commands.repository(SystemFacts(os_id=os_id, os_version=version)) is None


def test_branch_pinned_driver_package_only_where_the_table_lists_one():
    # debian family: driver_packages has nvidia-open-{branch}; suse: only the unversioned names
    assert commands.driver_install(DEBIAN, "580", table=T)[-2:] == (
        "sudo apt-get install -y nvidia-open-580",
        "sudo reboot",
    )
    sles = SystemFacts(os_id="sles", os_version="15.6", arch="x86_64")
    steps = commands.driver_install(sles, "580", table=T)
    assert steps[0].startswith("# envdoctor's table lists no branch-pinned nvidia-open package for sles15")
    assert steps[-2:] == ("sudo zypper install -y nvidia-open", "sudo reboot")


def test_conda_nvcc_install():
    assert commands.conda_nvcc_install(None, "12.9") == ("conda install -c conda-forge cuda-nvcc=12.9",)
    assert commands.conda_nvcc_install("micromamba", "12.6", cuda_home=True) == (
        "micromamba install -c conda-forge cuda-nvcc=12.6",
        'export CUDA_HOME="$CONDA_PREFIX"',
    )


def test_toolkit_of_a_cuda_line_the_repository_lacks_says_so_before_the_install():
    """ED301/ED309 printed `apt-get install -y cuda-toolkit-12-1` for Ubuntu 24.04, whose NVIDIA
    repository starts at 12.5 (data/distros.toml, frozen copy): apt finds no such package."""
    from envdoctor.facts.system import SystemFacts
    from envdoctor.table import load_table

    noble = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64")
    steps = commands.cuda_toolkit_install(noble, "12.1", table=load_table())
    assert steps[0].startswith(
        "# envdoctor's table (unconfirmed) lists no CUDA 12.1 in NVIDIA's ubuntu2404 repository (it has 12.5 to 13.2)"
    )
    assert "sudo apt-get install -y cuda-toolkit-12-1" in steps
    assert not commands.cuda_toolkit_install(noble, "12.8", table=load_table())[0].startswith("#")

"""Exact commands envdoctor prints (never runs): driver installs, reboots, module reloads.

Rules and the advisor both build their fixes here, so a command is written in one place.
"""

from __future__ import annotations

from typing import Optional, Tuple

from envdoctor.facts.system import SystemFacts

NVIDIA_REPO = "https://developer.download.nvidia.com/compute/cuda/repos"
DRIVER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"


def family(system: SystemFacts) -> Optional[str]:
    """"debian" (apt), "rhel" (dnf), "suse" (zypper) or None."""
    ids = (system.os_id or "",) + tuple(system.os_like)
    if any(i in ("ubuntu", "debian") for i in ids):
        return "debian"
    if any(i in ("rhel", "fedora", "centos", "rocky", "almalinux", "ol", "amzn") for i in ids):
        return "rhel"
    if any(i.startswith(("sles", "suse", "opensuse")) for i in ids):
        return "suse"
    return None


def repo_arch(system: SystemFacts) -> str:
    """NVIDIA's repository folder for the CPU: x86_64, or sbsa for 64-bit Arm servers."""
    return "sbsa" if system.arch in ("aarch64", "arm64") else "x86_64"


def repo_dir(system: SystemFacts) -> Optional[str]:
    """``ubuntu2404``, ``debian12``, ``rhel9``: the distro folder of NVIDIA's CUDA repository."""
    if not system.os_id or not system.os_version:
        return None
    os_id = {"rocky": "rhel", "almalinux": "rhel", "centos": "rhel"}.get(system.os_id, system.os_id)
    version = system.os_version
    if os_id == "rhel":
        version = version.split(".")[0]
    elif os_id == "debian":
        version = version.split(".")[0]
    return f"{os_id}{version.replace('.', '')}"


def driver_install(system: SystemFacts, branch: Optional[str], open_modules: bool = True) -> Tuple[str, ...]:
    """Install the NVIDIA driver ``branch`` ("580") for this distribution, then reboot.

    ``open_modules``: Turing and newer take the open kernel modules (required for Blackwell and
    Grace Hopper); Maxwell, Pascal and Volta need the proprietary flavour.
    """
    fam = family(system)
    if system.wsl:
        return ("# WSL2: install or upgrade the NVIDIA driver on Windows, not inside WSL",
                "# https://docs.nvidia.com/cuda/wsl-user-guide/index.html")
    if system.os_id == "ubuntu":
        if branch:
            pkg = f"nvidia-driver-{branch}-open" if open_modules else f"nvidia-driver-{branch}"
            return ("sudo apt-get update", f"sudo apt-get install -y {pkg}", "sudo reboot")
        return ("sudo apt-get update", "sudo ubuntu-drivers install", "sudo reboot")
    keyring = None
    rdir = repo_dir(system)
    arch = repo_arch(system)
    pkg = "nvidia-open" if open_modules else "cuda-drivers"
    if branch:
        pkg = f"{pkg}-{branch}"
    if fam == "debian" and rdir:
        keyring = f"{NVIDIA_REPO}/{rdir}/{arch}/cuda-keyring_1.1-1_all.deb"
        return (f"wget {keyring}", "sudo dpkg -i cuda-keyring_1.1-1_all.deb", "sudo apt-get update",
                f"sudo apt-get install -y {pkg}", "sudo reboot")
    if fam == "rhel" and rdir:
        return (f"sudo dnf config-manager --add-repo {NVIDIA_REPO}/{rdir}/{arch}/cuda-{rdir}.repo",
                "sudo dnf clean expire-cache", f"sudo dnf install -y {pkg}", "sudo reboot")
    if fam == "suse" and rdir:
        return (f"sudo zypper addrepo {NVIDIA_REPO}/{rdir}/{arch}/cuda-{rdir}.repo",
                "sudo zypper refresh", f"sudo zypper install -y {pkg}", "sudo reboot")
    return (f"# install the NVIDIA driver {branch or ''} for your distribution: {DRIVER_GUIDE}".replace("  ", " "),)


def reload_modules() -> Tuple[str, ...]:
    """Load the new kernel module without a reboot (stops the display and every GPU user)."""
    return (
        "sudo reboot",
        "# or, without a reboot, once no process uses the GPU (sudo lsof /dev/nvidia* lists them):",
        "sudo systemctl isolate multi-user.target",
        "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia",
        "sudo modprobe nvidia && nvidia-smi",
    )


def blacklist_nouveau(system: SystemFacts) -> Tuple[str, ...]:
    regen = "sudo dracut -f" if family(system) == "rhel" else "sudo update-initramfs -u"
    return (
        "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
        regen,
        "sudo reboot",
    )

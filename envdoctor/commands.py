"""Exact commands envdoctor prints (never runs): driver installs, reboots, module reloads.

Rules and the advisor both build their fixes here, so a command is written in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from envdoctor.facts.system import SystemFacts
from envdoctor.parse import major, version_key
from envdoctor.parse.platforms import cpu_arch

if TYPE_CHECKING:
    from envdoctor.table import Distro, Table

NVIDIA_REPO = "https://developer.download.nvidia.com/compute/cuda/repos"
DRIVER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"


def family(system: SystemFacts) -> Optional[str]:
    """ "debian" (apt), "rhel" (dnf), "suse" (zypper) or None."""
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
    return "sbsa" if cpu_arch(system.arch) == "aarch64" else "x86_64"


#: os-release IDs whose repository folder is guessed when no table is given (``table=None``):
#: ubuntu2404, debian12, rhel9 (Rocky, Alma by major), fedora41. Anything else needs the table.
_GUESSED = {
    "ubuntu": "ubuntu",
    "debian": "debian",
    "rhel": "rhel",
    "rocky": "rhel",
    "almalinux": "rhel",
    "fedora": "fedora",
}


def repository(system: SystemFacts, table: Optional[Table] = None) -> Optional[tuple[str, str]]:
    """(folder, package manager) of NVIDIA's CUDA repository for this distribution, e.g.
    ``("rhel9", "dnf")`` for Oracle Linux 9.6; None where NVIDIA's repository does not serve it.

    With a table, its ``Distro`` row decides (``table.distro(id, version)``, which knows the
    ``also_ids`` of derivatives: Rocky, Alma and Oracle Linux use rhelN; SLES 15.6 uses sles15).
    Without one, only the well-known ids are guessed (``_GUESSED``). WSL: ``wsl-ubuntu`` (apt).
    """
    if system.wsl:
        return "wsl-ubuntu", "apt"
    if not system.os_id or not system.os_version:
        return None
    if table is not None:
        row = table.distro(system.os_id, system.os_version)
        if row is None:
            return None
        manager = row.package_manager or {"debian": "apt", "suse": "zypper"}.get(row.family, "dnf")
        return row.repo_dir, manager
    base = _GUESSED.get(system.os_id)
    if base is None:
        return None
    version = system.os_version
    if base in ("rhel", "debian"):
        version = str(major(version) or version)
    return f"{base}{version.replace('.', '')}", "apt" if base in ("ubuntu", "debian") else "dnf"


def repo_dir(system: SystemFacts, table: Optional[Table] = None) -> Optional[str]:
    """``ubuntu2404``, ``debian12``, ``rhel9``: the distro folder of NVIDIA's CUDA repository (None
    where it serves none); see :func:`repository`."""
    repo = repository(system, table)
    return repo[0] if repo else None


def conda_nvcc_install(
    flavor: Optional[str], release: str, cuda_home: bool = False, with_cuda_version: bool = False
) -> tuple[str, ...]:
    """nvcc of CUDA ``release`` ("12.6") from conda-forge into the active env, with ``flavor``
    ("conda", "mamba", "micromamba"; None: conda); ``cuda_home``: then point CUDA_HOME at the env;
    ``with_cuda_version``: move the env's cuda-version pin to ``release`` in the same command (an
    env whose cuda-version names another release cannot take that nvcc otherwise).

    >>> conda_nvcc_install("micromamba", "12.6")
    ('micromamba install -c conda-forge cuda-nvcc=12.6',)
    >>> conda_nvcc_install(None, "12.1", with_cuda_version=True)
    ('conda install -c conda-forge cuda-nvcc=12.1 cuda-version=12.1',)
    """
    pin = f" cuda-version={release}" if with_cuda_version else ""
    cmds: tuple[str, ...] = (f"{flavor or 'conda'} install -c conda-forge cuda-nvcc={release}{pin}",)
    return cmds + (('export CUDA_HOME="$CONDA_PREFIX"',) if cuda_home else ())


def driver_install(
    system: SystemFacts, branch: Optional[str], open_modules: bool = True, table: Optional[Table] = None
) -> tuple[str, ...]:
    """Install the NVIDIA driver ``branch`` ("580") for this distribution, then reboot.

    ``table``: the compatibility table, whose ``Distro`` row gives NVIDIA's repository folder, the
    package manager and the driver packages (a branch-pinned ``nvidia-open-580`` only where the
    family's ``driver_packages`` list ``nvidia-open-{branch}``); without it, see :func:`repository`.

    ``open_modules``: the open kernel modules or the proprietary ones (:func:`envdoctor.compat.open_modules`
    decides from the architectures' ``kernel_modules`` rows: Maxwell, Pascal and Volta need the
    proprietary flavour).

    RHEL family and Fedora (NVIDIA's repository), as NVIDIA's Driver Installation Guide writes it
    (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html, Table
    "Open GPU kernel module installation", and its "Version locking" page; R580 and later guides):
    the meta package is unversioned (``nvidia-open``, ``cuda-drivers`` for the proprietary
    modules) and the branch is held another way:

    - RHEL/Rocky/Alma/Oracle 8 and 9, Amazon Linux 2023: a DNF module stream,
      ``dnf module enable nvidia-driver:580-open`` then ``dnf install nvidia-open`` (the proprietary
      stream is ``580-dkms`` with ``cuda-drivers``: NVIDIA/yum-packaging-dkms-nvidia README, streams
      ``XXX-dkms`` and ``XXX-open``); without a branch ``open-dkms`` / ``latest-dkms``.
    - RHEL 10 and Fedora (no modularity): ``dnf versionlock`` on ``*nvidia*580*`` (the
      python3-dnf-plugin-versionlock plugin on DNF 4; built into DNF 5, Fedora 41+, as
      ``versionlock add``), then the unversioned package.
    """
    if system.wsl:
        return (
            "# WSL2: install or upgrade the NVIDIA driver on Windows, not inside WSL",
            "# https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        )
    if system.container:
        flavour = "open" if open_modules else "proprietary"
        which = f"the NVIDIA driver R{branch}" if branch else "the NVIDIA driver"
        return (
            f"# on the host: install {which} with the {flavour} kernel modules (this container's "
            f"distribution is not the host's: envdoctor check run on the host prints the commands)",
            "# then restart this container, so it gets the new driver's libraries",
        )
    if system.os_id == "ubuntu":
        if branch:
            pkg = f"nvidia-driver-{branch}-open" if open_modules else f"nvidia-driver-{branch}"
            return ("sudo apt-get update", f"sudo apt-get install -y {pkg}", "sudo reboot")
        return ("sudo apt-get update", "sudo ubuntu-drivers install", "sudo reboot")
    repo = repository(system, table)
    if repo is not None and repo[1] == "dnf":
        steps = nvidia_repo_install(system, (), *repo)
        return steps[:-1] + _dnf_driver(system, branch, open_modules) + ("sudo reboot",)
    pkg = "nvidia-open" if open_modules else "cuda-drivers"
    note: tuple[str, ...] = ()
    if branch:
        row = table.distro(system.os_id or "", system.os_version or "") if table is not None and repo else None
        if row is None or f"{pkg}-{{branch}}" in row.driver_packages:
            pkg = f"{pkg}-{branch}"
        else:
            note = (
                f"# envdoctor's table lists no branch-pinned {pkg} package for {row.repo_dir}: "
                f"this installs NVIDIA's newest branch, not {branch} specifically",
            )
    steps = nvidia_repo_install(system, (pkg,), *repo) if repo else ()
    if steps:
        return note + steps + ("sudo reboot",)
    return (f"# install the NVIDIA driver {branch or ''} for your distribution: {DRIVER_GUIDE}".replace("  ", " "),)


def _rhel_major(system: SystemFacts) -> Optional[int]:
    return major(system.os_version)


def _dnf_driver(system: SystemFacts, branch: Optional[str], open_modules: bool) -> tuple[str, ...]:
    """The dnf commands that install the driver meta package, held to ``branch`` the way NVIDIA's
    guide says for this release (see :func:`driver_install`)."""
    pkg = "nvidia-open" if open_modules else "cuda-drivers"
    modular = (system.os_id == "amzn" and (system.os_version or "").startswith("2023")) or (
        system.os_id != "fedora" and system.os_id != "amzn" and (_rhel_major(system) or 0) in (8, 9)
    )
    if modular:
        stream = (
            (f"{branch}-open" if open_modules else f"{branch}-dkms")
            if branch
            else ("open-dkms" if open_modules else "latest-dkms")
        )
        return (f"sudo dnf module enable -y nvidia-driver:{stream}", f"sudo dnf install -y {pkg}")
    if not branch:
        return (f"sudo dnf install -y {pkg}",)
    lock = f"'*nvidia*{branch}*'"
    if _fedora_dnf5(system):
        return (f"sudo dnf versionlock add {lock}", f"sudo dnf install -y {pkg}")
    return (
        "sudo dnf install -y python3-dnf-plugin-versionlock",
        f"sudo dnf versionlock {lock}",
        f"sudo dnf install -y {pkg}",
    )


def _fedora_dnf5(system: SystemFacts) -> bool:
    """Fedora 41 moved to dnf5, whose config-manager takes ``addrepo --from-repofile=``."""
    return system.os_id == "fedora" and (major(system.os_version) or 0) >= 41


def nvidia_repo_install(
    system: SystemFacts,
    packages: Sequence[str],
    rdir: Optional[str] = None,
    manager: Optional[str] = None,
    table: Optional[Table] = None,
) -> tuple[str, ...]:
    """Add NVIDIA's CUDA repository for this distribution and install ``packages`` from it.

    ``rdir``/``manager`` default to :func:`repository` (the table's ``Distro`` row, or the guess
    for the well-known ids without a table); () when NVIDIA's repository does not serve it.

    >>> nvidia_repo_install(SystemFacts(os_id="debian", os_version="12"), ("cuda-toolkit-12-8",))[-1]
    'sudo apt-get install -y cuda-toolkit-12-8'
    """
    if not rdir or not manager:
        repo = repository(system, table)
        if repo is None:
            return ()
        rdir, manager = rdir or repo[0], manager or repo[1]
    repo_url = f"{NVIDIA_REPO}/{rdir}/{'x86_64' if system.wsl else repo_arch(system)}"
    names = " ".join(packages)
    if manager == "apt":
        return (
            f"wget {repo_url}/cuda-keyring_1.1-1_all.deb",
            "sudo dpkg -i cuda-keyring_1.1-1_all.deb",
            "sudo apt-get update",
            f"sudo apt-get install -y {names}",
        )
    if manager == "zypper":
        return (
            f"sudo zypper addrepo {repo_url}/cuda-{rdir}.repo",
            "sudo zypper refresh",
            f"sudo zypper install -y {names}",
        )
    add = (
        f"sudo dnf config-manager addrepo --from-repofile={repo_url}/cuda-{rdir}.repo"
        if _fedora_dnf5(system)
        else f"sudo dnf config-manager --add-repo {repo_url}/cuda-{rdir}.repo"
    )
    return (add, "sudo dnf clean expire-cache", f"sudo dnf install -y {names}")


def cuda_toolkit_install(system: SystemFacts, release: str, table: Optional[Table] = None) -> tuple[str, ...]:
    """The CUDA ``release`` toolkit ("12.8", i.e. cuda-toolkit-12-8) from NVIDIA's repository, then
    CUDA_HOME and PATH pointed at it. Toolkit only: never a driver (right for WSL and containers too).
    ``table``: as in :func:`driver_install`."""
    root = f"/usr/local/cuda-{release}"
    steps = nvidia_repo_install(system, (f"cuda-toolkit-{release.replace('.', '-')}",), table=table)
    row = (
        table.distro(system.os_id, system.os_version)
        if table is not None and system.os_id and system.os_version and not system.wsl
        else None
    )
    if steps and row is not None and row.cuda_lines and release not in row.cuda_lines:
        doubt = " (unconfirmed)" if not row.confirmed("cuda_lines") else ""
        steps = (
            f"# envdoctor's table{doubt} lists no CUDA {release} in NVIDIA's {row.repo_dir} repository "
            f"(it has {row.cuda_lines[0]} to {row.cuda_lines[-1]}): if the package is missing, take the "
            f"{release} runfile (sh cuda_{release}.*_linux.run --silent --toolkit) from "
            "https://developer.nvidia.com/cuda-toolkit-archive",
        ) + steps
    if not steps:
        steps = (
            f"# install the CUDA {release} toolkit for your distribution: "
            "https://developer.nvidia.com/cuda-toolkit-archive",
        )
    return steps + (f"export CUDA_HOME={root}", f'export PATH="{root}/bin:$PATH"')


CONTAINER_TOOLKIT_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
_LIBNC = "https://nvidia.github.io/libnvidia-container"
_LIBNC_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
DOCKER_GPU_TEST = "docker run --rm --gpus all ubuntu nvidia-smi"


def install_container_toolkit(system: SystemFacts) -> tuple[str, ...]:
    """Add NVIDIA's libnvidia-container repository and install nvidia-container-toolkit."""
    fam = family(system)
    if fam == "debian":
        return (
            f"curl -fsSL {_LIBNC}/gpgkey | sudo gpg --dearmor -o {_LIBNC_KEYRING}",
            f"curl -s -L {_LIBNC}/stable/deb/nvidia-container-toolkit.list | "
            f"sed 's#deb https://#deb [signed-by={_LIBNC_KEYRING}] https://#g' | "
            "sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list",
            "sudo apt-get update",
            "sudo apt-get install -y nvidia-container-toolkit",
        )
    if fam == "rhel":
        return (
            f"curl -s -L {_LIBNC}/stable/rpm/nvidia-container-toolkit.repo | "
            "sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo",
            "sudo dnf install -y nvidia-container-toolkit",
        )
    if fam == "suse":
        return (
            f"sudo zypper ar {_LIBNC}/stable/rpm/nvidia-container-toolkit.repo",
            "sudo zypper --gpg-auto-import-keys install -y nvidia-container-toolkit",
        )
    return (f"# add NVIDIA's container toolkit repository for your distribution: {CONTAINER_TOOLKIT_GUIDE}",)


def configure_docker(rootless: bool = False) -> tuple[str, ...]:
    """Register the nvidia runtime with docker, restart it, and try a GPU container."""
    if rootless:
        return (
            "nvidia-ctk runtime configure --runtime=docker --config=$HOME/.config/docker/daemon.json",
            "systemctl --user restart docker",
            "sudo nvidia-ctk config --set nvidia-container-cli.no-cgroups --in-place",
            DOCKER_GPU_TEST,
        )
    return ("sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker", DOCKER_GPU_TEST)


def on_host(system: SystemFacts, cmds: Sequence[str], restart: bool = True) -> tuple[str, ...]:
    """``cmds`` as they are, or, inside a container, as ``# on the host: ...`` lines: kernel
    modules, dkms, the kernel log, systemd services and reboots belong to the host, not to a
    container (which then needs a restart to see the change, with ``restart``).

    >>> on_host(SystemFacts(container="docker"), ("sudo modprobe nvidia",))
    ('# on the host: sudo modprobe nvidia', '# then restart this container')
    """
    if not system.container:
        return tuple(cmds)
    out = tuple(c if c.startswith("#") else f"# on the host: {c}" for c in cmds)
    return out + (("# then restart this container",) if restart else ())


def distro_of(system: SystemFacts, table: Optional[Table]) -> Optional[Distro]:
    """The table's row for this distribution: its own (id and version, or an ``also_ids``), else
    the newest row of the same id (a release the table does not list yet), else of the first
    ID_LIKE id that has rows (Pop!_OS and Linux Mint: ``ubuntu``)."""
    if table is None or not system.os_id:
        return None
    own = table.distro(system.os_id, system.os_version or "")
    if own is not None:
        return own
    for name in (system.os_id, *system.os_like):
        rows = [d for d in table.distros if name in (d.id, *d.also_ids)]
        if rows:
            return max(rows, key=lambda d: version_key(d.version))
    return None


_INSTALL = {"apt": "apt-get install -y", "dnf": "dnf install -y", "zypper": "zypper install -y"}


def kernel_headers_install(system: SystemFacts, table: Optional[Table]) -> str:
    """The command that installs the running kernel's headers (DKMS builds the module against
    them), from the distribution's row: ``sudo apt-get install -y linux-headers-$(uname -r)``."""
    row = distro_of(system, table)
    if row is None or not row.kernel_headers:
        return "# install the headers of the running kernel (uname -r) for your distribution"
    manager = row.package_manager or {"debian": "apt", "suse": "zypper"}.get(row.family, "dnf")
    doubt = "" if row.confirmed("kernel_headers") else "   # package names unconfirmed in envdoctor's table"
    return f"sudo {_INSTALL[manager]} {row.kernel_headers}{doubt}"


def mok_enroll(system: SystemFacts, table: Optional[Table]) -> tuple[str, ...]:
    """Queue the key DKMS signed the nvidia module with for enrolment, then reboot into the MOK
    manager. DKMS makes the key when it first builds a module, so this comes after the driver's
    install (Ubuntu: ``update-secureboot-policy --enroll-key`` for /var/lib/shim-signed/mok/MOK.der;
    elsewhere ``mokutil --import /var/lib/dkms/mok.pub``: the row's ``dkms_mok``)."""
    row = distro_of(system, table)
    if row is None or not row.dkms_mok:
        line = (
            "# enroll the key DKMS signs modules with (mok_certificate in /etc/dkms/framework.conf; "
            "dkms 3 defaults to /var/lib/dkms/mok.pub): sudo mokutil --import <that file>"
        )
    else:
        doubt = "; the path is unconfirmed in envdoctor's table" if not row.confirmed("dkms_mok") else ""
        command = row.mok_enroll() or ""
        what = "" if row.dkms_mok in command else f"queues {row.dkms_mok}; "
        line = f"sudo {command}   # {what}asks for a one-time password{doubt}"
    return (line, "sudo reboot   # at the blue MOK manager screen: Enroll MOK, Continue, Yes, the password")


def load_module(system: SystemFacts, table: Optional[Table], secure_boot: Optional[bool]) -> tuple[str, ...]:
    """The driver is installed but its kernel module is not loaded: look at DKMS, build the module
    for the running kernel against its headers, load it, read the kernel's reason, and, with
    Secure Boot, enroll the key the module was signed with. Inside a container: on the host."""
    cmds = [
        "dkms status   # is an nvidia module built and installed for the running kernel (uname -r)?",
        kernel_headers_install(system, table),
        "sudo dkms autoinstall   # builds the module for the running kernel",
        "sudo modprobe nvidia && nvidia-smi",
        "sudo dmesg | grep -i nvidia | tail -20   # the kernel's reason when modprobe fails",
    ]
    if secure_boot is not False:
        when = (
            "Secure Boot is on" if secure_boot else "if modprobe says 'Key was rejected by service', Secure Boot is on"
        )
        cmds.append(f"# {when}: the module loads once the key it was signed with is enrolled")
        cmds.extend(mok_enroll(system, table))
    return on_host(system, cmds)


def reload_modules() -> tuple[str, ...]:
    """Load the new kernel module without a reboot (stops the display and every GPU user)."""
    return (
        "sudo reboot",
        "# or, without a reboot, once no process uses the GPU (sudo lsof /dev/nvidia* lists them):",
        "sudo systemctl isolate multi-user.target",
        "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia",
        "sudo modprobe nvidia && nvidia-smi",
    )


def blacklist_nouveau(system: SystemFacts) -> tuple[str, ...]:
    regen = "sudo dracut -f" if family(system) == "rhel" else "sudo update-initramfs -u"
    return (
        "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
        regen,
        "sudo reboot",
    )

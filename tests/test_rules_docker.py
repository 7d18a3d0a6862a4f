"""ED5xx rules on hand-written facts; install commands as NVIDIA's container toolkit guide writes them."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.facts.docker import DockerFacts
from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.findings import Finding
from envdoctor.rules import docker as rules

UBUNTU = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64", user="ada")
H200 = DriverFacts(
    driver_version="580.159.04",
    driver_cuda="13.0",
    gpus=(GpuInfo(0, "NVIDIA H200", "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4", source="nvml"),),
)
UP = dict(
    client="/usr/bin/docker",
    client_version="29.7.2",
    daemon="ok",
    server_version="29.7.2",
    gpus_flag_supported=True,
    runtimes=("io.containerd.runc.v2", "runc"),
    default_runtime="runc",
    cdi_spec_dirs=("/etc/cdi", "/var/run/cdi"),
)
APT = (
    "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | sudo gpg --dearmor -o "
    "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg",
    "curl -s -L https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | "
    "sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' | "
    "sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list",
    "sudo apt-get update",
    "sudo apt-get install -y nvidia-container-toolkit",
)
CONFIGURE = (
    "sudo nvidia-ctk runtime configure --runtime=docker",
    "sudo systemctl restart docker",
    "docker run --rm --gpus all ubuntu nvidia-smi",
)


def found(facts: Facts, code: str) -> list[Finding]:
    return [f for rule in rules.RULES for f in rule(facts, None) if f.code == code]


def down(daemon, error, socket="unix:///var/run/docker.sock"):
    return DockerFacts(
        client="/usr/local/bin/docker",
        client_version="28.2.2",
        daemon=daemon,
        daemon_error=error,
        daemon_socket=socket,
        gpus_flag_supported=True,
    )


NOT_RUNNING = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
DENIED = (
    "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: "
    'Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/version": '
    "dial unix /var/run/docker.sock: connect: permission denied"
)


# ED501 / ED502 / ED506 ---------------------------------------------------------------------------


def test_ed501_daemon_not_running_on_a_host():
    (f,) = found(Facts(system=UBUNTU, docker=down("not_running", NOT_RUNNING)), "ED501")
    assert f.severity == "warning"
    assert f.fix == ("sudo systemctl start docker", "sudo systemctl enable docker   # start it at boot too")
    assert f"docker version: {NOT_RUNNING}" in f.evidence


def test_ed501_rootless_and_inside_a_container():
    rootless = down(
        "not_running",
        "Cannot connect to the Docker daemon at unix:///run/user/1351/docker.sock. Is the docker daemon running?",
        "unix:///run/user/1351/docker.sock",
    )
    (f,) = found(Facts(system=UBUNTU, docker=rootless), "ED501")
    assert f.fix == ("systemctl --user start docker",)
    this_machine = SystemFacts(os_id="debian", container="docker", container_evidence="/.dockerenv exists")
    (f,) = found(Facts(system=this_machine, docker=down("not_running", NOT_RUNNING)), "ED501")
    assert f.severity == "info" and "inside docker" in f.title and f.fix[0].startswith("# on the host")


def test_ed502_permission_denied():
    (f,) = found(Facts(system=UBUNTU, docker=down("permission_denied", DENIED)), "ED502")
    assert f.fix == ('sudo usermod -aG docker "$USER"', "newgrp docker   # or log out and back in", "docker info")
    assert f.reference == "https://docs.docker.com/engine/install/linux-postinstall/"
    assert not found(Facts(system=UBUNTU, docker=down("permission_denied", DENIED)), "ED501")


def test_ed506_other_daemon_error():
    (f,) = found(Facts(docker=down("error", "docker did not answer in 10 s")), "ED506")
    assert f.fix[-1] == "sudo systemctl restart docker"


def test_daemon_rules_quiet():
    assert not found(Facts(docker=DockerFacts(**UP)), "ED501")
    assert not found(Facts(docker=DockerFacts()), "ED502")
    assert not found(Facts(docker=DockerFacts(**UP)), "ED506")


# ED503 / ED504 -----------------------------------------------------------------------------------


def test_ed503_gpu_and_docker_without_the_container_toolkit_on_ubuntu():
    (f,) = found(Facts(system=UBUNTU, driver=H200, docker=DockerFacts(**UP)), "ED503")
    assert f.severity == "error"
    assert f.fix == APT + CONFIGURE
    assert "GPU 0: NVIDIA H200 (nvml)" in f.evidence and "nvidia-ctk: not on PATH" in f.evidence


def test_ed503_on_rhel_suse_and_an_unknown_distro_with_only_a_pci_gpu():
    pci = PciFacts(
        devices=(PciDevice("0000:00:06.0", "0x10de", "0x2335", "0x030200", name="GH100 [H200 SXM 141GB]"),),
        source="/sys/bus/pci/devices",
    )
    fedora = SystemFacts(os_id="fedora", os_version="41")
    (f,) = found(Facts(system=fedora, pci=pci, docker=DockerFacts(**UP)), "ED503")
    assert f.fix[:2] == (
        "curl -s -L "
        "https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo | "
        "sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo",
        "sudo dnf install -y nvidia-container-toolkit",
    )
    assert "PCI 0000:00:06.0: GH100 [H200 SXM 141GB] (/sys/bus/pci/devices)" in f.evidence
    leap = SystemFacts(os_id="opensuse-leap", os_version="15.6", os_like=("suse", "opensuse"))
    (f,) = found(Facts(system=leap, pci=pci, docker=DockerFacts(**UP)), "ED503")
    assert f.fix[:2] == (
        "sudo zypper ar https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo",
        "sudo zypper --gpg-auto-import-keys install -y nvidia-container-toolkit",
    )
    (f,) = found(Facts(system=SystemFacts(os_id="gentoo"), pci=pci, docker=DockerFacts(**UP)), "ED503")
    assert f.fix[0].startswith("# add NVIDIA's container toolkit repository") and f.fix[1:] == CONFIGURE


def test_ed504_toolkit_installed_docker_not_configured_rootless():
    d = DockerFacts(**dict(UP, rootless=True, nvidia_ctk="/usr/bin/nvidia-ctk", nvidia_ctk_version="1.17.8"))
    (f,) = found(Facts(system=UBUNTU, driver=H200, docker=d), "ED504")
    assert f.fix == (
        "nvidia-ctk runtime configure --runtime=docker --config=$HOME/.config/docker/daemon.json",
        "systemctl --user restart docker",
        "sudo nvidia-ctk config --set nvidia-container-cli.no-cgroups --in-place",
        "docker run --rm --gpus all ubuntu nvidia-smi",
    )
    assert not found(Facts(system=UBUNTU, driver=H200, docker=d), "ED503")


def test_ed503_504_quiet():
    nvidia = DockerFacts(**dict(UP, runtimes=("io.containerd.runc.v2", "nvidia", "runc")))
    assert not found(Facts(driver=H200, docker=nvidia), "ED503")
    cdi = DockerFacts(**dict(UP, cdi_specs=("/var/run/cdi/nvidia.yaml",)))
    assert not found(Facts(driver=H200, docker=cdi), "ED503")
    discovered = DockerFacts(**dict(UP, cdi_devices=("nvidia.com/gpu=0", "nvidia.com/gpu=all")))
    assert not found(Facts(driver=H200, docker=discovered), "ED504")
    assert not found(Facts(docker=DockerFacts(**UP)), "ED503")  # no GPU
    assert not found(Facts(driver=H200, docker=down("not_running", NOT_RUNNING)), "ED503")


# ED505 / ED507 -----------------------------------------------------------------------------------


def test_ed505_docker_older_than_19_03():
    old = DockerFacts(
        **dict(UP, client_version="18.09.6", server_version="18.09.6", gpus_flag_supported=False, runtimes=("runc",))
    )
    (f,) = found(Facts(system=UBUNTU, driver=H200, docker=old), "ED505")
    assert f.severity == "error" and "18.09.6" in f.title
    assert f.fix[0] == "# upgrade Docker Engine from Docker's repository: https://docs.docker.com/engine/install/"
    assert f.fix[1:] == APT + CONFIGURE
    assert not found(Facts(driver=H200, docker=DockerFacts(**UP)), "ED505")
    assert not found(Facts(docker=old), "ED505")


def test_ed507_podman_without_cdi_spec():
    d = DockerFacts(podman="/usr/bin/podman", podman_version="4.9.3", nvidia_ctk="/usr/bin/nvidia-ctk")
    (f,) = found(Facts(system=UBUNTU, driver=H200, docker=d), "ED507")
    assert f.fix == (
        "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        "nvidia-ctk cdi list",
        "podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L",
    )
    (f,) = found(Facts(system=UBUNTU, driver=H200, docker=DockerFacts(podman="/usr/bin/podman")), "ED507")
    assert f.fix[:4] == APT


def test_ed507_quiet():
    spec = DockerFacts(podman="/usr/bin/podman", cdi_specs=("/etc/cdi/nvidia.yaml",))
    assert not found(Facts(driver=H200, docker=spec), "ED507")
    assert not found(Facts(docker=DockerFacts(podman="/usr/bin/podman")), "ED507")


def test_nothing_when_docker_is_absent():
    assert [f for rule in rules.RULES for f in rule(Facts(driver=H200, system=UBUNTU), None)] == []


DOCKER_INSIDE = SystemFacts(
    os_id="ubuntu",
    os_version="22.04",
    os_like=("debian",),
    user="root",
    container="docker",
    container_evidence="/.dockerenv exists",
)


def test_inside_a_container_the_toolkit_and_the_daemon_are_the_hosts():
    """With the host's socket mounted into a container, ED503 installed the container toolkit with the
    container's apt and restarted Docker with systemctl; ED502 added the user to the docker group."""
    (f,) = found(Facts(system=DOCKER_INSIDE, driver=H200, docker=DockerFacts(**UP)), "ED503")
    assert all(c.startswith("#") for c in f.fix)
    assert f.fix[0].startswith("# on the host, where the Docker daemon runs: install the NVIDIA Container Toolkit")
    assert "# on the host: sudo nvidia-ctk runtime configure --runtime=docker" in f.fix
    (f,) = found(Facts(system=DOCKER_INSIDE, docker=down("permission_denied", DENIED)), "ED502")
    assert f.fix == (
        "stat -c '%g' /var/run/docker.sock   # the group id that owns the host's socket",
        "# on the host: start this container with --group-add <that id>",
    )


def test_ed501_under_wsl2_names_docker_desktops_integration():
    wsl = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), wsl="wsl2")
    (f,) = found(Facts(system=wsl, docker=down("not_running", NOT_RUNNING)), "ED501")
    assert f.fix[0] == "# Docker Desktop: Settings > Resources > WSL integration, turned on for this distribution"
    assert not any(c.startswith("sudo systemctl") for c in f.fix)


# --- issue 26, section 5: the toolkit's security fixes and a CDI spec left from another driver -----


def test_container_toolkit_1_13_1_is_below_the_release_fixing_the_container_escape_cves():
    """1.13.1 (the recorded `nvidia-ctk --version` of a public machine) was not flagged; NVIDIA's
    bulletins name every release up to 1.17.7 as affected by a container escape (data/security.toml)."""
    facts = Facts(
        system=UBUNTU,
        driver=H200,
        docker=DockerFacts(**UP, nvidia_ctk="/usr/bin/nvidia-ctk", nvidia_ctk_version="1.13.1"),
    )
    (f,) = found(facts, "ED508")
    assert f.severity == "warning"
    assert f.title == "NVIDIA Container Toolkit 1.13.1 has known container-escape CVEs: 1.17.8 or newer fixes them"
    assert f.reference == "https://nvidia.custhelp.com/app/answers/detail/a_id/5659"
    assert (
        "CVE-2024-0132, CVE-2024-0133: fixed in 1.16.2 (NVIDIA bulletin "
        "https://nvidia.custhelp.com/app/answers/detail/a_id/5582, 2024-09)"
    ) in " ".join(f.evidence)
    assert any(e.startswith("CVE-2025-23266, CVE-2025-23267: fixed in 1.17.8") for e in f.evidence)
    assert (
        "sudo apt-get install --only-upgrade -y nvidia-container-toolkit nvidia-container-toolkit-base "
        "libnvidia-container-tools libnvidia-container1" in f.fix
    )
    assert f.fix[-1] == "nvidia-ctk --version   # 1.17.8 or newer"


def test_a_toolkit_with_every_fix_or_only_the_cli_version_known():
    fixed = Facts(system=UBUNTU, driver=H200, docker=DockerFacts(**UP, nvidia_ctk_version="1.17.8"))
    assert found(fixed, "ED508") == []
    cli_only = Facts(system=UBUNTU, driver=H200, docker=DockerFacts(**UP, nvidia_container_cli_version="1.17.5"))
    (f,) = found(cli_only, "ED508")
    assert f.title.startswith("NVIDIA Container Toolkit 1.17.5 has known") and len(f.evidence) == 2
    assert found(Facts(system=UBUNTU, driver=H200, docker=DockerFacts(**UP)), "ED508") == []


def test_a_cdi_spec_generated_for_another_driver_than_the_loaded_one():
    """/etc/cdi/nvidia.yaml of driver 570.133.20 after an upgrade to 580.159.04: containers started with
    --device nvidia.com/gpu=all ask for libraries that are gone."""
    facts = Facts(
        system=UBUNTU,
        driver=H200,
        docker=DockerFacts(
            **UP, cdi_specs=("/etc/cdi/nvidia.yaml",), cdi_driver_versions={"/etc/cdi/nvidia.yaml": "570.133.20"}
        ),
    )
    (f,) = found(facts, "ED509")
    assert f.severity == "warning"
    assert f.title == "The CDI spec /etc/cdi/nvidia.yaml was generated for driver 570.133.20; 580.159.04 is loaded"
    assert f.fix[0] == "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
    same = Facts(
        system=UBUNTU,
        driver=H200,
        docker=DockerFacts(
            **UP, cdi_specs=("/etc/cdi/nvidia.yaml",), cdi_driver_versions={"/etc/cdi/nvidia.yaml": "580.159.04"}
        ),
    )
    assert found(same, "ED509") == []

"""Route choice: which of system, conda, docker, why, and one line for each route not taken."""

import dataclasses

from envdoctor.advise.machine import Machine, machine_from_facts
from envdoctor.advise.routes import choose_route
from envdoctor.facts import (
    CondaFacts,
    DockerFacts,
    DriverFacts,
    Facts,
    GpuInfo,
    PciDevice,
    PciFacts,
    SystemFacts,
    TargetPython,
)
from envdoctor.table import load_table

T = load_table()
CONDA = CondaFacts(
    exe="/home/ada/miniforge3/bin/conda", flavor="conda", version="25.5.1", base_prefix="/home/ada/miniforge3"
)
DOCKER_READY = DockerFacts(
    client="/usr/bin/docker",
    client_version="28.2.2",
    daemon="ok",
    server_version="28.2.2",
    runtimes=("io.containerd.runc.v2", "nvidia", "runc"),
)
DOCKER_PLAIN = dataclasses.replace(DOCKER_READY, runtimes=("io.containerd.runc.v2", "runc"))


def machine(
    *, system=None, driver="580.95.05", gpus=(("NVIDIA H200", "9.0"),), python=None, conda=None, docker=None
) -> Machine:
    pci = PciFacts(
        devices=tuple(
            PciDevice(f"0000:0{i}:00.0", "0x10de", "0x2335", "0x030200", name=n, compute_capability=cc)
            for i, (n, cc) in enumerate(gpus)
        )
    )
    facts = Facts(
        pci=pci,
        system=system
        or SystemFacts(os_id="ubuntu", os_version="24.04", os_name="Ubuntu 24.04.3 LTS", arch="x86_64", glibc="2.39"),
        driver=DriverFacts(driver_version=driver, gpus=tuple(GpuInfo(i, n, cc) for i, (n, cc) in enumerate(gpus)))
        if driver
        else DriverFacts(),
        python=python or TargetPython(executable="/usr/bin/python3", version="3.12.3"),
        conda=CondaFacts() if conda is None else conda,
        docker=DockerFacts() if docker is None else docker,
    )
    return machine_from_facts(facts, T)


def rejected(decision):
    return {r.route: r.reason for r in decision.rejected}


def test_nothing_special_is_system_with_pip_wheels_and_two_reasons_against():
    d = choose_route(machine(), T)
    assert d.route == "system" and "no CUDA toolkit needed" in d.reasons[0]
    why = rejected(d)
    assert set(why) == {"conda", "docker"}
    assert "no conda, mamba or micromamba" in why["conda"]
    assert "docker is not installed" in why["docker"]


def test_active_conda_env_is_conda():
    env = dataclasses.replace(CONDA, active_prefix="/home/ada/miniforge3/envs/dl", active_name="dl")
    d = choose_route(machine(conda=env, docker=DOCKER_READY), T)
    assert d.route == "conda" and "(dl)" in d.reasons[0]
    assert "conda environment" in rejected(d)["system"]


def test_active_base_env_does_not_count_as_working_in_conda():
    base = dataclasses.replace(CONDA, active_prefix="/home/ada/miniforge3", active_name="base")
    d = choose_route(machine(conda=base), T)
    assert d.route == "system"
    assert "no conda environment is active" in rejected(d)["conda"]


def test_ready_docker_with_nvidia_runtime_is_docker():
    d = choose_route(machine(docker=DOCKER_READY), T)
    assert d.route == "docker" and "NVIDIA runtime" in d.reasons[0]
    assert "pip wheels would work too" in rejected(d)["system"]


def test_docker_daemon_refusing_the_user_is_not_docker():
    d = choose_route(machine(docker=dataclasses.replace(DOCKER_READY, daemon="permission_denied")), T)
    assert d.route == "system"
    assert "permission denied" in rejected(d)["docker"]


def test_docker_without_the_nvidia_runtime_is_not_the_default():
    d = choose_route(machine(docker=DOCKER_PLAIN), T)
    assert d.route == "system"
    assert "Container Toolkit is not set up" in rejected(d)["docker"]


def test_venv_target_is_system():
    venv = TargetPython(executable="/home/ada/proj/.venv/bin/python", version="3.12.3", venv=True)
    d = choose_route(machine(python=venv, docker=DOCKER_READY), T)
    assert d.route == "system" and "virtual environment" in d.reasons[0]


def test_no_gpu_rules_out_docker():
    d = choose_route(machine(driver=None, gpus=(), docker=DOCKER_READY), T)
    assert d.route == "system" and "no NVIDIA GPU" in rejected(d)["docker"]


def test_inside_a_container_rules_out_docker():
    inside = SystemFacts(
        os_id="ubuntu", os_version="24.04", arch="x86_64", container="docker", container_evidence="/.dockerenv exists"
    )
    d = choose_route(machine(system=inside, docker=DOCKER_READY), T)
    assert d.route == "system" and "inside a docker container" in rejected(d)["docker"]


def test_with_nvcc_on_a_distro_nvidia_does_not_serve_goes_to_conda():
    arch_linux = SystemFacts(os_id="arch", os_version="2025.01.01", arch="x86_64")
    d = choose_route(machine(system=arch_linux, conda=CONDA), T, with_nvcc=True)
    assert d.route == "conda"
    assert "not served by NVIDIA's CUDA repository" in rejected(d)["system"]


def test_with_nvcc_on_a_served_distro_is_system():
    d = choose_route(machine(conda=CONDA, docker=DOCKER_READY), T, with_nvcc=True)
    assert d.route == "system" and "--with-nvcc" in d.reasons[0]


def test_driverless_gpu_on_an_unserved_non_ubuntu_distro_is_not_system():
    alpine = SystemFacts(os_id="alpine", os_version="3.20", arch="x86_64")
    d = choose_route(machine(system=alpine, driver=None, conda=CONDA), T)
    assert d.route == "conda" and "which would provide the driver" in rejected(d)["system"]


def test_asked_route_wins_and_the_others_say_so():
    d = choose_route(machine(docker=DOCKER_READY), T, requested="conda")
    assert d.route == "conda" and d.reasons[0] == "asked for with --route conda"
    assert "--route conda was asked for" in rejected(d)["docker"]


def test_macos_is_system():
    mac = SystemFacts(os_id="darwin", os_version="14.5", platform="darwin", arch="arm64")
    d = choose_route(machine(system=mac, driver=None, gpus=()), T)
    assert d.route == "system" and "macOS" in d.reasons[0]
    assert "no NVIDIA GPU access" in rejected(d)["docker"]

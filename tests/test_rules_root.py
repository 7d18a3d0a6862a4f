"""Fixes as root: no sudo (a container's root often has none), except on lines meant for the host."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, GpuInfo
from envdoctor.facts.python import TorchFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.rules import evaluate
from tests.tables import table

H200 = GpuInfo(0, "NVIDIA H200", "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4", "9.0", source="nvml")


def _facts(**system) -> Facts:
    return Facts(
        system=SystemFacts(os_id="debian", os_version="12", **system),
        driver=DriverFacts(
            driver_version="580.159.04",
            driver_cuda="13.0",
            gpus=(H200,),
            kernel_module_version="580.159.04",
            kernel_module_flavor="open",
        ),
        torch=TorchFacts(installed=True, version="2.11.0+cu130", cuda="13.0"),
        skipped=("docker", "conda"),
    )


def test_root_in_a_container_gets_commands_without_sudo():
    """ED309 told a container's root to `sudo dpkg -i ...`: most images have no sudo."""
    found = {
        f.code: f
        for f in evaluate(
            _facts(user="root", container="docker", container_evidence="/.dockerenv"), table("four-archs")
        )
    }
    fix = found["ED309"].fix
    assert "dpkg -i cuda-keyring_1.1-1_all.deb" in fix and "apt-get install -y cuda-toolkit-13-0" in fix
    assert not any(line.startswith("sudo") for line in fix)


def test_other_users_keep_sudo_and_lines_for_the_host_keep_theirs():
    found = {f.code: f for f in evaluate(_facts(user="ada"), table("four-archs"))}
    assert "sudo dpkg -i cuda-keyring_1.1-1_all.deb" in found["ED309"].fix
    from envdoctor.findings import Finding
    from envdoctor.rules import as_user

    host = Finding("ED102", "error", "t", fix=("# on the host: sudo reboot", "sudo rmmod nvidia   # then sudo"))
    assert as_user(host, SystemFacts(user="root")).fix == ("# on the host: sudo reboot", "rmmod nvidia   # then sudo")

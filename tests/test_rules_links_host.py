"""ED84x-ED85x fixes that change the driver's state belong to the host when envdoctor runs in a container."""

from __future__ import annotations

from dataclasses import replace

from envdoctor import checks
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.links import probe as links
from envdoctor.links import rules_topo as rules
from envdoctor.table import load_table
from tests.linkmachines import context, nvswitch

DOCKER = SystemFacts(os_id="ubuntu", os_version="24.04", container="docker", container_evidence="/.dockerenv exists")


def test_inside_a_container_ecc_mig_and_services_are_changed_on_the_host(tmp_path):
    """In the H200's container ED856 said `sudo nvidia-smi -i 0 -e 1` and `sudo reboot`, ED857
    `sudo systemctl enable --now nvidia-persistenced`: a container has no systemd and no reboot."""
    nv = nvswitch(2)
    nv.set(0, "nvmlDeviceGetEccMode", [0, 0])
    nv.set(1, "nvmlDeviceGetMigMode", [1, 1])
    for i in range(2):
        nv.set(i, "nvmlDeviceGetPersistenceMode", 0)
    facts = Facts(links=links.probe(context(tmp_path, nv, 2)), driver=DriverFacts(), system=DOCKER)
    found = {f.code: f for f in checks.run(rules.RULES, facts, load_table())}
    assert found["ED856"].fix == (
        "# on the host: sudo nvidia-smi -i 0 -e 1",
        "# on the host: sudo reboot",
        "# then restart this container",
    )
    assert (
        found["ED855"].fix[0]
        == "# on the host: sudo nvidia-smi -i 1 -mig 0   # whole-GPU jobs; stop its processes first"
    )
    assert found["ED857"].fix[0] == (
        "# on the host: sudo systemctl enable --now nvidia-persistenced   # NVIDIA's recommended way"
    )
    on_host = replace(facts, system=replace(DOCKER, container=None, container_evidence=None))
    found = {f.code: f for f in checks.run(rules.RULES, on_host, load_table())}
    assert found["ED856"].fix == ("sudo nvidia-smi -i 0 -e 1", "sudo reboot")

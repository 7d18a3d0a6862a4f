"""The links checks (ED840-869) on the H200's recording and realistic multi-GPU NVML answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor import checks
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts
from envdoctor.findings import exit_code
from envdoctor.links import probe as links
from envdoctor.links import rules_topo as rules
from envdoctor.table import load_table
from tests.linkmachines import LinkNvml, bridged_quad, context, nv4_bridge, nvswitch, pcie_pair
from tests.machines import h200


def _facts(tmp_path: Path, nv, gpus: int, driver=None, **tree) -> Facts:
    return Facts(links=links.probe(context(tmp_path, nv, gpus, **tree)), driver=driver or DriverFacts())


def _found(facts: Facts):
    table = load_table()
    return checks.run(rules.RULES, facts, table)


def _codes(facts: Facts):
    return sorted((f.code, f.severity) for f in _found(facts))


def test_the_h200_has_no_links_finding(tmp_path):
    assert _found(Facts(links=links.probe(h200(tmp_path)))) == []


def test_ed851_does_not_say_gpu_traffic_crosses_sys_on_an_nvswitch_box_where_every_pair_is_nv18(tmp_path):
    """Every pair NV18: GPU-to-GPU traffic never crosses the CPU interconnect, so no ED851."""
    assert _found(_facts(tmp_path, nvswitch(8), 8)) == []


def test_gpus_on_two_numa_nodes_joined_only_by_pcie_get_the_numa_note(tmp_path):
    (f,) = _found(_facts(tmp_path, bridged_quad(), 4, gen=4))
    assert (f.code, f.severity) == ("ED851", "info")
    assert f.evidence == ("NUMA node 0: GPU 0, 1 (CPUs 0-31)", "NUMA node 1: GPU 2, 3 (CPUs 32-63)")
    assert f.fix[0].startswith("numactl --cpunodebind=0 --membind=0")


def test_two_nvlinks_down_on_an_nvswitch_gpu(tmp_path):
    nv = nvswitch(4)
    nv.links(2, 18, 6, None, 2, down=(3, 11))
    found = [f for f in _found(_facts(tmp_path, nv, 4)) if f.code == "ED845"]
    (f,) = found
    assert f.severity == "error" and f.title == "GPU 2: 2 of 18 NVLinks are down"
    assert "inactive: link 3, 11" in f.evidence


def test_nvlinks_reported_down_by_nvml_are_an_error_and_exit_1(tmp_path):
    """README: topo exits 1 for a link down; a degraded fabric is an error, not a warning with exit 0."""
    nv = nvswitch(4)
    nv.links(2, 18, 6, None, 2, down=(3,))
    found = _found(_facts(tmp_path, nv, 4))
    assert [(f.code, f.severity) for f in found if f.code == "ED845"] == [("ED845", "error")]
    assert exit_code(found) == 1


def test_a_bridge_link_down_on_bridged_cards_is_an_error(tmp_path):
    nv = nv4_bridge()
    nv.links(0, 4, 5, 1, 0, down=(2,))
    assert ("ED845", "error") in _codes(_facts(tmp_path, nv, 2, gen=4))


def test_every_nvlink_down_on_an_sxm_gpu_is_an_error(tmp_path):
    nv = nvswitch(2)
    nv.links(1, 18, 6, None, 2, down=tuple(range(18)))
    assert ("ED845", "error") in _codes(_facts(tmp_path, nv, 2))


def test_twelve_links_of_eighteen_on_an_h100_nvl_is_by_design(tmp_path):
    """NVML lists 18 links on an H100 NVL; 12 exist (Azure/azurehpc-health-checks#162's false alarm)."""
    nv = LinkNvml(2, "NVIDIA H100 NVL")
    for i in range(2):
        nv.links(i, 18, 6, 1 - i, 0, down=tuple(range(12, 18)))
    nv.pair(0, 1, "PXB")
    assert "ED845" not in {c for c, _ in _codes(_facts(tmp_path, nv, 2))}


def test_bridged_cards_without_a_bridge_get_a_note(tmp_path):
    nv = nv4_bridge()
    for i in range(2):
        nv.links(i, 4, 5, 1 - i, 0, down=(0, 1, 2, 3))
    found = [f for f in _found(_facts(tmp_path, nv, 2, gen=4)) if f.code == "ED845"]
    assert [(f.severity, f.title[:5]) for f in found] == [("info", "GPU 0"), ("info", "GPU 1")]
    assert "no bridge fitted" in found[0].title


def test_nvlink_error_counters(tmp_path):
    nv = nvswitch(2)
    nv.set(0, "nvmlDeviceGetNvLinkErrorCounter:5,0", 12)  # replay
    nv.set(0, "nvmlDeviceGetNvLinkErrorCounter:5,2", 3)  # CRC flit
    (f,) = [f for f in _found(_facts(tmp_path, nv, 2)) if f.code == "ED846"]
    assert f.evidence[1] == "link 5: crc_flit 3, replay 12"


def test_fabric_manager_not_done(tmp_path):
    nv = nvswitch(2)
    nv.fabric[0] = (1, 0)  # NVML_GPU_FABRIC_STATE_NOT_STARTED
    nv.fabric[1] = (3, 999)  # completed with an error
    (f,) = [f for f in _found(_facts(tmp_path, nv, 2)) if f.code == "ED847"]
    assert f.severity == "error" and len(f.evidence) == 2 and "status 999" in f.evidence[1]
    assert "nvidia-fabricmanager" in f.fix[1]


def test_no_p2p_between_data_center_gpus_points_at_acs_and_iommu(tmp_path):
    nv = pcie_pair("SYS", "chipset not supported", name="NVIDIA A100 80GB PCIe")
    (f,) = [f for f in _found(_facts(tmp_path, nv, 2, gen=4)) if f.code == "ED850"]
    assert f.severity == "warning" and "acsctl" in f.fix[0] and "iommu=pt" in f.fix[2]
    assert f.evidence == ("GPU 0 <-> GPU 1 (SYS): P2P read chipset not supported, write chipset not supported (NVML)",)


def test_no_p2p_between_geforce_cards_is_only_a_note(tmp_path):
    (f,) = [f for f in _found(_facts(tmp_path, pcie_pair("PHB", "not supported"), 2, gen=4)) if f.code == "ED850"]
    assert f.severity == "info"


def test_a_gen4_gpu_in_a_gen3_x8_slot(tmp_path):
    nv = pcie_pair()
    for name, value in (
        ("MaxPcieLinkGeneration", 3),
        ("CurrPcieLinkGeneration", 3),
        ("MaxPcieLinkWidth", 8),
        ("CurrPcieLinkWidth", 8),
    ):
        nv.set(1, f"nvmlDeviceGet{name}", value)
    found = {f.code: f for f in _found(_facts(tmp_path, nv, 2, gen=4, port={1: (3, 8)}, link={1: (3, 8)}))}
    assert found["ED840"].title == "GPU 1's PCIe link is held to Gen3; the GPU supports Gen4"
    assert found["ED841"].title == "GPU 1's PCIe link is x8, narrower than the GPU's x16"
    assert "bridge port 0000:00:02.0 above it: max Gen3 x8 (sysfs)" in found["ED840"].evidence
    assert found["ED840"].evidence[-1] == "7.875 GB/s each way instead of 15.755 (data/links.toml)"  # at x8
    assert found["ED840"].fix[0].startswith("sudo lspci -vv -s 28:00.0")


def test_an_idle_gpu_at_gen1_is_power_saving_not_a_finding(tmp_path):
    """NVML reads Gen1 x16 on an idle Gen4 GPU (NVIDIA/open-gpu-kernel-modules#731): no finding."""
    nv = pcie_pair()
    nv.set(0, "nvmlDeviceGetCurrPcieLinkGeneration", 1)
    facts = _facts(tmp_path, nv, 2, gen=4, link={0: (1, 16)})
    assert not {"ED840", "ED841", "ED842"} & {c for c, _ in _codes(facts)}


def test_a_busy_gpu_below_its_link_generation_was_down_trained(tmp_path):
    nv = pcie_pair()
    nv.set(0, "nvmlDeviceGetCurrPcieLinkGeneration", 2)
    nv.set(0, "nvmlDeviceGetUtilizationRates", {"gpu": 97, "memory": 40})
    (f,) = [f for f in _found(_facts(tmp_path, nv, 2, gen=4)) if f.code == "ED842"]
    assert f.title == "GPU 0's PCIe link runs at Gen2 x16 under load, below its Gen4 x16"


@pytest.mark.parametrize("visible,severity", [(None, "warning"), ("MIG-4b3c8d2e-1a2b-5c6d-8e9f-0a1b2c3d4e5f", "info")])
def test_mig_on(tmp_path, visible, severity):
    nv = nvswitch(2)
    nv.set(1, "nvmlDeviceGetMigMode", [1, 1])
    facts = _facts(tmp_path, nv, 2, driver=DriverFacts(cuda_visible_devices=visible))
    (f,) = [f for f in _found(facts) if f.code == "ED855"]
    assert f.severity == severity and "GPU 1" in f.title


def test_ecc_off_on_a_data_center_gpu_but_not_on_geforce(tmp_path):
    nv = nvswitch(2)
    nv.set(0, "nvmlDeviceGetEccMode", [0, 0])
    (f,) = [f for f in _found(_facts(tmp_path / "a", nv, 2)) if f.code == "ED856"]
    assert f.fix == ("sudo nvidia-smi -i 0 -e 1", "sudo reboot")
    geforce = pcie_pair()
    geforce.set(0, "nvmlDeviceGetEccMode", [0, 0])
    assert "ED856" not in {c for c, _ in _codes(_facts(tmp_path / "b", geforce, 2, gen=4))}


def test_persistence_off(tmp_path):
    nv = nvswitch(2)
    for i in range(2):
        nv.set(i, "nvmlDeviceGetPersistenceMode", 0)
    (f,) = [f for f in _found(_facts(tmp_path, nv, 2)) if f.code == "ED857"]
    assert f.severity == "info" and f.title == "Persistence mode is off on 2 GPU(s)"


def test_every_code_is_registered_with_its_meaning():
    from envdoctor.codes import CODES, range_of

    links = [c for c in CODES if range_of(c).name == "links"]
    assert links == [
        "ED840",
        "ED841",
        "ED842",
        "ED845",
        "ED846",
        "ED847",
        "ED848",
        "ED850",
        "ED851",
        "ED855",
        "ED856",
        "ED857",
        "ED860",
        "ED861",
        "ED862",
        "ED863",
        "ED864",
        "ED865",
        "ED866",
        "ED867",
    ]
    assert all(CODES[c].area == "links" and len(CODES[c].meaning) > 40 for c in links)


def test_a_broken_links_table_is_one_finding_not_one_crash_per_rule(tmp_path, monkeypatch):
    # each of the four rules loaded data/links.toml itself: a broken file gave four ED900 "check failed"
    import shutil

    from envdoctor.links import table as links_table
    from envdoctor.rules import evaluate

    table, facts = load_table(), _facts(tmp_path, pcie_pair(), 2)
    data = tmp_path / "data"
    shutil.copytree(links_table.data_directory(), data)
    broken = data / "links.toml"
    broken.write_text(broken.read_text().replace("x16_gbps = 63.02", "x16_gbps = 64.02", 1))
    monkeypatch.setenv("ENVDOCTOR_DATA", str(data))  # the runner loads it once, from the data folder
    found = evaluate(facts, table)
    assert [f.code for f in found if f.code in ("ED900", "ED901")] == ["ED901"]
    (f,) = [f for f in found if f.code == "ED901"]
    assert f.evidence[0].startswith("data/links.toml: ") and "x16_gbps" in f.evidence[0]

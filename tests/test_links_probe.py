"""The links probe on recorded and realistic NVML answers (tests/linkmachines.py) and sysfs trees."""

from __future__ import annotations

from envdoctor.links import probe as links
from envdoctor.probes.context import Context
from tests.fakes import FakeBin, recorded
from tests.linkmachines import bridged_quad, context, nv4_bridge, nvswitch, pci_tree, pcie_pair
from tests.machines import FakeNvml, h200, write_tree


def test_h200_one_gpu_pcie_numa_and_no_nvlink(tmp_path):
    f = links.probe(h200(tmp_path))
    assert f.error is None and f.source == "nvml" and f.pairs == ()
    (g,) = f.gpus
    assert (g.name, g.bus_id) == ("NVIDIA H200", "00000000:00:06.0")
    assert (g.pcie.gen, g.pcie.width, g.pcie.max_gen, g.pcie.max_width, g.pcie.gpu_max_gen) == (5, 16, 5, 16, 5)
    assert g.pcie.upstream is None and g.pcie.source == "nvml"  # a VM: the GPU sits on the root bus
    assert (g.numa_node, g.numa_source, g.cpu_affinity) == (0, "nvml", "0-15")
    assert g.nvlinks == () and g.nvlink_error == "not supported"
    assert (g.ecc_mode, g.mig_mode, g.persistence_mode, g.fabric_state) == (True, False, True, None)
    assert g.errors == {}


def test_eight_gpus_on_nvswitch(tmp_path):
    f = links.probe(context(tmp_path, nvswitch(8), 8))
    assert len(f.gpus) == 8 and len(f.pairs) == 28
    assert {p.path for p in f.pairs} == {"NV18"} and {p.nvlink_via for p in f.pairs} == {"switch"}
    assert f.pair(0, 3).pcie_path == "NODE" and f.pair(3, 4).pcie_path == "SYS"
    g = f.gpus[5]
    assert g.active_nvlinks == 18 and {x.generation for x in g.nvlinks} == {"4.0"}
    assert {x.remote for x in g.nvlinks} == {"switch"} and g.fabric_state == "completed" and g.fabric_status == 0
    assert (g.numa_node, g.cpu_affinity) == (1, "56-111")
    p = g.pcie
    assert (p.sysfs_gen, p.sysfs_max_gen, p.upstream, p.upstream_max_gen) == (5, 5, "0000:00:06.0", 5)
    assert g.pcie.source == "nvml, sysfs"


def test_a_link_down_on_one_nvswitch_gpu_lowers_its_pairs(tmp_path):
    nv = nvswitch(4)
    nv.links(2, 18, 6, None, 2, down=(3, 11))
    f = links.probe(context(tmp_path, nv, 4))
    assert f.gpus[2].active_nvlinks == 16
    assert f.pair(2, 0).path == "NV16" and f.pair(0, 1).path == "NV18"


def test_pcie_pair_without_nvlink(tmp_path):
    f = links.probe(context(tmp_path, pcie_pair("PHB", "not supported"), 2, gen=4))
    (p,) = f.pairs
    assert (p.path, p.pcie_path, p.nvlinks) == ("PHB", "PHB", 0)
    assert (p.p2p_read, p.p2p_write) == ("not supported", "not supported")
    assert f.gpus[0].ecc_mode is None and f.gpus[1].nvlink_error == "not supported"


def test_nv4_bridge_pair(tmp_path):
    f = links.probe(context(tmp_path, nv4_bridge(), 2, gen=4))
    (p,) = f.pairs
    assert (p.path, p.pcie_path, p.nvlinks, p.nvlink_via) == ("NV4", "PHB", 4, "direct")
    assert [x.remote_gpu for x in f.gpus[0].nvlinks] == [1, 1, 1, 1]
    assert f.gpus[1].nvlinks[0].generation == "3.1"


def test_four_bridged_a100_pairs_across_sockets(tmp_path):
    f = links.probe(context(tmp_path, bridged_quad(), 4, gen=4))
    assert f.pair(0, 1).path == f.pair(2, 3).path == "NV12"
    assert f.pair(0, 2).path == "SYS" and f.pair(1, 2).path == "SYS" and f.pair(0, 2).nvlinks == 0
    assert [g.numa_node for g in f.gpus] == [0, 0, 1, 1]


def test_a_gpu_in_a_gen3_x8_slot_shows_both_ends(tmp_path):
    nv = pcie_pair()
    nv.set(1, "nvmlDeviceGetMaxPcieLinkGeneration", 3)
    nv.set(1, "nvmlDeviceGetCurrPcieLinkGeneration", 3)
    nv.set(1, "nvmlDeviceGetMaxPcieLinkWidth", 8)
    nv.set(1, "nvmlDeviceGetCurrPcieLinkWidth", 8)
    f = links.probe(context(tmp_path, nv, 2, gen=4, port={1: (3, 8)}, link={1: (3, 8)}))
    p = f.gpus[1].pcie
    assert (p.gen, p.width, p.max_gen, p.max_width, p.gpu_max_gen) == (3, 8, 3, 8, 4)
    assert (p.sysfs_gen, p.sysfs_width, p.sysfs_max_gen, p.sysfs_max_width) == (3, 8, 4, 16)
    assert (p.upstream, p.upstream_max_gen, p.upstream_max_width) == ("0000:00:02.0", 3, 8)


def test_without_nvml_the_pairs_come_from_nvidia_smi_topo(tmp_path):
    files, symlinks = pci_tree(8)
    root = write_tree(tmp_path / "root", files, symlinks)
    bin = FakeBin(tmp_path)
    bin.add("nvidia-smi", by_args={"topo -m": (recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"), "", 0)})
    no_nvml = FakeNvml(fail=(12, "NVML Shared Library Not Found"))
    ctx = Context(root=root, env=bin.env(hermetic=True), timeout=5.0, nvml=no_nvml)
    f = links.probe(ctx)
    assert f.source == "nvidia-smi topo -m" and f.error is None
    assert len(f.pairs) == 28 and {p.path for p in f.pairs} == {"NV18"} and f.pair(0, 7).nvlinks == 18
    assert [g.numa_node for g in f.gpus] == [0] * 4 + [1] * 4
    assert f.gpus[6].bus_id == "0000:78:00.0" and f.gpus[6].pcie.sysfs_max_gen == 5


def test_no_driver_and_no_nvidia_smi_is_an_error_not_a_crash(tmp_path):
    ctx = Context(
        root=tmp_path,
        env=FakeBin(tmp_path).env(hermetic=True),
        timeout=5.0,
        nvml=FakeNvml(fail=(12, "NVML Shared Library Not Found")),
    )
    f = links.probe(ctx)
    assert f.gpus == () and f.error.kind == "not_found"


def test_a_hung_nvml_is_a_timeout(tmp_path):
    ctx = Context(root=tmp_path, env={}, timeout=0.3, nvml=FakeNvml(hang=True))
    f = links.probe(ctx)
    assert f.error.kind == "timeout" and "0.3 s" in f.error.message


def test_helpers():
    assert links.pci_address("00000000:1A:00.0") == "0000:1a:00.0" and links.pci_address("garbage") is None
    assert links.link_gen("32.0 GT/s PCIe") == 5 and links.link_gen("8 GT/s") == 3 and links.link_gen("Unknown") is None
    assert links.cpu_ranges([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"

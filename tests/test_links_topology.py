"""Expected peak of each PCIe link and GPU pair (envdoctor/links/analysis_topo.py) from the facts and data/links.toml."""

from __future__ import annotations

from envdoctor.links import probe as links
from envdoctor.links.analysis_topo import expected
from envdoctor.links.table import load_links
from tests.linkmachines import bridged_quad, context, nv4_bridge, nvswitch, pcie_pair
from tests.machines import h200


def test_h200_pcie_peak_and_no_path(tmp_path):
    top = expected(links.probe(h200(tmp_path)), load_links())
    (g,) = top.gpus
    assert (g.gen, g.width, g.gbps, g.idle_low) == (5, 16, 63.02, False)
    assert g.basis == "Gen5 x16 (the most this GPU and slot allow)" and top.paths == ()
    assert top.bottleneck([0]) is None


def test_nvswitch_pairs_get_the_full_nvlink_rate(tmp_path):
    top = expected(links.probe(context(tmp_path, nvswitch(8), 8)), load_links())
    assert len(top.paths) == 28 and {p.gbps for p in top.paths} == {450.0}
    assert top.path(6, 1).basis == "18 NVLink 4.0 links x 25 GB/s through NVSwitch" and top.path(6, 1).confirmed
    assert top.bottleneck(range(8)).gbps == 450.0


def test_pcie_pair_and_nv4_bridge(tmp_path):
    pcie = expected(links.probe(context(tmp_path / "a", pcie_pair(), 2, gen=4)), load_links())
    assert (pcie.path(0, 1).kind, pcie.path(0, 1).gbps) == ("pcie", 31.51)
    bridge = expected(links.probe(context(tmp_path / "b", nv4_bridge(), 2, gen=4)), load_links())
    p = bridge.path(0, 1)
    assert (p.path, p.gbps, p.confirmed) == ("NV4", 56.25, False)  # the GA10x per-link rate is unconfirmed


def test_bridged_pairs_are_held_to_pcie_across_sockets(tmp_path):
    top = expected(links.probe(context(tmp_path, bridged_quad(), 4, gen=4)), load_links())
    assert top.path(0, 1).gbps == 300.0 and top.path(2, 3).gbps == 300.0
    assert top.path(1, 2).gbps == 31.51 and top.path(1, 2).basis.endswith("crosses the CPU interconnect")
    assert top.bottleneck([0, 1]).gbps == 300.0 and top.bottleneck(range(4)).gbps == 31.51


def test_an_idle_gen1_link_counts_at_the_generation_it_trains_at(tmp_path):
    nv = pcie_pair()
    nv.set(0, "nvmlDeviceGetCurrPcieLinkGeneration", 1)
    top = expected(links.probe(context(tmp_path, nv, 2, gen=4)), load_links())
    g = top.pcie(0)
    assert (g.gen, g.gbps, g.idle_low) == (4, 31.51, True)

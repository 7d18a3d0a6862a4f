"""``envdoctor topo`` through Click, the topo renderers on realistic NVML answers, and the links section
of ``envdoctor check``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from envdoctor import checks
from envdoctor.cli import cli
from envdoctor.findings import Finding
from envdoctor.links import probe as links
from envdoctor.links.analysis_topo import expected
from envdoctor.links.render_topo import render_topo_text, topo_document
from envdoctor.links.rules_topo import RULES
from envdoctor.links.table import load_links
from envdoctor.table import load_table
from tests.fakes import FakeBin, recorded
from tests.linkmachines import context, nv4_bridge, nvswitch, pci_tree
from tests.machines import SMI_QUERY_ARGS, h200, write_tree

SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/topo-1.json").read_text())
H200_QUERY_HEAD = recorded("h200-driver580-cuda13", "nvidia-smi-query-nounits.txt").splitlines()[0]


def _eight_h200_root(tmp_path, topo=None):
    files, symlinks = pci_tree(8)
    root = write_tree(tmp_path / "root", files, symlinks)
    query = (
        "\n".join(
            [H200_QUERY_HEAD]
            + [
                f"{i}, NVIDIA H200, GPU-00000000-0000-0000-0000-0000000000{i:02d}, 580.159.04, 9.0, 143771, "
                f"00000000:{0x18 + 0x10 * i:02X}:00.0, 16539240423{i:02d}, 700.00, 1980"
                for i in range(8)
            ]
        )
        + "\n"
    )
    bin = FakeBin(tmp_path)
    topo = topo or recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt")
    bin.add("nvidia-smi", by_args={"topo -m": (topo, "", 0), SMI_QUERY_ARGS: (query, "", 0)})
    return root, bin.env(hermetic=True)


def _topo(root, env, *args):
    return CliRunner().invoke(cli, ["topo", "--root", str(root), *args], env=env, catch_exceptions=False)


def test_topo_on_the_h200(tmp_path):
    ctx = h200(tmp_path)
    r = _topo(ctx.root, dict(ctx.env))
    assert r.exit_code == 0, r.output
    assert "one GPU: nothing links it to another GPU here" in r.output
    assert "GPU 0  NVIDIA H200  00000000:00:06.0" in r.output and "node 0 (nvidia-smi topo -m), CPUs 0-15" in r.output
    doc = json.loads(_topo(ctx.root, dict(ctx.env), "--json").output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema"] == "envdoctor.topo/1" and doc["source"] == "nvidia-smi topo -m" and doc["pairs"] == []
    assert doc["gpus"][0]["numa_node"] == 0 and doc["summary"]["exit_code"] == 0


def test_topo_of_eight_gpus_from_nvidia_smi_when_nvml_is_missing(tmp_path):
    root, env = _eight_h200_root(tmp_path)
    r = _topo(root, env)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[3].split() == [
        "GPU1",
        "NV18",
        "450",
        "X",
        "NV18",
        "450",
        "NV18",
        "450",
        "NV18",
        "450",
        "NV18",
        "450",
        "NV18",
        "450",
        "NV18",
        "450",
        "0-55,112-167",
        "0",
    ]
    assert "NV18   450 GB/s  18 NVLink 4.0 links x 25 GB/s" in r.output
    assert "ED851" not in r.output and "Verdict: no problems found." in r.output
    doc = json.loads(_topo(root, env, "--json").output)
    jsonschema.validate(doc, SCHEMA)
    assert len(doc["pairs"]) == 28 and doc["pairs"][0]["peak"] == {
        "kind": "nvlink",
        "gbps": 450.0,
        "basis": "18 NVLink 4.0 links x 25 GB/s",
        "confirmed": True,
    }
    assert doc["gpus"][3]["pcie_peak"]["gbps"] == 63.02 and doc["gpus"][3]["name"] == "NVIDIA H200"


def _with_cells(text, changes):
    """The matrix with the cells between GPU pairs changed: {(0, 1): "NV12"} sets both directions."""
    lines = text.splitlines(keepends=True)
    for (a, b), cell in changes.items():
        for row, col in ((a, b), (b, a)):
            i = next(n for n, line in enumerate(lines) if line.startswith(f"GPU{row}\t"))
            cells = lines[i].split("\t")
            cells[1 + col] = cell
            lines[i] = "\t".join(cells)
    return "".join(lines)


def test_topo_fallback_flags_nv12_and_sys_pairs_on_a_box_whose_gpus_should_have_nv18(tmp_path):
    """nvidia-smi topo -m (no NVML) with NV12 and SYS between H200s (18 NVLinks each): an error, exit 1."""
    text = _with_cells(recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"), {(0, 1): "NV12", (2, 5): "SYS"})
    root, env = _eight_h200_root(tmp_path, text)
    r = _topo(root, env)
    assert r.exit_code == 1, r.output
    assert "ED848 error: 2 GPU pair(s) have fewer NVLinks than NVIDIA H200 has (18)" in r.output
    assert "GPU 0 <-> GPU 1: NV12" in r.output and "GPU 2 <-> GPU 5: SYS" in r.output
    doc = json.loads(_topo(root, env, "--json").output)
    assert doc["summary"]["exit_code"] == 1 and [f["code"] for f in doc["findings"]] == ["ED848", "ED851"]


def test_topo_fallback_keeps_the_nic_rows_and_their_gpu_affinity(tmp_path):
    root, env = _eight_h200_root(tmp_path)
    r = _topo(root, env)
    assert "NIC0  mlx5_0  PIX: GPU 0; NODE: GPU 1, 2, 3; SYS: GPU 4, 5, 6, 7" in r.output, r.output
    doc = json.loads(_topo(root, env, "--json").output)
    jsonschema.validate(doc, SCHEMA)
    nic = doc["nics"][4]
    assert nic == {
        "name": "NIC4",
        "device": "mlx5_4",
        "nearest_gpus": [4],
        "paths": {"0": "SYS", "1": "SYS", "2": "SYS", "3": "SYS", "4": "PIX", "5": "NODE", "6": "NODE", "7": "NODE"},
    }


def test_nvml_facts_keep_the_nics_of_nvidia_smi_topo(tmp_path):
    """NVML lists no NICs: the probe adds them from nvidia-smi topo -m where it runs."""
    from envdoctor.probes.context import Context

    files, symlinks = pci_tree(8)
    files.update({f"/sys/class/infiniband/mlx5_{i}/fw_ver": "28.39.1002\n" for i in range(8)})  # its 8 NICs
    root = write_tree(tmp_path / "root", files, symlinks)
    bin = FakeBin(tmp_path)
    bin.add("nvidia-smi", by_args={"topo -m": (recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"), "", 0)})
    lf = links.probe(Context(root=root, env=bin.env(hermetic=True), timeout=5.0, nvml=nvswitch(8)))
    assert lf.source == "nvml" and len(lf.nics) == 8
    assert (lf.nics[5].device, lf.nics[5].paths[5], lf.nics[5].nearest_gpus) == ("mlx5_5", "PIX", (5,))


def test_without_an_rdma_device_nvidia_smi_topo_is_not_run_for_nics(tmp_path):
    """NVML answered and sysfs lists no InfiniBand/RoCE device: topo -m would list no NIC, so the
    probe does not start nvidia-smi (a second NVML start) to ask."""
    from envdoctor.probes.context import Context

    files, symlinks = pci_tree(8)
    root = write_tree(tmp_path / "root", files, symlinks)
    bin = FakeBin(tmp_path)
    ran = tmp_path / "nvidia-smi-ran"
    bin.add_script(
        "nvidia-smi",
        f'echo "$*" >> {ran}\ncat {bin._store(recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"))}',
    )
    lf = links.probe(Context(root=root, env=bin.env(hermetic=True), timeout=5.0, nvml=nvswitch(8)))
    assert lf.source == "nvml" and len(lf.gpus) == 8 and lf.nics == ()
    assert not ran.exists()


def test_check_shows_each_nic_with_its_nearest_gpus(tmp_path):
    from envdoctor.facts import Facts
    from envdoctor.links.render_topo import links_rows

    root, env = _eight_h200_root(tmp_path)
    from envdoctor.probes.context import Context

    lf = links.probe(Context(root=root, env=env, timeout=5.0))
    rows = dict(links_rows(Facts(links=lf)))
    assert rows["NIC3 mlx5_3"] == "nearest GPU 3 (PIX)"


def test_topo_fallback_of_the_older_driver_names_nics_by_their_device(tmp_path):
    from envdoctor.parse.nvidia_topo import parse_topo
    from envdoctor.probes.context import Context

    lf = links.from_topo(
        Context(root=tmp_path, env={}, timeout=1.0),
        parse_topo(recorded("public-nvidia-smi-topo", "hgx-a100-4gpu-nv4.txt")),
    )
    assert [(n.name, n.device, n.nearest_gpus) for n in lf.nics] == [
        ("mlx5_0", "mlx5_0", (3,)),
        ("mlx5_1", "mlx5_1", (1,)),
    ]


def test_topo_on_a_machine_without_a_gpu_exits_2_as_diag_does(tmp_path):
    """qa2: nothing to look at is a run that could not start (2, one line), not a problem found (1)."""
    r = _topo(tmp_path, FakeBin(tmp_path).env(hermetic=True))
    assert r.exit_code == 2
    assert r.output.startswith("GPU links: no NVIDIA GPU found")
    assert r.stderr.splitlines()[-1].startswith("envdoctor topo: no GPU on this machine: ")
    assert r.stderr.splitlines()[-1].endswith("; run topo on a node with an NVIDIA GPU")
    doc = json.loads(_topo(tmp_path, FakeBin(tmp_path).env(hermetic=True), "--json").stdout)
    assert doc["summary"]["exit_code"] == 2


def test_topo_with_a_gpu_on_the_pci_bus_that_cannot_be_read_exits_1(tmp_path):
    from tests.machines import h200_pci

    write_tree(tmp_path, h200_pci())
    r = _topo(tmp_path, FakeBin(tmp_path).env(hermetic=True))
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines()[-1].startswith("envdoctor topo: 1 NVIDIA GPU(s) on the PCI bus, none could be read")


def _render(tmp_path, nv, gpus, **tree):
    lf = links.probe(context(tmp_path, nv, gpus, **tree))
    findings = checks.run(RULES, _facts(lf), load_table())
    return lf, render_topo_text(lf, expected(lf, load_links()), findings)


def _facts(lf):
    from envdoctor.facts import Facts

    return Facts(links=lf)


def test_text_of_an_nvswitch_node_with_a_link_down(tmp_path):
    nv = nvswitch(4)
    nv.links(1, 18, 6, None, 2, down=(7,))
    _, text = _render(tmp_path, nv, 4)
    assert "GPU0  X         NV17 425  NV18 450  NV18 450" in text
    assert "NV17   425 GB/s  17 NVLink 4.0 links x 25 GB/s through NVSwitch" in text
    assert "NVLink  17/18 active, NVLink 4.0, to switch" in text
    assert "Modes   ECC on, MIG off, persistence on, fabric completed" in text
    assert "ED845 error: GPU 1: 1 of 18 NVLinks are down" in text


def test_text_of_an_nv4_bridge_pair_marks_the_unconfirmed_rate(tmp_path):
    _, text = _render(tmp_path, nv4_bridge(), 2, gen=4)
    assert "NV4     56 GB/s  4 NVLink 3.1 links x 14.0625 GB/s  (rate unconfirmed)" in text
    assert "NVLink  4/4 active, NVLink 3.1, to GPU 1" in text


def test_an_idle_link_is_explained_not_flagged(tmp_path):
    nv = nv4_bridge()
    nv.set(0, "nvmlDeviceGetCurrPcieLinkGeneration", 1)
    _, text = _render(tmp_path, nv, 2, gen=4)
    assert "the current link is lower because the GPU is idle (power saving), not a fault" in text
    assert "Verdict: no problems found." in text


def test_document_keys(tmp_path):
    lf = links.probe(context(tmp_path, nvswitch(2), 2))
    doc = topo_document(lf, expected(lf, load_links()), [], envdoctor_version="0", created_at="now")
    jsonschema.validate(json.loads(json.dumps(doc)), SCHEMA)
    assert set(doc) == {
        "schema",
        "envdoctor_version",
        "created_at",
        "source",
        "error",
        "gpus",
        "pairs",
        "nics",
        "findings",
        "summary",
    }
    assert {
        "index",
        "name",
        "bus_id",
        "pcie",
        "pcie_peak",
        "numa_node",
        "cpu_affinity",
        "nvlinks",
        "active_nvlinks",
        "fabric_state",
        "mig_mode",
        "ecc_mode",
        "persistence_mode",
    } <= set(doc["gpus"][0])
    assert {
        "a",
        "b",
        "path",
        "pcie_path",
        "nvlinks",
        "nvlink_via",
        "p2p_read",
        "p2p_write",
        "p2p_nvlink",
        "peak",
    } <= set(doc["pairs"][0])


def test_check_shows_the_links_section(tmp_path):
    ctx = h200(tmp_path)
    r = CliRunner().invoke(
        cli,
        [
            "check",
            "--root",
            str(ctx.root),
            "--skip",
            "torch",
            "--skip",
            "conda",
            "--skip",
            "docker",
            "--skip",
            "toolkits",
        ],
        env=dict(ctx.env),
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "GPU links GPU 0 PCIe not reported" in out
    assert "GPU 0 host NUMA node 0, CPUs 0-15" in out and "Source nvidia-smi topo -m" in out


def test_a_4_gpu_a100_mesh_with_nv4_between_each_pair_is_healthy_not_ed848(tmp_path):
    """HGX A100 4-GPU: no NVSwitch, 12 links each spread NV4 to three peers (ALCF Polaris' topo -m)."""
    from envdoctor.facts import Facts
    from envdoctor.facts.gpu import GpuInfo
    from envdoctor.parse.nvidia_topo import parse_topo
    from envdoctor.probes.context import Context

    m = parse_topo(recorded("public-nvidia-smi-topo", "hgx-a100-4gpu-nv4.txt"))
    names = tuple(GpuInfo(i, "NVIDIA A100-SXM4-40GB", f"GPU-{i}", source="nvidia-smi") for i in range(4))
    lf = links.from_topo(Context(root=tmp_path, env={}, timeout=1.0), m, names)
    codes = [f.code for f in checks.run(RULES, Facts(links=lf), load_table())]
    assert "ED848" not in codes
    degraded = parse_topo(_with_cells(recorded("public-nvidia-smi-topo", "hgx-a100-4gpu-nv4.txt"), {(0, 1): "SYS"}))
    lf = links.from_topo(Context(root=tmp_path, env={}, timeout=1.0), degraded, names)
    (f,) = [f for f in checks.run(RULES, Facts(links=lf), load_table()) if f.code == "ED848"]
    assert f.title == "GPU 0, 1 reach(es) fewer NVLinks than NVIDIA A100-SXM4-40GB has (12)"
    assert f.evidence[0] == "GPU 0 <-> GPU 1: SYS (nvidia-smi topo -m)"
    assert "each GPU's pairs add up to GPU 0: 8, GPU 1: 8, GPU 2: 12, GPU 3: 12" in f.evidence[-1]


def test_topo_takes_suppress_as_check_does(tmp_path):
    # --suppress was check's alone; topo ran its rules without the one runner (a crash was exit 3)
    text = _with_cells(recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"), {(0, 1): "NV12", (2, 5): "SYS"})
    root, env = _eight_h200_root(tmp_path, text)
    r = _topo(root, env, "--suppress", "ed848")
    assert r.exit_code == 0, r.output  # ED851 is a warning; the error is hidden knowingly
    assert "ED848 error" not in r.output and "suppressed (--suppress): ED848 (error)" in r.output
    doc = json.loads(_topo(root, env, "--json", "--suppress", "ED848").output)
    assert doc["summary"]["exit_code"] == 0 and [f["code"] for f in doc["findings"]] == ["ED851"]
    bad = CliRunner().invoke(cli, ["topo", "--root", str(root), "--suppress", "ED9999"], env=env)
    assert bad.exit_code == 2 and "finding codes look like ED305" in bad.output


def test_one_runner_turns_a_crashing_rule_into_one_ed900_naming_it():
    from envdoctor.checks import run_rules

    def fine(x):
        return [Finding("ED840", "warning", "t", area="links")]

    def broken(x):
        raise KeyError("gpus")

    found = run_rules((broken, fine), None)
    assert [f.code for f in found] == ["ED900", "ED840"] and "broken: KeyError" in found[0].title

"""The ``nvidia-smi topo -m`` parser on the H200's recording and on multi-GPU texts rebuilt from public
outputs (tests/fixtures/public-nvidia-smi-topo/README.md says where each shape comes from)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.parse.nvidia_topo import TopoParseError, parse_topo
from tests.fakes import recorded

PUBLIC = "public-nvidia-smi-topo"


def test_h200_one_gpu_with_the_underlined_header():
    m = parse_topo(recorded("h200-driver580-cuda13", "nvidia-smi-topo.txt"))
    assert m.devices == ("GPU0",) and m.gpus == ("GPU0",)
    row = m.rows["GPU0"]
    assert row.cells == {"GPU0": "X"}
    assert (row.cpu_affinity, row.numa_affinity, row.gpu_numa_id) == ("0-15", "0", None)
    assert m.legend["NV#"] == "Connection traversing a bonded set of # NVLinks"
    assert set(m.legend) == {"X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#"}


def test_pcie_pair():
    m = parse_topo(recorded(PUBLIC, "pcie-pair-phb.txt"))
    assert m.link("GPU0", "GPU1") == m.link("GPU1", "GPU0") == "PHB"
    assert m.nvlinks("GPU0", "GPU1") == 0
    assert m.rows["GPU1"].cpu_affinity == "0-15" and m.rows["GPU1"].numa_affinity == "0"


def test_nv4_bridge_pair():
    m = parse_topo(recorded(PUBLIC, "nv4-bridge-pair.txt"))
    assert m.link("GPU0", "GPU1") == "NV4" and m.nvlinks("GPU1", "GPU0") == 4
    assert m.rows["GPU0"].cpu_affinity == "0-23"


def test_eight_gpus_on_nvswitch_with_nics():
    m = parse_topo(recorded(PUBLIC, "nvswitch-8gpu-nv18.txt"))
    assert m.gpus == tuple(f"GPU{i}" for i in range(8))
    assert len(m.devices) == 16 and m.nics["NIC7"] == "mlx5_7"
    assert {m.link(f"GPU{a}", f"GPU{b}") for a in range(8) for b in range(8) if a != b} == {"NV18"}
    assert m.link("GPU3", "NIC3") == "PIX" and m.link("GPU3", "NIC4") == "SYS"
    assert m.rows["GPU5"].cpu_affinity == "56-111,168-223" and m.rows["GPU5"].numa_affinity == "1"
    assert m.rows["NIC0"].cpu_affinity is None and m.rows["NIC0"].cells["NIC0"] == "X"


def test_older_driver_with_mlx5_columns_and_no_gpu_numa_id():
    m = parse_topo(recorded(PUBLIC, "hgx-a100-4gpu-nv4.txt"))
    assert m.gpus == ("GPU0", "GPU1", "GPU2", "GPU3") and "mlx5_1" in m.devices
    assert m.nvlinks("GPU0", "GPU3") == 4 and m.link("GPU3", "mlx5_0") == "PHB"
    assert (m.rows["GPU2"].cpu_affinity, m.rows["GPU2"].numa_affinity) == ("8-15,40-47", "1")
    assert m.rows["mlx5_0"].numa_affinity is None


def test_numa_affinity_na_padded_with_an_extra_tab():
    """nvidia-smi printed "0-7,16-23\\t\\tN/A\\t\\tN/A" for a GPU without a NUMA node (club-3090#178)."""
    m = parse_topo(recorded(PUBLIC, "pcie-pair-sys-numa-na.txt"))
    assert (m.rows["GPU0"].cpu_affinity, m.rows["GPU0"].numa_affinity) == ("0-7,16-23", None)
    assert (m.rows["GPU1"].cpu_affinity, m.rows["GPU1"].numa_affinity) == ("8-15,24-31", "1")


def test_an_empty_cpu_affinity_cell_does_not_shift_the_numa_node():
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV4\t0\t0\t\tN/A\n"
        "GPU1\tNV4\t X \t\t1\t\tN/A\n"
    )
    m = parse_topo(text)
    assert (m.rows["GPU1"].cpu_affinity, m.rows["GPU1"].numa_affinity) == (None, "1")


def test_text_copied_with_spaces_instead_of_tabs():
    text = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
        "GPU0     X      NODE    0-15    0               N/A\n"
        "GPU1    NODE     X      0-15    0               N/A\n"
    )
    m = parse_topo(text)
    assert m.link("GPU0", "GPU1") == "NODE" and m.rows["GPU1"].numa_affinity == "0"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "No devices were found\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "\tGPU0\tCPU Affinity\n",
        "\tGPU0\tGPU1\nGPU0\t X \tWAT\n",
    ],
)
def test_not_a_matrix_is_a_parse_error(text):
    with pytest.raises(TopoParseError):
        parse_topo(text)


_LINK = st.sampled_from(["NV4", "NV12", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=1, max_value=8), data=st.data(), tabs=st.booleans())
def test_any_symmetric_matrix_reads_back(n, data, tabs):
    links = {}
    for a in range(n):
        for b in range(a + 1, n):
            links[(a, b)] = links[(b, a)] = data.draw(_LINK)
    sep = "\t" if tabs else "    "
    lines = [sep + sep.join(f"GPU{i}" for i in range(n)) + sep + "CPU Affinity" + sep + "NUMA Affinity"]
    for a in range(n):
        cells = [" X " if a == b else links[(a, b)] for b in range(n)]
        lines.append(f"GPU{a}" + sep + sep.join(cells) + sep + f"{a * 8}-{a * 8 + 7}" + sep + str(a % 2))
    m = parse_topo("\n".join(lines) + "\n")
    assert m.gpus == tuple(f"GPU{i}" for i in range(n))
    for (a, b), cell in links.items():
        assert m.link(f"GPU{a}", f"GPU{b}") == cell
    assert all(m.rows[f"GPU{a}"].numa_affinity == str(a % 2) for a in range(n))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("GPU0123 \tXNV8PIXSY\n-,")), max_size=200))
def test_garbage_never_raises_anything_but_a_parse_error(text):
    try:
        parse_topo(text)
    except TopoParseError:
        pass


def test_a_header_with_every_column_glued_reads_as_the_usual_matrix():
    """A newer nvidia-smi printed ``GPU0GPU1NIC0...CPU AffinityNUMA AffinityGPU NUMA ID`` (no separators)."""
    m = parse_topo(recorded(PUBLIC, "glued-header-2gpu-4nic.txt"))
    assert m.devices == ("GPU0", "GPU1", "NIC0", "NIC1", "NIC2", "NIC3")
    assert m.link("GPU0", "GPU1") == "SYS" and m.link("GPU1", "NIC2") == "PHB"
    assert (m.rows["GPU1"].cpu_affinity, m.rows["GPU1"].numa_affinity, m.rows["GPU1"].gpu_numa_id) == (
        "14-27,42-55",
        "1",
        None,
    )
    assert m.nics["NIC3"] == "rocep137s0f1" and m.rows["NIC0"].cpu_affinity is None


def test_only_the_affinity_columns_glued_is_no_internal_error():
    """``NUMA AffinityGPU NUMA ID`` between tab-separated GPU columns used to raise ValueError (exit 3)."""
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA AffinityGPU NUMA ID\nGPU0\t X \tNV4\t0-23\t0\t\tN/A\n"
        "GPU1\tNV4\t X \t0-23\t0\t\tN/A\n"
    )
    m = parse_topo(text)
    assert m.nvlinks("GPU0", "GPU1") == 4 and m.rows["GPU1"].numa_affinity == "0"

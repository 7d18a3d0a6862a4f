"""The real ``data/`` of the checkout: it loads, every row is sourced and dated, and a new release
or GPU is one row that the lookups see.

This is the one module that reads ``data/`` itself; every other test reads the frozen copy in
``tests/tables/`` (``ENVDOCTOR_DATA``, set in conftest.py), so rows added here change no test.
"""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

import pytest

from envdoctor.facts import DriverFacts, Facts, GpuInfo
from envdoctor.gpus import machine_gpus
from envdoctor.table import Table, load_table
from tests.tables import REAL

#: A confirmed torch release newer than any in data/ (its version is filled in), with its variants.
NEW_TORCH = """
[[release]]
version = "{version}"
pythons = ["3.11", "3.12", "3.13", "3.14"]
pypi_default = "cu130"
manylinux = "manylinux_2_28"
glibc = "2.28"
conda = "conda-forge"
source = "tests/test_data.py"
checked = "2026-12-01"
patches = [{{ version = "{version}", torchvision = "0.99.0" }}]

[[release.variant]]
name = "cpu"
platforms = ["linux_x86_64"]

[[release.variant]]
name = "cu130"
arch_list = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
platforms = ["linux_x86_64"]
"""

#: A GPU model no row names (its PCI id is outside every chip family of data/gpus.toml).
NEW_GPU = """
[[gpu]]
name = "NVIDIA Testing Board T9"
aliases = ["Testing Board T9", "T9"]
pci_ids = ["0x0f9f"]
cc = "12.0"
memory_gib = 48.0
fp16_half_rate_accum = false
source = "tests/test_data.py"
checked = "2026-12-01"
"""


@pytest.fixture(scope="module")
def real() -> Table:
    return load_table(REAL)


def test_the_real_data_loads_and_is_not_the_frozen_copy(real):
    assert real.directory == REAL and load_table().directory != REAL


def test_every_row_has_a_source_and_a_date_not_in_the_future(real):
    today = datetime.date.today().isoformat()
    rows = (
        real.cuda_releases
        + real.minor_compats
        + real.driver_branches
        + real.architectures
        + real.gpus
        + real.chip_families
        + real.gpu_series
        + real.torch_releases
        + real.variants
        + real.ngc_releases
        + real.distros
        + real.mirrors
    )
    for row in rows:
        assert row.source and re.match(r"^\d{4}-\d{2}(-\d{2})?$", row.checked), row
        assert row.checked <= today, row


def test_every_architecture_says_which_kernel_modules_drive_it(real):
    for arch in real.architectures:
        assert arch.kernel_modules in ("proprietary", "either", "open") and arch.kernel_modules_source, arch.cc


def _grown(tmp_path: Path, real: Table) -> Path:
    newest = real.torch_releases[-1].version  # sorted by version
    major, minor = (int(x) for x in newest.split(".")[:2])
    version = f"{major}.{minor + 1}.0"
    copy = tmp_path / "data"
    shutil.copytree(REAL, copy)
    for name, text in (("torch.toml", NEW_TORCH.format(version=version)), ("gpus.toml", NEW_GPU)):
        (copy / name).write_text((copy / name).read_text() + text)
    return copy


def test_a_new_release_and_a_new_gpu_are_one_row_each(tmp_path, real):
    grown = load_table(_grown(tmp_path, real))
    new = grown.torch_releases[-1]
    assert new.version not in {r.version for r in real.torch_releases}
    assert grown.torch(new.minor) is new and grown.newest_torch() is new
    assert grown.newest_torch(python="3.14", variant="cu130") is new
    assert new.variant("cu130").cuda == "13.0" and new.torchvision == "0.99.0"
    assert grown.variant("cu130").index_url == "https://download.pytorch.org/whl/cu130"

    gpu = grown.gpu("Testing Board T9")
    assert gpu is not None and gpu is grown.gpu_by_pci("10de:0f9f") and gpu.cc == "12.0"
    assert grown.arch_for_pci("0x0f9f").name == "Blackwell"
    facts = Facts(driver=DriverFacts(gpus=(GpuInfo(0, "NVIDIA Testing Board T9", source="nvidia-smi"),)))
    (machine,) = machine_gpus(facts, grown)
    assert (machine.cc, machine.cc_source) == ("12.0", "envdoctor table")


def test_every_distribution_names_its_kernel_headers_and_the_key_dkms_signs_with(real):
    """What ED101 prints when the module does not load, or Secure Boot refuses it (dkms's prepare_mok)."""
    for d in real.distros:
        assert d.kernel_headers and d.kernel_headers_source and d.kernel_headers_checked, d.repo_dir
        assert d.dkms_mok and d.dkms_mok_source and d.dkms_mok_checked, d.repo_dir
    assert real.distro("ubuntu", "24.04").mok_enroll() == "update-secureboot-policy --enroll-key"
    assert real.distro("ubuntu", "22.04").dkms_mok == "/var/lib/shim-signed/mok/MOK.der"
    assert real.distro("debian", "12").mok_enroll() == "mokutil --import /var/lib/dkms/mok.pub"
    assert real.distro("rhel", "9").dkms_mok == "/var/lib/dkms/mok.pub"
    assert real.distro("debian", "13").kernel_headers == "linux-headers-$(uname -r)"


# --- cards still common in labs and old clouds (issue 12) ------------------------------------------


@pytest.mark.parametrize(
    "name, pci, cc, memory",
    [
        ("Tesla K80", "0x102d", "3.7", 12.0),  # one of the board's two GPUs
        ("Tesla K40m", "10de:1024", "3.5", 12.0),  # the K40c's id finds the K40 row
        ("Tesla M40", "0x17fd", "5.2", 12.0),
        ("Tesla M60", "0x13f2", "5.2", 8.0),
        ("Tesla P4", "0x1bb3", "6.1", 8.0),
        ("Tesla P40", "0x1b38", "6.1", 24.0),
        ("NVIDIA GeForce GTX 1050 Ti", "0x1c82", "6.1", 4.0),
        ("NVIDIA GeForce GTX 1070 Ti", "0x1b82", "6.1", 8.0),
        ("Quadro P4000", "0x1bb1", "6.1", 8.0),
        ("Quadro RTX 6000", "0x1e36", "7.5", 24.0),
        ("Quadro GV100", "0x1dba", "7.0", 32.0),
        ("NVIDIA TITAN Xp", "0x1b02", "6.1", 12.0),
        ("NVIDIA TITAN RTX", "0x1e02", "7.5", 24.0),
        ("NVIDIA RTX A2000 12GB", "0x2571", "8.6", 12.0),
        ("NVIDIA RTX A4500", "0x2232", "8.6", 20.0),
    ],
)
def test_old_lab_and_cloud_cards_are_known_by_name_and_pci_id(real, name, pci, cc, memory):
    by_name, by_pci = real.gpu(name), real.gpu_by_pci(pci)
    assert by_name is not None and by_name is by_pci
    assert (by_name.cc, by_name.memory_gib) == (cc, memory)
    assert by_name.pci_source and by_name.source


def test_old_cards_answer_to_the_short_names_people_type(real):
    assert real.gpu("K80").name == "Tesla K80" and real.gpu("P40").name == "Tesla P40"
    assert real.gpu("Tesla K40c").name == "Tesla K40m"  # NVML names the boards differently
    assert real.gpu("M40 24GB").memory_gib == 24.0 and real.gpu("M40").memory_gib == 12.0
    assert real.gpu("Quadro RTX 8000").memory_gib == 48.0


def test_figures_not_read_in_an_nvidia_document_are_marked(real):
    k80 = real.gpu("K80")
    assert {"memory_gib", "bandwidth_gbs", "fp32_tflops"} <= set(k80.unconfirmed_fields)
    assert k80.is_datacenter() is None  # a Tesla, but no NVIDIA list read says so
    assert real.gpu("P40").is_datacenter() is True


def test_a_pci_id_two_quadro_models_share_maps_to_no_model_but_to_turing(real):
    """0x1e30 is "Quadro RTX 6000/8000" in pci.ids: no row claims it, the chip family gives 7.5."""
    assert real.gpu_by_pci("0x1e30") is None
    assert real.arch_for_pci("0x1e30").cc == "7.5"
    assert real.arch_for_pci("0x1180").name == "Kepler"  # a GK104 no model row names


def test_k80_through_an_old_nvidia_smi_gets_its_capability_from_the_table(real):
    """R470 (the last branch for Kepler) predates nvidia-smi's compute_cap: the name finds sm_37."""
    facts = Facts(
        driver=DriverFacts(
            driver_version="470.256.02",
            gpus=(GpuInfo(0, "Tesla K80", source="nvidia-smi"), GpuInfo(1, "Tesla K80", source="nvidia-smi")),
        )
    )
    assert [(g.cc, g.cc_source) for g in machine_gpus(facts, real)] == [("3.7", "envdoctor table")] * 2


def test_a_k80_with_torch_2_8_has_no_kernels_for_sm_37(real):
    from envdoctor.facts import TargetPython, TorchFacts
    from envdoctor.rules.torch import RULES

    arch = real.torch("2.8.0").variant("cu126").arch_list
    torch = TorchFacts(installed=True, version="2.8.0+cu126", cuda="12.6", arch_list=arch, cuda_available=True)
    facts = Facts(
        torch=torch,
        python=TargetPython(executable="/opt/venv/bin/python", version="3.12.3", pip="24.0", platform="linux_x86_64"),
        driver=DriverFacts(
            driver_version="470.256.02", driver_cuda="11.4", gpus=(GpuInfo(0, "Tesla K80", source="nvidia-smi"),)
        ),
    )
    found = [f for rule in RULES for f in rule(facts, real) if f.code == "ED206"]
    assert len(found) == 1
    assert found[0].title == "torch 2.8.0+cu126 has no kernels for compute capability 3.7"
    assert found[0].evidence[0].startswith("GPU 0 (Tesla K80): compute capability 3.7")


def test_a_new_gpus_optional_rows_join_on_its_gpus_toml_name(tmp_path, real):
    """docs/data.md, "Add a GPU": one gpus.toml row, plus optional health.toml and links.toml rows
    keyed by the same name (compared as every table compares names), seen by burn's and topo's tables."""
    from envdoctor.links.table import load as load_links
    from envdoctor.table.health import load_health

    copy = _grown(tmp_path, real)
    (copy / "health.toml").write_text(
        (copy / "health.toml").read_text()
        + """
[[expected]]
gpu = "NVIDIA Testing Board T9"
dtype = "bf16"
n = 8192
sustained_tflops = 300.0
power_limit_w = 350.0
source = "tests/test_data.py"
checked = "2026-12-01"
"""
    )
    (copy / "links.toml").write_text(
        (copy / "links.toml").read_text()
        + """
[[gpu]]
name = "NVIDIA Testing Board T9"
nvlink_links = 0
nvlink_form = "none"
pcie_gen = 5
pcie_width = 16
source = "tests/test_data.py"
checked = "2026-12-01"
"""
    )
    grown = load_table(copy)
    gpu = grown.gpu("T9")
    assert gpu is not None and gpu.name == "NVIDIA Testing Board T9"
    rate = load_health(copy).expected("nvidia testing board t9", "bf16", 8192)
    assert rate is not None and (rate.sustained_tflops, rate.confirmed()) == (300.0, True)
    spec = load_links(copy / "links.toml").gpu(gpu.name)
    assert spec is not None and (spec.pcie_gen, spec.nvlink_form, spec.confirmed()) == (5, "none", True)
    assert load_links(REAL / "links.toml").gpu(gpu.name) is None

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
NEW_TORCH = '''
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
'''

#: A GPU model no row names (its PCI id is outside every chip family of data/gpus.toml).
NEW_GPU = '''
[[gpu]]
name = "NVIDIA Testing Board T9"
aliases = ["Testing Board T9", "T9"]
pci_ids = ["0x0f9f"]
cc = "12.0"
memory_gib = 48.0
fp16_half_rate_accum = false
source = "tests/test_data.py"
checked = "2026-12-01"
'''


@pytest.fixture(scope="module")
def real() -> Table:
    return load_table(REAL)


def test_the_real_data_loads_and_is_not_the_frozen_copy(real):
    assert real.directory == REAL and load_table().directory != REAL


def test_every_row_has_a_source_and_a_date_not_in_the_future(real):
    today = datetime.date.today().isoformat()
    rows = (real.cuda_releases + real.minor_compats + real.driver_branches + real.architectures + real.gpus
            + real.chip_families + real.gpu_series + real.torch_releases + real.variants + real.ngc_releases
            + real.distros + real.mirrors)
    for row in rows:
        assert row.source and re.match(r"^\d{4}-\d{2}(-\d{2})?$", row.checked), row
        assert row.checked <= today, row


def test_every_architecture_says_which_kernel_modules_drive_it(real):
    for arch in real.architectures:
        assert arch.kernel_modules in ("proprietary", "either", "open") and arch.kernel_modules_source, arch.cc


def _grown(tmp_path: Path, real: Table) -> Path:
    newest = real.torch_releases[-1].version          # sorted by version
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

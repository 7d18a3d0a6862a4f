"""The compatibility table: facts checked by hand against their public sources, and the loader's
validation, each error provoked with a broken copy of a data file.

Expected values are written out here from the sources named beside them, never computed from the
table under test.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from envdoctor.compat import kernel_support
from envdoctor.table import Table, TableError, data_directory, load_table

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def t() -> Table:
    return load_table()


# --- CUDA toolkits and drivers (NVIDIA CUDA 13.2.2 release notes, Table 3 and Table 2) ----------


@pytest.mark.parametrize(
    "cuda, linux, windows",
    [
        ("12.8", "570.26", "570.65"),  # 12.8 GA
        ("12.8.1", "570.124.06", "572.61"),  # 12.8 Update 1
        ("11.8", "520.61.05", "520.06"),
        ("10.2", "440.33", "441.22"),  # 10.2.89
        ("12.2.2", "535.104.05", "537.13"),
        ("12.6", "560.28.03", "560.76"),
        ("13.0", "580.65.06", None),  # Windows: N/A from 13.0
        ("13.2.2", "595.71.05", None),
    ],
)
def test_min_driver_per_toolkit_release(t, cuda, linux, windows):
    assert t.min_driver(cuda) == linux
    assert t.min_driver(cuda, os="windows") == windows


def test_cu128_needs_570_26_on_linux(t):
    assert t.min_driver("cu128") == "570.26"
    assert t.variant("cu128").min_driver_linux == "570.26"


def test_cuda_minor_answers_its_ga_row(t):
    assert t.cuda("11.0").version == "11.0.2"  # 11.0.1 was the RC, 11.0.2 the GA
    assert t.cuda("11.0").min_driver_linux == "450.51.05"
    assert t.cuda("12.8").kind == "ga"
    assert t.cuda("12.7") is None  # there was no CUDA 12.7
    assert t.cuda("not a version") is None
    assert t.cuda("12") is None


def test_every_update_release_is_listed(t):
    versions = {r.version for r in t.cuda_releases}
    for v in ("11.4.4", "11.5.2", "11.6.2", "12.0.1", "12.1.1", "12.3.2", "12.6.3", "12.9.1", "13.0.2", "13.1.1"):
        assert v in versions


def test_cuda_12_3_2_is_unconfirmed_table_3_has_no_row(t):
    assert not t.cuda("12.3.2").confirmed()
    assert t.cuda("12.3.1").confirmed()


def test_minor_version_compatibility_floors(t):
    assert t.minor_compat(12).min_driver_linux == "525.60.13"
    assert t.minor_compat(11).min_driver_linux == "450.80.02"
    assert t.minor_compat(11).min_driver_windows == "452.39"
    assert t.minor_compat(13).min_driver_linux.startswith("580.")
    assert any("PTX" in x for x in t.minor_compat(12).limitations)
    assert not t.minor_compat(12).confirmed("min_driver_windows")  # 527.41 vs 528.33: sources disagree


def test_cuda_releases_ascending(t):
    assert [r.version for r in t.cuda_releases][:2] == ["10.2.89", "11.0.1"]


# --- architectures (LLVM NVPTXTargetParser.def, CUDA 13.2.2 release notes 2.6.2) ----------------


def test_ampere_8_6(t):
    a = t.architecture("8.6")
    assert (a.name, a.sm, a.first_cuda, a.dropped_cuda) == ("Ampere", "sm_86", "11.1", None)
    assert a.min_driver_branch == "455"
    assert set(a.tensor_cores) >= {"fp16", "bf16", "tf32"}


def test_tensor_core_precisions(t):
    assert "fp8" in t.architecture("9.0").tensor_cores
    assert "fp8" in t.architecture("8.9").tensor_cores
    assert "fp8" not in t.architecture("8.6").tensor_cores
    assert "bf16" not in t.architecture("7.5").tensor_cores
    assert t.architecture("7.0").tensor_cores == ("fp16",)
    assert t.architecture("6.1").tensor_cores == ()
    assert "fp4" in t.architecture("12.0").tensor_cores


def test_removed_architectures(t):
    assert t.architecture("3.7").dropped_cuda == "12.0"  # Kepler sm_35/37 removed in 12.0
    assert t.architecture("6.1").dropped_cuda == "13.0"  # Pascal removed in 13.0
    assert t.architecture("6.1").last_driver_branch == "580"
    assert t.architecture("7.0").dropped_cuda == "13.0"  # Volta too
    assert t.architecture("7.5").dropped_cuda is None


def test_blackwell_first_cuda_and_driver(t):
    assert t.architecture("12.0").first_cuda == "12.8"
    assert t.architecture("10.0").min_driver_branch == "570"
    assert t.architecture("12.1").first_cuda == "12.9"


def test_architecture_accepts_sm_names_and_tuples(t):
    assert t.architecture("sm_90a").cc == "9.0"
    assert t.architecture("compute_120").cc == "12.0"
    assert t.architecture((8, 9)).name == "Ada Lovelace"
    assert t.architecture("9.9") is None


# --- GPUs (pci.ids at pciutils/pciids@c1c12547, NVIDIA whitepapers) ------------------------------


@pytest.mark.parametrize(
    "query",
    ["RTX 3090 Ti", "NVIDIA GeForce RTX 3090 Ti", "3090 Ti", "GeForce RTX 3090 Ti", "nvidia geforce rtx 3090 ti"],
)
def test_gpu_names_and_aliases(t, query):
    g = t.gpu(query)
    assert g.name == "NVIDIA GeForce RTX 3090 Ti"
    assert g.pci_ids == ("0x2203",)
    assert g.cc == "8.6"


def test_rtx_3090_is_not_the_3090_ti(t):
    assert t.gpu("RTX 3090").pci_ids == ("0x2204",)


def test_h200_matches_the_test_machine(t):
    # tests/fixtures/h200-driver580-cuda13: NVML name "NVIDIA H200", cc 9.0, 143771 MiB,
    # nvidia-smi -q "Device Id : 0x233510DE"; pci.ids: "2335  GH100 [H200 SXM 141GB]".
    g = t.gpu("NVIDIA H200")
    assert (g.cc, g.pci_ids) == ("9.0", ("0x2335",))
    assert abs(143771 / 1024 - g.memory_gib) / g.memory_gib < 0.01
    assert t.gpu_by_pci("0x233510DE") is g
    assert t.gpu_by_pci("10de:2335") is g
    assert t.gpu("GH100 [H200 SXM 141GB]") is g
    assert (g.bf16_tflops, g.tf32_tflops, g.fp32_tflops) == (989.0, 494.5, 67.0)


def test_geforce_fp16_with_fp32_accumulate_runs_at_half_rate(t):
    g = t.gpu("RTX 3090")  # GA102 whitepaper: 142 vs 71
    assert (g.fp16_fp16acc_tflops, g.fp16_tflops, g.fp16_half_rate_accum) == (142.0, 71.0, True)
    assert t.gpu("RTX 4090").fp16_tflops == 165.2  # Ada whitepaper: 330.3 / 165.2
    a100 = t.gpu("A100")
    assert (a100.fp16_tflops, a100.fp16_half_rate_accum, a100.tf32_tflops) == (312.0, False, 156.0)
    assert t.gpu("T4").fp32_nontensor_tflops == 8.1


def test_every_gpu_of_the_reference_is_present(t):
    for name in (
        "GTX 960M",
        "GTX 1080 Ti",
        "TITAN V",
        "V100",
        "V100 PCIe",
        "T4",
        "RTX 2080 Ti",
        "A100 SXM4 80GB",
        "A100 PCIe",
        "A100 PCIe 80GB",
        "A10",
        "A30",
        "A40",
        "RTX A6000",
        "RTX 3060",
        "RTX 3060 Ti",
        "RTX 3080",
        "RTX 3090",
        "RTX 4060",
        "RTX 4070",
        "RTX 4080",
        "RTX 4090",
        "L4",
        "L40S",
        "H100",
        "H100 PCIe",
        "H100 NVL",
        "H200",
        "GH200",
        "B200",
        "RTX 5080",
        "RTX 5090",
        "RTX PRO 6000",
    ):
        assert t.gpu(name) is not None, name


def test_unknown_models_map_to_their_architecture_by_device_id_range(t):
    assert t.gpu_by_pci("0x2b87") is None  # GB202 [GeForce RTX 5090 D]
    assert t.arch_for_pci("0x2b87").cc == "12.0"
    assert t.arch_for_pci("0x2705").cc == "8.9"  # AD103 [GeForce RTX 4070 Ti SUPER]
    assert t.arch_for_pci("0x20f3").cc == "8.0"  # GA100 [A800-SXM4-80GB]
    assert t.arch_for_pci("0x1e87").name == "Turing"  # TU104 [GeForce RTX 2080 Rev. A]
    assert t.arch_for_pci("0x2335").name == "Hopper"
    assert t.arch_for_pci("0x0001") is None
    assert t.arch_for_pci("not an id") is None


@pytest.mark.parametrize(
    "query, name, cc, pci",
    [
        # pci.ids at pciutils/pciids@c1c12547; compute capability from NVIDIA's CUDA GPU lists
        ("GTX 1080", "NVIDIA GeForce GTX 1080", "6.1", ("0x1b80",)),  # GP104 [GeForce GTX 1080]
        ("GTX 1070", "NVIDIA GeForce GTX 1070", "6.1", ("0x1b81",)),
        ("GTX 1060", "NVIDIA GeForce GTX 1060 6GB", "6.1", ("0x1b83", "0x1c03", "0x1c06")),
        ("GTX 1060 3GB", "NVIDIA GeForce GTX 1060 3GB", "6.1", ("0x1b84", "0x1c02")),
        ("RTX 2060", "NVIDIA GeForce RTX 2060", "7.5", ("0x1e89", "0x1f08")),
        ("RTX 2060 SUPER", "NVIDIA GeForce RTX 2060 SUPER", "7.5", ("0x1f06", "0x1f42", "0x1f47")),
        ("RTX 2070", "NVIDIA GeForce RTX 2070", "7.5", ("0x1f02", "0x1f07")),
        ("RTX 2070 SUPER", "NVIDIA GeForce RTX 2070 SUPER", "7.5", ("0x1e84", "0x1ec2", "0x1ec7")),
        ("RTX 2080", "NVIDIA GeForce RTX 2080", "7.5", ("0x1e82", "0x1e87")),
        ("RTX 2080 SUPER", "NVIDIA GeForce RTX 2080 SUPER", "7.5", ("0x1e81",)),
        ("RTX 3070", "NVIDIA GeForce RTX 3070", "8.6", ("0x2484", "0x2488")),
        ("RTX 4070 Ti", "NVIDIA GeForce RTX 4070 Ti", "8.9", ("0x2782",)),
        ("RTX A4000", "NVIDIA RTX A4000", "8.6", ("0x24b0",)),
        ("RTX A5000", "NVIDIA RTX A5000", "8.6", ("0x2231",)),
        ("P100", "Tesla P100-PCIE-16GB", "6.0", ("0x15f8",)),
        ("Tesla P100-SXM2-16GB", "Tesla P100-SXM2-16GB", "6.0", ("0x15f9",)),
        ("L40", "NVIDIA L40", "8.9", ("0x26b5",)),  # AD102GL [L40]
    ],
)
def test_common_gpus_the_review_found_missing(t, query, name, cc, pci):
    g = t.gpu(query)
    assert (g.name, g.cc, g.pci_ids) == (name, cc, pci)
    assert all(t.gpu_by_pci(p) is g for p in pci)


def test_new_rows_mark_third_party_memory_and_the_data_center_flag(t):
    assert not t.gpu("GTX 1080").confirmed("memory_gib")  # board size from third-party listings
    assert t.gpu("GTX 1060 3GB").confirmed("memory_gib")  # the size is in the name
    assert t.gpu("P100").is_datacenter() is True and t.gpu("L40").is_datacenter() is True  # GPU Operator list
    assert t.gpu("RTX A4000").is_datacenter() is None  # workstation board, like the RTX A6000
    assert t.gpu("RTX 3070").is_datacenter() is False


@pytest.mark.parametrize(
    "name, expected",
    [
        ("GeForce GTX 1050 Ti", ("6.1", "GTX 10xx")),
        ("GTX 1650", ("7.5", "GTX 16xx")),
        ("NVIDIA GeForce RTX 2060 12GB", ("7.5", "RTX 20xx")),
        ("RTX 3070 Ti Laptop GPU", ("8.6", "RTX 30xx")),
        ("RTX 4090 D", ("8.9", "RTX 40xx")),
        ("RTX 5060", ("12.0", "RTX 50xx")),
        ("RTX 2050", ("8.6", "RTX 2050 (GA107)")),
        ("RTX 3050 A Laptop GPU", ("8.9", "RTX 3050 A (AD106/AD107)")),
        ("RTX 2000 Ada Generation", None),
        ("Quadro RTX 4000", None),
        ("RTX A2000", None),
        ("GTX 980", None),
        ("RTX PRO 6000", None),
        ("H20", None),
    ],
)
def test_cc_from_a_geforce_series_name(t, name, expected):
    assert t.cc_from_name(name) == expected


def test_gpu_suggestions_for_a_typo(t):
    assert t.gpu_suggestions("GTX 1800 Ti") == ("GTX 1080 Ti",)
    assert t.gpu_suggestions("RTX 3090 Tii")[0] == "RTX 3090 Ti"
    assert t.gpu_suggestions("nothing like a gpu") == ()


# --- torch releases (pytorch build scripts, issues quoting get_arch_list()) ---------------------


def test_volta_in_cu128_of_2_8_but_not_of_2_11(t):
    # build_cuda.sh at pytorch@00c7a380: 12.8 -> "7.0;7.5;...;12.0"; #182250: 2.11.0+cu128 starts at sm_75
    assert "sm_70" in t.torch("2.8").variant("cu128").arch_list
    assert "sm_70" in t.torch("2.10").variant("cu128").arch_list
    assert "sm_70" not in t.torch("2.11").variant("cu128").arch_list
    assert "sm_70" not in t.torch("2.9").variant("cu130").arch_list


def test_cu126_has_no_sm_120_but_runs_on_8_9_through_sm_86(t):
    arch = t.torch("2.8").variant("cu126").arch_list
    assert "sm_120" not in arch and "compute_120" not in arch
    assert kernel_support(arch, "8.9").via == "sm_86"
    assert kernel_support(arch, "12.0").kind == "none"


def test_2_11_cu130_arch_list_is_what_the_h200_machine_printed(t):
    recorded = (FIXTURES / "h200-driver580-cuda13" / "torch.txt").read_text()
    body = recorded[recorded.index("{") : recorded.rindex("}") + 1]
    printed = json.loads(body)
    assert printed["version"] == "2.11.0+cu130"
    assert tuple(printed["arch_list"]) == t.torch(printed["version"]).variant("cu130").arch_list


def test_blackwell_arrived_with_2_7_cu128(t):
    assert t.torch("2.6").variant("cu128") is None
    assert "sm_120" in t.torch("2.7").variant("cu128").arch_list
    assert "sm_100" in t.torch("2.7").variant("cu128").arch_list


def test_kepler_sm_37_only_in_cu11x(t):
    assert "sm_37" in t.torch("2.5").variant("cu118").arch_list
    assert "sm_37" not in t.torch("2.5").variant("cu124").arch_list


@pytest.mark.parametrize(
    "torch, default",
    [
        ("1.10", "cu102"),
        ("1.13", "cu117"),
        ("2.1", "cu121"),
        ("2.5", "cu124"),
        ("2.7", "cu126"),
        ("2.8", "cu128"),
        ("2.11", "cu130"),
    ],
)
def test_pypi_default_variant(t, torch, default):
    assert t.torch(torch).pypi_default == default


def test_conda_story(t):
    assert t.torch("2.5").conda == "pytorch-channel"
    assert t.torch("2.6").conda == "conda-forge"
    last = [r.minor for r in t.torch_releases if r.conda == "pytorch-channel"][-1]
    assert last == "2.5"  # pytorch/pytorch#138506
    assert t.torch("2.0").pytorch_cuda == ("11.7", "11.8")
    assert t.torch("1.12").conda_cudatoolkit == ("10.2", "11.3", "11.6")


@pytest.mark.parametrize(
    "python, newest", [("3.6", "1.10"), ("3.7", "1.13"), ("3.8", "2.4"), ("3.9", "2.8"), ("3.13t", "2.11")]
)
def test_newest_torch_for_a_python(t, python, newest):
    assert t.newest_torch(python=python).minor == newest


def test_newest_torch_with_a_variant(t):
    assert t.newest_torch(variant="cu118").minor == "2.7"
    assert t.newest_torch(python="3.12", variant="cu121").minor == "2.5"


@pytest.mark.parametrize(
    "torch, variant",
    [("2.6", "cu118"), ("2.6", "cu124"), ("2.6", "cu126"), ("2.7", "cu118"), ("2.7", "cu126"), ("2.12", "cu130")],
)
def test_wheels_certain_arch_list_inferred(t, torch, variant):
    # The wheels are in each release's go-live matrix (test-infra b1bdc332 for 2.6: 11.8/12.4/12.6;
    # bad60f65 for 2.7: 11.8/12.6/12.8; 626d4e70 for 2.12: 12.6/13.0/13.2); the arch lists were
    # reconstructed (2.6/2.7: release-branch build_cuda.sh not read; 2.12 cu130: PTX disputed).
    v = t.torch(torch).variant(variant)
    assert v.confirmed() and not v.unconfirmed
    assert not v.confirmed("arch_list")
    assert v.source and v.source.startswith("pytorch/test-infra@")


@pytest.mark.parametrize("torch", ["2.9", "2.10", "2.11", "2.12", "2.13"])
def test_cu129_beyond_2_8_stays_wholly_unconfirmed(t, torch):
    # Outside 2.8's release matrix, 12.9 was built only for non-release (test) channels.
    assert not t.torch(torch).variant("cu129").confirmed()


def test_platform_tags_and_glibc(t):
    assert (t.torch("2.7").manylinux, t.torch("2.7").glibc) == ("manylinux_2_28", "2.28")
    assert t.torch("2.5").glibc == "2.17"
    assert t.torch("2.6").variant("cu126").glibc == "2.28"


def test_companion_packages(t):
    assert t.torch("2.7.1").patch("2.7.1").torchvision == "0.22.1"
    assert t.torch("2.8").torchvision == "0.23.0"
    assert t.torch("2.12").torchaudio is None  # no torchaudio release after 2.11
    assert t.torch("2.11").torchaudio == "2.11.0"


def test_torch_lookup_forms(t):
    assert t.torch("2.8.0").version == "2.8.0"
    assert t.torch("2.11.0+cu130").minor == "2.11"
    assert t.torch("2.10.0a0+b4e4ee81d3").minor == "2.10"  # NGC build
    assert t.torch("2.7.9") is None
    assert t.torch("3.0") is None


def test_python_versions(t):
    assert t.torch("2.6").pythons[-1] == "3.13t"
    assert "3.13t" not in t.torch("2.12").pythons
    assert "3.8" not in t.torch("2.5").pythons


def test_variants_and_index(t):
    assert t.index_base == "https://download.pytorch.org/whl"
    assert t.variant("cu126").index_url == "https://download.pytorch.org/whl/cu126"
    assert t.variant("cu130").cuda == "13.0"
    assert t.variant("cpu").kind == "cpu" and t.variant("cpu").min_driver_linux is None
    assert t.torch("2.8").variant("cu128").cuda == "12.8"
    assert any(m.url == "https://mirror.sjtu.edu.cn/pytorch-wheels" for m in t.mirrors)


# --- NGC and distributions --------------------------------------------------------------------


def test_ngc_25_01(t):
    r = t.ngc("25.01")
    assert (r.cuda, r.ubuntu, r.python) == ("12.8.0", "24.04", "3.12")
    assert t.ngc("nvcr.io/nvidia/pytorch:25.01-py3") is r
    assert r.image == "nvcr.io/nvidia/pytorch:25.01-py3"


def test_ngc_on_driver_535_of_a_data_center_gpu(t):
    # MXNet 24.05 notes: CUDA 12.4.1 needs 545+, or 535.86+ in forward-compatibility mode on data-center GPUs
    dc = {r.tag for r in t.ngc_for_driver("535.104", datacenter=True)}
    plain = {r.tag for r in t.ngc_for_driver("535.104")}
    assert "24.05" in dc and "24.05" not in plain
    assert "23.01" in plain  # needs 525+
    assert "25.01" not in dc
    assert t.ngc("24.05").min_driver == "545"


@pytest.mark.parametrize(
    "tag, min_cc",
    [("22.03", "6.0"), ("24.10", "6.0"), ("24.12", "6.0"), ("25.01", "7.5"), ("25.06", "7.5"), ("25.12", "7.5")],
)
def test_ngc_minimum_compute_capability(t, tag, min_cc):
    # 22.xx-24.xx notes: "supports CUDA compute capability 6.0 and later"; 25.01: 7.5 and later
    # (Blackwell added, Pascal and Volta dropped); CUDA 13 (25.08+) removed everything below 7.5.
    # None of these was read in the month's own PyTorch notes: all are marked unconfirmed.
    r = t.ngc(tag)
    assert r.min_cc == min_cc and not r.confirmed("min_cc")


@pytest.mark.parametrize(
    "name, datacenter",
    [
        # NVIDIA's GPU Operator "Supported NVIDIA Data Center GPUs" list (cloud-native-docs 00690053),
        # HGX B200 added in cloud-native-docs#184; GeForce/TITAN are not data-center GPUs.
        ("A100", True),
        ("A100 80GB PCIe", True),
        ("H100", True),
        ("H100 NVL", True),
        ("H200", True),
        ("GH200", True),
        ("B200", True),
        ("L40S", True),
        ("L4", True),
        ("V100", True),
        ("V100 PCIe 32GB", True),
        ("T4", True),
        ("A10", True),
        ("A30", True),
        ("A40", True),
        ("RTX 4090", False),
        ("RTX 3090 Ti", False),
        ("GTX 1080 Ti", False),
        ("TITAN V", False),
        ("RTX 5090", False),
        ("RTX A6000", None),  # workstation; maybe one of the unnamed "NGC Server Ready" SKUs
        ("RTX PRO 6000", None),
    ],
)
def test_datacenter_flag(t, name, datacenter):
    g = t.gpu(name)
    assert g.is_datacenter() is datacenter
    assert g.datacenter is bool(datacenter)
    if datacenter:
        assert g.datacenter_source


def test_a_field_with_its_own_source_is_judged_on_its_own(t):
    # H100 NVL's datasheet figures are unconfirmed as a row; its datacenter flag has its own source.
    h = t.gpu("H100 NVL")
    assert not h.confirmed() and h.confirmed("datacenter") and not h.confirmed("fp32_tflops")
    # The rhel family row is unconfirmed (package names); RHEL 9's glibc was read on its own.
    r = t.distro("rhel", "9")
    assert not r.confirmed() and r.confirmed("glibc") and not r.confirmed("cuda_lines")


@pytest.mark.parametrize(
    "id, version, glibc",
    [
        # glibc of each release's official container image (mayeut/pep600_compliance@2d70275a cache/x86_64)
        ("ubuntu", "18.04", "2.27"),
        ("ubuntu", "20.04", "2.31"),
        ("ubuntu", "22.04", "2.35"),
        ("ubuntu", "24.04", "2.39"),
        ("debian", "10", "2.28"),
        ("debian", "11", "2.31"),
        ("debian", "12", "2.36"),
        ("debian", "13", "2.41"),
        ("rhel", "7", "2.17"),
        ("rhel", "8", "2.28"),
        ("rhel", "9", "2.34"),
        ("rhel", "10", "2.39"),
        ("rocky", "9.4", "2.34"),
        ("almalinux", "8.10", "2.28"),
        ("fedora", "41", "2.40"),
        ("amzn", "2023", "2.34"),
        ("sles", "15", None),
        ("opensuse-leap", "15", None),  # 15.5: 2.31, 15.6: 2.38 (varies)
    ],
)
def test_distro_glibc(t, id, version, glibc):
    d = t.distro(id, version)
    assert d.glibc == glibc
    if glibc:
        assert d.glibc_source.startswith("mayeut/pep600_compliance@") and d.confirmed("glibc")


def test_distros(t):
    d = t.distro("ubuntu", "22.04")
    assert d.repo_dir == "ubuntu2204" and d.family == "debian"
    assert d.toolkit_package_for("12.8") == "cuda-toolkit-12-8"
    assert t.distro("rocky", "9.4").repo_dir == "rhel9"
    assert "13.0" not in t.distro("ubuntu", "20.04").cuda_lines  # 20.04 dropped in CUDA 13.0
    assert t.distro("ubuntu", "19.10") is None


# --- the loader -------------------------------------------------------------------------------


def test_load_table_is_cached_and_sourced(t):
    assert load_table() is t
    assert t.directory == data_directory()
    rows = (
        t.cuda_releases
        + t.minor_compats
        + t.architectures
        + t.gpus
        + t.torch_releases
        + t.variants
        + t.ngc_releases
        + t.distros
        + t.mirrors
    )
    for row in rows:
        assert row.source and re.match(r"^\d{4}-\d{2}", row.checked), row


def test_load_table_of_a_copy_is_not_cached(tmp_path):
    copy = _copy(tmp_path)
    a, b = load_table(copy), load_table(copy)
    assert a is not b and a.directory == copy


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "data"
    shutil.copytree(data_directory(), dst)
    return dst


def _break(tmp_path: Path, file: str, old: str, new: str, count: int = 1) -> Path:
    d = _copy(tmp_path)
    text = (d / file).read_text()
    assert old in text, f"{old!r} not in {file}"
    (d / file).write_text(text.replace(old, new, count))
    return d


BROKEN = [
    # (file, old, new, words the one-line error must contain)
    (
        "cuda.toml",
        'min_driver_linux = "570.26"',
        'min_drver_linux = "570.26"',
        ["data/cuda.toml", "12.8.0", "unknown field 'min_drver_linux'"],
    ),
    (
        "cuda.toml",
        'version = "12.8.0"\nkind = "ga"\nlabel = "12.8 GA"\nmin_driver_linux = "570.26"\n',
        'version = "12.8.0"\nkind = "ga"\nlabel = "12.8 GA"\n',
        ["cuda.toml", "12.8.0", "missing field 'min_driver_linux'"],
    ),
    ("cuda.toml", 'version = "12.8.1"', 'version = "12.8.x"', ["cuda.toml", "12.8.x", "'version'", "not a version"]),
    ("cuda.toml", 'version = "12.8.1"', 'version = "12.8.0"', ["cuda.toml", "duplicate CUDA version '12.8.0'"]),
    (
        "cuda.toml",
        'min_driver_linux = "570.124.06"',
        'min_driver_linux = "560.1"',
        ["cuda.toml", "12.8.1", "min_driver_linux", "never decrease"],
    ),
    ("cuda.toml", 'checked = "2026-11-29"', 'checked = "yesterday"', ["cuda.toml", "checked", "not a date"]),
    (
        "cuda.toml",
        'unconfirmed_fields = ["min_driver_windows"]',
        'unconfirmed_fields = ["min_driver_macos"]',
        ["cuda.toml", "minor_compat", "min_driver_macos"],
    ),
    (
        "cuda.toml",
        '\n[[release]]\nversion = "10.2.89"',
        '\n[[releases]]\nversion = "10.2.89"',
        ["cuda.toml", "unknown top-level key 'releases'"],
    ),
    ("cuda.toml", 'kind = "ga"', 'kind = "gold"', ["cuda.toml", "10.2.89", "kind"]),
    ("architectures.toml", 'cc = "8.6"', 'cc = "8.9"', ["architectures.toml", "duplicate compute capability '8.9'"]),
    ("architectures.toml", 'tensor_cores = ["fp16"]', 'tensor_cores = ["fp17"]', ["architectures.toml", "7.0", "fp17"]),
    (
        "gpus.toml",
        'aliases = ["RTX 3090", "3090"]',
        'aliases = ["RTX 3090 Ti", "3090"]',
        ["gpus.toml", "NVIDIA GeForce RTX 3090", "also names"],
    ),
    ("gpus.toml", 'pci_ids = ["0x2204"]', 'pci_ids = ["0x2203"]', ["gpus.toml", "0x2203", "also belongs"]),
    ("gpus.toml", 'pci_ids = ["0x2204"]', 'pci_ids = ["2204"]', ["gpus.toml", "pci_ids", "'2204'"]),
    (
        "gpus.toml",
        'pci_ranges = [["0x2300", "0x23ff"]]',
        'pci_ranges = [["0x2200", "0x23ff"]]',
        ["gpus.toml", "pci_ranges", "overlaps"],
    ),
    (
        "gpus.toml",
        'cc = "9.0"\npci_ranges',
        'cc = "9.5"\npci_ranges',
        ["gpus.toml", "GH100", "9.5", "not a known architecture"],
    ),
    (
        "torch.toml",
        '"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]',
        '"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_99", "sm_120"]',
        ["torch.toml", "2.8.0 cu128", "sm_99", "not a known architecture"],
    ),
    ("torch.toml", 'name = "cu129"', 'name = "cu127"', ["torch.toml", "2.8.0 cu127", "no [[variant]] row"]),
    ("torch.toml", 'pypi_default = "cu128"', 'pypi_default = "cu999"', ["torch.toml", "2.8.0", "pypi_default"]),
    ("torch.toml", '{ version = "2.7.1"', '{ version = "2.6.1"', ["torch.toml", "2.7.0", "not a patch of 2.7.0"]),
    ("torch.toml", 'pythons = ["3.9", "3.10"', 'pythons = ["3.9", "py3.10"', ["torch.toml", "py3.10"]),
    (
        "torch.toml",
        'name = "cu126"\narch_list',
        'name = "cu126"\narchs = []\narch_list',
        ["torch.toml", "unknown field 'archs'"],
    ),
    (
        "indexes.toml",
        'name = "cu128"\nkind = "cuda"\ncuda = "12.8"',
        'name = "cu128"\nkind = "cuda"\ncuda = "12.7"',
        ["indexes.toml", "cu128", "no driver floor"],
    ),
    (
        "indexes.toml",
        'index_url = "https://download.pytorch.org/whl/cu126"',
        'index_url = "ftp://example.org/cu126"',
        ["indexes.toml", "cu126", "index_url"],
    ),
    ("indexes.toml", 'name = "cpu"', 'name = "cu126"', ["indexes.toml", "duplicate variant 'cu126'"]),
    ("ngc.toml", 'tag = "25.01"', 'tag = "24.12"', ["ngc.toml", "duplicate tag '24.12'"]),
    ("ngc.toml", 'min_driver = "570"', 'min_driver = "R570"', ["ngc.toml", "min_driver", "not a version"]),
    (
        "distros.toml",
        'family = "debian"\nrepo_dir = "ubuntu2204"',
        'family = "debain"\nrepo_dir = "ubuntu2204"',
        ["distros.toml", "ubuntu2204", "debain"],
    ),
    (
        "distros.toml",
        '"12.6", "12.8", "12.9", "13.0"',
        '"12.6", "12.7", "12.9", "13.0"',
        ["distros.toml", "cuda_lines", "12.7"],
    ),
    ("ngc.toml", '\n[[release]]\ntag = "22.03"', '\n[[release]\ntag = "22.03"', ["ngc.toml", "not valid TOML"]),
    (
        "gpus.toml",
        "datacenter = true\ndatacenter_source",
        'datacenter = "yes"\ndatacenter_source',
        ["gpus.toml", "Tesla V100-SXM2-16GB", "'datacenter' must be true or false"],
    ),
    (
        "gpus.toml",
        'datacenter = true\ndatacenter_source = "NVIDIA/cloud-native-docs@'
        '006900536f9a52a6d7875ff9db45dcf68b526eda:gpu-operator/platform-support.rst"\n',
        "datacenter = true\n",
        ["gpus.toml", "Tesla V100-SXM2-16GB", "'datacenter_source' is missing"],
    ),
    (
        "gpus.toml",
        "datacenter = true\ndatacenter_source",
        "datacenter_flag = true\ndatacenter_source",
        ["gpus.toml", "unknown field 'datacenter_flag'"],
    ),
    ("ngc.toml", 'min_cc = "7.5"', 'min_cc = "7"', ["ngc.toml", "25.01", "'min_cc'", "not a compute capability"]),
    ("ngc.toml", 'min_cc = "7.5"', 'min_cc = "9.5"', ["ngc.toml", "25.01", "min_cc", "not a known architecture"]),
    ("distros.toml", 'glibc = "2.35"', 'glibc = "2.35.1"', ["distros.toml", "ubuntu2204", "'glibc'", "2.35.1"]),
    (
        "distros.toml",
        'glibc = "2.35"\nglibc_source',
        'glibc = "2.35"\nglibc_sources',
        ["distros.toml", "ubuntu2204", "unknown field 'glibc_sources'"],
    ),
    (
        "distros.toml",
        'glibc = "2.35"\nglibc_source = ',
        'glibc = "2.35"\nnote_x = ',
        ["distros.toml", "ubuntu2204", "unknown field 'note_x'"],
    ),
    (
        "architectures.toml",
        'kernel_modules = "either"',
        'kernel_modules = "both"',
        ["architectures.toml", "7.5", "'kernel_modules'", "'both' is not one of proprietary, either, open"],
    ),
    (
        "architectures.toml",
        'kernel_modules = "either"\nkernel_modules_source',
        'kernel_modules = "either"\nx_source',
        ["architectures.toml", "7.5", "unknown field 'x_source'"],
    ),
    ("gpus.toml", 'match = "rtx 40"', 'match = "rtx 4"', ["gpus.toml", "[[series]] rtx 4", "'match'"]),
    ("gpus.toml", 'match = "rtx 40"', 'match = "rtx 30"', ["gpus.toml", "[[series]] rtx 30", "duplicate match"]),
    (
        "gpus.toml",
        'match = "rtx 50"\ncc = "12.0"',
        'match = "rtx 50"\ncc = "12.5"',
        ["gpus.toml", "rtx 50", "12.5 is not a known architecture"],
    ),
]


@pytest.mark.parametrize("file, old, new, words", BROKEN, ids=[f"{b[0]}:{b[3][-1]}" for b in BROKEN])
def test_broken_copy_fails_with_one_clear_line(tmp_path, file, old, new, words):
    d = _break(tmp_path, file, old, new)
    with pytest.raises(TableError) as info:
        load_table(d)
    message = str(info.value)
    assert "\n" not in message
    for w in words:
        assert w in message


def test_datacenter_defaults_to_false_and_glibc_needs_its_source(tmp_path):
    d = _break(
        tmp_path,
        "distros.toml",
        'glibc = "2.35"\nglibc_source = "mayeut/pep600_compliance@'
        '2d70275ac1292c0f8750c0863df9d367a4967ebd:cache/x86_64/ubuntu-22.04.json"\n',
        'glibc = "2.35"\n',
    )
    with pytest.raises(
        TableError,
        match=r"distros.toml: \[\[distro\]\] ubuntu2204: field 'glibc' is given but "
        r"'glibc_source' is missing",
    ):
        load_table(d)
    d = _break(
        tmp_path / "b",
        "gpus.toml",
        'datacenter = true\ndatacenter_source = "NVIDIA/cloud-native-docs@'
        '006900536f9a52a6d7875ff9db45dcf68b526eda:gpu-operator/platform-support.rst"\n',
        "",
    )
    v100 = load_table(d).gpu("Tesla V100-SXM2-16GB")
    assert v100.datacenter is False and v100.datacenter_source is None


def test_dropped_before_first_cuda_is_an_error(tmp_path):
    d = _break(
        tmp_path,
        "architectures.toml",
        'first_cuda = "8.0"\ndropped_cuda = "13.0"',
        'first_cuda = "13.1"\ndropped_cuda = "13.0"',
    )
    with pytest.raises(TableError, match=r"architectures.toml: \[\[architecture\]\] 6.0: field 'dropped_cuda'"):
        load_table(d)


def test_missing_file_is_an_error(tmp_path):
    d = _copy(tmp_path)
    (d / "ngc.toml").unlink()
    with pytest.raises(TableError, match="data/ngc.toml: file missing"):
        load_table(d)


def test_distro_kernel_headers_and_dkms_key_come_from_the_family_unless_the_row_gives_its_own():
    from tests.tables import table

    t = table("four-archs")
    debian, ubuntu, rocky = t.distro("debian", "12"), t.distro("ubuntu", "24.04"), t.distro("rocky", "9.4")
    assert (debian.kernel_headers, debian.dkms_mok, debian.mok_enroll()) == (
        "linux-headers-$(uname -r)",
        "/var/lib/dkms/mok.pub",
        "mokutil --import /var/lib/dkms/mok.pub",
    )
    assert (ubuntu.kernel_headers, ubuntu.dkms_mok, ubuntu.mok_enroll()) == (
        "linux-headers-$(uname -r)",
        "/var/lib/shim-signed/mok/MOK.der",
        "update-secureboot-policy --enroll-key",
    )
    assert rocky.kernel_headers == "kernel-devel-matched kernel-headers"
    assert not rocky.confirmed("kernel_headers") and rocky.confirmed("dkms_mok")  # the family's doubt follows


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('dkms_mok_checked = "2026-12-01"\nsource', "source", ["[[family]] debian", "'dkms_mok_checked'"]),
        ('dkms_mok = "/var/lib/shim-signed/mok/MOK.der"\n', 'dkms_mok = "MOK.der"\n', ["ubuntu2404", "absolute path"]),
        ('dkms_mok = "/var/lib/shim-signed/mok/MOK.der"\n', "", ["ubuntu2404", "'dkms_mok' is missing"]),
        (
            'unconfirmed_fields = ["kernel_headers"]',
            'unconfirmed_fields = ["toolkit_package"]',
            ["[[family]] rhel", "'toolkit_package'"],
        ),
    ],
)
def test_a_sourced_distro_fact_without_its_source_date_or_value_is_refused(tmp_path, old, new, words):
    from tests.tables import HERE, copy_of

    d = copy_of(HERE / "four-archs", tmp_path)
    text = (d / "distros.toml").read_text()
    assert old in text
    (d / "distros.toml").write_text(text.replace(old, new, 1))
    with pytest.raises(TableError) as info:
        load_table(d)
    assert all(w in str(info.value) for w in words), str(info.value)

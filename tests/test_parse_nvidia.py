"""Parsers of nvidia-smi and the kernel module's files, on recorded real output."""

import pytest

from envdoctor.parse import nvidia_proc, nvidia_smi, pciids
from tests.fakes import FIXTURES, recorded
from tests.machines import H200, SMI_MISMATCH, SMI_NO_DRIVER


def test_query_gpu_with_units_and_header_from_the_h200():
    (gpu,) = nvidia_smi.parse_query_gpu(recorded(H200, "nvidia-smi-query.txt"))
    assert gpu.index == 0 and gpu.name == "NVIDIA H200"
    assert gpu.uuid == "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4"
    assert gpu.compute_capability == "9.0" and gpu.memory_total_mib == 143771
    assert gpu.pci_bus_id == "00000000:00:06.0" and gpu.power_limit_w == 700.0 and gpu.max_sm_clock_mhz == 1980
    assert nvidia_smi.query_driver_version(recorded(H200, "nvidia-smi-query.txt")) == "580.159.04"


def test_query_gpu_nounits_and_not_supported_fields():
    text = (
        "index, name, uuid, compute_cap, memory.total [MiB], serial, power.limit [W]\n"
        "0, NVIDIA GeForce RTX 3090 Ti, GPU-1, 8.6, 24564, [N/A], 450.00\n"
        "1, NVIDIA GeForce RTX 3090 Ti, GPU-2, 8.6, 24564, [N/A], [Not Supported]\n"
    )
    gpus = nvidia_smi.parse_query_gpu(text)
    assert [g.index for g in gpus] == [0, 1] and gpus[0].serial is None and gpus[1].power_limit_w is None


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\x00\x01garbage",
        "index, name, uuid\n0, NVIDIA H2",
        "index, name\nzero, x\n",
        "Segmentation fault (core dumped)\n",
    ],
)
def test_query_gpu_garbage_raises(garbage):
    with pytest.raises(nvidia_smi.SmiParseError):
        nvidia_smi.parse_query_gpu(garbage)


def test_version_and_banner():
    assert nvidia_smi.parse_version(recorded(H200, "nvidia-smi-version.txt")) == {
        "smi": "580.159.04",
        "nvml": "580.159",
        "driver": "580.159.04",
        "cuda": "13.0",
    }
    assert nvidia_smi.parse_banner(recorded(H200, "nvidia-smi.txt")) == {"driver": "580.159.04", "cuda": "13.0"}
    with pytest.raises(nvidia_smi.SmiParseError):
        nvidia_smi.parse_banner("nothing")


def test_error_texts():
    assert nvidia_smi.is_mismatch(SMI_MISMATCH) and nvidia_smi.library_version_in_error(SMI_MISMATCH) == "580.159"
    assert nvidia_smi.is_no_driver(SMI_NO_DRIVER) and not nvidia_smi.is_mismatch(SMI_NO_DRIVER)


def test_proc_version_open_and_proprietary():
    assert nvidia_proc.parse_proc_version(recorded(H200, "proc-driver.txt")) == ("580.159.04", "open")
    assert nvidia_proc.parse_proc_version(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n"
    ) == ("550.90.07", "proprietary")
    assert nvidia_proc.parse_proc_version("garbage") == (None, None)


def test_module_and_library_versions():
    assert nvidia_proc.parse_module_version("580.159.04\n") == "580.159.04"
    assert nvidia_proc.parse_module_version("not a version") is None
    assert nvidia_proc.parse_library_version("libnvidia-ml.so.570.133.20") == "570.133.20"
    assert nvidia_proc.parse_library_version("libnvidia-ml.so.1") is None


def test_gpu_information_file():
    text = recorded(H200, "sys-module.txt").split("0000:00:06.0\n", 1)[1]
    info = nvidia_proc.parse_gpu_information(text)
    assert info["Model"] == "NVIDIA H200" and info["Bus Location"] == "0000:00:06.0"


def test_pci_ids_lists_only_nvidia_devices():
    text = (
        "# comment\n8086  Intel Corporation\n\t0d57  Something\n10de  NVIDIA Corporation\n"
        "\t2204  GA102 [GeForce RTX 3090]\n\t\t1043 87b3  ROG\n\t2335  GH100 [H200 SXM 141GB]\n10df  Emulex\n\t0001  x\n"
    )
    assert pciids.nvidia_devices(text) == {"0x2204": "GA102 [GeForce RTX 3090]", "0x2335": "GH100 [H200 SXM 141GB]"}


def test_the_exact_query_the_probe_runs_recorded_on_the_h200():
    """tests/fixtures/h200-driver580-cuda13/nvidia-smi-query-nounits.txt: the probe's own command."""
    text = recorded(H200, "nvidia-smi-query-nounits.txt")
    (gpu,) = nvidia_smi.parse_query_gpu(text)
    assert (gpu.name, gpu.compute_capability, gpu.memory_total_mib) == ("NVIDIA H200", "9.0", 143771)
    assert gpu.serial == "1653924042383" and gpu.power_limit_w == 700.0 and gpu.max_sm_clock_mhz == 1980
    assert gpu.uuid == "GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38"
    assert (
        f"--query-gpu={','.join(nvidia_smi.QUERY_FIELDS)} --format=csv,nounits"
        in (FIXTURES / H200 / "nvidia-smi-query-nounits.txt").read_text().splitlines()[0]
    )

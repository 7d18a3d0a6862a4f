"""envdoctor.gpus.machine_gpus: the one answer to "which GPUs does the machine have"."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
from envdoctor.facts.python import TorchDevice, TorchFacts
from envdoctor.gpus import DRIVER, PCI, TORCH, machine_gpus
from envdoctor.table import load_table
from tests.tables import table

TABLE = load_table()
#: nvidia-smi of the R470 branch has no compute_cap field (added in R510)
V100_SMI_470 = GpuInfo(index=0, name="Tesla V100-SXM2-16GB", pci_bus_id="00000000:00:1E.0", source="nvidia-smi")


def facts(gpus=(), devices=(), pci=()):
    return Facts(
        driver=DriverFacts(driver_version="470.256.02", driver_cuda="11.4", gpus=tuple(gpus)),
        torch=TorchFacts(installed=True, devices=tuple(devices)),
        pci=PciFacts(devices=tuple(pci)),
    )


def test_driver_gpu_without_compute_capability_is_kept_with_cc_from_the_table():
    (g,) = machine_gpus(facts([V100_SMI_470]), TABLE)
    assert (g.kind, g.label, g.cc, g.source) == (DRIVER, "GPU 0 (Tesla V100-SXM2-16GB)", "7.0", "nvidia-smi")
    assert g.where == "nvidia-smi; compute capability from envdoctor table"


def test_driver_gpu_without_compute_capability_and_without_a_table_is_kept_unknown():
    (g,) = machine_gpus(facts([V100_SMI_470]))
    assert (g.kind, g.cc) == (DRIVER, None)


def test_cc_from_the_pci_device_at_the_same_bus_address():
    smi = GpuInfo(index=0, name="Some Future GPU", pci_bus_id="00000000:00:06.0", source="nvidia-smi")
    pci = PciDevice("0000:00:06.0", "0x10de", "0x2335", "0x030200", compute_capability="9.0")
    (g,) = machine_gpus(facts([smi], pci=[pci]), TABLE)
    assert (g.cc, g.pci_id) == ("9.0", "0x2335")


def test_cc_from_a_geforce_series_name_is_marked_inferred():
    smi = GpuInfo(index=0, name="NVIDIA GeForce GTX 1050 Ti", source="nvidia-smi")
    (g,) = machine_gpus(facts([smi]), TABLE)
    assert g.cc == "6.1" and g.inferred


def test_torch_devices_then_pci_devices_when_the_driver_lists_none():
    dev = TorchDevice(0, "NVIDIA H200", "9.0")
    (g,) = machine_gpus(facts(devices=[dev]), TABLE)
    assert (g.kind, g.label, g.cc) == (TORCH, "cuda:0 (NVIDIA H200)", "9.0")
    pci = PciDevice("0000:00:06.0", "0x10de", "0x2335", "0x030200", name="GH100 [H200 SXM 141GB]")
    (g,) = machine_gpus(facts(pci=[pci]), TABLE)
    assert (g.kind, g.label, g.cc) == (PCI, "0000:00:06.0 (GH100 [H200 SXM 141GB])", "9.0")


def test_a_table_that_does_not_know_the_model_leaves_the_cc_unknown():
    # four-archs has no GPU models and no GeForce series: nothing names the V100's capability
    assert machine_gpus(facts([V100_SMI_470]), table("four-archs"))[0].cc is None


def test_nvidia_smi_before_r510_leaves_no_empty_capability_in_the_report():
    """An R470 nvidia-smi (no compute_cap column) left driver.gpus[0].compute_capability empty in
    check's report and text although the table knows the V100 (only the rules filled it)."""
    from envdoctor.gpus import cc_key, with_table_ccs
    from envdoctor.inspect import enrich

    filled = enrich(facts([V100_SMI_470]), TABLE)
    (g,) = filled.driver.gpus
    assert g.compute_capability == "7.0" and filled.driver.sources[cc_key(0)] == "envdoctor table"
    (m,) = machine_gpus(filled, TABLE)  # the rules still say where the capability came from
    assert m.where == "nvidia-smi; compute capability from envdoctor table"
    # by the PCI id at the same bus address when the name is unknown to the table
    smi = GpuInfo(index=0, name="Some Future GPU", pci_bus_id="00000000:00:1E.0", source="nvidia-smi")
    pci = PciDevice("0000:00:1e.0", "0x10de", "0x1db1", "0x030200")
    (g,) = with_table_ccs(facts([smi], pci=[pci]), TABLE).driver.gpus
    assert g.compute_capability == "7.0"
    # a GeForce series guess is not written into the driver's facts
    guess = GpuInfo(index=0, name="NVIDIA GeForce GTX 1050 Ti", source="nvidia-smi")
    assert with_table_ccs(facts([guess]), TABLE).driver.gpus[0].compute_capability is None

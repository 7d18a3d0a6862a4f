"""One matcher from torch's device to NVML's GPU (envdoctor.nvml.match_device), used by bench,
burn, fit --measure and comms: each had its own, and each fell back differently."""

from __future__ import annotations

import pytest

from envdoctor.bench.host import build_result
from envdoctor.burn.facts import BurnGpu
from envdoctor.burn.host import match_nvml
from envdoctor.child import ChildRun
from envdoctor.facts.links import GpuLinks, LinksFacts
from envdoctor.fit.host import measurement_of
from envdoctor.links.analysis_comms import gpu_indices
from envdoctor.nvml import NvmlGpu, Reading, match_device

MIXED = [
    NvmlGpu(0, "GPU-aa11", "00000000:17:00.0", "NVIDIA H200"),
    NvmlGpu(1, "GPU-bb22", "00000000:2A:00.0", "NVIDIA L4"),
]
SAME = [
    NvmlGpu(0, "GPU-aa11", "00000000:17:00.0", "NVIDIA H200"),
    NvmlGpu(1, "GPU-bb22", "00000000:2A:00.0", "NVIDIA H200"),
]


@pytest.mark.parametrize(
    "gpus, index, env, expected",
    [
        (MIXED, 1, {}, None),  # fastest first: the L4 may come first
        (MIXED, 1, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, 1),
        (SAME, 1, {}, 1),  # one model: PCI order either way
        (MIXED, 0, {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, 1),
        (MIXED, 0, {"CUDA_VISIBLE_DEVICES": "GPU-bb"}, 1),  # a UUID's start, as CUDA reads it
        (MIXED, 0, {"CUDA_VISIBLE_DEVICES": "GPU-"}, None),  # ambiguous
        (MIXED, 1, {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None),  # CUDA sees one
        (MIXED, 0, {"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, None),
        (MIXED[:1], 0, {}, 0),
    ],
)
def test_the_index_as_cuda_maps_it(gpus, index, env, expected):
    assert match_device(None, None, index, gpus, env) == expected


def test_uuid_then_bus_id_before_any_index():
    assert match_device("aa11", "0000:2a:00.0", 1, MIXED, {}) == 0  # torch's UUID has no GPU- prefix
    assert match_device("MIG-1234", "0000:2a:00.0", 0, MIXED, {}) == 1  # a MIG instance: its GPU's bus id


def test_burn_no_longer_ignores_cuda_device_order():
    # burn took torch's index as NVML's whenever torch saw every GPU
    ident = [Reading(g.index, {"uuid": None, "name": g.name, "pci": {}}) for g in MIXED]
    assert match_nvml(BurnGpu(1), ident, {}) is None
    assert match_nvml(BurnGpu(1), ident, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) == 1


def test_bench_follows_cuda_visible_devices():
    # bench fell back only to "the only GPU": CUDA_VISIBLE_DEVICES=1 on two GPUs gave no match
    gpus = [{"uuid": g.uuid, "pci_bus_id": g.bus_id, "name": g.name} for g in MIXED]
    doc = {"schema": "envdoctor.bench.child/1", "devices": [{"index": 0, "kind": "cuda", "name": "NVIDIA L4"}]}
    env = {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert build_result(doc, gpus=gpus, lookup=lambda name: None, env=env).devices[0].nvml_index == 1


def test_fit_matches_by_bus_id_too():
    # fit matched by UUID only
    device = {"index": 0, "kind": "cuda", "pci_bus_id": "00000000:2A:00.0"}
    run = ChildRun("fit/target/measure.py", "p", result=_fit_doc(device))
    free = {0: 100 << 30, 1: 20 << 30}
    m = measurement_of(run, False, free, MIXED, None)
    other = measurement_of(run, False, free, [NvmlGpu(0, name="A"), NvmlGpu(1, name="B")], None)
    assert m.context_bytes is not None and m.context_bytes != other.context_bytes


def test_comms_matches_by_uuid_too():
    # comms matched by bus id only
    links = LinksFacts(gpus=tuple(GpuLinks(g.index, g.name, g.uuid, None) for g in MIXED))
    assert gpu_indices([{"rank": 0, "device": {"uuid": "GPU-bb22"}}], links) == {0: 1}


def _fit_doc(device):
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).parent / "fixtures" / "fit-measure" / "h200-train-synthetic.json").read_text())
    return dict(doc, device=dict(doc["device"], **device, uuid=None))

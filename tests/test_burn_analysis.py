"""Burn's pure figures: counters from NVML's answers, their change, the sustained rate, the GPU
mapping, and the health tables (data/xid.toml, data/health.toml)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envdoctor.burn import analysis
from envdoctor.burn.facts import BurnGpu, Counters, Interval
from envdoctor.burn.host import match_nvml, memtest_seconds, sample_interval
from envdoctor.nvml import COUNTERS, Reading, Session
from envdoctor.parse.visible import visible_count
from envdoctor.table import data_directory, load_table
from envdoctor.table.health import load_health
from envdoctor.table.schema import TableError
from tests.fakenvml import FakeNvml


def test_counters_from_the_h200s_recorded_nvml_answers():
    nv = FakeNvml.recorded("h200-driver580-cuda13")
    with Session(nv) as s:
        r = s.read(0, COUNTERS + ("nvlinks",))
    c = analysis.counters(r.values, r.errors)
    assert (c.ecc_corrected, c.ecc_uncorrected, c.remap_pending, c.remap_failure, c.pcie_replay) == (0, 0, 0, 0, 0)
    assert c.power_violation_ns == 13627817536 and c.thermal_violation_ns == 0
    assert c.nvlink_active is None and c.unsupported == ("nvlinks",)  # the H200 VM shows no NVLink


def test_counters_sum_the_errors_of_active_nvlinks_only():
    links = [
        {"link": 0, "active": True, "errors": {"replay": 1, "recovery": 0, "crc_flit": 5, "crc_data": 2}},
        {"link": 1, "active": True, "errors": {"replay": 0, "recovery": 2, "crc_flit": 0, "crc_data": None}},
        {"link": 2, "active": False, "errors": {"replay": 9, "recovery": 9, "crc_flit": 9, "crc_data": 9}},
    ]
    c = analysis.counters({"nvlinks": links})
    got = (c.nvlink_active, c.nvlink_replay, c.nvlink_recovery, c.nvlink_crc_flit, c.nvlink_crc_data)
    assert got == (2, 1, 2, 5, 2)


def test_delta_is_unknown_where_either_end_is():
    d = analysis.delta(
        Counters(ecc_corrected=3, pcie_replay=None, remap_pending=0),
        Counters(ecc_corrected=7, pcie_replay=4, remap_pending=1, nvlink_active=4),
    )
    assert (d.ecc_corrected, d.pcie_replay, d.remap_pending, d.nvlink_active) == (4, None, 1, 4)
    assert analysis.delta(None, Counters()) is None


def test_sustained_skips_the_first_burst_and_a_short_load_uses_its_second_half():
    its = [
        Interval("bf16", t * 0.5, t * 0.5 + 0.5, 300, 0.5, rate)
        for t, rate in enumerate([780.0, 700.0, 660.0, 655.0, 665.0, 650.0])
    ]
    assert analysis.sustained(its) == (657.5, 1.0)  # warm-up 1 s: 660, 655, 665, 650
    two = its[:2]
    assert analysis.sustained(two) == (700.0, 0.5)  # shorter than its warm-up


def test_energy_comes_from_the_first_and_last_sample_of_the_run():
    from tests.test_burn_fakes import h200_gpu

    s = h200_gpu().summary
    assert s.energy_j == pytest.approx(103186.153 - 23.968, abs=0.1)
    assert s.temperature_steady_c == 59.0 and s.power_median_w == pytest.approx(692.3, abs=0.1)


@pytest.mark.parametrize(
    "value,expected",
    [
        (None, 4),
        ("", 0),
        ("-1", 0),
        ("0,1", 2),
        ("3", 1),
        ("0,7,1", 1),
        ("GPU-c7d3a8fe-462a,GPU-ab", 2),
        ("NoDevFiles", 0),
        ("none", 0),
    ],
)
def test_visible_gpus_follows_cuda_visible_devices(value, expected):
    """burn, comms and the rules read the variable through one function (parse/visible.py); the
    review found burn's and comms' copies counting NoDevFiles as one GPU where the rules hide all."""
    assert visible_count(value, 4) == expected


def test_match_nvml_by_uuid_then_bus_then_index():
    ident = [
        Reading(0, {"uuid": "GPU-aa", "pci": {"bus_id": "00000000:00:06.0"}}),
        Reading(1, {"uuid": "GPU-bb", "pci": {"bus_id": "00000000:00:07.0"}}),
    ]
    assert match_nvml(BurnGpu(0, uuid="GPU-BB"), ident, {}) == 1
    assert match_nvml(BurnGpu(0, pci_bus_id="0000:00:07.0"), ident, {}) == 1
    assert match_nvml(BurnGpu(1), ident, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) == 1
    assert match_nvml(BurnGpu(0), ident, {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) == 1
    # CUDA's default order is fastest first: with GPUs of unknown models the index says nothing
    assert match_nvml(BurnGpu(1), ident, {}) is None


def test_the_time_limits_of_a_run():
    assert (memtest_seconds(5), memtest_seconds(60), memtest_seconds(3600)) == (2.0, 6.0, 10.0)
    assert (sample_interval(60), sample_interval(7200), sample_interval(86400)) == (1.0, 1.0, 12.0)


# --- the health tables -----------------------------------------------------------------------------


def test_health_tables_load_with_sources():
    h = load_health()
    assert len(h.xids) >= 50 and all(x.source and x.checked for x in h.xids)
    assert h.xid(48).severity == "critical" and h.xid(13).severity == "app" and h.xid(12345) is None
    assert h.reason_names(0x5) == ("gpu_idle", "sw_power_cap") and h.fault_reasons(0x5) == ()
    assert h.fault_reasons(0x800) == ("bit_0x800",)  # a bit the table does not know counts as a fault
    assert h.expected("NVIDIA H200", "fp32", 8192).unconfirmed
    assert h.expected("NVIDIA H200", "bf16", 4096) is None


def test_every_expected_figure_names_a_gpu_of_gpus_toml():
    table = load_table()
    assert all(table.gpu(e.gpu) is not None for e in load_health().rates)


@pytest.fixture
def copy(tmp_path):
    for name in ("xid.toml", "health.toml"):
        shutil.copy(Path(data_directory()) / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(
    "name,old,new,message",
    [
        ("xid.toml", 'severity = "critical"', 'severity = "fatal"', "'fatal' is not one of"),
        ("xid.toml", "code = 13\n", "code = 8\n", "duplicate Xid 8"),
        ("health.toml", "bit = 0x20\n", "bit = 0x30\n", "sw_thermal: field .bit.: 0x30 is not a single bit"),
        ("health.toml", "bit = 0x20\n", "bit = 0x4\n", "bit 0x4 is also 'sw_power_cap'"),
        ("health.toml", 'class = "fault"', 'class = "bad"', "'bad' is not one of benign, fault"),
        ("health.toml", 'dtype = "fp32"', 'dtype = "int8"', "'int8' is not one of"),
        ("health.toml", 'checked = "2026-12-01"', 'checked = "today"', "not a date"),
    ],
)
def test_a_broken_health_table_names_file_row_and_field(copy, name, old, new, message):
    path = copy / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(TableError, match=message):
        load_health(copy)

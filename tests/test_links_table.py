"""data/links.toml and its loader (envdoctor/links/table.py): rates, lookups, and broken copies."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from envdoctor.links.table import load_links
from envdoctor.table.schema import TableError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).parent / "tables" / "frozen-2026-12-01"
REAL = Path(__file__).parent.parent / "data"


def test_rates_per_generation_and_path():
    t = load_links()
    assert t.pcie_gbps(5, 16) == 63.02 and t.pcie_gbps(4, 16) == 31.51
    assert t.pcie_gbps(3, 8) == 7.875  # a Gen3 x8 riser: an eighth of Gen5 x16
    assert t.pcie_gbps(7, 16) is None and t.pcie_gbps(4, None) is None
    assert t.nvlink_gbps("4.0", 18) == 450.0  # H100/H200 NV18
    assert t.nvlink_gbps("3.0", 12) == 300.0  # A100 NV12
    assert t.nvlink_gbps("5.0", 18) == 900.0  # B200
    assert t.nvlink_rate(nvml_version=6).generation == "4.0"
    assert t.nvlink_gbps("4.0", 0) is None


def test_models_are_keyed_by_the_names_of_gpus_toml():
    names = {row["name"] for row in tomllib.loads((DATA / "gpus.toml").read_text())["gpu"]}
    t = load_links()
    missing = [g.name for g in t.gpus if g.name not in names]
    assert missing == []
    h200 = t.gpu("nvidia  h200")
    assert (h200.nvlink_generation, h200.nvlink_links, h200.nvlink_form, h200.pcie_gen) == ("4.0", 18, "sxm", 5)
    assert t.gpu("NVIDIA GeForce RTX 4090").nvlink_links == 0 and t.gpu("no such GPU") is None


def test_every_row_has_a_source_and_a_date():
    doc = tomllib.loads((DATA / "links.toml").read_text())
    for section, items in doc.items():
        for row in items:
            assert row.get("source") and row.get("checked"), (section, row)


def test_published_figures_match_model_count_collective_and_nvls():
    t = load_links()
    assert t.published_for("NVIDIA H200", 8, "all_reduce", "off").busbw_gbps == 367.2
    assert t.published_for("NVIDIA H200", 8, "all_reduce", "on").busbw_gbps == 480.0
    assert t.published_for("NVIDIA H200", 8, "all_gather", "off").busbw_gbps == 361.4
    assert t.published_for("NVIDIA H200", 2, "all_reduce", "off") is None
    assert t.fraction("nvlink").fraction == 0.8 and not t.fraction("pcie").confirmed()


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "data" / "links.toml"
    path.parent.mkdir()
    shutil.copy(DATA / "links.toml", path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    "old,new,words",
    [
        ("x16_gbps = 63.02", "x16_gbps = 64.02", "[[pcie]] 5: field 'x16_gbps'"),
        ('nvlink_form = "sxm"', 'nvlink_form = "nvswitch"', "field 'nvlink_form'"),
        ('nvlink_generation = "4.0"', 'nvlink_generation = "4.5"', "has no [[nvlink]] row"),
        ("per_link_gbps = 25.0", 'per_link_gbps = "fast"', "must be a non-negative number"),
        ('gpu = "NVIDIA H200"', 'gpu = "NVIDIA H201"', "has no [[gpu]] row"),
        ('[[achievable]]\nkind = "nvlink"', '[[achievable]]\nkind = "wifi"', "[[achievable]] wifi"),
    ],
)
def test_a_broken_copy_names_file_row_and_field(tmp_path, old, new, words):
    with pytest.raises(TableError) as err:
        load_links(_broken(tmp_path, old, new))
    assert "data/links.toml" in str(err.value) and words in str(err.value)


def test_the_real_data_loads_too():
    """The frozen copy (tests/tables/frozen-2026-12-01) is what the tests read; data/links.toml must load."""
    assert load_links(REAL / "links.toml").gpu("NVIDIA H200").nvlink_links == 18


def test_health_and_link_rows_answer_to_the_names_the_gpu_table_answers_to():
    """The review's find: "H200" or "NVIDIA_H200" found the gpus.toml row but not health.toml's or
    links.toml's (each table normalised names its own way); one rule now (table/names.py)."""
    from envdoctor.links.table import load_links
    from envdoctor.table.health import load_health

    links, health = load_links(), load_health()
    assert links.gpu("H200") is links.gpu("NVIDIA H200") is links.gpu("nvidia_h200") is not None
    assert health.expected("H200", "bf16", 8192) is health.expected("NVIDIA H200", "bf16", 8192) is not None

"""Issue 28 §1: verdicts against the memory a process can allocate, and dtypes the GPU cannot run.

The local GPU comes from NVML (the recorded H200 replayed by tests/fakenvml.py: total 150,754,820,096
bytes, 4,542,300,160 in use, 146,212,519,936 free), ``--gpu NAME`` from data/fit.toml's [[usable]]
rows (torch's "total capacity" as public OOM reports print it, each with its source).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.fit import usable
from envdoctor.fit.constants import Constants
from envdoctor.fit.models import bundled_models
from envdoctor.fit.usable import FALLBACK_DATACENTER, Usable, load_usable, local_gpus, usable_gpu, usable_of
from envdoctor.fit.verdict import Gpu, dtype_problem, fit_report
from envdoctor.fit.workload import Workload
from envdoctor.table import TableError
from envdoctor.table.schema import Doc
from tests.fakenvml import FakeNvml

GIB = 2**30
ROOT = Path(__file__).resolve().parent.parent


def run(*args: str):
    return CliRunner().invoke(cli, ["fit", *args])


@pytest.fixture(autouse=True)
def real_data(monkeypatch):
    """The [[usable]] rows are new in data/fit.toml (the frozen test copy predates them)."""
    monkeypatch.setenv("ENVDOCTOR_DATA", str(ROOT / "data"))


def test_every_usable_row_names_a_table_gpu_a_source_and_sits_below_its_datasheet():
    from envdoctor.table import load_table

    table = load_table()
    rows = load_usable()
    assert len(rows) >= 10
    for r in rows:
        g = table.gpu(r.gpu)
        assert g is not None and g.name == r.gpu, r.gpu
        assert r.source and "2026-12-01" <= r.checked <= date.today().isoformat(), (r.gpu, r.checked)
        assert 0.9 * g.memory_gib < r.usable_gib < g.memory_gib, (r.gpu, r.usable_gib, g.memory_gib)


def test_gpu_name_is_judged_against_its_usable_row_ecc_on_first():
    t4 = usable_gpu("Tesla T4", 16.0, "7.5", True, load_usable())
    assert t4.total_bytes == int(14.56 * GIB) and "ECC on" in t4.source and "ECC off: 15.83 GiB" in t4.source
    off = usable_gpu("Tesla T4", 16.0, "7.5", True, load_usable(), ecc="off")
    assert off.total_bytes == int(15.83 * GIB) and "ECC off" in off.source and "unconfirmed" in off.source
    h200 = usable_gpu("NVIDIA H200", 141.0, "9.0", True, load_usable())
    assert h200.total_bytes == int(139.8 * GIB)


def test_a_gpu_without_a_row_gets_an_estimate_that_says_so():
    g = usable_gpu("NVIDIA L4", 24.0, "8.9", True, ())
    assert g.total_bytes == int(24 * FALLBACK_DATACENTER * GIB) and g.source.startswith("estimated: 91%")


def test_a_broken_usable_row_names_its_field():
    doc = Doc(
        "fit.toml",
        {"usable": [{"gpu": "X", "ecc": "maybe", "usable_gib": 1.0, "source": "s", "checked": "2026-12-01"}]},
    )
    with pytest.raises(TableError, match="field 'ecc': 'maybe' is not on, off or default"):
        usable_of(doc)
    doc.data["usable"][0].update(ecc="on", usable_gib=float("inf"))
    with pytest.raises(TableError, match="usable_gib"):
        usable_of(doc)


def test_this_machine_is_judged_by_nvml_free_memory_and_says_what_others_hold():
    gpus, why = local_gpus(FakeNvml.recorded("h200-driver580-cuda13"))
    assert why is None and len(gpus) == 1
    g = gpus[0]
    assert g.name == "GPU 0: NVIDIA H200" and g.total_bytes == 146_212_519_936 and g.cc == "9.0"
    assert (
        "NVML free" in g.source
        and "less 4.23 GiB used now (the driver's reserve and what other processes hold" in g.source
    )


def test_without_nvml_there_is_no_local_gpu_and_the_reason():
    gpus, why = local_gpus(FakeNvml({"gpus": []}, init_error=9))
    assert gpus == [] and why


def test_the_cli_judges_against_this_machine_when_no_gpu_is_given(monkeypatch):
    fake = FakeNvml.recorded("h200-driver580-cuda13")
    monkeypatch.setattr(usable, "local_gpus", lambda nvml=None: local_gpus(fake))
    r = run("Llama-3.2-1B", "--train", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [g["name"] for g in doc["gpus"]] == ["GPU 0: NVIDIA H200"]
    assert doc["gpus"][0]["total_bytes"] == 146_212_519_936
    text = run("Llama-3.2-1B", "--train").output
    assert "Judged against this machine's GPUs (NVML free memory now" in text
    assert "No GPU given" in run("Llama-3.2-1B", "--train", "--no-local").output


def test_bf16_on_a_t4_is_a_finding_with_fp16_ways_not_a_fits():
    """Issue 28's example: `fit Llama-3.2-1B --train --gpu T4` said "16.00 GiB ... fits"."""
    r = run("Llama-3.2-1B", "--train", "--gpu", "T4", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    g = doc["gpus"][0]
    assert g["fits"] is False and g["total_bytes"] == int(14.56 * GIB) and "compute capability 8.0" in g["problem"]
    assert doc["ways"] and all(
        w["flags"].startswith(("--dtype fp16", "--dtype fp32 --amp fp16"))
        for w in doc["ways"]
        if "larger" not in w["label"]
    )
    assert not any("T4" in w["label"] or "V100" in w["label"] for w in doc["ways"])
    # at 1024 tokens (at the default 2048 the fourth round's reserve, the states' share and the loss's second
    # fp32 block, puts the upper edge at 15.5 GiB, over the T4's 14.56)
    ok = run("Llama-3.2-1B", "--train", "--dtype", "fp16", "--grad-checkpointing", "--seq", "1024", "--gpu", "T4")
    assert ok.exit_code == 0 and "fits" in ok.output


@pytest.mark.parametrize(
    "dtype, amp, cc, bad",
    [
        ("bf16", None, "7.5", True),
        ("fp32", "bf16", "7.0", True),
        ("bf16", None, "8.0", False),
        ("fp16", None, "7.5", False),
        ("bf16", None, None, False),
        ("bf16", None, "3.7", True),
    ],
)
def test_dtype_problem(dtype, amp, cc, bad):
    assert (dtype_problem(Gpu("g", 1, "given", cc), dtype, amp) is not None) is bad


def test_fit_report_verdict_carries_the_problem():
    spec = bundled_models().find("gpt2").spec
    r = fit_report(
        spec, Workload(mode="infer", seq=128, dtype="bf16"), [Gpu("V100", 16 * GIB, "given", "7.0")], (), Constants()
    )
    assert not r.verdicts[0].fits and r.verdicts[0].problem and r.verdicts[0].spare_bytes > 0


def test_usable_is_a_frozen_row():
    r = Usable("g", "on", 1.0, "s", "2026-12-01")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.gpu = "h"  # type: ignore[misc]

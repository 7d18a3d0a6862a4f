"""benchmarks/bench_fit_accuracy.py without a GPU: its sets, the held-out recording, --only, --recompute."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_fit_accuracy as bench  # noqa: E402

from envdoctor.fit.constants import Constants, read_constants  # noqa: E402

HELDOUT = ROOT / "docs" / "examples" / "h200" / "fit-heldout-2026-12-01.json"


def test_the_data_files_constants_are_the_dataclass_defaults():
    """Tests read the frozen table copy, which predates the allocator model: its defaults must be the data's."""
    data, defaults = asdict(read_constants(ROOT / "data" / "fit.toml")), asdict(Constants())
    allocator = [k for k in defaults if k.startswith("allocator_") and k != "allocator_reserve"]
    assert len(allocator) == 16
    assert {k: data[k] for k in allocator} == {k: defaults[k] for k in allocator}


def test_the_held_out_set_is_the_one_written_down_and_disjoint_from_the_in_sample_set():
    names = [c.name for c in bench.HELDOUT_CASES]
    assert [n.split()[0] for n in names] == [f"H{i}" for i in range(1, 25)]
    doc = (ROOT / "docs" / "fit.md").read_text()
    for n in names:
        assert n in doc, n
    in_sample = {(c.model, c.workload, c.layers, c.config) for c in bench.GPU_CASES}
    assert not any((c.model, c.workload, c.layers, c.config) in in_sample for c in bench.HELDOUT_CASES)
    for c in bench.HELDOUT_CASES + bench.EXTRA_CASES:
        spec, raw = bench.model_of(c)
        assert spec.layers > 0 and raw


def test_only_an_id_is_that_row(capsys):
    assert bench.main(["--set", "held-out", "--only", "H2", "--list"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("H2 gpt2-medium")


def test_the_recorded_held_out_run_recomputes_with_its_measured_rows():
    rows = json.loads(HELDOUT.read_text())["rows"]
    assert len(rows) == 24 and sum(1 for r in rows if r["status"] == "measured") == 22
    table = bench.recompute([HELDOUT])
    # at the run (the estimator of that day) and now (the fourth round's, tuned on these rows too: in-sample)
    assert "At the run: 11 of 22 within -5%..+10%" in table
    assert "Now: 20 of 22 within -5%..+10%" in table and "0 under by more than 10%" in table


def test_the_cross_validation_reads_the_tuning_rows_only_and_recomputes_the_estimators_own_peaks():
    import fit_crossval as cv  # noqa: PLC0415 - benchmarks/ is on the path above

    files = [f for _, fs in cv.TUNING for f in fs]
    assert not any("heldout4" in f for f in files)  # the fourth held-out set is never read
    const = cv.load_constants()
    rows = cv.tuning_rows(const)  # raises when the recomputed peak is not the estimate's
    sets = {"original", "held-out 1", "held-out 2", "held-out 3", "extras"}
    assert len(rows) == 116 and {r.set for r in rows} == sets
    # two points: the shipped constants and one with no reserve share for the states; leaving a family out
    # scores every row exactly once
    points = [const, cv.replace(const, allocator_states=0.0)]
    train = [r for r in rows if r.workload.train]
    held, chosen = cv.leave_out(train, points, lambda r: r.family)
    assert len(held) == len(train) and set(chosen) == {r.family for r in train}
    assert cv.score([-0.06, -0.05, 0.0, 0.10, 0.11, -0.2]) == (3, 1)


def test_the_third_held_out_recording_recomputes_as_docs_fit_md_says():
    """Recomputed once after the fourth round's freeze (docs/fit.md, "Third held-out results"); in-sample
    for the fifth round, whose figures these are."""
    path = ROOT / "docs" / "examples" / "h200" / "fit-heldout3-2026-12-01.json"
    rows = json.loads(path.read_text())["rows"]
    assert len(rows) == 24 and all(r["status"] == "measured" for r in rows)
    table = bench.recompute([path])
    assert "At the run: 16 of 24 within -5%..+10% (from -8.3% to +36.8%)" in table
    assert "Now: 22 of 24 within -5%..+10% (from -5.9% to +13.6%); 0 under by more than 10%" in table
    assert "at or above the measured peak in 24 of 24" in table


def test_the_fifth_rounds_extras_recompute_as_docs_fit_md_says():
    """X9-X17, measured once on the H200 (2026-12-02), with the earlier extras: in-sample tuning rows."""
    h200 = ROOT / "docs" / "examples" / "h200"
    path = h200 / "fit-extras5-2026-12-02.json"
    rows = json.loads(path.read_text())["rows"]
    assert [r["name"].split()[0] for r in rows] == [f"X{i}" for i in range(9, 18)]
    assert all(r["status"] == "measured" for r in rows)
    files = [h200 / "fit-extras-2026-12-01.json", h200 / "fit-extras3-2026-12-01.json", path]
    table = bench.recompute(files)
    assert "Now: 16 of 18 within -5%..+10% (from -9.8% to +11.1%); 0 under by more than 10%" in table
    assert "at or above the measured peak in 18 of 18" in table


def test_the_fourth_held_out_recording_recomputes_as_docs_fit_md_says():
    """Recomputed once after the fifth round's freeze (docs/fit.md, "Fourth held-out results"); U27 from
    the second call's file replaces the first call's failed row."""
    h200 = ROOT / "docs" / "examples" / "h200"
    first, u27 = h200 / "fit-heldout4-2026-12-02.json", h200 / "fit-heldout4-u27-2026-12-02.json"
    rows = json.loads(first.read_text())["rows"]
    assert [r["name"].split()[0] for r in rows] == [f"U{i}" for i in range(1, 28)]
    assert [r["name"].split()[0] for r in json.loads(u27.read_text())["rows"]] == ["U27"]
    table = bench.recompute([first, u27])
    assert "At the run: 19 of 27 within -5%..+10% (from -12.2% to +64.9%)" in table
    assert "Now: 23 of 27 within -5%..+10% (from -8.6% to +13.7%); 0 under by more than 10%" in table
    assert "at or above the measured peak in 26 of 27" in table

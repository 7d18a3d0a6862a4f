"""Every JSON document envdoctor writes, against its JSON Schema, and the one reader of them.

The documents come from real runs: the recordings in docs/examples/ and tests/fixtures/, and the
commands run here on machines rebuilt from recorded output (tests/machines.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor import documents
from envdoctor.bench.facts import BenchResult
from envdoctor.cli import cli
from envdoctor.documents import DOCUMENTS, DocumentError, read_document
from envdoctor.facts.serde import from_data, to_data
from tests.documents import ROOT, recorded, validate
from tests.machines import SMI_MISMATCH, cpu_box, h200
from tests.torchtest import needs_torch

FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
H200_REPORT = ROOT / "tests/fixtures/h200-driver580-cuda13/envdoctor-check.json"
SNAPSHOT = ROOT / "tests/fixtures/snapshots/h200-580.json"
BENCH_2X = ROOT / "tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json"


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def bench_2x() -> BenchResult:
    return from_data(BenchResult, json.loads(BENCH_2X.read_text()))


# --- the registry ---------------------------------------------------------------------------------


def _schema_names(kind):
    """The ``schema`` constants a kind's JSON Schema allows, following its allOf references."""
    schema = documents.schema(kind)
    names = [schema.get("properties", {}).get("schema", {}).get("const")]
    for part in schema.get("allOf", ()):
        ref = part.get("$ref", "")
        names += [_schema_names(row.kind)[0] for row in DOCUMENTS if ref == row.file]
    return [n for n in names if n]


@pytest.mark.parametrize("row", DOCUMENTS, ids=lambda r: r.kind)
def test_every_kind_has_a_valid_schema_that_names_it(row):
    import jsonschema

    schema = documents.schema(row.kind)  # fails when the kind has no schema file
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("/" + row.file)
    assert _schema_names(row.kind) == [row.schema]


def test_every_schema_file_belongs_to_a_kind():
    files = {p.name for p in (ROOT / "envdoctor" / "schemas").glob("*.json")}
    assert files == {row.file for row in DOCUMENTS}


def test_every_document_name_in_the_code_is_registered():
    """A new ``"envdoctor.fit/1"`` emitted without a registry row (and so without a schema) fails here.
    Names with a second dot (``envdoctor.bench.child/1``) are the protocol of a child script, not documents."""
    known = {row.schema for row in DOCUMENTS} | {m for row in DOCUMENTS for m in row.migrations}
    seen = {}
    for path in (ROOT / "envdoctor").rglob("*.py"):
        for name in re.findall(r"envdoctor\.[a-z_]+/[0-9]+", path.read_text(encoding="utf-8")):
            seen.setdefault(name, path.relative_to(ROOT))
    unknown = {name: str(path) for name, path in seen.items() if name not in known}
    assert unknown == {}
    assert {"envdoctor.report/1", "envdoctor.plan/1", "envdoctor.bench/1"} <= set(seen)


# --- recorded documents ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, kind",
    [
        ("docs/examples/h200/check.json", "report"),
        ("docs/examples/cpu-ci/check.json", "report"),
        ("tests/fixtures/h200-driver580-cuda13/envdoctor-check.json", "report"),
        ("tests/fixtures/snapshots/h200-580.json", "snapshot"),
        ("tests/fixtures/snapshots/h200-580.json", "report"),
        ("docs/examples/h200/recommend.json", "plan"),
        ("tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json", "bench"),
    ],
)
def test_recorded_documents_follow_their_schema(path, kind):
    validate(json.loads(recorded(ROOT / path)), kind)


# --- documents emitted here ------------------------------------------------------------------------


def test_check_json_on_the_h200_and_the_cpu_box(tmp_path):
    for ctx in (h200(tmp_path / "h200"), cpu_box(tmp_path / "cpu")):
        r = invoke("check", "--root", str(ctx.root), *FAST, "--json", env=dict(ctx.env))
        validate(json.loads(r.output), "report")


def test_check_json_with_a_failing_driver_and_redacted(tmp_path):
    from tests.fakes import FakeBin

    ctx = h200(tmp_path)
    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    r = invoke("check", "--root", str(ctx.root), *FAST, "--json", "--redact", env=bin.env())
    doc = json.loads(r.output)
    assert doc["summary"]["errors"] >= 1
    validate(doc, "report")


def test_check_bench_json_holds_a_bench_document(tmp_path, monkeypatch):
    import envdoctor.bench

    monkeypatch.setattr(envdoctor.bench, "run_bench", lambda *a, **k: bench_2x())
    ctx = h200(tmp_path)
    r = invoke("check", "--root", str(ctx.root), *FAST, "--json", "--bench", env=dict(ctx.env))
    doc = json.loads(r.output)
    assert doc["bench"]["points"][0]["tflops"] > 600
    validate(doc, "report")


def test_snapshot_files_with_and_without_bench(tmp_path, monkeypatch):
    import envdoctor.bench.host as host

    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(host, "run_bench", lambda python, **kw: bench_2x())
    ctx = h200(tmp_path)
    for name, extra in (("plain.json", []), ("bench.json", ["--bench"])):
        r = invoke("snapshot", "--root", str(ctx.root), *FAST, "-o", str(tmp_path / name), *extra, env=dict(ctx.env))
        assert r.exit_code == 0, r.output
        validate(json.loads((tmp_path / name).read_text()), "snapshot")
    r = invoke("snapshot", "--root", str(ctx.root), *FAST, env=dict(ctx.env))  # into the store
    store = tmp_path / "state" / "snapshots"
    validate(json.loads((store / (store / "latest").read_text().strip()).read_text()), "snapshot")


@pytest.mark.parametrize(
    "args",
    [
        ["--gpu", "RTX 5090", "--driver", "570.133.20", "--os", "ubuntu:24.04", "--python-version", "3.12"],
        [
            "--gpu",
            "RTX 5090",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
            "--route",
            "conda",
        ],
        [
            "--gpu",
            "RTX 5090",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
            "--route",
            "docker",
        ],
        ["--gpu", "RTX 3090", "--driver", "450.51.06", "--os", "ubuntu:20.04", "--python-version", "3.10"],  # no fit
        ["--from", str(H200_REPORT)],
        ["--from", str(H200_REPORT), "--route", "docker"],
    ],
)
def test_recommend_json(args):
    r = invoke("recommend", "--offline", "--json", *args)
    assert r.exit_code in (0, 1), r.output
    validate(json.loads(r.output), "plan")


@pytest.mark.parametrize("run", ["default", "nocuda"])
def test_bench_json_of_recorded_h200_runs(tmp_path, run):
    from tests.test_bench_fakes import recorded_run, replay

    r = CliRunner().invoke(cli, ["bench", "--python", replay(tmp_path, recorded_run(run)), "--json", "--cpu"])
    assert r.exit_code in (0, 1), r.output
    validate(json.loads(r.stdout), "bench")


def test_bench_json_of_a_target_without_torch(tmp_path):
    target = tmp_path / "python3"  # this interpreter without its site-packages: no torch
    target.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    target.chmod(0o755)
    r = CliRunner().invoke(cli, ["bench", "--python", str(target), "--json"], catch_exceptions=False)
    doc = json.loads(r.stdout)
    assert r.exit_code == 2 and doc["error"]["kind"] == "not_found" and doc["points"] == []
    validate(doc, "bench")


def test_verify_json_same_machine_regression_and_bench(tmp_path, monkeypatch):
    import envdoctor.bench.host as host
    from tests.fakes import FakeBin

    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr("socket.gethostname", lambda: "h200-vm")
    ctx = h200(tmp_path)
    r = invoke("verify", "--root", str(ctx.root), "--baseline", str(SNAPSHOT), *FAST, "--json", env=dict(ctx.env))
    assert r.exit_code == 0, r.output
    validate(json.loads(r.output), "verify")

    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    r = invoke("verify", "--root", str(ctx.root), "--baseline", str(SNAPSHOT), *FAST, "--json", env=bin.env())
    doc = json.loads(r.output)
    assert doc["exit_code"] == 1 and doc["regressions"]
    validate(doc, "verify")

    with_bench = json.loads(SNAPSHOT.read_text())
    with_bench["bench"] = to_data(bench_2x())
    (tmp_path / "b.json").write_text(json.dumps(with_bench))
    monkeypatch.setattr(host, "run_bench", lambda python, **kw: bench_2x())
    r = invoke(
        "verify",
        "--root",
        str(ctx.root),
        "--baseline",
        str(tmp_path / "b.json"),
        *FAST,
        "--bench",
        "--json",
        env=dict(ctx.env),
    )
    doc = json.loads(r.stdout)
    assert doc["bench"]["tolerance_pct"] == 10.0
    validate(doc, "verify")


@pytest.mark.parametrize(
    "args",
    [
        ["cuda"],
        ["cuda", "12.8"],
        ["torch"],
        ["torch", "2.7"],
        ["gpu"],
        ["gpu", "H200"],
        ["gpu", "0x2b87"],
        ["arch"],
        ["arch", "8.6"],
        ["ngc"],
        ["ngc", "25.01"],
        ["distro"],
        ["distro", "ubuntu", "22.04"],
        ["variant"],
        ["variant", "cu128"],
    ],
)
def test_table_json(args):
    r = invoke("table", *args, "--json")
    assert r.exit_code == 0, r.output
    validate(json.loads(r.output), "table")


def test_index_json_offline(tmp_path):
    r = CliRunner().invoke(
        cli,
        [
            "index",
            "cu117",
            "cu121",
            "cu130",
            "--offline",
            "--python-version",
            "3.12",
            "--platform",
            "manylinux_2_28_x86_64",
            "--json",
        ],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "empty-cache"), "ENVDOCTOR_INDEX_URL": None},
    )
    assert r.exit_code in (0, 1), r.output
    validate(json.loads(r.output), "index")


# --- the reader -----------------------------------------------------------------------------------------

REPORT_TEXT = SNAPSHOT.read_text()


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "b.json is not valid JSON (cut short or damaged near line 1)"),
        (REPORT_TEXT[:4000], "b.json is not valid JSON (cut short or damaged near line "),
        ("[" * 100000 + "]" * 100000, "b.json cannot be read as JSON: JSON nested deeper than 64 levels"),
        ('{"schema": "envdoctor.report/1", "n": ' + "9" * 5000 + "}", "b.json cannot be read as JSON: a number of"),
        ('{"schema": "envdoctor.report/1", "n": NaN}', "b.json cannot be read as JSON: NaN is not a JSON number"),
        ("[1, 2]", "b.json is not an envdoctor report (not a JSON object)"),
        ('{"facts": {}}', "b.json is not an envdoctor report (no 'schema' key)"),
        ('{"schema": 1}', "b.json is not an envdoctor report (no 'schema' key)"),
        ('{"schema": "envdoctor.plan/1"}', "b.json is an envdoctor.plan document, not a report or snapshot"),
        ('{"schema": "pip.inspect/1"}', "b.json is a document of schema 'pip.inspect/1', not a report or snapshot"),
        (
            '{"schema": "envdoctor.report/2"}',
            "b.json was written by a newer envdoctor (schema envdoctor.report/2); "
            "this envdoctor reads envdoctor.report/1 and older",
        ),
        (
            '{"schema": "envdoctor.report/\u00b2"}',
            "b.json has schema 'envdoctor.report/\u00b2', which this envdoctor "
            "cannot read (it reads envdoctor.report/1)",
        ),
        ('{"schema": "envdoctor.report/beta"}', "which this envdoctor cannot read"),
        (
            '{"schema": "envdoctor.report/0", "problems": 5}',
            "b.json (schema envdoctor.report/0) cannot be converted: 'problems' is not a list",
        ),
    ],
)
def test_unusable_documents_are_one_documented_error(text, message):
    with pytest.raises(DocumentError) as info:
        read_document(text, "report", "b.json")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_other_kinds_are_told_apart():
    with pytest.raises(DocumentError, match="is an envdoctor.report document, not an envdoctor plan"):
        read_document(REPORT_TEXT, "plan", "r.json")
    assert read_document(BENCH_2X.read_text(), "bench", "b.json").data["nvml_gpus"] == 2


def test_the_prerelease_report_is_migrated():
    old = {
        "schema": "envdoctor.report/0",
        "host": "gpu-01",
        "created": "2026-11-01T09:00:00Z",
        "facts": {},
        "problems": [{"code": "ED102", "severity": "error", "title": "mismatch"}, "junk"],
    }
    loaded = read_document(json.dumps(old), "report", "old.json")
    assert loaded.migrated_from == "envdoctor.report/0"
    assert loaded.data["schema"] == "envdoctor.report/1" and loaded.data["summary"]["exit_code"] == 1
    assert loaded.data["snapshot"]["host"] == "gpu-01" and len(loaded.data["findings"]) == 1


@settings(deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.sampled_from(["schema", "facts", "problems", "x"]), inner, max_size=4)
            ),
            max_leaves=20,
        ).map(json.dumps),
    )
)
def test_any_text_is_a_document_or_the_documented_error(text):
    try:
        read_document(text, "report", "fuzz.json")
    except DocumentError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("fuzz.json")


def test_dumps_is_the_one_writer():
    text = documents.dumps({"schema": "envdoctor.table/1", "name": "GeForce RTX 5090 \u2265 570"})
    assert text == '{\n  "schema": "envdoctor.table/1",\n  "name": "GeForce RTX 5090 \u2265 570"\n}'
    assert Path(documents.__file__).name == "documents.py"


# --- schemas generated from the documents' dataclasses (tools/make_schema.py) -----------------------


def _make_schema():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_schema", ROOT / "tools" / "make_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", sorted(_make_schema().GENERATED))
def test_generated_schemas_are_current(kind):
    """A field added to the dataclass without `python tools/make_schema.py KIND` fails here."""
    maker = _make_schema()
    row = next(d for d in DOCUMENTS if d.kind == kind)
    assert (ROOT / "envdoctor" / "schemas" / row.file).read_text() == maker.text_for(kind)


def test_make_schema_check_mode_passes_on_the_tree_and_fails_with_a_diff_on_a_stale_schema(tmp_path):
    """`python tools/make_schema.py --check`, the way CI runs it: exit 0 on the tree; a schema file
    that lost a field of its type (an edit by hand, a field added without a run) is exit 1 and a diff."""
    import shutil
    import subprocess
    import sys

    tool = [sys.executable, str(ROOT / "tools" / "make_schema.py"), "--check"]
    ok = subprocess.run(tool, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout == "", ok.stdout + ok.stderr
    stale = tmp_path / "schemas"
    shutil.copytree(ROOT / "envdoctor" / "schemas", stale)
    burn = json.loads((stale / "burn-1.json").read_text())
    dropped = burn["required"].pop()
    (stale / "burn-1.json").write_text(json.dumps(burn, indent=1) + "\n")
    bad = subprocess.run(tool + ["--schemas", str(stale)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "burn-1.json (on disk)" in bad.stdout and f'+  "{dropped}"' in bad.stdout
    assert "1 schema file(s) disagree" in bad.stderr and "diag-1.json" not in bad.stdout


@needs_torch
def test_burn_json_of_a_cpu_run(tmp_path):
    r = invoke("burn", "--seconds", "5", "--cpu", "--json", env={"HOME": str(tmp_path)})
    assert r.exit_code == 0, r.output
    validate(json.loads(r.stdout), "burn")


def test_fit_json_of_a_bundled_model():
    r = invoke("fit", "Llama-3.1-8B", "--train", "--gpu", "H200", "--json")
    assert r.exit_code in (0, 1), r.output
    validate(json.loads(r.stdout), "fit")


def test_make_schema_tells_two_types_of_one_name_apart():
    """bench's Verdict and fleet's Verdict in one document are two $defs, not one."""
    import dataclasses

    from envdoctor.bench.facts import Verdict as BenchVerdict
    from envdoctor.fleet.rules import Verdict as FleetVerdict

    both = dataclasses.make_dataclass("Both", [("a", BenchVerdict), ("b", FleetVerdict)], frozen=True)
    maker = _make_schema()
    defs = {}
    maker._OWNERS.clear()
    props = maker._object(both, defs)["properties"]
    assert props["a"] != props["b"] and sorted(defs) == ["Verdict", "rules.Verdict"]
    assert "state" in defs["Verdict"]["properties"] and "node" in defs["rules.Verdict"]["properties"]


def test_the_profile_summary_is_findings_summary_and_an_old_one_still_reads():
    """profile counted errors and warnings by hand (no info); now findings.summary's counts with its
    own 'findings' total and the command's exit code; a document written before (no 'info') validates."""
    import dataclasses

    from envdoctor.findings import Finding, summary
    from envdoctor.profile.facts import Throughput
    from envdoctor.profile.host import ProfileRun
    from envdoctor.profile.render import document

    found = (Finding("ED990", "warning", "a slow loader"), Finding("ED991", "info", "one sync a step"))
    run = ProfileRun(None, None, {}, {}, None, None, (), None, "the script reached too few steps")  # type: ignore[arg-type]
    nothing = Throughput(**{f.name: None for f in dataclasses.fields(Throughput)})
    doc = document(run, nothing, found, ["train.py"], 2)
    assert doc["summary"] == {**summary(found), "findings": 2, "exit_code": 2}
    assert doc["summary"]["info"] == 1
    validate(doc, "profile")
    old = dict(doc, summary={k: v for k, v in doc["summary"].items() if k != "info"})
    validate(old, "profile")


def test_the_report_upgrade_counts_as_findings_summary():
    from envdoctor.findings import summary_of

    old = {
        "schema": "envdoctor.report/0",
        "host": "gpu-01",
        "created": "2026-11-01T09:00:00Z",
        "envdoctor_version": "0.0.3",
        "facts": {},
        "problems": [{"code": "ED102", "severity": "error"}, {"code": "ED103", "severity": "loud"}, 7],
    }
    up = documents._report_from_0(old)
    assert up["summary"] == summary_of(["error", "loud"]) == {"errors": 1, "warnings": 0, "info": 0, "exit_code": 1}

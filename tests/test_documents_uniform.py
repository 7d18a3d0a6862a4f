"""Issue 26, section 4: every document carries the same header, its schema is printed by
``envdoctor schema NAME`` and resolves offline with plain ``jsonschema.validate``, and ``--json``
works before or after a subcommand.

Each document is written here by the command a person runs (on machines rebuilt from recorded
output, tests/machines.py), and checked against the schema as ``envdoctor schema KIND`` prints it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.documents import DOCUMENTS, created_at, stamp
from tests.documents import HEADER, ROOT
from tests.machines import h200
from tests.torchtest import needs_torch

FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
SNAPSHOT = ROOT / "tests/fixtures/snapshots/h200-580.json"
H200_CHECK = ROOT / "tests/fixtures/h200-driver580-cuda13/envdoctor-check.json"


FIXTURES = Path(__file__).parent / "fixtures"


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def printed_schema(kind):
    r = invoke("schema", kind)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def written(kind, r):
    """The document a command printed, checked with plain jsonschema against `envdoctor schema KIND`."""
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, printed_schema(kind))  # no registry, no network: self-contained
    assert doc["schema"] == next(d.schema for d in DOCUMENTS if d.kind == kind)
    assert list(doc)[:3] == list(HEADER[:3]) and doc["created_at"] and doc["envdoctor_version"]
    assert "collected_at" not in doc and doc["summary"]["exit_code"] == r.exit_code, (kind, r.exit_code)
    return doc


def _check(tmp_path):
    ctx = h200(tmp_path / "m")
    return invoke("check", "--root", str(ctx.root), *FAST, "--json", env=dict(ctx.env))


def _snapshot(tmp_path):
    ctx = h200(tmp_path / "m")
    out = tmp_path / "snap.json"
    r = invoke("snapshot", "--root", str(ctx.root), *FAST, "-o", str(out), env=dict(ctx.env))
    assert r.exit_code == 0, r.output
    r.stdout_bytes = out.read_bytes()  # the file is the document
    return r


def _verify(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr("socket.gethostname", lambda: "h200-vm")
    ctx = h200(tmp_path / "m")
    return invoke("verify", "--root", str(ctx.root), "--baseline", str(SNAPSHOT), *FAST, "--json", env=dict(ctx.env))


def _bench(tmp_path):
    from tests.test_bench_fakes import recorded_run, replay

    return CliRunner().invoke(cli, ["bench", "--python", replay(tmp_path, recorded_run("default")), "--json"])


def _topo(tmp_path):
    ctx = h200(tmp_path / "m")
    return invoke("topo", "--root", str(ctx.root), "--json", env=dict(ctx.env))


def _index(tmp_path):
    return CliRunner().invoke(
        cli,
        [
            "index",
            "cu121",
            "cu130",
            "--offline",
            "--python-version",
            "3.12",
            "--platform",
            "manylinux_2_28_x86_64",
            "--json",
        ],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "empty"), "ENVDOCTOR_INDEX_URL": None},
    )


def _fleet(tmp_path):
    for node in ("n1", "n2"):
        (tmp_path / f"{node}.json").write_text(H200_CHECK.read_text())
    return invoke("fleet", str(tmp_path / "n1.json"), str(tmp_path / "n2.json"), "--json")


def _stale(tmp_path, monkeypatch):
    """``table --stale --json`` against the local index server: exit 1, the newer releases listed."""
    from types import SimpleNamespace

    from tests.indexserver import IndexServer

    fake = SimpleNamespace(torch_releases=(SimpleNamespace(version="2.9.0"),))
    monkeypatch.setattr("envdoctor.cli.table._table", lambda: fake)
    with IndexServer() as server:
        r = invoke(
            "table",
            "--stale",
            "--json",
            "--index-url",
            server.url(),
            "--variant",
            "cu130",
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path), "ENVDOCTOR_INDEX_RETRIES": "0"},
        )
    assert r.exit_code == 1, r.output
    return r


WRITERS = {
    "report": lambda tmp, mp: _check(tmp),
    "snapshot": lambda tmp, mp: _snapshot(tmp),
    "plan": lambda tmp, mp: invoke("recommend", "--offline", "--json", "--from", str(H200_CHECK)),
    "bench": lambda tmp, mp: _bench(tmp),
    "verify": _verify,
    "table": lambda tmp, mp: invoke("table", "torch", "2.7", "--json"),
    "index": lambda tmp, mp: _index(tmp),
    "stale": _stale,
    "fit": lambda tmp, mp: invoke("fit", "Llama-3.1-8B", "--train", "--gpu", "H200", "--json"),
    "topo": lambda tmp, mp: _topo(tmp),
    "fleet": lambda tmp, mp: _fleet(tmp),
    "explain": lambda tmp, mp: invoke("explain", "--json"),
    "dockerfile": lambda tmp, mp: invoke(
        "dockerfile", str(FIXTURES / "dockerfiles" / "vllm-style.Dockerfile"), "--driver", "580.65.06", "--json"
    ),
}
#: these run a real torch in a child (CPU torch in CI)
TORCH_WRITERS = {
    "burn": lambda tmp, mp: invoke(
        "burn", "--python", sys.executable, "--seconds", "5", "--cpu", "--json", env={"HOME": str(tmp)}
    ),
    "comms": lambda tmp, mp: invoke(
        "comms",
        "--backend",
        "gloo",
        "--nproc",
        "2",
        "--python",
        sys.executable,
        "--json",
        env={"CUDA_VISIBLE_DEVICES": ""},
    ),
    "diag": lambda tmp, mp: invoke("diag", "--python", sys.executable, "--json", env={"CUDA_VISIBLE_DEVICES": ""}),
    "profile": lambda tmp, mp: invoke(
        "profile", "--json", "--steps", "2", "--", sys.executable, str(FIXTURES / "profile" / "fp32_matmul.py")
    ),
}


def test_every_kind_is_written_by_a_test_here():
    assert set(WRITERS) | set(TORCH_WRITERS) == {d.kind for d in DOCUMENTS}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_every_document_has_the_header_and_validates_plainly(kind, tmp_path, monkeypatch):
    doc = written(kind, WRITERS[kind](tmp_path, monkeypatch))
    assert created_at(doc) == doc["created_at"]


@needs_torch
@pytest.mark.parametrize("kind", sorted(TORCH_WRITERS))
def test_the_torch_documents_have_the_header_and_validate_plainly(kind, tmp_path, monkeypatch):
    written(kind, TORCH_WRITERS[kind](tmp_path, monkeypatch))


@pytest.mark.parametrize("kind", [d.kind for d in DOCUMENTS])
def test_every_printed_schema_is_self_contained(kind):
    """No $ref leaves the printed schema: each one resolves inside it, with no registry."""
    schema = printed_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    text = json.dumps(schema)
    files = {ref.partition("#")[0] for ref in re.findall(r'"\$ref": "([^"#][^"]*)"', text)}
    assert all(f'"$id": "https://envdoctor.invalid/schemas/{name}"' in text for name in files), files


def test_bench_1_refers_to_the_report_s_error_and_validates_without_a_registry():
    """The failure of issue 26: bench-1.json pointed at report-1.json and raised Unresolvable."""
    doc = json.loads((ROOT / "tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json").read_text())
    schema = printed_schema("bench")
    jsonschema.validate(doc, schema)
    doc["error"] = {"kind": "timeout"}  # no message: report-1.json#/$defs/error says no
    with pytest.raises(jsonschema.ValidationError, match="'message' is a required property"):
        jsonschema.validate(doc, schema)


def test_schema_of_an_unknown_name_exits_2_and_lists_the_names():
    r = invoke("schema", "nosuch")
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "no document named 'nosuch'" in r.output
    assert "report, snapshot, plan, bench" in r.output and "explain" in r.output


def test_schema_without_a_name_lists_every_document():
    r = invoke("schema")
    assert r.exit_code == 0 and [line.split()[0] for line in r.output.splitlines()] == [d.kind for d in DOCUMENTS]


@pytest.mark.parametrize(
    "args",
    [
        ["table", "--json", "torch", "2.7"],
        ["--json", "table", "torch", "2.7"],
        ["table", "torch", "2.7", "--json"],
        ["table", "torch", "--json", "2.7"],
    ],
)
def test_json_before_or_after_the_subcommand(args):
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["key"] == "2.7"


def test_json_before_the_command_name():
    r = invoke("--json", "explain", "ED205")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["codes"][0]["code"] == "ED205"


def test_explain_json_lists_every_code_and_range():
    from envdoctor.codes import CODES, RANGES

    doc = json.loads(invoke("explain", "--json").output)
    assert [c["code"] for c in doc["codes"]] == list(CODES) and len(doc["ranges"]) == len(RANGES)
    one = json.loads(invoke("explain", "ED205", "--json").output)
    assert [c["code"] for c in one["codes"]] == ["ED205"] and one["codes"][0]["fix"]


def test_a_saved_report_with_the_old_name_still_reads():
    old = json.loads(H200_CHECK.read_text())
    assert "collected_at" in old and "created_at" not in old
    assert created_at(old) == old["collected_at"]
    new = stamp(old, 0)
    assert new["created_at"] == old["collected_at"] and "collected_at" not in new


def test_stamp_keeps_the_summary_and_sets_the_exit_code():
    doc = stamp({"schema": "envdoctor.fit/1", "summary": {"errors": 2, "exit_code": 0}, "x": 1}, 1)
    assert list(doc) == ["schema", "envdoctor_version", "created_at", "summary", "x"]
    assert doc["summary"] == {"errors": 2, "exit_code": 1}


def test_a_fleet_of_old_and_new_reports_reads_both_names(tmp_path):
    old = json.loads(H200_CHECK.read_text())
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(stamp(old, 0)))
    r = invoke("fleet", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--json")
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.output)["summary"]["reported"] == 2


def test_recorded_documents_keep_validating(tmp_path):
    """Documents written before the header (docs/examples) still follow their schema."""
    from tests.documents import recorded

    for path, kind in (
        ("docs/examples/h200/check.json", "report"),
        ("docs/examples/h200/topo.json", "topo"),
        ("docs/examples/h200/recommend.json", "plan"),
        ("docs/examples/h200/comms.json", "comms"),
    ):
        jsonschema.validate(json.loads(recorded(ROOT / path)), printed_schema(kind))


# --- the schemas generated from the documents' types (tools/make_schema.py) ------------------------------


def _make_schema():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_schema", ROOT / "tools" / "make_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _other_types(value):
    """JSON values of other types than ``value``'s (for null: of several types, one of which the
    field's own type must refuse)."""
    if value is None:
        return [{"not": "null"}, [["not null"]], True]
    if isinstance(value, dict):
        return ["not an object"]
    if isinstance(value, str):
        return [{"not": "a string"}]
    return ["not a " + type(value).__name__]


def _refused(doc, schema, key, container=None):
    """Whether some value of another type at ``key`` (of ``container``, a part of ``doc``) is refused."""
    target = doc if container is None else container
    for other in _other_types(target[key]):
        saved = target[key]
        target[key] = other
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError:
            return True
        finally:
            target[key] = saved
    return False


@pytest.mark.parametrize("kind", sorted(set(_make_schema().GENERATED) & set(WRITERS)))
def test_a_generated_schema_accepts_the_real_document_and_rejects_a_field_of_the_wrong_type(
    kind, tmp_path, monkeypatch
):
    """Each typed top-level key of the real document, given a value of another JSON type, is refused;
    so is a wrong type one level down (some key of each object the document holds at the top)."""
    doc = json.loads(WRITERS[kind](tmp_path, monkeypatch).stdout)
    schema = printed_schema(kind)
    jsonschema.validate(doc, schema)
    own = _make_schema().schema_for(kind)["properties"]
    typed = [k for k, s in own.items() if k in doc and k != "schema" and s]
    assert typed, kind
    assert [k for k in typed if not _refused(doc, schema, k)] == [], kind
    for key in typed:
        part = (
            doc[key]
            if isinstance(doc[key], dict)
            else (doc[key][0] if isinstance(doc[key], list) and doc[key] and isinstance(doc[key][0], dict) else None)
        )
        if part and own[key] != {"type": "object", "additionalProperties": {}}:
            assert any(_refused(doc, schema, k, part) for k in list(part)), (kind, key)


def test_every_schema_is_generated_from_its_documents_type():
    """fit's, the last written by hand, is generated from envdoctor/fit/render.py's FitDocument too."""
    maker = _make_schema()
    assert set(maker.GENERATED) == {d.kind for d in DOCUMENTS}
    for kind in maker.GENERATED:
        assert "by tools/make_schema.py (do not edit by hand)" in maker.schema_for(kind)["description"], kind

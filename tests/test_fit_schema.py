"""``envdoctor.fit/1``'s schema, generated from ``envdoctor/fit/render.py``'s ``FitDocument`` (the last
schema that was written by hand): every real fit document still validates (the estimate of every
bundled model and of each option that adds or changes keys, through the command; the H200's recorded
``--measure`` sections of docs/examples/h200/; the document embedded in docs/examples/h200/fit.html),
and a field of the wrong type is refused at every level, down to the measurement's findings and MFU.
The ``--measure`` runs on the CPU torch and its ``--json`` stops are validated in
tests/test_fit_measure_cli.py and tests/test_no_gpu_exit.py."""

from __future__ import annotations

import copy
import glob
import importlib.util
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from envdoctor import documents
from envdoctor.cli import cli
from envdoctor.fit.models import bundled_models
from tests.documents import validate, validate_written

ROOT = Path(__file__).parent.parent
H200 = ROOT / "docs" / "examples" / "h200"


def _make_schema():
    spec = importlib.util.spec_from_file_location("make_schema", ROOT / "tools" / "make_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fit_json(*args: str) -> dict:
    r = CliRunner().invoke(cli, ["fit", *args, "--json"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    validate_written(doc, "fit", r.exit_code)
    return doc


def recorded_measurements() -> list:
    out = []
    for path in sorted(glob.glob(str(H200 / "fit-*.json"))):
        data = json.loads(Path(path).read_text())
        rows = data.get("rows") or [r for call in data.get("calls", []) for r in call.get("rows", [])]
        out += [r["measurement"] for r in rows if r.get("measurement")]
    return out


def measurement_schema() -> dict:
    """The generated schema's ``measurement`` part, alone (its $defs with it)."""
    whole = documents.schema("fit")
    return {"$schema": whole["$schema"], **whole["properties"]["measurement"], "$defs": whole["$defs"]}


def test_the_schema_is_generated_from_the_builders_type():
    maker = _make_schema()
    assert "fit" in maker.GENERATED
    assert maker.check(["fit"], ROOT / "envdoctor" / "schemas") == []  # the file is what the type says
    assert "generated from envdoctor.fit.render:FitDocument" in documents.schema("fit")["description"]


@pytest.mark.parametrize("name", [m.name for m in bundled_models().models])
def test_every_bundled_models_estimate_validates(name):
    infer = fit_json(name, "--gpu", "H200")
    assert infer["workload"]["mode"] == "infer" and infer["gpus"][0]["name"] == "NVIDIA H200"
    train = fit_json(name, "--train", "--gpu", "RTX 4090")
    assert train["workload"]["mode"] == "train"


@pytest.mark.parametrize(
    "args",
    [
        [
            "Llama-3.1-8B",
            "--train",
            "--lora",
            "16",
            "--lora-targets",
            "q_proj,v_proj",
            "--grad-checkpointing",
            "--gpu",
            "RTX 4090",
            "--gpu",
            "H200",
        ],
        ["Llama-3.1-8B", "--train", "--quant", "int4", "--lora", "8", "--memory", "24GiB"],
        [
            "Qwen2.5-7B",
            "--train",
            "--dtype",
            "fp32",
            "--amp",
            "bf16",
            "--zero",
            "3",
            "--gpus",
            "8",
            "--memory",
            "80GiB",
        ],
        [
            "Llama-3.1-8B",
            "--train",
            "--ddp",
            "--gpus",
            "4",
            "--optimizer",
            "adamw8bit",
            "--loop",
            "trainer",
            "--gpu",
            "H100 SXM",
        ],
        ["Llama-3.1-70B", "--train", "--pp", "4", "--gpu", "H200"],
        ["Llama-3.1-70B", "--tp", "4", "--kv-dtype", "fp16", "--gpu", "H200"],
        ["Mixtral-8x7B-v0.1", "--device-map", "auto", "--gpus", "2", "--gpu", "H200", "--attention", "eager"],
        [
            "Qwen3-30B-A3B",
            "--train",
            "--optimizer",
            "adafactor",
            "--alloc-conf",
            "expandable_segments:True",
            "--memory",
            "80GB",
        ],
        ["bert-base-uncased", "--train", "--seq", "512", "--fsdp", "--gpus", "2", "--memory", "16GiB"],
        ["gpt2", "--infer", "--seq", "512", "--new-tokens", "64", "--no-local"],
        ["Llama-3.2-1B", "--train", "--dtype", "fp16", "--gpu", "Tesla T4"],
    ],
)
def test_each_option_that_adds_or_changes_keys_validates(args):
    doc = fit_json(*args)
    assert doc["term_details"] and doc["phases"] and doc["activation_detail"] is not None


def test_the_recorded_h200_measurements_validate():
    found = recorded_measurements()
    assert len(found) >= 100
    schema = measurement_schema()
    for m in found:
        jsonschema.validate(m, schema)
    assert "measured" in {m["status"] for m in found}
    assert any(m["findings"] for m in found) and any(m["mfu"] for m in found)


def test_the_document_of_the_recorded_html_page_validates():
    page = (H200 / "fit.html").read_text()
    embedded = re.search(r'<script type="application/json" id="envdoctor-document">(.*?)</script>', page, re.S)
    assert embedded is not None
    doc = json.loads(embedded.group(1))
    validate(doc, "fit")  # written before peak_low_bytes and the workload's newer keys: not required
    assert "peak_low_bytes" not in doc


def _real_with_measurement() -> dict:
    """A document the command writes, its ``measurement`` one the H200 recorded (findings, MFU and all)."""
    doc = fit_json("Llama-3.1-8B", "--train", "--gpu", "H200")
    doc["measurement"] = next(m for m in recorded_measurements() if m["findings"] and m["mfu"] and m["matmul"])
    validate(doc, "fit")
    return doc


#: (a path into the document, a value of the wrong type or outside the type's values)
WRONG = [
    (["model", "layers"], 0),
    (["model", "family"], 7),
    (["workload", "optimizer"], "adam"),
    (["workload", "zero"], 4),
    (["workload", "device_map"], "balanced"),
    (["term_details", 0, "bytes"], "1 GiB"),
    (["phases", 0, "terms", "weights"], -1),
    (["activation_detail", "*", 0, "bytes_per_token"], "x"),
    (["flops", "per_step"], None),
    (["gpus", 0, "spare_bytes"], 1.5),
    (["max_batch"], "8"),
    (["summary", "exit_code"], 3),
    (["created_at"], 1),
    (["measurement", "status"], "ok"),
    (["measurement", "device", "kind"], "rocm"),
    (["measurement", "phases", 0, "peak_reserved"], "x"),
    (["measurement", "matmul", "tflops"], "fast"),
    (["measurement", "mfu", "matmul_n"], "n"),
    (["measurement", "comparison", "rows", 0, "error"], "5%"),
    (["measurement", "findings", 0, "code"], "ED100"),
    (["measurement", "findings", 0, "severity"], "fatal"),
]


@pytest.mark.parametrize("path, value", WRONG, ids=lambda x: "/".join(map(str, x)) if isinstance(x, list) else "")
def test_a_field_of_the_wrong_type_is_refused(path, value):
    doc = copy.deepcopy(_real_with_measurement())
    part = doc
    for step in path[:-1]:
        part = part[next(iter(part))] if step == "*" else part[step]
    assert path[-1] in part or isinstance(path[-1], int), path
    part[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, "fit")


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None is a types.UnionType from Python 3.10")
def test_an_x_or_none_annotation_is_the_same_schema_as_optional():
    """fit's dataclasses spell ``int | None`` (types.UnionType): it was an empty schema, which takes anything."""
    maker = _make_schema()
    defs: dict = {}
    assert maker._type(eval("int | None"), defs) == {"type": ["integer", "null"]}
    assert maker._type(eval("int | str"), defs) == {"type": ["integer", "string"]}

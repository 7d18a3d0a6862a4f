"""``envdoctor fit --measure`` through CliRunner: the CPU run of a tiny config, its JSON against the
schema, and the usage errors (exit 2, one line)."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests.documents import validate
from tests.torchtest import needs_torch

TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}


@pytest.fixture()
def tiny(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(TINY))
    return str(p)


def run(*args: str):
    return CliRunner().invoke(cli, ["fit", *args])


@needs_torch
def test_measure_on_the_cpu_prints_the_estimate_beside_the_measurement(tiny):
    r = run(
        tiny,
        "--train",
        "--batch",
        "2",
        "--seq",
        "64",
        "--dtype",
        "fp32",
        "--measure",
        "--cpu",
        "--python",
        sys.executable,
    )
    assert r.exit_code == 0, r.output
    assert "Measured on the CPU (a tiny config, clearly not a GPU" in r.output
    assert "built as envdoctor's reference decoder (no transformers)" in r.output
    assert "peak allocated (CPU: live tensor bytes)" in r.output and "optimizer states" in r.output
    assert "within its target (-5% to +10%)" in r.output
    assert "MFU convention: PaLM/nanoGPT" in r.output
    assert "ED636 info: Measured on the CPU: tensor bytes only" in r.output


@needs_torch
def test_measure_json_follows_the_schema(tiny):
    r = run(
        tiny,
        "--infer",
        "--seq",
        "16",
        "--new-tokens",
        "2",
        "--dtype",
        "fp32",
        "--measure",
        "--cpu",
        "--python",
        sys.executable,
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc, "fit")
    m = doc["measurement"]
    assert m["status"] == "measured" and m["device"]["kind"] == "cpu" and m["builder"] == "reference"
    assert m["terms"]["weights"] == 214_336 * 4 + 8 * 4 and m["comparison"]["peak"]["measured"] == m["peak_bytes"]
    assert [f["code"] for f in m["findings"]] == ["ED636"]


@needs_torch
def test_measure_without_a_gpu_says_it_needs_one(tiny):
    r = run(tiny, "--train", "--seq", "16", "--dtype", "fp32", "--measure", "--python", sys.executable)
    assert r.exit_code == 2, r.output
    assert "--measure needs a GPU" in r.output and "add --cpu" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--cpu"], "--cpu goes with --measure"),
        (["--measure", "--zero", "3", "--gpus", "4"], "--measure runs on one GPU, so it cannot measure --zero 3"),
        (["--measure", "--python", "/nonexistent/python3"], "--python /nonexistent/python3: not found"),
    ],
)
def test_measure_usage_errors(tiny, args, message):
    r = run(tiny, "--train", "--seq", "16", *args)
    assert r.exit_code == 2, r.output
    assert message in r.output


def test_cpu_refuses_a_real_model():
    r = run("Llama-3.1-8B", "--train", "--measure", "--cpu", "--python", sys.executable)
    assert r.exit_code == 2
    assert "--measure --cpu takes tiny configs only" in r.output


def test_measure_with_a_python_without_torch_could_not_start_exit_2(tiny, tmp_path):
    import venv

    bare = tmp_path / "venv"
    venv.create(bare, with_pip=False)
    r = run(tiny, "--train", "--seq", "16", "--dtype", "fp32", "--measure", "--python", str(bare / "bin" / "python"))
    assert r.exit_code == 2, r.output
    assert "envdoctor fit: --measure: torch is not installed in" in r.output
    assert "ED635" not in r.output and "Traceback" not in r.output


def test_measure_json_with_a_python_without_torch_still_prints_the_document_with_exit_2(tiny, tmp_path):
    import venv

    from tests.documents import validate_written

    bare = tmp_path / "venv"
    venv.create(bare, with_pip=False)
    r = run(
        tiny,
        "--train",
        "--seq",
        "16",
        "--dtype",
        "fp32",
        "--measure",
        "--python",
        str(bare / "bin" / "python"),
        "--json",
    )
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    validate_written(doc, "fit", 2)
    assert doc["measurement"]["status"] == "no_torch" and "torch is not installed in" in doc["measurement"]["message"]
    assert doc["measurement"]["findings"] == [] and doc["peak_bytes"] > 0
    assert r.stderr.strip().splitlines()[-1].startswith("envdoctor fit: --measure: torch is not installed in")

"""``check`` and ``snapshot`` when a probe fails: the report says what failed and never "no problems found".

Issue 12: nvidia-smi printing 50 MB on one line made check exit 3 and then say "nvidia-smi not
installed", "NVML ok" and "no problems found" (all false), and snapshot wrote nothing; when
``import torch`` segfaulted or hung the report still said "2.11.0+cu130 (CPU-only build)"; conda
and the torch child ran past ``--timeout``; ``--suppress ED999`` was accepted and suppressed
findings vanished from the JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jsonschema

from envdoctor.cli import cli
from tests.fakes import FakeBin, cli_runner
from tests.faketorch import make_torch, torch_env
from tests.machines import cpu_box, h200, h200_smi

SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/report-1.json").read_text())
SKIP_ALL = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]


def invoke(ctx, *args, env=None, command="check"):
    return cli_runner().invoke(
        cli, [command, "--root", str(ctx.root), *args], env={**ctx.env, **(env or {})}, catch_exceptions=False
    )


def _flat(text):
    return " ".join(text.split())


def test_nvidia_smi_printing_50_mb_on_one_line_is_output_envdoctor_cannot_read(tmp_path):
    ctx = h200(tmp_path)
    h200_smi(FakeBin(tmp_path), query="x" * 50_000_000 + "\n")
    r = invoke(ctx, *SKIP_ALL)
    assert r.exit_code in (0, 1), r.output + r.stderr  # not 3: no part of envdoctor failed
    out = _flat(r.output)
    assert "nvidia-smi printed output envdoctor cannot read (a line of more than 65536 characters)" in out
    assert "nvidia-smi not installed" not in out and "NVML ok" not in out
    assert "no problems found" not in out


def test_snapshot_still_writes_when_nvidia_smi_prints_50_mb(tmp_path):
    ctx = h200(tmp_path)
    h200_smi(FakeBin(tmp_path), query="x" * 50_000_000 + "\n")
    r = invoke(ctx, *SKIP_ALL, "-o", str(tmp_path / "snap.json"), command="snapshot")
    assert r.exit_code == 0, r.output + r.stderr
    doc = json.loads((tmp_path / "snap.json").read_text())
    assert doc["facts"]["driver"]["smi_error"]["kind"] == "unparseable"
    assert doc["facts"]["driver"]["smi_error"]["message"].startswith("nvidia-smi printed output envdoctor cannot read")


def test_failed_probe_nothing_else_covers_is_ed902_not_no_problems(tmp_path):
    ctx = cpu_box(tmp_path)
    FakeBin(tmp_path).add("conda", hang=True)
    started = time.monotonic()
    r = invoke(ctx, "--skip", "torch", "--skip", "docker", "--skip", "toolkits", "--timeout", "1")
    took = time.monotonic() - started
    out = _flat(r.output)
    assert "! ED902 warning: envdoctor could not read conda: this part of the report is missing" in out
    assert "conda did not answer in 1 s" in out and "no problems found" not in out
    assert took < 8, took  # conda is bounded by --timeout (it was floored at 30 s)


def test_conda_gets_the_timeout_without_a_floor(tmp_path):
    ctx = cpu_box(tmp_path)
    FakeBin(tmp_path).add("conda", hang=True)
    r = invoke(ctx, "--skip", "torch", "--skip", "docker", "--skip", "toolkits", "--timeout", "0.5", "--json")
    doc = json.loads(r.output)
    assert doc["facts"]["conda"]["error"]["message"].endswith("did not answer in 0.5 s")
    assert doc["facts"]["probe_seconds"]["conda"] < 5


def test_suppress_an_unknown_code_is_a_usage_error(tmp_path):
    ctx = cpu_box(tmp_path)
    r = invoke(ctx, *SKIP_ALL, "--suppress", "ED999")
    assert r.exit_code == 2
    assert "ED999: no such finding code (envdoctor explain lists them)" in r.stderr
    r = invoke(ctx, *SKIP_ALL, "--suppress", "banana")
    assert r.exit_code == 2 and "banana: finding codes look like ED305" in r.stderr


def test_suppressed_findings_are_recorded_in_the_json(tmp_path):
    ctx = cpu_box(tmp_path)
    r = invoke(ctx, *SKIP_ALL, "--json", "--suppress", "ed112,ED105")
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert {f["code"] for f in doc["findings"]}.isdisjoint({"ED112", "ED105"})
    assert doc["suppressed"]["codes"] == ["ED112", "ED105"]  # as asked, whether they fired or not
    assert [f["code"] for f in doc["suppressed"]["findings"]] == ["ED112"]  # what they hid here
    assert doc["suppressed"]["findings"][0]["title"] == "No NVIDIA GPU on this machine: torch will run on the CPU"
    text = invoke(ctx, *SKIP_ALL, "--suppress", "ED112").output
    assert "suppressed (--suppress): ED112 (info)" in text


def test_unsuppressed_report_has_no_suppressed_key(tmp_path):
    doc = json.loads(invoke(cpu_box(tmp_path), *SKIP_ALL, "--json").output)
    assert "suppressed" not in doc


def _torch_machine(tmp_path, on_import):
    ctx = h200(tmp_path)
    site = make_torch(tmp_path, version="2.11.0+cu130", cuda="13.0", on_import=on_import)
    return ctx, {**torch_env(site), "PATH": ctx.env["PATH"]}


def test_import_torch_segfault_is_not_a_cpu_only_build(tmp_path):
    ctx, env = _torch_machine(tmp_path, "segfault")
    r = invoke(ctx, "--skip", "conda", "--skip", "docker", "--skip", "toolkits", "--python", sys.executable, env=env)
    out = _flat(r.output)
    assert "torch installed (2.11.0+cu130), but import torch crashed: SIGSEGV during import torch" in out
    assert "CPU-only build" not in out and "no problems found" not in out and r.exit_code == 1


def test_import_torch_hanging_past_torch_timeout_is_an_error_exit_1(tmp_path):
    ctx, env = _torch_machine(tmp_path, "hang")
    started = time.monotonic()
    r = invoke(
        ctx,
        "--skip",
        "conda",
        "--skip",
        "docker",
        "--skip",
        "toolkits",
        "--python",
        sys.executable,
        "--torch-timeout",
        "2",
        env=env,
    )
    took = time.monotonic() - started
    out = _flat(r.output)
    assert (
        "torch installed (2.11.0+cu130), but import torch did not finish in 2 s (--torch-timeout gives it longer)"
        in out
    )
    assert "CPU-only build" not in out and "no problems found" not in out
    assert "ED201 error" in out and took < 15, took
    assert r.exit_code == 1

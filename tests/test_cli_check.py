"""``envdoctor check`` end to end through Click, on machines rebuilt from recorded output."""

import dataclasses
import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.render.json import parse_report
from tests.fakes import FakeBin
from tests.machines import SMI_MISMATCH, cpu_box, h200

SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/report-1.json").read_text())
FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]


def invoke(ctx, *args):
    env = dict(ctx.env)
    return CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *FAST, *args], env=env, catch_exceptions=False)


def test_h200_text_report(tmp_path):
    r = invoke(h200(tmp_path))
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "Kernel module 580.159.04 (open kernel module, /sys/module/nvidia/version)" in out
    assert "NVIDIA H200, compute 9.0, 140 GiB, 00000000:00:06.0" in out
    assert "Driver's CUDA 13.0: the newest CUDA this driver runs" in out
    assert "Verdict: no problems found." in out


def test_json_follows_the_schema_and_reads_back(tmp_path):
    r = invoke(h200(tmp_path), "--json")
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema"] == "envdoctor.report/1" and doc["summary"]["exit_code"] == 0
    facts, findings, _ = parse_report(r.output)
    assert facts.driver.gpus[0].name == "NVIDIA H200" and facts.driver.driver_cuda == "13.0"


def test_markdown_block(tmp_path):
    r = invoke(h200(tmp_path), "--markdown")
    assert (
        r.output.startswith("<details><summary>envdoctor") and "| Driver | 580.159.04 (from nvidia-smi) |" in r.output
    )
    assert r.output.rstrip().endswith("</details>")


def test_redact_masks_uuids_host_and_home(tmp_path):
    r = invoke(h200(tmp_path), "--redact", "--json")
    assert "c7d3a8fe-462a" not in r.output and "GPU-<uuid>" in r.output


def test_secrets_masked_even_without_redact(tmp_path):
    ctx = h200(tmp_path, env={"PIP_EXTRA_INDEX_URL": "https://ci:t0ps3cret@pypi.corp.example/simple"})
    for fmt in ([], ["--json"], ["--markdown"]):
        r = invoke(ctx, *fmt)
        assert "t0ps3cret" not in r.output


def test_upgrade_without_reboot_exits_1_with_the_fix(tmp_path):
    ctx = h200(
        tmp_path,
        files={
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
            "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
        },
    )
    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *FAST], env=bin.env())
    assert r.exit_code == 1
    # the recorded H200 is a docker container: the reboot is the host's
    assert "ED102 error: Driver upgraded without a reboot" in r.output and "# on the host: sudo reboot" in r.output


def test_hung_nvidia_smi_still_gives_the_report(tmp_path):
    ctx = h200(tmp_path)
    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", hang=True)
    r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), "--timeout", "1", *FAST], env=bin.env())
    assert "nvidia-smi did not answer in 1 s" in r.output and "Verdict:" in r.output


def test_machine_without_gpu(tmp_path):
    ctx = cpu_box(tmp_path)
    r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *FAST], env=ctx.env)
    assert r.exit_code == 0 and "no NVIDIA display/3D controller" in r.output
    assert "ED112 info: No NVIDIA GPU on this machine: torch will run on the CPU" in r.output
    assert "ED105" not in r.output  # nothing to pass through: the PCI bus shows no NVIDIA GPU
    # a machine that still needs torch must not read a bare "no problems found"
    assert "Verdict: no problems found; 1 note(s) above say what comes next." in r.output


def test_a_crashing_probe_exits_3_and_keeps_the_rest(tmp_path, monkeypatch):
    import envdoctor.probes.pci as pci

    def boom(ctx):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(pci, "probe", boom)
    r = invoke(h200(tmp_path))
    assert r.exit_code == 3
    assert "envdoctor's pci probe failed (RuntimeError: simulated bug)" in r.output
    assert "NVIDIA H200" in r.output


def test_usage_errors_exit_2(tmp_path):
    assert CliRunner().invoke(cli, ["check", "--json", "--markdown"]).exit_code == 2
    assert CliRunner().invoke(cli, ["check", "--skip", "everything"]).exit_code == 2


def test_no_color_on_a_pipe_and_with_no_color(tmp_path):
    r = invoke(h200(tmp_path))
    assert "\x1b[" not in r.output


def test_a_crash_in_starting_the_python_probe_exits_3_and_keeps_the_rest(tmp_path, monkeypatch):
    import envdoctor.probes.python as python_probe

    def boom(ctx, with_torch=True):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(python_probe, "start", boom)
    r = invoke(h200(tmp_path))
    assert r.exit_code == 3
    assert "envdoctor's python probe failed (RuntimeError: simulated bug)" in r.output
    assert "NVIDIA H200" in r.output


def test_the_probes_started_before_checks_imports_still_give_every_fact(tmp_path):
    """check starts the probes (the target Python's child first) before it loads the table, the
    checks and the renderers; the report still holds the target Python, the indexes its pip is
    configured with, and the system GCC (the image's: under --root the host's gcc is not run)."""
    ctx = h200(tmp_path)
    (ctx.root / "usr/lib/gcc/x86_64-linux-gnu/13").mkdir(parents=True)
    (ctx.root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (ctx.root / "usr/bin/gcc").symlink_to("gcc-13")
    bin = FakeBin(tmp_path / "b")
    bin.add("gcc", by_args={"--version": ("gcc (Fake 13.2.0-1) 13.2.0\nCopyright (C) 2023\n", "", 0)})
    env = dict(ctx.env, PATH=f"{bin.dir}:{ctx.env['PATH']}", PIP_INDEX_URL="https://mirror.example/simple")
    r = invoke(dataclasses.replace(ctx, env=env), "--json")
    facts = json.loads(r.output)["facts"]
    py = facts["python"]
    assert py["chosen_by"] == "python3 on PATH" and py["error"] is None and py["version"].count(".") == 2
    assert py["index_config"]["indexes"][0]["url"] == "https://mirror.example/simple"
    assert facts["system"]["gcc"] == "gcc 13 (/usr/lib/gcc/x86_64-linux-gnu/13 in the image; not run)"
    assert facts["system"]["gcc_version"] == "13"

"""``envdoctor burn`` from the command line: options, exit codes, the JSON document, the plot."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests.fakenvml import FakeNvml
from tests.test_burn_fakes import fake_target, healthy_steps

#: The top-level keys of envdoctor.burn/1 (written down for the JSON Schema to come)
TOP = {
    "schema",
    "python",
    "chosen_by",
    "python_version",
    "torch_version",
    "torch_cuda",
    "cpu_run",
    "seconds",
    "device",
    "dtypes",
    "memtest_s",
    "created_at",
    "wall_s",
    "interrupted",
    "sample_interval_s",
    "sampling",
    "xid_watch",
    "gpus",
    "findings",
    "notes",
    "error",
    "envdoctor_version",
    "summary",
}  # the header of every document (documents.stamp)


@pytest.fixture
def nvml(monkeypatch):
    """NVML for the command: the H200's recorded answers, two GPUs, or none (set ``.fail``)."""
    fake = FakeNvml.recorded("h200-driver580-cuda13", gpus=2)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def burn(*args, memtest=None):
    """``envdoctor burn ARGS``; ``memtest``: the memory test's limit in seconds, through the test-only
    ENVDOCTOR_TEST_BURN_MEMTEST_SECONDS (no product option for it)."""
    env = {"ENVDOCTOR_TEST_BURN_MEMTEST_SECONDS": memtest} if memtest is not None else {}
    return CliRunner().invoke(cli, ["burn", *args], env=env)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--seconds", "4"], "'--seconds': '4': give a number from 5 to 86400 seconds"),
        (["--seconds", "90000"], "'90000': give a number from 5 to 86400 seconds"),
        (["--seconds", "nan"], "'nan': give a number from 5 to 86400 seconds"),
        (["--device", "x"], "'x': give a GPU index (0, 1, ... up to 1023) or 'all'"),
        (["--device", "\u00b2"], "'\u00b2': give a GPU index (0, 1, ... up to 1023) or 'all'"),
        (["--dtype", "int8"], "'int8': choose from bf16, fp16, tf32, fp32, fp64"),
        (["--python", "/nonexistent/python3"], "--python /nonexistent/python3: not found or not executable"),
    ],
)
def test_bad_options_are_usage_errors(args, message):
    r = burn(*args)
    assert r.exit_code == 2 and message in r.output


def test_a_device_past_the_last_gpu_exits_2(tmp_path, nvml):
    py = fake_target(tmp_path, {"*": [("hang",)]})
    r = burn("--python", py, "--device", "5", "--seconds", "5")
    assert r.exit_code == 2 and "GPU 5 does not exist: there are 2 GPU(s)" in r.output


def test_a_faulty_gpu_exits_1_and_the_json_holds_every_sample(tmp_path, nvml):
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": healthy_steps(1, extra=[("hang",)])})
    r = burn("--python", py, "--seconds", "5", "--json", "--hang-timeout", "2", memtest="0.5")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert set(doc) == TOP and doc["schema"] == "envdoctor.burn/1"
    assert [g["verdict"] for g in doc["gpus"]] == ["OK", "FAULTY"]
    assert doc["gpus"][0]["samples"] and set(doc["gpus"][0]["samples"][0]) == {
        "t",
        "temperature_c",
        "memory_temperature_c",
        "power_w",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "reasons_mask",
        "reasons",
        "fault",
        "utilization_pct",
        "energy_j",
    }
    assert "verdict: FAULTY: GPU 1 (ED816)" in r.stderr


def test_the_text_report_names_each_gpu_its_verdict_and_the_summary(tmp_path, nvml):
    py = fake_target(tmp_path, {"0": healthy_steps(0), "1": healthy_steps(1)})
    r = burn("--python", py, "--seconds", "5", memtest="0.5")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "GPU 0, NVIDIA H200 (compute capability 9.0): OK" in out and "GPU 1, NVIDIA H200" in out
    assert "verdict: OK: every GPU (2) passed" in out
    assert "bf16 sust/burst" in out and "power median" in out
    assert "burn: 5 s per GPU in" in r.stderr


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (CPU is enough)")
def test_cpu_only_machine_exits_2_and_runs_on_the_cpu_only_with_cpu(nvml, tmp_path):
    """qa2: burn on a machine without a GPU exited 0 with verdict NONE (nothing measured is never
    OK): now exit 2 with one line, before any load; --cpu asks for the CPU trial, which exits 0."""
    nvml.init_error = 12  # libnvidia-ml.so.1 not found
    png = tmp_path / "burn.png"
    no = burn("--python", sys.executable, "--seconds", "5", "--dtype", "fp32", memtest="0.3")
    assert no.exit_code == 2, no.output
    assert "burn: starting" not in no.stderr and "CPU run" not in no.stdout
    assert no.stderr.splitlines()[-1] == (
        "envdoctor burn: run burn on a machine with an NVIDIA GPU, or add --cpu to "
        "try the load on the CPU (every product checked; no GPU verdict)"
    )
    assert "error: no GPU to load: torch " in no.stdout
    r = burn(
        "--python", sys.executable, "--seconds", "5", "--dtype", "fp32", "--plot", str(png), "--cpu", memtest="0.3"
    )
    assert r.exit_code == 0, r.output
    assert "CPU run: the load ran on the CPU" in r.stdout and "verdict: CPU run, every product correct" in r.stdout
    if importlib.util.find_spec("matplotlib") is None:
        assert "no plot written: matplotlib is not installed in" in r.stderr and not png.exists()
        assert "the terminal chart instead:" in r.stderr and "fp32 TFLOP/s" in r.stderr
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_refuses_a_directory_at_once_and_never_replaces_a_symlink(tmp_path, nvml):
    (tmp_path / "dir.png").mkdir()
    assert burn("--plot", str(tmp_path / "dir.png")).exit_code == 2
    (tmp_path / "target.png").write_text("keep me")
    (tmp_path / "out.png").symlink_to(tmp_path / "target.png")
    py = fake_target(tmp_path / "py", {"*": healthy_steps(0)})
    r = burn("--python", py, "--seconds", "5", "--device", "0", "--plot", str(tmp_path / "out.png"), memtest="0.5")
    assert "exists and is not a regular file" in r.stderr
    assert (tmp_path / "out.png").is_symlink() and (tmp_path / "target.png").read_text() == "keep me"


def test_sigterm_to_envdoctor_stops_the_children_and_reports_what_ran(tmp_path):
    pidfile = tmp_path / "child.pid"
    py = fake_target(tmp_path, {"*": healthy_steps(0, rates=[660.0] * 300, each=0.1)})
    # the fake writes its pid first, so the test can check it is gone afterwards
    exe = tmp_path / "python3"
    exe.write_text(
        exe.read_text().replace(
            "sys.stdin.read()\n", f"sys.stdin.read()\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n", 1
        )
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    proc = subprocess.Popen(
        [sys.executable, "-m", "envdoctor", "burn", "--python", py, "--seconds", "60", "--device", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 20
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert "stopped early" in out and "ED826" in out, out + err
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_a_target_that_answers_with_nothing_measured_is_a_failed_run_not_cpu_none(tmp_path, nvml):
    """The burn child's schema, but no device, no phase, no memory test: not "CPU NONE" and exit 0."""
    empty = [
        ("emit", "python", {"python_version": "3.12.3", "torch_version": "2.11.0+cu130", "torch_cuda": "13.0"}),
        ("result", {"schema": "envdoctor.burn.child/1", "device": {}, "phases": [], "memtest": None, "notes": []}),
        ("exit", 0),
    ]
    nvml.init_error = 12
    py = fake_target(tmp_path, {"*": empty})
    r = burn("--python", py, "--seconds", "5", memtest="0.3")
    assert r.exit_code == 1, r.output
    assert "error ED830: The load answered but measured nothing" in r.stdout
    doc = json.loads(burn("--python", py, "--seconds", "5", "--json", memtest="0.3").stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["ED830"]


@pytest.mark.parametrize("args", [("--size", "32"), ("--memtest-seconds", "1")])
def test_the_test_switches_are_not_options_of_the_product(args):
    """They were hidden options; the tests reach them through test-only variables now (docs/cli.md)."""
    r = burn(*args)
    assert r.exit_code == 2 and "No such option" in r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "601", "soon"])
def test_the_test_only_memtest_variable_refuses_what_is_not_a_time(value):
    r = burn("--seconds", "5", memtest=value)
    assert r.exit_code == 2 and "ENVDOCTOR_TEST_BURN_MEMTEST_SECONDS" in r.stderr and "for tests only" in r.stderr

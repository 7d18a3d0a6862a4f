"""``envdoctor bench`` through Click's CliRunner: output, --json, exit codes, usage errors."""

from __future__ import annotations

import json
import sys

import pytest

from envdoctor.bench.command import bench
from envdoctor.bench.facts import BenchResult
from envdoctor.facts.serde import from_data
from tests.fakes import cli_runner
from tests.test_bench_child import needs_torch
from tests.test_bench_fakes import child_doc, fake_python, recorded_run, replay


def run(*args: str, env=None):
    return cli_runner().invoke(bench, list(args), env=env)


def test_h200_replay_prints_table_chart_and_verdict(tmp_path):
    r = run("--python", replay(tmp_path, recorded_run("default")))
    assert r.exit_code == 0, r.output
    assert "Tensor Cores confirmed: fp16 runs 12.4x fp32" in r.stdout
    assert "TFLOP/s, log scale" in r.stdout and "fp16   8192" in r.stdout
    assert "bench: [16/16] bf16 n=8192: 658.5 TFLOP/s" in r.stderr  # progress


def test_h200_replay_json_is_versioned_and_reloads(tmp_path):
    r = run("--python", replay(tmp_path, recorded_run("default")), "--json")
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["schema"] == "envdoctor.bench/1" and len(data["points"]) == 16
    assert data["points"][0]["repeats_ms"] and "samples" in data
    assert from_data(BenchResult, data).verdicts[0].state == "confirmed"


def test_torch_that_cannot_see_the_gpu_exits_1(tmp_path):
    raw = recorded_run("nocuda")
    r = run("--python", replay(tmp_path, raw), "--size", "512", "--cpu")
    # NVML is the test machine's own here: with no GPU the verdict is "No GPU", with one it fails
    assert r.exit_code in (0, 1) and "fp32 measured on the CPU" in r.stdout


def test_no_torch_is_one_line_and_exit_2_a_run_that_could_not_start(tmp_path):
    doc = {"schema": "envdoctor.bench.child/1", "error": {"kind": "no_torch", "message": "x"}}
    python = fake_python(tmp_path, result=doc)
    r = run("--python", python)
    assert r.exit_code == 2 and r.stdout == ""
    lines = [line for line in r.stderr.splitlines() if not line.startswith("bench:")]
    assert lines == [
        f"envdoctor bench: torch is not installed in {python} (install torch there "
        "(`envdoctor recommend --python PATH` plans it for that interpreter) or point --python at one that has it)"
    ]


def test_hang_is_one_line_and_exit_1(tmp_path):
    r = run("--python", fake_python(tmp_path, hang=True), "--timeout", "1")
    assert r.exit_code == 1
    assert "did not finish the benchmark in 1 s" in r.stderr


def test_garbage_from_the_target_is_exit_1_as_the_docs_say(tmp_path):
    """Issue 12: a target printing garbage was exit 3 ("a bug"); bench's docs promise 1 for a run that failed."""
    r = run("--python", fake_python(tmp_path, stdout="Segmentation fault?\n"))
    assert r.exit_code == 1 and "printed no envdoctor result" in r.stderr
    assert "writes to standard output or ends the process early" in r.stderr


def test_partial_json_from_the_target_is_exit_1(tmp_path):
    cut = '{"envdoctor_child": 2, "kind": "result", "result": {"schema": "envdoctor.bench.child/1", "poi\n'
    r = run("--python", fake_python(tmp_path, stdout=cut))
    assert r.exit_code == 1 and "printed no envdoctor result" in r.stderr


def test_envdoctors_own_script_failing_is_exit_3(tmp_path):
    doc = {"schema": "envdoctor.bench.child/1", "error": {"kind": "internal", "message": "KeyError: 'sizes'"}}
    r = run("--python", fake_python(tmp_path, result=doc))
    assert r.exit_code == 3 and "the benchmark child failed: KeyError: 'sizes'" in r.stderr
    assert "a bug in envdoctor's benchmark script" in r.stderr


CPU_PLAN = {
    "kind": "plan",
    "points": 4,
    "devices": [{"index": 0, "kind": "cpu", "name": "x86_64", "multiprocessors": 2}],
}


def test_timeout_on_the_cpu_does_not_blame_a_gpu(tmp_path):
    """Issue 12: ``bench --timeout 1`` on a CPU said "the GPU may be hung"."""
    r = run("--python", fake_python(tmp_path, events=[CPU_PLAN], hang=True), "--timeout", "1")
    assert r.exit_code == 1 and "GPU may be hung" not in r.stderr
    assert "the run on the CPU was too slow for the timeout" in r.stderr


def test_timeout_before_the_measurement_says_so(tmp_path):
    r = run("--python", fake_python(tmp_path, hang=True), "--timeout", "1")
    assert "GPU may be hung" not in r.stderr and "did not get as far as the measurement" in r.stderr


@pytest.mark.parametrize("device", ["99", "0"])
def test_bench_device_99_on_a_cpu_only_torch_exits_2_as_burn_does(tmp_path, device):
    """Issue 26: ``bench --device 99`` on a CPU-only torch ran on the CPU and exited 0 (burn exits 2)."""
    raw = recorded_run("nocuda")
    python = replay(tmp_path, raw)
    r = run("--python", python, "--size", "512", "--device", device)
    assert r.exit_code == 2, r.output
    assert r.stdout == ""
    assert r.stderr.strip().splitlines()[-1] == (
        f"envdoctor bench: --device {device}: torch in {python} sees no GPU (add --cpu instead to "
        "measure the CPU, or see `envdoctor check`)"
    )
    default = run("--python", python, "--size", "512")
    assert default.exit_code == 2 and default.stdout == ""  # qa2: no GPU, no --cpu: nothing to measure
    assert (
        default.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "; run bench on a machine with an NVIDIA GPU, or add --cpu to measure the CPU (fp32, labelled; no Tensor "
            "Core verdict)"
        )
    )
    cpu = run("--python", python, "--size", "512", "--cpu")
    assert cpu.exit_code in (0, 1) and "--device" not in cpu.stderr  # --cpu measures the CPU (1: NVML sees a GPU)


def test_a_bench_answer_with_no_point_measured_is_a_failed_run(tmp_path):
    """The right schema, nothing in it: never exit 0."""
    doc = dict(child_doc(recorded_run("nocuda")), points=[])
    r = run("--python", fake_python(tmp_path, result=doc), "--size", "512", "--cpu")
    assert r.exit_code == 1, r.output
    assert "envdoctor bench: the target answered but measured nothing (no point of any suite)" in r.stderr
    js = run("--python", fake_python(tmp_path / "j", result=doc), "--size", "512", "--json", "--cpu")
    assert js.exit_code == 1 and json.loads(js.stdout)["points"] == []


def test_missing_gpu_index_is_a_usage_error(tmp_path):
    doc = {
        "schema": "envdoctor.bench.child/1",
        "error": {"kind": "bad_device", "message": "GPU 3 does not exist: torch sees 1"},
    }
    r = run("--python", fake_python(tmp_path, result=doc), "--device", "3")
    assert r.exit_code == 2 and "GPU 3 does not exist: torch sees 1" in r.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("--dtype", "fp8"), "choose from fp32, tf32, fp16, bf16"),
        (("--size", "0"), "sizes go from 1 to 65536"),
        (("--size", "big"), "is not a whole number"),
        (("--device", "gpu0"), "give a GPU index"),
        (("--budget", "0"), "--budget"),
        (("--python", "/nonexistent/python3"), "--python /nonexistent/python3: not found"),
        (("--suite", "gpu"), "choose from matmul, memory, layers or all"),
    ],
)
def test_usage_errors_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2 and message in r.output + r.stderr


def test_dtypes_and_sizes_reach_the_child(tmp_path):
    log = tmp_path / "argv.txt"
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\necho "$2" > {log}\necho notjson\n')
    python.chmod(0o755)
    run(
        "--python",
        str(python),
        "--dtype",
        "fp16,bf16",
        "--dtype",
        "fp16",
        "--size",
        "512",
        "--size",
        "1024,4096",
        "--budget",
        "2",
        "--device",
        "all",
    )
    config = json.loads(log.read_text())
    assert config.pop("dump_after") > 0  # faulthandler shows a hang's stack before the timeout
    memory = [1 << k for k in (16, 18, 20, 22, 24, 25, 26, 27, 28)]  # 64Ki to 256Mi fp32 elements
    assert config == {
        "suites": ["matmul", "memory"],
        "dtypes": ["fp16", "bf16"],
        "sizes": [512, 1024, 4096],
        "budget": 2.0,
        "device": "all",
        "memory": {"sizes": memory, "budget": 0.667},
        "gpu_required": True,
    }


@needs_torch
def test_cpu_torch_for_real_with_plot_request(tmp_path):
    png = tmp_path / "bench.png"
    r = run("--python", sys.executable, "--size", "32", "--budget", "0.1", "--plot", str(png), "--cpu")
    assert r.exit_code in (0, 1), r.output  # 1 only where NVML sees a GPU here
    assert "fp32 measured on the CPU" in r.stdout
    has_mpl = __import__("importlib").util.find_spec("matplotlib") is not None
    if has_mpl:
        assert png.exists() and f"plot written to {png}" in r.stderr
    else:
        assert "no plot written: matplotlib is not installed in" in r.stderr and not png.exists()


def test_suite_all_reaches_the_child_with_the_scaled_budgets(tmp_path):
    log = tmp_path / "argv.txt"
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\necho "$2" > {log}\necho notjson\n')
    python.chmod(0o755)
    run("--python", str(python), "--suite", "layers", "--suite", "all", "--dtype", "bf16", "--budget", "3")
    config = json.loads(log.read_text())
    assert config["suites"] == ["matmul", "memory", "layers"]
    assert config["memory"]["budget"] == 1.0 and config["layers"] == {"budget": 2.5, "dtypes": ["bf16"]}


@needs_torch
def test_bench_device_99_on_the_real_cpu_torch_refuses_before_measuring(tmp_path):
    """The child says at once that torch sees no GPU for --device 99 (no CPU run first)."""
    r = run("--python", sys.executable, "--device", "99", "--size", "32", "--budget", "0.1")
    assert r.exit_code == 2, r.output
    assert r.stdout == "" and "bench: [" not in r.stderr  # nothing was measured
    assert "--device 99: torch " in r.stderr and "sees no GPU" in r.stderr

"""``envdoctor profile`` for real: ordinary scripts (tests/fixtures/profile/) run unchanged under the
real CPU torch, each with the findings it must earn; a crash, a hang and a script with no optimizer;
two DDP ranks over gloo started by torchrun, merged by rank 0. Every run imports torch (a few s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.documents import validate
from tests.torchtest import needs_torch

ROOT = Path(__file__).parent.parent
FIX = ROOT / "tests" / "fixtures" / "profile"


def env_clean(**extra):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "OMPI_", "TORCHELASTIC_", "PMI_"))
        and k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
    }
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def profile(*args, timeout=180):
    argv = [sys.executable, "-m", "envdoctor", "profile", *args]
    return subprocess.run(argv, env=env_clean(), capture_output=True, text=True, timeout=timeout, cwd=str(FIX))


def doc_of(*args):
    r = profile("--json", *args)
    assert r.stdout.startswith("{"), r.stdout + r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "profile")
    return r, doc


@needs_torch
def test_a_slow_data_loader_is_input_bound():
    r, doc = doc_of("--steps", "4", "--", sys.executable, "slow_loader.py")
    assert r.returncode == 0, r.stderr
    assert doc["breakdown"]["device"] == "cpu"
    assert doc["breakdown"]["dataloader_s"] / doc["breakdown"]["step_s"] > 0.2
    assert "ED940" in [f["code"] for f in doc["findings"]]
    assert doc["figures"]["mode"] == "optimizer" and doc["figures"]["optimizer"]["class"] == "SGD"


@needs_torch
def test_item_every_step_is_named_at_the_users_line():
    r, doc = doc_of("--steps", "4", "--", "python", "item_every_step.py")
    assert r.returncode == 0, r.stderr
    sync = next(f for f in doc["findings"] if f["code"] == "ED941")
    assert sync["severity"] == "info"  # a CPU-only torch: no device to wait for
    assert "item_every_step.py:18" in sync["title"]
    assert doc["syncs"][0]["per_step"] == 1.0 and doc["syncs"][0]["function"] == "<module>"
    # AdamW's own .item() calls on CPU step counters are torch's, not the user's: not counted
    assert all("item_every_step.py" in s["where"] for s in doc["syncs"])


@needs_torch
def test_an_fp32_matmul_script_is_mostly_matmul_and_counts_its_flops():
    r, doc = doc_of("--steps", "4", "--", sys.executable, "fp32_matmul.py")
    assert r.returncode == 0, r.stderr
    compute = {s["name"]: s["share"] for s in doc["breakdown"]["compute"]}
    assert compute["matmul"] > compute.get("elementwise/other", 0)
    # 4 linears of 512x512 on 1024 rows, 2*1024*512*512 FLOPs a product: 4 forward, 4 weight gradients and
    # 3 input gradients (the first layer's input needs none): 11 products
    assert doc["throughput"]["flops_per_step"] == 11 * 2 * 1024 * 512 * 512
    assert doc["figures"]["matmul_dtypes"] == {"float32": 11}
    assert doc["throughput"]["tflops"] > 0 and doc["throughput"]["mfu"] is None  # no datasheet for a CPU


@needs_torch
def test_a_script_without_an_optimizer_steps_by_its_model_forward():
    r, doc = doc_of("--steps", "4", "--", sys.executable, "inference.py")
    assert r.returncode == 0, r.stderr
    assert doc["figures"]["mode"] == "forward" and doc["figures"]["optimizer"] is None
    assert len(doc["figures"]["profiled_s"]) == 4


@needs_torch
def test_a_script_that_crashes_is_exit_2_with_its_error_and_output():
    r = profile("--", sys.executable, "crash.py")
    assert r.returncode == 2
    assert "RuntimeError: CUDA error: an illegal memory access was encountered (planted)" in r.stdout
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("envdoctor profile: the script failed after 4")


@needs_torch
def test_a_script_that_hangs_is_stopped_at_the_timeout():
    r = profile("--timeout", "15", "--", sys.executable, "hang.py", timeout=90)
    assert r.returncode == 2
    assert "did not finish" in r.stderr and "15" in r.stderr


@needs_torch
def test_the_trace_is_kept_where_asked(tmp_path):
    r, doc = doc_of(
        "--steps", "3", "--trace", str(tmp_path / "t"), "--stop-after", "--", sys.executable, "fp32_matmul.py"
    )
    assert r.returncode == 0
    trace = json.loads((tmp_path / "t" / "trace-rank0.json").read_text())
    assert sum(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"]) == 3
    assert doc["script"] == {"finished": False, "stopped": True}


@needs_torch
def test_two_ddp_ranks_under_torchrun_each_report_and_rank_0_merges(tmp_path):
    out = tmp_path / "prof"
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "envdoctor",
        "profile",
        "--steps",
        "3",
        "--trace",
        str(out),
        "--",
        "ddp_gloo.py",
    ]
    r = subprocess.run(argv, env=env_clean(), capture_output=True, text=True, timeout=240, cwd=str(FIX))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All ranks (2 of 2 reported)" in r.stdout and "slowest rank" in r.stdout
    docs = [json.loads((out / f"profile-rank{i}.json").read_text()) for i in (0, 1)]
    assert [d["rank"] for d in docs] == [0, 1] and all(d["world_size"] == 2 for d in docs)
    comms = {s["name"] for s in docs[0]["breakdown"]["comms"]}
    assert "AllReduce" in comms, docs[0]["breakdown"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--", sys.executable, "no-such.py"], "no-such.py: no such script"),
        (["--steps", "0", "--", "python", "x.py"], "--steps"),
        (["--timeout", "nan", "--", "python", "x.py"], "--timeout"),
        (["--timeout", "inf", "--", "python", "x.py"], "--timeout"),
        (["--", "python"], "give the script to profile"),
        (["--", "python", "-m", "pkg.train"], "python -m MODULE is not supported"),
        # qa2: "-c: no such script (give the path of the Python file to profile)"
        (["--", "python", "-c", "print(1)"], "python -c CODE is not supported: put the code in a file"),
        (["--", "python", "-u", "x.py"], "python -u: an interpreter option before the script is not supported"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, says):
    r = profile(*args)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_under_a_launcher_several_ranks_need_a_shared_folder():
    env = env_clean(RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
    r = subprocess.run(
        [sys.executable, "-m", "envdoctor", "profile", "--", "python", "fp32_matmul.py"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(FIX),
    )
    assert r.returncode == 2 and "give --trace DIR" in r.stderr


def test_trace_on_a_fifo_is_a_usage_error_not_an_internal_error(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    r = profile("--steps", "3", "--trace", str(fifo), "--", "python", "fp32_matmul.py")
    assert r.returncode == 2, r.stderr
    assert "is not a folder" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_script_that_is_a_folder_or_a_fifo_is_named_as_such_not_missing(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    for path, kind in ((fifo, "is a named pipe (FIFO), not a script"), (tmp_path, "is a folder, not a script")):
        r = profile("--", "python", str(path))
        assert r.returncode == 2 and kind in r.stderr and "no such script" not in r.stderr, r.stderr

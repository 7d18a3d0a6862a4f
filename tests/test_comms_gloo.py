"""``envdoctor comms`` for real: torch.distributed with gloo over CPU processes of the test venv's torch.

Each test starts real ranks (one torch import each, a few seconds on a busy machine); the faults are
the child's own test hooks (``inject``): a rank that corrupts its output, hangs, or dies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from envdoctor.launch import free_port
from envdoctor.links.host import CommsOptions, run_comms
from envdoctor.links.rules_comms import verdicts

pytest.importorskip("torch")

SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/comms-1.json").read_text())
MACHINE = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _env(**extra: str):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RANK", "WORLD_SIZE", "MASTER_", "SLURM_", "OMPI_", "TORCHELASTIC"))
    }
    env.update(extra)
    return env


def test_two_ranks_every_collective_checked_and_the_environment_passed_through():
    opts = CommsOptions(
        backend="gloo",
        nproc=2,
        sizes=(65536,),
        pair_bytes=65536,
        timeout_s=20,
        inject={"rank": 1, "kind": "wrong", "collective": "reduce_scatter"},
    )
    r = run_comms(opts, sys.executable, _env(**MACHINE))
    assert r.error is None and [x.status for x in r.ranks] == ["ok", "ok"]
    assert r.nccl_env == MACHINE  # as the ranks saw them: unchanged
    by = {p.collective: p for p in r.points}
    assert set(by) == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert [by[c].wrong for c in ("all_reduce", "all_gather", "all_to_all")] == [0, 0, 0]
    assert by["reduce_scatter"].wrong == 1  # the one element rank 1 changed
    ar = by["all_reduce"]
    assert ar.bytes == 65536 and ar.iters >= 3 and ar.time_us > 0
    assert ar.busbw_gbps == pytest.approx(65536 / (ar.time_us / 1e6) / 1e9 * 1.0, rel=1e-3, abs=1e-3)  # 2(n-1)/n = 1
    ag = by["all_gather"]
    assert ag.busbw_gbps == pytest.approx(ag.algbw_gbps * 0.5, abs=2e-3)  # (n-1)/n
    assert {(p.src, p.dst) for p in r.pairs} == {(0, 1), (1, 0)} and all(p.wrong == 0 for p in r.pairs)
    (f,) = [f for f in verdicts(r) if f.severity == "error"]
    assert f.code == "ED872" and f.evidence == ("reduce_scatter at 64 KiB: 1 wrong element(s) over all ranks",)


def test_a_rank_that_hangs_is_named_and_the_run_ends():
    started = time.monotonic()
    opts = CommsOptions(
        backend="gloo",
        nproc=2,
        sizes=(65536,),
        collectives=("all_reduce",),
        pairs=False,
        timeout_s=5,
        idle_timeout_s=12,
        inject={"rank": 1, "kind": "hang", "collective": "all_reduce"},
    )
    r = run_comms(opts, sys.executable, _env())
    took = time.monotonic() - started
    assert took < 40
    assert [x.status for x in r.ranks] == ["failed", "hung"]
    assert "Timed out" in r.ranks[0].message and r.ranks[1].stage == "all_reduce 65536 bytes"
    (f,) = [f for f in verdicts(r) if f.code == "ED873"]
    assert f.title == "rank 1 (CPU) hung during the run"


def test_a_rank_that_dies_is_named():
    opts = CommsOptions(
        backend="gloo",
        nproc=2,
        sizes=(65536,),
        collectives=("all_gather",),
        pairs=False,
        timeout_s=10,
        idle_timeout_s=20,
        inject={"rank": 0, "kind": "die", "collective": "all_gather"},
    )
    r = run_comms(opts, sys.executable, _env())
    assert [x.status for x in r.ranks] == ["died", "failed"]
    assert "exited with status 17" in r.ranks[0].message
    (f,) = [f for f in verdicts(r) if f.code == "ED873"]
    assert f.title == "rank 0 (CPU) died during the run"


@pytest.mark.parametrize("backend", ["nccl", "auto"])
def test_comms_nccl_where_the_target_has_no_gpu_could_not_start_exit_2(backend):
    """Nothing measured is not OK: no GPU for NCCL is a run that could not start, one line, exit 2."""
    out = subprocess.run(
        [sys.executable, "-m", "envdoctor", "comms", "--backend", backend, "--json"],
        env=_env(CUDA_VISIBLE_DEVICES=""),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, (out.stdout, out.stderr)
    doc = json.loads(out.stdout)  # qa2: a --json run that stops for a named reason still prints its document
    assert doc["schema"] == "envdoctor.comms/1" and doc["summary"]["exit_code"] == 2
    assert doc["error"]["command"] == "no_gpu" and doc["points"] == []
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("envdoctor comms:")]  # the rest: progress
    assert (
        out.stderr.strip().splitlines()[-1] == line
        and line.startswith("envdoctor comms: no GPU for NCCL: ")
        and "--backend gloo --nproc 2" in line
    )


def test_no_gpu_result_says_why_nothing_was_measured():
    r = run_comms(CommsOptions(backend="nccl"), sys.executable, _env(CUDA_VISIBLE_DEVICES=""))
    assert r.error is not None and r.error.command == "no_gpu" and r.points == () and r.host_copies == ()
    assert r.host_copy_note == "no GPU: nothing to measure between host and GPU"
    assert [f.code for f in verdicts(r)] == ["ED874"]


def test_two_ranks_started_by_a_launcher_rank_0_reports():
    port = str(free_port())
    argv = [
        sys.executable,
        "-m",
        "envdoctor",
        "comms",
        "--backend",
        "gloo",
        "--sizes",
        "64K",
        "--collective",
        "all_reduce",
        "--no-pairs",
        "--timeout",
        "20",
        "--json",
    ]
    procs = [
        subprocess.Popen(
            argv,
            env=_env(RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    doc = json.loads(outs[0][0])
    jsonschema.validate(doc, SCHEMA)
    assert (doc["launcher"], doc["world_size"], doc["ranks"][0]["rank"]) == ("env", 2, 0)
    assert doc["points"][0]["wrong"] == 0 and doc["points"][0]["busbw_gbps"] > 0
    assert outs[1][0] == "" and "rank 1 of 2: ok (rank 0 reports)" in outs[1][1]

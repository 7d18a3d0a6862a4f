"""One answer for one situation (issue 26): a target Python without torch is a run that could not
start, exit 2 with one line naming the interpreter and what to do, in every command that needs torch
(bench, burn, comms and fit --measure said 1, 2, 1 and 1 before). The target here is the test's
own Python started with -S, so that no site-packages, and no torch, can be imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def no_torch(tmp_path_factory):
    path = tmp_path_factory.mktemp("py") / "python3"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--suite", "matmul"],
        ["burn", "--seconds", "5"],
        ["comms", "--backend", "gloo", "--nproc", "2"],
        ["fit", "Llama-3.2-1B", "--measure"],
        ["diag"],
        ["profile", "--", str(ROOT / "tests" / "fixtures" / "profile" / "inference.py")],
    ],
    ids=lambda a: a[0],
)
def test_a_target_without_torch_is_exit_2_in_every_command(args, no_torch):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    r = subprocess.run(
        [sys.executable, "-m", "envdoctor", *args, "--python", no_torch]
        if args[0] != "profile"
        else [sys.executable, "-m", "envdoctor", "profile", "--python", no_torch, *args[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-500:])
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith(("envdoctor", "Error"))]
    assert errors and "Traceback" not in r.stderr
    last = errors[-1]
    if args[0] == "diag":  # on this GPU-less machine diag says so first (no GPU before no torch)
        assert "GPU" in last, last
    else:
        assert "torch" in last, last

"""docs/examples/diag/slurm-diag.sh, the Prolog/Epilog/HealthCheckProgram of docs/diag.md, run for real:
envdoctor diag on this machine (no GPU: exit 2) and a recording ``scontrol`` on PATH; then under a
one-node Slurm (tests/test_fleet_gather.py's, skipped where slurm-wlm and munge are not installed or
the tests are not root) as a job step, where it drains the node with the real scontrol."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.test_fleet_gather import slurm  # noqa: F401 - the one-node Slurm fixture

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs/examples/diag/slurm-diag.sh"


def envdoctor_exe(tmp: Path) -> Path:
    """``envdoctor`` as the script calls it: this interpreter with this checkout, no GPU library."""
    exe = tmp / "envdoctor"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m envdoctor "$@"\n')
    exe.chmod(0o755)
    return exe


def test_the_script_drains_a_node_without_a_gpu_and_says_why(tmp_path):
    log = tmp_path / "scontrol.log"
    fake = tmp_path / "scontrol"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {log}\n")
    fake.chmod(0o755)
    env = dict(os.environ, ENVDOCTOR=str(envdoctor_exe(tmp_path)), SCONTROL=str(fake), SLURMD_NODENAME="gpu-17")
    env.pop("PYTHONPATH", None)
    ran = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    line = ran.stdout.strip().splitlines()[-1]
    assert line.startswith(f'{fake} update nodename=gpu-17 state=drain reason="envdoctor diag -r 1 NO_GPU: no GPU')
    args = log.read_text().splitlines()
    assert args[:3] == ["update", "nodename=gpu-17", "state=drain"] and args[3].startswith(
        "reason=envdoctor diag -r 1 NO_GPU: no GPU on this machine"
    )


def test_a_passing_node_is_left_alone(tmp_path):
    ok = tmp_path / "envdoctor"
    ok.write_text("#!/bin/sh\necho 'verdict: PASS: node gpu-17, level 1, 6.0 s'\nexit 0\n")
    ok.chmod(0o755)
    never = tmp_path / "scontrol"
    never.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    never.chmod(0o755)
    env = dict(os.environ, ENVDOCTOR=str(ok), SCONTROL=str(never))
    ran = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout == "" and not (tmp_path / "ran").exists()


def test_under_a_one_node_slurm_the_script_drains_the_node_with_the_verdict(slurm, tmp_path):  # noqa: F811
    env = dict(slurm, ENVDOCTOR=str(envdoctor_exe(tmp_path)))
    env.pop("PYTHONPATH", None)
    ran = subprocess.run(
        ["srun", "-N", "1", "-n", "1", "bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180
    )
    assert ran.returncode != 0, ran.stdout + ran.stderr
    assert "state=drain reason=" in ran.stdout
    for _ in range(50):
        info = subprocess.run(["sinfo", "-h", "-o", "%T|%E"], env=env, capture_output=True, text=True, timeout=10)
        if info.stdout.startswith(("drained", "draining")):
            break
        time.sleep(0.2)
    state, reason = info.stdout.strip().split("|", 1)
    assert state in ("drained", "draining") and reason.startswith("envdoctor diag -r 1 NO_GPU"), info.stdout

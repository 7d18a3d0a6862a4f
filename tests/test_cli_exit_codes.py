"""Exit codes a script can rely on, when the output's reader goes away or the user presses Ctrl-C.

Issue 12: ``envdoctor index --all --offline | head -1`` ended in a BrokenPipeError traceback and
exit 3 ("a bug"); Ctrl-C inside a command printed Click's "Aborted!" and exited 1, the code of
error findings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.fakes import FakeBin
from tests.machines import cpu_box


def _with_closed_stdout(argv, env):
    """Run envdoctor with a standard output nobody reads any more (``| head`` that has quit)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "envdoctor", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            text=True,
        )
    finally:
        os.close(write)


def test_index_into_a_closed_pipe_exits_quietly(tmp_path):
    env = {**os.environ, "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    r = _with_closed_stdout(["index", "--all", "--offline"], env)
    assert r.returncode == 141, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr and "Exception ignored" not in r.stderr


@pytest.mark.parametrize("argv", [["explain"], ["explain", "ED101"], ["table"], ["--help"]])
def test_explain_table_and_help_into_a_closed_pipe_are_141_not_1(argv, tmp_path):
    """Click ends a write to a closed pipe with exit 1 (the audit of issue 12); the docs say 141."""
    r = _with_closed_stdout(argv, {**os.environ, "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 141, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


def test_check_into_a_closed_pipe_exits_quietly(tmp_path):
    ctx = cpu_box(tmp_path)
    env = {**os.environ, **ctx.env}
    r = _with_closed_stdout(
        [
            "check",
            "--root",
            str(ctx.root),
            "--skip",
            "torch",
            "--skip",
            "conda",
            "--skip",
            "docker",
            "--skip",
            "toolkits",
            "--json",
        ],
        env,
    )
    assert r.returncode == 141, r.stderr
    assert r.stderr == ""


def test_ctrl_c_during_check_is_130_not_the_findings_code(tmp_path):
    ctx = cpu_box(tmp_path)
    FakeBin(tmp_path).add("conda", hang=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "envdoctor",
            "check",
            "--root",
            str(ctx.root),
            "--skip",
            "torch",
            "--skip",
            "docker",
            "--skip",
            "toolkits",
            "--timeout",
            "30",
        ],
        env={**os.environ, **ctx.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)  # the probes have started; conda hangs for 30 s
    started = time.monotonic()
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert time.monotonic() - started < 15  # the hung conda is stopped, not waited for (30 s)
    assert "envdoctor: interrupted" in err and "Aborted!" not in err and "Traceback" not in err

"""qa2: ``fit --measure --python HANGING`` took the measurement's whole bound (332 s for Llama-3.2-1B)
to say that the Python hangs. A trivial start-up probe (the standard library only, bounded as check
bounds the torch import) says it first. Real processes: a "python" that sleeps, and the test's own."""

from __future__ import annotations

import sys
import time

from click.testing import CliRunner

import envdoctor.fit.host as host
from envdoctor.cli import cli
from envdoctor.fit.constants import load_constants
from envdoctor.fit.estimate import estimate
from envdoctor.fit.workload import Workload
from tests.test_fit_measure_child import SPEC, TINY


def _hanging(tmp_path):
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexec sleep 120\n")
    python.chmod(0o755)
    return str(python)


def test_a_python_that_hangs_at_start_is_reported_after_the_probe_bound_not_the_measurement_bound(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(host, "START_PROBE_S", 1.5)
    est = estimate(SPEC, Workload(mode="train", seq=16, dtype="fp32"), load_constants())
    assert host.measure_timeout(est, cpu=True) > 30  # the bound it used to wait out
    started = time.monotonic()
    m = host.run_measure(SPEC, TINY, est, _hanging(tmp_path), cpu=True)
    assert time.monotonic() - started < 15
    assert m.status == "failed" and "did not answer a start-up probe (no torch imported) in 1.5 s" in (m.message or "")


def test_fit_measure_says_it_on_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "START_PROBE_S", 1.5)
    started = time.monotonic()
    r = CliRunner().invoke(cli, ["fit", "Llama-3.2-1B", "--measure", "--python", _hanging(tmp_path)])
    assert time.monotonic() - started < 20
    assert r.exit_code == 1, r.output
    assert "did not answer a start-up probe" in r.output and "Traceback" not in r.output


def test_a_python_that_answers_passes_the_probe():
    assert host.start_probe(sys.executable, timeout=30) is None

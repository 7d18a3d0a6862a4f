"""Mechanisms that lived in two to four places, each folded into one home (issue 25, `duplicates`):
the findings block that closes check's, topo's, comms' and dockerfile's text (``lines.findings_section``)
and the evidence of a driver upgraded without a reboot (``facts.gpu.mismatch_evidence``: ED102, ED701)."""

from __future__ import annotations

import re
from pathlib import Path

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import DriverFacts, mismatch_evidence
from envdoctor.findings import Finding
from envdoctor.lines import findings_section
from envdoctor.style import Style

PACKAGE = Path(__file__).resolve().parent.parent / "envdoctor"


def _sources():
    for path in PACKAGE.rglob("*.py"):
        yield path.relative_to(PACKAGE).as_posix(), path.read_text()


def test_the_findings_block_is_written_once():
    assert [name for name, text in _sources() if 'style("Findings", "bold")' in text] == ["lines.py"]
    err = Finding("ED102", "error", "a mismatch", evidence=("kernel module 570",))
    hidden = Finding("ED305", "warning", "hidden")
    lines = findings_section((err,), Style(False), (hidden,), "envdoctor topo")
    assert lines[0] == "Findings" and lines[1].startswith("✗ ED102 error: a mismatch")
    assert "  suppressed (--suppress): ED305 (warning)" in lines and lines[-2] == ""
    assert lines[-1].endswith("then run envdoctor topo again.")
    assert findings_section((), Style(False))[1:] == ["  none", "", "Verdict: no problems found."]


def test_the_reboot_evidence_is_written_once_for_check_and_verify():
    spelled = re.compile(r"kernel module \{d\.kernel_module_version\}.{0,80}?\{d\.kernel_module_source\}", re.S)
    assert [name for name, text in _sources() if spelled.search(text)] == ["facts/gpu.py"]
    d = DriverFacts(
        kernel_module_version="570.133.20",
        kernel_module_source="/sys/module/nvidia/version",
        userspace_version="580.159.04",
        sources={"userspace_version": "libnvidia-ml.so.580.159.04"},
        nvml_error=ProbeError("unavailable", "Driver/library version mismatch"),
    )
    assert mismatch_evidence(d) == [
        "kernel module 570.133.20 (/sys/module/nvidia/version)",
        "user-space driver 580.159.04 (libnvidia-ml.so.580.159.04)",
        "Driver/library version mismatch",
    ]
    assert mismatch_evidence(d, after_upgrade=True)[:2] == [
        "kernel module 570.133.20 still loaded (/sys/module/nvidia/version)",
        "user-space driver 580.159.04 installed (libnvidia-ml.so.580.159.04)",
    ]

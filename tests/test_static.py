"""ruff and mypy run as part of the tests, so the README's one test command covers them.

Configuration: ``[tool.ruff]`` and ``[tool.mypy]`` in pyproject.toml. On failure the assertion
message is the tool's own output.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUFF_PATHS = ("envdoctor", "tests", "benchmarks", "tools")

#: What mypy must pass on. Extend it as modules become clean; a package folder replaces its files
#: once the whole folder is clean. (Not yet, in this branch: facts/serde.py, parse/docker.py,
#: parse/torch.py, rules/driver.py, rules/toolkit.py, rules/torch.py, table/load.py,
#: table/schema.py, table/validate.py; the typed table of issue 11 makes them clean.)
MYPY_PATHS = (
    # new modules of issue 11
    "envdoctor/codes.py",
    "envdoctor/render/style.py",
    "envdoctor/render/sources.py",
    "envdoctor/cli/explain.py",
    # facts/, parse/, rules/, table/: the files that are clean today
    "envdoctor/facts/__init__.py",
    "envdoctor/facts/base.py",
    "envdoctor/facts/bench.py",
    "envdoctor/facts/conda.py",
    "envdoctor/facts/docker.py",
    "envdoctor/facts/gpu.py",
    "envdoctor/facts/python.py",
    "envdoctor/facts/system.py",
    "envdoctor/facts/toolkit.py",
    "envdoctor/parse/__init__.py",
    "envdoctor/parse/conda.py",
    "envdoctor/parse/jsontext.py",
    "envdoctor/parse/nvcc.py",
    "envdoctor/parse/nvidia_proc.py",
    "envdoctor/parse/nvidia_smi.py",
    "envdoctor/parse/pciids.py",
    "envdoctor/rules/__init__.py",
    "envdoctor/rules/conda.py",
    "envdoctor/rules/docker.py",
    "envdoctor/table/__init__.py",
    "envdoctor/table/model.py",
    "envdoctor/table/rows.py",
    # the rest that is clean
    "envdoctor/__init__.py",
    "envdoctor/__main__.py",
    "envdoctor/atomic.py",
    "envdoctor/commands.py",
    "envdoctor/compat.py",
    "envdoctor/findings.py",
    "envdoctor/inspect.py",
    "envdoctor/redact.py",
    "envdoctor/run.py",
    "envdoctor/cli/__init__.py",
    "envdoctor/cli/check.py",
    "envdoctor/cli/common.py",
    "envdoctor/cli/index.py",
    "envdoctor/probes/__init__.py",
    "envdoctor/probes/conda.py",
    "envdoctor/probes/context.py",
    "envdoctor/probes/docker.py",
    "envdoctor/probes/driver.py",
    "envdoctor/probes/pci.py",
    "envdoctor/probes/reasons.py",
    "envdoctor/probes/system.py",
    "envdoctor/probes/toolkit.py",
    "envdoctor/probes/python.py",
    "envdoctor/render/text.py",
    "envdoctor/wheels/__init__.py",
    "envdoctor/wheels/cache.py",
    "envdoctor/wheels/client.py",
    "envdoctor/wheels/deadline.py",
    "envdoctor/wheels/pages.py",
    "envdoctor/wheels/errors.py",
    "envdoctor/wheels/listing.py",
    "envdoctor/wheels/report.py",
    "envdoctor/wheels/target.py",
    "tools/build_pyz.py",
    # GPU links and collectives (issue 16)
    "envdoctor/table/links.py",
    "envdoctor/parse/nvidia_topo.py",
    "envdoctor/parse/nccl_log.py",
    "envdoctor/facts/links.py",
    "envdoctor/facts/comms.py",
    "envdoctor/probes/links.py",
    "envdoctor/topology.py",
    "envdoctor/rules/links.py",
    "envdoctor/rules/comms.py",
    "envdoctor/render/links.py",
    "envdoctor/render/comms.py",
    "envdoctor/cli/topo.py",
    "envdoctor/cli/comms.py",
    "envdoctor/comms",
    # fit and fit --measure (issue 13)
    "envdoctor/fit",
    "envdoctor/cli/fit.py",
    "envdoctor/render/fit.py",
    # collect_env parity, other interpreters, the configured index (issue 12)
    "envdoctor/parse/cpuinfo.py",
    "envdoctor/parse/compiler.py",
    "envdoctor/parse/torch.py",
    "envdoctor/probes/python.py",
    "envdoctor/probes/interpreters.py",
    "envdoctor/parse/indexconf.py",
    "envdoctor/probes/indexconf.py",
)


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    r = _run("ruff", "check", "--no-cache", *RUFF_PATHS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_is_clean():
    r = _run("mypy", *MYPY_PATHS)
    assert r.returncode == 0, r.stdout + r.stderr

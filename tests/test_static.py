"""ruff (lint and format) and mypy run as part of the tests, so the README's one test command covers them.

Configuration: ``[tool.ruff]`` and ``[tool.mypy]`` in pyproject.toml. On failure the assertion
message is the tool's own output.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUFF_PATHS = ("envdoctor", "tests", "benchmarks", "tools")

#: mypy checks the whole package, its files and exclusions set in pyproject.toml's [tool.mypy]
#: (all of envdoctor but the scripts that run inside the target interpreter).
MYPY_ARGS: tuple = ()


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    r = _run("ruff", "check", "--no-cache", *RUFF_PATHS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format_is_clean():
    """The tree is as ``ruff format`` writes it (the version pinned in pyproject's test extra: the
    formatter's style moves between minor releases)."""
    r = _run("ruff", "format", "--check", "--no-cache", *RUFF_PATHS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_is_clean():
    r = _run("mypy", *MYPY_ARGS)
    assert r.returncode == 0, r.stdout + r.stderr

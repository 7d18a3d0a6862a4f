"""The one marker for tests that need a real torch (CPU is enough) in the test interpreter.

Without torch they skip with the reason, so README's test command passes on a fresh machine; CI's
second run sets ENVDOCTOR_REQUIRE_TORCH=1, and then ``tests/conftest.py`` stops the session unless
torch is installed, so none of them can skip there.
"""

import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None

needs_torch = pytest.mark.skipif(
    not HAS_TORCH, reason="needs torch in the test interpreter (CPU is enough: python -m pip install torch==2.13.0)"
)

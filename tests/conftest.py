"""Shared test settings."""

import importlib.util
import os

import pytest


def pytest_sessionstart(session):
    """CI sets ENVDOCTOR_REQUIRE_TORCH=1: the tests against a real torch must run there, not skip."""
    if os.environ.get("ENVDOCTOR_REQUIRE_TORCH") and importlib.util.find_spec("torch") is None:
        pytest.exit("ENVDOCTOR_REQUIRE_TORCH is set but torch is not installed in the test interpreter "
                    "(python -m pip install torch==2.13.0)", returncode=1)

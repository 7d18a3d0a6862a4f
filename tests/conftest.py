"""Shared test settings.

For the whole session, the default compatibility table is the frozen, dated copy of ``data/`` in
``tests/tables/`` (``ENVDOCTOR_DATA``, inherited by CLI runs and subprocesses), so a new row in
``data/`` changes no test; and the table cache goes to a folder of the session, not to ~/.cache.
"""

import importlib.util
import os
import shutil
import tempfile

import pytest

from tests.tables import FROZEN

_SESSION_CACHE = tempfile.mkdtemp(prefix="envdoctor-tests-cache-")


def pytest_configure(config):
    os.environ["ENVDOCTOR_DATA"] = str(FROZEN)
    os.environ.setdefault("ENVDOCTOR_CACHE_DIR", _SESSION_CACHE)


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


def pytest_sessionstart(session):
    """CI sets ENVDOCTOR_REQUIRE_TORCH=1: the tests against a real torch must run there, not skip."""
    if os.environ.get("ENVDOCTOR_REQUIRE_TORCH") and importlib.util.find_spec("torch") is None:
        pytest.exit(
            "ENVDOCTOR_REQUIRE_TORCH is set but torch is not installed in the test interpreter "
            "(python -m pip install torch==2.13.0)",
            returncode=1,
        )

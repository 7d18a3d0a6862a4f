"""Compatibility tables for the tests, so that a new row in ``data/`` never changes a test.

- ``frozen-2026-12-01/``: a copy of ``data/`` as it was on 2026-12-01. ``tests/conftest.py`` points
  ``ENVDOCTOR_DATA`` at it for the whole session, so ``load_table()`` (and every CLI run and
  subprocess) reads it. Refresh it only when a test needs a newer fact, and then under a new date.
- ``torch-small/``, ``four-archs/``: small tables written for one test module each (the module
  says which), with the few rows its expected answers rest on.
- ``tests/test_data.py`` is the one module that reads the real ``data/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from envdoctor.table import Table, load_table

HERE = Path(__file__).parent
FROZEN = HERE / "frozen-2026-12-01"
#: The real data/ of the checkout (only tests/test_data.py reads it).
REAL = HERE.parent.parent / "data"


def table(name: str) -> Table:
    """A table of this folder, loaded afresh: ``table("torch-small")``."""
    return load_table(HERE / name)


def copy_of(source: Path, tmp_path: Path) -> Path:
    """A writable copy of a table folder at ``tmp_path/data`` (errors then name ``data/...``)."""
    dst = tmp_path / "data"
    shutil.copytree(source, dst)
    return dst


def with_rows(source: Path, tmp_path: Path, **rows: str) -> Path:
    """A copy of ``source`` with TOML text appended to some files:
    ``with_rows(HERE / "torch-small", tmp_path, torch='[[release]]\\nversion = "2.9.0" ...')``
    (keyword: the file name without ``.toml``)."""
    dst = copy_of(source, tmp_path)
    for stem, text in rows.items():
        path = dst / f"{stem}.toml"
        path.write_text(path.read_text() + "\n" + text)
    return dst

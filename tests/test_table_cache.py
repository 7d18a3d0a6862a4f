"""The cache of the parsed data files (envdoctor/table/cache.py) and reading the table from a zip.

A hit must give the same table as a fresh parse without parsing TOML; anything in the cache folder
that is not this user's own, intact entry is ignored, never trusted, never a crash.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import packaging
import pytest

import envdoctor
from envdoctor.table import cache, load_table
from envdoctor.table import schema as table_schema
from tests.tables import FROZEN, copy_of


@pytest.fixture
def data(tmp_path):
    return copy_of(FROZEN, tmp_path)


def entries(folder: Path):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def no_toml(monkeypatch):
    """Make any TOML parse fail: a load that still works read the cache."""

    def refuse(label, raw):
        raise AssertionError(f"parsed {label}")

    monkeypatch.setattr(table_schema, "parse_toml", refuse)
    monkeypatch.setattr("envdoctor.table.model.parse_toml", refuse)


def test_a_second_load_reads_the_entry_and_gives_the_same_table(data, tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    first = cache.load(data, folder)
    (name,) = entries(folder)
    assert len(name) == 64 + len(".json")
    assert (folder / name).stat().st_mode & 0o777 == 0o600
    no_toml(monkeypatch)
    second = cache.load(data, folder)
    assert second == first and second is not first
    assert second.min_driver("12.8") == "570.26"


def test_an_edited_file_misses_and_replaces_the_old_entry(data, tmp_path):
    folder = tmp_path / "cache"
    cache.load(data, folder)
    (old,) = entries(folder)
    torch = data / "torch.toml"
    torch.write_text(torch.read_text().replace('torchvision = "0.23.0"', 'torchvision = "0.23.9"', 1))
    assert cache.load(data, folder).torch("2.8").torchvision == "0.23.9"
    (new,) = entries(folder)
    assert new != old


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff not json",
        b"[1, 2]",
        b'{"format": "other"}',
        b'{"format": "envdoctor-table-cache/1", "files": {"cuda.toml": {}}}',
        b"[" * 10000,
    ],
)
def test_a_corrupt_entry_is_ignored_and_rewritten(data, tmp_path, content):
    folder = tmp_path / "cache"
    fresh = cache.load(data, folder)
    (name,) = entries(folder)
    (folder / name).write_bytes(content)
    assert cache.load(data, folder) == fresh
    assert json.loads((folder / name).read_text())["format"] == cache.FORMAT


def _tampered(folder: Path, name: str) -> None:
    """The entry with CUDA 12.8's driver floor changed: valid JSON that passes validation."""
    path = folder / name
    doc = json.loads(path.read_text())
    for row in doc["files"]["cuda.toml"]["release"]:
        if row["version"] == "12.8.0":
            row["min_driver_linux"] = "571.0"
    path.write_text(json.dumps(doc))


def test_an_entry_others_may_write_is_not_trusted(data, tmp_path):
    folder = tmp_path / "cache"
    cache.load(data, folder)
    (name,) = entries(folder)
    _tampered(folder, name)
    os.chmod(folder / name, 0o666)
    assert cache.load(data, folder).min_driver("12.8") == "570.26"


def test_a_symlinked_entry_is_not_followed(data, tmp_path):
    folder = tmp_path / "cache"
    cache.load(data, folder)
    (name,) = entries(folder)
    _tampered(folder, name)
    (folder / name).rename(tmp_path / "elsewhere.json")
    (folder / name).symlink_to(tmp_path / "elsewhere.json")
    assert cache.load(data, folder).min_driver("12.8") == "570.26"


def test_a_fifo_in_place_of_the_entry_neither_hangs_nor_breaks_the_load(data, tmp_path):
    folder = tmp_path / "cache"
    cache.load(data, folder)
    (name,) = entries(folder)
    (folder / name).unlink()
    os.mkfifo(folder / name)
    assert cache.load(data, folder).min_driver("12.8") == "570.26"


def test_an_unwritable_cache_folder_means_no_cache(data, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    assert cache.load(data, blocked / "table").min_driver("12.8") == "570.26"
    assert cache.load(data, None).min_driver("12.8") == "570.26"


def test_a_broken_data_file_is_an_error_and_is_not_cached(data, tmp_path):
    folder = tmp_path / "cache"
    (data / "ngc.toml").write_text("[[release]\n")
    with pytest.raises(table_schema.TableError, match="data/ngc.toml: not valid TOML"):
        cache.load(data, folder)
    assert entries(folder) == []


def test_cache_folder_follows_envdoctor_cache_dir_and_xdg():
    assert cache.cache_dir({"ENVDOCTOR_CACHE_DIR": "/x/c"}) == Path("/x/c/table")
    assert cache.cache_dir({"XDG_CACHE_HOME": "/y"}) == Path("/y/envdoctor/table")


# --- a zip archive (the single-file build) ---------------------------------------------------------


def test_a_table_folder_inside_a_zip_loads(tmp_path):
    archive = tmp_path / "tables.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in FROZEN.glob("*.toml"):
            z.write(f, f"envdoctor/data/{f.name}")
    t = load_table(zipfile.Path(archive, "envdoctor/data/"))
    assert t.min_driver("12.8") == "570.26" and t.directory.name == "data"


def test_the_bundled_data_is_read_from_inside_a_zipped_envdoctor(tmp_path):
    """envdoctor/ and envdoctor/data/*.toml in one archive on sys.path, as a zipapp lays them out."""
    archive = tmp_path / "envdoctor.zip"
    package = Path(envdoctor.__file__).parent
    with zipfile.ZipFile(archive, "w") as z:
        for f in package.rglob("*.py"):
            z.write(f, f"envdoctor/{f.relative_to(package)}")
        for f in FROZEN.glob("*.toml"):
            z.write(f, f"envdoctor/data/{f.name}")
    code = (
        "import sys; sys.path[:0] = sys.argv[1:]; from envdoctor.table import load_table, data_directory; "
        "t = load_table(); print(t.min_driver('12.8'), type(data_directory()).__name__, t.directory.name)"
    )
    dependencies = str(Path(packaging.__file__).parent.parent)  # packaging (and tomli) for the archive
    env = {k: v for k, v in os.environ.items() if k != "ENVDOCTOR_DATA"}
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    ran = subprocess.run(
        [sys.executable, "-I", "-c", code, str(archive), dependencies],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    floor, kind, name = ran.stdout.split()
    assert (floor, name) == ("570.26", "data") and kind != "PosixPath"
    assert len(entries(tmp_path / "cache" / "table")) == 1

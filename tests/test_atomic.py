"""``atomic.write_atomic`` replaces a regular file or nothing: never a device, a FIFO or a folder."""

from __future__ import annotations

import os
import stat

import pytest

from envdoctor.atomic import NotRegularFileError, write_atomic


def test_writes_and_replaces_a_regular_file(tmp_path):
    target = tmp_path / "sub" / "a.json"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    assert target.read_text() == "two" and os.listdir(target.parent) == ["a.json"]


def test_a_fifo_is_refused_and_left_a_fifo(tmp_path):
    target = tmp_path / "pipe"
    os.mkfifo(target)
    with pytest.raises(NotRegularFileError) as info:
        write_atomic(target, "x")
    assert info.value.strerror.startswith("it is a named pipe (FIFO), not a regular file")
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and os.listdir(tmp_path) == ["pipe"]  # no temp file left


def test_a_symlink_to_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(tmp_path / "pipe")
    with pytest.raises(NotRegularFileError, match="named pipe"):
        write_atomic(tmp_path / "link", "x")
    assert (tmp_path / "link").is_symlink()


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(NotRegularFileError, match="it is a folder"):
        write_atomic(tmp_path / "d", "x")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may replace /dev/null (others fail on /dev anyway)")
def test_root_does_not_turn_dev_null_into_a_file():
    before = os.lstat("/dev/null")
    with pytest.raises(NotRegularFileError, match="it is a character device"):
        write_atomic("/dev/null", "x")
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert not [n for n in os.listdir("/dev") if n.startswith(".null.")]

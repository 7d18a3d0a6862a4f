"""The one way envdoctor reads a file a person named (``verify --baseline``, ``recommend --from``,
``fleet REPORT.json...``): a regular file, of bounded size, as UTF-8 text, or one line saying why not.

A FIFO would block the read forever, ``/dev/zero`` would fill the memory, a folder or a socket
cannot be read as text: all are refused before a byte is read::

    text = read_input(Path("before.json"))
    read_input(Path("/dev/zero"))
    # InputError: /dev/zero is a character device, not a regular file
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from envdoctor.atomic import what_it_is
from envdoctor.parse.jsontext import MAX_CHARS
from envdoctor.units import format_bytes

#: The most bytes read from one input file (the JSON reader takes no more characters either).
MAX_BYTES = MAX_CHARS


class InputError(ValueError):
    """A file named on the command line cannot be used. ``str()`` is one line that names the file;
    ``reason`` is the part after the name ("does not exist", "is a named pipe (FIFO), not a regular
    file", "is larger than 16 MiB", ...)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = str(path)
        self.reason = reason


def _refuse_special(path: str | Path, mode: int) -> None:
    kind = what_it_is(mode)
    if kind is not None:
        raise InputError(path, f"is {kind}, not a regular file")


def read_input(path: str | Path, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of the regular file at ``path`` (symlinks followed), at most ``max_bytes``.

    Raises only :class:`InputError`: missing, not a regular file (folder, FIFO, device, socket),
    unreadable (permission, I/O error), larger than ``max_bytes``, not UTF-8, or a path with a NUL. Never blocks and
    never opens a device (opening some has effects): the path is checked with ``stat`` first, then
    opened non-blocking and checked again with ``fstat`` before anything is read.
    """
    if "\0" in str(path):  # os.stat would raise ValueError
        raise InputError(repr(str(path))[:80], "names no file (a path cannot hold a NUL character)")
    try:
        _refuse_special(path, os.stat(path).st_mode)
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except FileNotFoundError:
        raise InputError(path, "does not exist") from None
    except NotADirectoryError:
        raise InputError(path, "does not exist (a part of the path is not a folder)") from None
    except PermissionError:
        raise InputError(path, "cannot be read: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing only
            raise InputError(path, "is a socket or a pipe, not a regular file") from None
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        _refuse_special(path, info.st_mode)  # replaced between the stat and the open
        if info.st_size > max_bytes:
            raise InputError(
                path, f"is {format_bytes(info.st_size)}, larger than the {format_bytes(max_bytes)} envdoctor reads"
            )
        chunks = []
        left = max_bytes + 1  # a file that grows while read (or /proc) still stops here
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise InputError(path, f"is larger than the {format_bytes(max_bytes)} envdoctor reads")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "is not a text file (not UTF-8)") from None


__all__ = ["MAX_BYTES", "InputError", "read_input"]

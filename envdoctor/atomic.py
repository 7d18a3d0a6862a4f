"""Write files so that a crash mid-write never leaves a half file, and nothing is overwritten by accident.

Only a regular file (or nothing) is ever replaced: a FIFO, a device, a socket or a folder at the
path (or at the end of a symlink there) is refused with :class:`NotRegularFileError`, so
``snapshot -o /dev/sda --force`` as root cannot turn a device node into a file::

    write_atomic(Path("~/.local/state/envdoctor/snapshots/2026-11-29T17-30-00Z.json").expanduser(), text)
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(FileExistsError):
    """Something that is not a regular file is at the path: it is left alone. ``strerror`` says what
    it is: ``"it is a character device, not a regular file"``."""


def what_it_is(mode: int) -> str | None:
    """``"a named pipe (FIFO)"`` for a FIFO's ``st_mode``, ``"a folder"``, ...; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "something other than a regular file")


def _refuse_special(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode  # follows a symlink: what a write would really replace
    except (FileNotFoundError, NotADirectoryError):
        return  # absent, or a dangling symlink: nothing to protect
    kind = what_it_is(mode)
    if kind is None:
        return
    raise NotRegularFileError(
        errno.EEXIST, f"it is {kind}, not a regular file (envdoctor replaces only regular files)", str(path)
    )


def write_atomic(path: str | Path, data: str | bytes, mode: int = 0o644, sync: bool = True) -> Path:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it into place.

    The rename is atomic on POSIX: readers see the old file or the new one, never a part. A path
    that holds anything but a regular file raises :class:`NotRegularFileError` (an OSError) and
    is left as it was; so do the folder's own errors (PermissionError, ...). ``sync=False`` skips
    the fsync, for a file whose loss in a crash costs nothing (a cache entry: it is fetched again).
    """
    import tempfile  # here: a read-only run (check) need not import it

    path = Path(path)
    _refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from envdoctor.escape import ERRORS

    raw = data.encode("utf-8", errors=ERRORS) if isinstance(data, str) else data  # a stray byte: escaped
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        _refuse_special(path)  # appeared while the data was written
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def user_dir(kind: str, env: os._Environ[str] | dict | None = None) -> Path:
    """``$XDG_<KIND>_HOME/envdoctor`` (kind: "cache", "state"), else the XDG default under ~.

    ``ENVDOCTOR_CACHE_DIR`` / ``ENVDOCTOR_STATE_DIR`` override.
    """
    env = os.environ if env is None else env
    override = env.get(f"ENVDOCTOR_{kind.upper()}_DIR")
    if override:
        return Path(override).expanduser()
    default = {"cache": "~/.cache", "state": "~/.local/state"}[kind]
    base = env.get(f"XDG_{kind.upper()}_HOME") or default
    return Path(base).expanduser() / "envdoctor"

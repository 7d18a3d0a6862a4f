"""Write files so that a crash mid-write never leaves a half file, and nothing is overwritten by accident.

>>> write_atomic(Path("~/.local/state/envdoctor/snapshots/2026-11-29T17-30-00Z.json").expanduser(), text)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union


def write_atomic(path: Union[str, Path], data: Union[str, bytes], mode: int = 0o644) -> Path:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it into place.

    The rename is atomic on POSIX: readers see the old file or the new one, never a part.
    """
    import tempfile  # here: a read-only run (check) need not import it

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def user_dir(kind: str, env: "os._Environ[str] | dict | None" = None) -> Path:
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

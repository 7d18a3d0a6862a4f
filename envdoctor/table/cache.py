"""A cache of the parsed data files, so that a run does not parse 150 KB of TOML again.

What is cached is the plain data the TOML parser returns (tables, arrays, strings, numbers),
written as JSON under ``user_dir("cache")/table/<sha256>.json``; the key is the SHA-256 of the
files' names and bytes, so any edit of a data file (or another ``ENVDOCTOR_DATA``) misses. A hit
goes through the same loader and validation as a fresh parse, so the cache never holds rows,
only what the TOML said.

The cache is a convenience, never trusted: an entry that is not a regular file owned by this user
and writable only by them, is larger than :data:`MAX_BYTES`, is not JSON of the expected shape,
or fails validation is ignored (and the files are parsed again). Writing is atomic
(:func:`envdoctor.atomic.write_atomic`); where it fails (a read-only or missing home) there is
simply no cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from envdoctor.atomic import user_dir, write_atomic
from envdoctor.parse.jsontext import JsonError, loads_object
from envdoctor.table.model import Table, build_docs, parse_docs
from envdoctor.table.source import FILES, DataDir, read_files

log = logging.getLogger(__name__)

#: Names the layout of a cache entry; a new layout is a new name, so old entries just miss.
FORMAT = "envdoctor-table-cache/1"
#: Larger entries are not read (the parsed data/ is about 0.2 MB).
MAX_BYTES = 8 * 1024 * 1024

Docs = dict[str, dict[str, Any]]


def cache_dir(env: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """``~/.cache/envdoctor/table`` (``$ENVDOCTOR_CACHE_DIR/table``, ``$XDG_CACHE_HOME/envdoctor/table``);
    None where no home can be worked out."""
    try:
        return user_dir("cache", dict(os.environ if env is None else env)) / "table"
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry: no cache
        return None


def key(files: Mapping[str, Optional[bytes]]) -> str:
    """SHA-256 over the format, then each file's name, length and bytes (a missing file as -1)."""
    h = hashlib.sha256(FORMAT.encode())
    for name in sorted(files):
        raw = files[name]
        h.update(f"\0{name}\0{-1 if raw is None else len(raw)}\0".encode())
        h.update(raw or b"")
    return h.hexdigest()


def read(path: Path) -> Optional[Docs]:
    """The documents of a cache entry, or None when there is none or it is not to be trusted."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES or st.st_mode & 0o022:
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = loads_object(raw.decode("utf-8"), "the table cache entry", max_chars=MAX_BYTES)
    except (UnicodeDecodeError, JsonError):
        return None
    if data.get("format") != FORMAT:
        return None
    docs = data.get("files")
    if not isinstance(docs, dict) or set(docs) != set(FILES) or not all(isinstance(d, dict) for d in docs.values()):
        return None
    return docs


def write(path: Path, docs: Docs) -> None:
    """Store ``docs`` at ``path`` (atomically, readable by this user only) and drop the other
    entries of the folder; any failure just leaves no cache."""
    try:
        text = json.dumps({"format": FORMAT, "files": docs}, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # a TOML date/time or an infinity: JSON cannot hold it
        log.debug("table cache: documents are not plain JSON data; not cached")
        return
    try:
        write_atomic(path, text, mode=0o600)
        for old in path.parent.glob("*.json"):
            if old.name != path.name and len(old.stem) == 64:
                old.unlink()
    except OSError as exc:
        log.debug("table cache not written: %s", exc)


def load(directory: DataDir, folder: Optional[Path]) -> Table:
    """The table of ``directory``, through the cache entry under ``folder`` (None: no cache)."""
    files = read_files(directory)
    entry = folder / f"{key(files)}.json" if folder is not None else None
    docs = read(entry) if entry is not None else None
    if docs is not None:
        try:
            return build_docs(directory, docs)
        except Exception:  # an entry that parses but is not what the files say: never trusted
            log.debug("table cache entry %s does not load; parsing the files", entry, exc_info=True)
    docs = parse_docs(directory.name, files)
    table = build_docs(directory, docs)
    if entry is not None:
        write(entry, docs)
    return table

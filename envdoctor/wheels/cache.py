"""On-disk cache of index pages: one small JSON file per URL, written atomically.

Location: ``$ENVDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/envdoctor``, else
``~/.cache/envdoctor``; pages live under ``index/``. A file is named after the SHA-256 of the URL,
so credentials in a URL never reach the file name; the URLs stored inside are masked.

What is stored is the *parsed* page (file names, ``requires-python``, yanked, project names), not
the HTML: a cache hit costs a JSON read, not an HTML parse. Pages that did not parse are never
stored; a 403/404/410 is stored (without a page) so a missing index is not asked again within
the TTL.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.atomic import user_dir, write_atomic
from envdoctor.parse import jsontext
from envdoctor.redact import mask_url
from envdoctor.wheels.pages import FileLink, Page

_FORMAT = 2
#: A cached listing is at most a 16 MiB page, parsed: its JSON stays under this.
_MAX_ENTRY_CHARS = 64 * 1024 * 1024


def default_cache_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    """``/home/ada/.cache/envdoctor`` unless ``ENVDOCTOR_CACHE_DIR``/``XDG_CACHE_HOME`` say otherwise."""
    return user_dir("cache", dict(os.environ if env is None else env))


@dataclass(frozen=True)
class CachedPage:
    """A stored answer: enough to answer offline and to revalidate (ETag / Last-Modified)."""

    url: str  # masked
    status: int
    fetched_at: float  # time.time() of the last fetch or revalidation
    page: Optional[Page] = None  # the parsed page when status is 200
    etag: Optional[str] = None
    last_modified: Optional[str] = None

    def age(self, now: Optional[float] = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.fetched_at)


class PageCache:
    """Get and put :class:`CachedPage` by URL. Unreadable entries count as missing."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory) / "index"

    def path_for(self, url: str) -> Path:
        # surrogatepass: a URL with a byte that is not UTF-8 (from argv or a variable) has a name too
        return self.directory / (hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest() + ".json")

    def get(self, url: str) -> Optional[CachedPage]:
        try:
            path = self.path_for(url)
            if path.stat().st_size > _MAX_ENTRY_CHARS * 4:  # not read at all: no entry is that large
                return None
            # a cache file is envdoctor's own, but anyone may have edited it: the bounded reader
            data = jsontext.loads_object(path.read_text(encoding="utf-8"), "cache entry", max_chars=_MAX_ENTRY_CHARS)
            if data.get("format") != _FORMAT:
                return None
            fetched_at, status = data.get("fetched_at"), data.get("status")
            if not _time_of_fetch(fetched_at) or type(status) is not int or not 100 <= status <= 599:
                return None  # a 400-digit or future fetched_at (never stale), a status no server sends
            page = _page_from(data["page"]) if data.get("page") else None
            etag, modified = data.get("etag"), data.get("last_modified")
            return CachedPage(
                str(data["url"]),
                status,
                float(fetched_at or 0),
                page,
                etag if isinstance(etag, str) else None,
                modified if isinstance(modified, str) else None,
            )
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError):
            return None  # JsonError is a ValueError; a wrong shape is a TypeError/AttributeError

    def put(self, url: str, entry: CachedPage) -> bool:
        """Write atomically (envdoctor.atomic: temp file in the same folder, then rename); False if it failed."""
        data: Dict[str, Any] = {
            "format": _FORMAT,
            "url": mask_url(entry.url),
            "status": entry.status,
            "fetched_at": entry.fetched_at,
            "etag": entry.etag,
            "last_modified": entry.last_modified,
            "page": _page_to(entry.page) if entry.page else None,
        }
        try:  # no fsync: a lost cache entry is only a refetch
            write_atomic(self.path_for(url), json.dumps(data, separators=(",", ":")), sync=False)
        except OSError:
            return False
        return True


#: A cache entry written this far in the future is no entry (a clock set back a little is fine).
_FUTURE = 24 * 3600.0


def _time_of_fetch(value: Any) -> bool:
    """Whether ``value`` is a time a fetch could have had: a number from 1970 to a day from now.

    >>> _time_of_fetch(1764600000.5), _time_of_fetch(10 ** 399), _time_of_fetch(True), _time_of_fetch("1")
    (True, False, False, False)
    """
    if type(value) not in (int, float):
        return False
    return bool(0 <= value <= time.time() + _FUTURE)  # an int of 400 digits compares without a float


def _page_to(page: Page) -> Dict[str, Any]:
    return {
        "url": mask_url(page.url),
        "format": page.format,
        "api_version": page.api_version,
        "projects": list(page.projects),
        # [filename, url, requires_python, yanked, core_metadata, "sha256=…"]; the parser already
        # left credentials out of file URLs, masking here is for absolute links that carry them
        "files": [
            [
                f.filename,
                mask_url(f.url) if "@" in f.url else f.url,
                f.requires_python,
                f.yanked,
                f.core_metadata,
                ",".join(f"{a}={v}" for a, v in f.hashes),
            ]
            for f in page.files
        ],
    }


def _page_from(data: Dict[str, Any]) -> Page:
    files: List[FileLink] = [
        FileLink(
            filename=str(name),
            url=str(link),
            requires_python=requires,
            yanked=yanked,
            core_metadata=bool(meta),
            hashes=tuple(tuple(h.split("=", 1)) for h in hashes.split(",") if "=" in h),
        )
        for name, link, requires, yanked, meta, hashes in data["files"]
    ]
    return Page(
        str(data["url"]),
        str(data["format"]),
        tuple(files),
        tuple(str(p) for p in data["projects"]),
        data.get("api_version"),
    )

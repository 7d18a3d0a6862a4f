"""The wheel-index client: fetch, cache and read ``<base>/<variant>/<package>/`` pages.

>>> client = IndexClient()                                   # base from the compatibility table
>>> listing = client.variant("cu128", package="torch", target=Target.for_python("3.12"))
>>> listing.exists, listing.newest, listing.url
(True, '2.9.1', 'https://download.pytorch.org/whl/cu128')

Network failures never raise: they come back as a listing with ``exists=None`` and ``error`` set
to one line ("cannot resolve host download.pytorch.org (DNS failure)").
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor import __version__
from envdoctor.redact import mask_text, mask_url
from envdoctor.wheels.cache import CachedPage, PageCache, default_cache_dir
from envdoctor.wheels.errors import PageTooLarge, describe_exception
from envdoctor.wheels.listing import VariantListing, analyze
from envdoctor.wheels.pages import ACCEPT, FileLink, Page, PageError, parse_page, variant_names
from envdoctor.wheels.target import Target

if TYPE_CHECKING:  # pragma: no cover
    import requests

log = logging.getLogger(__name__)

#: Used only when neither ``--index-url``/``ENVDOCTOR_INDEX_URL`` nor the table gives a base.
FALLBACK_BASE = "https://download.pytorch.org/whl"
#: A page larger than this is refused (the pages envdoctor reads, ``whl/<variant>/torch/``, are a
#: few hundred KB; the biggest of the whole index, ``whl/torch/``, a few MB). Parsing is linear:
#: a page of this size takes a few seconds, once (each listing is kept for the client's lifetime).
MAX_PAGE_BYTES = 16 * 1024 * 1024
#: Statuses worth remembering: the page, or the fact that there is no such page.
_CACHEABLE = {200, 403, 404, 410}
_MISSING = {403, 404, 410}
_VARIANT = re.compile(r"^[a-z0-9][a-z0-9._+-]*(/[a-z0-9][a-z0-9._+-]*)*$")


def url_problem(url: str) -> Optional[str]:
    """Why ``url`` cannot be an index URL (one line, the URL masked), or None when it can.

    Refused: empty, not http(s), no host, brackets that do not close (``http://[::1/whl``), a port
    outside 1-65535, a host name with a label over 63 characters (or over 253 in all).
    ``urllib.parse`` raises ``ValueError`` for the brackets and the port.

    >>> url_problem("https://download.pytorch.org/whl") is None
    True
    >>> url_problem("http://u:secret@[::1/whl")
    'not a usable URL (Invalid IPv6 URL): http://u:***@[::1/whl'
    """
    if not url:
        return "empty: give an http(s) URL such as https://download.pytorch.org/whl"
    shown = mask_url(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", ...
        why = "the port must be a number from 1 to 65535" if "port" in str(exc).lower() else str(exc)
        return f"not a usable URL ({why}): {shown}"
    if parts.scheme not in ("http", "https") or not host:
        return f"not an http(s) URL: {shown}"
    if port == 0:
        return f"not a usable URL (the port must be a number from 1 to 65535): {shown}"
    if not parts.netloc.rsplit("@", 1)[-1].startswith("["):  # a DNS name or an IPv4 address
        try:
            ascii_host = host.encode("idna")  # what the socket layer does: it refuses the same names
        except UnicodeError:
            ascii_host = b""
        if not ascii_host or len(ascii_host) > 253:
            return f"not a usable host name (each dot-separated label 1-63 characters, 253 in all): {shown}"
    return None


def default_choice(
    env: Optional[Dict[str, str]] = None, configured: Optional[Tuple[str, str]] = None
) -> Tuple[str, str]:
    """(base, where it comes from) when the user gives no ``--index-url``: ``ENVDOCTOR_INDEX_URL``,
    else ``configured``, the torch wheel index the user's pip or uv is configured with and where it
    is set, as the command read it (``envdoctor.probes.indexconf.configured_torch_base(ctx)``, with
    the command's ``--root`` and environment; only a URL shaped like ``<base>/cu128`` or
    ``<base>/whl`` counts, a PyPI mirror does not), else the table's ``index_base``, else
    download.pytorch.org/whl. The base is unmasked: mask it to show it."""
    env = dict(os.environ) if env is None else env
    if env.get("ENVDOCTOR_INDEX_URL"):
        return env["ENVDOCTOR_INDEX_URL"].rstrip("/"), "ENVDOCTOR_INDEX_URL"
    unusable = ""
    if configured is not None:
        problem = url_problem(configured[0].strip())
        if problem is None:
            return configured[0].rstrip("/"), f"your pip/uv configuration ({configured[1]})"
        # a broken URL in pip.conf or PIP_INDEX_URL is pip's problem to report; envdoctor says it and goes on
        unusable = f"; your pip/uv configuration's {configured[1]} is {problem}"
    try:
        from envdoctor.table import load_table  # written in parallel; may be absent

        return str(load_table().index_base).rstrip("/"), "envdoctor's table" + unusable
    except Exception:  # noqa: BLE001 - a missing or broken table must not stop the client
        return FALLBACK_BASE, "envdoctor's built-in default" + unusable


def default_base(env: Optional[Dict[str, str]] = None) -> str:
    """The base of :func:`default_choice`."""
    return default_choice(env)[0]


def check_variant_name(name: str) -> str:
    """ "cu128", "rocm6.2", "nightly/cu130"; anything that could leave the base is refused."""
    cleaned = name.strip().strip("/").lower()
    if not _VARIANT.match(cleaned) or any(part in (".", "..") for part in cleaned.split("/")):
        raise ValueError(f"not a variant name: {name!r} (e.g. cu128, cpu, rocm6.2)")
    return cleaned


@dataclass(frozen=True)
class Fetched:
    """One page as fetched (or read from the cache). ``error`` set: nothing usable came back
    (no answer, or a 200 that is not an index page); ``page`` is set for every usable 200."""

    status: Optional[int] = None
    page: Optional[Page] = None
    from_cache: bool = False
    age: Optional[float] = None
    error: Optional[str] = None
    note: Optional[str] = None


class IndexClient:
    """A client for one index base (download.pytorch.org/whl or a mirror).

    One ``requests.Session`` (connection reuse, proxies from the environment, urllib3 ``Retry``
    with backoff on connection errors and 5xx), ``timeout`` for each whole request (connect,
    headers, body, its retries and redirects: a server that drips the page is cut off), and a disk
    cache with a TTL and ETag/Last-Modified revalidation.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        cache_dir: Optional[os.PathLike] = None,
        ttl: float = 3600.0,
        offline: bool = False,
        refresh: bool = False,
        timeout: float = 10.0,
        *,
        retries: int = 2,
        backoff: float = 0.3,
        max_workers: int = 48,
        cache: bool = True,
    ) -> None:
        self.base_url = (base_url or default_base()).rstrip("/")
        self.ttl = ttl
        self.offline = offline
        self.refresh = refresh
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_workers = max(1, max_workers)
        self.cache = PageCache(Path(cache_dir) if cache_dir is not None else default_cache_dir()) if cache else None
        self._session: Optional[requests.Session] = None
        self._lock = threading.Lock()
        #: (variant, package, target) -> its listing: a page is read and analysed once per client
        self._listings: Dict[Tuple[str, str, Target], VariantListing] = {}

    @property
    def shown_base(self) -> str:
        return mask_url(self.base_url)

    def variant_url(self, variant: str) -> str:
        return f"{self.base_url}/{check_variant_name(variant)}"

    # -- public questions --------------------------------------------------------------------

    def variant(self, variant: str, package: str = "torch", target: Optional[Target] = None) -> VariantListing:
        """What ``<base>/<variant>/<package>/`` holds for ``target`` (default: this interpreter).

        Asked again for the same variant, package and target, the first answer is returned.
        """
        target = target or Target.current()
        name = check_variant_name(variant)
        key = (name, canonicalize_name(package), target)
        with self._lock:
            known = self._listings.get(key)
        if known is not None:
            return known
        listing = self._variant(name, key[1], target)
        with self._lock:
            self._listings.setdefault(key, listing)
        return listing

    def _variant(self, name: str, project: str, target: Target) -> VariantListing:
        index_url = f"{self.base_url}/{name}"
        shown = mask_url(index_url)
        base = VariantListing(name, shown, package=project, offline=self.offline)
        page = self.fetch(f"{index_url}/{project}/")
        if page.error:
            return _failed(base, page)
        if page.status in _MISSING:
            return self._missing_package(base, index_url, project, page)
        if page.page is None:
            return _failed(base, page, _http_error(page.status, shown))
        return _with_files(
            replace(base, exists=True, status=200, format=page.page.format, **_origin(page)),
            page.page.files,
            project,
            target,
        )

    def variants(
        self, names: Iterable[str], package: str = "torch", target: Optional[Target] = None
    ) -> Tuple[VariantListing, ...]:
        """:meth:`variant` for each name, concurrently, in the order given."""
        target = target or Target.current()
        names = list(dict.fromkeys(names))
        if len(names) <= 1 or self.max_workers == 1:
            return tuple(self.variant(n, package, target) for n in names)
        with ThreadPoolExecutor(min(self.max_workers, len(names))) as pool:
            return tuple(pool.map(lambda n: self.variant(n, package, target), names))

    def all_variants(
        self, known: Sequence[str], package: str = "torch", target: Optional[Target] = None
    ) -> Tuple[VariantListing, ...]:
        """``known`` plus every variant the index root lists, all fetched concurrently.

        The root page is fetched alongside the known variants, so discovery costs no extra
        round trip unless the root names a variant nobody knew.
        """
        target = target or Target.current()
        known = list(dict.fromkeys(check_variant_name(k) for k in known))
        with ThreadPoolExecutor(self.max_workers) as pool:
            root: Future = pool.submit(self.root_variants)
            futures: Dict[str, Future] = {n: pool.submit(self.variant, n, package, target) for n in known}
            for extra in root.result():
                if extra not in futures:
                    futures[extra] = pool.submit(self.variant, extra, package, target)
            return tuple(f.result() for f in futures.values())

    def root_variants(self) -> Tuple[str, ...]:
        """Variant names listed on the base page (a mirror's directory listing, for example).

        download.pytorch.org's ``whl/`` page lists packages rather than variants, so it yields ().
        Failures yield () too (the table's variants still get asked).
        """
        page = self.fetch(f"{self.base_url}/")
        return variant_names(page.page) if page.page is not None else ()

    def has_wheel(self, variant: str, package: str, version: str, target: Optional[Target] = None) -> Optional[bool]:
        """Is there a ``package==version`` wheel on ``variant`` for ``target``? None: cannot tell."""
        listing = self.variant(variant, package, target)
        if listing.exists is None:
            return None
        try:
            wanted = Version(version).public
        except InvalidVersion:
            return False
        return wanted in listing.compatible  # already public versions, normalised by analyze()

    # -- HTTP + cache ------------------------------------------------------------------------

    def fetch(self, url: str) -> Fetched:
        """One page, from the cache when fresh (or offline), else from the network; parsed."""
        entry = self.cache.get(url) if self.cache else None
        if self.offline:
            if entry is None:
                return Fetched(error=f"offline, and {mask_url(url)} is not in the cache")
            return _from_entry(entry, note="offline")
        if entry is not None and not self.refresh and entry.age() < self.ttl:
            return _from_entry(entry)
        headers = {"Accept": ACCEPT, "User-Agent": f"envdoctor/{__version__}"}
        revalidate = entry is not None and not self.refresh and entry.page is not None
        if revalidate and entry is not None:
            if entry.etag:
                headers["If-None-Match"] = entry.etag
            if entry.last_modified:
                headers["If-Modified-Since"] = entry.last_modified
        import requests

        from envdoctor.wheels.deadline import Deadline

        session = self.session()
        answered = False
        try:
            with Deadline(self.timeout) as deadline:
                resp = session.get(
                    url, headers=headers, timeout=(self.timeout, self.timeout), stream=True, allow_redirects=True
                )
                answered = True
                try:
                    raw = _read_bounded(resp)
                finally:
                    resp.close()
        except (requests.RequestException, PageTooLarge) as exc:
            timed_out = isinstance(exc, requests.Timeout)
            message = (
                describe_exception(exc, url, self.timeout)
                if timed_out or not deadline.expired
                else _too_slow(url, self.timeout, answered)
            )
            log.debug("GET %s failed", mask_url(url), exc_info=True)
            if entry is not None:
                return _from_entry(entry, note=f"{message}; answered from the cache")
            return Fetched(error=message)
        except ValueError as exc:  # not requests' own (InvalidURL is one too): its split of a redirect's
            # Location ("Invalid IPv6 URL"), a host IDNA refuses
            log.debug("GET %s failed", mask_url(url), exc_info=True)
            message = f"{mask_url(url)}: {_not_a_listing(f'an answer envdoctor cannot follow ({exc})')}"
            if entry is not None:
                return _from_entry(entry, note=f"{message}; answered from the cache")
            return Fetched(error=message)
        if deadline.expired:  # no Content-Length: the shut socket ended the body early, as an end of file would
            message = _too_slow(url, self.timeout, answered)
            if entry is not None:
                return _from_entry(entry, note=f"{message}; answered from the cache")
            return Fetched(error=message)
        now = time.time()
        if resp.status_code == 304 and entry is not None:
            fresh = replace(
                entry,
                fetched_at=now,
                etag=resp.headers.get("ETag") or entry.etag,
                last_modified=resp.headers.get("Last-Modified") or entry.last_modified,
            )
            self._store(url, fresh)
            return _from_entry(fresh, note="revalidated (304)")
        status = resp.status_code
        if status >= 500 and entry is not None:
            return _from_entry(entry, note=f"{_http_error(status, mask_url(url))}; answered from the cache")
        page: Optional[Page] = None
        if status == 200:
            content_type = resp.headers.get("Content-Type")
            try:
                page = parse_page(_decode(raw, content_type), resp.url, content_type)
            except PageError as exc:
                return Fetched(status=status, error=f"{mask_url(url)}: {exc}")
        if status in _CACHEABLE:
            self._store(
                url,
                CachedPage(
                    url=url,
                    status=status,
                    fetched_at=now,
                    page=page,
                    etag=resp.headers.get("ETag"),
                    last_modified=resp.headers.get("Last-Modified"),
                ),
            )
        return Fetched(status=status, page=page)

    def session(self) -> requests.Session:
        """The shared session, made on first use (so a fully cached run never imports requests)."""
        with self._lock:
            if self._session is None:
                self._session = _make_session(self.retries, self.backoff, self.max_workers)
            return self._session

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None

    def __enter__(self) -> IndexClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _store(self, url: str, page: CachedPage) -> None:
        if self.cache is not None and not self.cache.put(url, page):
            log.debug("could not write the cache entry for %s", mask_url(url))

    def _missing_package(self, base: VariantListing, index_url: str, project: str, page: Fetched) -> VariantListing:
        """The package page is missing: is the whole index missing, or only this package?"""
        root = self.fetch(f"{index_url}/")
        origin = _origin(page)
        if root.error:
            return _failed(base, root)
        if root.page is not None:
            origin["note"] = "; ".join(
                filter(None, [origin["note"], f"the index has no {project} page (HTTP {page.status})"])
            )
            return replace(base, exists=True, status=page.status, **origin)
        if root.status in _MISSING:
            return replace(
                base,
                exists=False,
                status=root.status,
                **origin,
                error=f"{base.url}: no such index (HTTP {root.status})",
            )
        return _failed(base, root, _http_error(root.status, base.url))


def _make_session(retries: int, backoff: float, pool: int) -> requests.Session:
    import requests
    from urllib3.util.retry import Retry

    from envdoctor.wheels.deadline import DeadlineAdapter

    # a read timeout is retried at most once: a hung server should not cost 3 x the timeout
    retry = Retry(
        total=retries,
        connect=retries,
        read=min(retries, 1),
        status=retries,
        backoff_factor=backoff,
        status_forcelist=(500, 502, 503, 504),
        allowed_methods=frozenset({"GET", "HEAD"}),
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    session = requests.Session()
    session.trust_env = True  # HTTP(S)_PROXY, NO_PROXY, .netrc, CA bundle
    session.max_redirects = 10
    adapter = DeadlineAdapter(max_retries=retry, pool_connections=4, pool_maxsize=max(pool, 4))
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def _read_bounded(resp: requests.Response) -> bytes:
    """The body, refused beyond MAX_PAGE_BYTES (at once when Content-Length says so)."""
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > MAX_PAGE_BYTES:
        raise PageTooLarge(_too_large(int(declared)))
    chunks: List[bytes] = []
    size = 0
    for chunk in resp.iter_content(256 * 1024):
        size += len(chunk)
        if size > MAX_PAGE_BYTES:
            raise PageTooLarge(_too_large(None))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: Optional[int]) -> str:
    limit = MAX_PAGE_BYTES // (1024 * 1024)
    what = f"a page of {size / (1024 * 1024):.0f} MiB" if size is not None else f"a page larger than {limit} MiB"
    return (
        f"{what}: envdoctor reads index pages up to {limit} MiB (a wheel index page is a few hundred KB; "
        "is this URL an index?)"
    )


def _too_slow(url: str, timeout: float, answered: bool) -> str:
    """The whole request ran past its deadline: before the headers came, or during the page."""
    parts = urlsplit(url)
    where = f"{parts.hostname or '?'}:{parts.port}" if parts.port else (parts.hostname or "?")
    if not answered:
        return f"{where} did not answer within {timeout:g} s ({mask_url(url)})"
    return (
        f"{where} did not send the whole page within {timeout:g} s (a stalled or very slow server; "
        f"--timeout gives it longer) ({mask_url(url)})"
    )


def _not_a_listing(what: str) -> str:
    return f"the index answered something that is not a wheel listing: {mask_text(what)[:300]}"


def _decode(raw: bytes, content_type: Optional[str]) -> str:
    """The page as text, in the charset its Content-Type names (UTF-8 without one, or for a name
    Python does not know). A charset that is no text encoding (``undefined``, ``base64``), or one
    that cannot decode with replacement (``idna``), is no wheel listing: PageError.

    >>> _decode(b"caf\xe9", "text/html; charset=latin-1")
    'café'
    """
    import codecs

    m = re.search(r"charset=\"?([\w.-]+)", content_type or "", re.I)
    encoding = m.group(1)[:40] if m else "utf-8"
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        return raw.decode("utf-8", errors="replace")
    if not getattr(info, "_is_text_encoding", True):
        raise PageError(_not_a_listing(f"a page in charset={encoding}, which is no text encoding"))
    try:
        return raw.decode(info.name, errors="replace")
    except (UnicodeError, ValueError, TypeError) as exc:
        raise PageError(_not_a_listing(f"a page in charset={encoding}, which cannot be read ({exc})")) from None


def _from_entry(entry: CachedPage, note: Optional[str] = None) -> Fetched:
    return Fetched(status=entry.status, page=entry.page, from_cache=True, age=entry.age(), note=note)


def _origin(page: Fetched) -> Dict[str, Any]:
    return {
        "from_cache": page.from_cache,
        "age": page.age,
        "note": page.note,
        "source": "cache" if page.from_cache else "index",
    }


def _failed(base: VariantListing, page: Fetched, error: Optional[str] = None) -> VariantListing:
    origin = _origin(page) if page.from_cache else {"source": "none"}
    return replace(base, exists=None, status=page.status, error=mask_text(error or page.error or ""), **origin)


def _http_error(status: Optional[int], shown: str) -> str:
    if status is not None and status >= 500:
        return f"{shown}: server error (HTTP {status}), still failing after retries"
    if status == 401:
        return f"{shown}: the index wants credentials (HTTP 401)"
    return f"{shown}: unexpected answer (HTTP {status})"


def _with_files(listing: VariantListing, files: Sequence[FileLink], project: str, target: Target) -> VariantListing:
    versions, compatible, pythons, platforms = analyze(files, project, target)
    return replace(listing, versions=versions, compatible=compatible, other_pythons=pythons, other_platforms=platforms)

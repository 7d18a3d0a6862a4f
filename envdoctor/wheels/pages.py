"""Pure parsers of simple-repository pages: PEP 503 HTML and PEP 691 JSON.

A package page on download.pytorch.org (``<base>/cu128/torch/``) looks like::

    <!DOCTYPE html>
    <html>
      <body>
        <h1>Links for torch</h1>
        <a href="../../whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=0f…"
           data-dist-info-metadata="sha256=9a…" data-core-metadata="sha256=9a…">torch-2.8.0+cu128-…</a><br/>
      </body>
    </html>
    <!--TIMESTAMP 1754000000-->

>>> page = parse_page(TEXT, "https://download.pytorch.org/whl/cu128/torch/", "text/html")
>>> page.files[0].filename
'torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl'
"""

from __future__ import annotations

import html
import posixpath
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from envdoctor.parse.jsontext import JsonError, loads
from envdoctor.redact import mask_url
from envdoctor.table.rows import VARIANT_NAME

#: What a PEP 691 client sends: JSON preferred, HTML accepted.
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


class PageError(ValueError):
    """The page is not a simple-repository index page (garbage, truncated, wrong format)."""


@dataclass(frozen=True)
class FileLink:
    """One file on a package page."""

    filename: str  # "torch-2.8.0+cu128-cp312-…whl" (unquoted)
    url: str  # absolute, without the fragment
    hashes: Tuple[Tuple[str, str], ...] = ()  # (("sha256", "0f…"),)
    requires_python: Optional[str] = None  # ">=3.9"
    core_metadata: bool = False  # PEP 658/714 metadata file offered
    yanked: Optional[str] = None  # None, or the reason ("" when none given)


@dataclass(frozen=True)
class Page:
    """A parsed page: a project page has ``files``; a root page has ``projects``."""

    url: str
    format: str  # "html" or "json"
    files: Tuple[FileLink, ...] = ()
    projects: Tuple[str, ...] = ()  # link names on a root page: "torch", "cu128"
    api_version: Optional[str] = None  # "1.1" (JSON or the pypi:repository-version meta)


def parse_page(text: str, url: str, content_type: Optional[str]) -> Page:
    """Parse ``text`` fetched from ``url`` as JSON or HTML according to ``content_type``.

    Raises :class:`PageError` with a one-line reason when it is not an index page.
    """
    kind = (content_type or "").split(";")[0].strip().lower()
    if "json" in kind:
        return parse_json(text, url)
    if "html" in kind or not kind or kind == "text/plain" or kind == "application/octet-stream":
        stripped = text.lstrip()
        if stripped.startswith("{") and "html" not in kind:
            return parse_json(text, url)
        return parse_html(text, url)
    raise PageError(f"not an index page (Content-Type {kind})")


# -- PEP 503 HTML ---------------------------------------------------------------------------

#: A start or end tag; quoted attribute values may hold "<" and ">" (``data-requires-python=
#: ">=3.9,<4"``), unquoted parts may not, so a stray quote cannot make the scan quadratic.
_TAG = re.compile(r"""<(/?)([a-zA-Z][a-zA-Z0-9:-]*)((?:[^<>"']|"[^"]*"|'[^']*')*)>""")
_ATTR = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?""")
_INNER_TAG = re.compile(r"<[^>]*>")
_STRUCTURE = {"html", "body", "head", "h1", "title", "pre", "br", "p", "table", "div", "hr"}


def strip_comments(text: str) -> Tuple[str, bool]:
    """(the text without ``<!-- ... -->`` comments, whether a comment was left open). Linear: a
    regex ``<!--.*?-->`` rescans the rest of the page from every unclosed ``<!--``.

    >>> strip_comments("<a>x</a><!-- c --><b>")
    ('<a>x</a><b>', False)
    >>> strip_comments("<a>x</a><!-- cut")
    ('<a>x</a>', True)
    """
    parts: List[str] = []
    i = 0
    while True:
        j = text.find("<!--", i)
        if j < 0:
            parts.append(text[i:])
            return "".join(parts), False
        parts.append(text[i:j])
        k = text.find("-->", j + 4)
        if k < 0:
            return "".join(parts), True
        i = k + 3


def _attrs(raw: str) -> Dict[str, Optional[str]]:
    out: Dict[str, Optional[str]] = {}
    for m in _ATTR.finditer(raw):
        value = m.group(2) if m.group(2) is not None else (m.group(3) if m.group(3) is not None else m.group(4))
        out.setdefault(m.group(1).lower(), html.unescape(value) if value is not None else None)
    return out


def _anchors(text: str) -> Tuple[List[Tuple[Dict[str, Optional[str]], str]], Optional[str], Dict[str, str], int]:
    """(anchors with their text, <base href>, <meta name=content>, structure tags seen) of a page
    whose comments are already stripped."""
    anchors: List[Tuple[Dict[str, Optional[str]], str]] = []
    base: Optional[str] = None
    meta: Dict[str, str] = {}
    structure = 0
    open_attrs: Optional[Dict[str, Optional[str]]] = None
    open_at = 0
    for m in _TAG.finditer(text):
        end, name = m.group(1), m.group(2).lower()
        if name == "a" and open_attrs is not None:  # </a>, or an <a> left open
            anchors.append((open_attrs, m.string[open_at : m.start()]))
            open_attrs = None
        if end:
            continue
        if name == "a":
            open_attrs, open_at = _attrs(m.group(3)), m.end()
        elif name == "base" and base is None:
            base = _attrs(m.group(3)).get("href")
        elif name == "meta":
            a = _attrs(m.group(3))
            if a.get("name") and a.get("content") is not None:
                meta[str(a["name"]).lower()] = str(a["content"])
        elif name in _STRUCTURE:
            structure += 1
    if open_attrs is not None:
        anchors.append((open_attrs, ""))
    return anchors, base, meta, structure


def parse_html(text: str, url: str) -> Page:
    """Parse a PEP 503 page. Links are resolved against ``url`` (the URL after redirects)."""
    _check_text(text)
    text, open_comment = strip_comments(text)
    if "<" in text or open_comment:
        _check_complete(text, open_comment)
    anchors, base_href, meta, structure = _anchors(text)
    if not anchors and not structure:
        raise PageError("not an index page (no HTML and no links)")
    resolve = _Resolver(urljoin(url, base_href) if base_href else url)
    files: List[FileLink] = []
    projects: List[str] = []
    for attrs, label in anchors:
        href = (attrs.get("href") or "").strip()
        if not href:
            continue
        link, _, fragment = href.partition("#")
        name = _last_segment(link)
        if _looks_like_file(name):
            files.append(
                FileLink(
                    filename=name,
                    url=resolve(link),
                    hashes=_fragment_hashes(fragment),
                    requires_python=attrs.get("data-requires-python") or None,
                    core_metadata=_attr_true(attrs, "data-core-metadata")
                    or _attr_true(attrs, "data-dist-info-metadata"),
                    yanked=attrs.get("data-yanked") if "data-yanked" in attrs else None,
                )
            )
        else:
            projects.append(name or html.unescape(_INNER_TAG.sub("", label)).strip())
    api = meta.get("pypi:repository-version")
    return Page(mask_url(url), "html", tuple(files), tuple(p for p in projects if p), api)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise PageError("not an index page (binary data)")
    if text.count("\ufffd") > max(8, len(text) // 100):
        raise PageError("not an index page (not text)")


def _check_complete(text: str, open_comment: bool = False) -> None:
    """A page cut off in transit: an ``<html>`` without ``</html>``, or ending inside a tag or a
    comment. ``text`` is without its comments."""
    lowered = text.lower()
    tail = text.rstrip()
    if "<html" in lowered and "</html>" not in lowered:
        raise PageError("not a complete index page (truncated: no </html>)")
    if open_comment:
        raise PageError("not a complete index page (truncated inside a comment)")
    if tail and not tail.endswith(">"):
        raise PageError("not a complete index page (truncated inside a tag)")


class _Resolver:
    """``urljoin`` against one page URL, with a fast path for the common link forms.

    Credentials in the page URL are left out of the links (they are never needed to name a
    file, and file URLs are cached and shown).
    """

    def __init__(self, page_url: str) -> None:
        parts = urlsplit(page_url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        self.base = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        self.origin = f"{parts.scheme}://{netloc}"

    def __call__(self, link: str) -> str:
        if link.startswith(("https://", "http://")):
            return link
        if link.startswith("/") and not link.startswith("//"):
            return self.origin + link
        if ":" not in link and "?" not in link and not link.startswith("/") and "?" not in self.base:
            # "../../whl/cu121/torch-….whl": RFC 3986 dot-segment removal on the path
            folder = self.base[len(self.origin) :].rsplit("/", 1)[0] or ""
            return self.origin + posixpath.normpath(f"{folder}/{link}").replace("//", "/")
        return urljoin(self.base, link)


def _last_segment(link: str) -> str:
    """The unquoted last path segment of a link: "torch-2.8.0+cu128-….whl", "torch"."""
    path = link.split("?", 1)[0].rstrip("/")
    return unquote(path.rsplit("/", 1)[-1])


def _looks_like_file(name: str) -> bool:
    return name.endswith((".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz"))


def _fragment_hashes(fragment: str) -> Tuple[Tuple[str, str], ...]:
    if "=" not in fragment:
        return ()
    algo, _, value = fragment.partition("=")
    return ((algo.lower(), value),) if algo and value else ()


def _attr_true(attrs: Dict[str, Optional[str]], name: str) -> bool:
    if name not in attrs:
        return False
    return (attrs[name] or "true").lower() != "false"


# -- PEP 691 JSON ---------------------------------------------------------------------------


def parse_json(text: str, url: str) -> Page:
    """Parse a PEP 691 page (``application/vnd.pypi.simple.v1+json``)."""
    try:
        data = loads(text)
    except JsonError as exc:
        raise PageError(f"not an index page (JSON does not parse: {str(exc)[:80]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict):
        raise PageError("not an index page (JSON without 'meta')")
    api = str(data["meta"].get("api-version", ""))
    if not api.startswith("1."):
        raise PageError(f"unsupported simple API version {api or '(none)'} (envdoctor reads 1.x)")
    if isinstance(data.get("files"), list):
        files = tuple(
            _json_file(f, url)
            for f in data["files"]
            if isinstance(f, dict) and isinstance(f.get("filename"), str) and f["filename"]
        )
        return Page(mask_url(url), "json", files, (), api)
    if isinstance(data.get("projects"), list):
        names = tuple(
            p["name"] for p in data["projects"] if isinstance(p, dict) and isinstance(p.get("name"), str) and p["name"]
        )
        return Page(mask_url(url), "json", (), names, api)
    raise PageError("not an index page (JSON with neither 'files' nor 'projects')")


def _json_file(f: Dict[str, object], url: str) -> FileLink:
    raw_hashes = f.get("hashes")
    hashes: Dict[str, object] = raw_hashes if isinstance(raw_hashes, dict) else {}
    yanked: Union[bool, str, None] = f.get("yanked")  # type: ignore[assignment]
    meta = f.get("core-metadata", f.get("dist-info-metadata", False))
    link = f.get("url") if isinstance(f.get("url"), str) and f.get("url") else f["filename"]
    absolute = _Resolver(url)(str(link).partition("#")[0])
    requires = f.get("requires-python")
    return FileLink(
        filename=str(f["filename"]),
        url=absolute,
        hashes=tuple(sorted((str(k), str(v)[:200]) for k, v in hashes.items() if isinstance(v, str))),
        requires_python=requires if isinstance(requires, str) and requires else None,
        core_metadata=bool(meta),
        yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
    )


def variant_names(page: Page) -> Tuple[str, ...]:
    """Names on a root page that look like wheel variants ("cu128", "rocm6.2", "cpu")."""
    return tuple(dict.fromkeys(n for n in (p.strip("/").lower() for p in page.projects) if VARIANT_NAME.match(n)))

"""A checker of envdoctor's HTML pages (no tests here), on the standard library's parser.

``check_page(text)`` raises AssertionError unless the page is one self-contained document: tags
balanced (void elements aside), nothing loaded from outside (no ``src`` at all, ``href`` only to
``#anchors`` of the page, no ``url(`` and no http(s) URL in an attribute or a style), no
``<link>``, ``<iframe>``, ``<object>``, ``<embed>``, ``<img>``, ``@import``; one
``<script type="application/json" id="envdoctor-document">`` that parses; returns what it read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
    # inside inline SVG, self-closed elements come as startend tags; these may also be written open
    "circle",
    "line",
    "polyline",
    "rect",
    "path",
}
FORBIDDEN = {"link", "iframe", "object", "embed", "img", "frame", "frameset", "base", "audio", "video", "source"}
URL = re.compile(r"(?i)\b(?:https?|ftp|wss?):|//[a-z0-9.-]+\.[a-z]{2,}/|url\s*\(|@import")


@dataclass
class Read:
    text: str = ""  # the visible text, tags stripped
    document: Optional[Dict[str, Any]] = None  # the embedded JSON document
    ids: List[str] = field(default_factory=list)
    hrefs: List[str] = field(default_factory=list)
    tags: Dict[str, int] = field(default_factory=dict)


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: List[Tuple[str, Tuple[int, int]]] = []
        self.read = Read()
        self.parts: List[str] = []
        self.in_script: Optional[str] = None
        self.script: List[str] = []
        self.documents = 0

    def _attrs(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        assert tag not in FORBIDDEN, f"<{tag}> at {self.getpos()}"
        self.read.tags[tag] = self.read.tags.get(tag, 0) + 1
        for name, value in attrs:
            value = value or ""
            assert name != "src", f"<{tag} src={value!r}> at {self.getpos()}: a page loads nothing"
            if name == "href":
                assert value.startswith("#"), f"<{tag} href={value!r}> at {self.getpos()}: links stay in the page"
                self.read.hrefs.append(value)
            if name == "id":
                self.read.ids.append(value)
            if name.startswith("on"):
                raise AssertionError(f"inline handler {name} on <{tag}> at {self.getpos()}")
            assert not URL.search(value), f"<{tag} {name}={value!r}> at {self.getpos()}: a URL"

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self._attrs(tag, attrs)
        if tag == "script":
            kind = dict(attrs).get("type") or "text/javascript"
            self.in_script = kind
            if kind == "application/json":
                assert dict(attrs).get("id") == "envdoctor-document", "a JSON block that is not the document"
                self.documents += 1
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self._attrs(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack, f"</{tag}> at {self.getpos()} closes nothing"
        open_tag, where = self.stack.pop()
        assert open_tag == tag, f"</{tag}> at {self.getpos()} closes <{open_tag}> of {where}"
        if tag == "script":
            body = "".join(self.script)
            if self.in_script == "application/json":
                self.read.document = json.loads(body)
            else:
                assert not URL.search(body.replace("location.hash", "")), "a URL in the page's script"
            self.in_script, self.script = None, []

    def handle_data(self, data: str) -> None:
        if self.in_script is not None:
            self.script.append(data)
        elif self.stack and self.stack[-1][0] == "style":
            assert not URL.search(data), "url() or a URL in the style"
        else:
            self.parts.append(data)


def check_page(text: str) -> Read:
    """What the page holds, or AssertionError saying what is wrong and where."""
    assert text.startswith("<!DOCTYPE html>"), "not an HTML5 page"
    c = _Checker()
    c.feed(text)
    c.close()
    assert not c.stack, f"not closed: {c.stack[-3:]}"
    assert c.documents == 1 and c.read.document is not None, "no embedded document"
    ids = set(c.read.ids)
    missing = [h for h in c.read.hrefs if h[1:] not in ids]
    assert not missing, f"links to nothing in the page: {missing[:5]}"
    c.read.text = " ".join(" ".join(c.parts).split())
    return c.read

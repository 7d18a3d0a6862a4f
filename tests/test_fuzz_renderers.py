"""Every renderer encodes what it is given (issue 27): hostile strings (lone surrogates, control
characters, NUL, right-to-left marks, 100,000 characters, markup) anywhere in a saved report or in
the reports of a fleet come out of the text, JSON, Markdown and HTML renderers as text that
encodes as UTF-8, and HTML escapes markup. (bench, burn and comms: tests/test_fuzz_children.py.)

Each case starts from a real report (the H200 fixture) and puts up to four hostile strings in
place of its strings, as a saved file would hold them; the file is read by the one reader.
``ENVDOCTOR_FUZZ_EXAMPLES`` sets the number of examples (the suite's run: 25).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.documents import DocumentError, dumps
from envdoctor.report import ReportError, parse_report
from tests import fleetdocs

EXAMPLES = int(os.environ.get("ENVDOCTOR_FUZZ_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 25, suppress_health_check=list(HealthCheck)
)

STRINGS = [
    "\ud800",
    "a\udfffb",
    "\udce9",
    "\x00",
    "\x1b[31mred\x1b[0m\x07",
    "\u202eevil\u202c",
    "\u200f\u05d0",
    "x" * 100_000,
    "<script>alert(1)</script>",
    "a|b\n| c",
    "`x`",
    "]]>",
    "&amp;",
    "\r\n\t",
    "\ufffe",
    "\U0001f600",
    "caf\u00e9",
    "%s%n{0}",
]


def _string_paths(value: Any, where: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    out: List[Tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        if isinstance(child, str):
            out.append(where + (key,))
        else:
            out.extend(_string_paths(child, where + (key,)))
    return out


H200 = fleetdocs.h200()
PATHS = [p for p in _string_paths(H200) if p[0] != "schema"]


@st.composite
def hostile_report(draw: Any) -> Dict[str, Any]:
    doc = copy.deepcopy(H200)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(PATHS))
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = draw(st.sampled_from(STRINGS))
    return doc


def _text(doc: Dict[str, Any]) -> str:
    return json.dumps(doc)  # as a saved file holds it: lone surrogates as \\ud800 escapes


@SETTINGS
@given(doc=hostile_report())
def test_report_renderers_encode_hostile_strings(doc: Dict[str, Any]) -> None:
    from envdoctor.render import markdown, text
    from envdoctor.render.json import report_document

    try:
        facts, findings, _ = parse_report(_text(doc), "hostile.json")
    except (DocumentError, ReportError):
        return  # refused with its one line: also an answer
    for out in (
        text.render(facts, findings),
        markdown.render(facts, findings),
        dumps(report_document(facts, findings)),
    ):
        out.encode("utf-8")


@SETTINGS
@given(docs=st.lists(hostile_report(), min_size=1, max_size=3))
def test_fleet_renderers_encode_hostile_strings_and_html_escapes_markup(
    docs: List[Dict[str, Any]], tmp_path_factory: Any
) -> None:
    from envdoctor.fleet.merge import merge_files
    from envdoctor.fleet.render import fleet_document, render_html, render_markdown, render_text

    folder: Path = tmp_path_factory.mktemp("fleet")
    for i, doc in enumerate(docs):
        (folder / f"node-{i}.json").write_text(_text(fleetdocs.host(doc, f"node-{i}")))
    (folder / "good.json").write_text(_text(fleetdocs.host(fleetdocs.h200(), "good")))
    fleet, _ = merge_files([str(folder)])
    html = render_html(fleet)
    for out in (render_text(fleet), render_markdown(fleet), html, dumps(fleet_document(fleet))):
        out.encode("utf-8")
    assert "<script>alert(1)" not in html  # the page has a script of its own

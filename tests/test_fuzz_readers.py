"""Property tests of the readers of outside data that issue 27 hardened, beside the parsers of
tests/test_fuzz_parsers.py and with its harness (the same hostile texts, the same CPU-time bound,
the same ``ENVDOCTOR_FUZZ_EXAMPLES`` for the long run that docs/testing.md records):

- index answers: a page with any Content-Type (charsets included) and any bytes, PEP 691 JSON;
- the target interpreter's answers: interpreter.py's JSON (``target_from_probe``), torch_probe.py's
  protocol lines (``probes.python.interpret``);
- configuration: pip.conf and uv.toml with numbers of any length;
- wheel cache entries read back from disk;
- redaction and escaping of what is shown (fleet --redact's word tree, every mask, ``escape``).

Each answers or raises its documented error, and what it returns for output encodes as UTF-8.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envdoctor.child import from_ran
from envdoctor.escape import escape, escape_json
from envdoctor.fleet.merge import NodeRedactor
from envdoctor.parse import indexconf
from envdoctor.probes.python import interpret
from envdoctor.redact import mask_text, mask_url
from envdoctor.run import Ran
from envdoctor.wheels import cache, client, pages, target
from tests.test_fuzz_parsers import SETTINGS, Case, _bounded, hostile_json, hostile_text

URL = "https://download.pytorch.org/whl/cu128/torch/"
CHARSETS = [
    "utf-8",
    "undefined",
    "idna",
    "base64",
    "rot13",
    "zlib",
    "utf-16",
    "latin-1",
    "nosuch",
    "",
    '"x"',
    "utf-8; x=1",
    "UTF-7",
    "hex",
    "bz2",
    "punycode",
    "unicode_escape",
    "raw_unicode_escape",
    "9" * 50,
]
CONTENT_TYPES = st.one_of(
    st.none(),
    st.text(max_size=60),
    st.builds(
        lambda base, cs: f"{base}; charset={cs}",
        st.sampled_from(["text/html", "application/vnd.pypi.simple.v1+json", "application/json", "text/plain"]),
        st.sampled_from(CHARSETS),
    ),
)


@st.composite
def interpreter_answer(draw: Any) -> str:
    """interpreter.py's answer with each field kept, dropped or replaced by a hostile value."""
    base = {
        "version": [3, 12, 3],
        "implementation": "cpython",
        "abiflags": "",
        "gil_disabled": False,
        "soabi": "cpython-312-x86_64-linux-gnu",
        "libc": ["glibc", "2.39"],
        "confstr": "glibc 2.39",
        "machine": "x86_64",
        "bits": 64,
        "platform": "linux-x86_64",
        "mac_ver": "",
    }
    odd = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=30),
        st.lists(st.one_of(st.integers(), st.text(max_size=12)), max_size=4),
        st.sampled_from(
            [
                "glibc 2.150000000",
                "1\u00b2.3",
                "   ",
                "pypy",
                "macosx-11.0-arm64",
                "\ud800",
                "2." + "9" * 400,
                [3, 10**30],
                ["glibc", 5],
            ]
        ),
    )
    info = {}
    for key, value in base.items():
        choice = draw(st.integers(0, 3))
        if choice == 0:
            continue
        info[key] = value if choice < 3 else draw(odd)
    return json.dumps(info)


def _target(text: str) -> None:
    from envdoctor.parse.jsontext import JsonError, loads

    try:
        info = loads(text)
    except JsonError:
        return
    t = target.target_from_probe(info, "/opt/odd/python3")
    t.description.encode("utf-8")


def _interpret(text: str) -> None:
    ran = Ran(("/usr/bin/python3", "-"), 0, text, "", 0.1)
    python, torch = interpret(from_ran("torch_probe.py", "/usr/bin/python3", ran), "/usr/bin/python3", "--python")
    assert python is not None and torch is not None


def _protocol_lines(text: str) -> str:
    """A hostile text as the child's protocol lines: a result, an error, an event."""
    return "\n".join(
        json.dumps({"envdoctor_child": 2, "kind": kind, kind: text, "python": text, "torch": text})
        for kind in ("stage", "result", "error")
    )


def _cache_entry(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = cache.PageCache(Path(tmp))
        store.directory.mkdir(parents=True)
        store.path_for(URL).write_text(escape(text), encoding="utf-8")
        entry = store.get(URL)
        if entry is not None:
            entry.age()


def _shown(fn: Any) -> Any:
    def call(text: str) -> None:
        escape(fn(text)).encode("utf-8")

    return call


REDACTOR = NodeRedactor(
    ["/home/ana"],
    {
        "gpu-07": "node-01",
        "gpu-07.cluster.local": "node-02",
        "ana": "<user>",
        "a.b.c": "<serial>",
        "n4 (rank 3)": "node-03",
    },
)

CASES = [
    Case(
        "client._decode",
        lambda t: client._decode(t.encode("utf-8", "surrogatepass"), "text/html; charset=" + t[:20]),
        (pages.PageError,),
    ),
    Case("pages.parse_page(html)", lambda t: pages.parse_page(t, URL, "text/html"), (pages.PageError,)),
    Case(
        "pages.parse_page(pep691)",
        lambda t: pages.parse_page(t, URL, "application/vnd.pypi.simple.v1+json"),
        (pages.PageError,),
    ),
    Case(
        "indexconf.parse_uv_config(numbers)",
        lambda t: indexconf.parse_uv_config("[pip]\nconcurrent-downloads = " + t[: 128 * 1024 - 40] + "\n"),
        (indexconf.IndexConfigError,),
    ),
    Case(
        "indexconf.parse_pip_config(numbers)",
        lambda t: indexconf.parse_pip_config("[global]\ntimeout = " + t + "\nproxy = " + t + "\n", "pip.conf"),
        (indexconf.IndexConfigError,),
    ),
    Case("cache.PageCache.get", _cache_entry),
    Case("probes.python.interpret(lines)", lambda t: _interpret(_protocol_lines(t))),
    Case("probes.python.interpret(raw)", _interpret),
    Case("fleet NodeRedactor.text", _shown(REDACTOR.text)),
    Case("redact.mask_text (shown)", _shown(mask_text)),
    Case("redact.mask_url (shown)", _shown(mask_url)),
    Case("escape.escape", _shown(escape)),
    Case("escape.escape_json", lambda t: json.loads(escape_json(json.dumps(t, ensure_ascii=False)))),
]
JSON_CASES = [
    Case("target.target_from_probe", _target, (target.TargetError,)),
    Case("cache.PageCache.get(json)", _cache_entry),
    Case("probes.python.interpret(json)", _interpret),
    Case("pages.parse_json", lambda t: pages.parse_json(t, URL), (pages.PageError,)),
]

#: a digit run past Python's int-string limit and the shapes of the issue, mixed into the texts
DIGITS = st.builds(lambda n, tail: "9" * n + tail, st.integers(1, 6000), st.sampled_from(["", ".5", "e3", "\n"]))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@SETTINGS
@given(text=st.one_of(hostile_text(), DIGITS))
def test_readers_answer_or_raise_their_error_in_bounded_time(case: Case, text: str) -> None:
    _bounded(case, text)


@pytest.mark.parametrize("case", JSON_CASES, ids=[c.name for c in JSON_CASES])
@SETTINGS
@given(text=st.one_of(interpreter_answer(), hostile_json(), hostile_text()))
def test_json_readers_answer_or_raise_their_error_in_bounded_time(case: Case, text: str) -> None:
    _bounded(case, text)


@SETTINGS
@given(raw=st.binary(max_size=2000), content_type=CONTENT_TYPES)
def test_an_index_page_of_any_bytes_and_content_type_is_a_page_or_a_page_error(raw: bytes, content_type: Any) -> None:
    _bounded(
        Case(
            "client._decode+parse_page",
            lambda _: pages.parse_page(client._decode(raw, content_type), URL, content_type),
            (pages.PageError,),
        ),
        "",
    )

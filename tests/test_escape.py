"""A byte that is not UTF-8 (a lone surrogate in Python's str) is shown escaped by every output:
``snapshot`` with a PATH folder named with byte 0xff exited 3 and saved nothing (the atomic writer
encoded strictly), ``check --json`` exited 3 under a strict UTF-8 stdout."""

from __future__ import annotations

import io
import json

from envdoctor.atomic import write_atomic
from envdoctor.documents import dumps
from envdoctor.escape import escape, escape_json, escape_streams


def test_escape_writes_the_byte_of_surrogateescape_and_the_code_of_other_surrogates():
    assert escape("/opt/d\udcff/bin") == "/opt/d\\xff/bin"
    assert escape("x\ud800y") == "x\\ud800y"
    assert escape("caf\u00e9") == "caf\u00e9"


def test_a_document_with_a_stray_byte_is_json_that_encodes():
    text = dumps({"path": "/opt/d\udcff/bin", "caf\udce9": ["\ud83d"]})
    assert json.loads(text.encode("utf-8")) == {"path": "/opt/d\\xff/bin", "caf\\xe9": ["\\ud83d"]}
    assert escape_json(json.dumps("ok")) == '"ok"'


def test_a_file_with_a_stray_byte_is_written(tmp_path):
    path = write_atomic(tmp_path / "report.md", "PATH /opt/d\udcff/bin\n")
    assert path.read_bytes() == b"PATH /opt/d\\xff/bin\n"


def test_a_strict_utf8_stream_writes_the_escape():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    escape_streams(stream, object())  # what is no text stream is left alone
    stream.write("Python at /tmp/caf\udce9/python3\n")
    stream.flush()
    assert raw.getvalue() == b"Python at /tmp/caf\\xe9/python3\n"

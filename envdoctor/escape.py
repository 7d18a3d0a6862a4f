"""Text from outside that no UTF-8 encoder takes, shown with the odd byte escaped.

Python hands envdoctor a byte that is not UTF-8 (a folder named with byte 0xff on PATH, an
argument ``$'caf\\xe9/python3'``, an environment variable) as a lone surrogate (``surrogateescape``):
``"caf\\udce9"``. Every output (the terminal, ``--json``, a written file) goes through here, so
such a value is shown as ``caf\\xe9`` (another lone surrogate, from a JSON escape, as ``\\ud800``)
and the rest is written as it is, instead of an UnicodeEncodeError ending the run.

>>> escape("caf\\udce9/python3"), escape("plain")
('caf\\\\xe9/python3', 'plain')
"""

from __future__ import annotations

import codecs
import re
from typing import Tuple

#: The error handler's name, for ``str.encode(..., errors=ERRORS)`` and text streams.
ERRORS = "envdoctor-escape"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept: the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` with every lone surrogate written as its escape (``\\xe9``, ``\\ud800``)."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: _shown(m.group(0)), text)


def escape_json(text: str) -> str:
    """A JSON text whose strings held lone surrogates, with each written as the JSON of its
    escape (``"caf\\udce9"`` -> ``"caf\\\\xe9"``): the text stays JSON and encodes as UTF-8."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: "\\" + _shown(m.group(0)), text)


def _handler(exc: UnicodeError) -> Tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(_shown(ch) for ch in bad), exc.end


codecs.register_error(ERRORS, _handler)


def escape_streams(*streams: object) -> None:
    """Make text streams (stdout, stderr) write what they cannot encode as escapes."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors=ERRORS)
        except (ValueError, OSError, TypeError):  # closed, or not a TextIOWrapper after all
            pass


__all__ = ["ERRORS", "escape", "escape_json", "escape_streams"]

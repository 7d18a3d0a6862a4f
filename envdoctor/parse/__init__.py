"""Pure parsers of real tool output: text in, typed values out, no machine access.

Each module parses one tool and raises a subclass of :class:`ParseError` (a ``ValueError``) on
garbage; probes turn that into ``ProbeError("unparseable", ...)``. Each docstring shows the real
input the parser was written against.
"""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import InvalidVersion, Version


class ParseError(ValueError):
    """A tool printed something that is not what the parser expects."""


_LEADING = re.compile(r"\d+(?:\.\d+)*")


def loose_version(text: Optional[str]) -> Optional[Version]:
    """The leading dotted number of ``text`` as a Version: "20.10.24+dfsg1" -> 20.10.24,
    "v2.2.2" -> None (must start with a digit), "" -> None."""
    if not text:
        return None
    match = _LEADING.match(text.strip())
    if not match:
        return None
    try:
        return Version(match.group(0))
    except InvalidVersion:
        return None


def major_minor(text: Optional[str]) -> Optional[str]:
    """"12.8.93" -> "12.8"; "580.159.04" -> "580.159"; "13" -> None."""
    v = loose_version(text)
    if v is None or len(v.release) < 2:
        return None
    return f"{v.release[0]}.{v.release[1]}"


# --- versions: the one set of helpers; compare the Version objects they return, never strings ----

def version(text: object) -> Optional[Version]:
    """A PEP 440 version, local label kept; None when missing or garbage.

    "2.11.0+cu130" -> Version("2.11.0+cu130"); "580.159.04" -> Version("580.159.4");
    "12.8" -> Version("12.8"); "" / None / "unknown" -> None.
    """
    if text is None or text == "":
        return None
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        return None


def release(text: object) -> Optional[Version]:
    """The version without its local label: "2.11.0+cu130" -> Version("2.11.0");
    "580.159.04" -> Version("580.159.4"); "12.8" -> Version("12.8"); garbage -> None."""
    if text is None or text == "":
        return None
    return version(str(text).split("+", 1)[0])


def major(text: object) -> Optional[int]:
    """The first number, e.g. a driver branch: "580.159.04" -> 580; "470" -> 470;
    "12.8" -> 12; "R580" / "" / None -> None."""
    v = loose_version(str(text)) if text is not None else None
    return v.release[0] if v is not None else None


def version_key(text: object) -> tuple[bool, Version, str]:
    """A sort key that orders version strings as versions: "12.9" < "12.10"; garbage ("?") last."""
    v = version(text)
    return (v is None, v if v is not None else Version("0"), str(text))

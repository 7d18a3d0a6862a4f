"""Terminal colour: whether to use it, and the one way envdoctor paints text.

Whether: ``--color always|never`` decides; with ``auto`` (the default) the environment does, in
the order CPython's own ``Lib/_colorize.py`` uses: ``NO_COLOR`` set and not empty turns colour off
(https://no-color.org), then ``FORCE_COLOR`` set and not empty turns it on
(https://force-color.org), then ``TERM=dumb`` turns it off, and otherwise colour follows whether
the output is a terminal.

>>> color_choice("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"})
False
>>> color_enabled("auto", {"NO_COLOR": ""}, isatty=True)
True
>>> Style(True)("2 error(s)", "error")
'\\x1b[31m2 error(s)\\x1b[0m'
"""

from __future__ import annotations

from typing import Literal, Mapping, Optional, Tuple

ColorMode = Literal["auto", "always", "never"]
COLOR_MODES: Tuple[ColorMode, ...] = ("auto", "always", "never")

#: Kind of text -> SGR parameters (ECMA-48). Findings and verdicts use the severity names.
SGR: Mapping[str, str] = {
    "error": "31",
    "warning": "33",
    "info": "36",
    "ok": "32",
    "dim": "2",
    "bold": "1",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


def color_choice(mode: Optional[str], env: Mapping[str, str]) -> Optional[bool]:
    """True or False where the flag or the environment decides; None where the terminal does."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    return None


def color_enabled(mode: Optional[str], env: Mapping[str, str], isatty: bool) -> bool:
    """Whether to write colour to a stream that is (``isatty``) or is not a terminal."""
    choice = color_choice(mode, env)
    return isatty if choice is None else choice


def paint(text: str, kind: str, color: bool) -> str:
    """``text`` in the colour of ``kind`` (a key of :data:`SGR`); unchanged without colour."""
    code = SGR.get(kind)
    if not color or code is None:
        return text
    return f"\x1b[{code}m{text}\x1b[0m"


class Style:
    """``Style(color)(text, kind)``: :func:`paint` with the decision taken once."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, kind: str) -> str:
        return paint(text, kind, self.color)

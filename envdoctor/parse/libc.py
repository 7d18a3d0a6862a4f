"""The glibc version of a ``libc.so.6`` read as bytes (an image's, not envdoctor's own). Pure.

glibc embeds the banner it prints when run as a program; Debian 12's::

    GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.

>>> parse_libc_banner(b"\\x00GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.8) stable release version 2.35.\\n")
'2.35'
"""

from __future__ import annotations

import re
from typing import Optional

_BANNER = re.compile(rb"GNU C Library [^\n\x00]{0,120}?release version (\d+\.\d+)")


def parse_libc_banner(data: bytes) -> Optional[str]:
    """``"2.35"`` from the bytes of a libc.so.6; None when they hold no glibc banner (musl, garbage)."""
    m = _BANNER.search(data)
    return m.group(1).decode("ascii") if m else None

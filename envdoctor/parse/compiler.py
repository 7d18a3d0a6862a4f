"""``gcc --version`` -> what collect_env calls the GCC version.

On the development machine::

    gcc (Debian 12.2.0-14+deb12u1) 12.2.0
    Copyright (C) 2022 Free Software Foundation, Inc.
    ...

and on the H200 (its collect_env.txt): ``gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0``.
"""

from __future__ import annotations

import re
from typing import Optional

_VERSION = re.compile(r"(?<![\w.])(\d{1,3}\.\d{1,3}(?:\.\d{1,4})?)(?![\w.])")


def parse_gcc_version(text: str) -> tuple[Optional[str], Optional[str]]:
    """(first line, version) of ``gcc --version``; (None, None) for output that is not a compiler's.

    >>> parse_gcc_version("gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0\\nCopyright (C) 2023 ...\\n")
    ('gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0', '13.3.0')
    >>> parse_gcc_version("Apple clang version 15.0.0 (clang-1500.3.9.4)\\nTarget: arm64-apple-darwin23.4.0\\n")
    ('Apple clang version 15.0.0 (clang-1500.3.9.4)', '15.0.0')
    >>> parse_gcc_version("bash: gcc: command not found")
    (None, None)
    """
    first = text[:4096].lstrip().split("\n", 1)[0].strip()[:200]
    low = first.lower()
    if not first or not any(w in low for w in ("gcc", "clang", "g++", "cc (")):
        return None, None
    found = _VERSION.findall(first)
    if not found:
        return None, None
    after = re.search(r"\bversion\s+(\d{1,3}\.\d{1,3}(?:\.\d{1,4})?)", first)  # clang: "version 15.0.0 (...)"
    return first, (after.group(1) if after else found[-1])  # gcc: "gcc (distro build) 13.3.0"

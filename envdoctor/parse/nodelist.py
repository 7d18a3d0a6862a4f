"""Slurm's host-list syntax, expanded purely (no ``scontrol`` needed).

``SLURM_JOB_NODELIST`` and ``SLURM_STEP_NODELIST`` name the nodes of a job compactly: names
separated by commas, each with bracketed numeric ranges whose lower bound sets the zero padding,
and several bracket groups expanding as a product, leftmost slowest (as ``scontrol show
hostnames`` prints them)::

    >>> expand("node[01-04,07],login")
    ('node01', 'node02', 'node03', 'node04', 'node07', 'login')
    >>> expand("rack[1-2]-gpu[8-9]")
    ('rack1-gpu8', 'rack1-gpu9', 'rack2-gpu8', 'rack2-gpu9')
    >>> first_host("gpu-[001-512]")
    'gpu-001'

Text that is not a host list raises :class:`NodelistError` (a ``ValueError``) with one line.
"""

from __future__ import annotations

import re
from typing import Iterator, List, Tuple

#: More hosts than this in one list is refused (no cluster has them; it protects the memory).
MAX_HOSTS = 100_000
#: A host name (RFC 1123 label characters and dots) between and around the brackets.
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]*")
_ITEM = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9}))?")


class NodelistError(ValueError):
    """Text that is not in Slurm's host-list syntax."""


def _split_top(text: str) -> List[str]:
    """``a[1,2],b`` -> ``["a[1,2]", "b"]``: commas outside brackets separate host patterns."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise NodelistError(f"{text[:80]!r}: brackets inside brackets")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise NodelistError(f"{text[:80]!r}: ']' without '['")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise NodelistError(f"{text[:80]!r}: '[' without ']'")
    parts.append(text[start:])
    return parts


def _range(body: str, pattern: str) -> Tuple[Tuple[int, int, int], ...]:
    """``01-04,07`` -> ((1, 4, 2), (7, 7, 1)): (low, high, width) of each item."""
    items = []
    for item in body.split(","):
        m = _ITEM.fullmatch(item.strip())
        if not m:
            raise NodelistError(f"{pattern[:80]!r}: {item[:20]!r} is not a number or a range like 01-04")
        low, high = int(m.group(1)), int(m.group(2) if m.group(2) is not None else m.group(1))
        if high < low:
            raise NodelistError(f"{pattern[:80]!r}: the range {item} runs backwards")
        items.append((low, high, len(m.group(1))))
    return tuple(items)


def _pattern(pattern: str) -> Tuple[List[str], List[Tuple[Tuple[int, int, int], ...]], int]:
    """A host pattern as its literal pieces (one more than the groups), its groups, and its size."""
    literals, groups, size, rest = [], [], 1, pattern
    while True:
        i = rest.find("[")
        head = rest if i < 0 else rest[:i]
        if not _NAME_CHARS.fullmatch(head):
            raise NodelistError(f"{pattern[:80]!r}: {head[:40]!r} is not a host name")
        literals.append(head)
        if i < 0:
            break
        j = rest.index("]", i)
        group = _range(rest[i + 1 : j], pattern)
        groups.append(group)
        size *= sum(high - low + 1 for low, high, _ in group)
        rest = rest[j + 1 :]
    if not groups and not pattern:
        raise NodelistError("an empty host name in the list")
    return literals, groups, size


def _numbers(group: Tuple[Tuple[int, int, int], ...]) -> Iterator[str]:
    for low, high, width in group:
        for n in range(low, high + 1):
            yield str(n).zfill(width)


def _names(prefix: str, literals: List[str], groups: List[Tuple[Tuple[int, int, int], ...]]) -> Iterator[str]:
    if not groups:
        yield prefix + literals[0]
        return
    for number in _numbers(groups[0]):
        yield from _names(prefix + literals[0] + number, literals[1:], groups[1:])


def iter_hosts(text: str) -> Iterator[str]:
    """The host names of ``text`` in order, lazily (a range of a billion costs nothing until read)."""
    text = text.strip()
    if not text:
        raise NodelistError("the host list is empty")
    for pattern in _split_top(text):
        literals, groups, _ = _pattern(pattern.strip())
        yield from _names("", literals, groups)


def expand(text: str, limit: int = MAX_HOSTS) -> Tuple[str, ...]:
    """Every host of ``text``; NodelistError past ``limit`` hosts."""
    if not text.strip():
        raise NodelistError("the host list is empty")
    total = 0
    for pattern in _split_top(text.strip()):
        total += _pattern(pattern.strip())[2]
        if total > limit:
            raise NodelistError(f"the host list names more than {limit} hosts")
    return tuple(iter_hosts(text))


def first_host(text: str) -> str:
    """The first host of ``text``: where Slurm starts task 0 under the default block distribution."""
    return next(iter_hosts(text))


__all__ = ["MAX_HOSTS", "NodelistError", "expand", "first_host", "iter_hosts"]

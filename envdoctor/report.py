"""Reading a saved report (``check --json``, a snapshot) back into Facts and Findings.

The document is read by ``envdoctor.documents.read_document`` (bounded, one line per failure,
older versions migrated), decoded with ``facts.serde.from_data``, and then its values are checked
as a probe would have checked them: a report is input from outside, so ``driver_version:
"banana"``, a compute capability ``"x.y"`` or a 5,000-digit version stop here with one line
instead of deep in the advisor::

    facts, findings, doc = parse_report(text, "before.json")
    parse_report('{"schema": "envdoctor.report/1", "facts": {"driver": {"driver_version": "banana"}}}', "r.json")
    # ReportError: r.json: facts.driver.driver_version is 'banana', not a driver version like 580.159.04
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

from envdoctor.documents import DocumentError, read_document
from envdoctor.facts import Facts
from envdoctor.facts.serde import DataError, from_data
from envdoctor.findings import Finding


class ReportError(DocumentError):
    """A saved report cannot be used (not JSON, not a report, a schema this envdoctor does not
    know, or values no probe would have written); the message is one line."""


#: Longest version-like text a probe writes ("2.6.0a0+ecf3bae40a.nv25.01" is 26); longer is not one.
MAX_VERSION = 64
#: Fields holding a version (by name, anywhere in the facts; and every ``*_version``): at most
#: MAX_VERSION characters.
_VERSION_FIELDS = frozenset(
    {"version", "cuda", "driver_cuda", "virtual_cuda", "release", "glibc", "pip", "torchvision", "torchaudio", "python"}
)

_DRIVER_RE = re.compile(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}")
_CC_RE = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}")
_GLIBC_RE = re.compile(r"[0-9]{1,2}\.[0-9]{1,3}")
#: a wheel platform tag; a manylinux/musllinux one with a glibc of at most 2 + 3 digits (2_39)
_TAG_RE = re.compile(
    r"(?:(?:many|musl)linux_[0-9]{1,2}_[0-9]{1,3}_[a-z0-9_]{1,32}"
    r"|(?!manylinux_|musllinux_)[a-z0-9_]{1,64})"
)

_DRIVER = (_DRIVER_RE, "a driver version like 580.159.04")
_CC = (_CC_RE, "a compute capability like 9.0")
_GLIBC = (_GLIBC_RE, "a glibc version like 2.39")
_TAG = (_TAG_RE, "a platform tag like manylinux_2_39_x86_64")

#: Values the code converts and relies on, each with the form a probe gives it ("a.b[]" walks a list).
CHECKED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("driver.kernel_module_version",) + _DRIVER,
    ("driver.userspace_version",) + _DRIVER,
    ("driver.driver_version",) + _DRIVER,
    ("driver.gpus[].compute_capability",) + _CC,
    ("pci.devices[].compute_capability",) + _CC,
    ("torch.devices[].capability",) + _CC,
    ("system.glibc",) + _GLIBC,
    ("python.glibc",) + _GLIBC,
    ("python.platform_tags[]",) + _TAG,
)


def _walk(value: Any, parts: list[str], where: str) -> Iterator[tuple[str, Any]]:
    if not parts:
        yield where, value
        return
    head, rest = parts[0], parts[1:]
    if head.endswith("[]"):
        items = getattr(value, head[:-2]) if head != "[]" else value
        for i, item in enumerate(items):
            yield from _walk(item, rest, f"{where}.{head[:-2]}[{i}]")
    else:
        yield from _walk(getattr(value, head), rest, f"{where}.{head}")


def _strings(value: Any, where: str) -> Iterator[tuple[str, str, Any]]:
    """(path, field name, value) of every field of every dataclass in ``value``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            yield f"{where}.{f.name}", f.name, item
            yield from _strings(item, f"{where}.{f.name}")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def check_values(facts: Facts) -> None:
    """ReportError (without the source) for the first value no probe would have written."""
    for path, name, value in _strings(facts, "facts"):
        versionish = name in _VERSION_FIELDS or name.endswith("_version")
        if versionish and isinstance(value, str) and len(value) > MAX_VERSION:
            raise ReportError(f"{path} is {len(value)} characters long, not a version")
    for path, pattern, what in CHECKED:
        for where, value in _walk(facts, path.split("."), "facts"):
            if value in (None, ""):
                continue
            if not isinstance(value, str) or not pattern.fullmatch(value):
                raise ReportError(f"{where} is {str(value)[:40]!r}, not {what}")


def parse_report(text: str, source: str = "report") -> tuple[Facts, tuple[Finding, ...], dict[str, Any]]:
    """(facts, findings, the whole document, migrated) from a report or snapshot; ReportError when unusable."""
    try:
        loaded = read_document(text, "report", source)
    except ReportError:
        raise
    except DocumentError as exc:
        raise ReportError(str(exc)) from None
    facts, findings = decode(loaded.data, source)
    return facts, findings, loaded.data


def decode(doc: dict[str, Any], source: str) -> tuple[Facts, tuple[Finding, ...]]:
    """Facts and findings of a report document read by ``read_document``; values checked."""
    try:
        facts = from_data(Facts, doc.get("facts", {}), "facts")
        items = doc.get("findings", [])
        if not isinstance(items, list):
            raise DataError(f"findings: expected a list, got {type(items).__name__}")
        findings = tuple(from_data(Finding, f, f"findings[{i}]") for i, f in enumerate(items))
    except (DataError, ValueError) as exc:
        raise ReportError(f"{source} does not have the shape of a report: {exc}") from None
    try:
        check_values(facts)
    except ReportError as exc:
        raise ReportError(f"{source} holds a value no probe writes: {exc}") from None
    return facts, findings


__all__ = ["MAX_VERSION", "ReportError", "check_values", "decode", "parse_report"]

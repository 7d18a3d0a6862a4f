"""The one check runner: rules x (facts, tables) -> findings, for check's rules and the plugins'.

A rule is ``rule(subject, table, **extra)``: ``subject`` is what it checks (check's ``Facts``, a
plugin's result), ``table`` the main compatibility table or None. A rule that needs another data
table says so with :func:`needs`; the runner loads each such table once per run and hands it in,
so a broken ``data/links.toml`` is ONE finding ED901 naming the file (the rules that need it stay
quiet), not one crash per rule. A rule that raises is one finding ED900 naming the rule. Codes a
user suppressed are split off in :func:`split` only.

>>> @needs("links")
... def rule(facts, table, links): ...
>>> rule.tables
('links',)
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from envdoctor.findings import Finding, sort_findings

log = logging.getLogger(__name__)

#: The data tables a rule may ask for by name: "module:function" returning the loaded table. The
#: loaders cache what they parse, so a second run in one process costs a dictionary look-up.
LOADERS: Dict[str, str] = {"links": "envdoctor.links.table:load_links"}


def needs(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a rule as needing the named tables of :data:`LOADERS` (passed as keyword arguments)."""
    unknown = [n for n in names if n not in LOADERS]
    if unknown:
        raise ValueError(f"no table loader for {', '.join(unknown)}")

    def mark(rule: Callable[..., Any]) -> Callable[..., Any]:
        rule.tables = tuple(names)  # type: ignore[attr-defined]
        return rule

    return mark


def rule_name(rule: Callable[..., Any]) -> str:
    """``envdoctor.links.rules_topo.nvlink_down``: where to look when it crashed."""
    module = getattr(rule, "__module__", None) or "?"
    return f"{module}.{getattr(rule, '__qualname__', getattr(rule, '__name__', repr(rule)))}"


def table_broken(error: str, what: str = "the table (driver floors, GPU architectures)") -> Finding:
    """ED901 for a data table that could not be loaded; ``error`` is the loader's one line."""
    from envdoctor.codes import CODES

    return Finding(
        "ED901",
        "warning",
        CODES["ED901"].title,
        evidence=(error,),
        fix=("pip install --force-reinstall envdoctor   # restores the bundled data/ files",),
        area="envdoctor",
        explanation=f"Checks that need {what} were skipped.",
    )


def crashed(rule: Callable[..., Any], exc: BaseException) -> Finding:
    """ED900: ``rule`` raised ``exc``; a bug in envdoctor, not in the machine."""
    from envdoctor.codes import CODES

    return Finding(
        "ED900",
        "warning",
        f"{CODES['ED900'].title}: {rule_name(rule)}: {type(exc).__name__}: {exc}",
        evidence=("this is a bug in envdoctor, not a problem of the machine",),
        fix=("envdoctor check --debug   # shows the traceback; please report it",),
        area="envdoctor",
    )


def _load(name: str) -> Any:
    module, _, func = LOADERS[name].partition(":")
    import importlib

    return getattr(importlib.import_module(module), func)()


def run(
    rules: Iterable[Callable[..., Any]], subject: Any, table: Any = None, tables: Optional[Mapping[str, Any]] = None
) -> List[Finding]:
    """Every finding of ``rules`` on ``subject``, unsorted and unsuppressed (see :func:`split`).

    ``tables``: tables already loaded by the caller (name -> table), used instead of loading."""
    loaded: Dict[str, Any] = dict(tables or {})
    broken: Dict[str, str] = {}
    found: List[Finding] = []
    for rule in rules:
        wanted: Tuple[str, ...] = getattr(rule, "tables", ())
        for name in wanted:
            if name in loaded or name in broken:
                continue
            try:
                loaded[name] = _load(name)
            except Exception as exc:  # noqa: BLE001 - a broken data file is a finding, once
                from envdoctor.table.schema import TableError

                broken[name] = str(exc) if isinstance(exc, TableError) else f"{type(exc).__name__}: {exc}"
                found.append(table_broken(broken[name], f"data/{name}.toml"))
        if any(name in broken for name in wanted):
            continue
        found.extend(call(rule, subject, table, **{name: loaded[name] for name in wanted}))
    return found


def call(rule: Callable[..., Iterable[Any]], *args: Any, **kwargs: Any) -> List[Any]:
    """What ``rule(*args, **kwargs)`` yields; when it raises, what it yielded so far and one ED900
    naming it (a bug in one check must not hide the others). For checks of another shape than
    :func:`run`'s (verify's ``check(pair)``)."""
    out: List[Any] = []
    try:
        for item in rule(*args, **kwargs):
            out.append(item)
    except Exception as exc:  # noqa: BLE001 - reported as ED900, the traceback with --debug
        log.debug("rule %s failed", rule_name(rule), exc_info=True)
        out.append(crashed(rule, exc))
    return out


def suppressed_codes(values: Iterable[str]) -> Tuple[str, ...]:
    """``--suppress`` values as codes: upper case, a comma list is several, repeats dropped.
    ``("ed305, ED102", "ED305")`` -> ``("ED305", "ED102")``."""
    given = [v.strip().upper() for value in values for v in value.split(",") if v.strip()]
    return tuple(dict.fromkeys(given))


def bad_codes(values: Iterable[str]) -> Optional[str]:
    """Why ``--suppress`` ``values`` cannot be suppressed (naming them as given), or None when each
    is a code of the registry."""
    given = [v.strip() for value in values for v in value.split(",") if v.strip()]
    bad = [v for v in given if not re.fullmatch(r"ED\d{3}", v.upper())]
    if bad:
        return f"{', '.join(bad[:5])}: finding codes look like ED305"
    from envdoctor.codes import lookup

    unknown = [c for c in suppressed_codes(given) if lookup(c) is None]
    if unknown:
        return f"{', '.join(unknown[:5])}: no such finding code (envdoctor explain lists them)"
    return None


@dataclass(frozen=True)
class Suppressed:
    """What ``--suppress CODE`` hid, as documents carry it (``"suppressed"``: diag, fleet; check's
    report writes the same two keys): the codes asked for and the findings they hid."""

    codes: Tuple[str, ...] = ()
    findings: Tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Checked:
    """The findings shown and the findings ``--suppress`` hid, each sorted (errors first)."""

    shown: Tuple[Finding, ...]
    hidden: Tuple[Finding, ...] = ()


def split(found: Iterable[Finding], suppress: Iterable[str] = ()) -> Checked:
    """The one place ``--suppress`` applies."""
    found = list(found)
    shown = kept(found, suppress)
    return Checked(sort_findings(shown), sort_findings(f for f in found if f not in shown))


def hidden(codes: Iterable[str], found: Iterable[Finding]) -> Optional[Suppressed]:
    """The :class:`Suppressed` of a run with ``--suppress`` ``codes`` that hid ``found``; None
    without ``--suppress`` (the document then says nothing was asked)."""
    asked = suppressed_codes(codes)
    return Suppressed(asked, tuple(sort_findings(found))) if asked else None


def hidden_block(
    codes: Iterable[str], found: Iterable[Any], row: Optional[Callable[[Any], Dict[str, Any]]] = None
) -> Optional[Dict[str, Any]]:
    """The ``"suppressed"`` key of a document built as a dict (check's report, fleet's), the same two
    keys as :func:`hidden`'s :class:`Suppressed` in diag's: ``{"codes": [...], "findings": [...]}``
    -- the codes asked for and one row per finding they hid (``row``: the finding's ``to_data``;
    fleet's adds the node); None without ``--suppress``."""
    asked = suppressed_codes(codes)
    if not asked:
        return None
    if row is None:
        from envdoctor.facts.serde import to_data

        row = to_data
    return {"codes": list(asked), "findings": [row(item) for item in found]}


def kept(
    items: Iterable[Any], suppress: Iterable[str] = (), finding: Callable[[Any], Finding] = lambda item: item
) -> List[Any]:
    """``items`` (findings, or what holds one: ``finding(item)``) without the suppressed codes, in order."""
    hide = set(suppressed_codes(suppress))
    return [item for item in items if finding(item).code not in hide]


def split_suppressed(
    findings: Iterable[Finding], codes: Iterable[str]
) -> Tuple[Tuple[Finding, ...], Tuple[Finding, ...]]:
    """:func:`split` as a pair: (the findings shown, the findings ``--suppress CODE`` hides)."""
    done = split(findings, codes)
    return done.shown, done.hidden


def run_rules(rules: Iterable[Callable[..., Iterable[Finding]]], *args: Any) -> List[Finding]:
    """Each rule called with ``args`` through :func:`call` (rules of another shape than :func:`run`'s)."""
    found: List[Finding] = []
    for rule in rules:
        found.extend(call(rule, *args))
    return found

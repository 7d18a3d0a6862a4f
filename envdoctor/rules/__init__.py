"""Pure checks: Facts x Table -> Findings. Rules never read the machine.

Each module below exposes ``RULES``, a tuple of functions ``rule(facts, table) -> Iterable[Finding]``;
``table`` is None when the compatibility table could not be loaded (finding ED901 says so), and a
rule that needs it then stays quiet. Codes by area: ED1xx driver, GPU, system and container; ED2xx
torch; ED3xx CUDA toolkits; ED4xx conda; ED5xx docker and the NVIDIA Container Toolkit; ED9xx
envdoctor itself.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Iterable
from typing import Callable, Optional, Sequence

from envdoctor import checks
from envdoctor.checks import Checked
from envdoctor.facts import Facts
from envdoctor.facts.system import SystemFacts
from envdoctor.findings import Finding
from envdoctor.table import Table

#: One module per area, named as the area: the checks of a skippable area (torch, toolkits,
#: conda, docker: ``--skip``) are left out when that area was skipped. A plugin's rules that
#: check runs too are named by their module (area "links": ``envdoctor.links.rules_topo``).
MODULES = ("driver", "torch", "toolkits", "conda", "docker", "links", "gpu_state", "fabric", "stack")
PLUGIN_MODULES = {"links": "envdoctor.links.rules_topo", "stack": "envdoctor.stack.rules"}
#: A plugin area left out with another one: the libraries above torch with torch.
SKIPPED_WITH = {"stack": "torch"}

Rule = Callable[..., Iterable[Finding]]


def _broken_module(name: str, exc: Exception) -> Rule:
    def broken(facts: Facts, table: Optional[Table]) -> Iterable[Finding]:
        raise RuntimeError(f"the {name} checks could not be loaded: {type(exc).__name__}: {exc}")

    broken.__name__ = f"{name}_checks"
    return broken


def all_rules(skipped: Iterable[str] = ()) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    skip = set(skipped)
    for name in MODULES:
        if name in skip or SKIPPED_WITH.get(name) in skip:
            continue
        try:
            module = importlib.import_module(PLUGIN_MODULES.get(name, f"envdoctor.rules.{name}"))
        except Exception as exc:  # a broken install: report it as a finding, keep the other checks
            rules.append(_broken_module(name, exc))
            continue
        rules.extend(module.RULES)
    return tuple(rules)


#: ``sudo`` where a command starts: at the line's start or after a pipe or a shell list operator.
_SUDO = re.compile(r"(^|\|\s*|&&\s*|\|\|\s*|;\s*)sudo\s+")


def as_user(finding: Finding, system: SystemFacts) -> Finding:
    """``finding`` with ``sudo`` dropped from its commands when envdoctor runs as root: root needs
    none, and a container's root often has no sudo at all ("sudo: command not found"). Comment
    lines keep theirs: "# on the host: sudo reboot" is for the host's user."""
    if system.user != "root" or not finding.fix:
        return finding
    fix = tuple(line if line.lstrip().startswith("#") else _strip_sudo(line) for line in finding.fix)
    return finding if fix == finding.fix else dataclasses.replace(finding, fix=fix)


def _strip_sudo(line: str) -> str:
    command, sep, comment = line.partition("   #")  # the fix's own note stays as written
    return _SUDO.sub(lambda m: m.group(1), command) + sep + comment


def run(
    facts: Facts,
    table: Optional[Table],
    suppress: Iterable[str] = (),
    table_error: Optional[str] = None,
    more: Optional[Callable[[Sequence[Finding]], Iterable[Finding]]] = None,
) -> Checked:
    """check's findings through the one runner (:mod:`envdoctor.checks`): ``table_error`` (the main
    table could not be loaded) is ED901, ``more(found)`` adds findings that depend on the others
    (probe failures nothing else covers), then ``suppress`` splits off the codes a user hid."""
    found = checks.run(all_rules(facts.skipped), facts, table)
    if table_error:
        found.append(checks.table_broken(table_error))
    if more is not None:
        found.extend(more(found))
    return checks.split((as_user(f, facts.system) for f in found), suppress)


def evaluate(facts: Facts, table: Optional[Table], suppress: Iterable[str] = ()) -> tuple[Finding, ...]:
    """Every finding for ``facts``, errors first. A rule that raises becomes finding ED900."""
    return run(facts, table, suppress).shown

"""The install advisor: which route, torch and wheel, as exact commands. Pure; never runs them.

>>> from envdoctor.advise import choose_variant, recommend
>>> choose_variant(load_table(), None, "570.133.20", ["12.0"], "3.12", "2.39", "x86_64").label
'torch 2.11.0+cu128'

Modules: ``choose`` (torch release + wheel variant), ``routes`` (system / conda / docker),
``plan`` (the commands per route), ``whatif`` (the machine: probed, from a report, or overridden).
"""

from envdoctor.advise.choose import (Choice, IndexAnswer, Rejected, SpecError, WayOut, choose_variant,
                                     parse_torch_spec, recommended_branch)
from envdoctor.advise.plan import Plan, Step, recommend
from envdoctor.advise.routes import RouteDecision, choose_route
from envdoctor.advise.whatif import Machine, Overrides, WhatIfError, apply_overrides, machine_from_facts

__all__ = [
    "Choice", "IndexAnswer", "Machine", "Overrides", "Plan", "Rejected", "RouteDecision", "SpecError",
    "Step", "WayOut", "WhatIfError", "apply_overrides", "choose_route", "choose_variant",
    "machine_from_facts", "parse_torch_spec", "recommend", "recommended_branch",
]

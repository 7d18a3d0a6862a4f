"""A plan for people (text), for scripts (``envdoctor.plan/1`` JSON) and as a shell script to review.

The text is declared unstable; the JSON keys below are the contract:
``schema, route, status, torch, torchvision, torchaudio, variant, cuda, index_url, image, python,
commands, steps, warnings, reasons, rejected [{route, reason}], compatibility, sources,
index_check, ways_out [{kind, text, commands, ...}], alternatives, machine``, and (added later, so
older readers may ignore them) ``already_installed``, ``index_env``, ``variant_asked`` (the wheel
variant ``--torch 2.7.1+cu118`` names), ``variant_changed`` (why another one was chosen),
``current`` (the target Python's torch now: ``state`` works / expected / broken / unfit / unknown,
with its ``evidence``), ``changes`` [{package, now, then, note}] and ``upgrade_optional`` (the
current build works, so the steps are an upgrade, not a fix).
"""

from __future__ import annotations

from typing import Annotated, Any, List, Literal, Optional, TypedDict

from envdoctor import __version__
from envdoctor.advise.choice import Rejected
from envdoctor.advise.current import Change
from envdoctor.advise.machine import Machine
from envdoctor.advise.plan import SCHEMA, Plan, Step
from envdoctor.doctypes import Json
from envdoctor.style import Style

_INDEX = {"live": "index: checked live", "offline-table": "index: envdoctor's table, no live check"}
_HOW = {"direct": "the driver runs it directly", "minor-version": "by minor-version compatibility"}


def _index_text(state: str) -> str:
    if state.startswith("failed"):
        return f"index: live check {state}, so envdoctor's table decided"
    return _INDEX.get(state, state)


def headline(plan: Plan) -> str:
    """``"system route: torch 2.13.0+cu130 (CUDA 13.0, driver runs it directly)"``."""
    c = plan.choice
    if plan.status == "amd":
        return f"{plan.route} route: AMD GPU, outside what envdoctor advises"
    if plan.route == "docker" and plan.image:
        mode = " in forward-compatibility mode" if plan.image.forward_compat else ""
        return f"docker route: {plan.image.image} (torch {plan.image.torch}, CUDA {plan.image.cuda}){mode}"
    if not plan.ok:
        return f"{plan.route} route: nothing fits as the machine is" + ("; see the ways out" if plan.ways_out else "")
    cur = plan.current
    if plan.installed and cur is not None and cur.state == "broken":
        return (
            f"{plan.route} route: {c.label}, the build to use, is installed in {plan.python} but does not work "
            "here (see `now:`)"
        )
    if plan.installed:
        return f"{plan.route} route: {c.label} is already installed in {plan.python}: nothing to install"
    if plan.optional and cur is not None:
        now = "already works here" if cur.state == "works" else "is installed and should work here"
        return f"{plan.route} route: {cur.label} {now}; upgrading to {c.label} is optional"
    if plan.status == "cpu":
        return f"{plan.route} route: {c.label} (no NVIDIA GPU: CPU wheels)"
    if plan.status == "macos":
        return f"{plan.route} route: {c.label} from PyPI (CPU and MPS)"
    if plan.route == "conda":
        return f"conda route: torch {c.torch} ({plan.conda})"
    if c.driver_needed:
        return f"{plan.route} route: {c.label} (CUDA {c.cuda}, once driver branch {c.driver_needed} is installed)"
    return f"{plan.route} route: {c.label} (CUDA {c.cuda}, {_HOW.get(c.compatibility, c.compatibility)})"


def render_text(plan: Plan, color: bool = False) -> str:
    st = Style(color)
    out: list[str] = [st(f"envdoctor recommend: {headline(plan)}", "bold")]
    m = plan.machine
    if m is not None:
        if m.given:
            out.append(f"  planned for: {m.origin}; " + "; ".join(m.given))
        elif m.origin != "this machine":
            out.append(f"  planned for: {m.origin}")
    now = now_text(plan)
    if now:
        out.append(f"  now: {now}")
    out.append("")
    out.append(st(f"Why {plan.route}:", "bold"))
    out += [f"  - {r}" for r in plan.reasons]
    for r in plan.rejected:
        out.append(f"  Not {r.route}: {r.reason}")
    c = plan.choice
    if plan.route == "system" and c.torch and plan.status not in ("amd",):
        out.append("")
        out.append(
            st(
                f"Why {c.label}" + (f" ({_index_text(plan.index_check)})" if plan.route == "system" else "") + ":",
                "bold",
            )
        )
        out += [f"  - {r}" for r in c.reasons]
    if plan.changes:
        out.append("")
        out.append(st("The upgrade would change:" if plan.optional else "The install changes:", "bold"))
        out += [f"  - {_change(x)}" for x in plan.changes]
    if plan.steps:
        out.append("")
        out.append(
            st(
                "Commands for the optional upgrade, in order (printed, not run):"
                if plan.optional
                else "Commands, in order (printed, not run):",
                "bold",
            )
        )
        for i, step in enumerate(plan.steps, 1):
            out.append(f"  {i}. {step.title}")
            for cmd in step.commands:
                out.append(f"       {st(cmd, 'dim')}" if cmd.lstrip().startswith("#") else f"     $ {cmd}")
            if step.note:
                out.append(st(f"     ({step.note})", "dim"))
    for alt in plan.alternatives:
        out.append(f"  or, with uv: $ {alt}")
    if plan.warnings:
        out.append("")
        out.append(st("Warnings:", "warning"))
        out += [f"  {st('!', 'warning')} {w}" for w in plan.warnings]
    if plan.ways_out:
        out.append("")
        out.append(st("Ways out:" if not plan.ok else "Other roads:", "bold"))
        for w in plan.ways_out:
            out.append(f"  - {w.text}")
            out += [f"       {st(x, 'dim')}" if x.lstrip().startswith("#") else f"     $ {x}" for x in w.commands]
    turned = _turned_down(plan)
    if turned:
        out.append("")
        out.append(st("Turned down:", "bold"))
        out += [f"  - {r.what}: {r.reason}" for r in turned[:10]]
        if len(turned) > 10:
            out.append(f"  ... and {len(turned) - 10} more (--json lists them all)")
    if plan.sources:
        out.append("")
        out.append(st("Sources: " + "; ".join(dict.fromkeys(plan.sources)), "dim"))
    return "\n".join(out) + "\n"


def now_text(plan: Plan) -> str | None:
    """One line on the target Python's torch as it is: ``"torch 2.11.0+cu130 in /opt/venv/bin/python
    works (imported (report r.json): CUDA available, a tiny CUDA operation ran); nothing needs to change"``."""
    cur = plan.current
    if cur is None:
        return None
    where = f"{cur.label} in {cur.python}"
    inplace = plan.route == "system" and plan.python == cur.python
    if cur.state == "works":
        text = f"{where} works ({cur.evidence})"
    elif cur.state == "expected":
        text = f"{where} should work ({cur.evidence})"
    elif cur.state in ("broken", "unfit"):
        text = f"{where} does not work here ({cur.evidence})"
    else:
        text = f"{where} ({cur.evidence})"
    if plan.installed:
        if cur.state == "broken":
            return text + f"; `envdoctor check --python {cur.python}` says why and how to fix it"
        return text
    if cur.fine and (plan.optional or (inplace and not plan.changes)):
        return text + "; nothing needs to change"
    if not inplace and (plan.ok or plan.route == "docker"):
        where = "runs torch in a container" if plan.route == "docker" else f"installs into {plan.python}"
        return text + f"; this plan {where} and leaves it as it is"
    if cur.state in ("broken", "unfit") and inplace and plan.ok:
        return text + "; the plan replaces it"
    return text


def _change(x: Change) -> str:
    """``"torch 2.11.0+cu130 -> 2.13.0+cu130 (same variant, cu130 (CUDA 13.0))"``."""
    if x.then is None:
        return f"{x.package} {x.now} is {x.note}"
    now = x.now or "(none)"
    return f"{x.package} {now} -> {x.then}" + (f" ({x.note})" if x.note else "")


def _current(plan: Plan) -> CurrentTorch | None:
    cur = plan.current
    if cur is None:
        return None
    return {
        "python": cur.python,
        "torch": cur.torch,
        "variant": cur.variant,
        "torchvision": cur.torchvision,
        "torchaudio": cur.torchaudio,
        "state": cur.state,
        "evidence": cur.evidence,
        "text": now_text(plan),
    }


def _turned_down(plan: Plan) -> list[Rejected]:
    """The builds worth showing when nothing fits: only when the torch choice itself failed (not
    when the route did, as docker without a GPU), and without the doubtful builds that were passed
    over for a confirmed one and then looked at again (their real reason, if any, is listed too)."""
    c = plan.choice
    if plan.ok or c.status != "no-fit":
        return []
    rows = [r for r in c.rejected if "checked again only if nothing confirmed fits" not in r.reason]
    out: list[Rejected] = []
    python = [r for r in rows if r.reason.startswith("no wheels for Python ")]
    if len(python) > 2:  # one line for "this Python has no wheels" across the releases
        first, last = python[-1].what.split()[-1], python[0].what.split()[-1]
        reason = python[0].reason.split(" (it has")[0]
        out.append(Rejected(f"torch {first} to {last} ({len(python)} releases)", reason))
        rows = [r for r in rows if r not in python]
    return out + rows


Text = Optional[str]
Strings = List[str]
Route = Literal["system", "conda", "docker"]


class StepOf(TypedDict):
    title: str
    commands: Strings
    note: Text


class RejectedRoute(TypedDict):
    route: Route
    reason: str


class RejectedBuild(TypedDict):
    what: str
    reason: str


class WayOut(TypedDict):
    kind: str
    text: str
    commands: Strings
    torch: Text
    variant: Text
    branch: Text


class MachineGpuOf(TypedDict):
    name: Text
    cc: Text
    vendor: Text
    datacenter: Optional[bool]


class MachineOf(TypedDict):
    """The machine planned for: this one, a saved report (--from), or --gpu/--driver/... alone."""

    origin: str
    given: Strings
    os: Text
    arch: Text
    glibc: Text
    driver: Text
    python: Text
    gpus: List[MachineGpuOf]


class CurrentTorch(TypedDict):
    """The torch the target Python has now, and whether it works here."""

    python: str
    torch: str
    variant: Text
    torchvision: Text
    torchaudio: Text
    state: Literal["works", "expected", "broken", "unfit", "unknown"]
    evidence: str
    text: Text


class ChangeOf(TypedDict):
    package: str
    now: Text
    then: Annotated[Text, Json(description="null: left as it is")]
    note: str


class _PlanKeys(TypedDict):
    schema: str
    envdoctor_version: str
    route: Route
    status: Literal["ok", "cpu", "macos", "no-fit", "amd"]
    torch: Text
    variant: Text
    cuda: Text
    index_url: Text
    image: Text
    python: Text
    compatibility: Text
    commands: Strings
    steps: List[StepOf]
    alternatives: Strings
    reasons: Strings
    warnings: Strings
    rejected: List[RejectedRoute]
    rejected_builds: List[RejectedBuild]
    ways_out: List[WayOut]
    sources: Strings
    index_check: str
    machine: Optional[MachineOf]


class PlanDocument(_PlanKeys, total=False):
    """The install plan: the route, the torch build and where it comes from, the commands in order,
    and why. Nothing in it has been run. (Keys written since the first plans are not required.)"""

    torchvision: Text
    torchaudio: Text
    image_tag: Text
    forward_compat: Optional[bool]
    conda: Any
    driver_needed: Text
    choice_reasons: Strings
    already_installed: bool
    index_env: Text
    variant_asked: Annotated[Text, Json(description="the wheel variant --torch named (2.7.1+cu118: cu118)")]
    variant_changed: Annotated[
        Text,
        Json(
            description="why another variant than the one asked for was chosen; null when none was asked or it was used"
        ),
    ]
    current: Optional[CurrentTorch]
    changes: Annotated[List[ChangeOf], Json(description="what the steps change in the current target Python")]
    upgrade_optional: Annotated[bool, Json(description="the current build works: the steps are an upgrade")]


def _step(step: Step) -> StepOf:
    return {"title": step.title, "commands": list(step.commands), "note": step.note}


def plan_document(plan: Plan) -> PlanDocument:
    """The versioned JSON document (``"schema": "envdoctor.plan/1"``)."""
    c = plan.choice
    m = plan.machine
    image = plan.image
    return {
        "schema": SCHEMA,
        "envdoctor_version": __version__,
        "route": plan.route,
        "status": plan.status,
        "torch": plan.torch,
        "torchvision": c.torchvision if plan.route != "docker" else None,
        "torchaudio": c.torchaudio if plan.route != "docker" else None,
        "variant": plan.variant,
        "cuda": plan.cuda,
        "index_url": plan.index_url,
        "image": image.image if image else None,
        "image_tag": image.tag if image else None,
        "forward_compat": image.forward_compat if image else None,
        "conda": plan.conda,
        "python": plan.python,
        "compatibility": (image.compatibility if image else "none") if plan.route == "docker" else c.compatibility,
        "driver_needed": c.driver_needed,
        "commands": list(plan.commands),
        "steps": [_step(s) for s in plan.steps],
        "alternatives": list(plan.alternatives),
        "reasons": list(plan.reasons),
        "choice_reasons": list(c.reasons),
        "warnings": list(plan.warnings),
        "rejected": [{"route": r.route, "reason": r.reason} for r in plan.rejected],
        "rejected_builds": [{"what": r.what, "reason": r.reason} for r in c.rejected],
        "ways_out": [
            {
                "kind": w.kind,
                "text": w.text,
                "commands": list(w.commands),
                "torch": w.torch,
                "variant": w.variant,
                "branch": w.branch,
            }
            for w in plan.ways_out
        ],
        "sources": list(dict.fromkeys(plan.sources)),
        "index_check": plan.index_check,
        "machine": _machine(m),
        "already_installed": plan.installed,
        "index_env": plan.index_env,
        "variant_asked": c.variant_asked,
        "variant_changed": c.variant_changed,
        "current": _current(plan),
        "changes": [{"package": x.package, "now": x.now, "then": x.then, "note": x.note} for x in plan.changes],
        "upgrade_optional": plan.optional,
    }


def _machine(m: Machine | None) -> MachineOf | None:
    if m is None:
        return None
    return {
        "origin": m.origin,
        "given": list(m.given),
        "os": m.os_label if (m.os_id or m.facts.system.os_name) else None,
        "arch": m.arch,
        "glibc": m.glibc,
        "driver": m.driver,
        "python": m.python,
        "gpus": [{"name": g.name, "cc": g.cc, "vendor": g.vendor, "datacenter": g.datacenter} for g in m.gpus],
    }


def render_script(plan: Plan, source: str = "envdoctor recommend") -> str:
    """The commands as a shell script with ``set -e`` and comments, to review and then run.

    A step that ends in ``sudo reboot`` splits the script in two: the first run stops before the
    reboot; ``bash FILE --after-reboot`` runs the rest.
    """
    lines = [
        "#!/usr/bin/env bash",
        f"# {source}: {headline(plan)}",
        f"# written by envdoctor {__version__} for review; nothing here has been run.",
        "set -e",
        "",
    ]
    now = now_text(plan)
    if now:
        lines += [f"# now: {now}", ""]
    for w in plan.warnings:
        lines.append(f"# warning: {w}")
    if plan.warnings:
        lines.append("")
    if not plan.steps:
        lines.append("# no commands: nothing fits as the machine is")
        lines.append('echo "envdoctor: nothing fits as the machine is; see the ways out in this file" >&2')
        lines.append("exit 1")
        for way in plan.ways_out:
            lines.append(f"# way out: {way.text}")
            lines += [f"#   {x}" for x in way.commands]
        return "\n".join(lines) + "\n"
    split = next((i for i, s in enumerate(plan.steps) if "sudo reboot" in s.commands), None)
    body: list[str] = []
    for i, step in enumerate(plan.steps, 1):
        if split is not None and i - 1 == split:
            body.append(f"  # {i}. {step.title}")
            body += [f"  {c}" for c in step.commands if c != "sudo reboot"]
            body += ['  echo "Reboot now (sudo reboot), then run: bash $0 --after-reboot"', "  exit 0", "fi", ""]
            continue
        indent = "  " if split is not None and i - 1 < split else ""
        body.append(f"{indent}# {i}. {step.title}")
        if step.note:
            body.append(f"{indent}#    {step.note}")
        body += [f"{indent}{c}" for c in step.commands]
        if plan.index_env and any(c.startswith(f"export {plan.index_env}=") for c in step.commands):
            body.append(
                f'{indent}case "${plan.index_env}" in *"***"*) echo "set {plan.index_env} to your mirror URL '
                f'with its credentials (line above), then run this again" >&2; exit 1;; esac'
            )
        body.append("")
    if split is not None:
        lines.append('if [ "${1:-}" != "--after-reboot" ]; then')
    lines += body
    return "\n".join(lines).rstrip("\n") + "\n"

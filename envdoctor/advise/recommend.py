"""``recommend``: the route (chosen unless given), the torch choice for it, and the route's commands.

Printed, never run. Every plan that installs something ends with the verification step
(``envdoctor check``, ``envdoctor bench``). For a what-if machine with driver 580.95.05, an H100,
CPython 3.12 and Ubuntu 24.04, the bundled table gives the system route and the command
``~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 --index-url
https://download.pytorch.org/whl/cu130``.
"""

from __future__ import annotations

from dataclasses import replace

from envdoctor.advise.choice import Choice
from envdoctor.advise.choose import choose_variant
from envdoctor.advise.conda_route import conda_plan
from envdoctor.advise.docker_route import docker_plan
from envdoctor.advise.machine import Machine
from envdoctor.advise.macos_amd import choose_amd, choose_macos
from envdoctor.advise.plan import Plan, Step
from envdoctor.advise.request import Availability, parse_torch_spec
from envdoctor.advise.routes import Route, RouteDecision, choose_route, distro_row
from envdoctor.advise.steps import NOTHING_FITS
from envdoctor.advise.system_route import system_plan
from envdoctor.parse import major_minor
from envdoctor.table import Table

DEFAULT_INDEX = "https://download.pytorch.org/whl"


def recommend(m: Machine, table: Table, route: Route | None = None, torch_spec: str | None = None,
              with_nvcc: bool = False, available: Availability | None = None,
              index_base: str | None = None, index_env: str | None = None,
              index_export: str | None = None) -> Plan:
    """The route (chosen unless given), the torch choice, and the commands for it.

    ``index_env``: the commands read the index base from this environment variable
    (``--index-url "$ENVDOCTOR_INDEX_URL/cu130"``) instead of spelling it out: the base holds
    credentials, which envdoctor never prints (a masked URL would not run). ``index_export``: the
    base came from ``--index-url``, not from that variable, so the plan first sets the variable;
    this is the masked URL to show in that line, with a comment to put the real one in.
    """
    spec = parse_torch_spec(torch_spec)
    decision = choose_route(m, table, route, with_nvcc)
    real_base = (index_base or table.index_base or DEFAULT_INDEX).rstrip("/")
    base = f"${index_env}" if index_env else real_base
    choice = _choice(m, table, decision, torch_spec, with_nvcc, available)
    plan: Plan
    if decision.route == "system":
        plan = system_plan(m, table, choice, decision, with_nvcc, base)
    elif decision.route == "conda":
        plan = conda_plan(m, table, choice, decision, with_nvcc)
    else:
        plan = docker_plan(m, table, choice, decision, spec, with_nvcc)
    plan = replace(plan, warnings=tuple(dict.fromkeys(plan.warnings + _gpu_warnings(m, table))), machine=m)
    if index_env:
        plan = _with_index_env(plan, index_env, index_export, real_base)
    return _never_torch_none(plan)


def _choice(m: Machine, table: Table, decision: RouteDecision, torch_spec: str | None, with_nvcc: bool,
            available: Availability | None) -> Choice:
    """The torch choice for the route: the system route's for the target Python (asked live), the
    others' for any Python; with ``--with-nvcc`` on the system route, within the CUDA lines NVIDIA's
    repository has for the distribution."""
    spec = parse_torch_spec(torch_spec)
    if m.platform == "darwin":
        return choose_macos(table, spec, m.python)
    if m.amd and not m.nvidia:
        return choose_amd(table, [g.name or "AMD GPU" for g in m.amd])
    system = decision.route == "system"
    ccs = [g.cc for g in m.nvidia]
    python = m.python if system else None
    choice = choose_variant(table, spec, m.driver, ccs, python, m.glibc, m.arch,
                            available=available if system else None, os=m.driver_os)
    distro = distro_row(m, table) if (system and with_nvcc and m.nvidia and not m.facts.system.wsl) else None
    if distro is not None and choice.ok and choice.cuda:
        # Always chosen within the repository's CUDA lines, so that the ways out (a driver
        # upgrade, another Python, a newer glibc) stay within them too.
        matched = choose_variant(table, spec, m.driver, ccs, python, m.glibc, m.arch, available=available,
                                 cudas=distro.cuda_lines, os=m.driver_os)
        if matched.ok and major_minor(choice.cuda) not in distro.cuda_lines:
            return replace(matched, reasons=matched.reasons + (
                f"--with-nvcc: CUDA {major_minor(matched.cuda)} is the newest line that both a torch wheel and "
                f"NVIDIA's {distro.repo_dir} repository have (torch's extensions need nvcc of the same CUDA)",))
        if matched.ok:
            return matched
    return choice


def _gpu_warnings(m: Machine, table: Table) -> tuple[str, ...]:
    """What the plan cannot know about the GPUs: AMD ones left out, unknown or inferred compute capabilities."""
    extra = []
    if m.amd and m.nvidia:
        extra.append("AMD GPUs were left out: envdoctor plans for the NVIDIA GPUs only")
    unknown_gpu = [g.name or g.source for g in m.nvidia if not g.cc]
    if unknown_gpu:
        extra.append(f"compute capability unknown for {', '.join(unknown_gpu)}: kernels not checked")
    for g in m.nvidia:
        if g.inferred and g.cc:
            arch = table.architecture(g.cc)
            extra.append(f"{g.name} is not in envdoctor's table: compute capability {g.cc}"
                         f"{' (' + arch.name + ')' if arch else ''} is inferred from its name ({g.inferred} series); "
                         f"give --gpu with the real compute capability if that is wrong")
    return tuple(extra)


def _with_index_env(plan: Plan, name: str, export: str | None, real_base: str) -> Plan:
    """Commands that take the index base from ``$name``; the JSON ``index_url`` keeps the real URL
    (masked on output like every URL with credentials). When the base came from ``--index-url``,
    the steps (and each way out) that use the variable start by setting it."""
    ref = f"${name}"
    uses = any(ref in c for c in plan.commands) or any(ref in c for w in plan.ways_out for c in w.commands)
    if not uses:
        return plan
    line = f"export {name}='{export}'  # set it to your mirror URL with its credentials" if export else None
    steps = plan.steps
    at = next((i for i, st in enumerate(steps) if any(ref in c for c in st.commands)), None)
    if line and at is not None:      # right before its first use: after a reboot, in a script's second part
        steps = steps[:at] + (Step(f"Point {name} at your wheel mirror (envdoctor does not print its "
                                   "credentials)", (line,)),) + steps[at:]
    ways = tuple(replace(w, commands=_export_before(w.commands, ref, line)) if line else w for w in plan.ways_out)
    index_url = plan.index_url
    if index_url and index_url.startswith(f'"{ref}'):
        index_url = real_base + index_url[len(ref) + 1:].rstrip('"')
    return replace(plan, steps=steps, ways_out=ways, index_url=index_url, index_env=name)


def _export_before(cmds: tuple[str, ...], ref: str, line: str) -> tuple[str, ...]:
    """``line`` right before the first command that reads ``ref`` (after any reboot)."""
    at = next((i for i, c in enumerate(cmds) if ref in c), None)
    return cmds if at is None else cmds[:at] + (line,) + cmds[at:]


def _never_torch_none(plan: Plan) -> Plan:
    """A plan that would install "torch None" is no plan: nothing fits (never print such a step)."""
    if plan.ok and plan.route != "docker" and not plan.torch:
        return replace(plan, status="no-fit", steps=(), alternatives=(), warnings=(NOTHING_FITS,) + plan.warnings)
    return plan

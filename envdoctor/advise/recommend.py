"""``recommend``: the route (chosen unless given), the torch choice for it, and the route's commands.

Printed, never run. Every plan that installs something ends with the verification step
(``envdoctor check``, ``envdoctor bench``). For a what-if machine with driver 580.95.05, an H100,
CPython 3.12 and Ubuntu 24.04, the bundled table gives the system route and the command
``~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 --index-url
https://download.pytorch.org/whl/cu130``.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from envdoctor.advise.choice import Choice
from envdoctor.advise.choose import choose_variant
from envdoctor.advise.conda_route import conda_plan
from envdoctor.advise.current import changes, current_build
from envdoctor.advise.docker_route import docker_plan
from envdoctor.advise.machine import Machine
from envdoctor.advise.macos_amd import choose_amd, choose_macos
from envdoctor.advise.plan import Plan, Step
from envdoctor.advise.request import Availability, parse_torch_spec, spec_variant
from envdoctor.advise.routes import Route, RouteDecision, choose_route, distro_row
from envdoctor.advise.steps import NOTHING_FITS
from envdoctor.advise.system_route import system_plan
from envdoctor.parse import major, major_minor, version_key
from envdoctor.table import Table

DEFAULT_INDEX = "https://download.pytorch.org/whl"


def recommend(
    m: Machine,
    table: Table,
    route: Route | None = None,
    torch_spec: str | None = None,
    with_nvcc: bool = False,
    available: Availability | None = None,
    index_base: str | None = None,
    index_env: str | None = None,
    index_export: str | None = None,
) -> Plan:
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
    extra = _gpu_warnings(m, table) + _os_warnings(m, table) + _driver_warnings(m, table)
    plan = replace(plan, warnings=tuple(dict.fromkeys(plan.warnings + extra)), machine=m)
    asked = spec_variant(torch_spec)
    if asked and not (plan.route == "system" and choice.variant_asked):
        plan = replace(plan, warnings=plan.warnings + (_variant_not_used(m, plan.route, torch_spec, asked),))
    if index_env:
        plan = _with_index_env(plan, index_env, index_export, real_base)
    return _with_current(_never_torch_none(plan), m, table)


def _with_current(plan: Plan, m: Machine, table: Table) -> Plan:
    """The plan with the target Python's torch as it is now: what the steps change in it, and
    whether they are optional (that build works, or by the table should)."""
    cur = current_build(m, table)
    if cur is None:
        return plan
    if plan.installed or plan.route != "system" or plan.python != cur.python or not plan.ok or not plan.steps:
        return replace(plan, current=cur)
    diff = changes(cur, plan.choice, table)
    return replace(plan, current=cur, changes=diff, optional=cur.fine and bool(diff))


def _choice(
    m: Machine,
    table: Table,
    decision: RouteDecision,
    torch_spec: str | None,
    with_nvcc: bool,
    available: Availability | None,
) -> Choice:
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
    choice = choose_variant(
        table,
        torch_spec,
        m.driver,
        ccs,
        python,
        m.glibc,
        m.arch,
        available=available if system else None,
        os=m.driver_os,
    )
    distro = distro_row(m, table) if (system and with_nvcc and m.nvidia and not m.facts.system.wsl) else None
    if distro is not None and choice.ok and choice.cuda:
        # Always chosen within the repository's CUDA lines, so that the ways out (a driver
        # upgrade, another Python, a newer glibc) stay within them too.
        matched = choose_variant(
            table,
            torch_spec,
            m.driver,
            ccs,
            python,
            m.glibc,
            m.arch,
            available=available,
            cudas=distro.cuda_lines,
            os=m.driver_os,
        )
        if matched.ok and major_minor(choice.cuda) not in distro.cuda_lines:
            return replace(
                matched,
                reasons=matched.reasons
                + (
                    f"--with-nvcc: CUDA {major_minor(matched.cuda)} is the newest line that both a torch wheel and "
                    f"NVIDIA's {distro.repo_dir} repository have (torch's extensions need nvcc of the same CUDA)",
                ),
            )
        if matched.ok:
            return matched
    return choice


def _variant_not_used(m: Machine, route: Route, torch_spec: str | None, asked: str) -> str:
    """``--torch 2.7.1+cu118`` where no pip wheel variant is chosen: say the label is not used."""
    if m.platform == "darwin":
        why = "macOS has one torch wheel (PyPI's), without CUDA variants"
    elif m.amd and not m.nvidia:
        why = "envdoctor plans NVIDIA installs only (AMD: PyTorch's ROCm wheels)"
    elif route == "conda":
        why = "the conda route installs conda-forge's build, whose CUDA the plan chooses (cuda-version)"
    else:
        why = "the docker route runs an NGC image, which brings its own CUDA"
    return f"--torch {(torch_spec or '').strip()}: the +{asked} wheel variant is not used here: {why}"


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
            extra.append(
                f"{g.name} is not in envdoctor's table: compute capability {g.cc}"
                f"{' (' + arch.name + ')' if arch else ''} is inferred from its name ({g.inferred} series); "
                f"give --gpu with the real compute capability if that is wrong"
            )
    return tuple(extra)


def _os_warnings(m: Machine, table: Table) -> tuple[str, ...]:
    """A Linux distribution (or release) the table does not know: what the plan assumes for it.

    The table's distributions are the ones NVIDIA's CUDA repository serves, each with its glibc;
    for any other (``--os ubuntu:99.04``, ``--os arch:rolling``, a probed Arch Linux) the plan still
    installs pip wheels; the glibc check (its own warning) and NVIDIA's packages are what it lacks.
    """
    s = m.facts.system
    if m.platform == "darwin" or not m.os_id or s.wsl or distro_row(m, table) is not None:
        return ()
    what_if = any(g.endswith("(--os)") for g in m.given)
    label = f"--os {m.os_id}:{m.os_version}" if what_if else f"{m.os_label} (this machine's OS)"
    releases = sorted((d.version for d in table.distros if d.id == m.os_id), key=version_key)
    if releases:
        head = (
            f"{label}: envdoctor's table does not know this {m.os_id} release (it knows "
            f"{', '.join(releases)}), so NVIDIA's CUDA repository is taken not to serve it"
        )
    else:
        head = f"{label}: not a distribution in envdoctor's table; NVIDIA's CUDA repository has no packages for it"
    text = head + ": pip wheels still work (they carry their own CUDA runtime)"
    if m.nvidia and not m.driver and "driver" in m.known and m.os_id != "ubuntu":
        text += "; the NVIDIA driver comes from the distribution's own packages, which envdoctor does not spell out"
    return (text,)


def _driver_warnings(m: Machine, table: Table) -> tuple[str, ...]:
    """A driver newer than every branch and CUDA minimum in the table: what the plan assumes for it."""
    have = major(m.driver)
    known = [major(r.min_driver_linux) for r in table.cuda_releases] + [int(b.branch) for b in table.driver_branches]
    newest = max((k for k in known if k is not None), default=None)
    if have is None or newest is None or have <= newest:
        return ()
    cudas = [r.version for r in table.cuda_releases if r.kind in ("ga", "update")]
    top = max(cudas, key=Version) if cudas else None
    given = m.facts.driver.sources.get("driver_version") == "--driver"
    label = f"--driver {m.driver}" if given else f"driver {m.driver}"
    return (
        f"{label}: newer than any driver envdoctor's table knows (its newest branch is R{newest}); assumed "
        f"to run every CUDA release the table lists{f' (up to {top})' if top else ''} directly, and every "
        f"GPU an R{newest} driver runs",
    )


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
    if line and at is not None:  # right before its first use: after a reboot, in a script's second part
        steps = (
            steps[:at]
            + (Step(f"Point {name} at your wheel mirror (envdoctor does not print its credentials)", (line,)),)
            + steps[at:]
        )
    ways = tuple(replace(w, commands=_export_before(w.commands, ref, line)) if line else w for w in plan.ways_out)
    index_url = plan.index_url
    if index_url and index_url.startswith(f'"{ref}'):
        index_url = real_base + index_url[len(ref) + 1 :].rstrip('"')
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

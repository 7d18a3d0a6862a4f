"""Steps every route shares: the driver install, the verification, the ways out with their commands.

The driver install comes from :func:`envdoctor.commands.driver_install`, so each command is written
once for rules and advisor alike. ``verify_step("python3")`` is ``Step("Verify", ("envdoctor check
--python python3", "envdoctor bench --python python3"))``.
"""

from __future__ import annotations

from collections.abc import Callable

from envdoctor import commands, compat
from envdoctor.advise.choice import Choice
from envdoctor.advise.drivers import recommended_branch
from envdoctor.advise.machine import Machine
from envdoctor.advise.plan import Step, Way
from envdoctor.table import Table

#: ``pip_for(torch, variant)``: the commands that install that torch build on the route (system).
PipFor = Callable[[str, "str | None"], tuple[str, ...]]

NOTHING_FITS = "nothing fits: no torch wheel within the request runs on this machine as it is"
#: One line that shows the torch a route installed, its CUDA, and whether it sees a GPU.
CHECK_TORCH = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


def open_modules(m: Machine, table: Table) -> bool:
    """Turing and newer take the open kernel modules; Maxwell, Pascal and Volta need the proprietary ones."""
    return compat.open_modules(table, [g.cc for g in m.nvidia])


def driver_step(m: Machine, table: Table, choice: Choice) -> tuple[list[Step], list[str]]:
    """(install the driver first, warnings) when the machine has NVIDIA GPUs and no driver."""
    if not m.nvidia or m.driver or "driver" not in m.known:
        return [], []
    branch = choice.driver_needed or recommended_branch(table, [g.cc for g in m.nvidia])
    if m.facts.system.container:
        return [], [
            f"no NVIDIA driver visible inside this {m.facts.system.container} container: install driver "
            f"branch {branch} on the host and start the container with --gpus all"
        ]
    cmds = commands.driver_install(m.facts.system, branch, open_modules(m, table), table)
    flavor = "open kernel modules" if open_modules(m, table) else "proprietary kernel modules"
    return [Step(f"Install the NVIDIA driver, branch {branch} ({flavor}), then reboot", cmds)], []


def verify_step(python: str | None, cpu: bool = False) -> Step:
    """``cpu``: a plan of CPU wheels, whose bench measures the CPU (``bench --cpu``; without it bench
    stops where torch sees no GPU)."""
    opt = f" --python {python}" if python else ""
    return Step("Verify", (f"envdoctor check{opt}", f"envdoctor bench{opt}" + (" --cpu" if cpu else "")))


def ways(m: Machine, table: Table, choice: Choice, pip_for: PipFor | None) -> tuple[Way, ...]:
    """Ways out with commands: the driver install for an upgrade, the install line for another torch."""
    out = []
    for w in choice.ways_out:
        cmds: tuple[str, ...] = ()
        if w.kind in ("upgrade-driver", "install-driver") and w.branch:
            cmds = commands.driver_install(m.facts.system, w.branch, open_modules(m, table), table)
            if pip_for and w.torch:
                cmds += pip_for(w.torch, w.variant)
        elif w.kind in ("works-today", "direct", "confirmed-kernels", "torch-spec", "cpu") and pip_for and w.torch:
            cmds = pip_for(w.torch, w.variant)
        out.append(Way(w.kind, w.text, cmds, w.torch, w.variant, w.branch))
    return tuple(out)


def status_warnings(choice: Choice) -> list[str]:
    """The choice's warnings, after "nothing fits" when nothing does."""
    if choice.status == "no-fit":
        return [NOTHING_FITS] + list(choice.warnings)
    return list(choice.warnings)

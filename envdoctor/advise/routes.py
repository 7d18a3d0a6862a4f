"""Pick the install route (system, conda, docker) with reasons, and say why the others lost.

Pure: a :class:`~envdoctor.advise.whatif.Machine` and the table in, a :class:`RouteDecision` out.
The order, first match wins (docs/recommend.md explains it):

1. macOS or AMD-only machines: ``system`` (pip; the plan says what envdoctor does not cover).
2. ``--with-nvcc``: ``system`` where NVIDIA's CUDA repository serves the distribution, else
   ``conda`` (``cuda-nvcc`` in the env) where conda is installed.
3. The target Python is in an active conda environment (not ``base``): ``conda``.
4. The target Python is a virtual environment: ``system`` (pip straight into it).
5. Docker answers, the NVIDIA runtime (or CDI) is set up, an NVIDIA GPU and its driver are there,
   and envdoctor is not itself inside a container: ``docker``.
6. Otherwise ``system``: pip wheels carry their own CUDA runtime, no toolkit needed.

A route that cannot work says why (no conda installed; the docker daemon refuses this user; the
distribution is not served by NVIDIA's repository while nvcc or a driver from it is needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from envdoctor.advise.machine import Machine
from envdoctor.table import Distro, Table

Route = Literal["system", "conda", "docker"]
ROUTES: tuple[Route, ...] = ("system", "conda", "docker")

#: "ok", "setup" (works after a setup step the plan includes), "no" (cannot), "unknown" (not inspected)
State = Literal["ok", "setup", "no", "unknown"]


@dataclass(frozen=True)
class RouteState:
    """Can a route work here: "ok", "setup" (works after a setup step the plan includes),
    "no" (it cannot, see ``text``) or "unknown" (that area was not inspected)."""

    state: State
    text: str


@dataclass(frozen=True)
class RouteRejection:
    route: Route
    reason: str


@dataclass(frozen=True)
class RouteDecision:
    route: Route
    reasons: tuple[str, ...]
    rejected: tuple[RouteRejection, ...]
    states: tuple[tuple[Route, RouteState], ...] = ()

    def state(self, route: Route) -> RouteState | None:
        return dict(self.states).get(route)


def nvidia_runtime(m: Machine) -> bool:
    """Docker can hand NVIDIA GPUs to containers: an ``nvidia`` runtime or NVIDIA CDI devices."""
    d = m.facts.docker
    return (
        "nvidia" in d.runtimes
        or any(x.startswith("nvidia.com/") for x in d.cdi_devices)
        or any("nvidia" in s.rsplit("/", 1)[-1] for s in d.cdi_specs)
    )


def _unread(m: Machine) -> str:
    """Why an area is not known: a what-if plan reads nothing; a report may not hold that area."""
    return "not in the report" if m.origin.startswith("report ") else "what-if plan"


def docker_state(m: Machine) -> RouteState:
    if m.platform == "darwin":
        return RouteState("no", "macOS: Docker Desktop has no NVIDIA GPU access")
    if "docker" not in m.known:
        return RouteState("unknown", f"docker was not inspected ({_unread(m)})")
    d = m.facts.docker
    if m.facts.system.container:
        return RouteState(
            "no", f"envdoctor runs inside a {m.facts.system.container} container; run NGC images from the host"
        )
    if not d.client:
        why = f" ({d.error.message})" if d.error else ""
        return RouteState("no", f"docker is not installed{why}")
    if d.daemon == "permission_denied":
        return RouteState(
            "no",
            "the docker daemon refuses this user (permission denied on its socket); add the user to the docker group",
        )
    if d.daemon == "not_running":
        return RouteState("no", "the docker daemon is not running" + (f" ({d.daemon_error})" if d.daemon_error else ""))
    if d.daemon != "ok":
        return RouteState(
            "no",
            "the docker daemon does not answer"
            + (f" ({d.daemon_error or d.daemon})" if (d.daemon_error or d.daemon) else ""),
        )
    if not m.nvidia:
        return RouteState("no", "no NVIDIA GPU: NGC images are built for NVIDIA GPUs")
    version = f"docker {d.server_version or d.client_version or ''}".strip()
    if nvidia_runtime(m):
        how = "the NVIDIA runtime" if "nvidia" in d.runtimes else "NVIDIA CDI devices"
        return RouteState("ok", f"{version} works and has {how}")
    return RouteState(
        "setup",
        f"{version} works, but the NVIDIA Container Toolkit is not set up (the plan installs and configures it)",
    )


def conda_state(m: Machine) -> RouteState:
    if "conda" not in m.known:
        return RouteState("unknown", f"conda was not inspected ({_unread(m)})")
    c = m.facts.conda
    if not c.exe:
        return RouteState("no", "no conda, mamba or micromamba found (Miniforge would bring one)")
    flavor = c.flavor or "conda"
    if active_env(m):
        return RouteState(
            "ok",
            f"{flavor} {c.version or ''} with the environment {c.active_name or c.active_prefix} active".replace(
                "  ", " "
            ),
        )
    return RouteState("ok", f"{flavor} {c.version or ''} is installed".replace("  ", " "))


def active_env(m: Machine) -> bool:
    """A conda environment other than ``base`` is active, or the target Python lives in one."""
    c, p = m.facts.conda, m.facts.python
    active = bool(c.active_prefix) and (c.active_name or "").lower() != "base" and c.active_prefix != c.base_prefix
    return active or (p.conda_env and bool(p.prefix) and p.prefix != c.base_prefix)


def distro_row(m: Machine, table: Table) -> Distro | None:
    """The table's row for the machine's distribution (NVIDIA's CUDA repository serves it); None if not."""
    if not m.os_id or not m.os_version:
        return None
    return table.distro(m.os_id, m.os_version)


def system_state(m: Machine, table: Table, with_nvcc: bool) -> RouteState:
    if m.platform == "darwin":
        return RouteState("ok", "macOS: pip installs PyPI's torch wheel")
    served = distro_row(m, table) is not None
    os_label = m.os_label
    if "system" not in m.known and not m.os_id:
        return RouteState("ok", "pip wheels carry their own CUDA runtime (OS not known)")
    needs_driver = bool(m.nvidia) and not m.driver and m.os_id != "ubuntu" and not m.facts.system.wsl
    if not served and with_nvcc:
        return RouteState("no", f"{os_label} is not served by NVIDIA's CUDA repository, so no system-wide nvcc from it")
    if not served and needs_driver:
        return RouteState("no", f"{os_label} is not served by NVIDIA's CUDA repository, which would provide the driver")
    if m.nvidia and not m.driver:
        return RouteState("setup", "pip wheels carry their own CUDA runtime; the NVIDIA driver must be installed first")
    return RouteState("ok", "pip wheels carry their own CUDA runtime: no CUDA toolkit needed")


def choose_route(m: Machine, table: Table, requested: Route | None = None, with_nvcc: bool = False) -> RouteDecision:
    """The route to take, why, and one line for each route not taken."""
    states: dict[Route, RouteState] = {
        "system": system_state(m, table, with_nvcc),
        "conda": conda_state(m),
        "docker": docker_state(m),
    }
    usable = {r for r, s in states.items() if s.state in ("ok", "setup")}
    reasons: tuple[str, ...]
    route: Route
    if requested:
        route = requested
        reasons = (f"asked for with --route {requested}",)
        if states[route].state == "no":
            reasons += (f"note: {states[route].text}",)
        elif states[route].state != "unknown":
            reasons += (states[route].text,)
    else:
        route, why = _default(m, states, usable, with_nvcc)
        reasons = (why,)
    rejected = tuple(
        RouteRejection(r, _why_not(r, route, states, m, with_nvcc, requested)) for r in ROUTES if r != route
    )
    return RouteDecision(route, reasons, rejected, tuple(states.items()))


def _default(m: Machine, states: dict[Route, RouteState], usable: set[Route], with_nvcc: bool) -> tuple[Route, str]:
    if m.platform == "darwin":
        return "system", "macOS: pip installs PyPI's torch wheel (CPU and Apple's MPS backend)"
    if m.amd and not m.nvidia:
        return "system", "AMD GPU: envdoctor plans NVIDIA installs only; the plan names PyTorch's ROCm wheels"
    if with_nvcc:
        if "system" in usable:
            return "system", (
                f"a system-wide nvcc is wanted (--with-nvcc) and NVIDIA's CUDA repository serves {m.os_label}"
            )
        if "conda" in usable:
            return "conda", "nvcc is wanted (--with-nvcc) but the system route cannot provide it; conda's cuda-nvcc can"
    if "conda" in usable and active_env(m):
        return "conda", (
            f"a conda environment is active ({m.facts.conda.active_name or m.facts.conda.active_prefix}): "
            "conda keeps each project's CUDA apart (good for algorithm development)"
        )
    if "system" in usable and m.facts.python.venv and m.python_exe:
        return "system", f"the target Python {m.python_exe} is a virtual environment: pip installs straight into it"
    if states["docker"].state == "ok" and m.driver:
        return "docker", (
            f"{states['docker'].text}: an NGC image brings tuned CUDA, cuDNN and NCCL "
            "(good for performance work and reproducible runs)"
        )
    if "system" in usable:
        return "system", states["system"].text
    fallbacks: tuple[Route, ...] = ("conda", "docker")
    for route in fallbacks:
        if route in usable:
            return route, f"the system route cannot work here ({states['system'].text}); {states[route].text}"
    return "system", f"no route is clearly usable; pip wheels are the simplest start ({states['system'].text})"


def _why_not(
    route: Route,
    chosen: Route,
    states: dict[Route, RouteState],
    m: Machine,
    with_nvcc: bool,
    requested: Route | None = None,
) -> str:
    s = states[route]
    if s.state in ("no", "unknown"):
        return s.text
    if requested:
        return f"{s.text}; --route {requested} was asked for"
    if route == "conda":
        if with_nvcc and chosen == "system":
            return f"{s.text}, but a system-wide nvcc was asked for"
        return (
            f"{s.text}, but no conda environment is active; --route conda gives each project "
            "its own env and CUDA (several GB each)"
        )
    if route == "docker":
        if chosen == "conda":
            return f"{s.text}; the active conda environment says you work in conda"
        if s.state == "setup":
            return f"{s.text}; --route docker would set it up"
        return f"{s.text}; --route docker runs an NGC image instead"
    if route == "system":
        if chosen == "conda":
            return "pip wheels would work too, but the active conda environment is where you work"
        if chosen == "docker":
            return "pip wheels would work too; the ready NVIDIA container runtime is preferred for performance work"
        return s.text
    return s.text

"""The fix of each kind of drift, for one node: exact commands, printed, never run.

The commands come from where ``check`` builds its own (``envdoctor.commands``: the driver, the
CUDA toolkit and the container toolkit for the node's distribution), and where the node's own
check already printed a fix for the same trouble, that fix is reused (:func:`own_fixes`).
"""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Optional, Tuple

from envdoctor import commands
from envdoctor.facts.system import SystemFacts
from envdoctor.fleet.facts import GpuFacts, NodeFacts, Value
from envdoctor.parse import release

#: What check prints when a GPU is missing or the driver and the bus disagree (rules/driver.py).
LIST_GPUS = "nvidia-smi -L"
KERNEL_LOG = "sudo dmesg | grep -iE 'nvrm|xid' | tail -20"
ON_THE_BUS = "lspci -nn | grep -i nvidia   # is the card seated / passed through to this VM?"
TORCH_INDEX = "https://download.pytorch.org/whl"


def python_of(node: NodeFacts) -> str:
    """The node's target Python as a shell word (``~/venv/bin/python`` keeps its ``~``)."""
    path = node.python or "python3"
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:])
    return shlex.quote(path)


def system_of(node: NodeFacts) -> SystemFacts:
    return node.system or SystemFacts()


def own_fixes(node: NodeFacts, codes: Iterable[str] = ()) -> Tuple[str, ...]:
    """The fix lines of the node's own check findings (those of ``codes``, or all its errors)."""
    wanted = set(codes)
    lines = []
    for f in node.check_errors:
        if wanted and f.code not in wanted:
            continue
        lines.append(f"# from its own check, {f.code}: {f.title}")
        lines.extend(f.fix)
    return tuple(dict.fromkeys(lines))


def driver(
    node: NodeFacts,
    branch: Optional[str],
    version: Value = None,
    table: Any = None,
    open_modules: Optional[bool] = None,
) -> Tuple[str, ...]:
    """Install the driver ``branch`` the way check's driver rules print it, for this node's OS."""
    if open_modules is None:
        open_modules = node.value("driver.flavor") != "proprietary"
    steps = commands.driver_install(system_of(node), branch, open_modules, table=table)
    if version and isinstance(version, str) and branch and version.split(".")[0] == branch:
        steps = steps + (
            f"# the others run {version}: pin that version in the package manager "
            "where the newest of the branch is newer",
        )
    return steps


def reload_module() -> Tuple[str, ...]:
    return commands.reload_modules()


def missing_gpu(node: NodeFacts) -> Tuple[str, ...]:
    return own_fixes(node) + (LIST_GPUS, KERNEL_LOG, ON_THE_BUS)


def other_models(node: NodeFacts, majority: Value) -> Tuple[str, ...]:
    return (
        f"# {node.name} has other GPUs than the fleet ({majority}): schedule it apart, e.g. with a "
        "Slurm feature or a Kubernetes node label, rather than in the same job",
    )


def power_limit(node: NodeFacts, targets: Iterable[Tuple[GpuFacts, float]]) -> Tuple[str, ...]:
    """``sudo nvidia-smi -i 3 -pl 700`` for each GPU below (or above) the fleet's limit of its model."""
    lines = [
        f"sudo nvidia-smi -i {g.index} -pl {target:g}   # {g.name or 'GPU'} at {g.power_limit_w:g} W"
        for g, target in targets
        if g.power_limit_w is not None
    ]
    if lines:
        lines.append(
            "# a limit set so lasts until the next reboot; the node's boot configuration (or "
            "nvidia-persistenced and its service) is where the others' limit is set"
        )
    return tuple(lines)


def clocks(node: NodeFacts, gpus: Iterable[GpuFacts]) -> Tuple[str, ...]:
    lines = [f"nvidia-smi -q -d CLOCK -i {g.index}   # max SM clock {g.max_sm_clock_mhz} MHz" for g in gpus]
    return tuple(lines) + ("nvidia-smi -q | grep -i vbios   # another VBIOS or board than the others?",)


def ecc_mode(node: NodeFacts, on: bool, gpus: Iterable[GpuFacts]) -> Tuple[str, ...]:
    lines = [f"sudo nvidia-smi -i {g.index} -e {1 if on else 0}" for g in gpus]
    return tuple(lines) + ("sudo reboot   # the ECC mode changes at the next GPU reset",)


def torch(node: NodeFacts, version: Value, table: Any = None) -> Tuple[str, ...]:
    """The majority's torch build in the node's target Python, from the index its local tag names."""
    python = python_of(node)
    if not isinstance(version, str) or not version:
        return (f"{python} -m pip uninstall -y torch   # the others have no torch in the target Python",)
    base = release(version)
    local = version.split("+", 1)[1] if "+" in version else None
    spec = f"torch=={base}" if base else f"torch=={version}"
    if local and (local.startswith("cu") or local.startswith("rocm") or local == "cpu"):
        variant = None
        if table is not None:
            try:
                variant = table.variant(local)
            except (LookupError, ValueError):
                variant = None
        index = getattr(variant, "index_url", None) or f"{TORCH_INDEX}/{local}"
        return (f"{python} -m pip install --force-reinstall {spec} --index-url {index}",)
    return (f"{python} -m pip install --force-reinstall {spec}",)


def libraries(node: NodeFacts, what: str, version: Value, torch_version: Value) -> Tuple[str, ...]:
    python = python_of(node)
    probe = {"cuDNN": "torch.backends.cudnn.version()", "NCCL": "torch.cuda.nccl.version()"}[what]
    return own_fixes(node) + (
        f"{python} -c 'import torch; print({probe})'",
        f"# the others load {what} {version} with torch {torch_version}: an LD_LIBRARY_PATH entry or a "
        f"system {what} loaded first gives another; see 'envdoctor check' on {node.name}",
    )


def python_version(version: Value) -> Tuple[str, ...]:
    return (
        f"# the others run Python {version}: make the environment with it "
        f"(uv venv --python {version}, or conda create -n torch python={version})",
    )


def toolkits(node: NodeFacts, majority: Value, table: Any = None) -> Tuple[str, ...]:
    wanted = [r.strip() for r in str(majority or "").split(",") if r.strip()]
    have = [r.strip() for r in str(node.value("toolkits") or "").split(",") if r.strip()]
    lines: Tuple[str, ...] = ()
    for r in wanted:
        if r not in have:
            lines += commands.cuda_toolkit_install(system_of(node), r, table=table)
    extra = [r for r in have if r not in wanted]
    if extra:
        lines += (
            f"# {', '.join(extra)} here and not on the others: harmless unless CUDA_HOME or PATH points a build at it",
        )
    return lines


def container_toolkit(node: NodeFacts, majority: Value) -> Tuple[str, ...]:
    if not majority:
        return ("# the others have no NVIDIA Container Toolkit",)
    return commands.install_container_toolkit(system_of(node)) + commands.configure_docker()


def image(node: NodeFacts, what: str, majority: Value) -> Tuple[str, ...]:
    return (
        f"# the others run {what} {majority}: reinstall or upgrade {node.name} from the image they were built from",
    )


def health(node: NodeFacts, gpus: Iterable[GpuFacts], failed: bool) -> Tuple[str, ...]:
    lines = [f"nvidia-smi -q -d ECC,ROW_REMAPPER -i {g.index}" for g in gpus]
    if failed:
        return tuple(lines) + ("# a failed row remap: the GPU needs service (drain the node, contact the vendor)",)
    return tuple(lines) + tuple(
        f"sudo nvidia-smi -r -i {g.index}   # a GPU reset applies the pending remaps (no process may use the GPU)"
        for g in gpus
    )


def slow(node: NodeFacts, gpus: Iterable[Tuple[GpuFacts, str]]) -> Tuple[str, ...]:
    lines = []
    for g, point in gpus:
        dtype, _, n = point.partition("@")
        lines.append(f"nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE -i {g.index}   # clock-event reasons now")
        lines.append(f"envdoctor bench --device {g.index} --dtype {dtype} --size {n}   # measure it again")
    return tuple(dict.fromkeys(lines))


def missing(node: NodeFacts, master: Optional[str]) -> Tuple[str, ...]:
    """What to try on a node that did not join: does envdoctor run there, can it reach rank 0."""
    lines = [f"envdoctor check   # on {node.name}: does it run there at all?"]
    if master and ":" in master:
        host, port = master.rsplit(":", 1)
        lines.append(f"nc -zv {shlex.quote(host)} {port}   # from {node.name}: can it reach rank 0's store?")
    lines.append("envdoctor fleet --gather --join-timeout 300   # a slow node (bench, a cold disk) may need longer")
    return tuple(lines)


def unreadable(path: str) -> Tuple[str, ...]:
    return (f"envdoctor check --json > {shlex.quote(path)}   # on that node, again",)

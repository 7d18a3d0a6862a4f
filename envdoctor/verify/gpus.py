"""Verify checks of the GPUs the driver lists: ED702 missing, ED703 changed, ED721 added (or memory
reported slightly differently). Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

from envdoctor.facts.gpu import DriverFacts, GpuInfo
from envdoctor.findings import Finding
from envdoctor.units import format_bytes
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, gpu_label, real

#: A GPU whose memory dropped by more than this fraction changed (a driver may reserve a few MiB more).
MEMORY_DROP = 0.01
REF_XID = "https://docs.nvidia.com/deploy/xid-errors/index.html"


def _mib(value: int | None) -> str:
    return format_bytes(value << 20, places=0, unit="MiB") if value else "? MiB"


def _no_devices(d: DriverFacts) -> bool:
    return any(e is not None and "No devices" in e.message for e in (d.nvml_error, d.smi_error))


def _listable(d: DriverFacts) -> bool:
    """The driver could list the GPUs now (possibly none: "No devices were found")."""
    return bool(d.gpus) or _no_devices(d)


def _by_uuid(g: GpuInfo) -> str | int:
    return (g.uuid or "").lower()


def _by_index(g: GpuInfo) -> str | int:
    return g.index


def _changes(g: GpuInfo, h: GpuInfo) -> tuple[list[str], list[str]]:
    """(what changed from ``g`` to ``h``, memory differences too small to count)."""
    what, nudged = [], []
    if g.name and h.name and g.name != h.name:
        what.append(f"name {g.name} -> {h.name}")
    if g.compute_capability and h.compute_capability and g.compute_capability != h.compute_capability:
        what.append(f"compute capability {g.compute_capability} -> {h.compute_capability}")
    if g.memory_total_mib and h.memory_total_mib and g.memory_total_mib != h.memory_total_mib:
        text = f"memory {_mib(g.memory_total_mib)} -> {_mib(h.memory_total_mib)}"
        if (g.memory_total_mib - h.memory_total_mib) / g.memory_total_mib > MEMORY_DROP:
            what.append(text)
        else:
            nudged.append(f"GPU {h.index} ({h.name}): {text}")
    return what, nudged


def gpus_compared(pair: Pair) -> Iterator[Outcome]:
    """ED702 missing, ED703 changed, ED721 added / memory reported slightly differently."""
    before, after = pair.before, pair.after
    b, a = before.driver.gpus, after.driver.gpus
    if pair.rebooting:
        return
    if not b:
        if a:
            yield Finding(
                "ED721",
                "info",
                f"GPUs found now: {len(a)} (none in the baseline)",
                evidence=tuple(gpu_label(g) for g in a),
                area="gpu",
            )
        return
    if not _listable(after.driver):
        yield NotCompared("GPUs: the driver cannot list them now (see ED704)")
        return
    by_uuid = all(real(g.uuid) for g in b) and all(real(g.uuid) for g in a)
    key: Callable[[GpuInfo], str | int] = _by_uuid if by_uuid else _by_index
    now = {key(g): g for g in a}
    then = {key(g): g for g in b}
    missing = [g for g in b if key(g) not in now]
    added = [g for g in a if key(g) not in then]
    changed: list[str] = []
    nudged: list[str] = []
    for g in b:
        h = now.get(key(g))
        if h is None:
            continue
        what, small = _changes(g, h)
        nudged += small
        if what:
            changed.append(f"{gpu_label(h)}: " + ", ".join(what))
    if missing:
        pci = len(after.pci.devices)
        evidence = [f"missing: {gpu_label(g)}" for g in missing]
        evidence.append(
            f"the driver sees {len(a)} GPU(s) now ({after.driver.sources.get('gpus') or 'nvidia-smi'}), "
            f"{len(b)} in the baseline"
        )
        if after.pci.devices or before.pci.devices:
            evidence.append(f"NVIDIA devices on the PCI bus: {len(before.pci.devices)} then, {pci} now")
        yield Finding(
            "ED702",
            "error",
            f"GPU missing: {len(missing)} of the baseline's {len(b)} GPU(s) are gone",
            evidence=tuple(evidence),
            fix=(
                "nvidia-smi -L",
                "sudo dmesg | grep -iE 'xid|nvrm|fallen off' | tail -20   # Xid 79: the GPU fell off the bus",
                "sudo reboot   # a GPU that fell off the bus comes back only after a reset or a reboot",
            ),
            reference=REF_XID,
            area="gpu",
            explanation="A GPU that NVML no longer lists is invisible to CUDA, containers and torch.",
        )
    if changed:
        yield Finding(
            "ED703",
            "error",
            "GPU changed since the baseline",
            evidence=tuple(changed),
            fix=("nvidia-smi -q | grep -iE 'product name|uuid|fb memory|retired|remapp|mig mode' -A2",),
            reference=REF_XID,
            area="gpu",
            explanation="Less memory on the same GPU points to MIG mode, retired or remapped memory rows, or a "
            "different board; a different name to a replaced board or a misread.",
        )
    if added or nudged:
        evidence = [f"added: {gpu_label(g)}" for g in added] + nudged
        title = f"GPUs added: {len(added)}" if added else "GPU memory reported slightly differently"
        yield Finding(
            "ED721",
            "info",
            title,
            evidence=tuple(evidence),
            area="gpu",
            explanation="A driver update may reserve a little more or less memory." if nudged else None,
        )
    if not (missing or changed or added):
        names = [g.name or "?" for g in a]
        yield Same("GPUs " + ", ".join(f"{names.count(n)}x {n}" for n in sorted(set(names))))

"""The NVIDIA driver branch the advisor plans for, and whether a driver runs a GPU at all.

With the bundled table: an RTX 3090 (compute 8.6) gets R580, the newest confirmed long-term
branch; a Kepler GPU (3.5) gets R470, its last branch; ``branch_driver(table, "580")`` is
``"580.95.05"``, the newest CUDA floor inside R580.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import Version

from envdoctor.parse import major
from envdoctor.table import Table


def recommended_branch(table: Table, ccs: Iterable[str | None] = ()) -> str | None:
    """The driver branch to install: the newest confirmed long-term branch in the table (R580),
    but no newer than the last branch of a retired GPU (R470 for Kepler). ``["6.1"]`` -> ``"580"``."""
    ltsb = [b for b in table.driver_branches if b.designation == "LTSB" and b.confirmed()]
    best = max((int(b.branch) for b in ltsb), default=None)
    for cc in ccs:
        arch = table.architecture(cc) if cc else None
        last = arch.last_driver_branch if arch is not None else None
        if last and (best is None or int(last) < best):
            best = int(last)
    return str(best) if best is not None else None


def branch_driver(table: Table, branch: str) -> str:
    """A driver version that stands for ``branch``: the newest CUDA minimum in that branch
    (``"580"`` -> ``"580.95.05"``, the 13.0 Update 2 floor), else ``"<branch>.0"``."""
    rows = [r.min_driver_linux for r in table.cuda_releases if major(r.min_driver_linux) == int(branch)]
    return max(rows, key=Version) if rows else f"{branch}.0"


def gpu_driver_problem(table: Table, driver: str, cc: str) -> str | None:
    """Why ``driver`` cannot run a GPU of ``cc`` at all (too old for it, or past its last branch);
    None when it can, or when the table does not know the architecture."""
    arch = table.architecture(cc)
    if arch is None:
        return None
    have = major(driver)
    first, last = arch.min_driver_branch, arch.last_driver_branch
    if have is not None and first and have < int(first):
        return (
            f"{arch.name} (compute {cc}) needs driver branch {first} or newer "
            f"(its first CUDA, {arch.first_cuda}); driver {driver} does not run it"
        )
    if have is not None and last and have > int(last):
        return f"R{last} is the last driver branch for {arch.name} (compute {cc}); driver {driver} does not run it"
    return None

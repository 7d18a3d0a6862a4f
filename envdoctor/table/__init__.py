"""envdoctor's compatibility table: CUDA, drivers, GPUs, torch wheels, NGC images, distributions.

The facts live in ``data/*.toml`` (one row per fact, each with its source and the date it was
checked); this package loads them into frozen dataclasses, validates them and answers lookups.

>>> from envdoctor.table import load_table
>>> t = load_table()
>>> t.min_driver("12.8")
'570.26'
>>> t.torch("2.8").variant("cu128").arch_list[0]
'sm_70'
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

from envdoctor.table.model import Table, build, norm_cc, norm_gpu_name, norm_pci
from envdoctor.table.rows import (
    Architecture, ChipFamily, CudaRelease, Distro, DriverBranch, GpuModel, MinorCompat, Mirror,
    NgcRelease, TorchPatch, TorchRelease, TorchVariant, Variant,
)
from envdoctor.table.schema import TableError

__all__ = [
    "load_table", "data_directory", "Table", "TableError", "Architecture", "ChipFamily", "CudaRelease",
    "Distro", "DriverBranch", "GpuModel", "MinorCompat", "Mirror", "NgcRelease", "TorchPatch",
    "TorchRelease", "TorchVariant", "Variant", "norm_cc", "norm_gpu_name", "norm_pci",
]


def data_directory() -> Path:
    """``envdoctor/data`` in an installed wheel (pyproject force-includes ``data/`` there), else
    ``<checkout>/data``."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "data", package.parent / "data"):
        if (candidate / "cuda.toml").is_file():
            return candidate
    raise TableError(f"no data directory with cuda.toml at {package / 'data'} or {package.parent / 'data'}")


@functools.lru_cache(maxsize=1)
def _default() -> Table:
    return build(data_directory())


def load_table(directory: Optional[Path] = None) -> Table:
    """The table of the bundled ``data/`` (loaded once, then cached), or a fresh, uncached load of
    ``directory`` (tests point it at broken copies). Raises :class:`TableError` when broken."""
    if directory is None:
        return _default()
    return build(Path(directory))

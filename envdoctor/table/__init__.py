"""envdoctor's compatibility table: CUDA, drivers, GPUs, torch wheels, NGC images, distributions.

The facts live in ``data/*.toml`` (one row per fact, each with its source and the date it was
checked); this package loads them into frozen dataclasses, validates them and answers lookups.

>>> from envdoctor.table import load_table
>>> t = load_table()
>>> t.min_driver("12.8")
'570.26'
>>> t.torch("2.8").variant("cu128").arch_list[0]
'sm_70'

``load_table()`` reads the bundled ``data/`` (or ``$ENVDOCTOR_DATA``: :mod:`envdoctor.table.source`)
once per process, through a cache of the parsed files keyed by their bytes
(:mod:`envdoctor.table.cache`); ``load_table(directory)`` reads a folder afresh, uncached.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional, Union

from envdoctor.table import cache
from envdoctor.table.model import Table, build, norm_cc, norm_pci
from envdoctor.table.names import norm_gpu_name
from envdoctor.table.rows import (
    Architecture,
    ChipFamily,
    CudaRelease,
    Distro,
    DriverBranch,
    GpuModel,
    GpuSeries,
    MinorCompat,
    Mirror,
    NgcRelease,
    TorchPatch,
    TorchRelease,
    TorchVariant,
    Variant,
)
from envdoctor.table.schema import TableError
from envdoctor.table.source import DATA_ENV, DataDir, data_directory

__all__ = [
    "load_table",
    "data_directory",
    "DATA_ENV",
    "DataDir",
    "Table",
    "TableError",
    "Architecture",
    "ChipFamily",
    "CudaRelease",
    "Distro",
    "DriverBranch",
    "GpuModel",
    "GpuSeries",
    "MinorCompat",
    "Mirror",
    "NgcRelease",
    "TorchPatch",
    "TorchRelease",
    "TorchVariant",
    "Variant",
    "norm_cc",
    "norm_gpu_name",
    "norm_pci",
]


@functools.lru_cache(maxsize=4)
def _default(where: str) -> Table:
    """The table of the default folder (``where`` names it: the key of this per-process memo)."""
    return cache.load(data_directory(), cache.cache_dir())


def load_table(directory: Optional[Union[str, Path, DataDir]] = None) -> Table:
    """The table of the bundled ``data/`` (or ``$ENVDOCTOR_DATA``; loaded once, through the cache),
    or a fresh, uncached load of ``directory`` (tests point it at copies). Raises
    :class:`TableError` when broken."""
    if directory is None:
        return _default(str(data_directory()))
    return build(Path(directory) if isinstance(directory, str) else directory)

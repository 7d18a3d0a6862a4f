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
import logging
from pathlib import Path
from typing import Optional, Union

from envdoctor.table import cache
from envdoctor.table.model import Table, build, build_docs, norm_cc, norm_gpu_name, norm_pci, parse_docs
from envdoctor.table.rows import (
    Architecture, ChipFamily, CudaRelease, Distro, DriverBranch, GpuModel, GpuSeries, MinorCompat, Mirror,
    NgcRelease, TorchPatch, TorchRelease, TorchVariant, Variant,
)
from envdoctor.table.schema import TableError
from envdoctor.table.source import DATA_ENV, DataDir, data_directory, read_files

__all__ = [
    "load_table", "data_directory", "DATA_ENV", "DataDir", "Table", "TableError", "Architecture", "ChipFamily",
    "CudaRelease", "Distro", "DriverBranch", "GpuModel", "GpuSeries", "MinorCompat", "Mirror", "NgcRelease",
    "TorchPatch", "TorchRelease", "TorchVariant", "Variant", "norm_cc", "norm_gpu_name", "norm_pci",
]

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=4)
def _default(where: str) -> Table:
    """The table of the default folder (``where`` is its name, the key of this per-process memo)."""
    directory = data_directory()
    files = read_files(directory)
    folder = cache.cache_dir()
    entry = folder / f"{cache.key(files)}.json" if folder is not None else None
    docs = cache.read(entry) if entry is not None else None
    if docs is not None:
        try:
            return build_docs(directory, docs)
        except Exception:  # an entry that parses but is not what the files say: never trusted
            log.debug("table cache entry %s does not load; parsing the files", entry, exc_info=True)
    docs = parse_docs(directory.name, files)
    table = build_docs(directory, docs)
    if entry is not None:
        cache.write(entry, docs)
    return table


def load_table(directory: Optional[Union[str, Path, DataDir]] = None) -> Table:
    """The table of the bundled ``data/`` (or ``$ENVDOCTOR_DATA``; loaded once, through the cache),
    or a fresh, uncached load of ``directory`` (tests point it at copies). Raises
    :class:`TableError` when broken."""
    if directory is None:
        return _default(str(data_directory()))
    return build(Path(directory) if isinstance(directory, str) else directory)

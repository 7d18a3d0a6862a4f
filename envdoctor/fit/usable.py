"""The memory a process can allocate on a GPU: what a verdict is judged against (issue 28 §1).

A datasheet's "16 GB" is not what a job gets: the driver keeps a reserve, ECC's check bits take
1/16 of a GDDR card with ECC on, and other processes hold what they hold. Three sources, each said:

- this machine's GPUs: NVML's free memory (the total less the driver's reserve and what other
  processes hold; the CUDA context of the job itself is in the peak it is compared with);
- ``--gpu NAME``: the ``[[usable]]`` row of ``data/fit.toml`` for that model (torch's "total
  capacity", cudaMemGetInfo's total, with its source), ECC on where rows differ, unless asked;
- a model without a row: an estimate from its datasheet figure, labelled as such.

>>> rows = load_usable()
>>> g = usable_gpu("Tesla T4", 16.0, "7.5", True, rows)
>>> round(g.total_bytes / 2**30, 2), g.source.split(":")[0]
(14.56, 'usable with ECC on, data/fit.toml')
>>> g = usable_gpu("NVIDIA L4", 24.0, "8.9", True, rows)
>>> round(g.total_bytes / 2**30, 2), g.source.split(" (")[0]
(21.84, 'estimated: 91% of the datasheet 24 GiB')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envdoctor.fit.verdict import Gpu
from envdoctor.table import data_directory
from envdoctor.table.schema import Doc, check_top, fields, rows
from envdoctor.table.source import read_doc

GIB = 2**30
#: no row for the model: the smallest measured ratio usable / datasheet of each kind (data/fit.toml):
#: data-center cards (GDDR ones lose 1/16 to ECC, which is on by default: the T4's 14.56 of 16), others
FALLBACK_DATACENTER = 0.91
FALLBACK_OTHER = 0.97
#: ... and never more than the datasheet less this: the driver's reserve is about constant, so a
#: ratio overstates small cards (an RTX 2060 6GB gives 5.79 GiB, facebookresearch/meshrcnn#92, a
#: GTX 1660 Ti 5.81, zhou13/lcnn#23: 97% of 6 would be 5.82); the largest reserve of the rows is
#: the RTX 4090's 0.32 GiB (24 less 23.68)
FALLBACK_RESERVE_GIB = 0.35


@dataclass(frozen=True)
class Usable:
    gpu: str  # the table's name ("Tesla T4")
    ecc: str  # "on", "off", "default" (the source does not show it)
    usable_gib: float
    source: str
    checked: str
    unconfirmed: bool = False
    note: str | None = None


def usable_of(doc: Doc) -> tuple[Usable, ...]:
    check_top(doc, ("constant", "usable"))
    out = []
    for where, raw in rows(doc, "usable", "gpu"):
        v = fields(where, raw, {"gpu": "str", "ecc": "str", "usable_gib": "float"})
        if v["ecc"] not in ("on", "off", "default"):
            raise where.fail(f"field 'ecc': {v['ecc']!r} is not on, off or default")
        if not 0 < v["usable_gib"] <= 2**20:
            raise where.fail(f"field 'usable_gib': {v['usable_gib']} is not a GPU's memory in GiB")
        v.pop("unconfirmed_fields", None)
        out.append(Usable(**v))
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _usable(where: str) -> tuple[Usable, ...]:
    return usable_of(read_doc("fit.toml"))


def load_usable() -> tuple[Usable, ...]:
    """The rows of the default data folder (``$ENVDOCTOR_DATA`` or the bundled ``data/``), once per folder."""
    return _usable(str(data_directory()))


def usable_gpu(
    name: str,
    datasheet_gib: float | None,
    cc: str | None,
    datacenter: bool | None,
    rows_: Sequence[Usable],
    ecc: str | None = None,
) -> Gpu:
    """The Gpu ``--gpu NAME`` is judged against: its ``[[usable]]`` row (ECC on before the others
    unless ``ecc`` asks for one), else the datasheet figure x the fallback ratio, said so; a card the
    table does not confirm as data-center or not (``datacenter`` None: the Tesla K80, whose process
    gets 11.17 GiB of its 12) takes the data-center card's smaller ratio, so the guess is never over.

    >>> round(usable_gpu("Tesla K80", 12.0, "3.7", None, ()).total_bytes / 2**30, 2)
    10.92
    >>> round(usable_gpu("NVIDIA GeForce RTX 2060", 6.0, "7.5", False, ()).total_bytes / 2**30, 2)
    5.65
    """
    mine = [r for r in rows_ if r.gpu == name]
    if ecc:
        mine = [r for r in mine if r.ecc == ecc] or mine
    order = {"on": 0, "default": 1, "off": 2}
    if mine:
        r = sorted(mine, key=lambda x: order.get(x.ecc, 3))[0]
        others = [x for x in mine if x is not r]
        also = "; " + "; ".join(f"ECC {x.ecc}: {x.usable_gib:g} GiB" for x in others) if others else ""
        state = {"on": "with ECC on", "off": "with ECC off", "default": "as shipped"}[r.ecc]
        flag = ", unconfirmed" if r.unconfirmed else ""
        first = r.source.split(" ")[0]
        return Gpu(name, int(r.usable_gib * GIB), f"usable {state}, data/fit.toml: {first}{flag}{also}", cc)
    ratio = FALLBACK_OTHER if datacenter is False else FALLBACK_DATACENTER
    total = float(datasheet_gib or 0)
    why = (
        "data-center card: GDDR models lose 1/16 to ECC, on by default"
        if datacenter
        else "the smallest measured ratio without ECC"
        if datacenter is False
        else "the table does not confirm whether it is a data-center card: ECC on assumed, the smaller ratio"
    )
    guess = min(total * ratio, total - FALLBACK_RESERVE_GIB)
    how = (
        f"{ratio:.0%} of the datasheet {total:g} GiB ({why}"
        if guess == total * ratio
        else f"the datasheet {total:g} GiB less {FALLBACK_RESERVE_GIB:g} GiB (the largest driver reserve measured"
    )
    return Gpu(name, int(max(guess, 0.0) * GIB), f"estimated: {how}; no measured row in data/fit.toml)", cc)


def local_gpus(nvml: Any = None) -> tuple[list[Gpu], str | None]:
    """This machine's GPUs as NVML sees them: (Gpu per GPU judged by its free memory, why none)."""
    from envdoctor.nvml import Session

    session = Session(nvml)
    if session.error is not None:
        return [], session.error.message
    try:
        readings = session.read_all(("name", "memory", "compute_capability"))
    finally:
        session.close()
    out = []
    for r in readings:
        mem = r.values.get("memory")
        if not isinstance(mem, dict) or not isinstance(mem.get("free"), int):
            continue
        name = r.values.get("name") or f"GPU {r.index}"
        total, free, used = int(mem["total"]), int(mem["free"]), int(mem.get("used") or 0)
        cc = r.values.get("compute_capability")
        out.append(
            Gpu(
                f"GPU {r.index}: {name}",
                free,
                # nvmlDeviceGetMemoryInfo's used is the sum of the driver's reserve and what processes hold
                f"this machine, NVML free: total {total / GIB:.2f} GiB less {used / GIB:.2f} GiB used now "
                "(the driver's reserve and what other processes hold; the job's own context is in its peak)",
                cc if isinstance(cc, str) else None,
            )
        )
    return out, None if out else "NVML read no GPU memory"

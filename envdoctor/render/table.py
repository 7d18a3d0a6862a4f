"""``envdoctor table`` for people (rows with the source of each fact, unconfirmed facts marked) and
for scripts (the ``envdoctor.table/1`` document). Renders table rows; looks nothing up."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

from envdoctor.documents import document
from envdoctor.table import (
    Architecture,
    ChipFamily,
    CudaRelease,
    Distro,
    GpuModel,
    MinorCompat,
    NgcRelease,
    Table,
    TorchRelease,
    Variant,
)

SCHEMA = document("table").schema  # "envdoctor.table/1"
#: the document's older marker, kept for the scripts that read it
JSON_VERSION: Literal["1"] = "1"
UNCONFIRMED = "[unconfirmed]"


# --- the JSON document ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Rows to JSON-ready data: dataclasses to objects (with their ``sm``/``minor``/``image``
    properties), tuples to lists, anything else JSON has no type for (a TOML date) to text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for extra in ("sm", "minor", "image"):
            if hasattr(type(value), extra) and isinstance(getattr(type(value), extra), property):
                out[extra] = _plain(getattr(value, extra))
        return out
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class TableRow(TypedDict):
    """A row of data/*.toml (its own keys besides these: the table's, as the file holds them)."""

    source: str
    checked: str
    unconfirmed: bool


TableKind = Literal["cuda", "torch", "gpu", "arch", "ngc", "distro", "variant"]


class TableDocument(TypedDict):
    """Rows of the bundled compatibility table as data/*.toml holds them, each with its source and
    checked date. 'result' is a list of rows without a key, one row (or a small object of rows) with
    one. 'version' is the older marker of the same document."""

    schema: str
    version: Literal["1"]
    kind: TableKind
    key: Optional[str]
    result: Union[List[TableRow], Dict[str, Any]]


#: what the type cannot say: a key of these kinds answers one row
TABLE_ONE_ROW = {
    "allOf": [
        {
            "if": {"properties": {"key": {"type": "string"}, "kind": {"enum": ["torch", "arch", "ngc", "distro"]}}},
            "then": {"properties": {"result": {"$ref": "#/$defs/TableRow"}}},
        }
    ]
}


def table_document(kind: TableKind, key: str | None, result: Any) -> TableDocument:
    """``{"schema": "envdoctor.table/1", "version": "1", "kind": "cuda", "key": "12.8", "result": ...}``."""
    return {"schema": SCHEMA, "version": JSON_VERSION, "kind": kind, "key": key, "result": _plain(result)}


STALE_SCHEMA = document("stale").schema  # "envdoctor.stale/1"


@dataclass(frozen=True)
class StaleAnswer:
    """The bundled torch releases against the live wheel index: ``table --stale --json`` prints it."""

    schema: str = STALE_SCHEMA
    bundled_newest: Optional[str] = None  # "2.9.0": the newest torch data/torch.toml holds
    variant: str = "cpu"  # the index variant read
    index: Optional[str] = None  # "https://download.pytorch.org/whl/cu130/torch/", credentials masked
    newer: Tuple[str, ...] = ()  # releases the index has and the table does not
    stale: Optional[bool] = None  # None: the index could not be read
    error: Optional[str] = None  # why the index could not be read


def stale_document(answer: StaleAnswer) -> dict[str, Any]:
    """``{"schema": "envdoctor.stale/1", "bundled_newest": "2.9.0", "newer": ["2.10.0"], ...}``."""
    from envdoctor.facts.serde import to_data

    data: dict[str, Any] = to_data(answer)
    return data


# --- pieces of the text -------------------------------------------------------------------------------

Row = Any  # any table row: it has ``confirmed(field=None)``, ``source`` and ``checked``


def mark(row: Row, field: str | None = None) -> str:
    """`` [unconfirmed]`` after a row (or field) that could not be confirmed against its source."""
    return f" {UNCONFIRMED}" if not row.confirmed(field) else ""


def _field_mark(row: Row, field: str) -> str:
    """``[unconfirmed]`` after a field the row doubts on its own (``unconfirmed_fields``); a row
    doubted as a whole carries the mark on its head line already."""
    return f" {UNCONFIRMED}" if row.confirmed() and not row.confirmed(field) else ""


def _provenance(row: Row, indent: str = "  ") -> list[str]:
    out = [f"{indent}source:  {row.source}", f"{indent}checked: {row.checked}"]
    if getattr(row, "unconfirmed_fields", ()):
        out.append(f"{indent}unconfirmed fields: {', '.join(row.unconfirmed_fields)}")
    if getattr(row, "note", None):
        out.append(f"{indent}note:    {row.note}")
    return out


def _field(row: Row, label: str, name: str, text: str | None = None) -> str:
    value = text if text is not None else getattr(row, name)
    if value in (None, "", ()):
        value = "-"
    head = label + ":"
    return f"  {head:<19}{value}{mark(row, name) if row.confirmed() else ''}"


# --- cuda -------------------------------------------------------------------------------------------------


def cuda_list(t: Table) -> list[str]:
    return [
        f"CUDA {r.version:<8} {r.label:<24} Linux >= {r.min_driver_linux:<12} "
        f"Windows >= {r.min_driver_windows or 'n/a'}{mark(r)}"
        for r in t.cuda_releases
    ]


def cuda_lines(row: CudaRelease, mc: MinorCompat | None) -> list[str]:
    out = [
        f"CUDA {row.version} ({row.label}){mark(row)}",
        _field(row, "driver (Linux)", "min_driver_linux", f">= {row.min_driver_linux}"),
        _field(
            row,
            "driver (Windows)",
            "min_driver_windows",
            f">= {row.min_driver_windows}" if row.min_driver_windows else "n/a",
        ),
    ]
    out += _provenance(row)
    if mc is not None:
        out.append(
            f"minor-version compatibility for CUDA {mc.major}.x: driver >= {mc.min_driver_linux} "
            f"(Windows {mc.min_driver_windows or 'n/a'}){mark(mc)}"
        )
        out += [f"  - {x}" for x in mc.limitations]
        out += _provenance(mc)
    return out


# --- torch ------------------------------------------------------------------------------------------------


def torch_list(t: Table) -> list[str]:
    return [
        f"torch {r.minor:<5} Python {r.pythons[0]}-{[p for p in r.pythons if not p.endswith('t')][-1]:<5} "
        f"PyPI {r.pypi_default:<6} variants {' '.join(v.name for v in r.variants)}{mark(r)}"
        for r in t.torch_releases
    ]


def torch_lines(row: TorchRelease, t: Table) -> list[str]:
    conda: str = row.conda
    if row.pytorch_cuda:
        conda += f" (pytorch-cuda={'/'.join(row.pytorch_cuda)} -c pytorch -c nvidia)"
    elif row.conda_cudatoolkit:
        conda += f" (cudatoolkit={'/'.join(row.conda_cudatoolkit)} -c pytorch)"
    elif row.conda == "conda-forge":
        conda += " (conda install -c conda-forge pytorch cuda-version=X.Y; the pytorch channel ended with 2.5)"
    out = [
        f"torch {row.version} (patches {', '.join(p.version for p in row.patches)}"
        f"{'; released ' + row.released if row.released else ''}){mark(row)}",
        _field(row, "Python", "pythons", ", ".join(row.pythons)),
        _field(row, "PyPI default", "pypi_default"),
        _field(row, "platform tag", "manylinux", f"{row.manylinux} (glibc >= {row.glibc})"),
        _field(row, "torchvision", "torchvision", ", ".join(f"{p.torchvision} ({p.version})" for p in row.patches)),
        _field(
            row,
            "torchaudio",
            "torchaudio",
            ", ".join(f"{p.torchaudio} ({p.version})" for p in row.patches if p.torchaudio) or "none released",
        ),
        _field(row, "conda", "conda", conda),
        "  variants:",
    ]
    for v in row.variants:
        idx = t.variant(v.name)
        head = f"    {v.name:<10}"
        if idx is not None and idx.cuda:
            head += f" CUDA {idx.cuda:<5} driver >= {idx.min_driver_linux}"
        out.append(head + f"  [{', '.join(v.platforms)}]{mark(v)}")
        if v.arch_list:
            out.append(f"      arch list: {' '.join(v.arch_list)}{_field_mark(v, 'arch_list')}")
        if v.arch_list_aarch64:
            out.append(f"      aarch64:   {' '.join(v.arch_list_aarch64)}{_field_mark(v, 'arch_list_aarch64')}")
        shown = {"arch_list", "arch_list_aarch64"}
        other = [f for f in getattr(v, "unconfirmed_fields", ()) if f not in shown]
        if other and v.confirmed():
            out.append(f"      unconfirmed fields: {', '.join(other)}")
        if idx is not None:
            out.append(f"      index:     {idx.index_url}")
        if v.source:
            out.append(f"      source:    {v.source}")
        if v.note:
            out.append(f"      note:      {v.note}")
    return out + _provenance(row)


# --- gpu --------------------------------------------------------------------------------------------------


def gpu_list(t: Table) -> list[str]:
    return [f"{g.name:<52} cc {g.cc:<5} {', '.join(g.pci_ids)}{mark(g)}" for g in t.gpus]


def chip_family_lines(name: str, fam: ChipFamily, arch: Architecture) -> list[str]:
    return [
        f"PCI device {name}: no model in the table; chip family {fam.chip} -> cc {fam.cc} ({arch.name})",
        *_provenance(fam),
    ]


def gpu_lines(row: GpuModel, arch: Architecture | None) -> list[str]:
    def tf(field_name: str, unit: str = "TFLOP/s") -> str:
        value = getattr(row, field_name)
        return f"{value:g} {unit}" if value is not None else "-"

    out = [
        f"{row.name}{mark(row)}",
        _field(row, "aliases", "aliases", ", ".join(row.aliases)),
        _field(row, "PCI ids", "pci_ids", ", ".join(row.pci_ids)),
        _field(row, "compute cap.", "cc", f"{row.cc} ({arch.name if arch else '?'})"),
        _field(row, "memory", "memory_gib", tf("memory_gib", "GB")),
        _field(row, "bandwidth", "bandwidth_gbs", tf("bandwidth_gbs", "GB/s")),
        _field(row, "FP32", "fp32_tflops", tf("fp32_tflops")),
        _field(row, "TF32 tensor", "tf32_tflops", tf("tf32_tflops")),
        _field(row, "FP16 tensor", "fp16_tflops", tf("fp16_tflops") + " (FP32 accumulate)"),
        _field(row, "BF16 tensor", "bf16_tflops", tf("bf16_tflops")),
    ]
    if row.fp16_fp16acc_tflops is not None:
        out.append(_field(row, "FP16 (FP16 acc.)", "fp16_fp16acc_tflops", tf("fp16_fp16acc_tflops")))
    if row.fp8_tflops is not None:
        out.append(_field(row, "FP8 tensor", "fp8_tflops", tf("fp8_tflops")))
    if row.fp16_half_rate_accum:
        out.append("  GeForce: FP16 with FP32 accumulate (and BF16) run at half the FP16-accumulate rate")
    out.append("  rates are dense datasheet peaks (2:4 sparsity excluded)")
    if row.pci_source:
        out.append(f"  PCI ids from: {row.pci_source}")
    return out + _provenance(row)


# --- arch, ngc, distro, variant ---------------------------------------------------------------------------


def arch_list(t: Table) -> list[str]:
    return [
        f"{a.cc:<5} {a.sm:<7} {a.name:<16} CUDA {a.first_cuda}-{a.dropped_cuda or 'current'}{mark(a)}"
        for a in t.architectures
    ]


def arch_lines(row: Architecture) -> list[str]:
    return [
        f"compute capability {row.cc} ({row.sm}): {row.name}{' (Jetson)' if row.jetson else ''}{mark(row)}",
        _field(row, "first CUDA", "first_cuda"),
        _field(row, "dropped in CUDA", "dropped_cuda", row.dropped_cuda or "not dropped"),
        _field(row, "min driver", "min_driver_branch", f"R{row.min_driver_branch}" if row.min_driver_branch else None),
        _field(
            row,
            "last driver",
            "last_driver_branch",
            f"R{row.last_driver_branch}" if row.last_driver_branch else "current",
        ),
        _field(row, "tensor cores", "tensor_cores", ", ".join(row.tensor_cores) or "none"),
    ] + _provenance(row)


def ngc_list(t: Table) -> list[str]:
    return [f"{r.tag}  torch {r.torch:<22} CUDA {r.cuda:<7} driver R{r.min_driver}+{mark(r)}" for r in t.ngc_releases]


def ngc_lines(row: NgcRelease) -> list[str]:
    return [
        f"{row.image}{mark(row)}",
        _field(row, "torch", "torch"),
        _field(row, "CUDA", "cuda"),
        _field(row, "Ubuntu", "ubuntu"),
        _field(row, "Python", "python"),
        _field(row, "min driver", "min_driver", f"R{row.min_driver} or later"),
        _field(
            row,
            "forward compat",
            "forward_compat_branches",
            ", ".join(f"{b}+" for b in row.forward_compat_branches) + " (data-center GPUs only)"
            if row.forward_compat_branches
            else None,
        ),
    ] + _provenance(row)


def distro_list(t: Table) -> list[str]:
    return [
        f"{d.id + ' ' + d.version:<20} {d.repo_dir:<12} CUDA {d.cuda_lines[0]}-{d.cuda_lines[-1]}{mark(d)}"
        for d in t.distros
    ]


def distro_lines(row: Distro) -> list[str]:
    return [
        f"{row.id} {row.version}: {row.repo_url()}{mark(row)}",
        _field(row, "family", "family", f"{row.family} ({row.package_manager})"),
        _field(row, "CUDA lines", "cuda_lines", ", ".join(row.cuda_lines)),
        _field(
            row,
            "toolkit package",
            "toolkit_package",
            f"{row.toolkit_package} (e.g. {row.toolkit_package_for(row.cuda_lines[-1])})",
        ),
        _field(row, "driver packages", "driver_packages", ", ".join(row.driver_packages)),
        *(
            [_field(row, "distro packages", "distro_driver_packages", ", ".join(row.distro_driver_packages))]
            if row.distro_driver_packages
            else []
        ),
    ] + _provenance(row)


def variant_list(t: Table) -> list[str]:
    return [
        f"index: {t.index_base}",
        *[
            f"  {v.name:<10} {v.kind:<5} "
            f"{('CUDA ' + v.cuda + '  driver >= ' + str(v.min_driver_linux)) if v.cuda else ''}"
            f"{mark(v)}"
            for v in t.variants
        ],
        "mirrors:",
        *[f"  {m.url} ({m.kind}){mark(m)}: {m.name}" for m in t.mirrors],
    ]


def variant_lines(row: Variant, releases: list[str]) -> list[str]:
    out = [f"{row.name} ({row.kind}){mark(row)}", _field(row, "index", "index_url")]
    if row.cuda:
        out.append(_field(row, "CUDA", "cuda"))
        out.append(_field(row, "driver (Linux)", "min_driver_linux", f">= {row.min_driver_linux} (CUDA {row.cuda} GA)"))
    out.append(f"  {'torch:':<19}{', '.join(releases) or '-'}")
    return out + _provenance(row)

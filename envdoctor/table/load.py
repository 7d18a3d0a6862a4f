"""Turn the TOML files of ``data/`` into rows, checking each row on its own.

Cross-file checks (driver floors rise, every variant has an index, every arch is known) live in
:mod:`envdoctor.table.validate`.
"""

from __future__ import annotations

import re
from typing import Any, get_args

from envdoctor.table.rows import (
    VARIANT_NAME,
    Architecture,
    ChipFamily,
    CondaStory,
    CudaKind,
    CudaRelease,
    Designation,
    Distro,
    DistroFamily,
    DriverBranch,
    GpuModel,
    GpuSeries,
    KernelModules,
    MinorCompat,
    Mirror,
    MirrorKind,
    NgcRelease,
    PackageManager,
    TorchPatch,
    TorchRelease,
    TorchVariant,
    Variant,
    VariantKind,
)
from envdoctor.table.schema import (
    Doc,
    TableError,
    Where,
    check_top,
    check_unconfirmed_fields,
    fields,
    load_rows,
    make_row,
    one_of,
    rows,
    spec_of,
    version,
    versions,
)

_CC = re.compile(r"^\d{1,2}\.\d$")
_PCI = re.compile(r"^0x[0-9a-f]{4}$")
_PYTHON = re.compile(r"^3\.\d{1,2}t?$")
_GLIBC = re.compile(r"^2\.\d{1,2}$")
_SERIES = re.compile(r"^(gtx|rtx) (\d{2}|\d{4})( [a-z]+)?$")
_PRECISIONS = ("fp64", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")


def _cc(where: Where, v: dict[str, Any], name: str = "cc", example: str = "8.6") -> None:
    if v[name] is not None and not _CC.match(v[name]):
        raise where.fail(f"field {name!r}: {v[name]!r} is not a compute capability like {example}")


def _cuda_release(where: Where, v: dict[str, Any]) -> None:
    versions("version", "min_driver_linux", "min_driver_windows")(where, v)
    one_of(where, "kind", v["kind"], get_args(CudaKind))
    v["label"] = v["label"] or v["version"]


def _branch(where: Where, v: dict[str, Any]) -> None:
    version(where, "branch", v["branch"])
    one_of(where, "designation", v["designation"], get_args(Designation))


def load_cuda(doc: Doc) -> tuple[tuple[CudaRelease, ...], tuple[MinorCompat, ...], tuple[DriverBranch, ...]]:
    check_top(doc, ("release", "minor_compat", "branch"))
    return (
        load_rows(doc, "release", "version", CudaRelease, _cuda_release, loose=("label",)),
        load_rows(
            doc,
            "minor_compat",
            "major",
            MinorCompat,
            versions("min_driver_linux", "min_driver_windows", "below_driver"),
        ),
        load_rows(doc, "branch", "branch", DriverBranch, _branch),
    )


def _architecture(where: Where, v: dict[str, Any]) -> None:
    _cc(where, v)
    versions("first_cuda", "dropped_cuda", "min_driver_branch", "last_driver_branch")(where, v)
    bad = [p for p in v["tensor_cores"] if p not in _PRECISIONS]
    if bad:
        raise where.fail(f"field 'tensor_cores': unknown precision {bad[0]!r} (known: {', '.join(_PRECISIONS)})")
    one_of(where, "kernel_modules", v["kernel_modules"], get_args(KernelModules))
    major, minor = v["cc"].split(".")
    v["sm"] = f"sm_{major}{minor}"


def load_architectures(doc: Doc) -> tuple[Architecture, ...]:
    check_top(doc, ("architecture",))
    return load_rows(
        doc, "architecture", "cc", Architecture, _architecture, derived=("sm",), strict=("kernel_modules_source",)
    )


def _gpu(where: Where, v: dict[str, Any]) -> None:
    _cc(where, v)
    if v["datacenter"] and not v["datacenter_source"]:
        raise where.fail(
            "field 'datacenter' is true but 'datacenter_source' is missing "
            "(where NVIDIA lists the model as a data-center GPU)"
        )
    for pid in v["pci_ids"]:
        if not _PCI.match(pid):
            raise where.fail(f"field 'pci_ids': {pid!r} is not a device id like 0x2335")


def _series(where: Where, v: dict[str, Any]) -> None:
    if not _SERIES.match(v["match"]):
        raise where.fail(
            f'field \'match\': {v["match"]!r} is not a GeForce series like "rtx 40" or a model like "rtx 2050"'
        )
    _cc(where, v)


def load_gpus(doc: Doc) -> tuple[tuple[GpuModel, ...], tuple[ChipFamily, ...], tuple[GpuSeries, ...]]:
    check_top(doc, ("gpu", "family", "series"))
    return (
        load_rows(doc, "gpu", "name", GpuModel, _gpu),
        load_rows(doc, "family", "chip", ChipFamily, _cc),
        load_rows(doc, "series", "match", GpuSeries, _series),
    )


def _torch_variant(where: Where, raw: dict, cuda_of: dict[str, Any]) -> TorchVariant:
    v = fields(where, raw, spec_of(TorchVariant, derived=("cuda",), loose=("arch_list",), keep=("source", "checked")))
    if not VARIANT_NAME.match(v["name"]):
        raise where.fail(f"variant {v['name']!r} is not a variant name like cu128, cpu, rocm6.3, xpu")
    version(where, "glibc", v["glibc"])
    v["cuda"] = cuda_of.get(v["name"])
    variant: TorchVariant = make_row(TorchVariant, where, v)
    return variant


def load_torch(doc: Doc, cuda_of: dict[str, Any]) -> tuple[TorchRelease, ...]:
    check_top(doc, ("release",))
    out = []
    for where, raw in rows(doc, "release", "version"):
        v = fields(
            where,
            raw,
            dict(
                spec_of(TorchRelease, derived=("variants", "torchvision", "torchaudio"), loose=("pytorch_cuda",)),
                variant="tables",
            ),
        )
        rv = version(where, "version", v["version"])
        version(where, "glibc", v["glibc"])
        for py in v["pythons"]:
            if not _PYTHON.match(py):
                raise where.fail(f"field 'pythons': {py!r} is not a Python version like 3.12 or 3.13t")
        for name in ("pytorch_cuda", "conda_cudatoolkit"):
            for x in v[name]:
                version(where, name, x)
        one_of(where, "conda", v["conda"], get_args(CondaStory))
        patches = []
        for i, p in enumerate(v.pop("patches")):
            pw = Where(where.label, "release", f"{where.row} patch #{i + 1}")
            pv = fields(pw, p, spec_of(TorchPatch), common=False)
            for name in ("torchvision", "torchaudio"):
                version(pw, name, pv[name])
            pver = version(pw, "version", pv["version"])
            if pver is None or rv is None or pver.release[:2] != rv.release[:2]:
                raise pw.fail(f"field 'version': {pv['version']} is not a patch of {v['version']}")
            patches.append(TorchPatch(pv["version"], pv["torchvision"], pv["torchaudio"]))
        if not patches:
            raise where.fail("field 'patches' must list at least the first release")
        variants = []
        for raw_v in v.pop("variant"):
            vw = Where(where.label, "release.variant", f"{where.row} {raw_v.get('name', '?')}")
            variants.append(_torch_variant(vw, raw_v, cuda_of))
        v.update(
            patches=tuple(patches),
            variants=tuple(variants),
            torchvision=patches[0].torchvision,
            torchaudio=patches[0].torchaudio,
        )
        out.append(make_row(TorchRelease, where, v))
    return tuple(out)


def load_indexes(doc: Doc) -> tuple[str, tuple[dict[str, Any], ...], tuple[Mirror, ...]]:
    """The index base URL, the variant rows (as dicts: their driver floor is filled in later) and mirrors."""
    check_top(doc, ("base", "source", "checked", "note", "variant", "mirror"))
    base = doc.data.get("base")
    if not isinstance(base, str) or not base.startswith("https://"):
        raise TableError(f"{doc.label}: 'base' must be an https URL, not {base!r}")
    variants: list[dict[str, Any]] = []
    for where, raw in rows(doc, "variant", "name"):
        v = fields(where, raw, spec_of(Variant))
        if not VARIANT_NAME.match(v["name"]):
            raise where.fail(f"field 'name': {v['name']!r} is not a variant name like cu128, cpu, rocm6.3, xpu")
        one_of(where, "kind", v["kind"], get_args(VariantKind))
        if v["kind"] == "cuda" and not v["cuda"]:
            raise where.fail("missing field 'cuda' (a cuda variant needs its CUDA version)")
        for name in ("cuda", "min_driver_linux", "min_driver_windows"):
            version(where, name, v[name])
        if not v["index_url"].startswith("https://"):
            raise where.fail(f"field 'index_url': {v['index_url']!r} is not an https URL")
        check_unconfirmed_fields(where, v["unconfirmed_fields"], Variant)
        variants.append(dict(v, _where=where))
    mirrors = load_rows(
        doc, "mirror", "name", Mirror, lambda where, v: one_of(where, "kind", v["kind"], get_args(MirrorKind))
    )
    return base, tuple(variants), mirrors


def _ngc(where: Where, v: dict[str, Any]) -> None:
    if not re.match(r"^\d{2}\.\d{2}$", v["tag"]):
        raise where.fail(f"field 'tag': {v['tag']!r} is not a release tag like 25.01")
    _cc(where, v, "min_cc", "7.5")
    versions("cuda", "torch", "min_driver")(where, v)
    for b in v["forward_compat_branches"]:
        version(where, "forward_compat_branches", b)


def load_ngc(doc: Doc) -> tuple[NgcRelease, ...]:
    check_top(doc, ("release",))
    return load_rows(doc, "release", "tag", NgcRelease, _ngc)


#: Facts a [[family]] row gives its distributions and a [[distro]] row may give for itself, each
#: with its own ``<name>_source`` and ``<name>_checked`` (and, for dkms_mok, the enrol command).
_OWN_SOURCED: dict[str, tuple[str, ...]] = {"kernel_headers": (), "dkms_mok": ("dkms_mok_enroll",)}
_SOURCED_SPEC: dict[str, str] = {
    k: "str?" for name, extra in _OWN_SOURCED.items() for k in (name, f"{name}_source", f"{name}_checked", *extra)
}
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def _check_sourced(where: Where, v: dict[str, Any]) -> None:
    """A sourced fact comes with where it was read and when; a MOK certificate is an absolute path."""
    for name, extra in _OWN_SOURCED.items():
        given = [k for k in (name, *extra) if v[k] is not None]
        if not given:
            continue
        if v[name] is None:
            raise where.fail(f"field {given[0]!r} is given but {name!r} is missing")
        if not v[f"{name}_source"] or not v[f"{name}_checked"]:
            raise where.fail(f"field {name!r} needs '{name}_source' and '{name}_checked' (where and when it was read)")
        if not _DATE.match(v[f"{name}_checked"]):
            raise where.fail(f"field '{name}_checked': {v[f'{name}_checked']!r} is not a date like 2026-12-01")
    if v["dkms_mok"] is not None and not v["dkms_mok"].startswith("/"):
        raise where.fail(f"field 'dkms_mok': {v['dkms_mok']!r} is not an absolute path")


def _inherit(v: dict[str, Any], fam: dict[str, Any]) -> None:
    """The family's sourced facts for a distribution row that gives none of its own (with the
    family's doubt about them: its ``unconfirmed_fields`` among them)."""
    for name, extra in _OWN_SOURCED.items():
        if v[name] is not None or fam[name] is None:
            continue
        for k in (name, f"{name}_source", f"{name}_checked", *extra):
            v[k] = fam[k]
        if name in fam["unconfirmed_fields"] and name not in v["unconfirmed_fields"]:
            v["unconfirmed_fields"] = (*v["unconfirmed_fields"], name)


def load_distros(doc: Doc) -> tuple[Distro, ...]:
    check_top(doc, ("family", "distro"))
    families: dict[str, dict[str, Any]] = {}
    for where, raw in rows(doc, "family", "name"):
        v = fields(
            where,
            raw,
            {
                "name": "str",
                "package_manager": "str",
                "toolkit_package": "str",
                "driver_packages": "strs",
                "keyring_package": "str?",
                "keyring_url": "str?",
                **_SOURCED_SPEC,
            },
        )
        _check_sourced(where, v)
        bad = [n for n in v["unconfirmed_fields"] if n not in _OWN_SOURCED]
        if bad:
            raise where.fail(f"field 'unconfirmed_fields': {bad[0]!r} is not a field a family gives its rows")
        one_of(where, "package_manager", v["package_manager"], get_args(PackageManager))
        if "{major}" not in v["toolkit_package"] or "{minor}" not in v["toolkit_package"]:
            raise where.fail("field 'toolkit_package' must contain {major} and {minor}")
        if v["name"] in families:
            raise where.fail(f"duplicate family {v['name']!r}")
        families[v["name"]] = v
    out = []
    for where, raw in rows(doc, "distro", "repo_dir"):
        v = fields(
            where,
            raw,
            {
                "id": "str",
                "version": "str",
                "family": "str",
                "repo_dir": "str",
                "cuda_lines": "strs",
                "also_ids": "strs?",
                "distro_driver_packages": "strs?",
                "glibc": "str?",
                "glibc_source": "str?",
                **_SOURCED_SPEC,
            },
        )
        _check_sourced(where, v)
        if v["glibc"] is not None and not _GLIBC.match(v["glibc"]):
            raise where.fail(f"field 'glibc': {v['glibc']!r} is not a glibc version like 2.35")
        if v["glibc"] is not None and not v["glibc_source"]:
            raise where.fail("field 'glibc' is given but 'glibc_source' is missing (where the version was read)")
        one_of(where, "family", v["family"], get_args(DistroFamily))
        fam = families.get(v["family"])
        if fam is None:
            raise where.fail(f"field 'family': {v['family']!r} is not a [[family]] of this file")
        for line in v["cuda_lines"]:
            version(where, "cuda_lines", line)
        v.update(
            toolkit_package=fam["toolkit_package"],
            driver_packages=fam["driver_packages"],
            package_manager=fam["package_manager"],
            keyring_package=fam["keyring_package"],
        )
        _inherit(v, fam)
        v["unconfirmed"] = v["unconfirmed"] or fam["unconfirmed"]
        out.append(make_row(Distro, where, v))
    return tuple(out)

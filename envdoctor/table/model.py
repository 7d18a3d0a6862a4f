"""The :class:`Table`: all rows of ``data/``, sorted, with the lookups rules and the advisor use."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

from envdoctor.parse import major as _major
from envdoctor.parse import version as _version
from envdoctor.table import load, validate
from envdoctor.table.names import norm_gpu_name
from envdoctor.table.rows import (
    CUDA_VARIANT,
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
    TorchRelease,
    Variant,
)
from envdoctor.table.schema import Doc, parse_toml, parse_version
from envdoctor.table.source import FILES, DataDir, read_files

#: How GeForce model names are written (the series and their compute capabilities are rows of
#: ``gpus.toml``): two series digits, then a tier 10-90, then an optional variant word. "RTX 2000
#: Ada", "RTX 4000", "RTX A4000" and "RTX PRO 6000", workstation boards, never match.
_GEFORCE_NAME = re.compile(
    r"^(gtx|rtx) ?(\d{2})([1-9]0)"
    r"(?: (?:ti|super|d|ti super|mobile|laptop gpu|max q|\d+gb)\b.*)?$"
)


def norm_pci(device_id: str) -> Optional[int]:
    """``"0x2335"``, ``"2335"``, ``"10de:2335"`` or nvidia-smi's ``"0x233510DE"`` -> ``0x2335``."""
    s = device_id.strip().lower()
    if ":" in s:
        vendor, _, s = s.partition(":")
        if vendor.replace("0x", "") != "10de":
            return None
    s = s[2:] if s.startswith("0x") else s
    if len(s) == 8 and s.endswith("10de"):
        s = s[:4]
    if not re.fullmatch(r"[0-9a-f]{1,4}", s):
        return None
    return int(s, 16)


def norm_cc(cc: Union[str, tuple[int, int]]) -> Optional[str]:
    """``"8.6"``, ``(8, 6)``, ``"sm_86"``, ``"sm_90a"``, ``"compute_120"`` or ``"86"`` -> ``"8.6"``."""
    if isinstance(cc, tuple):
        return f"{cc[0]}.{cc[1]}"
    s = cc.strip().lower()
    parsed = validate.parse_arch(s)
    if parsed:
        return f"{parsed[1][0]}.{parsed[1][1]}"
    if re.fullmatch(r"\d{1,2}\.\d", s):
        return s
    if re.fullmatch(r"\d{2,3}", s):
        return f"{s[:-1]}.{s[-1]}"
    return None


@dataclass(frozen=True)
class Table:
    """The compatibility table. Build it with :func:`envdoctor.table.load_table`."""

    directory: DataDir  # where the files were read: a Path, or a folder in a zip
    cuda_releases: tuple[CudaRelease, ...]
    minor_compats: tuple[MinorCompat, ...]
    driver_branches: tuple[DriverBranch, ...]
    architectures: tuple[Architecture, ...]
    gpus: tuple[GpuModel, ...]
    chip_families: tuple[ChipFamily, ...]
    gpu_series: tuple[GpuSeries, ...]
    torch_releases: tuple[TorchRelease, ...]
    variants: tuple[Variant, ...]
    index_base: str
    mirrors: tuple[Mirror, ...]
    ngc_releases: tuple[NgcRelease, ...]
    distros: tuple[Distro, ...]

    # --- CUDA and drivers -------------------------------------------------------------------

    def cuda(self, version: str) -> Optional[CudaRelease]:
        """``t.cuda("12.8")``: the 12.8 GA row; ``t.cuda("12.8.1")``: that update; None if unknown."""
        v = _version(version)
        if v is None or len(v.release) < 2:
            return None
        if len(v.release) >= 3:
            return next((r for r in self.cuda_releases if parse_version(r.version) == v), None)
        minor = f"{v.release[0]}.{v.release[1]}"
        rows = [r for r in self.cuda_releases if r.minor == minor]
        return next((r for r in rows if r.kind == "ga"), rows[0] if rows else None)

    def min_driver(self, cuda: str, os: str = "linux") -> Optional[str]:
        """``t.min_driver("12.8")`` -> ``"570.26"``; also takes a variant: ``t.min_driver("cu128")``."""
        if CUDA_VARIANT.match(cuda):
            var = self.variant(cuda)
            if var is None:
                return None
            return var.min_driver_linux if os == "linux" else var.min_driver_windows
        row = self.cuda(cuda)
        if row is None:
            return None
        return row.min_driver_linux if os == "linux" else row.min_driver_windows

    def minor_compat(self, major: Union[int, str]) -> Optional[MinorCompat]:
        """``t.minor_compat(12)``: floor 525.60.13 and what does not work under it."""
        m = _major(str(major))
        return next((c for c in self.minor_compats if c.major == m), None) if m is not None else None

    def driver_branch(self, driver_or_branch: str) -> Optional[DriverBranch]:
        """The data-center branch row of ``"535.104.05"`` or ``"535"``."""
        branch = _major(driver_or_branch)
        return next((b for b in self.driver_branches if b.branch == str(branch)), None)

    # --- architectures and GPUs -------------------------------------------------------------

    def architecture(self, cc: Union[str, tuple[int, int]]) -> Optional[Architecture]:
        """``t.architecture("8.6")`` (also ``"sm_86"``, ``(8, 6)``) -> Ampere; None if unknown."""
        key = norm_cc(cc)
        return next((a for a in self.architectures if a.cc == key), None)

    def gpu(self, name: str) -> Optional[GpuModel]:
        """``t.gpu("RTX 3090 Ti")``, ``t.gpu("NVIDIA GeForce RTX 3090 Ti")``, ``t.gpu("3090 ti")``;
        an lspci name ``"GH100 [H200 SXM 141GB]"`` is looked up by its bracketed part."""
        keys = [norm_gpu_name(name)]
        m = re.search(r"\[([^\]]+)\]", name)
        if m:
            keys.append(norm_gpu_name(m.group(1)))
        for key in keys:
            for g in self.gpus:
                if key in {norm_gpu_name(x) for x in (g.name,) + g.aliases}:
                    return g
        return None

    def cc_from_name(self, name: str) -> Optional[tuple[str, str]]:
        """The compute capability a GeForce name implies, for models the table has no row for:
        ``t.cc_from_name("GeForce GTX 1050 Ti")`` -> ``("6.1", "GTX 10xx")``, from the
        ``[[series]]`` rows of ``gpus.toml`` (a model row such as "rtx 2050", an Ampere chip in the
        RTX 20 series, wins over its series). None for anything else. The answer is inferred from
        the name, not a row of that model: callers say so."""
        key = re.sub(r"^(gtx|rtx)(?=\d)", r"\1 ", norm_gpu_name(name))
        for row in self.gpu_series:
            if row.is_model and (key == row.match or key.startswith(row.match + " ")):
                return row.cc, row.label
        m = _GEFORCE_NAME.match(key)
        if not m:
            return None
        series = f"{m.group(1)} {m.group(2)}"
        hit = next((r for r in self.gpu_series if not r.is_model and r.match == series), None)
        return (hit.cc, hit.label) if hit is not None else None

    def gpu_suggestions(self, name: str, n: int = 3) -> tuple[str, ...]:
        """Names in the table close to ``name`` (``"GTX 1800 Ti"`` -> ``("GTX 1080 Ti", ...)``),
        each as its shortest alias, for a "did you mean" hint."""
        import difflib

        shown: dict[str, str] = {}
        for g in self.gpus:
            label = min((a for a in g.aliases if not a[:1].isdigit()), key=len, default=g.name)
            for x in (g.name,) + g.aliases:
                shown.setdefault(norm_gpu_name(x), label)
        hits = difflib.get_close_matches(norm_gpu_name(name), list(shown), n=n * 3, cutoff=0.75)
        return tuple(dict.fromkeys(shown[h] for h in hits))[:n]

    def gpu_by_pci(self, device_id: str) -> Optional[GpuModel]:
        """``t.gpu_by_pci("0x2335")`` -> the H200; None for an id no model in the table has."""
        did = norm_pci(device_id)
        if did is None:
            return None
        return next((g for g in self.gpus if any(int(p, 16) == did for p in g.pci_ids)), None)

    def chip_family(self, device_id: str) -> Optional[ChipFamily]:
        did = norm_pci(device_id)
        if did is None:
            return None
        return next((f for f in self.chip_families if f.contains(did)), None)

    def arch_for_pci(self, device_id: str) -> Optional[Architecture]:
        """``t.arch_for_pci("0x2335")`` -> Hopper: from the model if known, else its chip family's range."""
        model = self.gpu_by_pci(device_id)
        if model is not None:
            return self.architecture(model.cc)
        fam = self.chip_family(device_id)
        return self.architecture(fam.cc) if fam else None

    # --- torch and the wheel index ------------------------------------------------------------

    def torch(self, version: str) -> Optional[TorchRelease]:
        """``t.torch("2.8")``, ``t.torch("2.8.0")``, ``t.torch("2.7.1")``, ``t.torch("2.11.0+cu130")``;
        an NGC build like ``"2.10.0a0+b4e4ee81d3"`` maps to its minor. None for an unknown patch."""
        v = _version(version.strip())
        if v is None:
            return None
        key = v.release[:2]
        row = next((r for r in self.torch_releases if parse_version(r.version).release[:2] == key), None)
        if row is None or len(v.release) < 3 or v.is_prerelease or v.is_devrelease:
            return row
        return row if row.patch(v.base_version) else None

    def newest_torch(self, python: Optional[str] = None, variant: Optional[str] = None) -> Optional[TorchRelease]:
        """``t.newest_torch(python="3.8")`` -> torch 2.4 (the newest with cp38 wheels).
        With ``variant="cu118"`` only releases that ship that variant count."""
        for r in reversed(self.torch_releases):
            if python is not None and python not in r.pythons:
                continue
            if variant is not None and r.variant(variant) is None:
                continue
            return r
        return None

    def variant(self, name: str) -> Optional[Variant]:
        """``t.variant("cu128")``: CUDA 12.8, its index URL and driver floor."""
        return next((v for v in self.variants if v.name == name.strip().lower()), None)

    # --- NGC and distributions ----------------------------------------------------------------

    def ngc(self, tag: str) -> Optional[NgcRelease]:
        """``t.ngc("25.01")``; also takes the image ``"nvcr.io/nvidia/pytorch:25.01-py3"``."""
        m = re.search(r"(\d{2}\.\d{2})", tag)
        return next((r for r in self.ngc_releases if m and r.tag == m.group(1)), None)

    def ngc_for_driver(self, driver: str, datacenter: bool = False) -> tuple[NgcRelease, ...]:
        """NGC releases a driver runs: its branch is at least the release's minimum, or (on a
        data-center GPU) it is one of the release's forward-compatible branches at or above the
        listed version. ``t.ngc_for_driver("535.104", datacenter=True)``."""
        d = parse_version(driver)
        out = []
        for r in self.ngc_releases:
            if d >= parse_version(r.min_driver):
                out.append(r)
            elif datacenter and any(
                d.release[0] == parse_version(b).release[0] and d >= parse_version(b) for b in r.forward_compat_branches
            ):
                out.append(r)
        return tuple(out)

    def distro(self, id: str, version: str) -> Optional[Distro]:
        """``t.distro("ubuntu", "22.04")``; ``t.distro("rocky", "9.4")`` -> the rhel9 row."""
        key, ver = id.strip().lower(), version.strip()
        for x in self.distros:
            if key != x.id and key not in x.also_ids:
                continue
            if ver == x.version or ("." not in x.version and str(_major(ver)) == x.version):
                return x
        return None


def build(directory: DataDir) -> Table:
    """Read, parse and check every file of ``directory`` (no cache: ``load_table()`` has one)."""
    return build_docs(directory, parse_docs(directory.name, read_files(directory)))


def parse_docs(dirname: str, files: Mapping[str, Optional[bytes]]) -> dict[str, dict[str, Any]]:
    """The TOML documents of the data files (``dirname`` names the folder in errors)."""
    return {name: parse_toml(f"{dirname}/{name}", files.get(name)) for name in FILES}


def build_docs(directory: DataDir, docs: Mapping[str, dict[str, Any]]) -> Table:
    """Check each row of the parsed documents and the table as a whole; the sorted Table."""
    d = directory.name

    def doc(name: str) -> Doc:
        return Doc(f"{d}/{name}", docs[name])

    cuda_releases, compat, branches = load.load_cuda(doc("cuda.toml"))
    validate.check_cuda(d, cuda_releases, compat)
    cuda_releases = tuple(sorted(cuda_releases, key=lambda r: parse_version(r.version)))
    archs = tuple(sorted(load.load_architectures(doc("architectures.toml")), key=lambda a: a.cc_tuple))
    validate.check_architectures(d, archs)
    by_cc = {a.cc: a for a in archs}
    gpus, families, series = load.load_gpus(doc("gpus.toml"))
    validate.check_gpus(d, gpus, families, series, by_cc, norm_gpu_name)
    base, raw_variants, mirrors = load.load_indexes(doc("indexes.toml"))
    ga: dict[str, CudaRelease] = {r.minor: r for r in cuda_releases if r.kind == "ga"}
    variants = []
    for raw in raw_variants:
        v = dict(raw)
        v.pop("_where")
        if v["kind"] == "cuda":
            row = ga.get(v["cuda"])
            v["min_driver_linux"] = v["min_driver_linux"] or (row.min_driver_linux if row else None)
            v["min_driver_windows"] = v["min_driver_windows"] or (row.min_driver_windows if row else None)
        variants.append(Variant(**v))
    validate.check_variants(d, variants)
    by_variant = {v.name: v for v in variants}
    torch = load.load_torch(doc("torch.toml"), {v.name: v.cuda for v in variants})
    validate.check_torch(d, torch, by_variant, by_cc)
    ngc = load.load_ngc(doc("ngc.toml"))
    validate.check_ngc(d, ngc, by_cc)
    distros = load.load_distros(doc("distros.toml"))
    validate.check_distros(d, distros, ga.keys() | {r.minor for r in cuda_releases})
    return Table(
        directory=directory,
        cuda_releases=cuda_releases,
        minor_compats=tuple(sorted(compat, key=lambda c: c.major)),
        driver_branches=tuple(sorted(branches, key=lambda b: parse_version(b.branch))),
        architectures=archs,
        gpus=gpus,
        chip_families=families,
        gpu_series=series,
        torch_releases=tuple(sorted(torch, key=lambda r: parse_version(r.version))),
        variants=tuple(variants),
        index_base=base,
        mirrors=mirrors,
        ngc_releases=tuple(sorted(ngc, key=lambda r: parse_version(r.tag))),
        distros=distros,
    )

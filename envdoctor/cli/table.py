"""``envdoctor table``: what the bundled compatibility table says, with the source of each fact.

    $ envdoctor table cuda 12.8
    $ envdoctor table torch 2.7 --json
    $ envdoctor table gpu "RTX 3090 Ti"
    $ envdoctor table ngc 25.01
    $ envdoctor table arch 8.6 | distro ubuntu 22.04 | variant cu128

Without a key each subcommand lists what the table holds. Unconfirmed facts are marked
"[unconfirmed]". Exit status: 0 found, 1 no such row, 2 usage error, 3 the table is broken.
The JSON document is ``{"version": "1", "kind": ..., "key": ..., "result": ...}``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any, Callable, List, Optional, Sequence

import click

from envdoctor.cli.common import EXIT_ERRORS, EXIT_INTERNAL
from envdoctor.parse import version_key

JSON_VERSION = "1"
UNCONFIRMED = "[unconfirmed]"


def _table() -> Any:
    from envdoctor.table import TableError, load_table

    try:
        return load_table()
    except TableError as exc:
        click.echo(f"envdoctor: the compatibility table is broken: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)


def _json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON document.")(f)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for extra in ("sm", "minor", "image"):
            if hasattr(type(value), extra) and isinstance(getattr(type(value), extra), property):
                out[extra] = getattr(value, extra)
        return out
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _emit(kind: str, key: Optional[str], result: Any, lines: Callable[[], List[str]], as_json: bool) -> None:
    if as_json:
        doc = {"version": JSON_VERSION, "kind": kind, "key": key, "result": _plain(result)}
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        click.echo("\n".join(lines()))


def _missing(kind: str, key: str, known: Sequence[str]) -> None:
    shown = ", ".join(known[:24]) + (", ..." if len(known) > 24 else "")
    click.echo(f"envdoctor: no {kind} {key!r} in the table (known: {shown})", err=True)
    sys.exit(EXIT_ERRORS)


def _mark(row: Any, field: Optional[str] = None) -> str:
    return f" {UNCONFIRMED}" if not row.confirmed(field) else ""


def _field_mark(row: Any, field: str) -> str:
    """``[unconfirmed]`` after a field the row doubts on its own (``unconfirmed_fields``); a row
    doubted as a whole carries the mark on its head line already."""
    return f" {UNCONFIRMED}" if row.confirmed() and not row.confirmed(field) else ""


def _provenance(row: Any, indent: str = "  ") -> List[str]:
    out = [f"{indent}source:  {row.source}", f"{indent}checked: {row.checked}"]
    if getattr(row, "unconfirmed_fields", ()):
        out.append(f"{indent}unconfirmed fields: {', '.join(row.unconfirmed_fields)}")
    if getattr(row, "note", None):
        out.append(f"{indent}note:    {row.note}")
    return out


def _field(row: Any, label: str, name: str, text: Optional[str] = None) -> str:
    value = text if text is not None else getattr(row, name)
    if value in (None, "", ()):
        value = "-"
    head = label + ":"
    return f"  {head:<19}{value}{_mark(row, name) if row.confirmed() else ''}"


@click.group("table", invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--stale", is_flag=True,
              help="Compare the bundled torch releases with the live wheel index; list newer ones.")
@click.option("--variant", default="cpu", show_default=True, help="Index variant read by --stale.")
@click.option("--index-url", metavar="URL", default=None, help="Wheel index base (default: the official one).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True)
@click.pass_context
def table(ctx: click.Context, stale: bool, variant: str, index_url: Optional[str], timeout: float) -> None:
    """Look up the bundled compatibility table (each fact with its source)."""
    if stale:
        _stale(variant, index_url, timeout)
    elif ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _stale(variant: str, index_url: Optional[str], timeout: float) -> None:
    """Exit 0 when the table is current, 1 when the index holds newer torch releases, 3 unreadable."""
    from envdoctor.redact import mask_url
    from envdoctor.wheels import IndexClient, IndexUnavailable
    from envdoctor.wheels.report import upstream_newer

    t = _table()
    client = IndexClient(base_url=index_url, timeout=timeout, refresh=True)
    newest = t.torch_releases[-1].version if t.torch_releases else "none"
    try:
        newer = upstream_newer(t, client, variant)
    except IndexUnavailable as exc:
        click.echo(f"envdoctor: cannot tell whether the table is stale: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)
    where = mask_url(f"{client.base_url.rstrip('/')}/{variant}/torch/")
    if not newer:
        click.echo(f"table is current: newest bundled torch {newest}; {where} has nothing newer")
        return
    click.echo(f"table is stale: newest bundled torch {newest}; {where} also has {', '.join(newer)}")
    click.echo("  add one [[torch]] row per release to data/torch.toml (docs/data.md says how)")
    sys.exit(EXIT_ERRORS)


@table.command("cuda")
@click.argument("version", required=False)
@_json_option
def cuda_cmd(version: Optional[str], as_json: bool) -> None:
    """A CUDA toolkit release and the driver it needs: envdoctor table cuda 12.8"""
    t = _table()
    if version is None:
        _emit("cuda", None, t.cuda_releases, lambda: [
            f"CUDA {r.version:<8} {r.label:<24} Linux >= {r.min_driver_linux:<12} "
            f"Windows >= {r.min_driver_windows or 'n/a'}{_mark(r)}" for r in t.cuda_releases], as_json)
        return
    row = t.cuda(version)
    if row is None:
        _missing("CUDA release", version, sorted({r.minor for r in t.cuda_releases}, key=version_key))
    mc = t.minor_compat(row.major)

    def lines() -> List[str]:
        out = [f"CUDA {row.version} ({row.label}){_mark(row)}",
               _field(row, "driver (Linux)", "min_driver_linux", f">= {row.min_driver_linux}"),
               _field(row, "driver (Windows)", "min_driver_windows",
                      f">= {row.min_driver_windows}" if row.min_driver_windows else "n/a")]
        out += _provenance(row)
        if mc is not None:
            out.append(f"minor-version compatibility for CUDA {mc.major}.x: driver >= {mc.min_driver_linux} "
                       f"(Windows {mc.min_driver_windows or 'n/a'}){_mark(mc)}")
            out += [f"  - {x}" for x in mc.limitations]
            out += _provenance(mc)
        return out

    _emit("cuda", version, {"release": row, "minor_compat": mc}, lines, as_json)


@table.command("torch")
@click.argument("version", required=False)
@_json_option
def torch_cmd(version: Optional[str], as_json: bool) -> None:
    """A torch release: Pythons, variants and their arch lists: envdoctor table torch 2.7"""
    t = _table()
    if version is None:
        _emit("torch", None, t.torch_releases, lambda: [
            f"torch {r.minor:<5} Python {r.pythons[0]}-{[p for p in r.pythons if not p.endswith('t')][-1]:<5} "
            f"PyPI {r.pypi_default:<6} variants {' '.join(v.name for v in r.variants)}{_mark(r)}"
            for r in t.torch_releases], as_json)
        return
    row = t.torch(version)
    if row is None:
        _missing("torch release", version, [r.minor for r in t.torch_releases])

    def lines() -> List[str]:
        conda = row.conda
        if row.pytorch_cuda:
            conda += f" (pytorch-cuda={'/'.join(row.pytorch_cuda)} -c pytorch -c nvidia)"
        elif row.conda_cudatoolkit:
            conda += f" (cudatoolkit={'/'.join(row.conda_cudatoolkit)} -c pytorch)"
        elif row.conda == "conda-forge":
            conda += " (conda install -c conda-forge pytorch cuda-version=X.Y; the pytorch channel ended with 2.5)"
        out = [f"torch {row.version} (patches {', '.join(p.version for p in row.patches)}"
               f"{'; released ' + row.released if row.released else ''}){_mark(row)}",
               _field(row, "Python", "pythons", ", ".join(row.pythons)),
               _field(row, "PyPI default", "pypi_default"),
               _field(row, "platform tag", "manylinux", f"{row.manylinux} (glibc >= {row.glibc})"),
               _field(row, "torchvision", "torchvision", ", ".join(f"{p.torchvision} ({p.version})" for p in row.patches)),
               _field(row, "torchaudio", "torchaudio",
                      ", ".join(f"{p.torchaudio} ({p.version})" for p in row.patches if p.torchaudio) or "none released"),
               _field(row, "conda", "conda", conda),
               "  variants:"]
        for v in row.variants:
            idx = t.variant(v.name)
            head = f"    {v.name:<10}"
            if idx is not None and idx.cuda:
                head += f" CUDA {idx.cuda:<5} driver >= {idx.min_driver_linux}"
            out.append(head + f"  [{', '.join(v.platforms)}]{_mark(v)}")
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

    _emit("torch", version, row, lines, as_json)


@table.command("gpu")
@click.argument("name", required=False)
@_json_option
def gpu_cmd(name: Optional[str], as_json: bool) -> None:
    """A GPU model by name, alias or PCI id: envdoctor table gpu "RTX 3090 Ti" """
    t = _table()
    if name is None:
        _emit("gpu", None, t.gpus, lambda: [
            f"{g.name:<52} cc {g.cc:<5} {', '.join(g.pci_ids)}{_mark(g)}" for g in t.gpus], as_json)
        return
    row = t.gpu(name) or t.gpu_by_pci(name)
    if row is None:
        arch = t.arch_for_pci(name)
        fam = t.chip_family(name)
        if arch is not None and fam is not None:
            _emit("gpu", name, {"chip_family": fam, "architecture": arch}, lambda: [
                f"PCI device {name}: no model in the table; chip family {fam.chip} -> cc {fam.cc} ({arch.name})",
                *_provenance(fam)], as_json)
            return
        _missing("GPU", name, [g.name for g in t.gpus])
    arch = t.architecture(row.cc)

    def tf(field_name: str, unit: str = "TFLOP/s") -> str:
        value = getattr(row, field_name)
        return f"{value:g} {unit}" if value is not None else "-"

    def lines() -> List[str]:
        out = [f"{row.name}{_mark(row)}",
               _field(row, "aliases", "aliases", ", ".join(row.aliases)),
               _field(row, "PCI ids", "pci_ids", ", ".join(row.pci_ids)),
               _field(row, "compute cap.", "cc", f"{row.cc} ({arch.name if arch else '?'})"),
               _field(row, "memory", "memory_gib", tf("memory_gib", "GB")),
               _field(row, "bandwidth", "bandwidth_gbs", tf("bandwidth_gbs", "GB/s")),
               _field(row, "FP32", "fp32_tflops", tf("fp32_tflops")),
               _field(row, "TF32 tensor", "tf32_tflops", tf("tf32_tflops")),
               _field(row, "FP16 tensor", "fp16_tflops", tf("fp16_tflops") + " (FP32 accumulate)"),
               _field(row, "BF16 tensor", "bf16_tflops", tf("bf16_tflops"))]
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

    _emit("gpu", name, row, lines, as_json)


@table.command("arch")
@click.argument("cc", required=False)
@_json_option
def arch_cmd(cc: Optional[str], as_json: bool) -> None:
    """A compute capability: envdoctor table arch 8.6 (or sm_86)"""
    t = _table()
    if cc is None:
        _emit("arch", None, t.architectures, lambda: [
            f"{a.cc:<5} {a.sm:<7} {a.name:<16} CUDA {a.first_cuda}-{a.dropped_cuda or 'current'}{_mark(a)}"
            for a in t.architectures], as_json)
        return
    row = t.architecture(cc)
    if row is None:
        _missing("architecture", cc, [a.cc for a in t.architectures])

    def lines() -> List[str]:
        return [f"compute capability {row.cc} ({row.sm}): {row.name}{' (Jetson)' if row.jetson else ''}{_mark(row)}",
                _field(row, "first CUDA", "first_cuda"),
                _field(row, "dropped in CUDA", "dropped_cuda", row.dropped_cuda or "not dropped"),
                _field(row, "min driver", "min_driver_branch", f"R{row.min_driver_branch}" if row.min_driver_branch else None),
                _field(row, "last driver", "last_driver_branch", f"R{row.last_driver_branch}" if row.last_driver_branch else "current"),
                _field(row, "tensor cores", "tensor_cores", ", ".join(row.tensor_cores) or "none")] + _provenance(row)

    _emit("arch", cc, row, lines, as_json)


@table.command("ngc")
@click.argument("tag", required=False)
@_json_option
def ngc_cmd(tag: Optional[str], as_json: bool) -> None:
    """An NGC PyTorch container: envdoctor table ngc 25.01"""
    t = _table()
    if tag is None:
        _emit("ngc", None, t.ngc_releases, lambda: [
            f"{r.tag}  torch {r.torch:<22} CUDA {r.cuda:<7} driver R{r.min_driver}+{_mark(r)}" for r in t.ngc_releases],
            as_json)
        return
    row = t.ngc(tag)
    if row is None:
        _missing("NGC release", tag, [r.tag for r in t.ngc_releases])

    def lines() -> List[str]:
        return [f"{row.image}{_mark(row)}",
                _field(row, "torch", "torch"),
                _field(row, "CUDA", "cuda"),
                _field(row, "Ubuntu", "ubuntu"),
                _field(row, "Python", "python"),
                _field(row, "min driver", "min_driver", f"R{row.min_driver} or later"),
                _field(row, "forward compat", "forward_compat_branches",
                       ", ".join(f"{b}+" for b in row.forward_compat_branches) + " (data-center GPUs only)"
                       if row.forward_compat_branches else None)] + _provenance(row)

    _emit("ngc", tag, row, lines, as_json)


@table.command("distro")
@click.argument("id", required=False)
@click.argument("version", required=False)
@_json_option
def distro_cmd(id: Optional[str], version: Optional[str], as_json: bool) -> None:
    """A distribution NVIDIA's CUDA repository serves: envdoctor table distro ubuntu 22.04"""
    t = _table()
    if id is None:
        _emit("distro", None, t.distros, lambda: [
            f"{d.id + ' ' + d.version:<20} {d.repo_dir:<12} CUDA {d.cuda_lines[0]}-{d.cuda_lines[-1]}{_mark(d)}"
            for d in t.distros], as_json)
        return
    if version is None:
        raise click.UsageError("give the version too: envdoctor table distro ubuntu 22.04")
    row = t.distro(id, version)
    if row is None:
        _missing("distribution", f"{id} {version}", [f"{d.id} {d.version}" for d in t.distros])

    def lines() -> List[str]:
        return [f"{row.id} {row.version}: {row.repo_url()}{_mark(row)}",
                _field(row, "family", "family", f"{row.family} ({row.package_manager})"),
                _field(row, "CUDA lines", "cuda_lines", ", ".join(row.cuda_lines)),
                _field(row, "toolkit package", "toolkit_package", f"{row.toolkit_package} (e.g. {row.toolkit_package_for(row.cuda_lines[-1])})"),
                _field(row, "driver packages", "driver_packages", ", ".join(row.driver_packages)),
                *([_field(row, "distro packages", "distro_driver_packages", ", ".join(row.distro_driver_packages))]
                  if row.distro_driver_packages else [])] + _provenance(row)

    _emit("distro", f"{id} {version}", row, lines, as_json)


@table.command("variant")
@click.argument("name", required=False)
@_json_option
def variant_cmd(name: Optional[str], as_json: bool) -> None:
    """A wheel-index variant: envdoctor table variant cu128"""
    t = _table()
    if name is None:
        _emit("variant", None, {"base": t.index_base, "variants": t.variants, "mirrors": t.mirrors}, lambda: [
            f"index: {t.index_base}",
            *[f"  {v.name:<10} {v.kind:<5} {('CUDA ' + v.cuda + '  driver >= ' + str(v.min_driver_linux)) if v.cuda else ''}"
              f"{_mark(v)}" for v in t.variants],
            "mirrors:",
            *[f"  {m.url} ({m.kind}){_mark(m)}: {m.name}" for m in t.mirrors]], as_json)
        return
    row = t.variant(name)
    if row is None:
        _missing("variant", name, [v.name for v in t.variants])
    releases = [r.minor for r in t.torch_releases if r.variant(row.name)]

    def lines() -> List[str]:
        out = [f"{row.name} ({row.kind}){_mark(row)}",
               _field(row, "index", "index_url")]
        if row.cuda:
            out.append(_field(row, "CUDA", "cuda"))
            out.append(_field(row, "driver (Linux)", "min_driver_linux", f">= {row.min_driver_linux} (CUDA {row.cuda} GA)"))
        out.append(f"  {'torch:':<19}{', '.join(releases) or '-'}")
        return out + _provenance(row)

    _emit("variant", name, {"variant": row, "torch": releases}, lines, as_json)

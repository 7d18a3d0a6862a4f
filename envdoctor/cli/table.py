"""``envdoctor table``: what the bundled compatibility table says, with the source of each fact.

    $ envdoctor table cuda 12.8
    $ envdoctor table torch 2.7 --json
    $ envdoctor table gpu "RTX 3090 Ti"
    $ envdoctor table ngc 25.01
    $ envdoctor table arch 8.6 | distro ubuntu 22.04 | variant cu128

Without a key each subcommand lists what the table holds. Unconfirmed facts are marked
"[unconfirmed]". Exit status: 0 found, 1 no such row, 2 usage error (``--stale``: or the index could
not be read), 3 the bundled table is broken (envdoctor's own bug).
The JSON document is ``{"schema": "envdoctor.table/1", "version": "1", "kind": ..., "key": ...,
"result": ...}`` (``envdoctor/schemas/table-1.json``); the lines are ``envdoctor/render/table.py``'s.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, Callable, NoReturn

import click

from envdoctor.clicore import EXIT_ERRORS, EXIT_INTERNAL, EXIT_USAGE, JsonGroup, check_index_url, seconds
from envdoctor.documents import dumps, stamp
from envdoctor.parse import version_key
from envdoctor.render import table as show
from envdoctor.table import Table


def _table() -> Table:
    from envdoctor.table import TableError, load_table

    try:
        return load_table()
    except TableError as exc:
        click.echo(f"envdoctor: the compatibility table is broken: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)


def _json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON document.")(f)


def _emit(kind: show.TableKind, key: str | None, result: Any, lines: Callable[[], list[str]], as_json: bool) -> None:
    if as_json:
        click.echo(dumps(stamp(show.table_document(kind, key, result), 0)))
    else:
        click.echo("\n".join(lines()))


def _missing(kind: str, key: str, known: Sequence[str]) -> NoReturn:
    shown = ", ".join(known[:24]) + (", ..." if len(known) > 24 else "")
    asked = key if len(key) <= 80 else key[:80] + f"... ({len(key)} characters)"
    click.echo(f"envdoctor: no {kind} {asked!r} in the table (known: {shown})", err=True)
    sys.exit(EXIT_ERRORS)


@click.group(
    "table", cls=JsonGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--stale", is_flag=True, help="Compare the bundled torch releases with the live wheel index; list newer ones."
)
@click.option("--variant", default="cpu", show_default=True, help="Index variant read by --stale.")
@click.option(
    "--index-url",
    metavar="URL",
    default=None,
    callback=check_index_url,
    help="Wheel index base (default: the official one).",
)
@click.option(
    "--timeout",
    type=seconds(),
    default=10.0,
    show_default=True,
    help="With --stale: seconds each index request may take, all of it.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="With --stale: print the envdoctor.stale/1 document (the subcommands take --json too).",
)
@click.pass_context
def table(ctx: click.Context, stale: bool, variant: str, index_url: str | None, timeout: float, as_json: bool) -> None:
    """Look up the bundled compatibility table (each fact with its source)."""
    if stale:
        _stale(variant, index_url, timeout, as_json)
    elif ctx.invoked_subcommand is None:
        if as_json:  # no document to print: say so rather than the help with exit 0
            raise click.UsageError(
                "--json needs --stale or a subcommand: envdoctor table --stale --json, envdoctor table gpu H200 --json"
            )
        click.echo(ctx.get_help())


def _stale(variant: str, index_url: str | None, timeout: float, as_json: bool = False) -> None:
    """Exit 0 when the table is current, 1 when the index holds newer torch releases, 2 unreadable.
    With ``as_json`` the answer is the ``envdoctor.stale/1`` document (the same exit codes)."""
    from envdoctor.redact import mask_url
    from envdoctor.wheels import IndexClient, IndexUnavailable
    from envdoctor.wheels.report import upstream_newer

    t = _table()
    client = IndexClient(base_url=index_url, timeout=timeout, refresh=True)
    newest = str(t.torch_releases[-1].version) if t.torch_releases else "none"
    where = mask_url(f"{client.base_url.rstrip('/')}/{variant}/torch/")
    answer = show.StaleAnswer(bundled_newest=None if newest == "none" else newest, variant=variant, index=where)
    try:
        newer = upstream_newer(t, client, variant)
    except IndexUnavailable as exc:
        if as_json:
            failed = dataclasses.replace(answer, error=mask_url(str(exc)))
            click.echo(dumps(stamp(show.stale_document(failed), EXIT_USAGE)))
        else:
            click.echo(
                f"envdoctor: cannot tell whether the table is stale: {exc}; "
                "check the network, a proxy (HTTPS_PROXY) or --index-url",
                err=True,
            )
        sys.exit(EXIT_USAGE)  # could not complete for a named reason (2), not envdoctor's bug (3)
    if as_json:
        done = dataclasses.replace(answer, newer=tuple(newer), stale=bool(newer))
        click.echo(dumps(stamp(show.stale_document(done), EXIT_ERRORS if newer else 0)))
        sys.exit(EXIT_ERRORS if newer else 0)
    if not newer:
        click.echo(f"table is current: newest bundled torch {newest}; {where} has nothing newer")
        return
    click.echo(f"table is stale: newest bundled torch {newest}; {where} also has {', '.join(newer)}")
    click.echo("  add one [[torch]] row per release to data/torch.toml (docs/data.md says how)")
    sys.exit(EXIT_ERRORS)


@table.command("cuda")
@click.argument("version", required=False)
@_json_option
def cuda_cmd(version: str | None, as_json: bool) -> None:
    """A CUDA toolkit release and the driver it needs: envdoctor table cuda 12.8"""
    t = _table()
    if version is None:
        _emit("cuda", None, t.cuda_releases, lambda: show.cuda_list(t), as_json)
        return
    row = t.cuda(version)
    if row is None:
        _missing("CUDA release", version, sorted({r.minor for r in t.cuda_releases}, key=version_key))
    mc = t.minor_compat(row.major)
    _emit("cuda", version, {"release": row, "minor_compat": mc}, lambda: show.cuda_lines(row, mc), as_json)


@table.command("torch")
@click.argument("version", required=False)
@_json_option
def torch_cmd(version: str | None, as_json: bool) -> None:
    """A torch release: Pythons, variants and their arch lists: envdoctor table torch 2.7"""
    t = _table()
    if version is None:
        _emit("torch", None, t.torch_releases, lambda: show.torch_list(t), as_json)
        return
    row = t.torch(version)
    if row is None:
        _missing("torch release", version, [r.minor for r in t.torch_releases])
    _emit("torch", version, row, lambda: show.torch_lines(row, t), as_json)


@table.command("gpu")
@click.argument("name", required=False)
@_json_option
def gpu_cmd(name: str | None, as_json: bool) -> None:
    """A GPU model by name, alias or PCI id: envdoctor table gpu "RTX 3090 Ti" """
    t = _table()
    if name is None:
        _emit("gpu", None, t.gpus, lambda: show.gpu_list(t), as_json)
        return
    row = t.gpu(name) or t.gpu_by_pci(name)
    if row is None:
        arch = t.arch_for_pci(name)
        fam = t.chip_family(name)
        if arch is not None and fam is not None:
            _emit(
                "gpu",
                name,
                {"chip_family": fam, "architecture": arch},
                lambda: show.chip_family_lines(name, fam, arch),
                as_json,
            )
            return
        _missing("GPU", name, [g.name for g in t.gpus])
    arch_row = t.architecture(row.cc)
    _emit("gpu", name, row, lambda: show.gpu_lines(row, arch_row), as_json)


@table.command("arch")
@click.argument("cc", required=False)
@_json_option
def arch_cmd(cc: str | None, as_json: bool) -> None:
    """A compute capability: envdoctor table arch 8.6 (or sm_86)"""
    t = _table()
    if cc is None:
        _emit("arch", None, t.architectures, lambda: show.arch_list(t), as_json)
        return
    row = t.architecture(cc)
    if row is None:
        _missing("architecture", cc, [a.cc for a in t.architectures])
    _emit("arch", cc, row, lambda: show.arch_lines(row), as_json)


@table.command("ngc")
@click.argument("tag", required=False)
@_json_option
def ngc_cmd(tag: str | None, as_json: bool) -> None:
    """An NGC PyTorch container: envdoctor table ngc 25.01"""
    t = _table()
    if tag is None:
        _emit("ngc", None, t.ngc_releases, lambda: show.ngc_list(t), as_json)
        return
    row = t.ngc(tag)
    if row is None:
        _missing("NGC release", tag, [r.tag for r in t.ngc_releases])
    _emit("ngc", tag, row, lambda: show.ngc_lines(row), as_json)


@table.command("distro")
@click.argument("id", required=False)
@click.argument("version", required=False)
@_json_option
def distro_cmd(id: str | None, version: str | None, as_json: bool) -> None:
    """A distribution NVIDIA's CUDA repository serves: envdoctor table distro ubuntu 22.04"""
    t = _table()
    if id is None:
        _emit("distro", None, t.distros, lambda: show.distro_list(t), as_json)
        return
    if version is None:
        raise click.UsageError("give the version too: envdoctor table distro ubuntu 22.04")
    row = t.distro(id, version)
    if row is None:
        _missing("distribution", f"{id} {version}", [f"{d.id} {d.version}" for d in t.distros])
    _emit("distro", f"{id} {version}", row, lambda: show.distro_lines(row), as_json)


@table.command("variant")
@click.argument("name", required=False)
@_json_option
def variant_cmd(name: str | None, as_json: bool) -> None:
    """A wheel-index variant: envdoctor table variant cu128"""
    t = _table()
    if name is None:
        _emit(
            "variant",
            None,
            {"base": t.index_base, "variants": t.variants, "mirrors": t.mirrors},
            lambda: show.variant_list(t),
            as_json,
        )
        return
    row = t.variant(name)
    if row is None:
        _missing("variant", name, [v.name for v in t.variants])
    releases = [r.minor for r in t.torch_releases if r.variant(row.name)]
    _emit("variant", name, {"variant": row, "torch": releases}, lambda: show.variant_lines(row, releases), as_json)

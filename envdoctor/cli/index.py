"""``envdoctor index``: does a wheel index exist, and what does it hold for this Python?

    $ envdoctor index cu117 cu121 cu130 --python-version 3.12
    index: https://download.pytorch.org/whl  target: cp312 (CPython 3.12 on this machine's platforms)
    cu117: torch 1.13.0-2.0.1 (4 versions), none for cp312 (wheels for cp37-cp311); newest for cp312 is on cu130
    cu121: torch 2.1.0-2.5.1 (12 versions); for cp312: 2.2.0-2.5.1 (newest 2.5.1)
    cu130: torch 2.9.0-2.11.0 (4 versions); for cp312: 2.9.0-2.11.0 (newest 2.11.0)
    newest torch for cp312: 2.11.0 on cu130
      pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130

Exit status: 0 found, 1 no such index or no wheel for this Python, 2 usage error or the index
could not be read (network failure, a page that is not an index, ``--offline`` with nothing cached:
a line says what to do), 3 envdoctor's own bug.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Dict, List, Literal, Optional, Sequence, Tuple, TypedDict, cast

import click

from envdoctor.clicore import (
    EXIT_USAGE,
    FilePath,
    Number,
    check_index_url,
    color_option,
    debug_option,
    guarded,
    make_context,
    root_option,
    seconds,
)
from envdoctor.doctypes import Json
from envdoctor.documents import document, dumps, stamp
from envdoctor.facts.python import IndexConfig
from envdoctor.redact import mask_text
from envdoctor.wheels import (
    FALLBACK_BASE,
    IndexClient,
    Target,
    TargetError,
    VariantListing,
    best,
    check_variant_name,
    exit_code,
    listing_from_table,
    summary,
)
from envdoctor.wheels.report import EXIT_CANNOT_TELL, provenance

log = logging.getLogger(__name__)
SCHEMA = document("index").schema  # "envdoctor.index/1", envdoctor/schemas/index-1.json
JSON_VERSION: Literal["1"] = "1"  # the document's older marker, kept for the scripts that read it


class TargetOf(TypedDict):
    """The interpreter the wheels must fit."""

    python: str
    interpreter: str
    short: str
    platforms: List[str]
    description: str


class Listed(TypedDict):
    """What a listing adds to its ``VariantListing`` fields: the newest compatible release."""

    newest: Optional[str]
    source: Annotated[str, Json(enum=["index", "cache", "table", "none"])]
    format: Optional[Literal["html", "json"]]


class Newest(TypedDict):
    variant: str
    version: str
    index_url: str


class IndexEntry(TypedDict):
    """An index the user's pip or uv is configured with (masked)."""

    url: str
    role: Literal["index", "extra", "find-links"]
    tool: Literal["pip", "uv"]
    source: str


class _IndexKeys(TypedDict):
    schema: str
    version: Literal["1"]
    index_url: str
    package: str
    offline: bool
    target: TargetOf
    variants: List[Annotated[Listed, Json.extends(VariantListing)]]
    newest: Optional[Newest]
    exit_code: Annotated[
        int,
        Json(
            enum=[0, 1, 2, 3],
            description="0 found, 1 no such index or no wheel for this Python, 2 could not tell (the "
            "network failed, a page that is no index, --offline with nothing cached; network_failure "
            "is true); older documents wrote 3 for could not tell",
        ),
    ]
    network_failure: bool


class IndexDocument(_IndexKeys, total=False):
    """What each wheel-index variant holds for the target interpreter, and the newest compatible
    release. 'version' is the older marker of the same document. Credentials in URLs are masked."""

    index_source: Annotated[
        str,
        Json(
            description="where index_url comes from: --index-url, "
            "ENVDOCTOR_INDEX_URL, the user's pip/uv configuration, "
            "envdoctor's table"
        ),
    ]
    configured_indexes: List[IndexEntry]
    proxies: Annotated[
        Dict[str, str],
        Json(description="proxy variables and pip's proxy setting (masked); requests honours the variables"),
    ]


def _load_table() -> Optional[Any]:
    """The compatibility table, or None when it is missing or broken (the index still answers)."""
    try:
        from envdoctor.table import load_table

        return load_table()
    except Exception as exc:  # noqa: BLE001 - never let the table stop an index query
        log.debug("compatibility table not available: %s", exc)
        return None


def _table_variants(table: Optional[Any]) -> Tuple[str, ...]:
    if table is None:
        return ()
    return tuple(str(v.name) for v in getattr(table, "variants", ()))


def _kind(table: Optional[Any], name: str) -> str:
    """ "cuda", "rocm", "cpu", "xpu": from the table when it knows the variant, else the name."""
    for v in getattr(table, "variants", ()):
        if v.name == name and getattr(v, "kind", None):
            return str(v.kind)
    m = re.match(r"^(?:.*/)?(cu|rocm|cpu|xpu)", name)
    return {"cu": "cuda"}.get(m.group(1), m.group(1)) if m else name


def _check_variants(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> Tuple[str, ...]:
    try:
        return tuple(dict.fromkeys(check_variant_name(v) for v in value))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


class _Unusable(click.ClickException):
    """An input that cannot be used (exit 2): said in one line, without the usage text."""

    exit_code = 2


def _target(python: Optional[str], python_version: Optional[str], platform: Optional[str], timeout: float) -> Target:
    try:
        if python:
            target = Target.from_interpreter(python, timeout=timeout)
            return target.with_platform(platform) if platform else target
        if python_version or platform:
            version = python_version or "{}.{}".format(*sys.version_info[:2])
            return Target.for_python(version, platform)
        return Target.current()
    except TargetError as exc:
        if python:  # an interpreter that cannot answer is unusable input (2), as in recommend
            raise _Unusable(mask_text(str(exc))) from None
        raise click.UsageError(str(exc)) from None


@click.command("index")
@click.argument("variants", nargs=-1, metavar="[VARIANT]...", callback=_check_variants)
@click.option("--all", "all_", is_flag=True, help="Every variant the table knows plus any the index root lists.")
@click.option(
    "--package",
    type=click.Choice(["torch", "torchvision", "torchaudio"]),
    default="torch",
    show_default=True,
    help="Package whose wheels are listed.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    type=FilePath(exists=True, dir_okay=False),
    help="Match wheels for this interpreter (default: envdoctor's own).",
)
@click.option("--python-version", metavar="X.Y", help="Match wheels for CPython X.Y (3.13t: free-threaded).")
@click.option("--platform", metavar="TAG", help="Best platform tag of the target machine, e.g. manylinux_2_28_x86_64.")
@click.option(
    "--index-url",
    metavar="URL",
    envvar="ENVDOCTOR_INDEX_URL",
    callback=check_index_url,
    help="Base that variants are appended to (a mirror); env ENVDOCTOR_INDEX_URL.",
)
@click.option("--offline", is_flag=True, help="Use only the cache and the bundled table.")
@click.option("--refresh", is_flag=True, help="Ignore the cache and ask the index again.")
@click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON document.")
@click.option(
    "--timeout",
    type=seconds(),
    default=10.0,
    show_default=True,
    help="Seconds each request may take, all of it (and --python's interpreter to answer).",
)
@click.option("--ttl", type=Number(0, 10**9, unit="seconds"), default=3600.0, hidden=True, envvar="ENVDOCTOR_INDEX_TTL")
@click.option("--retries", type=Number(0, 20, integer=True), default=2, hidden=True, envvar="ENVDOCTOR_INDEX_RETRIES")
@click.option("--backoff", type=seconds(0, 60), default=0.3, hidden=True, envvar="ENVDOCTOR_INDEX_BACKOFF")
@color_option
@debug_option
@root_option
@guarded
def index(
    variants: Tuple[str, ...],
    all_: bool,
    package: str,
    python: Optional[str],
    python_version: Optional[str],
    platform: Optional[str],
    index_url: Optional[str],
    offline: bool,
    refresh: bool,
    as_json: bool,
    timeout: float,
    ttl: float,
    retries: int,
    backoff: float,
    debug: bool,
    root: Optional[Path] = None,
) -> None:
    """Does the wheel index for VARIANT (cu117, cu128, cpu, rocm6.2, ...) exist, and which
    PACKAGE versions have a wheel for the target Python?

    \b
    envdoctor index cu128                     for envdoctor's own Python
    envdoctor index cu117 cu121 --python-version 3.12
    envdoctor index --all --python /opt/venv/bin/python
    envdoctor index cu128 --index-url https://mirror.example/pytorch/whl
    """
    if offline and refresh:
        raise click.UsageError("--offline and --refresh contradict each other")
    if python and python_version:
        raise click.UsageError("give --python PATH or --python-version X.Y, not both")
    table = _load_table()
    known = _table_variants(table)
    if not variants and not all_:
        hint = f" (known: {', '.join(known)})" if known else ""
        raise click.UsageError(f"name one or more variants, e.g. cu128 cpu, or use --all{hint}")
    target = _target(python, python_version, platform, timeout)
    base, base_source, configured = _base(index_url, table, root)
    with IndexClient(
        base, ttl=ttl, offline=offline, refresh=refresh, timeout=timeout, retries=retries, backoff=backoff
    ) as client:
        if all_:
            listings = client.all_variants(list(known) + list(variants), package, target)
        else:
            listings = client.variants(variants, package, target)
        if offline and table is not None:
            listings = tuple(
                listing_from_table(table, item, target) if item.source == "none" else item for item in listings
            )
        winner = best(listings)
        if winner is None and not all_ and not offline and any(i.exists for i in listings):
            # Nothing here fits this Python: say where the newest wheel of the same kind is.
            kinds = {_kind(table, n) for n in variants}
            others = [k for k in known if k not in variants and _kind(table, k) in kinds]
            winner = best(client.variants(others, package, target)) if others else None
    code = exit_code(listings, any_is_enough=all_)
    if as_json:
        doc = _document(client, package, target, offline, listings, winner, code)
        _configured_keys(doc, base_source, configured)
        click.echo(mask_text(dumps(stamp(doc, code))))
    else:
        lines = _text(client, package, target, offline, listings, winner, table is None, code)
        lines[1:1] = _configured_lines(base_source, configured)
        for line in lines:
            click.echo(mask_text(line))
    sys.exit(code)


def _base(index_url: Optional[str], table: Optional[Any], root: Optional[Path]) -> Tuple[str, str, IndexConfig]:
    """(base, where it comes from, the pip/uv configuration read) -- ``--index-url`` (or
    ENVDOCTOR_INDEX_URL), else the torch index the user's pip/uv is configured with (read once,
    under ``--root`` as check reads it), else the table's."""
    from envdoctor.probes.indexconf import read_index_config
    from envdoctor.wheels import default_choice

    ctx = make_context(None, 10.0, root)
    env = ctx.env
    configured, torch_base = read_index_config(ctx)  # read once, for both
    if index_url:
        given = click.get_current_context().get_parameter_source("index_url")
        from_env = given is not None and given.name == "ENVIRONMENT"
        return index_url, ("ENVDOCTOR_INDEX_URL" if from_env else "--index-url"), configured
    if table is None and configured.torch_base_source is None:  # default_choice would load the broken table again
        return FALLBACK_BASE, "envdoctor's built-in default", configured
    base, source = default_choice(env, torch_base)
    return base, source, configured


def _configured_lines(base_source: str, configured: IndexConfig) -> List[str]:
    """Where the base comes from when the user's configuration chose it; the proxy requests will use."""
    lines = []
    if base_source.startswith("your pip/uv configuration"):
        lines.append(f"  base from {base_source}; --index-url overrides it")
    elif "; your pip/uv configuration's " in base_source:  # configured, but not a usable URL
        lines.append("  " + base_source.split("; ", 1)[1] + "; the base above is used instead")
    for name, value in configured.proxies.items():
        lines.append(f"  proxy: {name}={value}")
    return lines


def _configured_keys(doc: IndexDocument, base_source: str, configured: IndexConfig) -> None:
    doc["index_source"] = base_source
    doc["configured_indexes"] = [
        {"url": i.url, "role": i.role, "tool": i.tool, "source": i.source} for i in configured.indexes
    ]
    doc["proxies"] = dict(configured.proxies)


def _text(
    client: IndexClient,
    package: str,
    target: Target,
    offline: bool,
    listings: Sequence[VariantListing],
    winner: Optional[VariantListing],
    no_table: bool,
    code: int,
) -> List[str]:
    py = target.short
    lines = [f"index: {client.shown_base}  target: {py} ({target.description})"]
    if offline:
        lines.append(
            "offline: answers come from the cache"
            + ("" if no_table else " and the bundled table")
            + "; nothing was fetched"
        )
    for item in listings:
        line = summary(item, target)
        if item.exists and not item.compatible and winner is not None and winner is not item:
            line += f"; newest for {py} is on {winner.variant}"
        lines.append(line)
        origin = provenance(item)
        if origin:
            lines.append(f"  ({origin})")
    if not listings:
        lines.append(
            "no variants to ask: the bundled table is not available and the index root "
            "lists none; name them, e.g. envdoctor index cu128 cpu"
        )
    if winner is not None:
        lines.append(f"newest {package} for {py}: {winner.newest} on {winner.variant}")
        lines.append(f"  pip install {package}=={winner.newest} --index-url {winner.url}")
    if code == EXIT_CANNOT_TELL:  # exit 2: the line that says what to do
        if offline:
            lines.append("could not tell offline: run it without --offline to fetch the index")
        else:
            lines.append("could not read the index; check the network, a proxy (HTTPS_PROXY) or --index-url")
    if no_table and offline:
        lines.append("note: the bundled compatibility table could not be loaded")
    return lines


def _document(
    client: IndexClient,
    package: str,
    target: Target,
    offline: bool,
    listings: Sequence[VariantListing],
    winner: Optional[VariantListing],
    code: int,
) -> IndexDocument:
    return {
        "schema": SCHEMA,
        "version": JSON_VERSION,
        "index_url": client.shown_base,
        "package": package,
        "offline": offline,
        "target": {
            "python": target.python,
            "interpreter": target.interpreter,
            "short": target.short,
            "platforms": list(target.platforms),
            "description": target.description,
        },
        "variants": [cast(Listed, item.to_dict()) for item in listings],  # VariantListing's fields too
        "newest": (
            None
            if winner is None or winner.newest is None  # best() gives one with a release
            else {"variant": winner.variant, "version": winner.newest, "index_url": winner.url}
        ),
        "exit_code": code,
        "network_failure": code == EXIT_CANNOT_TELL,
    }


__all__ = ["index", "EXIT_USAGE"]

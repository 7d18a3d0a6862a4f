"""``envdoctor dockerfile [PATH]``: lint a Dockerfile for the GPU stack before the build.

Exit status: 0 no error found, 1 an error finding, 2 the file cannot be read or is not a Dockerfile
docker build would accept (one line says which), 3 envdoctor's own bug.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

import click

from envdoctor import checks
from envdoctor.clicore import (
    EXIT_USAGE,
    color_option,
    debug_option,
    guarded,
    make_context,
    root_option,
    suppress_option,
    timeout_option,
    use_color,
)


def _fail(message: str) -> None:
    click.echo(f"envdoctor dockerfile: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _build_args(values: Tuple[str, ...]) -> Dict[str, str]:
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum():
            _fail(f"--build-arg {value!r}: expected NAME=VALUE, as docker build takes it")
        out[key] = val
    return out


def _host_driver(timeout: float, root: Optional[Path]) -> Tuple[Optional[str], str]:
    """This host's driver version and where it came from; (None, why) without one."""
    from envdoctor.probes.driver import probe

    facts = probe(make_context(None, timeout, root))
    if facts.driver_version:
        return facts.driver_version, "this host's driver"
    return None, "no NVIDIA driver on this host (give --driver VERSION to judge the base image against one)"


@click.command()
@click.argument("path", required=False, default="Dockerfile", metavar="[PATH]")
@click.option("--driver", metavar="VERSION", help="Judge the base image against this driver (default: this host's).")
@click.option(
    "--build-arg",
    "build_args",
    multiple=True,
    metavar="NAME=VALUE",
    help="An ARG value, as docker build --build-arg gives it (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document (envdoctor.dockerfile/1).")
@timeout_option
@color_option
@debug_option
@root_option
@suppress_option
@guarded
def dockerfile(
    path: str,
    driver: Optional[str],
    build_args: Tuple[str, ...],
    as_json: bool,
    timeout: float,
    debug: bool,
    root: Optional[Path],
    suppress: Tuple[str, ...] = (),
) -> None:
    """Lint a Dockerfile for the GPU stack: the base image's CUDA against the driver, torch from the
    right index, NGC's torch kept, extension pins, flash-attn builds, the NVIDIA variables.

    Exit status: 0 no errors, 1 errors found, 2 unreadable input, 3 envdoctor itself failed.
    """
    from envdoctor.dockerfile.parse import DockerfileError, parse
    from envdoctor.inputs import InputError, read_input

    args = _build_args(build_args)
    if driver is not None:
        from envdoctor.advise.whatif import WhatIfError, parse_driver

        try:
            parsed = parse_driver(driver)
        except WhatIfError as exc:
            _fail(str(exc))
        if parsed is None:
            _fail("--driver none: give the driver version the image will run on, such as 570.133.20")
        if parsed is not None and parsed.count(".") == 0:
            _fail(f"--driver {driver}: give the full driver version (such as {driver}.65.06), not only its branch")
        driver_source = "--driver"
    if path == "-" and not os.path.exists(path):  # docker build's "-" is its standard input
        _fail(
            "-: the Dockerfile is not read from standard input; give its path (envdoctor dockerfile path/to/Dockerfile)"
        )
    try:
        text = read_input(path)
    except InputError as exc:
        _fail(f"{path}: cannot read it ({exc.reason})")
    try:
        parsed_file = parse(text, args)
    except DockerfileError as exc:
        _fail(f"{path}: {exc}")
    from envdoctor.dockerfile.render import document, render_text
    from envdoctor.dockerfile.rules import lint
    from envdoctor.inspect import load_table_or_error
    from envdoctor.stack.table import try_load

    if driver is None:
        driver, driver_source = _host_driver(timeout, root)
    table, _ = load_table_or_error()
    ext, _ = try_load()
    found = tuple(
        checks.kept(
            lint(parsed_file, table, ext, driver, driver_source, path=path), suppress, lambda item: item.finding
        )
    )
    if as_json:
        from envdoctor.documents import dumps

        click.echo(dumps(document(path, parsed_file, found, driver, driver_source, table, ext)))
    else:
        text_out = render_text(path, parsed_file, found, driver, driver_source, table, ext, color=use_color())
        click.echo(text_out, nl=False)
    sys.exit(1 if any(x.finding.severity == "error" for x in found) else 0)

"""``envdoctor recommend``: which route, torch and wheel to install, as exact commands (never run).

Exit status: 0 a plan, 1 nothing fits as the machine is (the output names the ways out),
2 usage error (a bad option, an unreadable --from report), 3 envdoctor itself failed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from envdoctor.clicore import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    FilePath,
    check_formats,
    check_index_url,
    debug_option,
    emit_page,
    guarded,
    html_options,
    machine_redactor,
    make_context,
    python_option,
    root_option,
    timeout_option,
    use_color,
)
from envdoctor.redact import mask_text

if TYPE_CHECKING:
    from envdoctor.advise.machine import Machine
    from envdoctor.advise.plan import Plan
    from envdoctor.advise.request import Availability
    from envdoctor.advise.routes import Route
    from envdoctor.advise.whatif import Overrides
    from envdoctor.table import Table
    from envdoctor.wheels import IndexClient, Target


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"envdoctor recommend: {mask_text(message)}", err=True)
    sys.exit(code)


@click.command()
@click.option(
    "--route",
    type=click.Choice(["system", "conda", "docker"]),
    default=None,
    help="Plan this route (default: choose one and say why).",
)
@click.option(
    "--torch",
    "torch_spec",
    metavar="SPEC",
    default=None,
    help='A torch version or PEP 440 specifier: "2.7" (2.7.*), "2.7.1", ">=2.4,<2.6". '
    "Default: the newest that works here.",
)
@python_option
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON plan ("envdoctor.plan/1").')
@click.option(
    "--script",
    "script_arg",
    type=FilePath(dir_okay=False, allow_empty=True),
    default=None,
    metavar="FILE",
    help="Also write the commands as a shell script (set -e, comments) to review.",
)
@click.option("--force", is_flag=True, help="Let --script overwrite an existing file.")
@click.option("--with-nvcc", is_flag=True, help="Also install nvcc (the CUDA toolkit matching torch's CUDA).")
@click.option(
    "--with",
    "with_spec",
    metavar="LIBS",
    default=None,
    help="Also plan these libraries above torch, versions optional: vllm,flash-attn,xformers "
    "(a torch every pin accepts; no install replaces it).",
)
@click.option("--offline", is_flag=True, help="Do not ask the wheel index; the bundled table decides.")
@click.option(
    "--index-url",
    metavar="URL",
    envvar="ENVDOCTOR_INDEX_URL",
    callback=check_index_url,
    help="Wheel index base (a mirror of download.pytorch.org/whl); also ENVDOCTOR_INDEX_URL.",
)
@click.option(
    "--driver",
    metavar="VERSION",
    default=None,
    help='What if: this driver version (570.133.20), or "none" for no driver.',
)
@click.option(
    "--gpu",
    "gpus",
    metavar="NAME|CC",
    multiple=True,
    help='What if: this GPU ("RTX 3090 Ti", H100, 8.6, sm_120, MI300X); repeatable.',
)
@click.option("--no-gpu", is_flag=True, help="What if: no GPU at all.")
@click.option("--python-version", metavar="X.Y", default=None, help="What if: this Python (3.12, 3.13t).")
@click.option(
    "--os",
    "os_",
    metavar="ID:VERSION",
    default=None,
    help="What if: this distribution (ubuntu:22.04, debian:12, rhel:9).",
)
@click.option(
    "--arch",
    type=click.Choice(["x86_64", "aarch64", "amd64", "arm64"]),
    default=None,
    help="What if: this CPU architecture.",
)
@click.option("--glibc", metavar="X.Y", default=None, help="What if: this glibc (2.27 on Ubuntu 18.04).")
@click.option(
    "--from",
    "from_arg",
    type=FilePath(dir_okay=False, allow_empty=True),
    default=None,
    metavar="REPORT.json",
    help="Plan for the machine of a report saved by `envdoctor check --json`.",
)
@html_options
@timeout_option
@debug_option
@root_option
@guarded
def recommend(
    route: Route | None,
    torch_spec: str | None,
    python: str | None,
    as_json: bool,
    script_arg: str | None,
    force: bool,
    with_nvcc: bool,
    offline: bool,
    index_url: str | None,
    driver: str | None,
    gpus: tuple[str, ...],
    no_gpu: bool,
    python_version: str | None,
    os_: str | None,
    arch: str | None,
    glibc: str | None,
    from_arg: str | None,
    timeout: float,
    debug: bool,
    root: Path | None,
    with_spec: str | None = None,
    as_html: bool = False,
    html_output: Path | None = None,
) -> None:
    """Say which route, torch and wheel to install here, as exact commands.

    \b
    Without --route it picks one of system (pip wheels), conda and docker (NGC image), says why,
    and why not the other two. The what-if options replace what the probes would find; with
    enough of them (or --from) nothing on this machine is read:
      envdoctor recommend --gpu "RTX 5090" --driver 570.133.20 --os ubuntu:24.04 --python-version 3.12

    Exit status: 0 a plan, 1 nothing fits as the machine is, 2 usage error, 3 envdoctor failed.
    """
    check_formats(json=as_json, html=as_html)
    from envdoctor.advise.recommend import recommend as make_plan
    from envdoctor.advise.request import SpecError, parse_torch_spec, spec_variant
    from envdoctor.advise.waysout import unknown_torch
    from envdoctor.advise.whatif import Overrides, WhatIfError, apply_overrides
    from envdoctor.documents import stamp
    from envdoctor.render import json as render_json
    from envdoctor.render.plan import plan_document, render_script, render_text

    script = _path("--script", script_arg, "give the file to write the commands to (e.g. install.sh)")
    from_report = _path("--from", from_arg, "give a report saved by `envdoctor check --json`")
    if script is not None and script.exists():
        from envdoctor.atomic import what_it_is

        kind = what_it_is(script.stat().st_mode)
        if kind is not None:  # --force would not help: only a regular file is replaced
            _fail(f"cannot write {script}: it is {kind}, not a regular file (give --script a file's path)")
        if not force:
            _fail(f"{script} exists; pass --force to overwrite it")
    try:
        spec = parse_torch_spec(torch_spec)
    except SpecError as exc:
        _fail(str(exc))
    stack = _stack_wants(with_spec, torch_spec) if with_spec is not None else None
    if python is not None:
        _check_python(python, from_report, python_version)
    table = _table()
    if spec is not None and torch_spec is not None:
        unknown = unknown_torch(table, spec, torch_spec.strip())  # a long one is refused by parse_torch_spec
        if unknown:
            _fail(f"--torch: {unknown}; give a known version, or leave --torch out for the newest that works")
    asked = spec_variant(torch_spec)
    if asked and table.variant(asked) is None:
        known = ", ".join(v.name for v in table.variants if v.kind in ("cuda", "cpu"))
        _fail(
            f"--torch {torch_spec.strip() if torch_spec else ''}: envdoctor's table knows no wheel variant "
            f"{asked} (it knows {known})"
        )
    overrides = Overrides(driver, gpus, no_gpu, python_version, os_, arch, glibc)
    try:
        overrides.check()  # refuse Windows, an empty or malformed value, before probing anything
        machine = _machine(table, overrides, route, from_report, python, timeout, root, debug)
        machine = apply_overrides(machine, overrides, table)
    except WhatIfError as exc:
        _fail(str(exc))
    configured = None
    if index_url is None and from_report is None:  # the user's pip/uv index, not another machine's
        index_url, configured = _configured_index(root)
    available = None if offline else _availability(machine, index_url, timeout)
    env_name, export = _index_env(index_url)
    if stack is None:
        plan = make_plan(machine, table, route, torch_spec, with_nvcc, available, index_url, env_name, export)
    else:
        plan = _stack_plan(stack, machine, table, route, torch_spec, with_nvcc, available, index_url, env_name, export)
    if as_html:
        from envdoctor.render.plan_page import plan_page

        emit_page(
            plan_page(stamp(plan_document(plan), 0 if plan.ok else 1), machine_redactor()), html_output, "recommend"
        )
    elif as_json:
        click.echo(mask_text(render_json.dumps(stamp(plan_document(plan), 0 if plan.ok else 1))))
    else:
        click.echo(mask_text(render_text(plan, color=use_color())), nl=False)
    if configured is not None:
        click.echo(f"envdoctor recommend: {mask_text(configured)}; --index-url overrides it", err=True)
    if script is not None:
        from envdoctor.atomic import write_atomic

        try:
            write_atomic(script, mask_text(render_script(plan)), mode=0o755)
        except OSError as exc:
            _fail(f"cannot write {script}: {exc.strerror or exc}")
        click.echo(f"envdoctor recommend: wrote {script} (review it, then run: bash {script})", err=True)
    sys.exit(0 if plan.ok else 1)


INDEX_ENV = "ENVDOCTOR_INDEX_URL"


def _stack_wants(with_spec: str, torch_spec: str | None) -> tuple:
    """(wants, candidates, rows) of --with, or a usage error (exit 2) in one line."""
    from envdoctor.advise.stack import StackError, candidates, conflict, parse_with
    from envdoctor.stack.table import try_load

    try:
        wants = parse_with(with_spec)
    except StackError as exc:
        _fail(str(exc))
    ext, error = try_load()
    if ext is None:
        _fail(f"--with: data/extensions.toml could not be read ({error})", EXIT_INTERNAL)
    cands = candidates(wants, ext)
    why = conflict(torch_spec, cands)
    if why:
        _fail(why)
    if torch_spec and cands and cands[0].torch is not None:  # --torch narrows the releases the pins allow
        from envdoctor.advise.request import parse_torch_spec

        spec = parse_torch_spec(torch_spec)
        cands = [c for c in cands if spec is None or spec.contains(c.torch or "", prereleases=True)]
    if not cands:
        asked = ", ".join(f"{w.name}=={w.version}" if w.version else w.name for w in wants)
        _fail(
            f"--with {asked}: no torch release satisfies every pin in data/extensions.toml "
            "(the releases it knows); leave a version out to let envdoctor choose"
        )
    return wants, cands, ext


def _stack_plan(
    stack: tuple,
    machine: Machine,
    table: Table,
    route: Route | None,
    torch_spec: str | None,
    with_nvcc: bool,
    available: Availability | None,
    index_url: str | None,
    env_name: str | None,
    export: str | None,
) -> Plan:
    """The first torch every library's pin accepts that the machine runs, with the libraries' steps."""
    from envdoctor.advise.recommend import recommend as make_plan
    from envdoctor.advise.stack import torch_specs, with_stack

    wants, cands, ext = stack
    first = None
    fitting = [c for c in cands if c.for_python(machine.python)] if route != "docker" else cands
    if not fitting:
        pins = ", ".join(f"{n} {v}" for n, v in cands[0].releases.items())
        _fail(
            f"--with: no release envdoctor knows ({pins} and older) has wheels for Python {machine.python}; "
            "plan for another Python with --python-version",
            1,
        )
    for cand in fitting:
        # the docker route runs an image with its own torch: the pins choose the image, not a wheel
        specs: list[str | None] = list(torch_specs(cand)) if route != "docker" else []
        for spec in specs or [torch_spec]:
            plan = make_plan(machine, table, route, spec, with_nvcc, available, index_url, env_name, export)
            first = first or (plan, cand)
            # the pins' CUDA variant that does not fit here (no GPU, too old a GPU) was no one's
            # --torch: the release alone (the last spec) is planned, without "cu128 was asked for"
            if plan.ok and not (plan.choice.variant_changed and spec != specs[-1]):
                return with_stack(plan, machine, table, ext, wants, cand)
    assert first is not None
    return with_stack(first[0], machine, table, ext, wants, first[1])


def _path(option: str, value: str | None, hint: str) -> Path | None:
    """A file option's path; an empty one is refused (Click would read "" as ".", this folder)."""
    if value is None:
        return None
    if not value.strip():
        _fail(f"{option} is empty: {hint}")
    return Path(value)


def _check_python(python: str, from_report: Path | None, python_version: str | None) -> None:
    """``--python`` must name an interpreter that can be run, and it must not be overruled."""
    import os

    from envdoctor.child import find_python

    if not python.strip():
        _fail(
            "--python is empty: give the interpreter to plan for (e.g. /opt/venv/bin/python), "
            "or leave it out for python3 on PATH"
        )
    if from_report is not None:
        _fail(
            f"--python and --from contradict each other: --from plans for the machine of {from_report} "
            "and its Python; leave one out"
        )
    if python_version is not None:
        _fail(
            "--python and --python-version contradict each other: --python plans for that interpreter "
            "(its version is read from it), --python-version for a Python of that version you have not "
            "made yet; leave one out"
        )
    found, _ = find_python(python, os.environ)
    if found is not None:
        return
    if os.sep not in python:
        why = "not found on PATH"
    elif not os.path.exists(python):
        why = "no such file"
    elif os.path.isdir(python):
        why = "is a folder"
    else:
        why = "not executable"
    _fail(
        f"--python {python}: {why}; give an interpreter that runs (e.g. /opt/venv/bin/python), or leave "
        "--python out to plan for python3 on PATH (or a new virtual environment)"
    )


def _configured_index(root: Path | None = None) -> tuple[str | None, str | None]:
    """(base, a line saying where it comes from) of the torch index the user's pip/uv is configured
    with (read under ``--root``, chosen by ``envdoctor.wheels.default_choice``); (None, None) when
    they name none."""
    from envdoctor.probes.context import Context
    from envdoctor.probes.indexconf import configured_torch_base
    from envdoctor.wheels import default_choice

    env = dict(os.environ)
    base, source = default_choice(env, configured_torch_base(Context(root=root or Path("/"), env=env)))
    if not source.startswith("your pip/uv configuration"):
        return None, None
    return base, f"the wheel index base {base} comes from {source}"


def _index_env(index_url: str | None) -> tuple[str | None, str | None]:
    """(variable the printed commands read the index base from, masked URL for an export line).

    A base with credentials (``http://user:pw@host/whl``) is never printed: masked, the commands
    would not run. So they read it from ENVDOCTOR_INDEX_URL; when it came from --index-url rather
    than that variable, the plan starts by setting it (masked, with a comment to fill it in)."""
    from envdoctor.redact import mask_url

    if not index_url or mask_url(index_url) == index_url:
        return None, None
    source = click.get_current_context().get_parameter_source("index_url")
    from_env = source is not None and source.name == "ENVIRONMENT"
    return INDEX_ENV, (None if from_env else mask_url(index_url))


def _table() -> Table:
    try:
        from envdoctor.table import load_table

        return load_table()
    except Exception as exc:  # a broken data file: nothing can be planned
        _fail(
            f"envdoctor's compatibility table could not be loaded ({type(exc).__name__}: {exc}); reinstall envdoctor",
            EXIT_INTERNAL,
        )


#: The key of a report's ``facts`` that holds each area the advisor knows of (advise.machine.AREAS).
_REPORT_KEY = {
    "system": "system",
    "gpu": "pci",
    "driver": "driver",
    "python": "python",
    "conda": "conda",
    "docker": "docker",
    "toolkits": "toolkits",
}


def _machine(
    table: Table,
    overrides: Overrides,
    route: Route | None,
    from_report: Path | None,
    python: str | None,
    timeout: float,
    root: Path | None,
    debug: bool,
) -> Machine:
    """The facts to plan from: a saved report, nothing (the what-if options say it all), or a probe."""
    from envdoctor.advise.machine import AREAS as PLAN_AREAS
    from envdoctor.advise.machine import blank_machine, machine_from_facts
    from envdoctor.inspect import enrich

    if from_report is not None:
        from envdoctor.inputs import InputError, read_input
        from envdoctor.render.json import ReportError, parse_report

        try:
            text = read_input(from_report)
        except InputError as exc:
            _fail(f"--from {from_report}: cannot read it ({exc.reason})")
        try:
            facts, _, doc = parse_report(text, str(from_report))
        except ReportError as exc:  # "r.json holds a value no probe writes: ..." -> "--from r.json: holds ..."
            why = str(exc)
            _fail(f"--from {from_report}: {why.removeprefix(f'{from_report} ')}")
        data = doc.get("facts")
        if not isinstance(data, dict) or not data:
            _fail(
                f"--from {from_report}: holds no facts, so there is no machine to plan for; save a report "
                "with `envdoctor check --json > report.json`"
            )
        # an area the report does not hold was not inspected: not "absent" (no driver, no docker)
        known = [a for a in PLAN_AREAS if a not in facts.skipped and _REPORT_KEY[a] in data]
        return machine_from_facts(enrich(facts, table), table, origin=f"report {from_report}", known=known)
    if overrides.complete(route) and not python:
        return blank_machine()
    from envdoctor.probes import AREAS, collect

    ctx = make_context(python, timeout, root)
    skip = ["torch"]
    if overrides.complete(route):  # only --python needs reading
        skip += [a for a in AREAS if a != "python"]
    facts = enrich(collect(ctx, skip=skip, debug=debug), table)
    p = facts.python
    if python is not None and p.error is not None and not p.version:
        # it ran, but said nothing a plan can use (not a Python, a crash, a hang)
        _fail(p.error.message if "(--python)" in p.error.message else f"--python {python}: {p.error.message}")
    return machine_from_facts(facts, table, known=["python"] if overrides.complete(route) else None)


def _availability(machine: Machine, index_url: str | None, timeout: float) -> Availability:
    """``available(variant, version)`` asking the live index for the machine's Python and platform
    (the wheel-index client is imported and built at the first question)."""
    from envdoctor.advise.request import IndexAnswer

    targets: list[Target | None] = []
    clients: list[IndexClient] = []

    def available(variant: str, version: str) -> IndexAnswer:
        if not targets:
            targets.append(_target(machine))
        t = targets[0]
        if t is None:
            return IndexAnswer(None, "the target Python version is not known")
        if not clients:
            from envdoctor.wheels import IndexClient

            clients.append(IndexClient(base_url=index_url, timeout=timeout))
        listing = clients[0].variant(variant, "torch", t)
        if listing.exists is None:
            return IndexAnswer(None, listing.error or f"{listing.url} did not answer")
        if not listing.exists:
            return IndexAnswer(False, f"{listing.url} has no torch page")
        from packaging.version import Version

        want = Version(version).public
        if any(Version(v).public == want for v in listing.compatible):
            return IndexAnswer(True, f"{listing.url}: torch {version} for {t.short}")
        return IndexAnswer(False, f"{listing.url} has no torch {version} wheel for {t.short} {t.platforms[0]}")

    return available


def _target(machine: Machine) -> Target | None:
    """The wheel tags of the machine's Python; None when its version is not known."""
    from envdoctor.wheels import Target, TargetError

    python = machine.python
    if not python:
        return None
    # the best manylinux tag the interpreter accepts: its tag list starts with the
    # plain linux_<arch>, which no wheel on the index carries
    tags = machine.facts.python.platform_tags
    best = next((t for t in tags if t.startswith("manylinux_")), None)
    glibc = machine.glibc
    platform = (
        best
        if best and not machine.given
        else f"manylinux_{glibc.replace('.', '_')}_{machine.arch}"
        if glibc
        else f"manylinux_2_28_{machine.arch}"
    )
    try:
        return Target.for_python(python, platform)
    except TargetError:
        return None

"""docker and podman, whether the docker daemon answers (and why not), its runtimes and CDI
setup, and the NVIDIA Container Toolkit (``nvidia-ctk``, ``nvidia-container-cli``,
``nvidia-container-runtime``).

Commands: ``docker version --format '{{json .}}'`` (prints the client's JSON even when the daemon
is down, then the daemon's error, exit status 1); ``docker info --format '{{json .}}'`` only when
the daemon answered; ``podman --version``, ``nvidia-ctk --version``, ``nvidia-container-cli
--version`` alongside. CDI spec files are listed in the daemon's CDISpecDirs and in ``/etc/cdi``
and ``/var/run/cdi``.
"""

from __future__ import annotations

import dataclasses
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Iterable, Literal, Optional, Tuple, cast

from packaging.version import Version

from envdoctor.facts.base import ProbeError
from envdoctor.facts.docker import DockerFacts
from envdoctor.parse import loose_version
from envdoctor.probes.context import Context
from envdoctor.probes.reasons import stderr_reason, unreadable

CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
#: How much of a CDI spec is read (nvidia-ctk's are 10-60 KiB).
CDI_LIMIT = 1 << 20
GPUS_FLAG = Version("19.03")  # docker run --gpus
JSON = "{{json .}}"


#: What a docker or podman version looks like: "28.2.2", "20.10.24+dfsg1", "5.0.2-dev", "4.9.3~rc1".
_VERSION_TEXT = re.compile(r"[0-9][\w.+~-]{0,63}")


def _version_text(value: Optional[str]) -> Optional[str]:
    """A version as docker printed it, or None for what is no version (a 100 KB string, a sentence)."""
    return value if value is not None and _VERSION_TEXT.fullmatch(value) else None


#: The tools whose ``--version`` the probe reads (beside docker, read through its daemon).
Tool = Literal["podman", "nvidia-ctk", "nvidia-container-cli"]


def _version_parsers() -> Dict[Tool, Callable[[str], str]]:
    """Each tool's ``--version`` parser in ``envdoctor.parse.docker``, imported where a tool was
    found: most machines check runs on have none of them (imports are a good part of check's time)."""
    from envdoctor.parse import docker as parsers

    return {
        "podman": parsers.parse_podman_version,
        "nvidia-ctk": parsers.parse_nvidia_ctk_version,
        "nvidia-container-cli": parsers.parse_nvidia_container_cli_version,
    }


def _tool_version(ctx: Context, exe: Optional[str], tool: Tool) -> Tuple[Optional[str], Optional[ProbeError]]:
    """``exe --version``, read by the parser of ``tool`` (:func:`_version_parsers`)."""
    if exe is None:
        return None, None
    from envdoctor.parse.docker import DockerParseError

    parse = _version_parsers()[tool]
    ran = ctx.run([exe, "--version"])
    if ran.error:
        return None, ran.error
    try:
        return parse(ran.stdout + ran.stderr), None
    except DockerParseError as exc:
        return None, unreadable(f"{exe} --version", ran, str(exc))


def _daemon(ctx: Context, docker: str) -> Dict[str, object]:
    """What ``docker version`` and ``docker info`` say, as DockerFacts fields."""
    from envdoctor.parse.docker import DockerParseError, classify_daemon_error, parse_info_json, parse_version_json

    shown = f"{docker} version --format '{JSON}'"
    ran = ctx.run([docker, "version", "--format", JSON])
    if ran.error and ran.error.kind in ("timeout", "crashed", "permission", "not_found"):
        return {
            "daemon": "error",
            "daemon_error": ran.error.message,
            "error": dataclasses.replace(ran.error, command=shown),
        }
    try:
        version = parse_version_json(ran.stdout)
    except DockerParseError as exc:
        reason = stderr_reason(ran.stderr, named_only=True)
        if reason is None:
            return {"error": unreadable("docker version", ran, str(exc), shown)}
        # no client JSON (an older client, a wrapper) but stderr says why: the daemon's state from it
        state, socket = classify_daemon_error(reason)
        return {
            "daemon": state,
            "daemon_error": reason,
            "daemon_socket": socket,
            "error": None if state != "error" else unreadable("docker version", ran, str(exc), shown),
        }
    out: Dict[str, object] = {"client_version": _version_text(version.client)}
    if version.server is None:
        message = stderr_reason(ran.stderr) or "no server answered"
        state, socket = classify_daemon_error(message)
        out.update(daemon=state, daemon_error=message, daemon_socket=socket)
        return out
    out.update(daemon="ok", server_version=_version_text(version.server))
    client, server = loose_version(_version_text(version.client)), loose_version(_version_text(version.server))
    if client is not None and server is not None:
        out["gpus_flag_supported"] = client >= GPUS_FLAG and (version.podman_server or server >= GPUS_FLAG)
    shown = f"{docker} info --format '{JSON}'"
    info_ran = ctx.run([docker, "info", "--format", JSON])
    if info_ran.error:
        out["error"] = dataclasses.replace(info_ran.error, command=shown)
        return out
    try:
        info = parse_info_json(info_ran.stdout)
    except DockerParseError as exc:
        out["error"] = unreadable("docker info", info_ran, str(exc), shown)
        return out
    out.update(
        runtimes=info.runtimes,
        default_runtime=info.default_runtime,
        rootless=info.rootless,
        cdi_spec_dirs=info.cdi_spec_dirs,
        cdi_devices=info.cdi_devices,
    )
    return out


def probe(ctx: Context) -> DockerFacts:
    (docker, not_program), (podman, podman_np) = ctx.locate("docker"), ctx.locate("podman")
    (ctk, ctk_np), (cli, cli_np) = ctx.locate("nvidia-ctk"), ctx.locate("nvidia-container-cli")
    tools: Tuple[Tuple[Optional[str], Tool], ...] = (
        (podman, "podman"),
        (ctk, "nvidia-ctk"),
        (cli, "nvidia-container-cli"),
    )
    with ThreadPoolExecutor(max_workers=4) as pool:
        daemon = pool.submit(_daemon, ctx, docker) if docker else None
        side = [pool.submit(_tool_version, ctx, exe, tool) for exe, tool in tools]
        fields: Dict[str, object] = daemon.result() if daemon else {}
        (podman_v, podman_err), (ctk_v, ctk_err), (cli_v, cli_err) = (f.result() for f in side)
    if docker and fields.get("gpus_flag_supported") is None and fields.get("client_version"):
        client = loose_version(str(fields["client_version"]))
        if client is not None:  # no daemon answered: the client alone decides
            fields["gpus_flag_supported"] = client >= GPUS_FLAG
    listed = tuple(cast(Iterable[str], fields.get("cdi_spec_dirs") or ()))
    dirs = tuple(dict.fromkeys(listed + CDI_DIRS))
    specs = tuple(f"{d}/{name}" for d in dirs for name in ctx.listdir(d) if name.endswith((".yaml", ".yml", ".json")))
    made_for = {}
    if specs:  # imported where a spec was found, as the tools' parsers
        from envdoctor.parse.docker import parse_cdi_driver_version
    for spec in specs:
        text, _ = ctx.read(spec, limit=CDI_LIMIT)
        version = parse_cdi_driver_version(text) if text else None
        if version:
            made_for[spec] = version
    if fields.get("error") is None:
        fields["error"] = not_program or podman_err or ctk_err or cli_err or podman_np or ctk_np or cli_np
    return DockerFacts(
        client=docker,
        podman=podman,
        podman_version=podman_v,
        nvidia_ctk=ctk,
        nvidia_ctk_version=ctk_v,
        nvidia_container_cli=cli,
        nvidia_container_cli_version=cli_v,
        nvidia_container_runtime=ctx.which("nvidia-container-runtime"),
        cdi_specs=specs,
        cdi_driver_versions=made_for,
        **fields,  # type: ignore[arg-type]
    )

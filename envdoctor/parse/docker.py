"""Parsers of docker, podman and NVIDIA Container Toolkit output.

``docker version --format '{{json .}}'`` with no daemon (recorded on envdoctor's CI machine; the
JSON on stdout, the error on stderr, exit status 1)::

    {"Client":{"Version":"28.2.2","ApiVersion":"1.50",...,"Context":"default"},"Server":null}
    Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?

``docker info --format '{{json .}}'`` with a daemon (keys as in Docker's ``system.Info``)::

    {"ServerVersion":"29.7.2","Runtimes":{"io.containerd.runc.v2":{"path":"runc",...},
     "nvidia":{"path":"nvidia-container-runtime"},"runc":{"path":"runc",...}},
     "DefaultRuntime":"runc","CDISpecDirs":["/etc/cdi","/var/run/cdi"],
     "DiscoveredDevices":[{"Source":"cdi","ID":"nvidia.com/gpu=0"},...],...}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from envdoctor.parse import ParseError
from envdoctor.parse.jsontext import JsonError, loads, opt_str
from envdoctor.redact import mask_url


class DockerParseError(ParseError):
    """docker, podman or an NVIDIA tool printed something unexpected."""


@dataclass(frozen=True)
class DockerVersion:
    client: Optional[str] = None  # "28.2.2"
    server: Optional[str] = None  # None when the daemon did not answer
    server_platform: Optional[str] = None  # "Docker Engine - Community"
    podman_server: bool = False  # podman's Docker-compatible API answered (its own versions)


@dataclass(frozen=True)
class DockerInfo:
    server_version: Optional[str] = None
    runtimes: tuple[str, ...] = ()
    default_runtime: Optional[str] = None
    cdi_spec_dirs: tuple[str, ...] = ()
    cdi_devices: tuple[str, ...] = ()  # "nvidia.com/gpu=0"
    rootless: bool = False


def _first_json(text: str, what: str) -> dict:
    """The first line of ``text`` that is a JSON object (docker prints its error after it)."""
    for line in (text or "").splitlines():
        if line.lstrip().startswith("{"):
            try:
                data = loads(line)
            except JsonError as exc:
                raise DockerParseError(f"{what}: JSON envdoctor cannot read ({exc}): {line.strip()[:60]!r}") from None
            if isinstance(data, dict):
                return data
    start = (text or "").strip()[:60]
    raise DockerParseError(f"{what} printed no JSON: {start!r}" if start else f"{what} printed nothing")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(data: dict[str, Any], key: str) -> list[Any]:
    """``data[key]`` when it is a list, else nothing (a daemon of another version may differ)."""
    value = data.get(key)
    return value if isinstance(value, list) else []


def parse_version_json(text: str) -> DockerVersion:
    data = _first_json(text, "docker version")
    client, server = _dict(data.get("Client")), _dict(data.get("Server"))
    platform = _dict(server.get("Platform"))
    names = [opt_str(platform.get("Name")) or ""]
    names += [str(c.get("Name"))[:100] for c in _items(server, "Components") if isinstance(c, dict)]
    return DockerVersion(
        opt_str(client.get("Version")),
        opt_str(server.get("Version")),
        opt_str(platform.get("Name")),
        any("podman" in n.lower() for n in names),
    )


def parse_info_json(text: str) -> DockerInfo:
    data = _first_json(text, "docker info")
    runtimes = _dict(data.get("Runtimes"))
    devices = []
    for dev in _items(data, "DiscoveredDevices"):
        if isinstance(dev, dict) and dev.get("Source") == "cdi" and opt_str(dev.get("ID")):
            devices.append(dev["ID"])
    security = [s for s in _items(data, "SecurityOptions") if isinstance(s, str)]
    return DockerInfo(
        server_version=opt_str(data.get("ServerVersion")),
        runtimes=tuple(sorted(str(k) for k in runtimes)),
        default_runtime=opt_str(data.get("DefaultRuntime")),
        cdi_spec_dirs=tuple(d for d in _items(data, "CDISpecDirs") if isinstance(d, str)),
        cdi_devices=tuple(devices),
        rootless=any("name=rootless" in s for s in security),
    )


_NOT_RUNNING = re.compile(
    r"Cannot connect to the Docker daemon|Is the docker daemon running|"
    r"failed to connect to the docker API|if the daemon is running",
    re.I,
)
_DENIED = re.compile(r"permission denied while trying to connect to the docker", re.I)
#: The daemon's address in the client's error: the first word with one of these schemes.
_SOCKET_SCHEMES = ("unix://", "tcp://", "npipe://", "ssh://", "fd://")


def classify_daemon_error(text: str) -> tuple[str, Optional[str]]:
    """(state, socket) of the daemon from the client's error.

    ``Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon
    running?`` -> ("not_running", "unix:///var/run/docker.sock"); ``permission denied while trying
    to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get "http://...":
    dial unix /var/run/docker.sock: connect: permission denied`` -> ("permission_denied", ...);
    anything else -> ("error", socket or None).
    """
    text = (text or "")[:65536]
    where = _socket(text)
    if _DENIED.search(text or ""):
        return "permission_denied", where
    if _NOT_RUNNING.search(text or ""):
        return "not_running", where
    return "error", where


def _socket(text: str) -> Optional[str]:
    """``... daemon at unix:///var/run/docker.sock. Is the ...`` -> ``unix:///var/run/docker.sock``.
    Word by word (linear; a lazy regex rescans from every ``unix://``)."""
    for word in text.split():
        for scheme in _SOCKET_SCHEMES:
            k = word.find(scheme)
            if k < 0:
                continue
            address = word[k:].strip("\"'`")
            if scheme == "unix://" and ".sock" in address:
                address = address[: address.index(".sock") + len(".sock")]
            address = address.rstrip(".:,;")
            if len(address) > len(scheme):
                return mask_url(address)
    return None


def _version_after(pattern: str, text: str, what: str) -> str:
    match = re.search(pattern, text or "", re.M)
    if not match:
        first = (text or "").strip().splitlines()[:1]
        raise DockerParseError(f"{what} printed no version: {first[0][:60]!r}" if first else f"{what} printed nothing")
    return match.group(1)


def parse_podman_version(text: str) -> str:
    """``podman version 4.9.3`` -> "4.9.3"."""
    return _version_after(r"^podman version (\d+\.\d+[\w.+~-]*)", text, "podman --version")


def parse_nvidia_ctk_version(text: str) -> str:
    """``NVIDIA Container Toolkit CLI version 1.17.8`` (then ``commit: ...``) -> "1.17.8"."""
    return _version_after(r"NVIDIA Container Toolkit CLI version (\d+\.\d+[\w.+~-]*)", text, "nvidia-ctk --version")


def parse_nvidia_container_cli_version(text: str) -> str:
    """``cli-version: 1.17.5`` (then ``lib-version: 1.17.5``, ``build date: ...``) -> "1.17.5"."""
    return _version_after(r"^cli-version: (\d+\.\d+[\w.+~-]*)", text, "nvidia-container-cli --version")


_CDI_DRIVER_LIB = re.compile(r"""hostPath["']?\s*:\s*["']?\S*/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)["',\s]""")


def parse_cdi_driver_version(text: str) -> Optional[str]:
    """The driver a CDI spec was generated for: the version in the host paths of its libcuda.so /
    libnvidia-ml.so mounts (``nvidia-ctk cdi generate`` names the files by the driver's version)::

        - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20
          hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20

    -> ``"570.133.20"``; None for a spec that names no such file (another vendor's, a WSL spec's
    ``libcuda.so.1.1`` counts: its version is not a driver's, so None), YAML or JSON alike.

    >>> parse_cdi_driver_version('{"hostPath": "/usr/lib64/libnvidia-ml.so.580.159.04", "options": []}')
    '580.159.04'
    """
    for m in _CDI_DRIVER_LIB.finditer(text + "\n"):
        version = m.group(1)
        if int(version.split(".")[0]) >= 100:  # a driver branch (R470 ... R590), not libcuda.so.1.1
            return version
    return None

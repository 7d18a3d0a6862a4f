"""Facts about docker / podman and the NVIDIA Container Toolkit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class DockerFacts:
    client: Optional[str] = None  # path of the docker client
    client_version: Optional[str] = None  # "28.2.2"
    daemon: Optional[str] = None  # "ok", "not_running", "permission_denied", "error"
    daemon_error: Optional[str] = None  # the daemon's real message
    daemon_socket: Optional[str] = None  # "unix:///var/run/docker.sock" (from the error)
    rootless: Optional[bool] = None  # docker info SecurityOptions has name=rootless
    server_version: Optional[str] = None
    runtimes: tuple[str, ...] = ()  # ("io.containerd.runc.v2", "nvidia", "runc")
    default_runtime: Optional[str] = None
    cdi_spec_dirs: tuple[str, ...] = ()  # from docker info
    cdi_specs: tuple[str, ...] = ()  # spec files found: /etc/cdi/nvidia.yaml
    cdi_driver_versions: Dict[str, str] = field(default_factory=dict)  # spec -> the driver it was made for
    cdi_devices: tuple[str, ...] = ()  # docker info DiscoveredDevices: "nvidia.com/gpu=0"
    gpus_flag_supported: Optional[bool] = None  # Docker >= 19.03
    podman: Optional[str] = None
    podman_version: Optional[str] = None
    nvidia_ctk: Optional[str] = None
    nvidia_ctk_version: Optional[str] = None
    nvidia_container_cli: Optional[str] = None
    nvidia_container_cli_version: Optional[str] = None
    nvidia_container_runtime: Optional[str] = None
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None

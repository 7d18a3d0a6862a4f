"""Verify checks of docker and the NVIDIA Container Toolkit: ED709 it no longer works, ED725 versions
changed. Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import commands
from envdoctor.findings import Finding
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, skip_reason

REF_CONTAINER = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"


def container_toolkit(pair: Pair) -> Iterator[Outcome]:
    """ED709 the container toolkit no longer works; ED725 versions changed."""
    reason = skip_reason(pair, "docker")
    if reason:
        yield NotCompared(reason)
        return
    b, a = pair.before.docker, pair.after.docker
    broken: list[str] = []
    fix: list[str] = []
    if b.client and not a.client:
        said = a.error.message if a.error is not None else ""
        now = said if said.startswith("docker: ") else "it is not found now"
        broken.append(f"docker was at {b.client}; {now}")
    elif b.daemon == "ok" and a.daemon != "ok":
        broken.append(
            f"the docker daemon answered in the baseline; now: {a.daemon or 'unknown'}"
            + (f" ({a.daemon_error})" if a.daemon_error else "")
        )
        fix += ["sudo systemctl start docker", "sudo systemctl status docker --no-pager | tail -20"]
    if a.daemon == "ok":
        if "nvidia" in b.runtimes and "nvidia" not in a.runtimes:
            broken.append(
                "the nvidia runtime is no longer registered with docker "
                f"(runtimes now: {', '.join(a.runtimes) or 'none'})"
            )
            fix += list(commands.configure_docker(bool(a.rootless))[:-1])
        if b.cdi_devices and not a.cdi_devices:
            broken.append("docker no longer discovers CDI GPUs (" + ", ".join(b.cdi_devices[:3]) + " in the baseline)")
    if b.cdi_specs and not a.cdi_specs:
        broken.append("the CDI spec is gone: " + ", ".join(b.cdi_specs))
    if (b.cdi_specs and not a.cdi_specs) or (a.daemon == "ok" and b.cdi_devices and not a.cdi_devices):
        fix.append("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    for label, x, y in (
        ("nvidia-ctk", b.nvidia_ctk, a.nvidia_ctk),
        ("nvidia-container-cli", b.nvidia_container_cli, a.nvidia_container_cli),
        ("nvidia-container-runtime", b.nvidia_container_runtime, a.nvidia_container_runtime),
    ):
        if x and not y:
            broken.append(f"{label} was at {x}; it is not found now")
            fix += list(commands.install_container_toolkit(pair.after.system))
    if broken:
        fix.append(f"{commands.DOCKER_GPU_TEST}   # the check that containers get the GPU")
        yield Finding(
            "ED709",
            "error",
            "The NVIDIA Container Toolkit no longer works as in the baseline",
            evidence=tuple(broken),
            fix=tuple(dict.fromkeys(fix)),
            reference=REF_CONTAINER,
            area="docker",
        )
    changes = []
    for label, x, y in (
        ("docker client", b.client_version, a.client_version),
        ("docker daemon", b.server_version, a.server_version),
        ("nvidia-ctk", b.nvidia_ctk_version, a.nvidia_ctk_version),
        ("nvidia-container-cli", b.nvidia_container_cli_version, a.nvidia_container_cli_version),
        ("podman", b.podman_version, a.podman_version),
    ):
        if x and y and x != y:
            changes.append(f"{label} {x} -> {y}")
        elif y and not x:
            changes.append(f"{label} {y} found now")
    new_runtimes = [r for r in a.runtimes if r not in b.runtimes]
    if new_runtimes and a.daemon == "ok" and b.daemon == "ok":
        changes.append("docker runtimes added: " + ", ".join(new_runtimes))
    if changes:
        yield Finding(
            "ED725", "info", "Container tools changed: " + changes[0], evidence=tuple(changes[1:]), area="docker"
        )
    if not broken and not changes and (a.client or a.podman):
        parts = [f"docker {a.client_version}" if a.client_version else "docker"]
        if a.daemon:
            parts.append(f"daemon {a.daemon}")
        if "nvidia" in a.runtimes:
            parts.append("nvidia runtime")
        if a.cdi_specs:
            parts.append("CDI")
        yield Same(", ".join(parts))

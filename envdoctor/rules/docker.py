"""ED5xx: docker, podman and the NVIDIA Container Toolkit. Pure: facts in, findings out.

Install commands are those of NVIDIA's Container Toolkit install guide (NVIDIA/cloud-native-docs
``container-toolkit/install-guide.md``): the libnvidia-container repository (keyring + list file
for apt, .repo file for dnf and zypper), ``nvidia-ctk runtime configure --runtime=docker``, a
restart of Docker; CDI specs with ``nvidia-ctk cdi generate`` (toolkit >= 1.12).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from envdoctor import commands
from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.gpus import DRIVER, PCI, machine_gpus
from envdoctor.table import Table

REF_TOOLKIT = commands.CONTAINER_TOOLKIT_GUIDE
REF_CDI = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
REF_POSTINSTALL = "https://docs.docker.com/engine/install/linux-postinstall/"
REF_DAEMON = "https://docs.docker.com/engine/daemon/start/"
REF_INSTALL = "https://docs.docker.com/engine/install/"
TEST = commands.DOCKER_GPU_TEST


def install_container_toolkit(facts: Facts) -> tuple[str, ...]:
    """The toolkit's install for this distribution; inside a container, a line for the host (where
    the Docker daemon runs), whose distribution this container does not know."""
    if facts.system.container:
        return (
            "# on the host, where the Docker daemon runs: install the NVIDIA Container Toolkit "
            f"(envdoctor check run on the host prints the commands for its distribution; {REF_TOOLKIT})",
        )
    return commands.install_container_toolkit(facts.system)


def configure_docker(facts: Facts) -> tuple[str, ...]:
    return commands.on_host(facts.system, commands.configure_docker(bool(facts.docker.rootless)), restart=False)


def _gpus(facts: Facts, table: Optional[Table]) -> list[str]:
    """One evidence line per GPU of :func:`envdoctor.gpus.machine_gpus`."""
    out = []
    for g in machine_gpus(facts, table):
        if g.kind == PCI:
            out.append(f"PCI {g.address}: {g.name or 'NVIDIA ' + str(g.pci_id)} ({facts.pci.source or 'PCI bus'})")
        elif g.kind == DRIVER:
            out.append(f"GPU {g.index}: {g.name or g.uuid or '?'} ({g.source})")
        else:
            out.append(f"cuda:{g.index}: {g.name or g.uuid or '?'} ({g.source})")
    return out


def _nvidia_cdi(facts: Facts) -> bool:
    d = facts.docker
    return any("nvidia" in s.rsplit("/", 1)[-1] for s in d.cdi_specs) or any(
        x.startswith("nvidia.com/") for x in d.cdi_devices
    )


def _docker(facts: Facts) -> str:
    d = facts.docker
    daemon = f", daemon {d.server_version}" if d.server_version else ""
    return f"docker {d.client_version or '?'} at {d.client}{daemon}"


def daemon_unreachable(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED501: the daemon is not running; ED502: permission denied on its socket; ED506: another error."""
    d = facts.docker
    if not d.client or d.daemon in (None, "ok"):
        return
    evidence = (_docker(facts), f"docker version: {d.daemon_error}")
    rootless = bool(d.daemon_socket and "/run/user/" in d.daemon_socket)
    if d.daemon == "not_running":
        inside = facts.system.container
        yield Finding(
            "ED501",
            "info" if inside else "warning",
            "The docker client is installed but no Docker daemon is running"
            + (f" (inside {inside})" if inside else ""),
            evidence=evidence
            + ((f"this is a {inside} container ({facts.system.container_evidence})",) if inside else ()),
            fix=("# on the host, start this container with: -v /var/run/docker.sock:/var/run/docker.sock",)
            if inside
            else ("systemctl --user start docker",)
            if rootless
            else (
                "# Docker Desktop: Settings > Resources > WSL integration, turned on for this distribution",
                "sudo service docker start   # Docker Engine inside WSL2 (systemctl once systemd=true is in "
                "/etc/wsl.conf)",
            )
            if facts.system.wsl
            else ("sudo systemctl start docker", "sudo systemctl enable docker   # start it at boot too"),
            reference=REF_DAEMON,
            area="docker",
            explanation=(
                "A container has no Docker daemon of its own; it can use the host's through its socket."
                if inside
                else "Start the daemon; if it fails, `sudo journalctl -u docker` says why."
            ),
        )
    elif d.daemon == "permission_denied":
        sock = (d.daemon_socket or "/var/run/docker.sock").removeprefix("unix://")
        yield Finding(
            "ED502",
            "warning",
            "You may not use the Docker daemon: permission denied on its socket",
            evidence=evidence + ((f"user {facts.system.user}",) if facts.system.user else ()),
            fix=(
                f"stat -c '%g' {sock}   # the group id that owns the host's socket",
                "# on the host: start this container with --group-add <that id>",
            )
            if facts.system.container
            else ('sudo usermod -aG docker "$USER"', "newgrp docker   # or log out and back in", "docker info"),
            reference=REF_POSTINSTALL,
            area="docker",
            explanation="Members of the docker group may use the daemon without sudo (this is equivalent to root "
            "on this machine). The new group applies to new logins, hence newgrp or a fresh login.",
        )
    else:
        yield Finding(
            "ED506",
            "warning",
            CODES["ED506"].title,
            evidence=evidence,
            reference=REF_DAEMON,
            area="docker",
            fix=commands.on_host(
                facts.system,
                (
                    "sudo systemctl status docker",
                    "sudo journalctl -u docker --since '15 min ago'",
                    "sudo systemctl restart docker",
                ),
                restart=False,
            ),
            explanation="The client reached no working daemon: it is hung, starting, or DOCKER_HOST / the docker "
            "context points elsewhere (docker context ls).",
        )


def no_container_toolkit(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED503: GPU + running daemon, no nvidia runtime, no CDI spec, no nvidia-ctk (install it);
    ED504: nvidia-ctk is installed but Docker is not configured for it."""
    d = facts.docker
    gpus = _gpus(facts, table)
    if d.daemon != "ok" or not gpus or "nvidia" in d.runtimes or _nvidia_cdi(facts):
        return
    evidence = [
        _docker(facts),
        *gpus,
        f"docker runtimes: {', '.join(d.runtimes) or 'none'} (docker info); no 'nvidia'",
        f"no NVIDIA CDI spec in {', '.join(d.cdi_spec_dirs or ('/etc/cdi', '/var/run/cdi'))}",
    ]
    if d.nvidia_ctk is None:
        yield Finding(
            "ED503",
            "error",
            CODES["ED503"].title,
            evidence=tuple(evidence + ["nvidia-ctk: not on PATH"]),
            fix=install_container_toolkit(facts) + configure_docker(facts),
            reference=REF_TOOLKIT,
            area="docker",
            explanation='`docker run --gpus all` fails with \'could not select device driver "" with capabilities: '
            "[[gpu]]' until the toolkit is installed and Docker restarted with its runtime.",
        )
    else:
        yield Finding(
            "ED504",
            "warning",
            CODES["ED504"].title,
            evidence=tuple(evidence + [f"nvidia-ctk {d.nvidia_ctk_version or '?'} at {d.nvidia_ctk}"]),
            fix=configure_docker(facts),
            reference=REF_TOOLKIT,
            area="docker",
            explanation="Docker's daemon.json lacks the nvidia runtime (it is lost when Docker is reinstalled): "
            "configure it again and restart Docker.",
        )


def docker_too_old(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED505: Docker < 19.03 has no --gpus."""
    d = facts.docker
    if d.gpus_flag_supported is not False or not _gpus(facts, table):
        return
    yield Finding(
        "ED505",
        "error",
        f"Docker {d.server_version or d.client_version} is older than 19.03: no `docker run --gpus`",
        evidence=(_docker(facts), "docker run --gpus needs client and daemon >= 19.03"),
        fix=(f"# upgrade Docker Engine from Docker's repository: {REF_INSTALL}",)
        + install_container_toolkit(facts)
        + configure_docker(facts),
        reference=REF_TOOLKIT,
        area="docker",
        explanation="Before 19.03 GPUs needed the nvidia-docker2 wrapper, which NVIDIA no longer maintains.",
    )


def podman_without_cdi(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED507: podman on a GPU machine without an NVIDIA CDI spec."""
    d = facts.docker
    gpus = _gpus(facts, table)
    if not d.podman or not gpus or _nvidia_cdi(facts):
        return
    fix: tuple[str, ...] = () if d.nvidia_ctk else install_container_toolkit(facts)
    yield Finding(
        "ED507",
        "warning",
        CODES["ED507"].title,
        evidence=(
            f"podman {d.podman_version or '?'} at {d.podman}",
            *gpus,
            f"no NVIDIA CDI spec in {', '.join(d.cdi_spec_dirs or ('/etc/cdi', '/var/run/cdi'))}",
            f"nvidia-ctk: {d.nvidia_ctk or 'not on PATH'}",
        ),
        fix=fix
        + commands.on_host(facts.system, ("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",), restart=False)
        + ("nvidia-ctk cdi list", "podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L"),
        reference=REF_CDI,
        area="docker",
        explanation="podman takes GPUs through CDI. Generate the spec again after every driver upgrade "
        "(toolkit >= 1.18 ships the nvidia-cdi-refresh service that does it).",
    )


def _upgrade_toolkit(facts: Facts, fixed: str) -> tuple[str, ...]:
    """Upgrade the toolkit from NVIDIA's repository (the distribution's own package may lag)."""
    fam = commands.family(facts.system)
    if fam == "debian":
        cmds: tuple[str, ...] = (
            "sudo apt-get update",
            "sudo apt-get install --only-upgrade -y nvidia-container-toolkit "
            "nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1",
        )
    elif fam == "rhel":
        cmds = (
            "sudo dnf upgrade -y nvidia-container-toolkit nvidia-container-toolkit-base "
            "libnvidia-container-tools libnvidia-container1",
        )
    elif fam == "suse":
        cmds = (
            "sudo zypper --gpg-auto-import-keys update -y nvidia-container-toolkit "
            "nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1",
        )
    else:
        cmds = (f"# upgrade nvidia-container-toolkit from NVIDIA's repository: {REF_TOOLKIT}",)
    cmds += ("sudo systemctl restart docker   # running containers keep the old hooks until restarted",)
    return commands.on_host(facts.system, cmds, restart=False) + (
        f"# no {fixed} in your repositories? add NVIDIA's (the distribution's package may lag): {REF_TOOLKIT}",
        f"nvidia-ctk --version   # {fixed} or newer",
    )


def toolkit_security_fixes(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED508: an NVIDIA Container Toolkit older than the release that fixes a known container escape
    (data/security.toml: NVIDIA's security bulletins)."""
    from envdoctor.table.security import affecting, load_toolkit_fixes

    d = facts.docker
    installed = d.nvidia_ctk_version or d.nvidia_container_cli_version
    if not installed:
        return
    missing = [f for f in affecting(load_toolkit_fixes(), installed) if f.escape]
    if not missing:
        return
    newest = missing[-1]
    told = "nvidia-ctk --version" if d.nvidia_ctk_version else "nvidia-container-cli --version"
    evidence = [f"NVIDIA Container Toolkit {installed} ({told})"]
    evidence += [
        f"{', '.join(f.cves)}: fixed in {f.fixed} (NVIDIA bulletin {f.bulletin}, {f.date}): {f.summary}"
        + (" (unconfirmed in data/security.toml)" if f.unconfirmed or "summary" in f.unconfirmed_fields else "")
        for f in missing
    ]
    yield Finding(
        "ED508",
        "warning",
        f"NVIDIA Container Toolkit {installed} has known container-escape CVEs: {newest.fixed} or newer fixes them",
        evidence=tuple(evidence),
        fix=_upgrade_toolkit(facts, newest.fixed),
        reference=newest.bulletin,
        area="docker",
        explanation="A container started with the NVIDIA runtime or CDI hooks of this toolkit can reach the host "
        "through a crafted image (the bulletins above); on a machine that runs images of others "
        "(a shared cluster, CI) that is a host compromise. The fix is the toolkit's upgrade alone.",
    )


def stale_cdi_spec(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED509: a CDI spec generated for another driver version than the one loaded (a driver upgrade
    since): its mounts name libcuda.so.<old> and libnvidia-ml.so.<old>, which are gone."""
    d, drv = facts.docker, facts.driver
    loaded = drv.kernel_module_version or drv.driver_version
    if not loaded or drv.mismatch or not d.cdi_driver_versions:
        return  # a reboot is pending (ED102): the spec may be the new driver's already
    for spec, made_for in sorted(d.cdi_driver_versions.items()):
        if made_for == loaded:
            continue
        refresh: tuple[str, ...] = (f"sudo nvidia-ctk cdi generate --output={spec}",)
        if spec.startswith("/var/run/cdi/"):
            refresh += ("# toolkit >= 1.18: sudo systemctl restart nvidia-cdi-refresh   # regenerates it",)
        yield Finding(
            "ED509",
            "warning",
            f"The CDI spec {spec} was generated for driver {made_for}; {loaded} is loaded",
            evidence=(
                f"{spec}: hostPath libcuda.so.{made_for} / libnvidia-ml.so.{made_for}",
                f"loaded driver {loaded} ({drv.kernel_module_source or 'the driver facts'})",
            ),
            fix=commands.on_host(facts.system, refresh, restart=False)
            + ("nvidia-ctk cdi list   # the devices the new spec offers",),
            reference=REF_CDI,
            area="docker",
            explanation="CDI injects exactly the files the spec names; after a driver upgrade those are gone, so "
            "containers started with --device nvidia.com/gpu=... (podman, Docker with CDI, "
            "Kubernetes in CDI mode) fail to start or get the old libraries. Generate the spec again.",
        )


RULES = (
    daemon_unreachable,
    no_container_toolkit,
    docker_too_old,
    podman_without_cdi,
    toolkit_security_fixes,
    stale_cdi_spec,
)

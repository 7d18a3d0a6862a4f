"""parse/docker.py against recorded docker output and public daemon errors."""

from __future__ import annotations

import pytest

from envdoctor.parse.docker import (
    DockerParseError,
    classify_daemon_error,
    parse_info_json,
    parse_nvidia_container_cli_version,
    parse_nvidia_ctk_version,
    parse_podman_version,
    parse_version_json,
)
from tests.fakes import recorded

CPU = "cpu-nvcc13-docker-client"
D29 = "public-docker29-nvidia-cdi"
TEXTS = "public-container-cli-texts"


def test_version_json_without_daemon():
    v = parse_version_json(recorded(CPU, "docker-version-json.txt"))
    assert (v.client, v.server, v.podman_server) == ("28.2.2", None, False)


def test_version_json_with_daemon():
    v = parse_version_json(recorded(D29, "docker-version.txt"))
    assert (v.client, v.server, v.server_platform) == ("29.7.2", "29.7.2", "Docker Engine - Community")


def test_version_json_of_podman_compat_api():
    text = (
        '{"Client":{"Version":"27.3.1"},"Server":{"Platform":{"Name":"linux/amd64/ubuntu-24.04"},'
        '"Components":[{"Name":"Podman Engine","Version":"4.9.3"}],"Version":"4.9.3"}}'
    )
    assert parse_version_json(text).podman_server


def test_info_json_without_daemon_is_empty():
    info = parse_info_json(recorded(CPU, "docker-info.txt"))
    assert info.server_version is None and info.runtimes == () and info.cdi_spec_dirs == ()


def test_info_json_with_nvidia_runtime_and_cdi():
    info = parse_info_json(recorded(D29, "docker-info.txt"))
    assert info.server_version == "29.7.2"
    assert info.runtimes == ("io.containerd.runc.v2", "nvidia", "runc")
    assert info.default_runtime == "runc"
    assert info.cdi_spec_dirs == ("/etc/cdi", "/var/run/cdi")
    assert info.cdi_devices[0] == "nvidia.com/gpu=0" and len(info.cdi_devices) == 3
    assert info.rootless is False


@pytest.mark.parametrize("text", ["", "Error: unknown flag: --format", '{"Client":', "[1, 2]"])
def test_json_garbage_raises(text):
    with pytest.raises(DockerParseError):
        parse_version_json(text)
    with pytest.raises(DockerParseError):
        parse_info_json(text)


@pytest.mark.parametrize(
    "name, state, socket",
    [
        ("docker-version-permission-denied.txt", "permission_denied", "unix:///var/run/docker.sock"),
        ("docker-version-permission-denied-api.txt", "permission_denied", "unix:///var/run/docker.sock"),
        ("docker-info-permission-denied-docker19.txt", "permission_denied", "unix:///var/run/docker.sock"),
        ("docker-version-rootless-not-running.txt", "not_running", "unix:///run/user/1351/docker.sock"),
    ],
)
def test_daemon_errors(name, state, socket):
    assert classify_daemon_error(recorded(TEXTS, name)) == (state, socket)


def test_daemon_not_running_on_this_machine():
    text = recorded(CPU, "docker-version-json.txt").splitlines()[1]
    assert classify_daemon_error(text) == ("not_running", "unix:///var/run/docker.sock")


def test_daemon_other_error():
    assert classify_daemon_error('error during connect: Get "http://docker.example:2375/v1.50/version": EOF') == (
        "error",
        None,
    )


def test_tool_versions():
    assert parse_nvidia_ctk_version(recorded(D29, "nvidia-ctk-version.txt")) == "1.13.1"
    assert parse_nvidia_container_cli_version(recorded(D29, "nvidia-container-cli-version.txt")) == "1.17.5"
    assert parse_podman_version(recorded(TEXTS, "podman-version.txt")) == "4.9.3"
    for parse in (parse_nvidia_ctk_version, parse_nvidia_container_cli_version, parse_podman_version):
        with pytest.raises(DockerParseError):
            parse("Segmentation fault")

"""probes/docker.py with fake docker, podman and NVIDIA tools replaying recorded output."""

from __future__ import annotations

import time

from envdoctor.probes.context import Context
from envdoctor.probes.docker import probe
from tests.fakes import FakeBin, recorded

CPU = "cpu-nvcc13-docker-client"
D29 = "public-docker29-nvidia-cdi"
TEXTS = "public-container-cli-texts"
VERSION = "version --format {{json .}}"
INFO = "info --format {{json .}}"


def split(machine, name):
    """(stdout, stderr) of a recording: docker prints the JSON on stdout, the daemon error on stderr."""
    lines = recorded(machine, name).splitlines(keepends=True)
    return lines[0], "".join(lines[1:])


def docker(fb, version, info=None, **extra):
    by_args = {VERSION: version}
    if info is not None:
        by_args[INFO] = info
    return fb.add("docker", by_args=by_args, stderr="unexpected call", rc=99, **extra)


def run(tmp_path, fb, timeout=5.0):
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return probe(Context(root=root, env=fb.env(hermetic=True), timeout=timeout))


def test_this_machine_client_without_daemon(tmp_path):
    fb = FakeBin(tmp_path)
    out, err = split(CPU, "docker-version-json.txt")
    exe = docker(fb, (out, err, 1))  # docker info is not asked: it would answer "unexpected call"
    facts = run(tmp_path, fb)
    assert (facts.client, facts.client_version) == (str(exe), "28.2.2")
    assert facts.daemon == "not_running" and facts.daemon_socket == "unix:///var/run/docker.sock"
    assert facts.daemon_error == (
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    )
    assert facts.server_version is None and facts.runtimes == () and facts.gpus_flag_supported is True
    assert facts.nvidia_ctk is None and facts.podman is None and facts.error is None


def test_daemon_with_nvidia_runtime_and_cdi(tmp_path):
    fb = FakeBin(tmp_path)
    docker(fb, (recorded(D29, "docker-version.txt"), "", 0), (recorded(D29, "docker-info.txt"), "", 0))
    ctk = fb.add("nvidia-ctk", by_args={"--version": (recorded(D29, "nvidia-ctk-version.txt"), "", 0)}, rc=99)
    fb.add(
        "nvidia-container-cli", by_args={"--version": (recorded(D29, "nvidia-container-cli-version.txt"), "", 0)}, rc=99
    )
    fb.add("nvidia-container-runtime", rc=99)
    (tmp_path / "root/etc/cdi").mkdir(parents=True)
    (tmp_path / "root/etc/cdi/nvidia.yaml").write_text(recorded(D29, "cdi-nvidia-yaml-head.txt"))
    (tmp_path / "root/etc/cdi/README").write_text("not a spec")
    facts = run(tmp_path, fb)
    assert facts.daemon == "ok" and (facts.client_version, facts.server_version) == ("29.7.2", "29.7.2")
    assert facts.runtimes == ("io.containerd.runc.v2", "nvidia", "runc") and facts.default_runtime == "runc"
    assert facts.cdi_spec_dirs == ("/etc/cdi", "/var/run/cdi")
    assert facts.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    assert facts.cdi_devices[-1] == "nvidia.com/gpu=all"
    assert (facts.nvidia_ctk, facts.nvidia_ctk_version) == (str(ctk), "1.13.1")
    assert facts.nvidia_container_cli_version == "1.17.5" and facts.nvidia_container_runtime is not None
    assert facts.gpus_flag_supported is True and facts.rootless is False and facts.error is None


def test_permission_denied(tmp_path):
    for name in ("docker-version-permission-denied.txt", "docker-version-permission-denied-api.txt"):
        fb = FakeBin(tmp_path / name)
        docker(fb, (*split(TEXTS, name), 1))
        facts = run(tmp_path / name, fb)
        assert facts.daemon == "permission_denied" and facts.daemon_socket == "unix:///var/run/docker.sock"
        assert facts.daemon_error.startswith("permission denied") and facts.error is None


def test_rootless_daemon_not_running(tmp_path):
    fb = FakeBin(tmp_path)
    docker(fb, (*split(TEXTS, "docker-version-rootless-not-running.txt"), 1))
    facts = run(tmp_path, fb)
    assert (facts.daemon, facts.daemon_socket) == ("not_running", "unix:///run/user/1351/docker.sock")


def test_docker_18_has_no_gpus_flag(tmp_path):
    fb = FakeBin(tmp_path)
    docker(
        fb,
        (recorded(TEXTS, "docker-version-18.09.txt"), "", 0),
        ('{"ServerVersion":"18.09.6","Runtimes":{"runc":{"path":"docker-runc"}},"DefaultRuntime":"runc"}', "", 0),
    )
    facts = run(tmp_path, fb)
    assert facts.server_version == "18.09.6" and facts.gpus_flag_supported is False and facts.runtimes == ("runc",)


def test_hung_daemon_the_rest_is_still_reported(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add("docker", hang=True)
    fb.add("nvidia-ctk", by_args={"--version": (recorded(D29, "nvidia-ctk-version.txt"), "", 0)}, rc=99)
    fb.add("podman", by_args={"--version": (recorded(TEXTS, "podman-version.txt"), "", 0)}, rc=99)
    started = time.monotonic()
    facts = run(tmp_path, fb, timeout=1)
    assert time.monotonic() - started < 3
    assert facts.daemon == "error" and "did not answer in 1 s" in facts.daemon_error
    assert facts.error.kind == "timeout" and facts.error.command.endswith("version --format '{{json .}}'")
    assert facts.nvidia_ctk_version == "1.13.1" and facts.podman_version == "4.9.3"


def test_docker_info_hangs_after_version_answered(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add_script("docker", f'case "$*" in "{VERSION}") cat {tmp_path}/v.json;; *) exec sleep 60;; esac')
    (tmp_path / "v.json").write_text(recorded(D29, "docker-version.txt"))
    facts = run(tmp_path, fb, timeout=1)
    assert facts.daemon == "ok" and facts.server_version == "29.7.2"
    assert facts.error.kind == "timeout" and "info" in facts.error.command and facts.runtimes == ()


def test_garbage_from_docker_and_nvidia_ctk(tmp_path):
    fb = FakeBin(tmp_path)
    docker(fb, ("\x1b[31mSegmentation fault\x1b[0m\n", "", 139))
    fb.add("nvidia-ctk", stdout="no version here")
    facts = run(tmp_path, fb)
    assert facts.error.kind == "unparseable" and facts.client is not None and facts.daemon is None
    fb = FakeBin(tmp_path / "b")
    docker(fb, (recorded(D29, "docker-version.txt"), "", 0), ('{"ServerVersion":"29.7.2","Runt', "", 0))
    fb.add("nvidia-ctk", stdout="no version here")
    facts = run(tmp_path / "b", fb)
    assert facts.daemon == "ok" and facts.error.kind == "unparseable" and "info" in facts.error.command
    fb = FakeBin(tmp_path / "c")
    fb.add("nvidia-ctk", stdout="no version here")
    facts = run(tmp_path / "c", fb)
    assert facts.client is None and facts.nvidia_ctk_version is None and facts.error.kind == "unparseable"


def test_nvidia_container_cli_fails(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add(
        "nvidia-container-cli",
        stderr="nvidia-container-cli: initialization error: load library failed: "
        "libnvidia-ml.so.1: cannot open shared object file: no such file or directory",
        rc=1,
    )
    facts = run(tmp_path, fb)
    assert facts.nvidia_container_cli is not None and facts.nvidia_container_cli_version is None
    assert facts.error.kind == "exit_status" and "libnvidia-ml.so.1" in facts.error.message


def test_nothing_installed(tmp_path):
    facts = run(tmp_path, FakeBin(tmp_path))
    assert facts.client is None and facts.daemon is None and facts.error is None and facts.cdi_specs == ()


def test_cdi_specs_are_read_for_the_driver_version_they_were_generated_for(tmp_path):
    """The spec's driver version is in its libcuda.so.VERSION / libnvidia-ml.so.VERSION host paths
    (tests/fixtures/public-docker29-nvidia-cdi/cdi-nvidia-yaml-t4-570.yaml, a real generated spec)."""
    from envdoctor.probes.context import Context
    from envdoctor.probes.docker import probe
    from tests.fakes import FakeBin, recorded

    root = tmp_path / "root"
    (root / "etc/cdi").mkdir(parents=True)
    (root / "etc/cdi/nvidia.yaml").write_text(recorded("public-docker29-nvidia-cdi", "cdi-nvidia-yaml-t4-570.yaml"))
    (root / "var/run/cdi").mkdir(parents=True)
    (root / "var/run/cdi/other.yaml").write_text("cdiVersion: 0.6.0\nkind: vendor.com/device\ndevices: []\n")
    facts = probe(Context(root=root, env=FakeBin(tmp_path).env(hermetic=True), timeout=2.0))
    assert facts.cdi_specs == ("/etc/cdi/nvidia.yaml", "/var/run/cdi/other.yaml")
    assert facts.cdi_driver_versions == {"/etc/cdi/nvidia.yaml": "570.133.20"}


def test_each_tool_has_its_version_parser_in_a_typed_table():
    """The parsers are a table keyed by the Tool literal (mypy checks a misspelt key or parser;
    the names looked up by getattr were not checked), one for each tool the probe reads."""
    import typing

    from envdoctor.probes import docker as docker_probe

    table = docker_probe._version_parsers()
    assert list(table) == list(typing.get_args(docker_probe.Tool))
    assert table["nvidia-ctk"]("NVIDIA Container Toolkit CLI version 1.17.5\ncommit: f785e908\n") == "1.17.5"

"""Probes say why a tool failed in the tool's words, and what a thing on PATH is when it is no program.

Issue 12: a tool whose standard output is not the shape expected while its standard error says why
(docker refusing the connection, a permission problem, conda's error JSON) was reported as a parse
error; a directory or a non-executable file named nvidia-smi, docker, conda or nvcc on PATH was
reported as "not installed"; an unreadable folder on PATH crashed the toolkit probe.
"""

from __future__ import annotations

import os
import pathlib

from envdoctor.facts import Facts
from envdoctor.probes import conda, docker, driver, toolkit
from envdoctor.probes.context import Context
from envdoctor.render.text import conda_rows, docker_rows, gpu_rows, toolkit_rows
from tests.fakes import FakeBin, recorded
from tests.machines import SMI_QUERY_ARGS

TEXTS = "public-container-cli-texts"
D29 = "public-docker29-nvidia-cdi"
VERSION = "version --format {{json .}}"
INFO = "info --format {{json .}}"
DENIED = (
    "ERROR: Got permission denied while trying to connect to the Docker daemon socket at "
    'unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.40/info": dial unix '
    "/var/run/docker.sock: connect: permission denied"
)


def _ctx(tmp_path, fb, **env):
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return Context(root=root, env=fb.env(hermetic=True, **env), timeout=5)


# --- standard error says why -------------------------------------------------------------------


def test_docker_version_without_json_but_permission_denied_on_stderr(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add("docker", by_args={VERSION: ("", DENIED + "\n", 1)}, rc=99)
    facts = docker.probe(_ctx(tmp_path, fb))
    assert facts.daemon == "permission_denied" and facts.daemon_error == DENIED
    assert facts.daemon_socket == "unix:///var/run/docker.sock" and facts.error is None


def test_docker_info_not_json_reports_the_reason_on_stderr(tmp_path):
    # docker 19 prints its text layout on stdout and the daemon's complaint on stderr
    fb = FakeBin(tmp_path)
    fb.add(
        "docker",
        by_args={
            VERSION: (recorded(D29, "docker-version.txt"), "", 0),
            INFO: ("Client:\n Debug Mode: false\n\nServer:\n", DENIED + "\nerrors pretty printing info\n", 0),
        },
        rc=99,
    )
    facts = docker.probe(_ctx(tmp_path, fb))
    assert facts.daemon == "ok" and facts.error.kind == "permission"
    assert facts.error.message == "docker info: " + DENIED


def test_docker_garbage_with_nothing_on_stderr_says_it_cannot_read_it(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add("docker", by_args={VERSION: ("Segmentation fault\n", "", 0)}, rc=99)
    facts = docker.probe(_ctx(tmp_path, fb))
    assert facts.error.kind == "unparseable"
    assert facts.error.message == (
        "docker version printed output envdoctor cannot read (no JSON: 'Segmentation fault')"
    )


def test_conda_error_json_with_exit_status_0_is_reported_as_conda_said_it(tmp_path):
    fb = FakeBin(tmp_path)
    error = (
        '{"caused_by": "None", "error": "CondaError: Run \'conda init\' before \'conda activate\'", '
        '"exception_name": "CondaError", "message": "Run \'conda init\' before \'conda activate\'"}\n'
    )
    exe = fb.add("conda", stdout=error)
    facts = conda.probe(_ctx(tmp_path, fb))
    assert facts.exe == str(exe) and facts.error.kind == "exit_status"
    assert facts.error.message == f"{exe} info --json: Run 'conda init' before 'conda activate'"


def test_conda_garbage_on_stdout_and_a_traceback_on_stderr(tmp_path):
    fb = FakeBin(tmp_path)
    exe = fb.add(
        "conda",
        stdout="# >>>>>>>>>>>>>>>>>>>>>> ERROR REPORT <<<<<<<<<<<<<<<<<<<<<<\n",
        stderr='Traceback (most recent call last):\n  File "/opt/conda/bin/conda", line 12\n'
        "PermissionError: [Errno 13] Permission denied: '/opt/conda/pkgs/urls.txt'\n",
    )
    facts = conda.probe(_ctx(tmp_path, fb))
    assert facts.error.kind == "permission"
    assert facts.error.message == f"{exe}: PermissionError: [Errno 13] Permission denied: '/opt/conda/pkgs/urls.txt'"


def test_nvidia_smi_unreadable_query_with_a_reason_on_stderr(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add(
        "nvidia-smi",
        by_args={
            SMI_QUERY_ARGS: (
                "\x00\x01\x02",
                "Unable to determine the device handle for GPU0000:17:00.0: Unknown Error\n",
                0,
            )
        },
    )
    facts = driver.probe(Context(root=tmp_path / "root", env=fb.env(), timeout=5))
    assert facts.smi_error.message == (
        "nvidia-smi: Unable to determine the device handle for GPU0000:17:00.0: Unknown Error"
    )


def test_nvcc_version_unreadable_with_a_reason_on_stderr(tmp_path):
    fb = FakeBin(tmp_path)
    nvcc = tmp_path / "root/usr/local/cuda-12.8/bin/nvcc"
    nvcc.parent.mkdir(parents=True)
    (nvcc.parent / "nvcc.profile").write_text("")
    nvcc.write_text("#!/bin/sh\necho 'nvcc fatal   : Unknown option' >&2\n")
    nvcc.chmod(0o755)
    facts = toolkit.probe(Context(root=tmp_path / "root", env=fb.env(), timeout=5))
    (tk,) = facts.toolkits
    assert tk.error.message == "/usr/local/cuda-12.8/bin/nvcc: nvcc fatal   : Unknown option"


# --- something on PATH that is not a program -----------------------------------------------------


def _not_a_program(tmp_path, name, directory):
    """A folder first on PATH holding ``name``: a directory, or a file without the execute bit."""
    odd = tmp_path / "odd"
    odd.mkdir(exist_ok=True)
    if directory:
        (odd / name).mkdir()
    else:
        (odd / name).write_text("#!/bin/sh\n")
        (odd / name).chmod(0o644)
    return odd, odd / name


def _with(odd, env):
    return {**env, "PATH": f"{odd}:{env['PATH']}"}


def test_nvidia_smi_directory_is_said_so_in_the_facts_and_the_report(tmp_path):
    fb = FakeBin(tmp_path)
    odd, path = _not_a_program(tmp_path, "nvidia-smi", directory=True)
    facts = driver.probe(Context(root=tmp_path / "root", env=_with(odd, fb.env(hermetic=True)), timeout=5))
    assert facts.smi_path is None
    assert facts.smi_error.message == f"nvidia-smi: not installed ({path} is a directory, not a program)"
    rows = dict(gpu_rows(Facts(driver=facts)))
    assert rows["nvidia-smi"] == f"not installed ({path} is a directory, not a program)"


def test_docker_not_executable_is_said_so(tmp_path):
    fb = FakeBin(tmp_path)
    odd, path = _not_a_program(tmp_path, "docker", directory=False)
    facts = docker.probe(Context(root=tmp_path / "root", env=_with(odd, fb.env(hermetic=True)), timeout=5))
    assert facts.client is None and facts.error.kind == "not_found"
    assert dict(docker_rows(Facts(docker=facts)))["docker"] == (
        f"not installed ({path} is not executable: chmod +x it or remove it)"
    )


def test_conda_directory_on_path_and_in_conda_exe(tmp_path):
    fb = FakeBin(tmp_path)
    odd, path = _not_a_program(tmp_path, "conda", directory=True)
    (tmp_path / "root").mkdir()
    facts = conda.probe(Context(root=tmp_path / "root", env=_with(odd, fb.env(hermetic=True)), timeout=5))
    assert facts.exe is None and facts.error.message == f"conda: not installed ({path} is a directory, not a program)"
    assert conda_rows(Facts(conda=facts)) == [("conda", f"not installed ({path} is a directory, not a program)")]
    facts = conda.probe(Context(root=tmp_path / "root", env=fb.env(hermetic=True, CONDA_EXE=str(path)), timeout=5))
    assert facts.error.message == f"{path}: not installed (CONDA_EXE={path} is a directory, not a program)"


def test_nvcc_directory_on_path_is_said_so(tmp_path):
    fb = FakeBin(tmp_path)
    odd, path = _not_a_program(tmp_path, "nvcc", directory=True)
    (tmp_path / "root").mkdir()
    # the toolkit probe reads PATH as a path of the machine: put the folder under the root too
    machine_odd = "/opt/odd"
    (tmp_path / "root/opt/odd/nvcc").mkdir(parents=True)
    env = {**fb.env(hermetic=True), "PATH": f"{machine_odd}:{fb.env(hermetic=True)['PATH']}"}
    facts = toolkit.probe(Context(root=tmp_path / "root", env=env, timeout=5))
    assert facts.toolkits == () and facts.error.message == (
        "nvcc: not installed (/opt/odd/nvcc is a directory, not a program)"
    )
    assert toolkit_rows(Facts(toolkits=facts))[0] == (
        "nvcc",
        "not installed (/opt/odd/nvcc is a directory, not a program)",
    )


# --- an unreadable folder on PATH (a non-root user) ----------------------------------------------


def test_unreadable_folder_on_path_does_not_crash_the_toolkit_probe(tmp_path, monkeypatch):
    """The tests run as root, who reads every folder: a non-root user's EACCES is simulated."""
    root = tmp_path / "root"
    secret = root / "home/other/bin"
    secret.mkdir(parents=True)
    real = root / "usr/local/cuda-12.8"
    (real / "bin").mkdir(parents=True)
    (real / "bin/nvcc.profile").write_text("")
    (real / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}')
    (real / "bin/nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    (real / "bin/nvcc").chmod(0o755)
    denied = str(secret)
    real_stat, real_listdir, real_scandir = os.stat, os.listdir, os.scandir

    def guard(path):
        if os.fspath(path).startswith(denied):
            raise PermissionError(13, "Permission denied", os.fspath(path))

    def stat(path, *args, **kwargs):
        guard(path)
        return real_stat(path, *args, **kwargs)

    def listdir(path="."):
        guard(path)
        return real_listdir(path)

    def scandir(path="."):
        guard(path)
        return real_scandir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(pathlib.Path, "stat", lambda self, **kw: stat(self, **kw))
    fb = FakeBin(tmp_path)
    env = {
        **fb.env(),
        "PATH": f"/home/other/bin:/usr/local/cuda-12.8/bin:{fb.env()['PATH']}",
        "CUDA_HOME": "/home/other/bin",
    }
    facts = toolkit.probe(Context(root=root, env=env, timeout=5))
    (tk,) = facts.toolkits
    assert tk.root == "/usr/local/cuda-12.8" and tk.version == "12.8.93" and facts.error is None
    assert facts.extension_status == "missing"


def test_docker_version_of_100_kb_is_no_version(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add(
        "docker",
        by_args={
            VERSION: (
                '{"Client":{"Version":"' + "x" * 100_000 + '"},"Server":null}\n',
                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n",
                1,
            )
        },
        rc=99,
    )
    facts = docker.probe(_ctx(tmp_path, fb))
    assert facts.client_version is None and facts.daemon == "not_running"


def test_podman_failure_is_shown_as_podman_not_docker(tmp_path):
    fb = FakeBin(tmp_path)
    podman = fb.add("podman", stdout="y\n" * 10)
    facts = docker.probe(_ctx(tmp_path, fb))
    rows = docker_rows(Facts(docker=facts))
    assert rows[0] == (
        "podman",
        f"failed: {podman} --version printed output envdoctor cannot read (podman --version printed no version: 'y')",
    )
    assert ("docker", "not installed") in rows


def test_target_python_printing_garbage_gives_the_reason_on_its_stderr(tmp_path):
    from envdoctor.probes.python import probe as python_probe

    fb = FakeBin(tmp_path)
    exe = fb.add_script(
        "python3",
        'echo "wrapper v2"; echo "Fatal Python error: init_fs_encoding: failed to get '
        'the Python codec of the filesystem encoding" >&2; cat >/dev/null; exit 0',
    )
    python, torch = python_probe(Context(python=str(exe), env=fb.env()))
    assert python.error.message == (
        f"{exe} printed no envdoctor result; its stdout began with: wrapper v2; its standard error says: "
        "Fatal Python error: init_fs_encoding: failed to get the Python codec of the filesystem encoding"
    )


def test_a_nul_in_a_path_a_tool_printed_is_no_crash(tmp_path):
    """A wrapper nvcc whose -dryrun names a folder with a NUL in it; conda naming a prefix with one."""
    fb = FakeBin(tmp_path)
    wrapper = tmp_path / "root/opt/w/bin/nvcc"  # the toolkit probe reads PATH under the root
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(
        '#!/bin/sh\ncase "$*" in *dryrun*) printf "#\\$ _HERE_=/opt/cu\\000da/bin\\n" >&2;; '
        '*) echo "Cuda compilation tools, release 12.8, V12.8.93";; esac\n'
    )
    wrapper.chmod(0o755)
    env = {**fb.env(), "PATH": f"/opt/w/bin:{fb.env()['PATH']}"}
    facts = toolkit.probe(Context(root=tmp_path / "root", env=env, timeout=5))
    assert facts.toolkits and facts.toolkits[0].version == "12.8.93"
    fb.add(
        "conda",
        stdout='{"conda_version": "25.5.1", "root_prefix": "/opt/conda", '
        '"active_prefix": "/opt/conda/envs/a\\u0000b", "channels": [], "virtual_pkgs": []}\n',
    )
    facts = conda.probe(_ctx(tmp_path, fb))
    assert facts.version == "25.5.1" and "NUL" in facts.error.message

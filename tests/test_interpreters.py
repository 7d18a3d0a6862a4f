"""Other interpreters that already have torch, named when the target has none (a file scan, no process).

Each test builds a file root with the layout that venv, conda, pyenv, uv and Debian really write
(``lib/python3.X/site-packages/torch/version.py`` next to ``bin/python``), and the expected answers
are written by hand.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envdoctor.facts import Facts, TargetPython, TorchElsewhere, TorchFacts
from envdoctor.probes.context import Context
from envdoctor.probes.interpreters import MAX_FOUND, scan
from envdoctor.probes.python import probe, with_elsewhere
from envdoctor.render import text
from tests.faketorch import find_python

HOME = "/home/ada"
#: torch/version.py as torch 2.11.0+cu130 writes it (the shape of the CPU 2.13.0 file in the dev venv).
VERSION_PY = (
    "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
    "__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
    "git_version = '0000000000000000000000000000000000000000'\nhip: Optional[str] = None\n"
)


def env_with_torch(
    root: Path, prefix: str, version: str, py: str = "python3.12", exe: str = "python", site: str = "site-packages"
) -> None:
    base = root / prefix.lstrip("/")
    (base / "bin").mkdir(parents=True, exist_ok=True)
    if exe:
        (base / "bin" / exe).write_text("#!/bin/sh\n")
    torch = base / "lib" / py / site / "torch"
    torch.mkdir(parents=True, exist_ok=True)
    (torch / "version.py").write_text(VERSION_PY.format(version=version))


def ctx_of(root: Path, **env: str) -> Context:
    return Context(root=root, env=dict({"HOME": HOME, "PATH": "/usr/bin"}, **env))


def test_every_kind_of_environment_is_found_in_order(tmp_path):
    root = tmp_path
    env_with_torch(root, "/opt/torch/.venv", "2.11.0+cu130")
    env_with_torch(root, f"{HOME}/.pyenv/versions/3.11.7", "2.7.1+cu126", py="python3.11")
    env_with_torch(root, f"{HOME}/miniforge3/envs/dl", "2.5.1", py="python3.11")
    env_with_torch(root, "/data/envs/exp", "2.4.0", py="python3.10")  # recorded by conda, not under a base
    (root / HOME.lstrip("/") / ".conda").mkdir(parents=True)
    (root / HOME.lstrip("/") / ".conda" / "environments.txt").write_text("/data/envs/exp\n/nowhere\n")
    env_with_torch(root, f"{HOME}/.local/share/uv/tools/torchrun-tool", "2.9.0+cpu")
    env_with_torch(root, "/usr", "2.6.0", py="python3", site="dist-packages", exe="python3")  # Debian's python3-torch
    found, cut = scan(ctx_of(root), exclude=None)
    assert not cut
    assert [(e.python, e.version, e.kind) for e in found] == [
        ("/opt/torch/.venv/bin/python", "2.11.0+cu130", "venv"),
        ("/data/envs/exp/bin/python", "2.4.0", "conda env"),
        (f"{HOME}/miniforge3/envs/dl/bin/python", "2.5.1", "conda env"),
        (f"{HOME}/.pyenv/versions/3.11.7/bin/python", "2.7.1+cu126", "pyenv"),
        (f"{HOME}/.local/share/uv/tools/torchrun-tool/bin/python", "2.9.0+cpu", "uv tool"),
        ("/usr/bin/python3", "2.6.0", "system"),
    ]


def test_the_target_itself_and_half_environments_are_left_out(tmp_path):
    env_with_torch(tmp_path, "/opt/a/.venv", "2.8.0")
    env_with_torch(tmp_path, "/opt/b/.venv", "2.8.0", exe="")  # torch but no interpreter: a copy
    (tmp_path / "opt" / "c" / ".venv" / "bin").mkdir(parents=True)  # an interpreter, no torch
    (tmp_path / "opt" / "c" / ".venv" / "bin" / "python").write_text("")
    env_with_torch(tmp_path, "/opt/d/.venv", "not a version")
    found, _ = scan(ctx_of(tmp_path), exclude="/opt/a/.venv")
    assert found == ()


def test_venvs_of_the_working_directory_and_virtualenvwrapper(tmp_path):
    env_with_torch(tmp_path, "/srv/proj/.venv", "2.10.0+cu128")
    env_with_torch(tmp_path, "/srv/wrapped/dl", "2.3.1")
    found, _ = scan(ctx_of(tmp_path, PWD="/srv/proj", WORKON_HOME="/srv/wrapped"))
    assert [e.python for e in found] == ["/srv/proj/.venv/bin/python", "/srv/wrapped/dl/bin/python"]


def test_the_scan_stops_at_its_count(tmp_path):
    for i in range(MAX_FOUND + 5):
        env_with_torch(tmp_path, f"{HOME}/venvs/v{i:02d}", "2.8.0")
    found, cut = scan(ctx_of(tmp_path))
    assert len(found) == MAX_FOUND and cut


def test_the_scan_stops_at_its_time(tmp_path):
    env_with_torch(tmp_path, "/opt/torch/.venv", "2.11.0+cu130")
    assert scan(ctx_of(tmp_path), budget_s=-1) == ((), True)


def test_a_fifo_named_version_py_does_not_block(tmp_path):
    env_with_torch(tmp_path, "/opt/x/.venv", "2.8.0")
    path = tmp_path / "opt" / "x" / ".venv" / "lib" / "python3.12" / "site-packages" / "torch" / "version.py"
    path.unlink()
    os.mkfifo(path)
    assert scan(ctx_of(tmp_path)) == ((), False)


def test_with_elsewhere_names_them_for_a_target_without_torch(tmp_path):
    env_with_torch(tmp_path, "/opt/torch/.venv", "2.11.0+cu130")
    python = TargetPython(executable="/usr/bin/python3", prefix="/usr", version="3.12.3")
    torch = with_elsewhere(ctx_of(tmp_path), python, TorchFacts(installed=False))
    assert torch.elsewhere == (
        TorchElsewhere("/opt/torch/.venv/bin/python", "2.11.0+cu130", "venv", "/opt/torch/.venv"),
    )


def test_check_says_torch_is_not_installed_here_and_where_it_is():
    facts = Facts(
        python=TargetPython(executable="/usr/bin/python3", chosen_by="python3 on PATH", version="3.12.3", pip="24.0"),
        torch=TorchFacts(
            installed=False,
            elsewhere=(
                TorchElsewhere("/opt/torch/.venv/bin/python", "2.11.0+cu130", "venv"),
                TorchElsewhere("/home/ada/miniforge3/envs/dl/bin/python", "2.5.1", "conda env"),
            ),
        ),
    )
    out = text.render(facts, ())
    assert (
        "torch   not installed in /usr/bin/python3; these have it: /opt/torch/.venv/bin/python "
        "(2.11.0+cu130, venv), /home/ada/miniforge3/envs/dl/bin/python (2.5.1, conda env) "
        "-- use --python PATH\n"
    ) in out


def _python_without_torch():
    for version in ("3.12", "3.13", "3.10"):
        exe = find_python(version)
        if (
            exe
            and subprocess.run(
                [exe, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"], timeout=30
            ).returncode
            == 0
        ):
            return exe
    return None


def test_the_probe_scans_when_the_target_has_no_torch(tmp_path):
    exe = _python_without_torch()
    if exe is None:
        pytest.skip("no interpreter without torch on this machine")
    root = tmp_path / "root"
    env_with_torch(root, "/opt/torch/.venv", "2.11.0+cu130")
    ctx = Context(root=root, env={"HOME": HOME, "PATH": os.environ.get("PATH", "/usr/bin")}, python=exe)
    python, torch = probe(ctx)
    assert not torch.installed and torch.error is None
    assert [e.python for e in torch.elsewhere] == ["/opt/torch/.venv/bin/python"]

"""Other interpreters on the machine that already have torch, for when the target has none.

A filesystem scan through the probe Context, never running an interpreter: each candidate
environment's ``lib/python3.*/site-packages/torch/version.py`` is read as text (its
``__version__`` line), and the environment counts only if its ``bin/python3`` (or ``bin/python``)
exists. Where it looks, in this order (``~`` is ``$HOME``):

- virtual environments: ``./.venv`` (``$PWD``), ``~/.venv``, ``~/venv``, ``~/venvs/*``, ``~/.virtualenvs/*``
  (``$WORKON_HOME``), ``~/.local/share/virtualenvs/*`` (pipenv), ``~/.local/pipx/venvs/*``,
  ``/opt/*/.venv``, ``/opt/*/venv``, ``/opt/venv``, ``$VIRTUAL_ENV``;
- conda: ``$CONDA_PREFIX``, the environments conda recorded in ``~/.conda/environments.txt``, and the
  ``envs/*`` of ``~/miniconda3``, ``~/anaconda3``, ``~/miniforge3``, ``~/mambaforge``, ``~/micromamba``,
  ``/opt/conda`` (and those bases themselves); conda itself is not run (``conda info --envs`` takes
  seconds, and the conda probe already runs conda once);
- pyenv: ``$PYENV_ROOT/versions/*`` (default ``~/.pyenv``) and pyenv-virtualenv's ``versions/*/envs/*``;
- uv: its managed Pythons (``$UV_PYTHON_INSTALL_DIR``, else ``~/.local/share/uv/python/*``) and its
  tool environments (``$UV_TOOL_DIR``, else ``~/.local/share/uv/tools/*``);
- the system's: ``/usr/local/lib/python3.*/site-packages`` and ``dist-packages`` (``/usr/local/bin``),
  ``/usr/lib/python3/dist-packages`` (``/usr/bin/python3``, Debian's python3-torch).

Bounded: at most ``MAX_CANDIDATES`` environments looked at, ``MAX_FOUND`` reported, within
``BUDGET_S`` seconds (a slow network home stops the scan, and the answer says it was cut).

>>> found, cut = scan(Context(), exclude="/usr")                          # doctest: +SKIP
>>> found[0].python, found[0].version
('/opt/torch/.venv/bin/python', '2.11.0+cu130')
"""

from __future__ import annotations

import os
import time
from typing import Iterator, Optional, Tuple

from envdoctor.facts.python import TorchElsewhere
from envdoctor.parse.torch import torch_version_py
from envdoctor.probes.context import Context

MAX_CANDIDATES = 200
MAX_FOUND = 8
BUDGET_S = 2.0
#: ``~/.conda/environments.txt`` lines read at most.
MAX_RECORDED_ENVS = 200
_CONDA_BASES = (
    "~/miniconda3",
    "~/anaconda3",
    "~/miniforge3",
    "~/mambaforge",
    "~/micromamba",
    "~/.conda",
    "/opt/conda",
    "/opt/miniconda3",
    "/opt/miniforge3",
)

Candidate = Tuple[str, str]  # (environment prefix, kind)


def _home(ctx: Context, path: str) -> Optional[str]:
    if not path.startswith("~"):
        return path
    home = ctx.env.get("HOME")
    return (home.rstrip("/") + path[1:]) if home and home.startswith("/") else None


def _children(ctx: Context, folder: Optional[str]) -> Iterator[str]:
    if folder:
        for name in ctx.listdir(folder)[:MAX_CANDIDATES]:
            yield f"{folder.rstrip('/')}/{name}"


def candidates(ctx: Context) -> Iterator[Candidate]:
    """Every environment prefix worth a look, in the module's order (duplicates included)."""
    env = ctx.env
    for key in ("VIRTUAL_ENV",):
        if env.get(key):
            yield env[key], "venv"
    pwd = env.get("PWD")
    if pwd and pwd.startswith("/"):
        yield f"{pwd.rstrip('/')}/.venv", "venv"
    for path in ("~/.venv", "~/venv"):
        home = _home(ctx, path)
        if home:
            yield home, "venv"
    for parent in (
        "~/venvs",
        "~/.venvs",
        env.get("WORKON_HOME") or "~/.virtualenvs",
        "~/.local/share/virtualenvs",
        "~/.local/pipx/venvs",
    ):
        for child in _children(ctx, _home(ctx, parent)):
            yield child, "venv"
    for child in _children(ctx, "/opt"):
        yield f"{child}/.venv", "venv"
        yield f"{child}/venv", "venv"
    yield "/opt/venv", "venv"
    if env.get("CONDA_PREFIX"):
        yield env["CONDA_PREFIX"], "conda env"
    recorded = _home(ctx, "~/.conda/environments.txt")
    if recorded:
        text, _ = ctx.read(recorded, limit=64 * 1024)
        for line in (text or "").splitlines()[:MAX_RECORDED_ENVS]:
            line = line.strip()
            if line.startswith("/"):
                yield line, "conda env"
    for base in _CONDA_BASES:
        root = _home(ctx, base)
        if root:
            yield root, "conda env"
            for child in _children(ctx, f"{root}/envs"):
                yield child, "conda env"
    pyenv = env.get("PYENV_ROOT") or _home(ctx, "~/.pyenv")
    for version in _children(ctx, f"{pyenv}/versions" if pyenv else None):
        yield version, "pyenv"
        for child in _children(ctx, f"{version}/envs"):
            yield child, "pyenv"
    for child in _children(ctx, env.get("UV_PYTHON_INSTALL_DIR") or _home(ctx, "~/.local/share/uv/python")):
        yield child, "uv"
    for child in _children(ctx, env.get("UV_TOOL_DIR") or _home(ctx, "~/.local/share/uv/tools")):
        yield child, "uv tool"
    yield "/usr/local", "system"
    yield "/usr", "system"


def _torch_in(ctx: Context, prefix: str) -> Optional[Tuple[str, str]]:
    """(site folder, version) of the torch installed under ``prefix``, read from its version.py."""
    lib = f"{prefix.rstrip('/')}/lib"
    folders = [
        f"{lib}/{name}/{site}"
        for name in ctx.listdir(lib)
        if name.startswith("python3")
        for site in ("site-packages", "dist-packages")
    ]
    for site in folders:
        path = f"{site}/torch/version.py"
        if not os.path.isfile(ctx.path(path)):  # a FIFO or a device would block the read
            continue
        text, _ = ctx.read(path, limit=8192)
        version = torch_version_py(text) if text else None
        if version:
            return site, version
    return None


def _python_of(ctx: Context, prefix: str, site: str, kind: str) -> Optional[str]:
    """The interpreter of an environment: ``bin/python``, ``bin/python3``; for the system's,
    ``bin/python3.X`` of the ``lib/python3.X`` the torch is in first."""
    base = prefix.rstrip("/")
    versioned = next((p for p in site.split("/") if p.startswith("python3.")), None)
    names = (
        ([versioned] if versioned else []) + ["python3", "python"]
        if kind == "system"
        else ["python", "python3"] + ([versioned] if versioned else [])
    )
    for name in names:
        exe = f"{base}/bin/{name}"
        if ctx.exists(exe):
            return exe
    return None


def _same(ctx: Context, a: str, b: str) -> bool:
    try:
        return os.path.realpath(ctx.path(a)) == os.path.realpath(ctx.path(b))
    except (OSError, ValueError):
        return a.rstrip("/") == b.rstrip("/")


def scan(
    ctx: Context, exclude: Optional[str] = None, budget_s: float = BUDGET_S
) -> Tuple[Tuple[TorchElsewhere, ...], bool]:
    """(interpreters that have torch, whether the scan was cut by its bounds). ``exclude``: the
    target's prefix, whose torch (or lack of it) is already known."""
    deadline = time.monotonic() + budget_s
    found: list[TorchElsewhere] = []
    seen: set[str] = set()
    looked = 0
    for prefix, kind in candidates(ctx):
        if time.monotonic() > deadline or looked >= MAX_CANDIDATES:
            return tuple(found), True
        key = prefix.rstrip("/") or "/"
        if key in seen or not prefix.startswith("/"):
            continue
        seen.add(key)
        if exclude and _same(ctx, key, exclude):
            continue
        looked += 1
        hit = _torch_in(ctx, key)
        if hit is None:
            continue
        site, version = hit
        exe = _python_of(ctx, key, site, kind)
        if exe is None:
            continue
        found.append(TorchElsewhere(python=exe, version=version, kind=kind, prefix=key))
        if len(found) >= MAX_FOUND:
            return tuple(found), True
    return tuple(found), False

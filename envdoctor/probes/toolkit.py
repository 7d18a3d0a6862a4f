"""CUDA toolkits: every ``nvcc`` on PATH, ``CUDA_HOME`` / ``CUDA_PATH``, ``/usr/local/cuda*``,
``/opt/cuda*`` and the active conda env's ``bin/nvcc``; each toolkit once (by its resolved root)
with its version; and the toolkit a CUDA extension build would compile with.

The extension rule is ``torch.utils.cpp_extension._find_cuda_home`` (pytorch/pytorch,
torch/utils/cpp_extension.py): ``os.environ.get('CUDA_HOME') or os.environ.get('CUDA_PATH')``;
else ``os.path.dirname(os.path.dirname(shutil.which("nvcc")))`` (no symlink resolution); else
``/usr/local/cuda`` if it exists. A ``nvcc`` outside a toolkit (a wrapper script such as
``/usr/local/bin/nvcc`` that execs ``/usr/local/cuda-13.0/bin/nvcc``) is followed with
``nvcc -dryrun``, which names the folder of the real compiler.
"""

from __future__ import annotations

import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.toolkit import Toolkit, ToolkitFacts
from envdoctor.probes.context import Context
from envdoctor.probes.reasons import unreadable

DRYRUN = ("-dryrun", "-E", "-x", "cu", "/dev/null")


def resolve(ctx: Context, path: str) -> str:
    """``os.path.realpath`` of the machine path ``path``, following links inside ``ctx.root``."""
    parts, done, hops = [p for p in path.split("/") if p], "/", 0
    while parts:
        part = parts.pop(0)
        if part in (".", ".."):
            done = posixpath.dirname(done) if part == ".." else done
            continue
        step = posixpath.join(done, part)
        try:
            target = os.readlink(ctx.path(step))
        except (OSError, ValueError):  # not a link (or a NUL in a path nvcc printed)
            done = step
            continue
        hops += 1
        if hops > 40:  # a link loop
            return step
        done = "/" if target.startswith("/") else done
        parts = [p for p in target.split("/") if p] + parts
    return done


def _exists(ctx: Context, path: str) -> bool:
    """Whether ``path`` exists, its links followed inside ``ctx.root`` (never out of it). A folder
    on the way that this user cannot read hides what is below it (as it does for the shell)."""
    try:
        return ctx.path(resolve(ctx, path)).exists()
    except (OSError, ValueError):  # PermissionError where the folder above is unreadable; a NUL
        return False


def _file(ctx: Context, path: str) -> bool:
    """Whether ``path`` is a program (a file with the execute bit), links followed inside the root."""
    p = ctx.path(resolve(ctx, path))
    try:
        return p.is_file() and os.access(p, os.X_OK)
    except (OSError, ValueError):
        return False


def _not_a_program(ctx: Context, path: str) -> Optional[str]:
    """Why ``path`` (an ``nvcc`` on PATH) is not a program, when something is there."""
    p = ctx.path(resolve(ctx, path))
    try:
        if p.is_dir():
            return f"nvcc: not installed ({path} is a directory, not a program)"
        if p.is_file() and not os.access(p, os.X_OK):
            return f"nvcc: not installed ({path} is not executable: chmod +x it or remove it)"
    except (OSError, ValueError):
        pass
    return None


def _has_headers(ctx: Context, root: str) -> bool:
    if _exists(ctx, f"{root}/include/cuda_runtime.h"):
        return True
    targets = resolve(ctx, f"{root}/targets")
    return any(_exists(ctx, f"{targets}/{t}/include/cuda_runtime.h") for t in ctx.listdir(targets))


def _root_of_nvcc(ctx: Context, nvcc: str) -> Tuple[str, Optional[ProbeError]]:
    """The toolkit root behind ``nvcc``: the folder above a real nvcc (it has ``nvcc.profile``
    beside it), else what ``nvcc -dryrun`` names, else the folder above its folder."""
    from envdoctor.parse.nvcc import NvccParseError, parse_dryrun_bin  # here: most machines have no toolkit

    real = resolve(ctx, nvcc)
    if _exists(ctx, posixpath.join(posixpath.dirname(real), "nvcc.profile")):
        return posixpath.dirname(posixpath.dirname(real)), None
    ran = ctx.run([str(ctx.path(real)), *DRYRUN])
    try:
        return resolve(ctx, posixpath.dirname(parse_dryrun_bin(ran.stdout + "\n" + ran.stderr))), None
    except NvccParseError as exc:
        err = ran.error or unreadable(nvcc, ran, str(exc), f"{nvcc} {' '.join(DRYRUN)}")
        return posixpath.dirname(posixpath.dirname(nvcc)), err


def _version(ctx: Context, root: str, nvcc: Optional[str], prior: Optional[ProbeError]) -> Toolkit:
    from envdoctor.parse.nvcc import NvccParseError, parse_nvcc_version, parse_version_json, parse_version_txt

    version = release = source = None
    error = prior
    if nvcc and not (prior and prior.kind == "timeout"):
        exe = str(ctx.path(resolve(ctx, nvcc)))
        ran = ctx.run([exe, "--version"])
        try:
            if ran.error:
                error = ProbeError(ran.error.kind, ran.error.message.replace(exe, nvcc), f"{nvcc} --version")
            else:
                parsed = parse_nvcc_version(ran.stdout + ran.stderr)
                version, release, source = parsed.version or parsed.release, parsed.release, f"{nvcc} --version"
        except NvccParseError as exc:
            error = unreadable(nvcc, ran, str(exc), f"{nvcc} --version")
    for name, parser in (("version.json", parse_version_json), ("version.txt", parse_version_txt)):
        if version:
            break
        text, read_err = ctx.read(resolve(ctx, f"{root}/{name}"))
        try:
            if text is not None:
                version, release = parser(text)
                source = f"{root}/{name}"
        except NvccParseError as exc:
            error = error or ProbeError("unparseable", f"{root}/{name}: {exc}")
        error = error or read_err
    return Toolkit(root, nvcc=nvcc, version=version, release=release, version_source=source, error=error)


def probe(ctx: Context) -> ToolkitFacts:
    env = ctx.env
    found: Dict[str, dict] = {}  # root -> {"via", "aliases", "nvcc", "error"}
    by_nvcc: Dict[str, Tuple[str, Optional[ProbeError]]] = {}  # an nvcc as found -> (its root, error)

    def add(
        root: str, via: str, alias: Optional[str], nvcc: Optional[str] = None, err: Optional[ProbeError] = None
    ) -> None:
        entry = found.setdefault(root, {"via": [], "aliases": [], "nvcc": None, "error": None})
        entry["via"] += [via] if via not in entry["via"] else []
        entry["aliases"] += [alias] if alias and alias != root and alias not in entry["aliases"] else []
        entry["nvcc"] = entry["nvcc"] or nvcc
        entry["error"] = entry["error"] or err

    def add_nvcc(nvcc: str, via: str) -> None:
        if nvcc not in by_nvcc:
            by_nvcc[nvcc] = _root_of_nvcc(ctx, nvcc)
        root, err = by_nvcc[nvcc]
        real_above = posixpath.dirname(posixpath.dirname(nvcc))
        wrapper = not _exists(ctx, posixpath.join(posixpath.dirname(resolve(ctx, nvcc)), "nvcc.profile"))
        add(root, via, nvcc if wrapper else real_above, nvcc if wrapper else None, err)

    path_nvccs: List[str] = []
    not_program: Optional[str] = None
    for entry in env.get("PATH", "").split(os.pathsep):
        nvcc = posixpath.join(posixpath.normpath(entry), "nvcc") if entry.startswith("/") else None
        if nvcc and nvcc not in path_nvccs and _file(ctx, nvcc):
            path_nvccs.append(nvcc)
            add_nvcc(nvcc, "PATH")
        elif nvcc and not path_nvccs and not_program is None:
            not_program = _not_a_program(ctx, nvcc)
    prefix = env.get("CONDA_PREFIX")
    if prefix and _file(ctx, f"{prefix.rstrip('/')}/bin/nvcc"):
        add_nvcc(f"{prefix.rstrip('/')}/bin/nvcc", "conda")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = env.get(var)
        if value and _exists(ctx, value):
            if _file(ctx, f"{value.rstrip('/')}/bin/nvcc"):
                add_nvcc(f"{value.rstrip('/')}/bin/nvcc", var)
            elif _exists(ctx, f"{value}/version.json") or _exists(ctx, f"{value}/version.txt"):
                add(resolve(ctx, value), var, value.rstrip("/"))
    for base, label in (("/usr/local", "/usr/local/cuda*"), ("/opt", "/opt/cuda*")):
        for name in ctx.listdir(base):
            path = f"{base}/{name}"
            if not name.startswith("cuda"):
                continue
            if _file(ctx, f"{path}/bin/nvcc"):
                add_nvcc(f"{path}/bin/nvcc", label)
            elif _exists(ctx, f"{path}/version.json") or _exists(ctx, f"{path}/version.txt"):
                add(resolve(ctx, path), label, path)

    def measure(item: Tuple[str, dict]) -> Toolkit:
        root, entry = item
        nvcc = f"{root}/bin/nvcc" if _file(ctx, f"{root}/bin/nvcc") else entry["nvcc"]
        tk = _version(ctx, root, nvcc, entry["error"])
        return Toolkit(
            root,
            tk.nvcc,
            tk.version,
            tk.release,
            tk.version_source,
            tuple(entry["via"]),
            tuple(entry["aliases"]),
            tk.error,
        )

    with ThreadPoolExecutor(max_workers=max(1, min(4, len(found)))) as pool:
        toolkits = tuple(pool.map(measure, sorted(found.items())))

    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    ext: Optional[str]
    rule: Optional[str]
    if home is not None:
        ext, rule = home, ("CUDA_HOME" if env.get("CUDA_HOME") else "CUDA_PATH")
    elif path_nvccs:
        ext, rule = posixpath.dirname(posixpath.dirname(path_nvccs[0])), "nvcc on PATH"
    elif _exists(ctx, "/usr/local/cuda"):
        ext, rule = "/usr/local/cuda", "/usr/local/cuda"
    else:
        ext = rule = None
    status = ext_toolkit = None
    if ext is not None:
        ext_nvcc = posixpath.join(ext.rstrip("/") or "/", "bin/nvcc")
        status = (
            "empty"
            if ext == ""
            else "missing"
            if not _exists(ctx, ext)
            else "no_nvcc"
            if not _file(ctx, ext_nvcc)
            else "no_headers"
            if not _has_headers(ctx, ext)
            else "ok"
        )
        ext_toolkit = by_nvcc[ext_nvcc][0] if ext_nvcc in by_nvcc else None
        if ext_toolkit is None and ext and resolve(ctx, ext) in found:
            ext_toolkit = resolve(ctx, ext)
    return ToolkitFacts(
        toolkits=toolkits,
        cuda_home=env.get("CUDA_HOME"),
        cuda_path=env.get("CUDA_PATH"),
        nvcc_on_path=path_nvccs[0] if path_nvccs else None,
        extension_root=ext,
        extension_rule=rule,
        extension_status=status,
        extension_toolkit=ext_toolkit,
        path_nvccs=tuple(path_nvccs),
        error=ProbeError("not_found", not_program, "nvcc") if not_program and not path_nvccs else None,
    )

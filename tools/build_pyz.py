"""Build ``envdoctor.pyz``: one file that runs envdoctor with nothing but a ``python3`` >= 3.9.

    python tools/build_pyz.py                      # writes ./envdoctor.pyz
    python tools/build_pyz.py -o /tmp/envdoctor.pyz --cache ~/.cache/envdoctor/build-pyz
    python3 envdoctor.pyz check

The archive (a stdlib ``zipapp``) holds the ``envdoctor`` package, ``data/`` as
``envdoctor/data`` (where the wheel puts it too), and the pure-Python wheels of every dependency
in pyproject.toml, tomli included whatever Python builds it (3.9 and 3.10 need it). The wheels come
from ``pip install --target`` for a generic CPython 3.9 (``--platform any --abi none
--implementation py --only-binary :all:``), so nothing in the archive is compiled for one
interpreter. They are kept in a cache folder keyed by the requirements, so a second build does not
ask the package index again.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
#: The oldest Python envdoctor supports: the wheels chosen must install on it.
OLDEST_PYTHON = "3.9"

MAIN = '''\
"""envdoctor.pyz: envdoctor and its dependencies in one file (built by tools/build_pyz.py)."""
import sys

if sys.version_info < (3, 9):
    sys.exit("envdoctor needs Python 3.9 or newer; this is Python %d.%d (%s)"
             % (sys.version_info[0], sys.version_info[1], sys.executable))

if sys.version_info < (3, 10):
    # Python 3.9's zipimporter has no exec_module, so the import system puts a module into
    # sys.modules before running it without marking it as initialising: a second thread that
    # imports it meanwhile gets it half-done ("cannot import name 'version' from
    # 'envdoctor.parse'"; envdoctor's probes run in threads). Give the archive's importer the
    # exec_module that 3.10 added, so imports from the archive take the locked path.
    import zipimport

    class _Importer(zipimport.zipimporter):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            exec(self.get_code(module.__spec__.name), module.__dict__)

    sys.path_hooks[:] = [_Importer if hook is zipimport.zipimporter else hook for hook in sys.path_hooks]
    sys.path_importer_cache.clear()

from envdoctor.cli import main

main()
'''


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> List[str]:
    """The runtime dependencies of pyproject.toml, markers dropped (tomli is needed on 3.9 and 3.10,
    and the archive must run there whatever Python built it)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python < 3.11
        import tomli as tomllib
    with pyproject.open("rb") as fh:
        deps = tomllib.load(fh)["project"]["dependencies"]
    return [d.split(";", 1)[0].strip() for d in deps]


def cache_key(reqs: Sequence[str]) -> str:
    text = "\n".join(sorted(reqs)) + f"\npython {OLDEST_PYTHON}\n"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def too_new(folder: Path, python: str = OLDEST_PYTHON) -> List[Tuple[str, str, str]]:
    """(name, version, Requires-Python) of each installed distribution that ``python`` cannot run.

    pip filters by ``--python-version`` only where the index page states Requires-Python; a
    local or mirrored index that leaves it out lets a too-new wheel through (seen here: click
    8.5.0, which needs 3.10, from a file index), so the metadata is checked after the install.
    """
    from email.parser import HeaderParser

    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    bad = []
    for meta in sorted(folder.glob("*.dist-info/METADATA")):
        head = HeaderParser().parsestr(meta.read_text(encoding="utf-8", errors="replace"))
        needs = (head.get("Requires-Python") or "").strip()
        try:
            if needs and not SpecifierSet(needs).contains(python, prereleases=True):
                bad.append((str(head.get("Name")), str(head.get("Version")), needs))
        except InvalidSpecifier:
            bad.append((str(head.get("Name")), str(head.get("Version")), needs))
    return bad


def vendor(reqs: Sequence[str], target: Path, pip: Sequence[str], rounds: int = 10) -> None:
    """``pip install --target`` the pure-Python wheels of ``reqs`` that run on the oldest Python
    into ``target``; a release whose metadata refuses that Python is excluded and pip asked again."""
    excluded: List[str] = []
    for _ in range(rounds):
        tmp = Path(tempfile.mkdtemp(prefix="deps-", dir=target.parent))
        try:
            argv = [
                *pip,
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-compile",
                "--target",
                str(tmp),
                "--only-binary",
                ":all:",
                "--platform",
                "any",
                "--abi",
                "none",
                "--implementation",
                "py",
                "--python-version",
                OLDEST_PYTHON,
                *reqs,
                *excluded,
            ]
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(
                    f"build_pyz: pip could not get the dependencies ({' '.join(reqs)}):\n{done.stdout}{done.stderr}"
                )
            bad = too_new(tmp)
            if not bad:
                shutil.rmtree(tmp / "bin", ignore_errors=True)
                os.replace(tmp, target)  # the cache entry appears whole or not at all
                return
            excluded += [f"{name}!={version}" for name, version, _ in bad]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    raise SystemExit(f"build_pyz: no release runs on Python {OLDEST_PYTHON} after excluding {', '.join(excluded)}")


def _ignore(folder: str, names: List[str]) -> List[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))]


def build(output: Path, cache: Optional[Path] = None, pip: Optional[Sequence[str]] = None) -> Path:
    """Write the archive to ``output`` and return its path."""
    reqs = requirements()
    pip = list(pip or [sys.executable, "-m", "pip"])
    with tempfile.TemporaryDirectory(prefix="envdoctor-pyz-") as work:
        stage = Path(work) / "stage"
        if cache is not None:
            deps = cache / cache_key(reqs)
            if not deps.is_dir():
                cache.mkdir(parents=True, exist_ok=True)
                vendor(reqs, deps, pip)
        else:
            deps = Path(work) / "deps"
            vendor(reqs, deps, pip)
        shutil.copytree(deps, stage, ignore=_ignore)
        shutil.copytree(ROOT / "envdoctor", stage / "envdoctor", ignore=_ignore)
        shutil.copytree(ROOT / "data", stage / "envdoctor" / "data", ignore=_ignore)
        (stage / "__main__.py").write_text(MAIN, encoding="utf-8")
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".part")
        zipapp.create_archive(stage, partial, interpreter="/usr/bin/env python3", compressed=True)
        os.replace(partial, output)
    return output


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "envdoctor.pyz")
    parser.add_argument(
        "--cache", type=Path, default=None, help="folder that keeps the dependencies between builds (default: none)"
    )
    parser.add_argument("--pip", default=None, help="pip command to use (default: this Python's -m pip)")
    args = parser.parse_args(argv)
    out = build(args.output, args.cache, args.pip.split() if args.pip else None)
    print(f"{out} ({out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()

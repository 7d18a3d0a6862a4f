"""Fake executables that replay recorded real output, on a PATH the test controls.

>>> bin = FakeBin(tmp_path)
>>> bin.add("nvidia-smi", stdout=recorded("h200-driver580-cuda13", "nvidia-smi-query.txt"))
>>> bin.add("nvcc", hang=True)                       # sleeps past any timeout
>>> ctx = Context(root=tmp_path / "root", env=bin.env(), timeout=2)
"""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path
from typing import Dict, Optional

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(machine: str, name: str) -> str:
    """The tool output recorded in ``tests/fixtures/<machine>/<name>``, without the ``$ cmd`` line
    and the ``[rc=N]`` trailer that the recording script adds."""
    text = (FIXTURES / machine / name).read_text()
    lines = text.splitlines(keepends=True)
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[rc="):
        lines = lines[:-1]
    return "".join(lines)


class FakeBin:
    """A folder of fake programs. Each prints a recorded stdout/stderr and exits with a code;
    ``by_args`` picks the output by the exact argument string."""

    def __init__(self, base: Path) -> None:
        self.dir = Path(base) / "fakebin"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._data = Path(base) / "fakebin-data"
        self._data.mkdir(exist_ok=True)
        self._count = 0

    def _store(self, text: str) -> Path:
        self._count += 1
        p = self._data / f"{self._count}.txt"
        p.write_text(text)
        return p

    def add(
        self,
        name: str,
        stdout: str = "",
        stderr: str = "",
        rc: int = 0,
        hang: bool = False,
        signal: Optional[int] = None,
        by_args: Optional[Dict[str, tuple]] = None,
    ) -> Path:
        """Create ``name``. ``by_args`` maps an argument string ("--version") to (stdout, stderr, rc)."""
        lines = ["#!/bin/sh"]
        if by_args:
            lines.append('case "$*" in')
            for args, (out, err, code) in by_args.items():
                o, e = self._store(out), self._store(err)
                lines.append(f"  {shlex.quote(args)}) cat {o}; cat {e} >&2; exit {code};;")
            lines.append("esac")
        if hang:
            lines.append("exec sleep 60")
        o, e = self._store(stdout), self._store(stderr)
        lines.append(f"cat {o}; cat {e} >&2")
        if signal is not None:
            lines.append(f"kill -{signal} $$")
        lines.append(f"exit {rc}")
        path = self.dir / name
        path.write_text("\n".join(lines) + "\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def add_script(self, name: str, body: str) -> Path:
        """A fake written in shell by the test, for behaviour the simple form cannot express."""
        path = self.dir / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(0o755)
        return path

    def env(self, hermetic: bool = False, **extra: str) -> Dict[str, str]:
        """An environment whose PATH holds the fakes and the system folders the fakes' shell needs.

        ``hermetic``: nothing of the system on PATH but ``cat`` and ``sleep`` (linked into a folder
        of their own), so a real docker, podman or conda there cannot leak into a test.
        """
        path = f"{self.dir}:/usr/bin:/bin"
        if hermetic:
            import shutil

            tools = self.dir.parent / "tools"
            tools.mkdir(exist_ok=True)
            for name in ("cat", "sleep"):
                if not (tools / name).exists():
                    (tools / name).symlink_to(shutil.which(name) or f"/bin/{name}")
            path = f"{self.dir}:{tools}"
        env = {"PATH": path, "HOME": str(self._data), "LANG": "C.UTF-8"}
        env.update(extra)
        return env


def python_exe() -> str:
    return sys.executable


def cli_runner():
    """A CliRunner that keeps stderr apart from stdout on every Click envdoctor supports.

    Click 8.2 (Python >= 3.10) always does; Click 8.1 (the last on Python 3.9) needs mix_stderr=False.
    """
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()

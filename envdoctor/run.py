"""The one way envdoctor runs an external command.

Every probe goes through :func:`run`: an argv list (never a shell), a timeout, output bounded and
decoded with errors replaced. It never raises; a missing program, a hang, a crash or a non-zero
exit comes back as a :class:`Ran` whose ``error`` says what happened.

>>> r = run(["nvidia-smi", "--version"], timeout=10)
>>> r.ok, r.stdout.splitlines()[0]
(True, 'NVIDIA-SMI version  : 580.159.04')
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Mapping, Optional, Sequence

from envdoctor.facts.base import ProbeError

#: Output beyond this many bytes per stream is read and dropped (a runaway tool cannot fill memory).
MAX_OUTPUT = 4 * 1024 * 1024


@dataclass(frozen=True)
class Ran:
    """The outcome of one command."""

    argv: tuple[str, ...]
    returncode: Optional[int]
    stdout: str
    stderr: str
    seconds: float
    error: Optional[ProbeError] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output(self) -> str:
        """stdout and stderr together, as a person would have seen them."""
        return "\n".join(part for part in (self.stdout.strip(), self.stderr.strip()) if part)


def which(name: str, env: Mapping[str, str] | None = None) -> Optional[str]:
    """Resolve ``name`` on the PATH of ``env`` (the probe's environment), not envdoctor's own."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(name, path=path)


def _decode(data: bytes | None) -> str:
    if not data:
        return ""
    return data[:MAX_OUTPUT].decode("utf-8", errors="replace")


def run(
    argv: Sequence[str],
    *,
    timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    cwd: str | None = None,
) -> Ran:
    """Run ``argv`` with ``env`` (default: envdoctor's environment) and return what happened.

    The program is looked up on ``env['PATH']``. The child gets its own process group so a
    timeout kills whatever it started too.
    """
    argv = tuple(str(a) for a in argv)
    environ = dict(os.environ if env is None else env)
    shown = " ".join(argv)
    exe = argv[0] if os.sep in argv[0] else which(argv[0], environ)
    if exe is None or not os.path.exists(exe):
        return Ran(argv, None, "", "", 0.0, ProbeError("not_found", f"{argv[0]}: not found", shown))
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            (exe,) + argv[1:],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
            cwd=cwd,
            start_new_session=True,
        )
    except PermissionError as exc:
        return Ran(argv, None, "", "", 0.0, ProbeError("permission", f"{argv[0]}: {exc.strerror}", shown))
    except OSError as exc:
        return Ran(argv, None, "", "", 0.0, ProbeError("not_found", f"{argv[0]}: {exc.strerror or exc}", shown))
    readers = [_Reader(proc.stdout), _Reader(proc.stderr)]
    if stdin is not None:  # in a thread: a program that never reads must not block envdoctor
        threading.Thread(target=_feed, args=(proc.stdin, stdin.encode()), daemon=True).start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _reap(proc)
        out, err = (r.result(grace=1.0) for r in readers)
        return Ran(
            argv, None, _decode(out), _decode(err), time.monotonic() - started,
            ProbeError("timeout", f"{argv[0]} did not answer in {timeout:g} s", shown),
        )
    # a grandchild that left the process group may hold the pipes open: wait for them only briefly
    out, err = (r.result(grace=2.0) for r in readers)
    seconds = time.monotonic() - started
    stdout, stderr = _decode(out), _decode(err)
    code = proc.returncode
    if code < 0:
        name = _signal_name(-code)
        return Ran(argv, code, stdout, stderr, seconds,
                   ProbeError("crashed", f"{argv[0]} was killed by {name}", shown))
    if code != 0:
        last = (stderr.strip() or stdout.strip()).splitlines()
        detail = last[-1] if last else "no output"
        return Ran(argv, code, stdout, stderr, seconds,
                   ProbeError("exit_status", f"{argv[0]} exited with status {code}: {detail}", shown))
    return Ran(argv, code, stdout, stderr, seconds)


class _Reader:
    """Drain one pipe in a thread, keeping at most MAX_OUTPUT bytes (the rest is read and dropped,
    so a chatty program never blocks on a full pipe and never fills envdoctor's memory)."""

    def __init__(self, pipe: Optional[IO[bytes]]) -> None:
        self.chunks: list = []
        self.size = 0
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe: Optional[IO[bytes]]) -> None:
        if pipe is None:
            return
        try:
            while True:
                chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
                if not chunk:
                    break
                if self.size < MAX_OUTPUT:
                    self.chunks.append(chunk[: MAX_OUTPUT - self.size])
                    self.size += len(self.chunks[-1])
        except (OSError, ValueError):
            pass

    def result(self, grace: float) -> bytes:
        self.thread.join(grace)
        return b"".join(self.chunks)


def _feed(pipe: Optional[IO[bytes]], data: bytes) -> None:
    if pipe is None:
        return
    try:
        pipe.write(data)
        pipe.close()
    except (OSError, ValueError):  # the program exited without reading all of its input
        pass


def _reap(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:  # unkillable (D state): leave it, report the timeout
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

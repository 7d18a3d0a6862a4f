"""The one way envdoctor runs an external command.

Every probe and every child script goes through :func:`run`: an argv list (never a shell), a
timeout, output bounded and decoded with errors replaced. It never raises for the program's sake;
a missing program, a hang, a crash or a non-zero exit comes back as a :class:`Ran` whose
``error`` says what happened. On the H200::

    >>> r = run(["nvidia-smi", "--version"], timeout=10)     # doctest: +SKIP
    >>> r.ok, r.stdout.splitlines()[0]
    (True, 'NVIDIA-SMI version  : 580.159.04')

It can also stream: ``on_line`` gets each line of standard output as it arrives (the child
protocol of :mod:`envdoctor.child` reads progress that way), ``idle_timeout`` ends a program
that has printed nothing for that long, and ``stop`` (a :class:`threading.Event`) ends it on
request (Ctrl-C in envdoctor, another GPU's failure): first SIGTERM, so a child can report what
it did, then SIGKILL after ``grace`` seconds. A Ctrl-C while waiting ends the program the same
way and is raised again.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, List, Mapping, Optional, Sequence

from envdoctor.facts.base import ErrorKind, ProbeError

#: Output beyond this many bytes per stream is read and dropped (a runaway tool cannot fill memory).
MAX_OUTPUT = 4 * 1024 * 1024
#: A streamed line longer than this is cut there (the rest of it is read and dropped).
MAX_LINE = 1024 * 1024
#: After the program exited, how long its pipes may stay open (a grandchild holds them) before
#: the program's process group is ended; never past the timeout.
_AFTER_EXIT = 2.0
#: Output this recent means a pipe is still being read, not held open by a silent grandchild.
_QUIET = 0.2
#: After the group was killed, how long the pipes get to close (all of them together).
_AFTER_KILL = 0.2
#: How often the waiting loop looks at ``stop`` and the idle clock.
_POLL = 0.05


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
    """Resolve ``name`` on the PATH of ``env`` (the probe's environment), not envdoctor's own.

    A folder on PATH that cannot be read is passed over, as the shell does.
    """
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    try:
        return shutil.which(name, path=path)
    except OSError:  # an unreadable PATH entry on some Pythons
        for folder in path.split(os.pathsep):
            candidate = os.path.join(folder or ".", name)
            try:
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    return candidate
            except OSError:
                continue
        return None


#: A line of standard error that gives a reason (looked for in the first 200 lines).
_REASON = re.compile(
    r"error|denied|cannot|can't|could not|couldn't|failed|refused|not found|no such|"
    r"permission|not permitted|unable|invalid|fatal|killed|timed? ?out",
    re.I,
)
#: The longest reason kept (a tool may print a whole page on one line).
MAX_REASON = 300


def stderr_reason(stderr: str, named_only: bool = False) -> Optional[str]:
    """The line of ``stderr`` that says why: the first one naming an error, else the last line
    (a Python traceback's last line); with ``named_only``, None when no line names an error.

    >>> stderr_reason("Client:\\nERROR: Got permission denied while trying to connect\\nerrors pretty printing info")
    'ERROR: Got permission denied while trying to connect'
    """
    lines = [line.strip() for line in stderr[:65536].splitlines()[:200] if line.strip()]
    if not lines:
        return None
    named = [line for line in lines if _REASON.search(line[:1000])]
    # a Python traceback's reason is its last line; elsewhere the first line that names an error
    traceback = any(line.startswith("Traceback (most recent call last)") for line in lines)
    if named_only and not (named or traceback):
        return None  # only output, no reason (a program's chatter sent to stderr)
    pick = lines[-1] if traceback or not named else named[0]
    return pick if len(pick) <= MAX_REASON else pick[:MAX_REASON] + " [...]"


def not_a_program(name: str, env: Mapping[str, str], exe: Optional[str] = None) -> Optional[str]:
    """Why something named ``name`` on PATH (or ``exe``) cannot be run, when it is there but is not
    a program; None when nothing of that name is there at all.

    >>> not_a_program("nvidia-smi", {"PATH": "/"}) is None
    True
    >>> not_a_program("tmp", {"PATH": "/"})
    'tmp: not installed (/tmp is a directory, not a program)'
    """
    candidates = (
        [exe]
        if exe
        else [os.path.join(folder or ".", name) for folder in env.get("PATH", os.defpath).split(os.pathsep)]
    )
    for candidate in candidates:
        try:
            if os.path.isdir(candidate):
                return f"{name}: not installed ({candidate} is a directory, not a program)"
            if os.path.isfile(candidate) and not os.access(candidate, os.X_OK):
                return f"{name}: not installed ({candidate} is not executable: chmod +x it or remove it)"
        except OSError:
            continue
    return None


def _missing(name: str, exe: Optional[str], env: Mapping[str, str]) -> str:
    """Why ``name`` cannot be run: not there at all, or something on PATH that is not a program.

    >>> _missing("nvidia-smi", None, {"PATH": "/nonexistent"})
    'nvidia-smi: not found'
    """
    return not_a_program(name, env, exe) or f"{name}: not found"


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
    on_line: Callable[[str], None] | None = None,
    idle_timeout: float | None = None,
    stop: threading.Event | None = None,
    grace: float = 3.0,
    on_start: Callable[[], None] | None = None,
) -> Ran:
    """Run ``argv`` with ``env`` (default: envdoctor's environment) and return what happened.

    The program is looked up on ``env['PATH']``. It gets its own process group, so a timeout or
    a stop ends whatever it started too. ``on_line`` is called from a reader thread; ``on_start``
    once the program is running (a caller waiting in another thread for the start goes on then).
    """
    argv = tuple(str(a) for a in argv)
    environ = dict(os.environ if env is None else env)
    shown = " ".join(argv)
    if any("\x00" in a for a in argv):  # a path read from a tool's JSON: no program takes it
        return Ran(
            argv,
            None,
            "",
            "",
            0.0,
            ProbeError(
                "unavailable",
                f"{argv[0][:200]}: an argument holds a NUL character (from a tool's output?); not run",
                shown[:500],
            ),
        )
    exe = argv[0] if os.sep in argv[0] else which(argv[0], environ)
    if exe is None or not os.path.exists(exe) or os.path.isdir(exe):
        return Ran(argv, None, "", "", 0.0, ProbeError("not_found", _missing(argv[0], exe, environ), shown))
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
    if on_start is not None:
        on_start()
    out_reader = _Reader(proc.stdout, on_line)
    readers = [out_reader, _Reader(proc.stderr)]
    if stdin is not None:  # in a thread: a program that never reads must not block envdoctor
        threading.Thread(target=_feed, args=(proc.stdin, stdin.encode()), daemon=True).start()
    try:
        why = _wait(proc, out_reader, started, timeout, idle_timeout, stop)
    except KeyboardInterrupt:
        _end(proc, grace)
        raise
    deadline = started + timeout
    if why is not None:
        if why == "stopped":
            _end(proc, grace)
        else:
            _kill_group(proc)
            _reap(proc)
        _drain_after_exit(readers, time.monotonic() + _AFTER_KILL)  # what it printed last is still read
        out, err = _collect(readers, time.monotonic())
        message = {
            "timeout": f"{argv[0]} did not answer in {timeout:g} s",
            "idle": f"{argv[0]} printed nothing for {idle_timeout or 0:g} s and was stopped",
            "stopped": f"{argv[0]} was stopped on request",
        }[why]
        kind: ErrorKind = "interrupted" if why == "stopped" else "timeout"
        return Ran(
            argv,
            proc.returncode if why == "stopped" else None,
            _decode(out),
            _decode(err),
            time.monotonic() - started,
            ProbeError(kind, message, shown),
        )
    # a grandchild may hold the pipes open after the program exited: wait for them only until the
    # deadline (at most _AFTER_EXIT), then end the program's group (the grandchildren in it) and
    # take what was read; one that left the group keeps its pipe, but not envdoctor
    if any(r.thread.is_alive() for r in readers):
        _drain_after_exit(readers, deadline)
        if any(r.thread.is_alive() for r in readers):
            _kill_group(proc)
    out, err = _collect(readers, time.monotonic() + _AFTER_KILL)
    seconds = time.monotonic() - started
    stdout, stderr = _decode(out), _decode(err)
    code = proc.returncode
    if code < 0:
        name = _signal_name(-code)
        return Ran(argv, code, stdout, stderr, seconds, ProbeError("crashed", f"{argv[0]} was killed by {name}", shown))
    if code != 0:
        detail = stderr_reason(stderr) or stderr_reason(stdout) or "no output"
        return Ran(
            argv,
            code,
            stdout,
            stderr,
            seconds,
            ProbeError("exit_status", f"{argv[0]} exited with status {code}: {detail}", shown),
        )
    return Ran(argv, code, stdout, stderr, seconds)


def _drain_after_exit(readers: Sequence[_Reader], deadline: float) -> None:
    """Wait for the pipes of a program that exited: until its deadline while they are silent (a
    grandchild holds them), longer only while output still comes (what a child printed just
    before its end is still being read), and never more than _AFTER_EXIT in all."""
    now = time.monotonic()
    hard = now + _AFTER_EXIT
    soft = min(deadline, hard)
    while now < hard:
        alive = [r for r in readers if r.thread.is_alive()]
        if not alive:
            return
        if now >= soft and all(now - r.last_output(0.0) > _QUIET for r in alive):
            return
        alive[0].thread.join(_POLL)
        now = time.monotonic()


def _collect(readers: Sequence[_Reader], until: float) -> List[bytes]:
    """What each reader has read, waiting for them all together until ``until`` (not per pipe)."""
    return [r.result(grace=max(0.0, until - time.monotonic())) for r in readers]


def _wait(
    proc: subprocess.Popen,
    out: _Reader,
    started: float,
    timeout: float,
    idle_timeout: Optional[float],
    stop: Optional[threading.Event],
) -> Optional[str]:
    """None when the program exited by itself; else "timeout", "idle" or "stopped".

    It waits on the end of the program's standard output, which comes when the program exits, so
    the exit is seen at once (``Popen.wait(timeout)`` sleeps in steps up to 50 ms and sees it up to
    that late); a program whose output stays open after it (a grandchild holds it) is polled."""
    deadline = started + timeout
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "timeout"
        step = min(_POLL, deadline - now)
        if out.thread.is_alive():
            out.thread.join(step)
            if proc.poll() is not None:
                return None
            if out.thread.is_alive():  # still open: the program runs (or a grandchild holds it)
                step = 0.0
        if step:
            try:
                proc.wait(timeout=step)
                return None
            except subprocess.TimeoutExpired:
                pass
        if stop is not None and stop.is_set():
            return "stopped"
        if idle_timeout is not None and time.monotonic() - out.last_output(started) > idle_timeout:
            return "idle"


class _Reader:
    """Drain one pipe in a thread, keeping at most MAX_OUTPUT bytes (the rest is read and dropped,
    so a chatty program never blocks on a full pipe and never fills envdoctor's memory).
    With ``on_line``, each line (cut at MAX_LINE) is also handed over as it arrives."""

    def __init__(self, pipe: Optional[IO[bytes]], on_line: Optional[Callable[[str], None]] = None) -> None:
        self.chunks: List[bytes] = []
        self.size = 0
        self._last: Optional[float] = None
        self.on_line = on_line
        target = self._lines if on_line is not None else self._drain
        self.thread = threading.Thread(target=target, args=(pipe,), daemon=True)
        self.thread.start()

    def last_output(self, default: float) -> float:
        return self._last if self._last is not None else default

    def _keep(self, chunk: bytes) -> None:
        self._last = time.monotonic()
        if self.size < MAX_OUTPUT:
            self.chunks.append(chunk[: MAX_OUTPUT - self.size])
            self.size += len(self.chunks[-1])

    def _drain(self, pipe: Optional[IO[bytes]]) -> None:
        if pipe is None:
            return
        try:
            while True:
                chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
                if not chunk:
                    break
                self._keep(chunk)
        except (OSError, ValueError):
            pass

    def _lines(self, pipe: Optional[IO[bytes]]) -> None:
        if pipe is None:
            return
        cut = False  # inside an over-long line: drop until its newline
        try:
            while True:
                raw = pipe.readline(MAX_LINE + 1)
                if not raw:
                    break
                self._keep(raw)
                complete = raw.endswith(b"\n")
                if not cut:
                    self._deliver(raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r\n"))
                cut = not complete
        except (OSError, ValueError):
            pass

    def _deliver(self, line: str) -> None:
        assert self.on_line is not None
        try:
            self.on_line(line)
        except Exception:  # noqa: BLE001 - a broken progress display must not stop the reading
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
        proc.wait(timeout=_AFTER_KILL * 2.5)  # SIGKILL ends it at once, unless it is in D state
    except subprocess.TimeoutExpired:  # unkillable (D state): leave it, report the timeout
        pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except (ProcessLookupError, OSError):
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    _signal_group(proc, signal.SIGKILL)


def _end(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM (the child may report what it did), then SIGKILL after ``grace`` seconds."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _reap(proc)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

"""The one protocol for scripts run inside the *target* interpreter (its torch, its CUDA).

envdoctor never imports torch. What needs torch (or just the target's own view of itself) is a
script in this folder: ``torch_probe.py`` (``check``), ``bench.py``, ``plot.py``,
``interpreter.py`` (wheel tags) and the others. :func:`run_child` is the one place that starts
one: it sends ``_prelude.py`` + the script + ``_envdoctor_run(main)`` to ``PYTHON - CONFIG`` on
stdin, bounds it (timeout, silence, output size, Ctrl-C), streams its protocol lines through the
one bounded JSON reader, and turns every way it can go wrong into one :class:`ChildRun`::

    >>> r = run_child("interpreter.py", python="/usr/bin/python3", timeout=10)   # doctest: +SKIP
    >>> r.ok, r.result["version"]
    (True, [3, 12, 3])

The protocol lines are described in ``_prelude.py``; scripts read from ``pkgutil.get_data`` so
they also work from inside a zip archive (``envdoctor.pyz``).
"""

from __future__ import annotations

import json
import os
import pkgutil
import signal
import sys
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.parse.jsontext import JsonError, loads
from envdoctor.run import Ran, run, which

PROTOCOL = 2
PROTOCOL_KEY = "envdoctor_child"
#: Events kept per child; a run that streams more keeps the first ones and counts the rest.
MAX_EVENTS = 200_000
#: Configurations larger than this go through a temporary file (an argv string is capped at 128 KiB).
INLINE_CONFIG = 64 * 1024
#: Foreign stdout lines kept for the error message.
OTHER_LINES = 5


@dataclass(frozen=True)
class ChildRun:
    """What one child did. ``result`` is set only when it answered to the end.

    ``error`` says why not, in one line a person can act on: the interpreter could not be run,
    it hung, crashed, exited early, printed no protocol line, or the script reported a
    ``failure`` (``failure["kind"]``: "no_torch", "bad_device", "internal", ...).
    """

    script: str
    python: str
    result: Optional[Dict[str, Any]] = None
    events: Tuple[Dict[str, Any], ...] = ()
    error: Optional[ProbeError] = None
    failure: Optional[Dict[str, Any]] = None
    stage: Optional[str] = None  # the last step announced: where a crash happened
    other: Tuple[str, ...] = ()  # stdout lines that are not protocol lines (the first few)
    stderr: str = ""
    returncode: Optional[int] = None
    seconds: float = 0.0
    dropped_events: int = 0
    cause: Optional[ProbeError] = None  # the runner's own error, before it was put in words here

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None

    def of_kind(self, kind: str) -> Tuple[Dict[str, Any], ...]:
        return tuple(e for e in self.events if e.get("kind") == kind)


def find_python(explicit: Optional[str], env: Optional[Mapping[str, str]] = None) -> Tuple[Optional[str], str]:
    """The target interpreter: (path or None, how it was chosen).

    ``--python`` (a path, or a name looked up on PATH), else ``python3`` then ``python`` on the
    PATH of ``env``, else envdoctor's own interpreter. None: ``--python`` names nothing runnable.
    """
    env = os.environ if env is None else env
    if explicit:
        if os.sep in explicit:
            ok = os.path.isfile(explicit) and os.access(explicit, os.X_OK)
            return (explicit if ok else None), "--python"
        return which(explicit, env), "--python"
    for name in ("python3", "python"):
        found = which(name, env)
        if found:
            return found, f"{name} on PATH"
    return sys.executable, "envdoctor's own"


#: A script that needs other files names them on a line of its own, e.g.
#: ``# envdoctor child uses: _torch_common.py bench/target/matmul.py``: they are sent before it, in that order.
#: A bare name is a file of this folder; ``bench/target/matmul.py`` is a path under the package.
USES = "# envdoctor child uses:"


def uses(text: str) -> Tuple[str, ...]:
    """The parts a script names on its ``# envdoctor child uses:`` lines (among its first 60 lines;
    a long list may go on several such lines, read in order).

    >>> uses("'''Doc.'''\\n# envdoctor child uses: _torch_common.py bench/target/matmul.py\\nimport os\\n")
    ('_torch_common.py', 'bench/target/matmul.py')
    """
    return tuple(part for line in text.splitlines()[:60] if line.startswith(USES) for part in line[len(USES) :].split())


def script_text(name: str) -> str:
    """The full program sent to the target: prelude, the parts the script uses, the script, the
    call of its ``main``."""
    text = _resource(name)
    parts = [_resource(part) + "\n" for part in uses(text)]
    return "".join([_resource("_prelude.py"), "\n"] + parts + [text, "\n_envdoctor_run(main)\n"])


def script_path(name: str) -> str:
    """Where a script lives in the source tree: ``envdoctor/child/NAME`` for a bare name, else
    ``envdoctor/NAME`` (a plugin's own script).

    >>> script_path("torch_probe.py"), script_path("bench/target/bench.py")
    ('envdoctor/child/torch_probe.py', 'envdoctor/bench/target/bench.py')
    """
    return f"envdoctor/{name}" if "/" in name else f"envdoctor/child/{name}"


def _resource(name: str) -> str:
    """A script's text: a bare name is a file of this folder (``_torch_common.py``), a name with a
    slash is a path under the envdoctor package (``diag/target/gpu.py``: a plugin's own script).

    >>> _resource("_prelude.py").startswith("# -- envdoctor child protocol")
    True
    """
    package, relative = ("envdoctor", name) if "/" in name else (__name__, name)
    if relative.startswith("/") or ".." in relative.split("/"):
        raise FileNotFoundError(f"{name}: not a script of envdoctor")
    data = pkgutil.get_data(package, relative)
    if data is None:  # pragma: no cover - a broken installation
        raise FileNotFoundError(f"{script_path(name)} is missing from this installation")
    return data.decode("utf-8")


def decode_line(line: str) -> Optional[Dict[str, Any]]:
    """A protocol line as a dict, or None for any other line (foreign output, garbage, too deep).

    >>> decode_line('{"envdoctor_child": 2, "kind": "stage", "stage": "import torch"}')["stage"]
    'import torch'
    >>> decode_line("Warning: something") is None
    True
    """
    line = line.strip()
    if not line.startswith("{") or PROTOCOL_KEY not in line:
        return None
    try:
        data = loads(line)
    except JsonError:
        return None
    if isinstance(data, dict) and data.get(PROTOCOL_KEY) == PROTOCOL and isinstance(data.get("kind"), str):
        return data
    return None


class _Collector:
    def __init__(self, on_event: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        self.on_event = on_event
        self.events: List[Dict[str, Any]] = []
        self.dropped = 0
        self.result: Optional[Dict[str, Any]] = None
        self.failure: Optional[Dict[str, Any]] = None
        self.stage: Optional[str] = None
        self.other: List[str] = []
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        data = decode_line(text)
        if data is None:
            if text.strip() and len(self.other) < OTHER_LINES:
                self.other.append(text.strip()[:300])
            return
        kind = data["kind"]
        with self.lock:
            if kind == "result":
                result = data.get("result")
                self.result = result if isinstance(result, dict) else {"value": result}
                self.stage = None
                return
            if kind == "error":
                error = data.get("error")
                self.failure = error if isinstance(error, dict) else {"kind": "internal", "message": str(error)}
            elif kind == "stage" and isinstance(data.get("stage"), str):
                self.stage = data["stage"]
            if len(self.events) < MAX_EVENTS:
                self.events.append(data)
            else:
                self.dropped += 1
        if self.on_event is not None and kind not in ("error",):
            self.on_event(data)


def run_child(
    script: str,
    config: Optional[Mapping[str, Any]] = None,
    *,
    python: str,
    timeout: float,
    what: str = "",
    env: Optional[Mapping[str, str]] = None,
    on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
    idle_timeout: Optional[float] = None,
    stop: Optional[threading.Event] = None,
    isolated: bool = False,
    cwd: Optional[str] = None,
    runner: Callable[..., Ran] = run,
) -> ChildRun:
    """Run ``script`` (a file of this folder) in ``python``; never raises for the child's sake.

    ``what`` names the work in messages ("the torch check", "the benchmark"). A Python stack is
    dumped to stderr one second before ``timeout`` (faulthandler), so a hang shows where.
    ``runner`` is ``envdoctor.run.run`` or a probe context's ``run`` with the same arguments.
    """
    what = what or script
    cfg = dict(config or {})
    cfg.setdefault("dump_after", round(max(timeout - 1.0, timeout * 0.8), 3))
    text = json.dumps(cfg, sort_keys=True)
    argv: List[str] = [python] + (["-I"] if isolated else []) + ["-"]
    tmp: Optional[str] = None
    if len(text) > INLINE_CONFIG:
        import tempfile  # rare; not loaded before check's child starts

        fd, tmp = tempfile.mkstemp(prefix="envdoctor-child-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        argv.append("@" + tmp)
    else:
        argv.append(text)
    collector = _Collector(on_event)
    extra: Dict[str, Any] = {"env": env} if env is not None else {}
    if cwd is not None:
        extra["cwd"] = cwd
    try:
        ran = runner(
            argv,
            timeout=timeout,
            stdin=script_text(script),
            on_line=collector.line,
            idle_timeout=idle_timeout,
            stop=stop,
            **extra,
        )
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return _outcome(script, python, what, ran, collector)


def from_ran(script: str, python: str, ran: Ran, what: str = "") -> ChildRun:
    """The :class:`ChildRun` of an already finished run (a recording replayed in a test); pure."""
    collector = _Collector(None)
    for line in ran.stdout.splitlines():
        collector.line(line)
    return _outcome(script, python, what or script, ran, collector)


def _outcome(script: str, python: str, what: str, ran: Ran, c: _Collector) -> ChildRun:
    base = ChildRun(
        script,
        python,
        c.result,
        tuple(c.events),
        None,
        c.failure,
        c.stage,
        tuple(c.other),
        _tail(ran.stderr),
        ran.returncode,
        ran.seconds,
        c.dropped,
        ran.error,
    )
    where = f" during {c.stage}" if c.stage else ""
    command = f"{python} - < {script_path(script)}"
    err = ran.error
    if err is not None and err.kind in ("not_found", "permission"):
        return replace(
            base, error=ProbeError(err.kind, f"the target Python {python} could not be run: {err.message}", command)
        )
    if err is not None and err.kind == "timeout":
        limit = err.message.split(" did not answer ", 1)[-1] if " did not answer " in err.message else None
        message = (
            f"{python} did not finish {what} {limit}{where}"
            if limit
            else f"{python} {err.message.split(' ', 1)[-1]}{where}"
        )
        return replace(base, result=None, error=ProbeError("timeout", message, command))
    if err is not None and err.kind == "interrupted":
        return replace(base, error=ProbeError("interrupted", f"{what} was stopped{where}", command))
    if err is not None and err.kind == "crashed":
        return replace(
            base,
            result=None,
            error=ProbeError("crashed", f"{python} was killed by {_signal_name(ran.returncode)}{where}", command),
        )
    if c.failure is not None:
        message = str(c.failure.get("message") or c.failure.get("kind") or "failed")
        return replace(
            base,
            result=None,
            error=ProbeError("crashed" if c.failure.get("kind") == "internal" else "unavailable", message, command),
        )
    if err is not None:  # exit_status
        last = _last_line(ran.stderr) or _last_line(ran.stdout) or "no output"
        if last.startswith("SyntaxError"):
            last += f" ({python} is probably too old for envdoctor's {script})"
        return replace(
            base,
            result=None,
            error=ProbeError("exit_status", f"{python} exited with status {ran.returncode}{where}: {last}", command),
        )
    if c.result is None:
        if c.other:
            return replace(
                base,
                error=ProbeError(
                    "unparseable",
                    f"{python} printed no envdoctor result{where}; its stdout began with: {c.other[0][:200]}",
                    command,
                ),
            )
        return replace(
            base,
            error=ProbeError(
                "unparseable", f"{python} exited with status 0{where} without printing envdoctor's result", command
            ),
        )
    return base


def _signal_name(returncode: Optional[int]) -> str:
    try:
        return signal.Signals(-(returncode or 0)).name
    except ValueError:
        return f"signal {-(returncode or 0)}"


def _last_line(text: str) -> Optional[str]:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else None


def _tail(text: str, limit: int = 3000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "[...] " + text[-limit:]


@dataclass(frozen=True)
class Job:
    """One child of a group started together (one per GPU, one per rank)."""

    script: str
    config: Mapping[str, Any]
    python: str
    timeout: float
    what: str = ""
    env: Optional[Mapping[str, str]] = None
    idle_timeout: Optional[float] = None


def run_children(
    jobs: Sequence[Job],
    on_event: Optional[Callable[[int, Dict[str, Any]], None]] = None,
    stop: Optional[threading.Event] = None,
) -> Tuple[Tuple[ChildRun, ...], bool]:
    """Run ``jobs`` at once; (their runs in order, whether Ctrl-C stopped them).

    One child that hangs or dies does not take the others down. On Ctrl-C every child is asked
    to stop (SIGTERM: it can still report what it did), and what they said is returned.
    """
    stop = stop or threading.Event()
    interrupted = False

    def one(i: int, job: Job) -> ChildRun:
        hook = (lambda e: on_event(i, e)) if on_event is not None else None
        return run_child(
            job.script,
            job.config,
            python=job.python,
            timeout=job.timeout,
            what=job.what,
            env=job.env,
            on_event=hook,
            idle_timeout=job.idle_timeout,
            stop=stop,
        )

    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=max(1, len(jobs)))
    futures = [pool.submit(one, i, job) for i, job in enumerate(jobs)]
    try:
        while not all(f.done() for f in futures):
            try:
                futures[[f.done() for f in futures].index(False)].result(timeout=0.2)
            except Exception:  # noqa: BLE001 - a timeout of the poll; failures come back as ChildRun
                pass
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
    runs = tuple(f.result() for f in futures)
    pool.shutdown(wait=True)
    return runs, interrupted


def draw_plot(
    script: str, spec: Dict[str, Any], python: str, env: Optional[Mapping[str, str]] = None, timeout: float = 60.0
) -> Tuple[bool, str, Optional[str]]:
    """Run a plot script (``plot.py``, ``burn/target/plot.py``, ``links/target/plot.py``) on ``spec`` and put the
    PNG at ``spec["path"]``: (written, one line saying so, the failure kind, e.g. "no_matplotlib").

    The child draws into a private temporary folder; the file is then written atomically
    (envdoctor.atomic), and a path that exists but is not a regular file (a link, a device, a
    folder) is refused, as every file envdoctor writes.
    """
    import shutil
    import tempfile

    from envdoctor.atomic import write_atomic

    shown = str(spec["path"])
    dest = os.path.abspath(shown)
    if os.path.islink(dest) or (os.path.lexists(dest) and not os.path.isfile(dest)):
        return False, f"no plot written: {shown} exists and is not a regular file", "not_regular"
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):  # as -o: envdoctor makes no folder the user did not
        return (
            False,
            (
                f"no plot written: the folder {os.path.dirname(shown) or parent} does not exist "
                "(create it, or name a file in a folder that exists)"
            ),
            "no_folder",
        )
    folder = tempfile.mkdtemp(prefix="envdoctor-plot-")
    try:
        tmp = os.path.join(folder, "plot.png")
        # matplotlib keeps its font cache and settings in MPLCONFIGDIR, else ~/.cache/matplotlib and
        # ~/.config/matplotlib: a private one, removed with the folder, leaves nothing behind
        child_env = dict(os.environ if env is None else env, MPLCONFIGDIR=os.path.join(folder, "matplotlib"))
        child = run_child(script, dict(spec, path=tmp), python=python, timeout=timeout, env=child_env, what="the plot")
        if child.ok and os.path.isfile(tmp):
            with open(tmp, "rb") as fh:
                write_atomic(dest, fh.read())
            return True, f"plot written to {shown}", None
        kind = (child.failure or {}).get("kind")
        if kind == "no_matplotlib":
            return (
                False,
                (f"no plot written: matplotlib is not installed in {python} ({python} -m pip install matplotlib)"),
                kind,
            )
        why = child.error.message if child.error else "no answer"
        return False, f"no plot written: {why.replace(tmp, shown)}", kind
    except OSError as exc:
        return False, f"no plot written: {shown}: {exc.strerror or exc}", "os_error"
    finally:
        shutil.rmtree(folder, ignore_errors=True)

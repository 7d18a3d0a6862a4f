"""The target Python and its torch, from ONE child process of that interpreter.

The interpreter is ``--python`` (``ctx.python``), else the first ``python3`` then ``python`` on
``ctx.env['PATH']``, else envdoctor's own. ``torch_child.py`` goes in on stdin and prints JSON
lines: the Python facts first (before torch is touched), a line before each risky step, the whole
answer last. So a segfault in ``import torch``, a hang in CUDA init or a non-zero exit still
leaves the Python facts, and torch is imported once.

>>> python, torch = probe(Context())
>>> python.version, torch.version, torch.cuda_available
('3.12.3', '2.11.0+cu130', True)
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from pathlib import Path
from typing import Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.python import TargetPython, TorchFacts
from envdoctor.parse.torch import ChildOutput, read_child_output, target_python, torch_facts
from envdoctor.probes.context import Context
from envdoctor.run import Ran

CHILD = Path(__file__).with_name("torch_child.py")
STDERR_TAIL = 3000
#: Timeout for the Python-only run (``with_torch=False``): no torch import to wait for.
PYTHON_ONLY_TIMEOUT = 15.0


def choose_python(ctx: Context) -> Tuple[str, str]:
    """(executable, how it was chosen)."""
    if ctx.python:
        found = ctx.python if "/" in ctx.python else ctx.which(ctx.python)
        return (found or ctx.python), "--python"
    for name in ("python3", "python"):
        found = ctx.which(name)
        if found:
            return found, f"{name} on PATH"
    return sys.executable, "envdoctor's own"


def probe(ctx: Context, with_torch: bool = True) -> Tuple[TargetPython, TorchFacts]:
    exe, chosen_by = choose_python(ctx)
    timeout = ctx.torch_timeout if with_torch else min(ctx.torch_timeout, PYTHON_ONLY_TIMEOUT)
    argv = [exe, "-"]
    if with_torch:
        # faulthandler prints the stuck stack to stderr shortly before the timeout kills the child
        argv += ["--dump-after", f"{max(timeout - 1.0, timeout * 0.8):g}"]
    else:
        argv.append("--no-torch")
    ran = ctx.run(argv, timeout=timeout, stdin=CHILD.read_text(encoding="utf-8"))
    return interpret(ran, exe, chosen_by, with_torch)


def interpret(ran: Ran, exe: str, chosen_by: str, with_torch: bool = True) -> Tuple[TargetPython, TorchFacts]:
    """Facts from one run of the child; pure (tests feed it hand-made ``Ran`` values)."""
    out = read_child_output(ran.stdout)
    tail = _tail(ran.stderr)
    command = f"{exe} - < torch_child.py"
    if ran.error is not None and ran.error.kind in ("not_found", "permission"):
        err = ProbeError(ran.error.kind, f"the target Python {exe} ({chosen_by}) could not be run: "
                         f"{ran.error.message}", command)
        return (TargetPython(executable=exe, chosen_by=chosen_by, error=err),
                TorchFacts(error=ProbeError("unavailable", f"not inspected: {err.message}", command)))
    if out.error_kind == "unsupported_python":
        version = (out.python or {}).get("version")
        err = ProbeError("unavailable", f"the target Python {exe} is Python {version}; "
                         "envdoctor's check needs 3.8 or newer (torch needs a newer one still)", command)
        return (TargetPython(executable=exe, chosen_by=chosen_by, version=version, error=err),
                TorchFacts(error=ProbeError("unavailable", f"not inspected: {err.message}", command)))
    failure = _failure(ran, out, exe, command)
    if out.python is None:
        python = TargetPython(executable=exe, chosen_by=chosen_by,
                              error=failure or ProbeError("unparseable", "no Python facts", command))
    else:
        real = out.python.get("executable")
        if isinstance(real, str) and real and os.path.realpath(real) != os.path.realpath(exe):
            # a launcher (pyenv's shim is a shell script): name the interpreter that really ran
            python = target_python(out.python, real, f"{chosen_by}, through the launcher {exe}")
        else:
            python = target_python(out.python, exe, chosen_by)
    if not with_torch:  # torch not imported: only what its metadata says (version, no build facts)
        dist = ((out.python or {}).get("distributions") or {}).get("torch")
        return python, TorchFacts(installed=bool(dist), version=dist if isinstance(dist, str) else None)
    torch = torch_facts(out.torch, out.python)
    if failure is not None or out.torch is None:
        torch = _replace(torch, error=failure or ProbeError(
            "unparseable", f"{exe} printed no torch facts", command), stage=out.stage)
    if tail:
        torch = _replace(torch, stderr_tail=tail)
    return python, torch


def _failure(ran: Ran, out: ChildOutput, exe: str, command: str) -> Optional[ProbeError]:
    """Why the child gave no complete answer, in one line; None when it did."""
    where = f" during {out.stage}" if out.stage else ""
    if ran.error is not None and ran.error.kind == "timeout":
        limit = ran.error.message.rsplit(" did not answer ", 1)[-1]     # "in 60 s"
        return ProbeError("timeout", f"{exe} did not finish the torch check {limit}{where}", command)
    if ran.error is not None and ran.error.kind == "crashed":
        return ProbeError("crashed", f"{exe} was killed by {_signal_name(ran.returncode)}{where}", command)
    if out.result == "error":
        return ProbeError("crashed", f"envdoctor's torch check failed inside {exe}: {out.message}", command)
    if ran.error is not None:   # exit_status
        last = _last_line(ran.stderr) or _last_line(ran.stdout) or "no output"
        return ProbeError("exit_status", f"{exe} exited with status {ran.returncode}{where}: {last}",
                          command)
    if out.result is None:
        if out.other:
            return ProbeError("unparseable", f"{exe} printed no envdoctor result{where}; its stdout "
                              f"began with: {out.other[0][:200]}", command)
        return ProbeError("unparseable", f"{exe} exited with status 0{where} without printing "
                          "envdoctor's result", command)
    return None


def _replace(facts: TorchFacts, **changes: object) -> TorchFacts:
    return dataclasses.replace(facts, **changes)


def _signal_name(returncode: Optional[int]) -> str:
    try:
        return signal.Signals(-(returncode or 0)).name
    except ValueError:
        return f"signal {-(returncode or 0)}"


def _last_line(text: str) -> Optional[str]:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else None


def _tail(text: str) -> Optional[str]:
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= STDERR_TAIL else "[...] " + text[-STDERR_TAIL:]

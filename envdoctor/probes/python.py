"""The target Python and its torch, from ONE child process of that interpreter.

The interpreter is ``--python`` (``ctx.python``), else the first ``python3`` then ``python`` on
``ctx.env['PATH']``, else envdoctor's own. ``envdoctor/child/torch_probe.py`` runs in it through
the child protocol: the Python facts come first (before torch is touched), a stage line before
each risky step, the whole answer last. So a segfault in ``import torch``, a hang in CUDA init or
a non-zero exit still leaves the Python facts, and torch is imported once. When the target has no
torch, ``probes/interpreters.py`` names the interpreters of the machine that have it (a file scan);
``probes/indexconf.py`` adds the indexes its pip and uv are configured with (the site pip.conf is
the target's own).

>>> python, torch = probe(Context())                        # doctest: +SKIP
>>> python.version, torch.version, torch.cuda_available
('3.12.3', '2.11.0+cu130', True)
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from envdoctor.child import ChildRun, find_python, run_child
from envdoctor.facts.base import ProbeError
from envdoctor.facts.python import TargetPython, TorchFacts
from envdoctor.parse.torch import target_python, torch_facts
from envdoctor.probes.context import Context
from envdoctor.probes.reasons import stderr_reason
from envdoctor.run import Ran

SCRIPT = "torch_probe.py"
#: ``start`` waits at most this long for the child's process to start (then it is waited for later).
START_WAIT = 1.0


def choose_python(ctx: Context) -> Tuple[str, str]:
    """(executable, how it was chosen); an unrunnable ``--python`` is kept as given, to be reported."""
    found, chosen_by = find_python(ctx.python, ctx.env)
    return (found or ctx.python or sys.executable), chosen_by


def probe(ctx: Context, with_torch: bool = True) -> Tuple[TargetPython, TorchFacts]:
    return start(ctx, with_torch)()


def start(ctx: Context, with_torch: bool = True) -> Callable[[], Tuple[TargetPython, TorchFacts]]:
    """Start the child in a thread of its own and return once its process has started (or could
    not be): the function returned waits for it and makes the facts. The child is the slowest
    probe (a second interpreter's start), so it starts before envdoctor's own imports and probes."""
    exe, chosen_by = choose_python(ctx)
    # importing torch has its own bound (--torch-timeout); without it the child is like any command
    timeout = ctx.torch_timeout if with_torch else ctx.timeout
    config: Dict[str, Any] = {"torch": with_torch}
    if with_torch:  # the libraries above torch, each imported in a grandchild, within the same bound
        from envdoctor.stack.host import child_config

        config["extensions"] = child_config(timeout)
    running = threading.Event()
    box: List[ChildRun] = []
    failure: List[BaseException] = []

    def runner(argv: Any, **kw: Any) -> Ran:
        return ctx.run(argv, on_start=running.set, **kw)

    def work() -> None:
        try:
            box.append(run_child(SCRIPT, config, python=exe, timeout=timeout, what="the torch check", runner=runner))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failure.append(exc)
        finally:
            running.set()

    worker = threading.Thread(target=work, name="envdoctor-python", daemon=True)
    worker.start()
    try:
        running.wait(START_WAIT)
    except KeyboardInterrupt:
        ctx.stop.set()
        raise

    def wait() -> Tuple[TargetPython, TorchFacts]:
        from envdoctor.probes.indexconf import index_config  # loaded while the child runs

        worker.join()
        if failure:
            raise failure[0]
        python, torch = interpret(box[0], exe, chosen_by, with_torch)
        python = dataclasses.replace(python, index_config=index_config(ctx, python.prefix))
        if with_torch and not torch.installed:
            torch = with_elsewhere(ctx, python, torch)
        return python, torch

    return wait


def with_elsewhere(ctx: Context, python: TargetPython, torch: TorchFacts) -> TorchFacts:
    """The torch facts of a target without torch, with the machine's interpreters that have it."""
    from envdoctor.probes.interpreters import scan

    found, cut = scan(ctx, exclude=python.prefix)
    return dataclasses.replace(torch, elsewhere=found, elsewhere_cut=cut) if found or cut else torch


def _sorted_out(child: ChildRun) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """(python facts, torch facts) from the answer, else from the events before the end."""
    if child.result is not None:
        py, torch = child.result.get("python"), child.result.get("torch")
        return (py if isinstance(py, dict) else None), (torch if isinstance(torch, dict) else None)
    python = torch = None
    for event in child.events:
        if event.get("kind") == "python" and isinstance(event.get("python"), dict):
            python = event["python"]
        elif event.get("kind") == "stage" and isinstance(event.get("torch"), dict):
            torch = event["torch"]
    if python is None and child.failure and isinstance(child.failure.get("python"), dict):
        python = child.failure["python"]
    return python, torch


def interpret(child: ChildRun, exe: str, chosen_by: str, with_torch: bool = True) -> Tuple[TargetPython, TorchFacts]:
    """Facts from one run of the child; pure (tests feed it hand-made ``ChildRun`` values)."""
    py, torch_data = _sorted_out(child)
    error = child.error
    command = error.command if error is not None else f"{exe} - < envdoctor/child/{SCRIPT}"
    if error is not None and error.kind in ("not_found", "permission") and child.cause is not None:
        err = ProbeError(
            error.kind, f"the target Python {exe} ({chosen_by}) could not be run: {child.cause.message}", command
        )
        return (
            TargetPython(executable=exe, chosen_by=chosen_by, error=err),
            TorchFacts(error=ProbeError("unavailable", f"not inspected: {err.message}", command)),
        )
    failure_kind = (child.failure or {}).get("kind")
    if failure_kind == "unsupported_python":
        version = (py or {}).get("version")
        err = ProbeError(
            "unavailable",
            f"the target Python {exe} is Python {version}; "
            "envdoctor's check needs 3.8 or newer (torch needs a newer one still)",
            command,
        )
        return (
            TargetPython(executable=exe, chosen_by=chosen_by, version=version, error=err),
            TorchFacts(error=ProbeError("unavailable", f"not inspected: {err.message}", command)),
        )
    if error is not None and child.failure is not None:
        # the target's own answer (whatever its kind: a Python that cannot run the check, a planted
        # line): a problem of that interpreter for ED200, not envdoctor's bug (exit 3)
        kind = str(failure_kind)[:40] if isinstance(failure_kind, str) else "error"
        error = ProbeError(
            "unavailable", f"the torch check inside {exe} answered an error ({kind}): {error.message}", command
        )
    elif error is not None and error.kind == "unparseable":
        reason = stderr_reason(child.stderr, named_only=True)  # "Fatal Python error: ...", a library's complaint
        if reason:
            error = dataclasses.replace(error, message=f"{error.message}; its standard error says: {reason}")
    if py is None:
        python = TargetPython(
            executable=exe, chosen_by=chosen_by, error=error or ProbeError("unparseable", "no Python facts", command)
        )
    else:
        real = py.get("executable")
        if isinstance(real, str) and real and _other_file(real, exe):
            # a launcher (pyenv's shim is a shell script): name the interpreter that really ran
            python = target_python(py, real, f"{chosen_by}, through the launcher {exe}")
        else:
            python = target_python(py, exe, chosen_by)
    if not with_torch:  # torch not imported: only what its metadata says (version, no build facts)
        dist = (py or {}).get("distributions") or {}
        dist = dist if isinstance(dist, dict) else {}
        version, vision, audio = (dist.get(n) for n in ("torch", "torchvision", "torchaudio"))
        return python, TorchFacts(
            installed=bool(version),
            version=version if isinstance(version, str) else None,
            torchvision=vision if isinstance(vision, str) and version else None,
            torchaudio=audio if isinstance(audio, str) and version else None,
        )
    torch = torch_facts(torch_data, py)
    # a failure in the last stage (the libraries above torch) leaves torch's facts whole
    if (error is not None and child.stage != "extensions") or torch_data is None:
        torch = dataclasses.replace(
            torch, error=error or ProbeError("unparseable", f"{exe} printed no torch facts", command), stage=child.stage
        )
    if child.stderr:
        torch = dataclasses.replace(torch, stderr_tail=child.stderr)
    return python, dataclasses.replace(torch, extensions=_extensions(child))


def _extensions(child: ChildRun) -> Any:
    """The libraries above torch (``envdoctor/stack``), from the answer's ``extensions`` part."""
    from envdoctor.stack.host import interpret as stack_facts

    if child.result is not None:
        return stack_facts(child.result.get("extensions"))
    why = None
    if child.stage == "extensions" and child.error is not None:
        why = f"the check of the libraries above torch did not finish: {child.error.message}"
    return stack_facts(None, why)


def _other_file(real: str, exe: str) -> bool:
    """Whether the interpreter that ran (``sys.executable`` as the child said) is another file
    than ``exe``; False for a path no file can have (a NUL, a lone surrogate from a JSON escape).

    >>> _other_file("/usr/bin/py\x00thon", "/usr/bin/python3"), _other_file("/x/python3.12", "/usr/bin/python3")
    (False, True)
    """
    try:
        return os.path.realpath(real) != os.path.realpath(exe)
    except ValueError:  # "embedded null byte"; UnicodeEncodeError of a surrogate
        return False

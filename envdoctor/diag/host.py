"""Run ``envdoctor diag``: the existing parts through their Python APIs, one level after another.

>>> r = run_diag(2, "/opt/torch/.venv/bin/python3")                        # doctest: +SKIP
>>> r.verdict, [(t.name, t.status) for t in r.tests][:4]                 # doctest: +SKIP
('PASS', [('check', 'PASS'), ('topo', 'PASS'), ('fabric', 'PASS'), ('state', 'PASS')])

Level 1: check's inspection (driver, torch, container; topo's links; the fabric; the live GPU state:
:func:`envdoctor.inspect.inspect`) while the tiny CUDA op runs in the target (``diag/target/gpu.py``).
Level 2: bench (bf16 n=8192 and HBM), a 30 s burn with bit-exact compares and a short memory test,
comms (host <-> GPU copies; among the GPUs when there are 2+). Level 3: a 160 s burn with a 50 s
memory test (every pattern, several times over the free memory), targeted power from its samples,
comms with the per-link verdicts. A level stops before loading a GPU that failed the level before
it (no GPU, a tiny op that failed, a GPU another process holds).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor import __version__, checks
from envdoctor.child import run_child
from envdoctor.diag import rules
from envdoctor.diag.facts import BUDGETS, LEVELS, DiagResult, DiagTable, DiagTest, load_diag_table
from envdoctor.facts.base import ProbeError
from envdoctor.facts.fabric import FabricFacts
from envdoctor.facts.gpu_state import GpuStateFacts
from envdoctor.findings import Finding
from envdoctor.parse.visible import visible_count
from envdoctor.probes.context import TORCH_TIMEOUT, Context
from envdoctor.rules.gpu_state import state_findings

SCRIPT = "diag/target/gpu.py"
#: what each level loads: burn seconds, memory-test seconds, bench matmul budget
LOADS = {2: {"burn_s": 30.0, "memtest_s": 3.0, "bench_s": 1.0}, 3: {"burn_s": 160.0, "memtest_s": 50.0, "bench_s": 2.0}}
#: the areas of check diag leaves out: they say nothing about whether a job may run
SKIP = ("conda", "docker", "toolkits")
COMMS_SIZES = (1 << 20, 64 << 20, 256 << 20)

Progress = Callable[[str], None]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def tiny_ops(
    python: str, device: str, env: Mapping[str, str], timeout: float
) -> Tuple[Optional[Dict[str, Any]], Optional[ProbeError], float]:
    run = run_child(
        SCRIPT, {"device": device, "n": 256}, python=python, timeout=timeout, env=env, what="the tiny CUDA op"
    )
    if run.result is not None:
        return run.result, None, run.seconds
    if run.failure and run.failure.get("kind") == "no_torch":
        return None, ProbeError("not_found", f"{python}: {run.failure.get('message')}"), run.seconds
    return None, run.error or ProbeError("crashed", "the tiny CUDA op gave no answer"), run.seconds


def run_diag(
    level: int,
    python: str,
    device: str = "all",
    *,
    env: Optional[Mapping[str, str]] = None,
    root: Optional[Path] = None,
    nvml: Any = None,
    timeout: float = 10.0,
    torch_timeout: float = TORCH_TIMEOUT,
    table: Optional[DiagTable] = None,
    progress: Optional[Progress] = None,
    stop: Optional[threading.Event] = None,
    suppress: Sequence[str] = (),
) -> DiagResult:
    """Run ``level`` (1, 2, 3) on ``device`` ("all" or an index); never raises for the machine's sake.
    ``suppress``: ``--suppress`` codes; their findings are taken out of every part before a test
    or a verdict sees them (so they never change the exit code) and listed in ``suppressed``."""
    began = time.monotonic()
    environ = dict(os.environ if env is None else env)
    say = progress or (lambda line: None)
    table = table or load_diag_table()
    node = environ.get("ENVDOCTOR_NODE") or socket.gethostname()  # a pod's host name is the pod's
    base = DiagResult(
        created_at=_now(),
        envdoctor_version=__version__,
        level=level,
        level_name=LEVELS[level],
        budget_s=BUDGETS[level],
        hostname=node,
        python=python,
        device=device,
    )
    ctx = Context(
        root=root or Path("/"), env=environ, timeout=timeout, torch_timeout=torch_timeout, python=python, nvml=nvml
    )
    stages: Dict[str, float] = {}
    say(f"level {level} ({LEVELS[level]}): check, topo, live state, fabric, a tiny CUDA op per GPU")
    # the live state first, before any child of envdoctor holds a GPU context (in a container NVML
    # names the host's pids, so envdoctor could not tell its own child from another job)
    from envdoctor.probes import gpu_state as state_probe

    t0 = time.monotonic()
    state = state_probe.probe(ctx)
    stages["state"] = round(time.monotonic() - t0, 3)
    visible = visible_count(environ.get("CUDA_VISIBLE_DEVICES"), len(state.gpus))
    if device != "all" and state.gpus and int(device) >= visible:
        seen = f"{visible} GPU(s)" + (" (CUDA_VISIBLE_DEVICES is set)" if visible != len(state.gpus) else "")
        err = ProbeError("unavailable", f"--device {device}: GPU {device} does not exist: there are {seen}", "--device")
        return _finish(replace(base, verdict="ERROR", error=err, state=state), state, stages, began)
    box: Dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: box.update(op=tiny_ops(python, device, environ, torch_timeout + 30.0)),
        name="envdoctor-diag-op",
        daemon=True,
    )
    worker.start()
    t0 = time.monotonic()
    from envdoctor.inspect import inspect

    inspection = inspect(ctx, skip=SKIP + ("gpu_state",), suppress=suppress)
    hid: List[Finding] = list(inspection.suppressed)

    def shown(found: Iterable[Finding]) -> List[Finding]:
        done = checks.split(found, suppress)
        hid.extend(done.hidden)
        return list(done.shown)

    stages["check"] = round(time.monotonic() - t0, 3)
    worker.join()
    answer, op_error, op_s = box.get("op", (None, ProbeError("crashed", "the tiny CUDA op did not run"), 0.0))
    stages["cuda_op"] = round(op_s, 3)
    facts = inspection.facts
    fabric = facts.fabric if isinstance(facts.fabric, FabricFacts) else FabricFacts()
    nvml_count = len(state.gpus)
    findings: List[Finding] = list(inspection.findings) + shown(state_findings(state, wanted=True))
    tests: List[DiagTest] = rules.inspection_tests(inspection.findings, state, stages["check"], suppress)
    base = replace(base, state=state, fabric=fabric)
    if suppress:
        base = replace(base, suppressed=checks.hidden(suppress, hid))  # filled in as the parts run
    torch_count = int(answer.get("count") or 0) if answer else 0
    if nvml_count == 0 and not facts.pci.devices and torch_count == 0:
        why = state.error.message if state.error else "NVML sees no GPU"
        err = ProbeError(
            "unavailable",
            f"no GPU on this machine: {why}; none on the PCI bus; "
            + (
                "torch sees none"
                if answer
                else "no torch to ask"
                if op_error is None or op_error.kind == "not_found"
                else f"torch could not be asked: {op_error.message}"
            ),
        )
        return _finish(
            replace(base, verdict="NO_GPU", error=err, tests=tuple(tests), findings=tuple(findings)),
            state,
            stages,
            began,
        )
    if op_error is not None and op_error.kind == "not_found":
        return _finish(
            replace(base, verdict="ERROR", error=op_error, tests=tuple(tests), findings=tuple(findings)),
            state,
            stages,
            began,
        )
    tests += rules.cuda_op_tests(answer, op_error.message if op_error else None, nvml_count, stages["cuda_op"])
    blocked = _blocked(tests)
    notes: List[str] = []
    if level >= 2 and blocked:
        notes.append(f"levels 2-{level} not run: {blocked}")
        tests.append(DiagTest("load", "SKIP", 2, detail=f"not run: {blocked}"))
    elif level >= 2:
        more, extra = _load(level, python, device, environ, nvml, table, say, stages, stop, nvml_count, shown)
        tests += more
        findings += extra
        base = replace(base, suppressed=checks.hidden(suppress, hid))
    return _finish(
        replace(base, tests=tuple(tests), findings=tuple(findings), notes=tuple(notes)), state, stages, began
    )


def _blocked(tests: List[DiagTest]) -> Optional[str]:
    """Why the GPUs must not be loaded, or None."""
    bad_op = [t for t in tests if t.name == "cuda_op" and t.status in ("FAIL", "SKIP")]
    if bad_op:
        return "the tiny CUDA op did not pass (" + bad_op[0].detail + ")"
    held = [t for t in tests if t.name == "state" and t.status == "FAIL"]
    if held:
        return f"GPU {held[0].gpu} is not free ({held[0].detail})"
    return None


def _load(
    level: int,
    python: str,
    device: str,
    env: Dict[str, str],
    nvml: Any,
    table: DiagTable,
    say: Progress,
    stages: Dict[str, float],
    stop: Optional[threading.Event],
    gpus: int,
    shown: Callable[[Iterable[Finding]], List[Finding]] = list,
) -> Tuple[List[DiagTest], List[Finding]]:
    """Levels 2-3: bench, burn, comms; ``shown`` takes the suppressed findings out of each part."""
    from envdoctor.bench.host import run_bench
    from envdoctor.burn.host import run_burn
    from envdoctor.links.host import CommsOptions, run_comms
    from envdoctor.links.rules_comms import verdicts

    load = LOADS[level]
    tests: List[DiagTest] = []
    findings: List[Finding] = []
    say("bench: bf16 n=8192 and HBM copy")
    t0 = time.monotonic()
    bench = run_bench(
        python,
        dtypes=("bf16",),
        sizes=(8192,),
        budget=load["bench_s"],
        device=device,
        env=env,
        suites=("matmul", "memory"),
        memory_sizes=(1 << 26, 1 << 28),
        nvml=nvml,
    )
    stages["bench"] = round(time.monotonic() - t0, 3)
    bench = replace(bench, findings=tuple(shown(bench.findings)))
    tests += rules.bench_tests(bench, table)
    findings += bench.findings
    say(f"burn: {load['burn_s']:g} s per GPU, then a {load['memtest_s']:g} s memory test")
    t0 = time.monotonic()
    burn = run_burn(python, load["burn_s"], device, env=env, nvml=nvml, memtest_s=load["memtest_s"], stop=stop)
    stages["burn"] = round(time.monotonic() - t0, 3)
    burn = _burn_shown(burn, shown)
    tests += rules.burn_tests(burn, level, table.rule("power"), table.rule("power_clock"))
    findings += [f for g in burn.gpus for f in g.findings] + list(burn.findings)
    if stop is not None and stop.is_set():
        return tests, findings
    count = gpus if device == "all" else 1
    say("comms: host <-> GPU copies" + (" and among the GPUs" if count > 1 else ""))
    t0 = time.monotonic()
    devices = None if device == "all" else (int(device),)
    opts = CommsOptions(
        collectives=("all_reduce",) if count > 1 else (),
        sizes=COMMS_SIZES if level < 3 else None,
        devices=devices,
        pairs=count > 1,
    )
    comms = run_comms(opts, python, env, nvml=nvml, stop=stop)
    stages["comms"] = round(time.monotonic() - t0, 3)
    found = shown(verdicts(comms))
    tests += rules.comms_tests(comms, found, table, level)
    findings += [f for f in found if f.severity != "info"]
    return tests, findings


def _burn_shown(burn: Any, shown: Callable[[Iterable[Finding]], List[Finding]]) -> Any:
    """``burn`` without the findings ``shown`` takes out, each GPU's verdict again from the findings
    left (burn's own :func:`envdoctor.burn.rules.suppressed`: an error makes a GPU FAULTY)."""
    from envdoctor.burn.rules import suppressed

    every = [f for g in burn.gpus for f in g.findings] + list(burn.findings)
    left = {id(f) for f in shown(every)}
    codes = tuple(dict.fromkeys(f.code for f in every if id(f) not in left))
    return suppressed(burn, codes) if codes else burn


def _finish(result: DiagResult, state: GpuStateFacts, stages: Dict[str, float], began: float) -> DiagResult:
    tests = result.tests
    gpus = [{"index": g.index, "name": g.name, "uuid": g.uuid, "bus_id": g.bus_id} for g in state.gpus]
    verdict, failed = rules.node_verdict(tests)
    if result.verdict in ("NO_GPU", "ERROR"):
        verdict, failed = result.verdict, ()
    notes = list(result.notes)
    missing = rules.no_threshold(tests)
    if missing:
        notes.append("measured without a threshold for this GPU model: " + ", ".join(sorted(missing)))
    wall = round(time.monotonic() - began, 3)
    if wall > result.budget_s and verdict in ("PASS", "WARN"):
        notes.append(f"took {wall:.0f} s, over the level's {result.budget_s:.0f} s")
    return replace(
        result,
        verdict=verdict,
        failed=failed,
        gpus=rules.gpu_verdicts(tests, gpus),
        stage_s=dict(stages),
        wall_s=wall,
        notes=tuple(notes),
        summary=rules.summary(verdict, tests),
    )

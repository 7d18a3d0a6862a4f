"""Run ``envdoctor comms``: one child of ``envdoctor/links/target/comms.py`` per rank, then the result.

>>> r = run_comms(CommsOptions(), python="/opt/venv/bin/python3")            # doctest: +SKIP
>>> [(p.collective, p.bytes, p.busbw_gbps) for p in r.points][-1]
('all_to_all', 4294967296, 338.2)

envdoctor starts the ranks itself (one per GPU with NCCL, ``nproc`` CPU processes with gloo; a free
port on 127.0.0.1), or, under torchrun/srun/mpirun, runs this process's rank only. Every rank's
child is bounded: the process group and each collective time out after ``timeout_s`` (in torch),
and a child silent for ``idle_timeout_s`` is stopped (here), so a rank that hangs or dies ends the
run with that rank named instead of hanging it. The GPUs' links are read through NVML here
(envdoctor.links.probe) for the expected peak; NCCL's INFO log, where envdoctor may turn it on,
says which algorithm and protocol ran and whether NVLS was used.
"""

from __future__ import annotations

import datetime
import glob
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from envdoctor import __version__
from envdoctor.child import ChildRun, Job, run_children
from envdoctor.facts.base import ProbeError
from envdoctor.facts.links import LinksFacts
from envdoctor.launch import LaunchError, Rendezvous, free_port, launched_env, rank_env, rendezvous, visible_gpus
from envdoctor.links import plan
from envdoctor.links.analysis_comms import build
from envdoctor.links.analysis_topo import expected
from envdoctor.links.facts_comms import CommsResult
from envdoctor.links.table import load_links
from envdoctor.parse.nccl_log import NcclLog, parse_nccl_log
from envdoctor.probes.context import Context

SCRIPT = "links/target/comms.py"
#: Seconds for torch's import, CUDA and NCCL start beyond the measurement itself.
STARTUP_ALLOWANCE = 180.0
NCCL_LOG_LIMIT = 16 << 20
#: A rank silent for ``--timeout`` plus this many seconds is hung (its collective had its time).
IDLE_GRACE = 30.0
METHOD = {
    "size": "S as nccl-tests counts it: " + "; ".join(f"{k}: {v}" for k, v in plan.SIZE_MEANING.items()),
    "time": (
        f"{plan.WARMUP} warm-up calls (the first two calibrate), then up to {plan.ITERS} calls back to back "
        "between two CUDA events (perf_counter on the CPU), time = elapsed / calls, averaged over ranks; "
        f"fewer calls (3 at least) where {plan.ITERS} would take more than {plan.POINT_BUDGET_S:g} s"
    ),
    "algbw": "S / time (decimal GB/s)",
    "busbw": "algbw x nccl-tests' factor: " + ", ".join(f"{k} {v}" for k, v in plan.FACTOR_TEXT.items()),
    "check": "after timing, known inputs per rank and chunk; every output chunk compared with the expected "
    "sum or concatenation; wrong elements summed over ranks",
    "pairs": "one-way send/recv between each ordered pair of ranks, one pair at a time",
}


@dataclass(frozen=True)
class CommsOptions:
    collectives: Tuple[str, ...] = plan.COLLECTIVES
    sizes: Optional[Tuple[int, ...]] = None  # None: the backend's default
    backend: str = "auto"  # auto, nccl, gloo
    devices: Optional[Tuple[int, ...]] = None  # None: every GPU CUDA sees
    nproc: Optional[int] = None
    pairs: bool = True
    timeout_s: float = 30.0  # the process group's and each collective's
    idle_timeout_s: Optional[float] = None  # a child silent this long is stopped
    warmup: int = plan.WARMUP
    iters: int = plan.ITERS
    point_budget_s: float = plan.POINT_BUDGET_S
    pair_bytes: Optional[int] = None  # None: the backend's default
    host_bytes: int = plan.HOST_BYTES
    inject: Optional[Dict[str, Any]] = None  # envdoctor's own tests: a rank that hangs or dies


@dataclass(frozen=True)
class Progress:
    rank: int
    event: Dict[str, Any]


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def read_links(env: Mapping[str, str], nvml: Any, timeout: float = 10.0) -> LinksFacts:
    from envdoctor.links import probe as links

    return links.probe(Context(env=dict(env), timeout=timeout, nvml=nvml))


def _config(
    opts: CommsOptions,
    backend: str,
    sizes: Tuple[int, ...],
    world: int,
    host_copies: bool,
    collectives: Tuple[str, ...],
) -> Dict[str, Any]:
    cfg: Dict[str, Any] = {
        "backend": backend,
        "collectives": list(collectives),
        "sizes": list(sizes),
        "warmup": opts.warmup,
        "iters": opts.iters,
        "point_budget_s": opts.point_budget_s,
        "timeout_s": opts.timeout_s,
        "pairs": bool(opts.pairs and world > 1),
        "pair_bytes": opts.pair_bytes or (plan.PAIR_BYTES if backend == "nccl" else plan.GLOO_PAIR_BYTES),
        "host_copies": host_copies,
        "host_bytes": opts.host_bytes,
    }
    if opts.inject:
        cfg["inject"] = dict(opts.inject)
    return cfg


def _limits(
    opts: CommsOptions, sizes: Tuple[int, ...], collectives: Tuple[str, ...], world: int
) -> Tuple[float, float]:
    measure = plan.point_budget_s(sizes, collectives) + world * (world - 1) * 0.5 + 10.0
    return STARTUP_ALLOWANCE + measure, idle_bound(opts)


def idle_bound(opts: CommsOptions) -> float:
    """Seconds a rank may print nothing before it is stopped as hung: ``--timeout`` + 30, as
    docs/links.md states it (60 s at the default 30; 40 s with ``--timeout 10``, not 60).

    >>> idle_bound(CommsOptions(timeout_s=10.0)), idle_bound(CommsOptions()), idle_bound(CommsOptions(idle_timeout_s=5))
    (40.0, 60.0, 5)
    """
    return opts.idle_timeout_s if opts.idle_timeout_s is not None else opts.timeout_s + IDLE_GRACE


def _nccl_log(directory: Optional[str], env: Mapping[str, str]) -> Tuple[Optional[NcclLog], str]:
    if directory is None:
        return None, "gloo: no NCCL"
    texts = []
    for path in sorted(glob.glob(os.path.join(directory, "nccl.*.log"))):
        try:
            with open(path, "rb") as fh:
                texts.append(fh.read(NCCL_LOG_LIMIT).decode("utf-8", "replace"))
        except OSError:
            continue
    if not texts:
        if "NCCL_DEBUG" in env:
            return None, (
                f"NCCL_DEBUG={env['NCCL_DEBUG']} is set in your environment, so envdoctor left NCCL's "
                "logging as it was: algorithm and protocol unknown"
            )
        return None, "NCCL wrote no log: algorithm and protocol unknown"
    return parse_nccl_log("\n".join(texts)), "NCCL's INFO log (NCCL_DEBUG_SUBSYS=INIT,TUNING), turned on by envdoctor"


def run_comms(
    opts: CommsOptions,
    python: str,
    env: Optional[Mapping[str, str]] = None,
    *,
    nvml: Any = None,
    chosen_by: Optional[str] = None,
    progress: Optional[Callable[[Progress], None]] = None,
    stop: Optional[threading.Event] = None,
) -> CommsResult:
    """Measure; never raises for the machine's or the target's sake (the result's error says why)."""
    env = dict(os.environ if env is None else env)
    common: Dict[str, Any] = dict(created_at=_now(), envdoctor_version=__version__, python=python, method=dict(METHOD))
    try:
        launch = rendezvous(env)
    except LaunchError as exc:
        return CommsResult(**common, error=ProbeError("unavailable", str(exc), "launcher"))
    links = read_links(env, nvml) if opts.backend != "gloo" else LinksFacts()
    nvml_gpus = len(links.gpus)
    backend = opts.backend
    notes: List[str] = []
    if launch is not None:
        backend = ("nccl" if nvml_gpus else "gloo") if backend == "auto" else backend
        return _launched(opts, python, env, launch, backend, links, common, progress, stop)
    if backend == "auto":  # no GPU: say so (and ask torch), rather than measure CPU processes unasked
        backend = "nccl"
    if backend == "nccl":
        count, visible = visible_gpus(env, nvml_gpus)
        if nvml_gpus == 0:
            why = links.error.message if links.error else "NVML sees no GPU"
            notes.append(f"no GPU found through NVML ({why}); asking torch itself")
            count = 0
        devices = tuple(opts.devices) if opts.devices is not None else tuple(range(count))
        bad = [d for d in devices if d >= count] if count else []
        if bad:
            return CommsResult(
                **common,
                backend="nccl",
                error=ProbeError(
                    "unavailable",
                    f"--devices {','.join(map(str, devices))}: CUDA sees {count} GPU(s)"
                    + (f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else ""),
                    "--devices",
                ),
            )
        if opts.nproc:
            devices = devices[: opts.nproc]
        if not devices:
            return _no_gpu(opts, python, env, links, common, notes, progress, stop)
        world = len(devices)
    else:
        devices = ()
        world = opts.nproc or 2
    sizes = opts.sizes or plan.parse_sizes(plan.DEFAULT_SIZES if backend == "nccl" else plan.GLOO_SIZES)
    collectives = opts.collectives if world > 1 or backend == "nccl" else ()
    host = backend == "nccl" and world == 1
    cfg = _config(opts, backend, sizes, world, host, collectives)
    log_dir = tempfile.mkdtemp(prefix="envdoctor-nccl-") if backend == "nccl" else None
    try:
        port = free_port()
        timeout, idle = _limits(opts, sizes, collectives, world)
        jobs = []
        for r in range(world):
            rank_cfg = dict(cfg, device_index=devices[r]) if devices else dict(cfg)
            jobs.append(
                Job(
                    SCRIPT,
                    rank_cfg,
                    python,
                    timeout,
                    what=f"rank {r} of envdoctor comms",
                    env=rank_env(
                        env,
                        rank=r,
                        world_size=world,
                        local_rank=r,
                        local_world_size=world,
                        master_addr="127.0.0.1",
                        master_port=port,
                        nccl_log_dir=log_dir,
                    ),
                    idle_timeout=idle,
                )
            )
        runs, interrupted = run_children(jobs, _hook(progress), stop)
        nccl, note = _nccl_log(log_dir, env)
    finally:
        if log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)
    result = _finish(runs, list(range(world)), backend, "envdoctor", world, links, nccl, note, env, common)
    if interrupted:
        notes.append("stopped by Ctrl-C: what finished is shown")
    return replace(result, notes=tuple(notes) + result.notes, error=result.error or _run_error(runs, interrupted))


def _hook(progress: Optional[Callable[[Progress], None]]) -> Optional[Callable[[int, Dict[str, Any]], None]]:
    if progress is None:
        return None
    return lambda i, event: progress(Progress(i, event))


def _finish(
    runs: Tuple[ChildRun, ...],
    ranks: List[int],
    backend: str,
    launcher: str,
    world: int,
    links: LinksFacts,
    nccl: Optional[NcclLog],
    note: str,
    env: Mapping[str, str],
    common: Dict[str, Any],
) -> CommsResult:
    table = load_links()
    top = expected(links, table)
    wall = max((r.seconds for r in runs), default=0.0)
    return build(
        runs,
        backend=backend,
        launcher=launcher,
        world=world,
        links=links,
        top=top,
        table=table,
        nccl=nccl,
        nccl_log_note=note,
        env=env,
        ranks=ranks,
        common=dict(common, wall_s=round(wall, 3)),
    )


def _run_error(runs: Tuple[ChildRun, ...], interrupted: bool) -> Optional[ProbeError]:
    """Why the run as a whole gave nothing, where no rank answered (the rank findings say more)."""
    if any(r.ok for r in runs) or interrupted:
        return None
    first = next(
        (
            r
            for r in runs
            if r.failure and r.failure.get("kind") in ("no_torch", "import_failed", "no_cuda", "bad_device")
        ),
        None,
    )
    if first is not None and first.error is not None:
        if (first.failure or {}).get("kind") == "no_torch":  # could not start: the command's exit 2
            return ProbeError(first.error.kind, first.error.message, "no_torch")
        return first.error
    cannot = [r.error for r in runs if r.error is not None and r.error.kind in ("not_found", "permission")]
    if runs and len(cannot) == len(runs):
        return ProbeError(cannot[0].kind, cannot[0].message, "no_torch")  # the Python cannot be run
    return None


def _no_gpu(
    opts: CommsOptions,
    python: str,
    env: Dict[str, str],
    links: LinksFacts,
    common: Dict[str, Any],
    notes: List[str],
    progress: Optional[Callable[[Progress], None]],
    stop: Optional[threading.Event],
) -> CommsResult:
    """No GPU through NVML: one CPU rank asks torch, which measures host copies if it sees a GPU after all."""
    cfg = _config(opts, "gloo", (), 1, True, ())
    job = Job(
        SCRIPT,
        cfg,
        python,
        STARTUP_ALLOWANCE,
        what="envdoctor comms",
        env=rank_env(
            env,
            rank=0,
            world_size=1,
            local_rank=0,
            local_world_size=1,
            master_addr="127.0.0.1",
            master_port=free_port(),
            nccl_log_dir=None,
        ),
        idle_timeout=idle_bound(opts),
    )
    runs, interrupted = run_children([job], _hook(progress), stop)
    result = _finish(runs, [0], "gloo", "envdoctor", 1, links, None, "no GPU: no NCCL", env, common)
    notes.append("no GPU: nothing to measure between GPUs")
    error = _run_error(runs, interrupted)
    if error is None and not interrupted and not result.host_copies and any(x.status == "ok" for x in result.ranks):
        why = links.error.message if links.error else "NVML sees none"
        error = ProbeError(
            "unavailable",
            f"no GPU for NCCL: {why}, and torch in {python} sees none either; "
            "`envdoctor comms --backend gloo --nproc 2` measures collectives between CPU processes",
            "no_gpu",
        )
    return replace(result, notes=tuple(notes) + result.notes, error=error)


#: The comms document names the program that started the ranks (envdoctor.comms/1's "launcher").
DOCUMENT_LAUNCHER = {"openmpi": "mpirun"}


def _launched(
    opts: CommsOptions,
    python: str,
    env: Dict[str, str],
    launch: Rendezvous,
    backend: str,
    links: LinksFacts,
    common: Dict[str, Any],
    progress: Optional[Callable[[Progress], None]],
    stop: Optional[threading.Event],
) -> CommsResult:
    """This process is one rank of a run started by torchrun/srun/mpirun: run that rank."""
    world = launch.world_size
    kind = DOCUMENT_LAUNCHER.get(launch.launcher, launch.launcher)
    sizes = opts.sizes or plan.parse_sizes(plan.DEFAULT_SIZES if backend == "nccl" else plan.GLOO_SIZES)
    collectives = opts.collectives if world > 1 or backend == "nccl" else ()
    cfg = _config(opts, backend, sizes, world, backend == "nccl" and world == 1, collectives)
    if backend == "nccl" and opts.devices:
        cfg["device_index"] = opts.devices[launch.local_rank % len(opts.devices)]
    log_dir = tempfile.mkdtemp(prefix="envdoctor-nccl-") if backend == "nccl" else None
    try:
        timeout, idle = _limits(opts, sizes, collectives, world)
        job = Job(
            SCRIPT,
            cfg,
            python,
            timeout,
            what=f"rank {launch.rank} of envdoctor comms ({kind})",
            env=launched_env(env, launch, log_dir),
            idle_timeout=idle,
        )
        runs, interrupted = run_children([job], _hook(progress), stop)
        nccl, note = _nccl_log(log_dir, env)
    finally:
        if log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)
    result = _finish(runs, [launch.rank], backend, kind, world, links, nccl, note, env, common)
    return replace(result, error=result.error or _run_error(runs, interrupted))


def plot_spec(result: CommsResult, path: str) -> Dict[str, Any]:
    """What links/target/plot.py draws: busbw per size and collective, the expected peak."""
    series: Dict[str, List[List[float]]] = {}
    for p in result.points:
        if p.status == "ok" and p.busbw_gbps is not None:
            series.setdefault(p.collective, []).append([p.bytes, p.busbw_gbps])
    devices = sorted({x.device for x in result.ranks if x.device})
    title = (
        f"{result.world_size} rank(s): "
        + ", ".join(devices)
        + (f", NCCL {result.nccl_version}" if result.nccl_version else "")
    )
    return {"path": os.path.abspath(path), "title": title, "series": series, "peak": result.expected.peak_gbps}


def write_plot(result: CommsResult, path: str, python: str, env: Optional[Mapping[str, str]] = None) -> str:
    """Draw ``result`` with the target's matplotlib; one line saying what happened."""
    from envdoctor.child import draw_plot

    spec = plot_spec(result, path)
    if not spec["series"]:
        return "no plot written: no bandwidth was measured"
    return draw_plot("links/target/plot.py", dict(spec, path=path), python, env=env)[1]

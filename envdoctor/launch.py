"""Who started this process and where its ranks meet: the one reader of the launchers' variables,
the one port recipe, and the environment each rank's child gets. Pure except :func:`free_port`.

``envdoctor comms`` and ``envdoctor fleet --gather`` run under a launcher people already use (or
comms starts its ranks itself on one machine, on a free port of 127.0.0.1). Each launcher leaves
its own variables; :func:`rendezvous` reads them in this order, the first that applies wins:

- torchrun (``torch.distributed.run``) or anything that sets ``RANK`` and ``WORLD_SIZE`` itself:
  ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``;
  with ``TORCHELASTIC_RUN_ID`` it is torchrun, and ``TORCHELASTIC_USE_AGENT_STORE`` says its agent
  on the first node already serves the rendezvous store (torchrun inside srun is torchrun);
- Open MPI's ``mpirun``: ``OMPI_COMM_WORLD_RANK``/``SIZE``/``LOCAL_RANK``/``LOCAL_SIZE``, with
  ``MASTER_ADDR`` exported by the user (``mpirun -x MASTER_ADDR=node01``). Read before Slurm's:
  mpirun inside a Slurm allocation leaves the job's ``SLURM_*`` variables in every rank's
  environment, but only Open MPI's are this process's own;
- Slurm's ``srun``: ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS`` (else ``SLURM_NTASKS``),
  ``SLURM_LOCALID``, with ``SLURM_STEP_ID`` (srun sets it for a step's tasks; the batch shell of
  sbatch, which has ``SLURM_PROCID=0`` and ``SLURM_NTASKS`` too, is not a rank); rank 0's host the
  first of ``SLURM_STEP_NODELIST`` (else ``SLURM_JOB_NODELIST``, ``SLURM_NODELIST``), the port
  :func:`slurm_port` of ``SLURM_JOB_ID``, so two jobs on one node do not collide;
- PMIx alone (``PMIX_RANK`` and none of the above): it names no world size or rendezvous in the
  environment, so that is an error that says what to export.

``MASTER_ADDR`` and ``MASTER_PORT``, when set, win over what is derived::

    >>> r = rendezvous({"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_STEP_ID": "0",
    ...                 "SLURM_JOB_NODELIST": "gpu[07-10]", "SLURM_JOB_ID": "81234"})
    >>> r.launcher, r.rank, r.world_size, r.master_addr, r.master_port
    ('slurm', 2, 4, 'gpu07', 21234)

Every number is read as user input (:func:`env_number`): ASCII digits only (``'²'`` and ``'٣'`` are
digits to Python's ``str.isdigit``, not to envdoctor), within the variable's range; anything else is
a :class:`LaunchError` naming the variable and the accepted form, which a command turns into exit 2.

The child's environment is the caller's, unchanged (``NCCL_NVLS_ENABLE``, ``NCCL_*``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST``, ``NVSHMEM_DISABLE_NVLS`` pass through as set; envdoctor never
sets them), plus the rank variables and, only where ``NCCL_DEBUG`` is not set, NCCL's INFO log
(subsystems INIT and TUNING) sent to a file per rank, to read the algorithm and protocol from.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Dict, Literal, Mapping, Optional, Tuple

from envdoctor.parse.nodelist import NodelistError, expand, first_host
from envdoctor.parse.visible import visible_count

Launcher = Literal["torchrun", "env", "openmpi", "slurm"]

#: torchrun's default port, used where nothing else names one.
DEFAULT_PORT = 29500
#: Slurm: the port is SLURM_PORT_BASE + SLURM_JOB_ID % SLURM_PORT_SPAN: 20000-29999, below Linux's
#: ephemeral ports (32768-60999), where an outgoing connection could hold it.
SLURM_PORT_BASE, SLURM_PORT_SPAN = 20000, 10000
#: The most ranks one run takes (a sanity bound on WORLD_SIZE, not a design limit).
MAX_WORLD = 65536
#: The largest Slurm job id (a 32-bit number).
MAX_JOB_ID = 2**32 - 1

#: Variables envdoctor must never set or change for the ranks (tested).
#: What says that no launcher started this process (the variables this module reads, by name).
NO_LAUNCHER = "none set RANK and WORLD_SIZE, SLURM_PROCID or OMPI_COMM_WORLD_RANK here"
PASSED_THROUGH = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
#: Rank variables envdoctor sets when it starts the ranks itself; inherited ones are replaced.
RANK_VARIABLES = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "GROUP_RANK",
    "ROLE_RANK",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
)


class LaunchError(ValueError):
    """A launcher's environment that cannot be used as it is; one line says which variable and what to do."""


@dataclass(frozen=True)
class Rendezvous:
    """This rank's place in the run and the address of rank 0's store."""

    launcher: Launcher
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    #: torchrun's agent serves the store: every rank connects to it, none starts one.
    agent_store: bool = False
    #: a name for this run, so a restarted attempt does not read the keys of an earlier one
    run_id: str = "envdoctor"
    #: the variables read, for the one line that explains a failure
    variables: Tuple[str, ...] = ()
    #: each rank's host where the launcher says (Slurm, one task per node), else ()
    hosts: Tuple[str, ...] = ()
    #: the ranks on this node, where the launcher says
    local_world_size: Optional[int] = None


def env_number(env: Mapping[str, str], name: str, low: int = 0, high: int = MAX_WORLD) -> int:
    """``env[name]`` as a whole number from ``low`` to ``high``, written in ASCII digits.

    >>> env_number({"RANK": " 3 "}, "RANK")
    3
    >>> env_number({"RANK": "٣"}, "RANK")
    Traceback (most recent call last):
    ...
    envdoctor.launch.LaunchError: RANK='٣' is not a number from 0 to 65536 (ASCII digits 0-9)
    """
    text = env.get(name, "").strip()
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise LaunchError(f"{name}={text[:30]!r} is not a number from {low} to {high} (ASCII digits 0-9)")
    return int(text)


def _optional(env: Mapping[str, str], name: str, low: int = 0, high: int = MAX_WORLD) -> Optional[int]:
    return env_number(env, name, low, high) if env.get(name, "").strip() else None


def _port(env: Mapping[str, str], default: int) -> int:
    return _optional(env, "MASTER_PORT", 1, 65535) or default


def slurm_port(job_id: Optional[int]) -> int:
    """The port of a Slurm job's rendezvous: 20000 + job id modulo 10000, torchrun's 29500 without one.

    >>> slurm_port(81234), slurm_port(15555), slurm_port(None)
    (21234, 25555, 29500)
    """
    return DEFAULT_PORT if job_id is None else SLURM_PORT_BASE + job_id % SLURM_PORT_SPAN


def _checked(r: Rendezvous) -> Rendezvous:
    if r.rank >= r.world_size:
        raise LaunchError(f"{r.launcher}: rank {r.rank} is not below the world size {r.world_size}")
    if r.local_world_size is not None and r.local_rank >= r.local_world_size:
        raise LaunchError(
            f"{r.launcher}: local rank {r.local_rank} is not below the ranks on this node ({r.local_world_size})"
        )
    return r


def _torchrun(env: Mapping[str, str]) -> Rendezvous:
    kind: Launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"
    rank, world = env_number(env, "RANK"), env_number(env, "WORLD_SIZE", 1)
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr:
        raise LaunchError(
            f"RANK and WORLD_SIZE are set ({kind}) but MASTER_ADDR is not: export MASTER_ADDR "
            "(rank 0's host) and MASTER_PORT (a free port there)"
        )
    agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").strip().lower() in ("true", "1")
    run_id = "-".join(
        x for x in (env.get("TORCHELASTIC_RUN_ID", "envdoctor"), env.get("TORCHELASTIC_RESTART_COUNT", "0")) if x
    )
    return _checked(
        Rendezvous(
            kind,
            rank,
            world,
            _optional(env, "LOCAL_RANK") or 0,
            addr,
            _port(env, DEFAULT_PORT),
            agent,
            run_id,
            (
                "RANK",
                "WORLD_SIZE",
                "LOCAL_RANK",
                "LOCAL_WORLD_SIZE",
                "MASTER_ADDR",
                "MASTER_PORT",
                "TORCHELASTIC_USE_AGENT_STORE",
            ),
            local_world_size=_optional(env, "LOCAL_WORLD_SIZE", 1),
        )
    )


def _openmpi(env: Mapping[str, str]) -> Rendezvous:
    rank, world = env_number(env, "OMPI_COMM_WORLD_RANK"), env_number(env, "OMPI_COMM_WORLD_SIZE", 1)
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr:
        raise LaunchError(
            "mpirun started this rank but MASTER_ADDR is not set: "
            "mpirun -x MASTER_ADDR=<first host> -x MASTER_PORT=<free port> ..."
        )
    job = env.get("OMPI_MCA_ess_base_jobid", "").strip()
    return _checked(
        Rendezvous(
            "openmpi",
            rank,
            world,
            _optional(env, "OMPI_COMM_WORLD_LOCAL_RANK") or 0,
            addr,
            _port(env, DEFAULT_PORT),
            False,
            f"openmpi-{job or '0'}",
            (
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_COMM_WORLD_LOCAL_SIZE",
                "MASTER_ADDR",
                "MASTER_PORT",
            ),
            local_world_size=_optional(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1),
        )
    )


_NODELISTS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")


def _slurm(env: Mapping[str, str]) -> Rendezvous:
    rank = env_number(env, "SLURM_PROCID")
    tasks = "SLURM_STEP_NUM_TASKS" if env.get("SLURM_STEP_NUM_TASKS", "").strip() else "SLURM_NTASKS"
    world = env_number(env, tasks, 1)
    job_name = "SLURM_JOB_ID" if env.get("SLURM_JOB_ID", "").strip() else "SLURM_JOBID"
    job = _optional(env, job_name, 0, MAX_JOB_ID)
    listed = next((n for n in _NODELISTS if env.get(n, "").strip()), None)
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr:
        if listed is None:
            raise LaunchError(
                "srun started this rank but no SLURM_JOB_NODELIST names the nodes "
                "(or set MASTER_ADDR to the first node)"
            )
        try:
            addr = first_host(env[listed])
        except NodelistError as exc:
            raise LaunchError(f"{listed}: {exc}") from None
    hosts: Tuple[str, ...] = ()
    if listed is not None:
        try:
            hosts = expand(env[listed], limit=MAX_WORLD)
        except NodelistError:
            hosts = ()
    step = env.get("SLURM_STEP_ID", "0").strip()
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE") or ""
    return _checked(
        Rendezvous(
            "slurm",
            rank,
            world,
            _optional(env, "SLURM_LOCALID") or 0,
            addr,
            _port(env, slurm_port(job)),
            False,
            f"slurm-{job if job is not None else 0}.{step}",
            ("SLURM_PROCID", tasks, "SLURM_LOCALID", "SLURM_STEP_ID")
            + _NODELISTS
            + (job_name, "MASTER_ADDR", "MASTER_PORT"),
            hosts if len(hosts) == world else (),
            # "4" is a count; "2(x3)" (per node, repeated) says nothing about this node alone
            int(per_node) if per_node.isascii() and per_node.isdigit() and int(per_node) > 0 else None,
        )
    )


def rendezvous(env: Mapping[str, str]) -> Optional[Rendezvous]:
    """This rank's rendezvous from ``env``, None where no launcher started this process.

    :class:`LaunchError` where a launcher's variables are there but unusable (a rank that is no
    number, mpirun without MASTER_ADDR, a node list that is no host list, PMIx alone).
    """
    if "RANK" in env and "WORLD_SIZE" in env:
        return _torchrun(env)
    if "OMPI_COMM_WORLD_RANK" in env and "OMPI_COMM_WORLD_SIZE" in env:
        return _openmpi(env)
    if "SLURM_PROCID" in env and "SLURM_STEP_ID" in env and ("SLURM_STEP_NUM_TASKS" in env or "SLURM_NTASKS" in env):
        return _slurm(env)
    if "PMIX_RANK" in env:
        rank = env_number(env, "PMIX_RANK")
        raise LaunchError(
            f"PMIx started this process (PMIX_RANK={rank}) but names no world size or rendezvous: "
            "export RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each rank"
        )
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rank_env(
    base: Mapping[str, str],
    *,
    rank: int,
    world_size: int,
    local_rank: int,
    local_world_size: int,
    master_addr: str,
    master_port: int,
    nccl_log_dir: Optional[str],
) -> Dict[str, str]:
    """The environment of one rank's child when envdoctor starts the ranks itself."""
    env = {k: v for k, v in base.items() if k not in RANK_VARIABLES}
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(local_rank),
        LOCAL_WORLD_SIZE=str(local_world_size),
        MASTER_ADDR=master_addr,
        MASTER_PORT=str(master_port),
    )
    env.update(nccl_logging(base, nccl_log_dir))
    return env


def launched_env(base: Mapping[str, str], r: Rendezvous, nccl_log_dir: Optional[str]) -> Dict[str, str]:
    """The environment of the child under an external launcher: the launcher's rendezvous, passed on
    as torch's ``env://`` reads it."""
    env = dict(base)
    env.update(
        RANK=str(r.rank),
        WORLD_SIZE=str(r.world_size),
        LOCAL_RANK=str(r.local_rank),
        MASTER_ADDR=r.master_addr,
        MASTER_PORT=str(r.master_port),
    )
    env.update(nccl_logging(base, nccl_log_dir))
    return env


def nccl_logging(base: Mapping[str, str], log_dir: Optional[str]) -> Dict[str, str]:
    """NCCL's INFO log to a file per rank, unless the user set NCCL_DEBUG (then their setting stands)."""
    if log_dir is None or "NCCL_DEBUG" in base:
        return {}
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING", "NCCL_DEBUG_FILE": f"{log_dir}/nccl.%h.%p.log"}


def visible_gpus(env: Mapping[str, str], nvml_count: int) -> Tuple[int, Optional[str]]:
    """How many GPUs the ranks' CUDA sees: NVML's count, cut by CUDA_VISIBLE_DEVICES (which NVML ignores)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    return visible_count(visible, nvml_count), visible


__all__ = [
    "DEFAULT_PORT",
    "Launcher",
    "LaunchError",
    "Rendezvous",
    "env_number",
    "free_port",
    "launched_env",
    "nccl_logging",
    "rank_env",
    "rendezvous",
    "slurm_port",
    "visible_gpus",
]

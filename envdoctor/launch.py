"""Who starts the ranks of ``envdoctor comms``, and the environment each rank's child gets. Pure
except :func:`free_port`.

envdoctor starts one child per GPU itself (a free port on 127.0.0.1), or an external launcher
started one ``envdoctor comms`` per rank and said so in the environment:

- torchrun (torch.distributed.run): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
  ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID`` (the child reuses the agent's store);
- Slurm's srun: ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS`` (or ``SLURM_NTASKS``), ``SLURM_LOCALID``,
  ``SLURM_STEP_ID``, the node list; ``MASTER_ADDR``/``MASTER_PORT`` if exported, else the first node
  of the step and a port derived from the job id;
- Open MPI's mpirun: ``OMPI_COMM_WORLD_RANK``/``_SIZE``/``_LOCAL_RANK`` (``MASTER_ADDR`` must be set);
- anything that sets ``RANK`` and ``WORLD_SIZE`` itself.

The child's environment is the caller's, unchanged (``NCCL_NVLS_ENABLE``, ``NCCL_*``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST``, ``NVSHMEM_DISABLE_NVLS`` pass through as set; envdoctor never
sets them), plus the rank variables and, only where ``NCCL_DEBUG`` is not set, NCCL's INFO log
(subsystems INIT and TUNING) sent to a file per rank, to read the algorithm and protocol from.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from envdoctor.parse.visible import visible_count

#: Variables envdoctor must never set or change for the ranks (tested).
PASSED_THROUGH = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
#: Rank variables envdoctor sets when it starts the ranks itself; inherited ones are replaced.
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                  "GROUP_RANK", "ROLE_RANK", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")


class LaunchError(ValueError):
    """A launcher's environment that cannot be used as is (says what to export)."""


@dataclass(frozen=True)
class Launch:
    """The rank this process is, under an external launcher."""

    kind: str                     # "torchrun", "slurm", "mpirun", "env"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: Optional[int]
    master_addr: str
    master_port: int


def _int(env: Mapping[str, str], name: str) -> Optional[int]:
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def first_host(nodelist: str) -> Optional[str]:
    """The first host of a Slurm node list: ``"gpu[003-010,012],cpu1"`` -> ``"gpu003"``."""
    m = re.match(r"\s*([^,\[\s]+)(?:\[([^\]]+)\])?", nodelist or "")
    if not m:
        return None
    prefix, ranges = m.group(1), m.group(2)
    if not ranges:
        return prefix
    first = ranges.split(",")[0].split("-")[0]
    return prefix + first


def detect(env: Mapping[str, str]) -> Optional[Launch]:
    """The launcher that started this process, or None (envdoctor starts the ranks itself)."""
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    if rank is not None and world is not None:
        addr, port = env.get("MASTER_ADDR"), _int(env, "MASTER_PORT")
        kind = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
        if not addr or port is None:
            raise LaunchError(f"RANK and WORLD_SIZE are set ({kind}) but MASTER_ADDR/MASTER_PORT are not: "
                              "export both (the rendezvous host and a free port)")
        return Launch(kind, rank, world, _int(env, "LOCAL_RANK") or 0, _int(env, "LOCAL_WORLD_SIZE"), addr, port)
    if env.get("SLURM_STEP_ID") is not None and _int(env, "SLURM_PROCID") is not None:
        world = _int(env, "SLURM_STEP_NUM_TASKS") or _int(env, "SLURM_NTASKS")
        if world is None:
            raise LaunchError("srun without SLURM_STEP_NUM_TASKS/SLURM_NTASKS: run it as srun --ntasks=N")
        addr = env.get("MASTER_ADDR") or first_host(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
                                                    or "")
        if not addr:
            raise LaunchError("srun: no node list to take the rendezvous host from; export MASTER_ADDR")
        port = _int(env, "MASTER_PORT") or 20000 + (_int(env, "SLURM_JOB_ID") or 0) % 20000
        local_world = _int(env, "SLURM_NTASKS_PER_NODE") or _int(env, "SLURM_STEP_TASKS_PER_NODE")
        return Launch("slurm", int(env["SLURM_PROCID"]), world, _int(env, "SLURM_LOCALID") or 0, local_world,
                      addr, port)
    if _int(env, "OMPI_COMM_WORLD_RANK") is not None:
        world = _int(env, "OMPI_COMM_WORLD_SIZE") or 1
        addr, port = env.get("MASTER_ADDR"), _int(env, "MASTER_PORT")
        if not addr:
            raise LaunchError("mpirun: export MASTER_ADDR (the first host) and MASTER_PORT (-x MASTER_ADDR ...)")
        return Launch("mpirun", int(env["OMPI_COMM_WORLD_RANK"]), world, _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") or 0,
                      _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE"), addr, port or 29500)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rank_env(base: Mapping[str, str], *, rank: int, world_size: int, local_rank: int, local_world_size: int,
             master_addr: str, master_port: int, nccl_log_dir: Optional[str]) -> Dict[str, str]:
    """The environment of one rank's child when envdoctor starts the ranks itself."""
    env = {k: v for k, v in base.items() if k not in RANK_VARIABLES}
    env.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(local_rank),
               LOCAL_WORLD_SIZE=str(local_world_size), MASTER_ADDR=master_addr, MASTER_PORT=str(master_port))
    env.update(nccl_logging(base, nccl_log_dir))
    return env


def launched_env(base: Mapping[str, str], launch: Launch, nccl_log_dir: Optional[str]) -> Dict[str, str]:
    """The environment of the child under an external launcher: the launcher's rendezvous, passed on."""
    env = dict(base)
    env.update(RANK=str(launch.rank), WORLD_SIZE=str(launch.world_size), LOCAL_RANK=str(launch.local_rank),
               MASTER_ADDR=launch.master_addr, MASTER_PORT=str(launch.master_port))
    env.update(nccl_logging(base, nccl_log_dir))
    return env


def nccl_logging(base: Mapping[str, str], log_dir: Optional[str]) -> Dict[str, str]:
    """NCCL's INFO log to a file per rank, unless the user set NCCL_DEBUG (then their setting stands)."""
    if log_dir is None or "NCCL_DEBUG" in base:
        return {}
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING",
            "NCCL_DEBUG_FILE": f"{log_dir}/nccl.%h.%p.log"}


def visible_gpus(env: Mapping[str, str], nvml_count: int) -> Tuple[int, Optional[str]]:
    """How many GPUs the ranks' CUDA sees: NVML's count, cut by CUDA_VISIBLE_DEVICES (which NVML ignores)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    return visible_count(visible, nvml_count), visible

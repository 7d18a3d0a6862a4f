"""Where this rank is and where rank 0 listens, from the launcher's environment; pure.

``envdoctor fleet --gather`` is started once per node by a launcher people already use, and each
one leaves its own variables (read in this order, the first that applies wins):

- torchrun (``torch.distributed.run``): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
  ``MASTER_PORT``, and ``TORCHELASTIC_RUN_ID``/``TORCHELASTIC_USE_AGENT_STORE``: its agent on the
  first node already serves the rendezvous store at ``MASTER_ADDR:MASTER_PORT``;
- Open MPI's ``mpirun``: ``OMPI_COMM_WORLD_RANK``/``SIZE``/``LOCAL_RANK``, with ``MASTER_ADDR``
  exported by the user (``mpirun -x MASTER_ADDR=node01``; mpirun has no notion of it);
- Slurm's ``srun``: ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``, rank 0's host the first of
  ``SLURM_STEP_NODELIST`` (else ``SLURM_JOB_NODELIST``, ``SLURM_NODELIST``), the port derived from
  ``SLURM_JOB_ID`` so two jobs on one node do not collide;
- plain variables (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``) set by any other launcher.

``MASTER_ADDR`` and ``MASTER_PORT``, when set, win over what is derived::

    >>> r = rendezvous({"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0",
    ...                 "SLURM_JOB_NODELIST": "gpu[07-10]", "SLURM_JOB_ID": "81234"})
    >>> r.launcher, r.rank, r.world_size, r.master_addr, r.master_port
    ('slurm', 2, 4, 'gpu07', 21234)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Optional, Tuple

from envdoctor.fleet.nodelist import NodelistError, expand, first_host

Launcher = Literal["torchrun", "openmpi", "slurm", "env"]

#: torchrun's default port, used where nothing else names one.
DEFAULT_PORT = 29500
#: Slurm: the port is SLURM_PORT_BASE + SLURM_JOB_ID % SLURM_PORT_SPAN (the usual recipe's range).
SLURM_PORT_BASE, SLURM_PORT_SPAN = 20000, 10000
#: The most ranks one gather takes (a sanity bound on WORLD_SIZE, not a design limit).
MAX_WORLD = 65536


class LauncherError(ValueError):
    """The environment names a launcher but not everything the gather needs; one line says what."""


@dataclass(frozen=True)
class Rendezvous:
    """This rank's place in the gather and the address of rank 0's store."""

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


def _int(env: Mapping[str, str], name: str, low: int = 0, high: int = MAX_WORLD) -> int:
    text = env.get(name, "").strip()
    if not text.isdigit() or not low <= int(text) <= high:
        raise LauncherError(f"{name}={text[:30]!r} is not a number from {low} to {high}")
    return int(text)


def _port(env: Mapping[str, str], default: int) -> int:
    if env.get("MASTER_PORT", "").strip():
        return _int(env, "MASTER_PORT", 1, 65535)
    return default


def _checked(r: Rendezvous) -> Rendezvous:
    if r.rank >= r.world_size:
        raise LauncherError(f"{r.launcher}: rank {r.rank} is not below the world size {r.world_size}")
    if not r.master_addr:
        raise LauncherError(f"{r.launcher}: no address of rank 0 (set MASTER_ADDR)")
    return r


def _torchrun(env: Mapping[str, str]) -> Rendezvous:
    if not env.get("MASTER_ADDR"):
        raise LauncherError("torchrun's variables are set but MASTER_ADDR is not")
    agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").strip().lower() in ("true", "1")
    run_id = "-".join(x for x in (env.get("TORCHELASTIC_RUN_ID", "envdoctor"),
                                  env.get("TORCHELASTIC_RESTART_COUNT", "0")) if x)
    return _checked(Rendezvous(
        "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env", _int(env, "RANK"), _int(env, "WORLD_SIZE", 1),
        _int(env, "LOCAL_RANK") if env.get("LOCAL_RANK") else 0, env["MASTER_ADDR"].strip(),
        _port(env, DEFAULT_PORT), agent, run_id,
        ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE")))


def _openmpi(env: Mapping[str, str]) -> Rendezvous:
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr:
        raise LauncherError("mpirun started this rank but MASTER_ADDR is not set: "
                            "mpirun -x MASTER_ADDR=<first host> ... envdoctor fleet --gather")
    job = env.get("OMPI_MCA_ess_base_jobid", "").strip()
    return _checked(Rendezvous(
        "openmpi", _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE", 1),
        _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") if env.get("OMPI_COMM_WORLD_LOCAL_RANK") else 0, addr,
        _port(env, DEFAULT_PORT), False, f"openmpi-{job or '0'}",
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "MASTER_ADDR",
         "MASTER_PORT")))


def slurm_port(job_id: Optional[str]) -> int:
    """The port of a Slurm job's gather: 20000 + job id modulo 10000, torchrun's 29500 without one.

    >>> slurm_port("81234"), slurm_port(None)
    (21234, 29500)
    """
    if not job_id or not job_id.strip().isdigit():
        return DEFAULT_PORT
    return SLURM_PORT_BASE + int(job_id) % SLURM_PORT_SPAN


def _slurm(env: Mapping[str, str]) -> Rendezvous:
    addr = env.get("MASTER_ADDR", "").strip()
    names = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    listed = next((n for n in names if env.get(n, "").strip()), None)
    if not addr:
        if listed is None:
            raise LauncherError("srun started this rank but no SLURM_JOB_NODELIST names the nodes "
                                "(or set MASTER_ADDR to the first node)")
        try:
            addr = first_host(env[listed])
        except NodelistError as exc:
            raise LauncherError(f"{listed}: {exc}") from None
    hosts: Tuple[str, ...] = ()
    if listed is not None:
        try:
            hosts = expand(env[listed], limit=MAX_WORLD)
        except NodelistError:
            hosts = ()
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    step = env.get("SLURM_STEP_ID", "0")
    return _checked(Rendezvous(
        "slurm", _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS", 1),
        _int(env, "SLURM_LOCALID") if env.get("SLURM_LOCALID") else 0, addr,
        _port(env, slurm_port(job)), False, f"slurm-{job or '0'}.{step}",
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID") + names + ("SLURM_JOB_ID", "MASTER_ADDR", "MASTER_PORT"),
        hosts if len(hosts) == _int(env, "SLURM_NTASKS", 1) else ()))


def rendezvous(env: Mapping[str, str]) -> Optional[Rendezvous]:
    """This rank's rendezvous from ``env``, None where no launcher started this process.

    LauncherError where a launcher's variables are there but unusable (a rank that is no number,
    mpirun without MASTER_ADDR, a node list that is no host list).
    """
    if "RANK" in env and "WORLD_SIZE" in env:
        return _torchrun(env)
    if "OMPI_COMM_WORLD_RANK" in env and "OMPI_COMM_WORLD_SIZE" in env:
        return _openmpi(env)
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        return _slurm(env)
    return None


__all__ = ["DEFAULT_PORT", "Launcher", "LauncherError", "Rendezvous", "rendezvous", "slurm_port"]

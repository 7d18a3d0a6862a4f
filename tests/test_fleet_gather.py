"""``envdoctor fleet --gather`` for real: ranks started by torchrun, by srun (a one-node Slurm started
here when its programs are installed) and by hand with Slurm's variables, each rank carrying a
recorded report (``ENVDOCTOR_FLEET_REPORT``) to rank 0 over gloo in the CPU torch of the test
environment; and the host side's parts on their own (payload, collection, NVML health).

The recorded machines (tests/fleetdocs.py): rank 0 the H200 of tests/fixtures, rank 1 the H200 of
docs/examples (both call themselves ``vm``), rank 2 the CPU development box (``<host>``).
"""

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.child import ChildRun
from envdoctor.fleet import host as gather
from envdoctor.fleet.merge import merge
from envdoctor.launch import rendezvous
from tests import fleetdocs as fd
from tests.fakenvml import FakeNvml

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
ROOT = Path(__file__).parent.parent


@pytest.fixture
def reports(tmp_path):
    paths = [
        fd.write(tmp_path / name, doc)
        for name, doc in (("h200", fd.h200()), ("h200-docs", fd.h200_docs()), ("cpu", fd.cpu()))
    ]
    return os.pathsep.join(str(p) for p in paths)


def env_with(**extra):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "OMPI_", "TORCHELASTIC_"))
        and k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
    }
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expect_the_recorded_drift(doc):
    """What the three recorded machines give, written out by hand (see the module's docstring)."""
    assert [(n["name"], n["rank"], n["verdict"]) for n in doc["nodes"]] == [
        ("rank 0", 0, "ok"),
        ("rank 1", 1, "ok"),
        ("rank 2", 2, "deviates"),
    ]
    assert [f["code"] for f in doc["findings"] if f["node"] == "rank 2"] == [
        "ED751",
        "ED756",
        "ED761",
        "ED766",
        "ED769",
    ]
    torch = next(r for r in doc["facts"] if r["key"] == "torch.version")
    assert torch["values"] == {"rank 0": "2.11.0+cu130", "rank 1": "2.11.0+cu130", "rank 2": "2.13.0+cpu"}
    assert "2 nodes go by the name vm: named by their rank instead" in doc["notes"]


@needs_torch
@pytest.mark.parametrize("how", ["module", "script"])
def test_torchrun_gathers_three_recorded_machines_and_rank_0_prints_the_drift(reports, how):
    """``torchrun ... -m envdoctor fleet --gather`` and ``torchrun ... $(which envdoctor) fleet --gather``."""
    target = ["-m", "envdoctor"] if how == "module" else [shutil.which("envdoctor") or pytest.skip("no envdoctor")]
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "3",
        *target,
        "fleet",
        "--gather",
        "--json",
        "--join-timeout",
        "60",
        "--python",
        sys.executable,
    ]
    ran = subprocess.run(
        argv, env=env_with(ENVDOCTOR_FLEET_REPORT=reports), capture_output=True, text=True, timeout=120
    )
    doc = json.loads(ran.stdout)  # stdout holds rank 0's document alone
    assert ran.returncode == 1  # rank 0 exits 1: rank 2 deviates
    assert doc["mode"] == "gather"
    assert (doc["gather"]["launcher"], doc["gather"]["world_size"], doc["gather"]["transport"]) == (
        "torchrun",
        3,
        "gloo",
    )
    assert doc["gather"]["joined"] == [0, 1, 2] and doc["gather"]["missing"] == []
    expect_the_recorded_drift(doc)
    for rank in (1, 2):
        assert f"envdoctor fleet: rank {rank} of 3 (" in ran.stderr and "over gloo in" in ran.stderr


@needs_torch
def test_a_rank_that_never_joins_is_named_after_the_timeout_and_the_others_are_reported(reports, tmp_path):
    """Slurm's variables by hand: four tasks on localhost,n[2-4]; task 3 never starts."""
    port = free_port()
    procs = []
    for rank in range(3):
        env = env_with(
            ENVDOCTOR_FLEET_REPORT=reports,
            SLURM_PROCID=str(rank),
            SLURM_NTASKS="4",
            SLURM_LOCALID="0",
            SLURM_STEP_ID="0",
            SLURM_JOB_ID="4242",
            SLURM_JOB_NODELIST="localhost,n[2-4]",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "envdoctor",
                    "fleet",
                    "--gather",
                    "--json",
                    "--join-timeout",
                    "3",
                    "--python",
                    sys.executable,
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [1, 0, 0]  # the other ranks exit 0
    doc = json.loads(outs[0][0])
    assert doc["gather"]["missing"] == [3] and doc["gather"]["transport"] == "store"
    missing = next(n for n in doc["nodes"] if n["rank"] == 3)
    assert (missing["name"], missing["status"], missing["codes"]) == ("n4 (rank 3)", "missing", ["ED780"])
    f = next(f for f in doc["findings"] if f["code"] == "ED780")
    assert f["title"] == (
        f"n4 (rank 3): did not report (did not join rank 0 at 127.0.0.1:{port} within the join timeout)"
    )
    assert f"nc -zv 127.0.0.1 {port}   # from n4 (rank 3): can it reach rank 0's store?" in f["fix"]
    # the three that joined are still compared, named by Slurm's node list
    assert [n["name"] for n in doc["nodes"][:3]] == ["localhost (rank 0)", "n2 (rank 1)", "n3 (rank 2)"]
    assert "ED751" in next(n for n in doc["nodes"] if n["rank"] == 2)["codes"]
    assert outs[1][1].strip().endswith("rank 0 prints the fleet") and outs[1][0] == ""


def test_outside_a_launcher_gather_is_a_usage_error():
    ran = subprocess.run(
        [sys.executable, "-m", "envdoctor", "fleet", "--gather"],
        env=env_with(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert "--gather runs under a launcher on every node" in ran.stderr


# --- the host side's parts ------------------------------------------------------------------------


def test_the_health_reading_is_the_recorded_h200s_ecc_and_remaps():
    data = gather.health(FakeNvml.recorded("h200-driver580-cuda13"))
    assert data == {
        "error": None,
        "gpus": [
            {
                "index": 0,
                "uuid": "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4",
                "ecc_mode": {"current": 1, "pending": 1},
                "ecc_corrected": 0,
                "ecc_uncorrected": 0,
                "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": 0, "failure": 0},
            }
        ],
    }


def test_collect_turns_payload_files_into_nodes_and_names_the_one_that_sent_nothing(tmp_path):
    r = rendezvous(
        {
            "SLURM_PROCID": "0",
            "SLURM_NTASKS": "3",
            "SLURM_STEP_ID": "0",
            "SLURM_JOB_NODELIST": "gpu[1-3]",
            "SLURM_JOB_ID": "12",
        }
    )
    files = {}
    for rank, doc in ((0, fd.h200()), (2, fd.h200_docs())):
        path = tmp_path / f"rank-{rank}.json"
        path.write_text(gather.payload(rank, f"gpu{rank + 1}", {"report": json.dumps(doc)}, None, 1.0))
        files[str(rank)] = str(path)
    run = ChildRun(
        "fleet/target/gather.py",
        sys.executable,
        result={
            "transport": "store",
            "joined": [0, 1, 2],
            "missing": [],
            "late": [],
            "files": files,
            "seconds": {"total": 4.2},
            "group_error": "RuntimeError: Connection closed by peer",
        },
    )
    inputs, info = gather.collect(r, run)
    assert [n.status for n in inputs] == ["reported", "missing", "reported"]
    assert inputs[1].notes == ("joined but its report never came",)
    assert (info.transport, info.missing, info.error) == ("store", (1,), "RuntimeError: Connection closed by peer")
    fleet, _ = merge(inputs, mode="gather", gather=info)
    assert [n.name for n in fleet.drift.nodes] == ["gpu1 (rank 0)", "gpu2 (rank 1)", "gpu3 (rank 2)"]


def test_envdoctor_node_names_the_node_over_its_host_name(tmp_path):
    """A Kubernetes pod's host name is the pod's: ENVDOCTOR_NODE (spec.nodeName) names it."""
    r = rendezvous({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"})
    env = {gather.REPORT_ENV: str(fd.write(tmp_path, fd.host(fd.h200(), "fleet-0"))), gather.NODE_ENV: "gpu-node-17"}
    mine = gather.local(r, env, inspect_node=None)
    path = tmp_path / "rank-0.json"
    path.write_text(mine.text)
    run = ChildRun(
        "fleet/target/gather.py", sys.executable, result={"transport": "gloo", "joined": [0], "files": {"0": str(path)}}
    )
    inputs, _ = gather.collect(r, run)
    fleet, _ = merge(inputs, mode="gather")
    assert [(n.name, n.name_source) for n in fleet.drift.nodes] == [("gpu-node-17", "node key")]


def test_a_payload_whose_report_is_broken_is_an_unreadable_node(tmp_path):
    r = rendezvous({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"})
    path = tmp_path / "rank-0.json"
    path.write_text(gather.payload(0, "gpu1", {"report": '{"schema": "envdoctor.report/9"}'}, None, 1.0))
    run = ChildRun(
        "fleet/target/gather.py", sys.executable, result={"transport": "gloo", "joined": [0], "files": {"0": str(path)}}
    )
    (node,), _ = gather.collect(r, run)
    assert node.status == "unreadable"
    assert "written by a newer envdoctor (schema envdoctor.report/9)" in node.unreadable[0][1]


def test_the_recorded_report_variable_gives_each_rank_its_own_and_refuses_too_few():
    env = {gather.REPORT_ENV: "a.json:b.json"}
    assert [gather.recorded_report(env, r) for r in (0, 1)] == ["a.json", "b.json"]
    with pytest.raises(gather.GatherError, match="names 2 reports, none for rank 2"):
        gather.recorded_report(env, 2)


# --- srun, on a one-node Slurm started here ----------------------------------------------------------

SLURM_PROGRAMS = ("srun", "slurmctld", "slurmd", "munged", "sinfo")


@pytest.fixture
def slurm(tmp_path):
    """slurmctld, slurmd and munged of Debian's slurm-wlm and munge packages, on 127.0.0.1, with every
    file under tmp_path; skipped where they are not installed or not root (slurmd runs as root)."""
    if (
        any(shutil.which(p) is None for p in SLURM_PROGRAMS)
        or os.geteuid() != 0
        or not os.access("/etc/munge/munge.key", os.R_OK)
    ):
        pytest.skip("no single-node Slurm here (apt-get install slurm-wlm, as root)")
    d = tmp_path / "slurm"
    (d / "state").mkdir(parents=True)
    (d / "spool").mkdir()
    node = socket.gethostname()
    conf = d / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=envdoctor-test",
                f"SlurmctldHost={node}(127.0.0.1)",
                f"SlurmctldPort={free_port()}",
                f"SlurmdPort={free_port()}",
                "AuthType=auth/munge",
                f"AuthInfo=socket={d}/munge.socket",
                "CredType=cred/munge",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={d}/state",
                f"SlurmdSpoolDir={d}/spool",
                f"SlurmctldPidFile={d}/slurmctld.pid",
                f"SlurmdPidFile={d}/slurmd.pid",
                f"SlurmctldLogFile={d}/slurmctld.log",
                f"SlurmdLogFile={d}/slurmd.log",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "JobAcctGatherType=jobacct_gather/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_CPU",
                "MpiDefault=none",
                "ReturnToService=2",
                f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
                f"PartitionName=test Nodes={node} Default=YES MaxTime=10 State=UP OverSubscribe=YES",
                "",
            ]
        )
    )
    env = env_with(SLURM_CONF=str(conf))
    subprocess.run(
        [
            "munged",
            "--force",
            f"--socket={d}/munge.socket",
            f"--pid-file={d}/munged.pid",
            f"--log-file={d}/munged.log",
            f"--seed-file={d}/munge.seed",
            "--key-file=/etc/munge/munge.key",
        ],
        check=True,
        env=env,
        timeout=30,
    )
    subprocess.run(["slurmctld", "-i"], check=True, env=env, timeout=30)
    subprocess.run(["slurmd", "-N", node], check=True, env=env, timeout=30)
    try:
        for _ in range(100):
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=10)
            if state.stdout.strip() == "idle":
                break
            time.sleep(0.1)
        else:
            pytest.skip(f"the one-node Slurm did not come up: sinfo says {state.stdout.strip()!r}")
        yield env
    finally:
        for name in ("slurmd", "slurmctld", "munged"):
            pid_file = d / f"{name}.pid"
            if pid_file.exists():
                try:
                    os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
                except (ValueError, ProcessLookupError):
                    pass


@needs_torch
def test_srun_gathers_three_tasks_of_a_one_node_slurm(slurm, reports):
    env = dict(slurm, ENVDOCTOR_FLEET_REPORT=reports)
    ran = subprocess.run(
        [
            "srun",
            "-N",
            "1",
            "-n",
            "3",
            "-O",
            sys.executable,
            "-m",
            "envdoctor",
            "fleet",
            "--gather",
            "--json",
            "--join-timeout",
            "60",
            "--python",
            sys.executable,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    doc = json.loads(ran.stdout)
    assert ran.returncode == 1
    assert (doc["gather"]["launcher"], doc["gather"]["world_size"], doc["gather"]["transport"]) == ("slurm", 3, "gloo")
    assert doc["gather"]["master"].startswith(socket.gethostname() + ":2")  # 20000 + the job id
    expect_the_recorded_drift(doc)

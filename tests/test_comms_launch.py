"""Launcher detection and the ranks' environment (envdoctor/launch.py)."""

from __future__ import annotations

import pytest

from envdoctor.launch import (
    PASSED_THROUGH,
    LaunchError,
    free_port,
    launched_env,
    rank_env,
    rendezvous,
    visible_gpus,
)

#: What the project's multi-GPU H200 machines set (issue 18): must reach every rank unchanged.
MACHINE = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    "PATH": "/usr/bin",
    "CUDA_VISIBLE_DEVICES": "0,1",
}


def test_no_launcher():
    assert rendezvous({"PATH": "/usr/bin"}) is None


def test_torchrun():
    env = {
        "RANK": "3",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "3",
        "LOCAL_WORLD_SIZE": "8",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": "none",
    }
    launch = rendezvous(env)
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank, launch.master_port) == (
        "torchrun",
        3,
        8,
        3,
        29500,
    )


def test_srun_takes_the_first_node_and_a_port_from_the_job():
    env = {
        "SLURM_PROCID": "5",
        "SLURM_STEP_ID": "0",
        "SLURM_STEP_NUM_TASKS": "16",
        "SLURM_LOCALID": "1",
        "SLURM_STEP_NODELIST": "gpu[003-010,012]",
        "SLURM_JOB_ID": "123456",
    }
    launch = rendezvous(env)
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank) == ("slurm", 5, 16, 1)
    assert (launch.master_addr, launch.master_port) == ("gpu003", 20000 + 123456 % 10000)
    assert rendezvous({**env, "MASTER_ADDR": "head", "MASTER_PORT": "6000"}).master_addr == "head"


def test_a_batch_script_is_not_an_srun_step():
    """sbatch sets SLURM_PROCID=0 and SLURM_NTASKS in the batch shell: not one rank of a step."""
    assert rendezvous({"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_NODELIST": "gpu1"}) is None


def test_mpirun_needs_master_addr():
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}
    with pytest.raises(LaunchError, match="MASTER_ADDR"):
        rendezvous(env)
    assert rendezvous({**env, "MASTER_ADDR": "n1"}).master_port == 29500


def test_rank_without_rendezvous_is_an_error():
    with pytest.raises(LaunchError, match="MASTER_ADDR is not: export MASTER_ADDR"):
        rendezvous({"RANK": "0", "WORLD_SIZE": "2"})


def test_the_ranks_keep_the_machines_nvls_switches():
    env = rank_env(
        MACHINE,
        rank=1,
        world_size=2,
        local_rank=1,
        local_world_size=2,
        master_addr="127.0.0.1",
        master_port=4242,
        nccl_log_dir="/tmp/x",
    )
    for name in PASSED_THROUGH:
        assert env[name] == MACHINE[name]
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_PORT"]) == ("1", "2", "4242")
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,TUNING"
    assert env["NCCL_DEBUG_FILE"] == "/tmp/x/nccl.%h.%p.log"


def test_a_users_nccl_debug_is_left_alone():
    env = rank_env(
        {**MACHINE, "NCCL_DEBUG": "WARN"},
        rank=0,
        world_size=1,
        local_rank=0,
        local_world_size=1,
        master_addr="127.0.0.1",
        master_port=1,
        nccl_log_dir="/tmp/x",
    )
    assert env["NCCL_DEBUG"] == "WARN" and "NCCL_DEBUG_FILE" not in env and "NCCL_DEBUG_SUBSYS" not in env


def test_inherited_rank_variables_are_replaced_when_envdoctor_starts_the_ranks():
    env = rank_env(
        {**MACHINE, "RANK": "7", "TORCHELASTIC_RUN_ID": "x"},
        rank=0,
        world_size=2,
        local_rank=0,
        local_world_size=2,
        master_addr="127.0.0.1",
        master_port=1,
        nccl_log_dir=None,
    )
    assert env["RANK"] == "0" and "TORCHELASTIC_RUN_ID" not in env and "NCCL_DEBUG" not in env


def test_under_a_launcher_the_rendezvous_passes_through():
    base = {
        **MACHINE,
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "head-node.example.com",
        "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": "abc",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }
    env = launched_env(base, rendezvous(base), None)
    assert env["TORCHELASTIC_USE_AGENT_STORE"] == "True" and env["MASTER_ADDR"] == "head-node.example.com"
    assert all(env[n] == MACHINE[n] for n in PASSED_THROUGH)


def test_visible_gpus():
    assert visible_gpus({}, 8) == (8, None)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}, 8) == (2, "0,1")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, 8) == (0, "")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,9,1"}, 4)[0] == 1  # CUDA stops at the invalid 9
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-1234,GPU-5678"}, 8)[0] == 2


def test_free_port_is_a_port():
    assert 0 < free_port() < 65536

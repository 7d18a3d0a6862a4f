"""One reader of the launchers' variables for comms and fleet (envdoctor/launch.py): the same
launcher, rendezvous host and port from the same environment, and every number read as user input."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.launch import LaunchError, rendezvous

SRUN = {
    "SLURM_PROCID": "1",
    "SLURM_STEP_ID": "0",
    "SLURM_STEP_NUM_TASKS": "2",
    "SLURM_NTASKS": "2",
    "SLURM_LOCALID": "0",
    "SLURM_JOB_ID": "15555",
    "SLURM_STEP_NODELIST": "node[01-02]x",
}
MPIRUN = {
    "OMPI_COMM_WORLD_RANK": "3",
    "OMPI_COMM_WORLD_SIZE": "4",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "MASTER_ADDR": "head",
}


def test_comms_and_fleet_read_the_launcher_through_the_one_reader():
    import envdoctor.fleet.command as fleet_command
    import envdoctor.links.host as comms_host

    assert comms_host.rendezvous is rendezvous
    assert "LaunchError, rendezvous" in open(fleet_command.__file__).read()  # the one reader, imported


def test_a_slurm_job_has_one_port_and_the_first_host_keeps_its_suffix():
    # comms derived 35555 (20000 + id % 20000) and fleet 25555 for job 15555; comms' own first_host
    # turned node[01-02]x into node01
    r = rendezvous(SRUN)
    assert (r.launcher, r.rank, r.world_size, r.master_addr, r.master_port) == ("slurm", 1, 2, "node01x", 25555)
    assert r.hosts == ("node01x", "node02x")


def test_mpirun_inside_a_slurm_allocation_is_open_mpi():
    # comms said "slurm", fleet "openmpi": the rank's own variables are Open MPI's
    r = rendezvous({**SRUN, **MPIRUN})
    assert (r.launcher, r.rank, r.world_size, r.local_rank, r.local_world_size, r.master_addr) == (
        "openmpi",
        3,
        4,
        1,
        2,
        "head",
    )


def test_pmix_alone_says_what_to_export():
    with pytest.raises(LaunchError, match="PMIX_RANK=2.*export RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"):
        rendezvous({"PMIX_RANK": "2", "PMIX_NAMESPACE": "prterun-n1-1234@1"})


TORCHRUN = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize("value", ["²", "٣", "999999999999", "-1", "3.0", "0x10"])
@pytest.mark.parametrize(
    "name, base",
    [
        ("RANK", TORCHRUN),
        ("WORLD_SIZE", TORCHRUN),
        ("LOCAL_RANK", TORCHRUN),
        ("MASTER_PORT", TORCHRUN),
        ("SLURM_JOB_ID", SRUN),
    ],
)
def test_a_number_that_is_not_ascii_digits_in_range_is_named(name, base, value):
    with pytest.raises(LaunchError) as raised:
        rendezvous({**base, name: value})
    message = str(raised.value)
    assert message.startswith(f"{name}={value!r} is not a number from ") and message.endswith("(ASCII digits 0-9)")


def test_ascii_digits_with_spaces_still_count():
    assert rendezvous({**TORCHRUN, "RANK": " 1 ", "MASTER_PORT": "6000 "}).master_port == 6000


@pytest.mark.parametrize("argv", [["fleet", "--gather"], ["comms"]])
@pytest.mark.parametrize("name, value", [("LOCAL_RANK", "²"), ("MASTER_PORT", "٣"), ("RANK", "999999999999")])
def test_a_command_under_a_launcher_with_a_bad_number_exits_2_naming_it(argv, name, value, tmp_path):
    # fleet --gather raised ValueError (exit 3, "internal error") for LOCAL_RANK='²' and MASTER_PORT='²'
    env = {**TORCHRUN, name: value, "PATH": str(tmp_path)}
    r = CliRunner().invoke(cli, argv, env=env)
    assert r.exit_code == 2, r.output
    assert f"{name}={value!r} is not a number" in r.output and "internal error" not in r.output

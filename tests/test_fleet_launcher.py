"""Where a rank is and where rank 0 listens: Slurm's node lists expanded purely, and the variables
of torchrun, srun and mpirun as each sets them (the values as Slurm 22.05, torch 2.13's torchrun
and Open MPI 4 write them)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.fleet.pairs import Measured, analyze, quick, rounds
from envdoctor.launch import LaunchError, rendezvous, slurm_port
from envdoctor.parse.nodelist import NodelistError, expand, first_host


@pytest.mark.parametrize(
    "text, hosts",
    [
        ("node01", ("node01",)),
        ("node[01-04,07]", ("node01", "node02", "node03", "node04", "node07")),
        ("gpu-a[1-2],gpu-b3", ("gpu-a1", "gpu-a2", "gpu-b3")),
        ("n[8-11]", ("n8", "n9", "n10", "n11")),  # no padding from the lower bound
        ("n[008-011]-ib", ("n008-ib", "n009-ib", "n010-ib", "n011-ib")),  # a suffix after the range
        ("rack[1-2]-gpu[8-9]", ("rack1-gpu8", "rack1-gpu9", "rack2-gpu8", "rack2-gpu9")),
        ("a[3],b.example.org", ("a3", "b.example.org")),
    ],
)
def test_slurm_node_lists_expand_as_scontrol_show_hostnames_prints_them(text, hosts):
    assert expand(text) == hosts
    assert first_host(text) == hosts[0]


@pytest.mark.parametrize(
    "text, message",
    [
        ("node[01-", "'[' without ']'"),
        ("node]", "']' without '['"),
        ("node[a-b]", "'a-b' is not a number or a range like 01-04"),
        ("node[4-1]", "the range 4-1 runs backwards"),
        ("node[[1]]", "brackets inside brackets"),
        ("", "the host list is empty"),
        ("a,,b", "an empty host name in the list"),
        ("no de", "'no de' is not a host name"),
    ],
)
def test_what_is_not_a_node_list_is_one_line(text, message):
    with pytest.raises(NodelistError, match=__import__("re").escape(message)):
        expand(text)


def test_a_billion_hosts_are_refused_by_expand_and_first_host_still_answers_at_once():
    with pytest.raises(NodelistError, match="more than 100000 hosts"):
        expand("gpu-[1-999999999]")
    assert first_host("gpu-[000000001-999999999]") == "gpu-000000001"


@settings(max_examples=40, deadline=None)
@given(st.text("abcxyz-", min_size=1, max_size=5), st.integers(0, 500), st.integers(0, 40), st.integers(1, 4))
def test_a_range_expands_to_each_number_padded_like_its_lower_bound(prefix, low, span, width):
    lower = str(low).zfill(width)
    hosts = expand(f"{prefix}[{lower}-{low + span}]")
    assert hosts == tuple(prefix + str(n).zfill(width) for n in range(low, low + span + 1))


def test_torchrun_variables_with_the_agent_store():
    env = {
        "RANK": "3",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "gpu01",
        "MASTER_PORT": "29400",
        "TORCHELASTIC_RUN_ID": "fleet1",
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }
    r = rendezvous(env)
    assert (r.launcher, r.rank, r.world_size, r.master_addr, r.master_port, r.agent_store, r.run_id) == (
        "torchrun",
        3,
        8,
        "gpu01",
        29400,
        True,
        "fleet1-0",
    )


def test_torchrun_under_srun_is_torchrun():
    env = {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "n1",
        "MASTER_PORT": "6000",
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "1",
        "SLURM_JOB_NODELIST": "n[1-2]",
    }
    assert rendezvous(env).launcher == "env"  # no TORCHELASTIC_RUN_ID: a hand-set RANK/WORLD_SIZE
    assert rendezvous(env).rank == 1


def test_slurm_takes_the_first_host_of_the_step_and_a_port_from_the_job_id():
    env = {
        "SLURM_PROCID": "5",
        "SLURM_NTASKS": "6",
        "SLURM_LOCALID": "0",
        "SLURM_JOB_ID": "81234",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_NODELIST": "gpu[01-08]",
        "SLURM_STEP_NODELIST": "gpu[03-08]",
    }
    r = rendezvous(env)
    assert (r.launcher, r.rank, r.world_size, r.master_addr, r.master_port, r.run_id) == (
        "slurm",
        5,
        6,
        "gpu03",
        21234,
        "slurm-81234.0",
    )
    assert r.hosts == ("gpu03", "gpu04", "gpu05", "gpu06", "gpu07", "gpu08")  # one task per node


def test_slurm_with_several_tasks_per_node_does_not_guess_their_hosts():
    env = {
        "SLURM_PROCID": "1",
        "SLURM_NTASKS": "4",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_NODELIST": "gpu[01-02]",
        "SLURM_JOB_ID": "7",
    }
    assert rendezvous(env).hosts == ()


def test_master_addr_and_port_win_over_what_slurm_gives():
    env = {
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "2",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_NODELIST": "gpu[01-02]",
        "SLURM_JOB_ID": "7",
        "MASTER_ADDR": "head-node.example.com",
        "MASTER_PORT": "6000",
    }
    r = rendezvous(env)
    assert (r.master_addr, r.master_port) == ("head-node.example.com", 6000)


def test_openmpi_needs_master_addr_exported():
    env = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}
    with pytest.raises(LaunchError, match="mpirun -x MASTER_ADDR=<first host>"):
        rendezvous(env)
    r = rendezvous(dict(env, MASTER_ADDR="node01"))
    assert (r.launcher, r.rank, r.world_size, r.master_addr, r.master_port) == ("openmpi", 2, 4, "node01", 29500)


@pytest.mark.parametrize(
    "env, message",
    [
        ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, "RANK='x' is not a number"),
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, "rank 2 is not below the world size 2"),
        ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR is not"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0"}, "no SLURM_JOB_NODELIST"),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "gpu[1-"},
            "SLURM_JOB_NODELIST: 'gpu[1-'",
        ),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "99999"}, "MASTER_PORT='99999'"),
    ],
)
def test_unusable_launcher_variables_are_one_line(env, message):
    with pytest.raises(LaunchError, match=__import__("re").escape(message)):
        rendezvous(env)


def test_no_launcher_is_none_and_no_job_id_is_torchruns_port():
    assert rendezvous({"PATH": "/usr/bin"}) is None
    assert slurm_port(None) == 29500 and slurm_port(19999) == 29999


# --- the pairwise pass ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 64])
def test_the_rounds_pair_every_two_nodes_once_and_no_node_twice_in_a_round(n):
    seen = []
    for pairs in rounds(n):
        nodes = [x for p in pairs for x in p]
        assert len(nodes) == len(set(nodes))
        assert len(pairs) == n // 2
        seen += [tuple(sorted(p)) for p in pairs]
    assert sorted(seen) == [(a, b) for a in range(n) for b in range(a + 1, n)]


def test_the_quick_pass_gives_each_of_eight_nodes_two_partners():
    partners = {}
    for pairs in quick(8):
        for a, b in pairs:
            partners.setdefault(a, set()).add(b)
            partners.setdefault(b, set()).add(a)
    assert all(len(p) == 2 for p in partners.values()) and len(partners) == 8


def test_a_node_slow_with_both_partners_is_the_slow_node_and_a_pair_slow_once_is_the_link():
    # quick(6): round 1 (0,5) (1,4) (2,3); round 2 (0,4) (5,3) (1,2). Node 4 is slow; link 2-3 is slow.
    results = [
        Measured(0, 5, 24.0),
        Measured(1, 4, 12.0),
        Measured(2, 3, 15.0),
        Measured(0, 4, 11.9),
        Measured(5, 3, 23.9),
        Measured(1, 2, 24.2),
    ]
    a = analyze(results)
    assert a.median_gbs == 19.45
    assert a.slow_nodes == (4,)
    assert a.slow_links == ((2, 3),)
    assert a.unclear == () and a.failed == ()


def test_a_slow_pair_of_nodes_with_no_other_partner_is_unclear_and_a_failed_pair_is_named():
    a = analyze([Measured(0, 1, 24.0), Measured(2, 3, 10.0), Measured(4, 5, None), Measured(6, 7, 24.1)])
    assert a.unclear == ((2, 3),) and a.failed == ((4, 5),) and a.slow_nodes == ()

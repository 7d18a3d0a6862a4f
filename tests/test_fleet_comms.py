"""``envdoctor fleet --gather --comms``: for real under torchrun (gloo between CPU processes of the test
venv's torch, each rank carrying the recorded H200 report), and the analysis of rank 0's answer on its
own (hand-written answers, hand-computed bandwidths).

A slow node and a hang come from ``ENVDOCTOR_FLEET_COMMS_DELAY`` (for tests and demos only): the rank
named sleeps before each of its pairs' all-reduce calls, and its partner waits for it in the collective.
"""

import json
import subprocess
import sys
import time

import pytest

from envdoctor.child import ChildRun
from envdoctor.facts.base import ProbeError
from envdoctor.fleet import comms
from envdoctor.fleet import host as gather
from envdoctor.fleet.facts import Document, NodeInput
from envdoctor.fleet.merge import merge
from envdoctor.fleet.render import fleet_document, render_html, render_markdown, render_text
from envdoctor.launch import rendezvous
from tests import fleetdocs as fd
from tests.test_fleet_gather import env_with, needs_torch
from tests.test_fleet_merge import validate

MIB = 1 << 20


def torchrun(tmp_path, nproc, delay, join_timeout):
    reports = ":".join(str(fd.write(tmp_path / f"n{r}", fd.h200())) for r in range(nproc))
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        "-m",
        "envdoctor",
        "fleet",
        "--gather",
        "--comms",
        "--json",
        "--join-timeout",
        str(join_timeout),
        "--python",
        sys.executable,
    ]
    started = time.monotonic()
    ran = subprocess.run(
        argv,
        env=env_with(ENVDOCTOR_FLEET_REPORT=reports, ENVDOCTOR_FLEET_COMMS_DELAY=delay),
        capture_output=True,
        text=True,
        timeout=240,
    )
    return ran, json.loads(ran.stdout), time.monotonic() - started


@pytest.fixture(scope="module")
def rank_2_slow(tmp_path_factory):
    """Four ranks; rank 2 sleeps 20 ms before each of its pair transfers (a 1 MiB gloo all-reduce between
    two CPU processes here takes 1-3 ms)."""
    return torchrun(tmp_path_factory.mktemp("slow"), 4, "2:0.02", 60)


@needs_torch
def test_the_all_reduce_over_four_ranks_is_timed_and_its_busbw_is_2_n_minus_1_over_n_of_its_algbw(rank_2_slow):
    ran, doc, _ = rank_2_slow
    validate(doc)
    c = doc["comms"]
    assert (c["status"], c["backend"], c["why"], c["bytes"]) == ("ok", "gloo", "no rank has a CUDA GPU with NCCL", MIB)
    ar = c["all_reduce"]
    assert (ar["bytes"], ar["ranks"], ar["wrong"], ar["busbw_factor"]) == (MIB, 4, 0, 1.5)  # 2(4-1)/4
    assert 3 <= ar["iters"] <= 20 and ar["warmup"] >= 2 and ar["time_max_s"] >= ar["time_s"] > 0
    assert ar["algbw_gbps"] == pytest.approx(MIB / ar["time_s"] / 1e9, abs=1e-3)
    assert ar["busbw_gbps"] == pytest.approx(MIB / ar["time_s"] / 1e9 * 1.5, abs=1e-3)
    # the quick pass of four: two rounds of two disjoint pairs (pairs.quick(4), written out)
    assert [(p["round"], p["a"], p["b"]) for p in c["pairs"]] == [(1, 0, 3), (1, 1, 2), (2, 0, 2), (2, 3, 1)]
    for p in c["pairs"]:
        t = p["transfer"]
        assert p["status"] == "ok" and t["ranks"] == 2 and t["busbw_factor"] == 1.0 and t["wrong"] == 0
        assert t["busbw_gbps"] == pytest.approx(MIB / t["time_s"] / 1e9, abs=1e-3)  # 2(2-1)/2 = 1
    assert "Comms over gloo" not in ran.stdout  # stdout holds the document alone
    assert "its comms phase: ok; rank 0 prints the fleet" in ran.stderr


@needs_torch
def test_the_rank_slow_with_both_its_partners_is_named_a_slow_node(rank_2_slow):
    ran, doc, _ = rank_2_slow
    c = doc["comms"]
    assert c["slow_nodes"] == ["rank 2"] and c["slow_links"] == [] and c["unclear"] == []
    assert [p["slow"] for p in c["pairs"]] == [None, "node", "node", None]
    assert all(
        p["transfer"]["time_s"] >= 0.02 for p in c["pairs"] if 2 in (p["a"], p["b"])
    )  # the delay is in each call
    (f,) = [f for f in doc["findings"] if f["code"] == "ED782"]
    assert (f["node"], f["severity"]) == ("rank 2", "warning")  # gloo: a warning, not the NCCL path
    assert f["title"].startswith("rank 2: slow with every partner in the pairwise pass (")
    assert f["evidence"][0].startswith("round 1: rank 1 - rank 2: busbw ")
    assert f["evidence"][1].startswith("round 2: rank 0 - rank 2: busbw ")
    assert f["evidence"][2].startswith("median of 4 pairs: ")
    assert "envdoctor comms          # its GPUs among themselves: is the node slow inside too?" in f["fix"]
    assert next(n for n in doc["nodes"] if n["rank"] == 2)["verdict"] == "warning"
    assert ran.returncode == 0  # warnings only: no drift that matters


@needs_torch
def test_a_rank_that_hangs_in_the_pairs_is_named_after_the_timeout_and_the_reports_still_print(tmp_path):
    """Three ranks: round 1 pairs 1 with 2 (rank 0 sits out); rank 2 sleeps 600 s in that pair."""
    ran, doc, took = torchrun(tmp_path, 3, "2:600", 6)
    assert took < 120 and ran.returncode == 1
    assert [n["status"] for n in doc["nodes"]] == ["reported"] * 3  # every report is still compared
    c = doc["comms"]
    assert (c["status"], c["stalled"]) == ("stalled", "round 1")
    assert c["all_reduce"]["wrong"] == 0  # the step before the hang kept its figure
    assert [(p["a"], p["b"], p["status"]) for p in c["pairs"]] == [(1, 2, "unfinished"), (0, 2, "unfinished")]
    assert [(u["rank"], u["stage"], u["in_collective"]) for u in c["unfinished"]] == [
        (1, "round 1", True),
        (2, "round 1", False),
    ]
    (f,) = [f for f in doc["findings"] if f["code"] == "ED784"]
    assert f["node"] == "rank 2"
    assert f["title"] == (
        "rank 2: hung in the comms phase's step 'round 1': it was not in a collective after 6 s "
        "while rank 1 waited in one"
    )
    assert f["evidence"][2].startswith("rank 2 was in slowed (")
    validate(doc)


# --- rank 0's answer on its own -------------------------------------------------------------------------


def point(time_s, nbytes=256 * MIB, **extra):
    return dict(
        {"bytes": nbytes, "iters": 20, "warmup": 5, "time_s": time_s, "time_max_s": time_s, "wrong": 0}, **extra
    )


def answer(pair_times, **extra):
    rounds = [[[0, 3], [1, 2]], [[0, 2], [3, 1]]]
    pairs = [
        dict(point(t), round=i // 2 + 1, a=ab[0], b=ab[1])
        for i, (ab, t) in enumerate(zip([p for r in rounds for p in r], pair_times))
    ]
    return dict(
        {
            "status": "ok",
            "backend": "nccl",
            "why": "every rank has a CUDA GPU and NCCL",
            "bytes": 256 * MIB,
            "phase_timeout": 60,
            "rounds": rounds,
            "all_reduce": point(0.02),
            "pairs": pairs,
        },
        **extra,
    )


def inputs_of(n):
    return [
        NodeInput((Document("report", fd.h200(), f"rank {r}"),), ((f"gpu{r + 1}", "node key"),), "reported", r)
        for r in range(n)
    ]


def test_a_pair_slow_while_both_nodes_are_fine_with_others_is_a_slow_link_over_nccl():
    # 256 MiB in 10 ms: 26.844 GB/s; the pair 1-2 takes 20 ms: 13.422 GB/s
    c = comms.read(answer([0.01, 0.02, 0.01, 0.01]), 4)
    assert c.all_reduce.busbw_gbps == pytest.approx(268435456 / 0.02 / 1e9 * 1.5, abs=1e-3) == 20.133
    assert [p.transfer.busbw_gbps for p in c.pairs] == [26.844, 13.422, 26.844, 26.844]
    assert (c.median_busbw_gbps, c.slow_nodes, c.slow_links) == (26.844, (), ((1, 2),))
    fleet, _ = merge(inputs_of(4), mode="gather", comms=c)
    (f,) = [nf for nf in fleet.drift.findings if nf.finding.code == "ED783"]
    assert (f.node, f.finding.severity) == ("gpu2", "error")
    assert f.finding.title == (
        "gpu2 - gpu3: the link is slow (13.4 GB/s busbw against the median 26.8); both nodes "
        "are fine with their other partners"
    )
    assert (
        f.finding.evidence[0] == "round 1: gpu2 - gpu3: busbw 13.4 GB/s (256 MiB all-reduce, 20 calls, 20.000 ms each)"
    )
    assert fleet.drift.exit_code == 1
    text = render_text(fleet)
    assert "Comms over nccl (every rank has a CUDA GPU and NCCL), 256 MiB per all-reduce" in text
    assert "round 1  gpu2 - gpu3  busbw 13.4 GB/s, 20.000 ms  slow: the link" in text
    assert "slow link: gpu2 - gpu3" in text
    assert "| 1 | gpu2 - gpu3 | 13.4 | 20.000 | slow: the link |" in render_markdown(fleet)
    assert '<td class="error">13.4</td>' in render_html(fleet)  # the slow pair, marked
    validate(fleet_document(fleet))


def test_redacted_names_reach_the_comms_findings_and_figures():
    fleet, redactor = merge(
        inputs_of(4), mode="gather", comms=comms.read(answer([0.01, 0.02, 0.02, 0.01]), 4), redact_names=True
    )
    doc = fleet_document(fleet)
    assert doc["comms"]["slow_nodes"] == ["node-03"]  # rank 2 (gpu3), slow with ranks 1 and 0
    assert {f["node"] for f in doc["findings"] if f["code"] == "ED782"} == {"node-03"}
    assert "gpu3" not in redactor.text(json.dumps(doc["comms"]))


def test_a_stall_where_both_ranks_wait_in_the_collective_names_the_pair():
    """Under NCCL both ranks of a hung pair wait alike: neither is singled out."""
    data = answer(
        [0.01, 0.01, 0.01, 0.01],
        status="stalled",
        stalled="round 2",
        unfinished=[
            {"rank": 0, "stage": "round 2", "in_collective": True, "where": "all_reduce (distributed_c10d.py:1)"},
            {"rank": 2, "stage": "round 2", "in_collective": True, "where": "all_reduce (distributed_c10d.py:1)"},
        ],
    )
    data["pairs"][2] = {"round": 2, "a": 0, "b": 2, "status": "unfinished"}
    fleet, _ = merge(inputs_of(4), mode="gather", comms=comms.read(data, 4))
    titles = [nf.finding.title for nf in fleet.drift.findings if nf.finding.code == "ED784"]
    assert titles == [
        "gpu1: did not finish the comms phase's step 'round 2' with gpu3 within 60 s: one of the two "
        "hangs, or the link between them",
        "gpu3: did not finish the comms phase's step 'round 2' with gpu1 within 60 s: one of the two "
        "hangs, or the link between them",
    ]


def test_a_rank_behind_the_others_is_named_alone():
    data = answer(
        [],
        status="stalled",
        stalled="all_reduce",
        pairs=[],
        all_reduce=None,
        unfinished=[{"rank": 1, "stage": "all_reduce", "in_collective": True}, {"rank": 3, "stage": "group"}],
    )
    fleet, _ = merge(inputs_of(4), mode="gather", comms=comms.read(data, 4))
    (f,) = [nf for nf in fleet.drift.findings if nf.finding.code == "ED784"]
    assert (f.node, f.finding.title) == (
        "gpu4",
        "gpu4: stopped at 'group' and never finished the comms phase's step 'all_reduce' (within 60 s)",
    )


def test_wrong_elements_in_a_pair_are_named_for_that_pair():
    data = answer([0.01, 0.01, 0.01, 0.01])
    data["pairs"][3]["wrong"] = 7
    fleet, _ = merge(inputs_of(4), mode="gather", comms=comms.read(data, 4))
    (f,) = [nf for nf in fleet.drift.findings if nf.finding.code == "ED785"]
    assert (f.node, f.finding.title) == ("gpu4", "gpu4 - gpu2: the pair's all-reduce gave 7 wrong element(s)")


def test_when_rank_0s_child_dies_in_the_comms_phase_the_gathered_reports_are_still_merged(tmp_path):
    r = rendezvous({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"})
    path = tmp_path / "rank-0.json"
    path.write_text(gather.payload(0, "gpu1", {"report": json.dumps(fd.h200())}, None, 1.0))
    got = {"transport": "gloo", "joined": [0], "files": {"0": str(path)}}
    run = ChildRun(
        "fleet/target/gather.py",
        sys.executable,
        events=({"kind": "gathered", "result": got},),
        error=ProbeError("crashed", "python3 was killed by SIGABRT during comms: round 1"),
        stage="comms: round 1",
    )
    inputs, info = gather.collect(r, run)
    assert [n.status for n in inputs] == ["reported"] and info.transport == "gloo"
    c = gather.comms_of(r, run)
    assert (c.status, c.error) == (
        "failed",
        "rank 0 during comms: round 1: python3 was killed by SIGABRT during comms: round 1",
    )
    fleet, _ = merge(inputs, mode="gather", comms=c)
    (f,) = [nf.finding for nf in fleet.drift.findings if nf.finding.code == "ED784"]
    assert f.title.startswith("vm: the comms phase ended without its answer: rank 0 during comms: round 1")  # its host


@pytest.mark.parametrize(
    "value, expected",
    [("2:0.05", {"rank": 2, "peer": None, "seconds": 0.05}), ("1-3:0.2", {"rank": 1, "peer": 3, "seconds": 0.2})],
)
def test_the_delay_variable(value, expected):
    assert gather.comms_delay({gather.DELAY_ENV: value}) == expected


@pytest.mark.parametrize("value", ["2", "x:1", "2:-1", "1-:0.1:"])
def test_a_delay_variable_envdoctor_cannot_read_is_one_line(value):
    with pytest.raises(gather.GatherError, match="ENVDOCTOR_FLEET_COMMS_DELAY"):
        gather.comms_delay({gather.DELAY_ENV: value})


def test_the_comms_configuration_carries_the_quick_pass_and_the_sizes_per_backend():
    cfg = gather.comms_config(5, 30.0, {})
    assert cfg["rounds"] == [[[1, 4], [2, 3]], [[0, 4], [1, 2]]]  # node 0, then node 3, sits a round out
    assert cfg["bytes"] == {"nccl": 256 * MIB, "gloo": MIB} and cfg["phase_timeout"] == 30.0
    assert cfg["delay"] is None


def test_one_node_says_there_is_no_bus_bandwidth_to_measure_not_busbw_0():
    """Run on the H200 with one rank, the text read "all-reduce over 1 nodes: ... busbw 0 GB/s"."""
    from envdoctor.fleet.comms import FleetComms, Transfer
    from envdoctor.fleet.render import comms_lines

    one = Transfer(
        bytes=1 << 20,
        iters=20,
        warmup=5,
        time_s=3.5e-5,
        time_max_s=3.5e-5,
        algbw_gbps=30.3,
        busbw_gbps=0.0,
        busbw_factor=0.0,
        wrong=0,
        ranks=1,
    )
    lines = comms_lines(FleetComms(status="ok", world_size=1, backend="gloo", all_reduce=one))
    assert lines[0].startswith("all-reduce over 1 node: nothing travels between nodes")
    assert not any("busbw 0" in line for line in lines)

"""From the ranks' answers to a result and its verdicts (envdoctor/links/analysis_comms.py, links/rules_comms.py), on
answers shaped like the child's for 8 H200 on NVSwitch (tests/linkmachines.py) and one H200."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional

import jsonschema

from envdoctor.child import from_ran
from envdoctor.facts.base import ProbeError
from envdoctor.links import probe as links
from envdoctor.links.analysis_comms import build
from envdoctor.links.analysis_topo import expected
from envdoctor.links.facts_comms import HostCopy
from envdoctor.links.rules_comms import verdicts
from envdoctor.links.table import load_links
from envdoctor.parse.nccl_log import parse_nccl_log
from envdoctor.run import Ran
from tests.linkmachines import context, nvswitch
from tests.machines import h200
from tests.test_comms_nccl_log import LOG_2_28

GIB = 1 << 30


def _line(kind: str, **fields: Any) -> str:
    return json.dumps({"envdoctor_child": 2, "kind": kind, **fields})


def _bus(i: int) -> str:
    return f"0000:{0x18 + 0x10 * i:02x}:00.0"


def _device(i: int) -> Dict[str, Any]:
    return {"index": i, "name": "NVIDIA H200", "pci_bus_id": _bus(i), "uuid": f"GPU-{i}"}


def _time_for(busbw: float, collective: str, s: int, n: int) -> float:
    factor = 2 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n
    return s * factor / (busbw * 1e9) if busbw else 0.004


def answer(
    rank: int,
    n: int,
    busbw: Dict[str, float],
    pairs: Optional[List[Dict[str, Any]]] = None,
    host: Optional[Dict[str, Any]] = None,
    env: Optional[Dict[str, str]] = None,
) -> Dict[str, Any]:
    points = [
        {
            "collective": c,
            "bytes": GIB,
            "requested_bytes": GIB,
            "count": GIB // 4,
            "dtype": "float32",
            "status": "ok",
            "warmup": 5,
            "iters": 20,
            "time_s": _time_for(b, c, GIB, n),
            "time_max_s": _time_for(b, c, GIB, n) * 1.01,
            "wrong": 0,
        }
        for c, b in busbw.items()
    ]
    return {
        "schema": "envdoctor.comms.child/1",
        "rank": rank,
        "world_size": n,
        "local_rank": rank,
        "host": "node1",
        "backend": "nccl",
        "torch_version": "2.11.0+cu130",
        "nccl_version": "2.28.9",
        "device": _device(rank),
        "points": points,
        "pairs": pairs or [],
        "host_copies": host,
        "notes": [],
        "env": env or {},
        "ranks": [{"rank": r, "local_rank": r, "host": "node1", "device": _device(r)} for r in range(n)],
    }


def ok_run(result: Dict[str, Any]):
    return from_ran(
        "links/target/comms.py", "python3", Ran(("python3", "-"), 0, _line("result", result=result), "", 12.0)
    )


def hung_run(rank: int):
    out = "\n".join(
        [
            _line("plan", points=4, world_size=8, rank=rank, device=_device(rank)),
            _line("stage", stage="all_reduce 1073741824 bytes"),
        ]
    )
    return from_ran(
        "links/target/comms.py",
        "python3",
        Ran(("python3", "-"), None, out, "", 61.0, ProbeError("timeout", "python3 printed nothing for 60 s")),
    )


def failed_run(rank: int, seconds: float):
    out = _line(
        "error",
        error={
            "kind": "collective_failed",
            "message": f"rank {rank}: all_reduce failed: DistBackendError: watchdog timeout",
        },
    )
    return from_ran(
        "links/target/comms.py",
        "python3",
        Ran(("python3", "-"), 1, out, "", seconds, ProbeError("exit_status", "exited 1")),
    )


def _result(tmp_path, runs, n=8, env=None, log=LOG_2_28):
    lf = links.probe(context(tmp_path, nvswitch(8), 8))
    table = load_links()
    return build(
        runs,
        backend="nccl",
        launcher="envdoctor",
        world=n,
        links=lf,
        top=expected(lf, table),
        table=table,
        nccl=parse_nccl_log(log) if log else None,
        nccl_log_note="log",
        env=env or {},
        ranks=list(range(n)),
        common={},
    )


BUSBW = {"all_reduce": 352.0, "all_gather": 340.0, "reduce_scatter": 345.0, "all_to_all": 330.0}


def test_eight_h200_at_the_published_rate(tmp_path):
    r = _result(tmp_path, [ok_run(answer(i, 8, BUSBW)) for i in range(8)])
    ar = r.points[0]
    assert (ar.collective, ar.bytes, ar.busbw_gbps, ar.algo, ar.proto) == ("all_reduce", GIB, 352.0, "Ring", "Simple")
    assert ar.algbw_gbps == round(352.0 / 1.75, 3) and ar.ratio == round(352.0 / 450.0, 3)
    assert r.points[3].algo is None  # all_to_all: send/recv, no TUNING line
    e = r.expected
    assert (e.peak_gbps, e.path, e.kind, e.achievable_gbps, e.gpu_name) == (
        450.0,
        "NV18",
        "nvlink",
        360.0,
        "NVIDIA H200",
    )
    assert r.hosts == ("node1",) and r.transports == ("P2P/CUMEM",) and r.nvls_available is False
    assert [f.code for f in verdicts(r)] == []


def test_far_below_and_below(tmp_path):
    slow = {"all_reduce": 150.0, "all_gather": 250.0}
    found = {f.code: f for f in verdicts(_result(tmp_path, [ok_run(answer(i, 8, slow)) for i in range(8)]))}
    assert (
        found["ED870"].severity == "error" and "all_reduce reached 150 GB/s busbw at 1 GiB: 41%" in found["ED870"].title
    )
    assert "published 367.2 GB/s for 8x NVIDIA H200" in found["ED870"].evidence[1]  # NVLS off: the ring figure
    assert found["ED871"].severity == "warning" and found["ED871"].title.startswith("all_gather reached 250 GB/s")


def test_small_messages_get_no_bandwidth_verdict(tmp_path):
    run = answer(0, 8, {"all_reduce": 5.0})
    run["points"][0].update(bytes=1 << 20, time_s=_time_for(5.0, "all_reduce", 1 << 20, 8))
    assert "ED870" not in {f.code for f in verdicts(_result(tmp_path, [ok_run(run)] * 8))}


def test_the_hung_rank_is_named_not_its_victims(tmp_path):
    runs = [failed_run(i, 40.0 + i) for i in range(8)]
    runs[3] = hung_run(3)
    r = _result(tmp_path, runs)
    assert [x.status for x in r.ranks] == ["failed"] * 3 + ["hung"] + ["failed"] * 4
    (f,) = [f for f in verdicts(r) if f.code == "ED873"]
    assert f.title == "rank 3 (cuda:3 NVIDIA H200) hung during the run"
    assert f.evidence[3].startswith("rank 3 hung during all_reduce 1073741824 bytes")


def test_a_wrong_result_and_a_slow_pair(tmp_path):
    pairs = [
        {
            "src": s,
            "dst": d,
            "bytes": 256 << 20,
            "iters": 20,
            "wrong": 0,
            "time_s": (256 << 20) / ((120.0 if (s, d) == (3, 5) else 390.0) * 1e9),
        }
        for s in range(8)
        for d in range(8)
        if s != d
    ]
    pairs[0]["wrong"] = 7
    results = [answer(i, 8, BUSBW, pairs=pairs) for i in range(8)]
    results[0]["points"][1]["wrong"] = 12
    found = {f.code: f for f in verdicts(_result(tmp_path, [ok_run(x) for x in results]))}
    assert found["ED872"].evidence == (
        "all_gather at 1 GiB: 12 wrong element(s) over all ranks",
        "copy from rank 0 to rank 1: 7 wrong element(s)",
    )
    assert found["ED875"].evidence == ("rank 3 -> rank 5 (NV18): 120 GB/s, the other NV18 pairs 390 GB/s (median)",)


def test_nvls_switched_off_by_the_environment_and_shared_memory(tmp_path):
    env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    log = LOG_2_28.replace("P2P/CUMEM/read", "SHM/direct/direct")
    r = _result(tmp_path, [ok_run(answer(i, 8, BUSBW, env=env)) for i in range(8)], log=log)
    assert r.nccl_env == env
    found = {f.code: f for f in verdicts(r)}
    assert found["ED878"].title == "NVLS is off (NCCL_NVLS_ENABLE=0 in the environment): all-reduce runs as a ring"
    assert found["ED879"].evidence == ("NCCL's transports: SHM/direct",)


def test_one_h200_host_copies(tmp_path):
    lf = links.probe(h200(tmp_path))
    table = load_links()
    host = {
        "status": "ok",
        "bytes": 256 << 20,
        "pinned": True,
        "directions": [
            {"direction": "h2d", "iters": 20, "time_s": (256 << 20) / 55.4e9},
            {"direction": "d2h", "iters": 20, "time_s": (256 << 20) / 20.0e9},
        ],
    }
    one = answer(0, 1, {"all_reduce": 0.0}, host=host)
    one["device"]["pci_bus_id"] = "0000:00:06.0"
    one["ranks"][0]["device"]["pci_bus_id"] = "0000:00:06.0"
    r = build(
        [ok_run(one)],
        backend="nccl",
        launcher="envdoctor",
        world=1,
        links=lf,
        top=expected(lf, table),
        table=table,
        nccl=None,
        nccl_log_note="none",
        env={},
        ranks=[0],
        common={},
    )
    assert r.points[0].busbw_gbps == 0.0 and r.points[0].ratio is None
    assert r.host_copies == (
        HostCopy("h2d", 256 << 20, 20, 55.4, 63.02, 0.879),
        HostCopy("d2h", 256 << 20, 20, 20.0, 63.02, 0.317),
    )
    found = {f.code: f for f in verdicts(r)}
    assert found["ED877"].title == "One GPU: nothing to measure between GPUs; host copies h2d 55.4 GB/s, d2h 20 GB/s"
    assert found["ED876"].evidence == ("d2h: 20 GB/s of 63.02 GB/s (the PCIe link, data/links.toml)",)
    assert r.expected.note == "one rank: nothing crosses a link between GPUs"


def test_skipped_sizes(tmp_path):
    run = answer(0, 8, BUSBW)
    run["points"][0] = {
        "collective": "all_to_all",
        "bytes": 64 * GIB,
        "status": "skipped",
        "reason": "needs 128.0 GiB per GPU; one GPU has less free",
    }
    r = _result(tmp_path, [ok_run(run)] * 8)
    assert replace(r.points[0], reason=None).status == "skipped"
    assert "ED880" in {f.code for f in verdicts(r)}


def test_published_figure_and_the_text_report(tmp_path):
    from envdoctor.links.render_comms import comms_document, render_comms_text

    env = {"NCCL_NVLS_ENABLE": "0"}
    r = _result(tmp_path, [ok_run(answer(i, 8, BUSBW, env=env)) for i in range(8)], env=env)
    assert r.expected.published_gbps == 367.2 and [x.gpu for x in r.ranks] == list(range(8))
    text = render_comms_text(r, verdicts(r))
    assert "links: the slowest path between them is NV18, 450 GB/s each way" in text
    assert "NVLS: NCCL_NVLS_ENABLE=0 (from the environment), multicast not available, not used" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("all_reduce"))
    assert row.split() == ["all_reduce", "1", "GiB", "20", "5338.2", "201.14", "352.00", "78%", "Ring/Simple", "ok"]
    doc = json.loads(json.dumps(comms_document(r, verdicts(r))))
    jsonschema.validate(doc, json.loads((Path(__file__).parent.parent / "envdoctor/schemas/comms-1.json").read_text()))
    assert doc["schema"] == "envdoctor.comms/1" and doc["summary"]["exit_code"] == 0
    assert doc["points"][0]["busbw_gbps"] == 352.0 and doc["expected"]["published_gbps"] == 367.2


def test_ranks_that_answer_with_nothing_measured_are_a_failed_run_not_all_ok(tmp_path):
    """The right schema, every rank ok, no point, pair or host copy: not "all 8 ok", exit 0."""
    from envdoctor.findings import exit_code

    r = _result(tmp_path, [ok_run(answer(i, 8, {})) for i in range(8)])
    found = verdicts(r)
    assert [(f.code, f.severity) for f in found] == [("ED882", "error")]
    assert found[0].title == "The 8 ranks answered but measured nothing"
    assert exit_code(found) == 1


def test_every_size_skipped_is_nothing_measured(tmp_path):
    run = answer(0, 8, {})
    run["points"] = [
        {
            "collective": "all_reduce",
            "bytes": 64 * GIB,
            "status": "skipped",
            "reason": "needs 128.0 GiB per GPU; one GPU has less free",
        }
    ]
    codes = {(f.code, f.severity) for f in verdicts(_result(tmp_path, [ok_run(run)] * 8))}
    assert {("ED880", "warning"), ("ED882", "error")} <= codes


def test_comms_takes_suppress_as_check_and_topo_do(tmp_path):
    # --suppress was check's alone: comms' text now names what it hid, and an unknown code is exit 2
    from click.testing import CliRunner

    from envdoctor.checks import split_suppressed
    from envdoctor.cli import cli
    from envdoctor.links.render_comms import render_comms_text

    slow = {"all_reduce": 150.0, "all_gather": 250.0}
    r = _result(tmp_path, [ok_run(answer(i, 8, slow)) for i in range(8)])
    shown, hidden = split_suppressed(verdicts(r), ["ed870"])
    text = render_comms_text(r, shown, suppressed=hidden)
    assert "ED870 error" not in text and "suppressed (--suppress): ED870 (error)" in text and "ED871 warning" in text
    bad = CliRunner().invoke(cli, ["comms", "--suppress", "ED87"])
    assert bad.exit_code == 2 and "finding codes look like ED305" in bad.output

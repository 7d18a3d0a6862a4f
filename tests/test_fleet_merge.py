"""``envdoctor fleet REPORT.json...``: recorded reports of real machines, and edited copies with the
drift a fleet gets (a driver left behind, a missing GPU, another torch, a slow GPU, ECC errors).

Every expected value is written out by hand from the recorded files (tests/fleetdocs.py says
which) and the edit each test makes.
"""

import json
import re

import jsonschema
import pytest
from click.testing import CliRunner
from referencing import Registry, Resource

from envdoctor import documents
from envdoctor.cli import cli
from envdoctor.codes import CODES
from envdoctor.fleet.facts import Document, NodeInput
from envdoctor.fleet.merge import merge, merge_files
from envdoctor.fleet.render import render_html, render_markdown, render_text
from envdoctor.table import load_table
from tests import fleetdocs as fd


def run(*args):
    return CliRunner().invoke(cli, ["fleet", *map(str, args)], catch_exceptions=False)


def findings(fleet):
    """{node: [codes]} of a merge, in order."""
    out = {}
    for f in fleet.drift.findings:
        out.setdefault(f.node, []).append(f.finding.code)
    return out


def verdicts(fleet):
    return {v.node: v.verdict for v in fleet.drift.verdicts}


def row(fleet, key):
    return next(r for r in fleet.drift.rows if r.key == key)


def validate(doc):
    resources = [
        (documents.schema(d.kind)["$id"], Resource.from_contents(documents.schema(d.kind))) for d in documents.DOCUMENTS
    ]
    jsonschema.Draft202012Validator(documents.schema("fleet"), registry=Registry().with_resources(resources)).validate(
        doc
    )


@pytest.fixture
def drifted(tmp_path):
    """Five 8-GPU H200 nodes from the recorded H200 report: two as recorded, one kept driver
    570.133.20 (CUDA 12.8), one lost a GPU, one has torch 2.10.0+cu128 with its cuDNN and NCCL."""
    base = fd.gpus(fd.h200(), 8)
    fd.write(tmp_path / "r" / "gpu-01", fd.host(base, "gpu-01"))
    fd.write(tmp_path / "r" / "gpu-02", fd.host(base, "gpu-02"))
    fd.write(tmp_path / "r" / "gpu-03", fd.host(fd.driver(base, "570.133.20", "12.8"), "gpu-03"))
    fd.write(tmp_path / "r" / "gpu-04", fd.host(fd.gpus(fd.h200(), 7), "gpu-04"))
    fd.write(tmp_path / "r" / "gpu-05", fd.host(fd.torch(base, "2.10.0+cu128", "12.8", "9.10.2", "2.27.3"), "gpu-05"))
    return tmp_path / "r"


def test_drift_is_named_per_node_with_the_majority_and_the_fix(drifted):
    fleet, _ = merge_files([str(drifted)], table=load_table())
    assert verdicts(fleet) == {
        "gpu-01": "ok",
        "gpu-02": "ok",
        "gpu-03": "deviates",
        "gpu-04": "deviates",
        "gpu-05": "deviates",
    }
    # one finding per cause: the driver's CUDA, version and kernel module follow the branch; torch's
    # CUDA, cuDNN and NCCL follow the torch build
    assert findings(fleet) == {"gpu-03": ["ED751"], "gpu-04": ["ED756"], "gpu-05": ["ED761"]}
    assert fleet.drift.exit_code == 1
    branch = row(fleet, "driver.branch")
    assert (branch.majority, branch.count, branch.known, branch.deviating) == ("580", 4, 5, ("gpu-03",))
    assert row(fleet, "driver.cuda").values["gpu-03"] == "12.8"
    assert (row(fleet, "gpu.count").majority, row(fleet, "gpu.count").values["gpu-04"]) == (8, 7)
    assert row(fleet, "torch.nccl").deviating == ("gpu-05",)
    assert {r.key for r in fleet.drift.rows} == {
        "driver.branch",
        "driver.version",
        "driver.cuda",
        "driver.kernel_module",
        "gpu.count",
        "torch.version",
        "torch.cuda",
        "torch.cudnn",
        "torch.nccl",
    }
    by = {f.node: f.finding for f in fleet.drift.findings}
    assert by["gpu-03"].title == "gpu-03: driver branch 570, where 4 of 5 nodes have 580"
    # the driver command check's own rules print: the nodes are docker containers, so it is the host's
    assert by["gpu-03"].fix[0].startswith("# on the host: install the NVIDIA driver R580 with the open kernel modules")
    assert by["gpu-03"].fix[-1].startswith("# the others run 580.159.04")
    assert by["gpu-05"].fix == (
        "/opt/torch/.venv/bin/python3 -m pip install --force-reinstall torch==2.11.0 "
        "--index-url https://download.pytorch.org/whl/cu130",
    )
    assert "lspci -nn | grep -i nvidia   # is the card seated / passed through to this VM?" in by["gpu-04"].fix


def test_the_recorded_machines_two_h200s_and_the_cpu_box(tmp_path):
    """Both H200 recordings call themselves 'vm': they are named by their folders."""
    fd.write(tmp_path / "h200a", fd.h200())
    fd.write(tmp_path / "h200b", fd.h200_docs())
    fd.write(tmp_path / "cpu", fd.cpu())
    fleet, _ = merge_files([str(tmp_path)])
    assert [n.name for n in fleet.drift.nodes] == ["cpu", "h200a", "h200b"]
    assert [n.name_source for n in fleet.drift.nodes] == ["folder", "folder", "folder"]
    assert "2 nodes go by the name vm: named by their folder instead" in fleet.drift.notes
    assert verdicts(fleet) == {"cpu": "deviates", "h200a": "ok", "h200b": "ok"}
    # no driver (branch), no GPU (count), the CPU torch, Python 3.11 and Debian: what the GPU
    # models, clocks, torch's CUDA, cuDNN and NCCL say is covered by those. The two H200 recordings
    # come from two sessions whose VM kernels differ (6.18.44-fc-v657 and -v973): info, ED770
    assert findings(fleet) == {"cpu": ["ED751", "ED756", "ED761", "ED766", "ED769"], "h200a": ["ED770"]}
    same = {r.key: r.majority for r in fleet.drift.same}
    assert same == {"toolkits": "13.0", "container_toolkit": None, "check.errors": None}
    assert row(fleet, "torch.version").values == {"cpu": "2.13.0+cpu", "h200a": "2.11.0+cu130", "h200b": "2.11.0+cu130"}


def test_two_nodes_split_on_the_driver_take_the_newer_branch_and_say_it_was_a_tie(tmp_path):
    fd.write(tmp_path / "a", fd.host(fd.h200(), "lab-1"))
    fd.write(tmp_path / "b", fd.host(fd.driver(fd.h200(), "570.133.20", "12.8"), "lab-2"))
    fleet, _ = merge_files([str(tmp_path)])
    branch = row(fleet, "driver.branch")
    assert (branch.majority, branch.tie, branch.deviating) == ("580", True, ("lab-2",))
    (f,) = [f.finding for f in fleet.drift.findings]
    assert f.title == (
        "lab-2: driver branch 570; the nodes are split with no majority, and the higher 580 is taken as the fleet's"
    )


def test_a_gpu_ten_percent_slow_is_named_against_the_median_of_its_model(tmp_path):
    bench = fd.bench2()
    report = fd.gpus(fd.h200(), 2, fd.bench_uuids(bench))
    for node in ("n1", "n2", "n4"):
        fd.write(tmp_path / node, fd.host(report, node))
        fd.write(tmp_path / node, bench, "bench.json")
    fd.write(tmp_path / "n3", fd.host(report, "n3"))
    fd.write(tmp_path / "n3", fd.bench_with(bench, {1: 600.0}), "bench.json")
    fleet, _ = merge_files([str(tmp_path)])
    # bf16 at n=8192: 659.85 and 673.10 on three nodes, 659.85 and 600.0 on n3; median 659.85
    assert findings(fleet) == {"n3": ["ED775"]}
    (f,) = [f.finding for f in fleet.drift.findings]
    assert f.title == "n3: GPU 1 at 600.0 TFLOP/s, 9% below the fleet's median 659.8 for NVIDIA H200"
    assert f.evidence[0] == "GPU 1 (GPU-001c6456-6a10-5e91-4ca3-451b2c6bba48): 600.0 TFLOP/s at bf16@8192"
    assert "envdoctor bench --device 1 --dtype bf16 --size 8192   # measure it again" in f.fix
    n3 = next(n for n in fleet.drift.nodes if n.name == "n3")
    assert n3.sources == (str(tmp_path / "n3" / "check.json"), str(tmp_path / "n3" / "bench.json"))  # report first
    measured = row(fleet, "measured.tflops:NVIDIA H200")
    assert measured.values["n3"] == 600.0 and measured.majority == 659.8
    assert measured.note == "bf16@8192, slowest GPU of each node"
    assert fleet.drift.exit_code == 1


def test_gpus_within_five_percent_are_not_slow(tmp_path):
    """The recorded pair differs by 2% (659.8 and 673.1): no finding, on any number of nodes."""
    bench = fd.bench2()
    report = fd.gpus(fd.h200(), 2, fd.bench_uuids(bench))
    for node in ("n1", "n2"):
        fd.write(tmp_path / node, fd.host(report, node))
        fd.write(tmp_path / node, bench, "bench.json")
    fleet, _ = merge_files([str(tmp_path)])
    assert fleet.drift.findings == () and fleet.drift.exit_code == 0


def health(gpus):
    return Document("health", {"gpus": gpus, "error": None}, "rank")


def test_uncorrected_ecc_and_pending_remaps_matter_whatever_the_majority():
    uuid = fd.h200()["facts"]["driver"]["gpus"][0]["uuid"]  # GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38
    ok = {
        "index": 0,
        "uuid": uuid,
        "ecc_mode": {"current": 1, "pending": 1},
        "ecc_corrected": 0,
        "ecc_uncorrected": 0,
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": 0, "failure": 0},
    }
    bad = dict(ok, ecc_uncorrected=2, remapped_rows={"correctable": 0, "uncorrectable": 2, "pending": 1, "failure": 0})
    inputs = [
        NodeInput((Document("report", fd.host(fd.h200(), h), h), health([gpu])), ((h, "folder"),))
        for h, gpu in (("a", ok), ("b", ok), ("c", bad))
    ]
    fleet, _ = merge(inputs)
    assert findings(fleet) == {"c": ["ED772", "ED773"]}
    ecc = next(f.finding for f in fleet.drift.findings if f.finding.code == "ED772")
    assert ecc.evidence == (
        "GPU 0 (NVIDIA H200, GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38): 2 uncorrected ECC errors (NVML, volatile)",
    )
    assert (
        "sudo nvidia-smi -r -i 0   # a GPU reset applies the pending remaps (no process may use the GPU)"
        in next(f.finding for f in fleet.drift.findings if f.finding.code == "ED773").fix
    )
    assert row(fleet, "gpu.ecc_uncorrected").values == {"a": 0, "b": 0, "c": 2}


def test_a_nodes_own_check_errors_are_repeated_with_their_fixes(tmp_path):
    base = fd.h200()
    broken = fd.host(base, "gpu-09")
    broken["findings"] = [
        {
            "code": "ED102",
            "severity": "error",
            "title": "Driver upgraded without a reboot",
            "evidence": ["kernel module 570.133.20", "user-space library 580.159.04"],
            "fix": ["sudo reboot"],
            "reference": None,
            "area": "driver",
            "explanation": None,
        }
    ]
    fd.write(tmp_path / "a", fd.host(base, "gpu-07"))
    fd.write(tmp_path / "b", fd.host(base, "gpu-08"))
    fd.write(tmp_path / "c", broken)
    fleet, _ = merge_files([str(tmp_path)])
    assert findings(fleet) == {"gpu-09": ["ED771"]}
    (f,) = [f.finding for f in fleet.drift.findings]
    assert f.title == "gpu-09: its own check reports ED102"
    assert f.fix == ("# from its own check, ED102: Driver upgraded without a reboot", "sudo reboot")


def test_node_key_wins_then_host_name_then_folder_then_file_name(tmp_path):
    keyed = dict(fd.h200(), node="rack4-07")
    fd.write(tmp_path / "x", keyed)  # node key
    fd.write(tmp_path / "y", fd.host(fd.h200(), "gpu-12"))  # host name
    fd.write(tmp_path / "flat", fd.host(fd.h200(), "<host>"), "gpu-13.json")  # file name (two reports)
    fd.write(tmp_path / "flat", fd.host(fd.h200(), "<host>"), "gpu-14.json")
    fd.write(tmp_path / "flat", fd.bench2(), "gpu-14.bench.json")
    fleet, _ = merge_files([str(tmp_path)])
    got = {n.name: (n.name_source, n.kinds) for n in fleet.drift.nodes}
    assert got == {
        "rack4-07": ("node key", ("report",)),
        "gpu-12": ("hostname", ("report",)),
        "gpu-13": ("file name", ("report",)),
        "gpu-14": ("file name", ("report", "bench")),
    }


def test_an_unreadable_file_names_its_node_and_other_documents_are_passed_over(tmp_path):
    fd.write(tmp_path / "gpu-01", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp_path / "gpu-02", fd.host(fd.h200(), "gpu-02"))
    (tmp_path / "gpu-03").mkdir()
    (tmp_path / "gpu-03" / "check.json").write_text(json.dumps(fd.h200())[:5000])  # cut short
    (tmp_path / "plan.json").write_text(json.dumps({"schema": "envdoctor.plan/1"}))
    fleet, _ = merge_files([str(tmp_path)])
    assert verdicts(fleet) == {"gpu-01": "ok", "gpu-02": "ok", "gpu-03": "unreadable"}
    (f,) = [f.finding for f in fleet.drift.findings]
    assert f.code == "ED781" and "is not valid JSON (cut short or damaged near line 1)" in f.title
    assert [s.reason for s in fleet.skipped] == [
        f"{tmp_path / 'plan.json'} is an envdoctor.plan document, "
        "not an envdoctor report, bench result, burn result, comms result "
        "or topology"
    ]
    assert fleet.drift.exit_code == 1


def test_a_report_with_a_value_no_probe_writes_is_refused_with_the_key(tmp_path):
    banana = fd.host(fd.h200(), "gpu-02")
    banana["facts"]["driver"]["driver_version"] = "banana"
    fd.write(tmp_path / "a", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp_path / "b", banana)
    fleet, _ = merge_files([str(tmp_path)])
    (f,) = [f.finding for f in fleet.drift.findings]
    assert f.code == "ED781"
    assert f.title.endswith(
        "holds a value no probe writes: facts.driver.driver_version is 'banana', not a driver version like 580.159.04"
    )


def test_redact_names_nodes_node_01_and_masks_hosts_serials_and_uuids(drifted):
    result = run(drifted, "--redact", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert [n["name"] for n in doc["nodes"]] == ["node-01", "node-02", "node-03", "node-04", "node-05"]
    for secret in ("gpu-0", "GPU-06a5f464", "16539240423", "/root"):
        assert secret not in result.output
    text = run(drifted, "--redact").output
    assert "node-03: driver branch 570, where 4 of 5 nodes have 580" in text  # the same mapping
    assert "gpu-03" not in text


def test_redact_of_nodes_that_share_a_host_name_masks_it_without_naming_one_of_them(tmp_path):
    """Both H200 recordings call themselves 'vm': it becomes <host>, not one node's label."""
    fd.write(tmp_path / "h200a", fd.h200())
    fd.write(tmp_path / "h200b", fd.driver(fd.h200_docs(), "570.133.20", "12.8"))
    fleet, redactor = merge_files([str(tmp_path)], redact_names=True)
    assert [n.name for n in fleet.drift.nodes] == ["node-01", "node-02"]
    assert redactor.text("vm h200a h200b/check.json root /root/x") == "<host> node-01 node-02/check.json <user> ~/x"


def test_secrets_in_reports_are_masked_in_every_output(tmp_path):
    leaky = fd.host(fd.h200(), "gpu-02")
    leaky["findings"] = [
        {
            "code": "ED205",
            "severity": "error",
            "title": "torch's CUDA is newer than the driver runs",
            "evidence": ["index https://ci:hunter2secret@mirror.example/whl"],
            "fix": ["pip install torch --index-url https://ci:hunter2secret@mirror.example/whl"],
            "reference": None,
            "area": "torch",
            "explanation": None,
        }
    ]
    fd.write(tmp_path / "a", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp_path / "b", leaky)
    for fmt in ((), ("--json",), ("--markdown",), ("--html",)):
        out = run(tmp_path, *fmt).output
        assert "hunter2secret" not in out and "https://ci:***@mirror.example/whl" in out


def test_json_follows_its_schema_and_keeps_the_keys(drifted):
    doc = json.loads(run(drifted, "--json").output)
    validate(doc)
    assert doc["summary"] == {
        "nodes": 5,
        "reported": 5,
        "ok": 2,
        "warning": 0,
        "deviating": 3,
        "missing": 0,
        "unreadable": 0,
        "errors": 3,
        "warnings": 0,
        "info": 0,
        "exit_code": 1,
    }
    gpu04 = next(n for n in doc["nodes"] if n["name"] == "gpu-04")
    assert (gpu04["verdict"], gpu04["codes"], gpu04["facts"]["gpu.count"], len(gpu04["gpus"])) == (
        "deviates",
        ["ED756"],
        7,
        7,
    )
    assert {f["node"]: f["code"] for f in doc["findings"]} == {"gpu-03": "ED751", "gpu-04": "ED756", "gpu-05": "ED761"}


def test_text_markdown_and_html_show_the_same_drift(drifted):
    fleet, _ = merge_files([str(drifted)])
    text = render_text(fleet)
    assert text.startswith("envdoctor fleet: 5 nodes, 3 deviate\n")
    assert re.search(r"driver branch +580 \(4 of 5\) +570: gpu-03", text)
    assert "2 ok: gpu-01, gpu-02" in text
    assert text.endswith("Exit 1: gpu-03, gpu-04, gpu-05 deviate on something that matters.\n")
    md = render_markdown(fleet)
    assert "| GPUs | 8 (4 of 5) | 7: gpu-04 |" in md
    page = render_html(fleet)
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)  # nothing from outside
    assert '<tr class="v-deviates"><td><a href="#n-gpu-03">gpu-03</a></td>' in page
    assert '<td class="error drift">570.133.20</td>' in page  # the driver branch drifted: an error


def test_html_escapes_what_the_reports_say(tmp_path):
    fd.write(tmp_path / "a", fd.host(fd.h200(), "<script>alert(1)</script>"))
    fd.write(tmp_path / "b", fd.host(fd.driver(fd.h200(), "570.133.20", "12.8"), "b"))
    page = run(tmp_path, "--html", "--redact").output  # --redact renames the nodes on a page too
    assert "alert(1)" not in page and '<a href="#n-node-01">node-01</a>' in page
    page = run(tmp_path, "--html").output  # without it the page names them, escaped
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    fleet, _ = merge_files([str(tmp_path)])
    page = render_html(fleet)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_three_hundred_nodes_keep_the_lines_short(tmp_path):
    base = fd.h200()
    inputs = [
        NodeInput((Document("report", fd.host(base, f"n{i:03d}"), f"n{i:03d}"),), ((f"n{i:03d}", "folder"),))
        for i in range(300)
    ]
    old = fd.driver(base, "570.133.20", "12.8")
    inputs += [
        NodeInput((Document("report", fd.host(old, f"old{i}"), f"old{i}"),), ((f"old{i}", "folder"),))
        for i in range(20)
    ]
    fleet, _ = merge(inputs)
    text = render_text(fleet)
    assert "570: old0, old1, old2, old3 (+16 more)" in text
    assert max(len(line) for line in text.splitlines()) < 400


def test_usage_errors_exit_2_with_one_line(tmp_path):
    assert run().exit_code == 2
    missing = run(tmp_path / "nope")
    assert missing.exit_code == 2 and missing.output.strip().endswith("nope does not exist")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.json").write_text("{}")
    result = run(empty)
    assert result.exit_code == 2 and "none of the files" in result.output
    assert run(tmp_path, "--json", "--html").exit_code == 2


def test_an_even_fleet_exits_0(tmp_path):
    fd.write(tmp_path / "a", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp_path / "b", fd.host(fd.h200_docs(), "gpu-02"))
    result = run(tmp_path)
    assert result.exit_code == 0
    assert result.output.endswith("Exit 0: the nodes agree on everything compared.\n")


def test_every_code_emitted_has_a_title_and_lives_in_the_fleet_range():
    fleet = [c for c in CODES.values() if c.area == "fleet"]
    assert len(fleet) == 32 and all(re.fullmatch(r"ED7[5-9][0-9]", c.code) for c in fleet)
    assert all(c.title and c.meaning and c.fix for c in fleet)


def test_suppress_takes_codes_out_of_the_verdicts_and_the_exit_code_and_says_so(drifted):
    """The drifted five with the driver (ED751) and the GPU count (ED756) suppressed: only gpu-05's
    torch build is left to deviate; the document and the text list what was hidden, by node."""
    r = run(drifted, "--json", "--suppress", "ED751,ed756")
    doc = json.loads(r.output)
    validate(doc)
    assert {f["node"]: f["code"] for f in doc["findings"]} == {"gpu-05": "ED761"}
    assert doc["suppressed"]["codes"] == ["ED751", "ED756"]
    assert [(f["node"], f["code"]) for f in doc["suppressed"]["findings"]] == [("gpu-03", "ED751"), ("gpu-04", "ED756")]
    assert {n["name"]: n["verdict"] for n in doc["nodes"]}["gpu-03"] == "ok"
    assert doc["summary"]["errors"] == 1 and r.exit_code == 1
    only = run(drifted, "--suppress", "ED751", "--suppress", "ED756", "--suppress", "ED761")
    assert only.exit_code == 0, only.output
    assert "suppressed (--suppress): ED751 (error), ED756 (error), ED761 (error)" in only.output
    assert "ED751" in run(drifted, "--markdown", "--suppress", "ED751").output.split("Suppressed (--suppress):")[1]
    assert json.loads(run(drifted, "--json").output)["suppressed"] is None


@pytest.mark.parametrize("code", ["ED75", "ED749"])
def test_fleet_refuses_a_suppressed_code_not_in_the_registry(drifted, code):
    r = CliRunner().invoke(cli, ["fleet", str(drifted), "--suppress", code])
    assert r.exit_code == 2 and "--suppress" in r.output, r.output

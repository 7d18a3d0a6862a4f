"""The HTML pages the tests open (no tests here): each command's page from a recorded H200 document
or from a run on a machine rebuilt from recorded output, with the verdict text it must show.

``PAGES`` maps a name to a function ``(tmp_path) -> Page``; ``tools/make_html_examples.py`` writes the
H200 ones to docs/examples/h200/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List

from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.documents import stamp
from tests.documents import ROOT, recorded

FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
H200 = ROOT / "docs" / "examples" / "h200"
SNAPSHOT = ROOT / "tests/fixtures/snapshots/h200-580.json"
BENCH_2X = ROOT / "tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json"


@dataclass(frozen=True)
class Page:
    name: str
    html: str
    verdict: str  # text the verdict banner must hold
    exit_code: int


def _recorded(name: str) -> dict:
    return json.loads(recorded(H200 / f"{name}.json"))


def _cli(args: List[str], env: Dict[str, str] | None = None) -> tuple:
    r = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return r.exit_code, r.stdout


def check_h200(tmp: Path) -> Page:
    from envdoctor.render.check_page import check_page

    doc = _recorded("check")
    return Page("check", check_page(stamp(doc, 0)), "no problems found", 0)


def check_mismatch(tmp: Path) -> Page:
    """check --html on the H200 whose driver and library disagree: error findings with fixes."""
    from tests.fakes import FakeBin
    from tests.machines import SMI_MISMATCH, h200

    ctx = h200(tmp / "m")
    bin = FakeBin(tmp / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    code, out = _cli(["check", "--root", str(ctx.root), *FAST, "--html"], env=bin.env())
    return Page("check-mismatch", out, "error", code)


def recommend_h200(tmp: Path) -> Page:
    from envdoctor.render.plan_page import plan_page

    return Page("recommend", plan_page(stamp(_recorded("recommend"), 0)), "install torch 2.13.0 cu130", 0)


def recommend_nothing_fits(tmp: Path) -> Page:
    code, out = _cli(
        [
            "recommend",
            "--offline",
            "--html",
            "--gpu",
            "RTX 3090",
            "--driver",
            "450.51.06",
            "--os",
            "ubuntu:20.04",
            "--python-version",
            "3.10",
        ]
    )
    return Page("recommend-nothing-fits", out, "nothing fits", code)


def bench_h200x2(tmp: Path) -> Page:
    from envdoctor.bench.page import bench_page

    doc = json.loads(BENCH_2X.read_text())
    return Page("bench", bench_page(stamp(doc, 0)), "Tensor Cores confirmed", 0)


def bench_replayed(tmp: Path) -> Page:
    """bench --html of the recorded H200 run (matmul and memory), replayed by a fake target."""
    from tests.test_bench_fakes import recorded_run, replay

    code, out = _cli(["bench", "--python", replay(tmp, recorded_run("default")), "--html"])
    return Page("bench-replayed", out, "points measured", code)


def bench_suites(tmp: Path) -> Page:
    """The H200's `bench --suite all` (matmul, memory bandwidth, layers) as bench's host side reads it."""
    from envdoctor.bench.command import exit_code
    from envdoctor.bench.page import bench_page
    from envdoctor.facts.serde import to_data
    from tests.test_bench_suites_h200 import analysed

    result = analysed()
    return Page(
        "bench-suites", bench_page(stamp(to_data(result), exit_code(result))), "points measured", exit_code(result)
    )


def burn_h200(tmp: Path) -> Page:
    from envdoctor.burn.command import exit_code
    from envdoctor.burn.page import burn_page
    from envdoctor.burn.rules import judge
    from envdoctor.facts.serde import to_data
    from envdoctor.table.health import load_health
    from tests.test_burn_fakes import h200_gpu, result_of

    result = judge(result_of(h200_gpu()), load_health())
    return Page("burn", burn_page(stamp(to_data(result), exit_code(result))), "GPU 0 NVIDIA H200 OK", 0)


def fit_h200(tmp: Path) -> Page:
    code, out = _cli(["fit", "Llama-3.1-8B", "--train", "--gpu", "H200", "--gpu", "RTX 4090", "--html"])
    return Page("fit", out, "does not fit NVIDIA GeForce RTX 4090", code)


def topo_h200(tmp: Path) -> Page:
    from envdoctor.links.page_topo import topo_page

    return Page("topo", topo_page(stamp(_recorded("topo"), 0)), "1 GPU, every link as expected", 0)


def topo_eight(tmp: Path) -> Page:
    """topo --html of eight H200s behind NVSwitch, from nvidia-smi topo -m (a path matrix)."""
    from tests.test_links_cli import _eight_h200_root

    root, env = _eight_h200_root(tmp)
    code, out = _cli(["topo", "--root", str(root), "--html"], env=env)
    return Page("topo-8", out, "8 GPUs", code)


def comms_h200(tmp: Path) -> Page:
    from envdoctor.links.page_comms import comms_page

    doc = _recorded("comms")
    return Page("comms", comms_page(stamp(doc, 0)), "every result right", 0)


def fleet_drifted(tmp: Path) -> Page:
    import tests.fleetdocs as fd

    base = fd.gpus(fd.h200(), 8)
    r = tmp / "r"
    fd.write(r / "gpu-01", fd.host(base, "gpu-01"))
    fd.write(r / "gpu-02", fd.host(base, "gpu-02"))
    fd.write(r / "gpu-03", fd.host(fd.driver(base, "570.133.20", "12.8"), "gpu-03"))
    fd.write(r / "gpu-04", fd.host(fd.gpus(fd.h200(), 7), "gpu-04"))
    fd.write(r / "gpu-05", fd.host(fd.torch(base, "2.10.0+cu128", "12.8", "9.10.2", "2.27.3"), "gpu-05"))
    code, out = _cli(["fleet", str(r), "--html"])
    return Page("fleet", out, "5 nodes, 3 deviate", code)


def fleet_h200(tmp: Path) -> Page:
    from envdoctor.fleet.page import fleet_page

    doc = json.loads((H200 / "fleet-comms-1rank.json").read_text())
    return Page("fleet-comms-1rank", fleet_page(stamp(doc, 0)), "1 nodes: the nodes agree", 0)


def fleet_of(n: int, odd_every: int = 10) -> str:
    """The fleet page of ``n`` eight-GPU H200 nodes, every ``odd_every``-th one on driver 570."""
    import tests.fleetdocs as fd
    from envdoctor.documents import stamp as stamp_
    from envdoctor.fleet.facts import Document, NodeInput
    from envdoctor.fleet.merge import merge
    from envdoctor.fleet.page import fleet_page
    from envdoctor.fleet.render import fleet_document
    from envdoctor.redact import mask_data

    base = fd.gpus(fd.h200(), 8)
    old = fd.driver(base, "570.133.20", "12.8")
    inputs = [
        NodeInput(
            (Document("report", fd.host(old if i % odd_every == 3 else base, f"n{i:04d}"), f"n{i:04d}"),),
            ((f"n{i:04d}", "folder"),),
        )
        for i in range(n)
    ]
    fleet, _ = merge(inputs, redact_names=True)
    doc = fleet_document(fleet)
    return fleet_page(stamp_(mask_data(doc), doc["summary"]["exit_code"]))


def verify_h200(tmp: Path) -> Page:
    import os
    from unittest import mock

    from tests.machines import h200

    ctx = h200(tmp / "m")
    with (
        mock.patch("socket.gethostname", lambda: "h200-vm"),
        mock.patch.dict(os.environ, {"ENVDOCTOR_STATE_DIR": str(tmp / "state")}),
    ):
        code, out = _cli(
            ["verify", "--root", str(ctx.root), "--baseline", str(SNAPSHOT), *FAST, "--html"], env=dict(ctx.env)
        )
    return Page("verify", out, "nothing regressed since the snapshot", code)


def diag_h200(tmp: Path) -> Page:
    from envdoctor.diag.page import diag_page

    return Page("diag-r2", diag_page(_recorded("diag-r2")), "PASS: level 2 (medium)", 0)


def profile_gpt2(tmp: Path) -> Page:
    from envdoctor.profile.page import profile_page

    doc = json.loads(recorded(H200 / "profile" / "gpt2-train.json"))
    return Page("profile-gpt2", profile_page(doc), "55.5 ms per step, MFU 13.0 %", 0)


PAGES: Dict[str, Callable[[Path], Page]] = {
    "check": check_h200,
    "check-mismatch": check_mismatch,
    "recommend": recommend_h200,
    "recommend-nothing-fits": recommend_nothing_fits,
    "bench": bench_h200x2,
    "bench-replayed": bench_replayed,
    "bench-suites": bench_suites,
    "burn": burn_h200,
    "fit": fit_h200,
    "topo": topo_h200,
    "topo-8": topo_eight,
    "comms": comms_h200,
    "fleet": fleet_drifted,
    "fleet-comms-1rank": fleet_h200,
    "verify": verify_h200,
    "diag-r2": diag_h200,
    "profile-gpt2": profile_gpt2,
}
#: the pages written to docs/examples/h200/ (from the H200's own recordings and runs rebuilt from them)
EXAMPLES = (
    "check",
    "recommend",
    "bench",
    "bench-suites",
    "burn",
    "fit",
    "topo",
    "comms",
    "fleet-comms-1rank",
    "verify",
    "diag-r2",
    "profile-gpt2",
)

"""Issue 24's last pages: ``diag --html`` and ``profile --html``. Rendered from the H200's recorded
documents (docs/examples/h200/diag-r2.json, profile/gpt2-train.json, profile/nanogpt.json), from a
diag run whose burn miscompares (the fake target of tests/test_diag_levels.py, through the CLI and
``-o``), and from real CPU runs (diag with no GPU; profile of tests/fixtures/profile/ under the
real CPU torch). Each read by the real parser (tests/htmlcheck.py); two opened in Chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.diag.page import diag_page, threshold_text, verdict_text
from envdoctor.documents import stamp
from envdoctor.profile.page import breakdown_parts, profile_page
from tests.browser import open_page
from tests.htmlcheck import check_page
from tests.htmlpages import H200
from tests.test_burn_fakes import miscompare_steps
from tests.test_diag_levels import nvml, target  # noqa: F401  (nvml is a fixture)
from tests.test_profile_cli import FIX as PROFILE_SCRIPTS
from tests.test_profile_cli import env_clean
from tests.torchtest import needs_torch


def _doc(name: str) -> dict:
    return json.loads((H200 / name).read_text())


def _rows(html: str, table_id: str) -> list:
    body = html[html.index(f'<table id="{table_id}"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body)
    ]


def test_the_h200_diag_page_has_every_test_with_figure_threshold_and_source():
    doc = _doc("diag-r2.json")
    html = diag_page(doc)
    read = check_page(html)
    assert "OK" in read.text and "PASS: level 2 (medium) on node <host>, 53.6 s" in read.text
    node = _rows(html, "tests-node")
    gpu = _rows(html, "tests-gpu-0")
    assert [r[0] for r in node] == ["check", "topo", "fabric"]
    assert len(node) + len(gpu) == len(doc["tests"]) == 11
    matmul = next(r for r in gpu if r[0] == "matmul")
    assert matmul[1:4] == ["PASS", "668.6 TFLOP/s", "&gt;= 600 TFLOP/s"] and "docs/benchmarks.md" in matmul[5]
    bandwidth = next(r for r in gpu if r[0] == "memory_bandwidth")
    assert bandwidth[3] == "&gt;= 3120 GB/s, warn under 3840"
    assert "mlx5_ib" in read.text and "143771" in read.text  # fabric facts and the live state
    for secret in ("7310385a-6c2a-66fb-a00a-6a63e850db44", ">vm<", "node vm"):
        assert secret not in html, secret
    assert read.document["hostname"] == "<host>"


def test_a_failing_diag_names_the_failing_test_first_and_shows_its_fix():
    doc = _doc("diag-r2.json")
    burn = next(t for t in doc["tests"] if t["name"] == "burn")
    burn.update(status="FAIL", detail="30 s, 5705 products, 7 miscompares (bitwise); FAULTY", codes=["ED800"])
    doc.update(
        verdict="FAIL",
        failed=["burn (GPU 0)"],
        findings=[
            {
                "code": "ED800",
                "severity": "error",
                "title": "GPU 0 returned wrong matrix products",
                "evidence": ["7 of 5705 products differ bit for bit"],
                "fix": ["drain the node: scontrol update ..."],
                "reference": "docs/burn.md",
            }
        ],
    )
    doc["gpus"][0].update(verdict="FAIL", failed=["burn"])
    doc["summary"].update(verdict="FAIL", exit_code=1, passed=10, failed=1)
    html = diag_page(doc)
    read = check_page(html)
    assert 'data-exit="1"' in html and "PROBLEM" in read.text
    assert "FAIL: burn (GPU 0) (level 2 (medium) on node <host>" in read.text
    assert html.index("burn (GPU 0)") < html.index("<main>")  # named in the banner
    assert '<td class="error">FAIL</td>' in html
    assert '<pre class="fix"><code>drain the node: scontrol update ...</code></pre>' in html
    assert "GPU 0 NVIDIA H200 (00000000:00:06.0): FAIL (burn)" in read.text


def test_diag_html_through_the_cli_writes_the_page_of_a_failing_burn(tmp_path, nvml):  # noqa: F811
    steps = miscompare_steps()
    out = tmp_path / "diag.html"
    r = CliRunner().invoke(cli, ["diag", "-r", "2", "--python", target(tmp_path, steps), "--html", "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert f"wrote {out}" in r.output and "verdict: FAIL:" in r.output
    read = check_page(out.read_text())
    assert read.document["summary"]["exit_code"] == 1 and read.document["verdict"] == "FAIL"
    assert "burn (GPU 0)" in read.text and "ED800" in read.text
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".html"] == ["diag.html"]


@needs_torch
def test_diag_html_of_a_cpu_machine_is_a_page_saying_why_it_could_not_run(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML on this machine
    out = tmp_path / "diag.html"
    r = CliRunner().invoke(
        cli,
        ["diag", "--python", sys.executable, "--html", "-o", str(out)],
        env={"HOME": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""},
    )
    assert r.exit_code == 2, r.output
    html = out.read_text()
    read = check_page(html)
    assert 'data-exit="2"' in html and "COULD NOT RUN" in read.text and "NO_GPU" in read.text
    assert read.document["summary"]["exit_code"] == 2


def test_the_h200_profile_page_draws_the_breakdown_against_the_step():
    doc = _doc("profile/gpt2-train.json")
    html = profile_page(doc)
    read = check_page(html)
    assert "55.5 ms per step, MFU 13.0 %, no findings" in read.text
    assert html.index('id="findings"') < html.index('id="steps"') < html.index('id="breakdown-section"')
    parts = dict(breakdown_parts(doc["breakdown"]))
    assert list(parts) == ["elementwise/norm", "matmul", "attention", "conv", "copy memset", "copy D2H", "idle"]
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="28" width="([\d.]+)"', html)]
    assert len(widths) == 7 and abs(widths[1] / widths[0] - 18.732 / 28.834) < 0.01
    limit_x = float(re.search(r'<line x1="([\d.]+)" x2="[\d.]+" y1="22"', html).group(1))
    assert abs(limit_x - (10 + sum(widths))) < 2  # the parts fill the step
    assert _rows(html, "syncs")[0][:2] == [".item()", "tests/fixtures/profile/h200_gpt2_train.py:20"]
    assert "128.9" in read.text and "989" in read.text and "13.0 %" in read.text


def test_the_nanogpt_profile_page_puts_its_advice_first_with_the_fixes_to_copy():
    html = profile_page(_doc("profile/nanogpt.json"))
    read = check_page(html)
    assert "advice: ED943, ED945" in read.text
    assert html.index('id="ED943"') < html.index('id="steps"')
    assert "torch.optim.AdamW(model.parameters(), ..., fused=True)" in html


def test_threshold_text_and_the_two_formats_at_once():
    assert threshold_text({"compare": "==", "threshold": 0.0, "unit": "processes"}) == "== 0 processes"
    assert threshold_text({"threshold": None}) == "-"
    assert verdict_text({"verdict": "NO_GPU", "error": {"message": "no GPU"}, "level": 1}) == "NO_GPU: no GPU (level 1)"
    for args in (["diag", "--json", "--html"], ["profile", "--json", "--html", "--", "python", "x.py"]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and "choose one of --json, --html" in r.output, args


@pytest.mark.parametrize("render", [diag_page, profile_page])
@pytest.mark.parametrize(
    "doc",
    [
        {},
        {
            "tests": [None, {"gpu": "x"}],
            "gpus": [{"index": None}],
            "breakdown": {"compute": [{"name": None, "seconds": "x"}], "step_s": None},
            "steps": {"mean_s": None},
            "syncs": [None],
            "state": {"gpus": [None]},
            "fabric": {"adapters": [None]},
            "error": {"message": "no torch"},
        },
    ],
    ids=["empty", "odd"],
)
def test_a_page_of_little_or_odd_is_still_a_page(render, doc):
    html = render(stamp({"schema": "envdoctor.diag/1", **doc}, 2))
    read = check_page(html)
    assert 'data-exit="2"' in html and "COULD NOT RUN" in read.text


@needs_torch
def test_profile_html_of_a_real_cpu_run(tmp_path):
    out = tmp_path / "profile.html"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "envdoctor",
            "profile",
            "--steps",
            "4",
            "--html",
            "-o",
            str(out),
            "--",
            sys.executable,
            "item_every_step.py",
        ],
        env=env_clean(HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=str(PROFILE_SCRIPTS),
    )
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}" in r.stderr and r.stdout == ""
    html = out.read_text()
    read = check_page(html)
    assert read.document["breakdown"]["device"] == "cpu" and "ms per step" in read.text
    assert "ED941" in read.text and "item_every_step.py" in read.text
    assert "one step on cpu: where the time goes" in html


@pytest.mark.parametrize("name", ["diag-r2.html", "profile-gpt2.html"])
def test_the_example_pages_open_in_chromium_with_the_verdict_visible(name, tmp_path):
    path = tmp_path / name
    path.write_text((H200 / name).read_text())
    opened = open_page(path)
    assert opened.console == [] and 'data-ready="1"' in opened.dom
    verdict = re.search(r'<div class="verdict[^"]*" id="verdict"[^>]*>(.*?)</div>', opened.dom, re.S)
    assert verdict and ("PASS: level 2" in verdict.group(1) or "ms per step" in verdict.group(1))

"""The report ``envdoctor check --json`` printed on the real H200, read back by this envdoctor.

tests/fixtures/h200-driver580-cuda13/envdoctor-check.json was recorded by benchmarks/record_h200.sh
(torch 2.11.0+cu130, driver 580.159.04, one H200). Re-evaluating its facts must give what the
machine itself said (no finding), and planning from it must pick a build that driver runs.
"""

import json

from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.report import parse_report
from envdoctor.rules import evaluate
from envdoctor.table import load_table
from tests.documents import validate
from tests.fakes import FIXTURES

REPORT = FIXTURES / "h200-driver580-cuda13" / "envdoctor-check.json"


def test_recorded_report_follows_the_schema_and_reads_back():
    validate(json.loads(REPORT.read_text()), "report")
    facts, findings, _ = parse_report(REPORT.read_text())
    assert findings == ()
    assert facts.driver.driver_version == "580.159.04" and facts.driver.driver_cuda == "13.0"
    assert facts.torch.version == "2.11.0+cu130" and facts.torch.cuda_available is True
    # the cuDNN torch loaded is the wheel's 9.19, not the system's 9.14 in /usr/lib/x86_64-linux-gnu
    assert facts.torch.cudnn_version == "9.19.0" and "site-packages/nvidia/cudnn" in facts.torch.cudnn_path


def test_rules_on_the_recorded_facts_agree_with_the_machine():
    facts, _, _ = parse_report(REPORT.read_text())
    assert evaluate(facts, load_table()) == ()


def test_recommend_from_the_recorded_report():
    r = CliRunner().invoke(cli, ["recommend", "--from", str(REPORT), "--offline", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    validate(plan, "plan")
    assert plan["schema"] == "envdoctor.plan/1" and plan["compatibility"] == "direct"
    assert plan["variant"].startswith("cu13")  # driver 580 runs CUDA 13.x directly
    assert plan["commands"][0].startswith("/opt/torch/.venv/bin/python3 -m pip install torch==")

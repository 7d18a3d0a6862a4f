"""Every finding that sends the user to ``envdoctor recommend`` must be answered there by a change.

Was (issue 26): ED206 (no kernels for this GPU) said "envdoctor recommend", and recommend said the
torch there "works ...; nothing needs to change" (an optional upgrade). The walk below takes every
code whose registry fix names recommend (envdoctor/codes.py), fires it on a machine made from the
H200's recorded report (tests/fixtures/h200-driver580-cuda13) changed where that code is about, and
checks that recommend on that machine then changes something: a plan with commands that replace or
install torch, never "nothing needs to change".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Tuple

from envdoctor.advise.machine import machine_from_facts
from envdoctor.advise.recommend import recommend
from envdoctor.bench.analysis import verdict
from envdoctor.bench.facts import BenchDevice, BenchResult
from envdoctor.bench.rules import bench_findings
from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, PciFacts
from envdoctor.facts.python import TorchFacts
from envdoctor.findings import Finding
from envdoctor.inspect import enrich
from envdoctor.render.plan import now_text
from envdoctor.report import parse_report
from envdoctor.rules import evaluate
from envdoctor.table import load_table
from envdoctor.verify import compare

REPORT = Path(__file__).parent / "fixtures/h200-driver580-cuda13/envdoctor-check.json"
NAMES = "envdoctor recommend"


def _h200() -> Facts:
    facts, _, _ = parse_report(REPORT.read_text(), str(REPORT))
    return facts


def _torch(f: Facts, **kw) -> Facts:
    return replace(f, torch=replace(f.torch, **kw))


def _driver(f: Facts, **kw) -> Facts:
    return replace(f, driver=replace(f.driver, **kw))


def _machines() -> Dict[str, Tuple[Facts, List[Finding]]]:
    """code -> (the machine it fires on, the findings that machine gets from its own tool)."""
    table = load_table()
    h200 = _h200()
    cpu_torch = _torch(
        h200, version="2.11.0+cpu", cuda=None, arch_list=(), cuda_available=False, tiny_op=None, devices=()
    )
    no_gpu = replace(h200, driver=DriverFacts(), pci=PciFacts(devices=(), source="/sys/bus/pci/devices"))
    old_driver = _driver(h200, driver_version="535.104.05", driver_cuda="12.2")
    machines: Dict[str, Facts] = {
        "ED101": _torch(
            replace(h200, driver=DriverFacts(), system=replace(h200.system, container=None)),
            cuda_available=False,
            tiny_op=None,
            cuda_error="Found no NVIDIA driver on your system",
        ),
        "ED112": replace(no_gpu, torch=TorchFacts(installed=False)),  # no GPU and no torch yet
        "ED203": replace(h200, torch=TorchFacts(installed=False)),
        "ED204": cpu_torch,
        "ED205": _torch(old_driver, cuda_available=False, tiny_op=None),
        "ED206": _torch(h200, arch_list=("sm_75", "sm_80", "sm_86")),  # imported, tiny op ran on it
    }
    out = {code: (enrich(f, table), list(evaluate(enrich(f, table), table))) for code, f in machines.items()}
    bench = BenchResult(verdicts=(verdict(BenchDevice(0, kind="cpu"), [], torch_version="2.11.0+cpu", nvml_gpus=1),))
    out["ED600"] = (enrich(cpu_torch, table), list(bench_findings(bench)))
    after = enrich(_torch(old_driver, cuda_available=False, tiny_op=None), table)  # the driver went back
    out["ED705"] = (after, list(compare(enrich(h200, table), after).regressions))
    return out


def _names_recommend(f: Finding) -> bool:
    return any(NAMES in x for x in (*f.fix, *f.evidence, f.explanation or ""))


def test_every_code_whose_fix_names_recommend_gets_a_change_from_recommend():
    table = load_table()
    walked = _machines()
    registry = {c for c, e in CODES.items() if NAMES in e.fix}
    assert registry <= set(walked), f"a machine for each of {sorted(registry - set(walked))}"
    for code, (facts, findings) in sorted(walked.items()):
        assert code in {f.code for f in findings}, (code, [f.code for f in findings])
        named = {f.code for f in findings if _names_recommend(f)} | {code}  # the registry names it for code
        plan = recommend(machine_from_facts(facts, table, origin=f"report {REPORT}"), table)
        said = now_text(plan) or ""
        assert plan.ok and plan.commands and not plan.installed, (sorted(named), plan.status, plan.reasons)
        assert not plan.optional and not said.endswith("nothing needs to change"), (sorted(named), said)


def test_ed112_on_a_cpu_machine_whose_cpu_torch_works_sends_nobody_to_recommend():
    table = load_table()
    f = enrich(
        replace(
            _h200(),
            driver=DriverFacts(),
            pci=PciFacts(devices=(), source="/sys/bus/pci/devices"),
            torch=replace(
                _h200().torch,
                version="2.11.0+cpu",
                cuda=None,
                arch_list=(),
                cuda_available=False,
                tiny_op=None,
                devices=(),
            ),
        ),
        table,
    )
    (ed112,) = [x for x in evaluate(f, table) if x.code == "ED112"]
    assert not _names_recommend(ed112)

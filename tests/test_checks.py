"""The one check runner (envdoctor/checks.py): tables loaded once, one ED901 for a broken data file,
one ED900 naming a crashing rule, ``--suppress`` in one place and on the commands that print findings."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from envdoctor import checks
from envdoctor.cli import cli
from envdoctor.facts import Facts
from envdoctor.links import probe as links
from envdoctor.links.table import load_links
from envdoctor.rules import evaluate
from envdoctor.table import load_table
from tests.fakes import recorded
from tests.linkmachines import context, pcie_pair
from tests.tables import FROZEN
from tests.test_links_cli import _eight_h200_root, _topo, _with_cells


def _broken_data(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(FROZEN, data)
    text = (data / "links.toml").read_text()
    (data / "links.toml").write_text(text.replace("x16_gbps = 63.02", "x16_gbps = 64.02", 1))
    monkeypatch.setenv("ENVDOCTOR_DATA", str(data))
    return data


def test_a_broken_links_toml_is_one_table_finding_not_a_crash_per_rule(tmp_path, monkeypatch):
    """Before: four links rules each loaded links.toml and each crashed: four ED900 "bug in envdoctor"."""
    facts = Facts(links=links.probe(context(tmp_path / "m", pcie_pair(), 2, gen=4)))
    table = load_table()
    _broken_data(tmp_path, monkeypatch)
    found = evaluate(facts, table)
    assert [f.code for f in found if f.area == "envdoctor"] == ["ED901"], found
    (ed901,) = [f for f in found if f.code == "ED901"]
    assert "data/links.toml: [[pcie]] 5: field 'x16_gbps'" in ed901.evidence[0]
    assert "data/links.toml" in (ed901.explanation or "")


def test_the_links_table_is_loaded_once_per_run(tmp_path, monkeypatch):
    calls = []

    def counting():
        calls.append(1)
        return load_links()

    monkeypatch.setitem(checks.LOADERS, "links", "tests.test_checks:_LOADER")
    monkeypatch.setattr("tests.test_checks._LOADER", counting, raising=False)
    from envdoctor.links.rules_topo import RULES

    checks.run(RULES, Facts(links=links.probe(context(tmp_path, pcie_pair(), 2, gen=4))), load_table())
    assert len(calls) == 1


def test_a_crashing_rule_is_one_ed900_naming_the_rule_and_the_others_still_run():
    def fine(facts, table):
        yield checks.table_broken("just a finding")

    def broken(facts, table):
        raise KeyError("gpu")

    found = checks.run([broken, fine], Facts(), None)
    assert [f.code for f in found] == ["ED900", "ED901"]
    assert (
        "tests.test_checks.test_a_crashing_rule_is_one_ed900_naming_the_rule_and_the_others_still_run"
        ".<locals>.broken: KeyError: 'gpu'" in found[0].title
    )
    assert found[0].title.startswith("One of envdoctor's checks failed")  # the title of codes.py


def test_suppression_is_split_off_in_one_place_and_normalised():
    one = checks.table_broken("x")
    done = checks.split([one], [" ed901 , ED900", "ED901"])
    assert done.shown == () and done.hidden == (one,)
    assert checks.suppressed_codes([" ed901 , ED900", "ED901"]) == ("ED901", "ED900")
    assert checks.bad_codes(["ed9999"]) == "ed9999: finding codes look like ED305"
    assert checks.bad_codes(["ED999"]) and checks.bad_codes(["ed901, ED900"]) is None


def test_topo_takes_suppress_like_check(tmp_path):
    """topo printed findings but had no --suppress; now it has check's, validated the same way."""
    text = _with_cells(recorded("public-nvidia-smi-topo", "nvswitch-8gpu-nv18.txt"), {(0, 1): "NV12", (2, 5): "SYS"})
    root, env = _eight_h200_root(tmp_path, text)
    doc = json.loads(_topo(root, env, "--json", "--suppress", "ed848").output)
    assert [f["code"] for f in doc["findings"]] == ["ED851"]
    r = CliRunner().invoke(cli, ["topo", "--root", str(root), "--suppress", "ED9x"], env=env)
    assert r.exit_code == 2 and "finding codes look like ED305" in r.output


def test_comms_verdicts_with_a_broken_links_toml_still_name_the_hung_rank(tmp_path, monkeypatch):
    """Before: verdicts() loaded links.toml first and raised, so a broken file hid every comms
    finding (ED900 exit 3); now it is one ED901 and the rules that need no table still speak."""
    from envdoctor.links.rules_comms import verdicts
    from tests.test_comms_result import _result, failed_run, hung_run

    runs = [failed_run(i, 40.0 + i) for i in range(8)]
    runs[3] = hung_run(3)
    r = _result(tmp_path / "r", runs)
    _broken_data(tmp_path, monkeypatch)
    codes = [f.code for f in verdicts(r)]
    assert "ED873" in codes and codes.count("ED901") == 1 and "ED900" not in codes


def test_one_nvml_session_for_the_driver_gpu_state_and_links_probes(tmp_path):
    """Each of the three probes opened and shut down NVML on its own (three nvmlInit a check); one
    session now, opened by the first probe and closed after the last."""
    from envdoctor.probes import collect
    from tests.machines import h200

    ctx = h200(tmp_path)
    facts = collect(ctx, skip=("torch", "python", "conda", "docker", "toolkits"))
    nv = ctx.nvml
    assert nv.calls.count("nvmlInit") == 1 and nv.calls.count("nvmlShutdown") == 1, nv.calls[:5]
    assert nv.calls[-1] == "nvmlShutdown"
    assert facts.driver.gpus and facts.links.gpus and facts.gpu_state.gpus  # each probe still read its part


#: Every command that prints findings, and an argument list that gets it past Click's parsing.
FINDING_COMMANDS = ["check", "topo", "comms", "verify", "bench", "burn", "fit", "profile", "dockerfile"]


def test_every_command_that_prints_findings_takes_suppress_validated_like_check():
    """Only check had --suppress; now each of these takes it, and a typo is exit 2 before any work."""
    for name in FINDING_COMMANDS:
        extra = ["Dockerfile"] if name == "dockerfile" else ["--", "python", "x.py"] if name == "profile" else []
        r = CliRunner().invoke(cli, [name, "--suppress", "ED99", *extra])
        assert r.exit_code == 2 and "ED99: finding codes look like ED305" in r.output, (name, r.output)
        r = CliRunner().invoke(cli, [name, "--suppress", "ED999", *extra])
        assert r.exit_code == 2 and "ED999: no such finding code" in r.output, (name, r.output)


def test_dockerfile_suppress_hides_the_finding_and_its_exit_code():
    from tests.test_dockerfile import lint

    code, found, _ = lint("vllm-style.Dockerfile", "--driver", "470.82.01")
    errors = sorted({c for c, severity, _ in found if severity == "error"})
    assert code == 1 and errors, found
    code, hidden, _ = lint(
        "vllm-style.Dockerfile", "--driver", "470.82.01", *[a for c in errors for a in ("--suppress", c)]
    )
    assert code == 0 and not {c for c, _, _ in hidden} & set(errors)


def test_the_suppressed_block_is_one_shape_for_check_fleet_and_diag():
    """check's and fleet's documents build their ``suppressed`` key with checks.hidden_block, diag's
    is checks.hidden's Suppressed: the same two keys, the codes as --suppress normalises them."""
    from envdoctor.facts.serde import to_data
    from envdoctor.findings import Finding

    hid = [Finding("ED112", "info", "No NVIDIA GPU on this machine")]
    block = checks.hidden_block(["ed112, ED105", "ED112"], hid)
    assert block == to_data(checks.hidden(["ed112, ED105", "ED112"], hid))
    assert block["codes"] == ["ED112", "ED105"] and [f["code"] for f in block["findings"]] == ["ED112"]
    with_node = checks.hidden_block(["ED112"], [("gpu-03", hid[0])], lambda x: dict({"node": x[0]}, **to_data(x[1])))
    assert with_node["findings"][0]["node"] == "gpu-03" and with_node["findings"][0]["code"] == "ED112"
    assert checks.hidden_block([], hid) is None and checks.hidden([], hid) is None

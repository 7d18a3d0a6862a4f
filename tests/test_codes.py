"""The code registry (envdoctor/codes.py) and the source agree, and ``envdoctor explain`` answers for each.

The source is read as Python (ast): every string that is exactly a code ("ED205") counts as a use;
every ``Finding("ED205", "error", ..., area=..., reference=...)`` call gives the severities, area
and references that code is emitted with, where they are written as literals or module constants.
"""

import ast
import importlib
import re
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.codes import CODES, RANGES, lookup, range_of

PACKAGE = Path(__file__).resolve().parent.parent / "envdoctor"
CODE = re.compile(r"ED\d{3}")
UNKNOWN = object()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "codes.py" and path.parent == PACKAGE:
            continue
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _literals(node):
    """The string values an expression can take, or UNKNOWN (a variable, a call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        a, b = _literals(node.body), _literals(node.orelse)
        return UNKNOWN if UNKNOWN in (a, b) else a + b
    return UNKNOWN


def _constant(node, path):
    """A module-level constant (REF_X, commands.DRIVER_GUIDE) evaluated in its module; else UNKNOWN."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        module = importlib.import_module(_module_name(path))
        try:
            return eval(compile(ast.Expression(node), str(path), "eval"), vars(module))  # noqa: S307
        except NameError:
            return UNKNOWN
    return UNKNOWN


def _emissions():
    """code -> list of (severities or UNKNOWN, area or UNKNOWN, reference or UNKNOWN/None, where)."""
    found = defaultdict(list)
    for path, tree in _sources():
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Finding"
                and node.args
            ):
                continue
            codes = _literals(node.args[0])
            if codes is UNKNOWN or not all(CODE.fullmatch(c) for c in codes):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            sev_node = node.args[1] if len(node.args) > 1 else kw.get("severity")
            severities = _literals(sev_node) if sev_node is not None else UNKNOWN
            area = _constant(kw["area"], path) if "area" in kw else None
            ref = _constant(kw["reference"], path) if "reference" in kw else None
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            if len(codes) > 1 and severities is not UNKNOWN and len(severities) == len(codes):
                pairs = [(c, [s]) for c, s in zip(codes, severities)]  # "ED301" if major else "ED302"
            else:
                pairs = [(c, severities) for c in codes]
            for code, sev in pairs:
                found[code].append((sev, area, ref, where))
    return found


def _used_codes():
    used = {}
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
                used.setdefault(node.value, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return used


EMITTED = _emissions()


def test_every_code_in_the_source_is_in_the_registry():
    missing = {code: where for code, where in _used_codes().items() if code not in CODES}
    assert not missing, f"add these to envdoctor/codes.py: {missing}"


def test_every_registered_code_is_used_in_the_source():
    unused = sorted(set(CODES) - set(_used_codes()))
    assert not unused, f"registered but emitted nowhere: {unused}"


def test_the_scan_sees_the_findings_it_should():
    # guards the test itself: the AST walk must find the known emitters
    assert len(EMITTED) >= 60
    assert {"ED101", "ED205", "ED301", "ED302", "ED701", "ED901"} <= set(EMITTED)
    assert [s for s, *_ in EMITTED["ED302"]] == [["warning"]]


@pytest.mark.parametrize("code", sorted(CODES))
def test_registry_matches_how_the_code_is_emitted(code):
    entry = CODES[code]
    uses = EMITTED.get(code, [])
    for severities, area, ref, where in uses:
        if severities is not UNKNOWN:
            assert set(severities) <= set(entry.severities), f"{where}: {severities} not in {entry.severities}"
        if area is not UNKNOWN:
            assert area == entry.area, f"{where}: area {area!r}, registry {entry.area!r}"
        if ref is not UNKNOWN and ref is not None:
            assert ref in entry.references, f"{where}: reference {ref} not in the registry"
    if uses and all(s is not UNKNOWN for s, *_ in uses):
        emitted = {s for severities, *_ in uses for s in severities}
        assert emitted == set(entry.severities), f"{code}: emitted as {emitted}, registry {entry.severities}"
    if uses and all(r is not UNKNOWN for _, _, r, _ in uses):
        refs = {r for _, _, r, _ in uses if r}
        assert refs == set(entry.references), f"{code}: emitted with {refs}, registry {entry.references}"


def test_codes_sit_in_their_ranges_and_reserved_ranges_are_empty():
    for code in CODES:
        assert range_of(code) is not None, code
        assert not range_of(code).reserved, f"{code} is in a range marked reserved"
    spans = sorted((r.first, r.last) for r in RANGES)
    assert spans[0][0] == 100 and spans[-1][1] == 999
    assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:])), "ranges must not overlap or leave gaps"


def test_lookup_accepts_lower_case_and_rejects_garbage():
    assert lookup(" ed205 ").code == "ED205"
    assert lookup("ED999") is None and range_of("ED999").name == "envdoctor"
    assert range_of("ED12") is None and range_of("EDxyz") is None


@pytest.mark.parametrize("code", sorted(CODES))
def test_explain_answers_for_every_code(code):
    r = CliRunner().invoke(cli, ["explain", code.lower()])
    entry = CODES[code]
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"{code}  {entry.title}\n")
    assert f"  area       {entry.area}" in r.output and "What it means" in r.output and "Fix" in r.output
    for url in entry.references:
        assert f"  {url}\n" in r.output


def test_explain_ed205_by_hand():
    r = CliRunner().invoke(cli, ["explain", "ED205"])
    assert r.exit_code == 0
    assert "severity   error or warning" in r.output
    assert "area       torch (ED200-ED299" in r.output
    assert "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html" in r.output


def test_explain_without_a_code_lists_every_code():
    r = CliRunner().invoke(cli, ["explain"])
    assert r.exit_code == 0
    listed = [line[:5] for line in r.output.splitlines() if re.match(r"ED\d{3}  ", line)]
    assert listed == list(CODES)
    assert "ED750-ED799  fleet" in r.output
    assert CliRunner().invoke(cli, ["explain", "--list"]).output == r.output


@pytest.mark.parametrize(
    "arg, says", [("ED999", "ED970-ED999 are envdoctor codes"), ("ED8", "finding codes look like ED205")]
)
def test_explain_unknown_code_is_a_usage_error(arg, says):
    r = CliRunner().invoke(cli, ["explain", arg])
    assert r.exit_code == 2 and says in r.output and "envdoctor explain --list" in r.output


def test_no_rule_writes_a_title_of_the_registry_again():
    """A title that is the registry's word for word comes from it (``CODES[code].title``): written
    twice, the two drift apart. Before: 20 rules repeated theirs."""
    import ast
    from pathlib import Path

    from envdoctor.codes import CODES

    package = Path(__file__).resolve().parent.parent / "envdoctor"
    repeated = []
    for path in package.rglob("*.py"):
        if path.name == "codes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and len(node.args) >= 3 and isinstance(node.args[0], ast.Constant):
                code, title = node.args[0].value, node.args[2]
                if (
                    isinstance(code, str)
                    and code in CODES
                    and isinstance(title, ast.Constant)
                    and title.value == CODES[code].title
                ):
                    repeated.append(f"{path.relative_to(package)}:{node.lineno} {code}")
    assert repeated == []

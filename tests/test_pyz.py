"""envdoctor.pyz (tools/build_pyz.py) runs with nothing but a python3: no site-packages (-S), no
environment (-I, an empty env), from inside the archive.

The first build asks the package index (pip, as CI can); the dependencies are then kept in
~/.cache/envdoctor-tests/pyz-deps (or $XDG_CACHE_HOME), so later runs build in about a second.
"""

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tools.build_pyz import build

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "envdoctor/schemas/report-1.json").read_text())

#: What does not work from inside the archive yet, as the report shows it: "table" (ED901, the
#: table loader reads data/ through a file path) and "python" (the python probe reads
#: torch_child.py through a file path, so the probe crashes). Both are being made
#: resource-based in issue 11 (the table branch; the lead's child protocol). When one works,
#: this test fails: take it out of the set.
KNOWN_ZIP_GAPS: set = set()

pytestmark = pytest.mark.pyz


def _python39():
    """A Python 3.9 that really runs (a pyenv shim on PATH may not), or None."""
    for c in sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3")) + ["python3.9"]:
        try:
            ok = (
                subprocess.run(
                    [c, "-c", "import sys; assert sys.version_info[:2] == (3, 9)"], capture_output=True, timeout=30
                ).returncode
                == 0
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ok:
            return c
    return None


INTERPRETERS = [pytest.param(sys.executable, id="this-python"), pytest.param(_python39(), id="python3.9")]


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envdoctor-tests" / "pyz-deps"
    return build(tmp_path_factory.mktemp("pyz") / "envdoctor.pyz", cache=cache)


def run(python, pyz, *args, home):
    if python is None:
        pytest.skip("no Python 3.9 on this machine")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([python, "-I", "-S", str(pyz), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("python", INTERPRETERS)
def test_pyz_explains_a_code(pyz, python, tmp_path):
    r = run(python, pyz, "explain", "ED205", home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ED205  torch's CUDA is newer than the driver runs\n")


@pytest.mark.parametrize("python", INTERPRETERS)
def test_pyz_checks_the_machine(pyz, python, tmp_path):
    r = run(python, pyz, "check", "--skip", "torch", "--json", home=tmp_path)
    assert "Traceback" not in r.stderr and "ImportError" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    facts = doc["facts"]
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True
    ).stdout.strip()
    assert facts["system"]["python"] == version and facts["system"]["os_id"]
    gaps = {
        area
        for area in ("system", "pci", "driver", "toolkits", "conda", "docker", "python")
        if (facts[area].get("error") or {}).get("kind") == "crashed"
    }
    if any(f["code"] == "ED901" for f in doc["findings"]):
        gaps.add("table")
    assert gaps == KNOWN_ZIP_GAPS, r.stderr
    assert r.returncode in ((0, 1) if not gaps else (3,))


def test_pyz_refuses_python_38_in_one_line(pyz, tmp_path):
    old = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3"))
    if not old:
        pytest.skip("no Python 3.8 on this machine")
    r = run(old[0], pyz, "check", home=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("envdoctor needs Python 3.9 or newer; this is Python 3.8")

"""``check --skip torch`` imports only what its run needs: imports are a good part of its time.

The command runs in a fresh interpreter on the recorded H200 (its files, its nvidia-smi, its NVML
answers); the modules loaded by its end are compared with those it must not need.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

from tests.machines import h200

REPO = Path(__file__).resolve().parent.parent

#: What check's text report never needs: the advisor and the index client (recommend's), the
#: other commands' plugins, the other renderers, JSON Schema, HTTP; and on a machine whose NVML
#: answers and that has no RDMA device, the ``nvidia-smi topo -m`` parser.
NOT_NEEDED = (
    "envdoctor.advise",
    "envdoctor.wheels",
    "envdoctor.fit",
    "envdoctor.bench",
    "envdoctor.burn",
    "envdoctor.diag",
    "envdoctor.fleet",
    "envdoctor.profile",
    "envdoctor.dockerfile",
    "envdoctor.verify",
    "envdoctor.snapshot",
    "envdoctor.render.json",
    "envdoctor.render.markdown",
    "envdoctor.htmlpage",
    "envdoctor.render.check_page",
    "envdoctor.documents",
    "envdoctor.stack.target",
    "envdoctor.probes.interpreters",
    "envdoctor.parse.nvidia_topo",
    "jsonschema",
    "requests",
    "urllib3",
    "http.client",
    "ssl",
)

#: The parsers of what the recorded H200 has none of: no conda, no docker, podman or NVIDIA
#: Container Toolkit, no CDI spec, no CUDA toolkit; and getpass where USER is set.
ABSENT_HERE = ("envdoctor.parse.conda", "envdoctor.parse.docker", "envdoctor.parse.nvcc", "getpass")

PROGRAM = r"""
import atexit, dataclasses, json, sys
OUT = sys.argv[1]
def dump():
    with open(OUT, "w") as fh:
        json.dump(sorted(sys.modules), fh)
atexit.register(dump)
from tests.machines import FakeNvml
import envdoctor.clicore as clicore
made = clicore.make_context
def make_context(*args, **kwargs):   # the recorded NVML answers of the H200, as the tests' machine has
    return dataclasses.replace(made(*args, **kwargs), nvml=FakeNvml())
clicore.make_context = make_context
import envdoctor.cli.check
envdoctor.cli.check.make_context = make_context
from envdoctor.cli import main
args = ["check", "--skip", "torch", "--root", sys.argv[3]]
if sys.argv[2] == "own":             # as the program: ``envdoctor check ...``, main() reads sys.argv
    sys.argv = ["envdoctor"] + args
    main()
main(args)                           # a caller's: argv given, the process ends as usual (atexit runs)
"""


def _run(tmp_path: Path, how: str = "caller", env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    ctx = h200(tmp_path, env=env)
    out = tmp_path / "modules.json"
    env = {**ctx.env, "PYTHONPATH": str(REPO)}
    ran = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(out), how, str(ctx.root)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "NVIDIA H200" in ran.stdout and "(from nvml)" in ran.stdout  # NVML answered: the H200's path
    return ran


def _loaded(tmp_path: Path, env: Optional[Dict[str, str]] = None) -> list:
    _run(tmp_path, env=env)
    return json.loads((tmp_path / "modules.json").read_text())


def _under(module: str, names: tuple) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


def test_check_skip_torch_imports_none_of_what_it_does_not_need(tmp_path):
    loaded = _loaded(tmp_path)
    assert [m for m in loaded if _under(m, NOT_NEEDED)] == []
    # what it does need is there (the test would pass vacuously on a run that read nothing)
    assert {"envdoctor.probes.driver", "envdoctor.links.probe", "envdoctor.table", "pynvml"} <= set(loaded)


def test_check_skip_torch_imports_no_parser_of_a_program_the_machine_lacks(tmp_path):
    # PATH: the H200's fakes and only the programs they and the python probe need (a docker or
    # conda of the machine running the tests must not count)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("cat", "python3"):
        found = sys.executable if name == "python3" else shutil.which(name)
        assert found
        (tools / name).symlink_to(found)
    path = os.pathsep.join([str(tmp_path / "fakebin"), str(tools)])
    loaded = _loaded(tmp_path, {"PATH": path, "USER": "tester"})
    assert [m for m in loaded if _under(m, ABSENT_HERE)] == []
    assert {
        "envdoctor.probes.conda",
        "envdoctor.probes.docker",
        "envdoctor.probes.toolkit",
        "envdoctor.probes.system",
    } <= set(loaded)  # the probes ran, without them


def test_check_as_the_program_ends_at_once_with_the_same_report(tmp_path):
    """``envdoctor check`` ends its process once the report is written (clicore.finish: no
    interpreter teardown, so no atexit handler runs); called with argv it ends as usual. The
    report and the exit status are the same bytes either way."""
    caller = _run(tmp_path / "caller")
    own = _run(tmp_path / "own", "own")
    assert (tmp_path / "caller" / "modules.json").exists()  # atexit ran
    assert not (tmp_path / "own" / "modules.json").exists()  # ended at once
    assert own.stdout.replace(str(tmp_path / "own"), "T") == caller.stdout.replace(str(tmp_path / "caller"), "T")
    assert own.stderr == caller.stderr == ""
    assert "Verdict: no problems found." in own.stdout


def test_the_list_catches_a_module_that_is_loaded(tmp_path):
    assert _under("envdoctor.advise.plan", NOT_NEEDED) and _under("jsonschema", NOT_NEEDED)
    assert not _under("envdoctor.advisement", ("envdoctor.advise",))

"""What docs/cli.md promises: every ENVDOCTOR_* variable the code reads is documented, and shell
completion works the way it says."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs/cli.md").read_text()


def _variables_in(*folders):
    found = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".sh", "") and path.is_file() and "fixtures" not in path.parts:
                for name in re.findall(r"ENVDOCTOR_[A-Z][A-Z_]*[A-Z]", path.read_text(errors="replace")):
                    found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_envdoctor_variable_is_documented():
    used = _variables_in("envdoctor", "tests", "benchmarks", ".ci", "tools")
    used.pop("ENVDOCTOR_COMPLETE", None)  # part of _ENVDOCTOR_COMPLETE, Click's completion switch
    assert "ENVDOCTOR_ROOT" in used and "ENVDOCTOR_REQUIRE_TORCH" in used  # the scan works
    missing = {name: where for name, where in used.items() if f"`{name}`" not in DOC}
    assert not missing, f"document these in docs/cli.md: {missing}"


def complete(words, cword):
    env = {"_ENVDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    r = CliRunner().invoke(cli, [], env=env, prog_name="envdoctor")
    return [line.split(",", 1)[1] for line in r.output.splitlines()]


def test_completion_of_commands_options_and_choices():
    assert complete("envdoctor ", 1) == list(COMMANDS)
    assert complete("envdoctor ex", 1) == ["explain"]
    assert complete("envdoctor check --sk", 2) == ["--skip"]
    assert complete("envdoctor check --color ", 3) == ["auto", "always", "never"]


def test_completion_script_is_generated():
    r = CliRunner().invoke(cli, [], env={"_ENVDOCTOR_COMPLETE": "bash_source"}, prog_name="envdoctor")
    assert "_envdoctor_completion()" in r.output and "complete -o nosort -F _envdoctor_completion envdoctor" in r.output


def test_help_lists_every_command_without_importing_them():
    import subprocess
    import sys

    code = (
        "import sys\nfrom envdoctor.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('envdoctor.cli.')\n"
        "             or m.rpartition('.')[2].startswith('command')))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip().splitlines()[-1] == "[]"  # no command's module, the core commands' or a plugin's
    for name in COMMANDS:
        assert re.search(rf"^  {name} +\S", r.stdout, re.M), name


@pytest.mark.parametrize("argv", [["comms", "--inject", '{"rank": 1, "kind": "die"}'], ["burn", "--size", "64"]])
def test_test_only_switches_are_not_options_of_the_product(argv):
    # tests reach a hung, dying or corrupting rank and a small burn through the Python API
    # (run_comms(CommsOptions(inject=...)), run_burn(size=...)), not the command line
    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == 2 and "No such option" in r.output

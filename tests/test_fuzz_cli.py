"""Every option of every command against hostile values (issue 26 section 3): exit 2 with one line
saying what is wrong, or a normal answer (0 or 1); never exit 3, never a traceback.

The commands and their options are read from Click itself (``envdoctor.cli.COMMANDS``), so an
option added later is covered without a change here. Nothing real runs long: the target Python is
``/bin/false``, the machine is an empty ``--root`` with an empty PATH, indexes are ``--offline``, the
working folder and every state or cache folder are temporary, and any proxy points at a closed
local port (no test touches the internet).

``ENVDOCTOR_FUZZ_EXAMPLES`` sets the examples per command (the suite's run: 12).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.cli import COMMANDS, cli
from envdoctor.clicore import AsciiInt, Number

EXAMPLES = int(os.environ.get("ENVDOCTOR_FUZZ_EXAMPLES", "12"))

#: What a hostile or careless user types where a number, a name or a path is expected.
NUMBERS = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "0",
    "-0",
    "1e309",
    "1e-320",
    "9" * 400,
    "9" * 5000,
    "",
    " ",
    "\u00b2",
    "\u0663",
    "\uff11",
    "0x10",
    "1_0",
    "\u202e1",
]
#: (Bytes that are not UTF-8 arrive as lone surrogates, "\udcff": the tests of the output encoding
#: cover them in paths and arguments; they are not drawn here.)
HOSTILE = NUMBERS + [
    "x" * 5000,
    "a\x00b",
    "a\x1b[2Jb",
    "caf\u00e9",
    "\u05d0\u05d1",
    ",",
    "all,0,0",
    "0,0",
    "-",
    "--",
    "=",
    "~",
    "%s%n",
    "{}",
    "[]",
    "\t",
]
#: Numbers that no numeric option of envdoctor takes.
NEVER_A_NUMBER = ["nan", "inf", "-inf", "-1", "1e309", "9" * 5000, "\u00b2", "\u0663", "\uff11"]
#: Commands whose numeric options check their range themselves, with their own messages (fit's
#: Workload): their type is clicore.AsciiInt, which refuses what is no whole number in ASCII digits.
#: fit's MODEL argument is checked by fit itself (its own tests of hostile names).
OWN_CHECKS = {"fit"}


def _command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


def _options(name: str) -> List[click.Option]:
    return [
        p for p in _command(name).params if isinstance(p, click.Option) and not p.is_flag and p.name not in ("color",)
    ]


def _params(name: str) -> List[click.Parameter]:
    """The options that take a value, and the positional arguments."""
    return [
        *_options(name),
        *(p for p in _command(name).params if isinstance(p, click.Argument) and name not in OWN_CHECKS),
    ]


def _args(param: click.Parameter, value: str) -> List[str]:
    if isinstance(param, click.Argument):
        return ["--", value]
    long = max(param.opts, key=len)
    return [f"{long}={value}"]


def _numeric(option: click.Option) -> bool:
    return isinstance(
        option.type,
        (Number, AsciiInt, click.types.IntParamType, click.types.FloatParamType, click.IntRange, click.FloatRange),
    )


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: Any) -> Iterator[Tuple[Path, Dict[str, str]]]:
    base = tmp_path_factory.mktemp("fuzzcli")
    for folder in ("root", "bin", "cwd"):
        (base / folder).mkdir()
    env = {
        "PATH": str(base / "bin"),
        "HOME": str(base / "home"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CACHE_HOME": str(base / "cache"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "ENVDOCTOR_STATE_DIR": str(base / "state"),
        "ENVDOCTOR_CACHE_DIR": str(base / "cache"),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "",
        "CUDA_VISIBLE_DEVICES": None,
        "ENVDOCTOR_INDEX_URL": None,
        "PIP_INDEX_URL": None,
        "PIP_CONFIG_FILE": os.devnull,
        "UV_INDEX_URL": None,
        "ENVDOCTOR_ROOT": None,
    }
    here = os.getcwd()
    os.chdir(base / "cwd")  # what a command writes to a relative path lands here
    try:
        yield base, env
    finally:
        os.chdir(here)


def _base(name: str, base: Path) -> List[str]:
    """Options that keep a run that passes validation short and local."""
    names = {o for p in _command(name).params for o in getattr(p, "opts", ())}
    out: List[str] = []
    if "--python" in names and name != "fit":
        out += ["--python", "/bin/false"]
    if "--root" in names:
        out += ["--root", str(base / "root")]
    if "--offline" in names:
        out += ["--offline"]
    if "--timeout" in names:
        out += ["--timeout", "2"]
    if name == "fit":  # a model of the table, judged offline against a GPU of the table
        out += ["gpt2", "--gpu", "H200"]
    return out


def _invoke(name: str, args: List[str], sandbox: Tuple[Path, Dict[str, str]]) -> Any:
    base, env = sandbox
    return CliRunner().invoke(cli, [name, *_base(name, base), *args], env=env)


def _check(r: Any, what: str) -> None:
    text = r.output
    assert r.exit_code in (0, 1, 2), f"{what}: exit {r.exit_code}: {text[-500:]}"
    assert "Traceback" not in text and "internal error" not in text, f"{what}: {text[-500:]}"
    assert r.exception is None or isinstance(r.exception, SystemExit), f"{what}: {r.exception!r}"
    if r.exit_code == 2:
        said = [line for line in r.stderr.splitlines() if line.startswith(("Error:", "envdoctor"))]
        assert len(said) == 1, f"{what}: exit 2 without one line saying why: {r.stderr[-500:]!r}"


@pytest.mark.parametrize("name", list(COMMANDS))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 25, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_option_of_every_command_answers_or_refuses_in_one_line(name, data, sandbox):
    param = data.draw(st.sampled_from(_params(name)), label="parameter")
    value = data.draw(
        st.sampled_from(NUMBERS if isinstance(param, click.Option) and _numeric(param) else HOSTILE), label="value"
    )
    args = _args(param, value)
    r = _invoke(name, args, sandbox)
    _check(r, f"{name} {args[0][:60]!r} {value[:40]!r}")


@pytest.mark.parametrize("name, option", [(n, o.opts[-1]) for n in COMMANDS for o in _options(n) if _numeric(o)])
def test_every_numeric_option_refuses_nan_inf_negative_huge_and_non_ascii_digits(name, option, sandbox):
    """Issue 26: NaN and inf passed every float option (burn --seconds nan printed FAULTY, check --timeout
    nan was exit 3, bench --budget nan blamed torch)."""
    for value in NEVER_A_NUMBER:
        r = _invoke(name, [f"{option}={value}"], sandbox)
        _check(r, f"{name} {option}={value[:40]!r}")
        assert r.exit_code == 2, f"{name} {option}={value[:40]!r} was taken: {r.output[-300:]}"
        assert option in r.stderr, r.stderr


@pytest.mark.parametrize("name", list(COMMANDS))
def test_numeric_options_go_through_the_one_bounded_type(name):
    """One home for the rule: every numeric option is a clicore.Number (or seconds()) with both
    bounds, so none is left to Click's FloatRange, which lets NaN through, or to Click's int, which
    reads "\u0663" as 3; a command that checks the range itself (OWN_CHECKS) uses clicore.AsciiInt."""
    allowed = (Number, AsciiInt) if name in OWN_CHECKS else (Number,)
    for option in _options(name):
        if _numeric(option):
            assert isinstance(option.type, allowed), f"{name} {option.opts[-1]}: {option.type!r}"


def test_the_property_test_has_something_to_draw_for_every_command():
    assert len(COMMANDS) >= 13
    for name in COMMANDS:
        assert _params(name), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_numeric_default_is_within_its_own_range(name):
    """A default outside its option's range would refuse every plain run of the command."""
    for option in _options(name):
        if isinstance(option.type, Number) and option.default is not None:
            option.type.convert(option.default, option, None)


def _subcommands() -> List[Tuple[str, str]]:
    out = []
    for name in COMMANDS:
        command = _command(name)
        if isinstance(command, click.Group):
            out.extend((name, sub) for sub in command.list_commands(click.Context(command)))
    return out


@pytest.mark.parametrize("name, sub", _subcommands())
def test_every_subcommand_answers_or_refuses_a_hostile_argument(name, sub, sandbox):
    """``table torch`` of a 5000-digit version raised int()'s ValueError (a traceback)."""
    for value in ("9" * 5000, "9." * 3000, "nan", "\u0663.\u0663", "a\x00b", "x" * 5000, ""):
        for extra in ([], ["--json"]):
            r = _invoke(name, [sub, *extra, "--", value], sandbox)
            _check(r, f"{name} {sub} {' '.join(extra)} {value[:40]!r}")


def _path_options() -> List[Tuple[str, str]]:
    return [(n, max(o.opts, key=len)) for n in COMMANDS for o in _options(n) if isinstance(o.type, click.Path)]


def test_the_path_walk_has_the_output_options():
    walked = set(_path_options())
    assert {("check", "--output"), ("fleet", "--output"), ("snapshot", "--output"), ("burn", "--plot")} <= walked


@pytest.mark.parametrize("name, option", _path_options())
@pytest.mark.parametrize("value", ["", " "])
def test_every_path_option_refuses_an_empty_value_naming_the_option(name, option, value, sandbox):
    """qa2: ``check --html -o ''`` said "cannot write .: it is a folder" (Click reads "" as this
    folder), ``check --root ''`` inspected the working folder as the machine's root."""
    extra = ["--html"] if option == "--output" and name not in ("snapshot", "fleet") else []
    r = _invoke(name, [*extra, f"{option}={value}"], sandbox)
    _check(r, f"{name} {option}={value!r}")
    assert r.exit_code == 2, f"{name} {option}={value!r} was taken: {r.output[-300:]}"
    said = [line for line in r.stderr.splitlines() if line.startswith(("Error:", "envdoctor"))]
    assert option in said[0] and "empty" in said[0], said

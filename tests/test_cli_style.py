"""Colour (--color, NO_COLOR, FORCE_COLOR, TERM=dumb) and -q/-v, through Click on a recorded H200."""

import pytest
from click.testing import CliRunner

from envdoctor.cli import COMMANDS, cli
from envdoctor.style import Style, color_choice, color_enabled, paint
from tests.machines import h200

FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
ESC = "\x1b["
CLEAN = {"NO_COLOR": None, "FORCE_COLOR": None, "TERM": None}


def check(tmp_path, *args, env=None, pre=()):
    ctx = h200(tmp_path)
    merged = dict(ctx.env)
    merged.update(CLEAN)
    merged.update(env or {})
    return CliRunner().invoke(
        cli, [*pre, "check", "--root", str(ctx.root), *FAST, *args], env=merged, catch_exceptions=False
    )


@pytest.mark.parametrize(
    "mode, env, tty, expected",
    [
        ("auto", {}, True, True),
        ("auto", {}, False, False),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"NO_COLOR": ""}, True, True),  # no-color.org: only a non-empty value counts
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": ""}, False, False),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
        ("auto", {"TERM": "dumb"}, True, False),
        ("auto", {"TERM": "dumb", "FORCE_COLOR": "1"}, True, True),
        ("auto", {"TERM": "xterm-256color"}, True, True),
        ("always", {"NO_COLOR": "1", "TERM": "dumb"}, False, True),
        ("never", {"FORCE_COLOR": "1"}, True, False),
        (None, {"NO_COLOR": "1"}, True, False),
    ],
)
def test_who_decides_colour(mode, env, tty, expected):
    assert color_enabled(mode, env, isatty=tty) is expected


def test_terminal_decides_only_when_nothing_else_does():
    assert color_choice("auto", {"TERM": "xterm"}) is None


def test_paint_wraps_in_sgr_and_leaves_unknown_kinds():
    assert paint("x", "error", True) == "\x1b[31mx\x1b[0m"
    assert paint("x", "bold", False) == "x"
    assert paint("x", "no-such-kind", True) == "x"
    assert Style(True)("ok", "ok") == "\x1b[32mok\x1b[0m"


def test_plain_output_when_not_a_terminal(tmp_path):
    r = check(tmp_path)
    assert r.exit_code == 0 and ESC not in r.output


def test_color_always_survives_a_pipe(tmp_path):
    r = check(tmp_path, "--color", "always")
    assert "\x1b[32mVerdict: no problems found.\x1b[0m" in r.output
    assert "\x1b[1mGPU and driver\x1b[0m" in r.output


def test_color_before_the_command_name(tmp_path):
    r = check(tmp_path, pre=("--color", "always"))
    assert ESC in r.output


def test_command_color_overrides_the_group(tmp_path):
    r = check(tmp_path, "--color", "never", pre=("--color", "always"))
    assert ESC not in r.output


def test_force_color_colours_a_pipe(tmp_path):
    assert ESC in check(tmp_path, env={"FORCE_COLOR": "1"}).output


def test_no_color_beats_force_color(tmp_path):
    assert ESC not in check(tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).output


def test_empty_no_color_does_not_disable_force_color(tmp_path):
    assert ESC in check(tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": ""}).output


def test_color_always_beats_no_color(tmp_path):
    assert ESC in check(tmp_path, "--color", "always", env={"NO_COLOR": "1"}).output


def test_redact_keeps_colour_out(tmp_path):
    assert ESC not in check(tmp_path, "--redact", "--color", "always").output


def test_bad_color_value_is_a_usage_error(tmp_path):
    r = check(tmp_path, "--color", "sometimes")
    assert r.exit_code == 2 and "sometimes" in r.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_color(name):
    r = CliRunner().invoke(cli, [name, "--color", "never", "--help"])
    assert r.exit_code == 0, r.output
    assert "--color [auto|always|never]" in r.output


def test_quiet_prints_only_findings_and_verdict(tmp_path):
    r = check(tmp_path, "-q")
    assert r.exit_code == 0
    assert r.output == "Verdict: no problems found.\n"


def test_verbose_adds_sources_and_timings(tmp_path):
    r = check(tmp_path, "--verbose")
    lines = r.output.splitlines()
    start = lines.index("Sources and timings")
    section = lines[start : lines.index("Findings")]
    driver = next(line for line in section if line.lstrip().startswith("driver "))
    assert "driver: nvidia-smi" in driver and "kernel module: /sys/module/nvidia/version" in driver
    assert any(line.lstrip().startswith("table ") for line in section)
    assert any(line.lstrip().startswith("probes ") for line in section)
    assert "GPU and driver" in r.output and "Verdict:" in r.output


def test_quiet_and_verbose_together_is_a_usage_error(tmp_path):
    r = check(tmp_path, "-q", "-v")
    assert r.exit_code == 2 and "choose one of -q/--quiet and -v/--verbose" in r.output

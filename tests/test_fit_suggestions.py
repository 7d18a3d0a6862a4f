"""Every envdoctor command line a ``fit`` message suggests is a real envdoctor command: its words go
through Click's own parser (the command layer's group, each subcommand resolved and its options and
arguments parsed) and are accepted. ``fit --gpu H201`` used to suggest `envdoctor table gpus`
(the command is ``table gpu``) and a hanging Python `envdoctor check --python` (no value).

The messages are the real ones: fit run through the command layer on the inputs that print them
(an unknown GPU, a name no GPU has, an unknown model, a Python that hangs at start), and every
`envdoctor ...` span quoted in the fit plugin's own sources."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import List

import click
import pytest
from click.testing import CliRunner

import envdoctor.fit.host as host
from envdoctor.cli import cli

ROOT = Path(__file__).parent.parent
#: a command line a message quotes: `envdoctor ...` in single backticks (not a docstring's ``envdoctor fit``)
QUOTED = re.compile(r"(?<!`)`(envdoctor [^`]+)`(?!`)")


def parse_envdoctor(line: str) -> None:
    """Raise click.UsageError unless ``line`` (``envdoctor table gpu``) parses as an envdoctor command:
    the group's options, each subcommand resolved by name, its own options and arguments parsed."""
    words = shlex.split(line)
    assert words[0] == "envdoctor", line
    command: click.Command = cli
    name, args, parent = "envdoctor", words[1:], None
    while True:
        ctx = command.make_context(name, list(args), parent=parent)
        if not isinstance(command, click.Group):
            return
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            return
        sub_name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and sub_name is not None, line
        command, name, args, parent = sub, sub_name, rest, ctx


def suggested(text: str) -> List[str]:
    return QUOTED.findall(text)


@pytest.mark.parametrize(
    "line",
    [
        "envdoctor table gpus",
        "envdoctor check --python",
        "envdoctor fitt H200",
        "envdoctor fit --gpuz H200",
        "envdoctor table gpu --nope",
    ],
)
def test_the_parser_refuses_what_envdoctor_does_not_take(line):
    with pytest.raises(click.UsageError):
        parse_envdoctor(line)


@pytest.mark.parametrize(
    "line",
    [
        "envdoctor table gpu",
        "envdoctor table gpu H200 --json",
        "envdoctor fit --list",
        "envdoctor check --python /usr/bin/python3",
        "envdoctor table --stale",
    ],
)
def test_the_parser_accepts_real_command_lines(line):
    parse_envdoctor(line)


def _fit(*args: str) -> str:
    r = CliRunner().invoke(cli, ["fit", *args])
    assert "Traceback" not in r.output, r.output
    return r.output


@pytest.mark.parametrize(
    "args, said",
    [
        (["Llama-3.1-8B", "--gpu", "H201"], "envdoctor table gpu"),
        (["Llama-3.1-8B", "--gpu", "H" * 201], "envdoctor table gpu"),
        (["Llama-9-Nonexistent"], "envdoctor fit --list"),
    ],
)
def test_each_fit_message_suggests_a_real_command(args, said):
    out = _fit(*args)
    lines = suggested(out)
    assert lines == [said], out
    for line in lines:
        parse_envdoctor(line)


def test_the_hanging_python_message_suggests_a_real_command(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "START_PROBE_S", 1.5)
    python = tmp_path / "my python" / "python3"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\nexec sleep 120\n")
    python.chmod(0o755)
    out = _fit("Llama-3.2-1B", "--measure", "--python", str(python))
    lines = sorted(set(suggested(out)))  # the state line and ED635's evidence both say it
    assert lines == [f"envdoctor check --python '{python}'"], out
    parse_envdoctor(lines[0])
    assert shlex.split(lines[0])[-1] == str(python)  # quoted: a folder with a space stays one word


def test_every_command_line_quoted_in_the_fit_plugin_parses():
    found = {}
    for path in sorted((ROOT / "envdoctor" / "fit").rglob("*.py")):
        for line in suggested(path.read_text()):
            found[line] = path.name
    # a placeholder of an f-string is a value the message fills in: one that parses stands for it
    filled = {line: re.sub(r"\{[^}]*\}", "/usr/bin/python3", line) for line in found}
    assert "envdoctor table gpu" in filled and len(filled) >= 3, found
    for line, real in filled.items():
        try:
            parse_envdoctor(real)
        except click.UsageError as exc:
            raise AssertionError(f"{found[line]}: `{line}` does not parse: {exc.format_message()}") from None

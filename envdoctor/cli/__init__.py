"""The ``envdoctor`` command. Subcommands live one per module and load only when used.

Only this package imports Click; it parses, calls the probes/rules/advisor, renders, and sets the
exit code: 0 no error findings, 1 error findings, 2 usage error, 3 envdoctor itself failed.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

import click

from envdoctor import __version__
from envdoctor.clicore import (
    EXIT_INTERRUPTED,
    FULL_OUTPUT,
    closed_pipe,
    color_option,
    full_output,
    json_after_command,
    own_process,
)

#: command name -> "module:function": a bare module is one of envdoctor.cli, a dotted one a
#: plugin's command (``envdoctor.bench.command``)
COMMANDS: Dict[str, str] = {
    "check": "check:check",
    "recommend": "recommend:recommend",
    "index": "index:index",
    "bench": "envdoctor.bench.command:bench",
    "table": "table:table",
    "snapshot": "snapshot:snapshot",
    "verify": "snapshot:verify",
    "explain": "explain:explain",
    "burn": "envdoctor.burn.command:burn",
    "fit": "envdoctor.fit.command:fit",
    "topo": "envdoctor.links.command_topo:topo",
    "comms": "envdoctor.links.command_comms:comms",
    "fleet": "envdoctor.fleet.command:fleet",
    "dockerfile": "dockerfile:dockerfile",
    "schema": "schema:schema",
    "diag": "envdoctor.diag.command:diag",
    "profile": "envdoctor.profile.command:profile",
}


#: command name -> the line ``envdoctor --help`` shows for it, so that the help does not import
#: every command's module to ask (a command without a line here is imported for its own).
SUMMARIES: Dict[str, str] = {
    "check": "What is installed, what is broken, how to fix it.",
    "recommend": "Which route, torch and wheel to install, as exact commands.",
    "index": "Does a wheel index exist, and what does it hold for this Python.",
    "bench": "Matmul TFLOP/s, memory bandwidth, transformer layers: does the GPU deliver?",
    "table": "The compatibility table, each fact with its public source.",
    "snapshot": "Save this machine's report, to compare against after a change.",
    "verify": "Compare this machine with a snapshot: did anything regress?",
    "explain": "What a finding code means; without a code, every code.",
    "burn": "Sustained load on every GPU: correctness, thermals, power, throttling, ECC and Xid.",
    "fit": "Will this model fit on these GPUs, for inference or training: the peak, term by term.",
    "topo": "GPU links (PCIe, NVLink, NUMA) with each path's expected peak.",
    "comms": "NCCL collectives: bus bandwidth, correctness, the slow link.",
    "dockerfile": "Lint a Dockerfile for the GPU stack: base image CUDA vs driver, torch index, pins, builds.",
    "fleet": "Many nodes: merge their reports (or gather them through a launcher) and name the odd one.",
    "schema": "The JSON Schema of a document (report, plan, bench, ...), self-contained.",
    "diag": "May this node take a job? Levels 1-3 like DCGM's, PASS/WARN/FAIL per GPU and node.",
    "profile": "Your own training script, unchanged: where each step's time goes, MFU, the fixes.",
}


class LazyGroup(click.Group):
    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            summary = SUMMARIES.get(name)
            if summary is None:
                command = self.get_command(ctx, name)
                summary = command.get_short_help_str() if command is not None else ""
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(COMMANDS)

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        # ``envdoctor --json check``: every --json belongs to a command (cli.common.JsonGroup)
        return super().parse_args(ctx, json_after_command(args, list(COMMANDS)))

    # A usage error is one line ("Error: Invalid value for '--seconds': 'nan': give a number from 5
    # to 86400 seconds"), not Click's usage, hint and blank line before it: the policy of exit 2.
    def make_context(
        self, info_name: Optional[str], args: List[str], parent: Optional[click.Context] = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(module_name if "." in module_name else f"envdoctor.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        if not any(p.name == "color" for p in command.params):
            # every command takes --color, after its name as well as before it
            color_option(command)
        return command


#: Click 8.2's "no arguments: show the help" is a usage error that prints the help, not one line.
_SHOWS_HELP: Tuple[type, ...] = tuple(t for t in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if t)


def _one_line(exc: click.UsageError) -> click.UsageError:
    """``exc`` without its context, so that Click shows only its ``Error:`` line (the parameter it
    names stays in the message), and with any value of 80 or more characters in it cut short (a
    5000-character value is not repeated back)."""
    if isinstance(exc, _SHOWS_HELP):  # ``envdoctor`` alone: Click shows the help, which needs the context
        return exc
    if isinstance(exc, click.BadParameter) and exc.param_hint is None and exc.param is not None:
        exc.param_hint = exc.param.get_error_hint(exc.ctx) if exc.ctx is not None else None
    setattr(exc, "message", _cut(exc.message))  # noqa: B010 - Click declares it Final; cut once, here
    exc.ctx = None
    return exc


def _cut(message: str) -> str:
    """A value of 80 or more characters in a usage line, cut short: ``aaaa... (5000 characters)``."""
    return re.sub(r"\S{80,}", lambda m: f"{m.group()[:40]}... ({len(m.group())} characters)", message)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envdoctor")
@color_option
def cli() -> None:
    """Doctor and install advisor for PyTorch on NVIDIA GPU machines.

    \b
    Is the install right?
    envdoctor check                     what is broken here, and the fix
    envdoctor recommend --route conda   the commands that install a working torch
    envdoctor snapshot, later: verify   prove a driver upgrade broke nothing
    envdoctor explain ED205             what a finding code means
    \b
    Does the machine deliver?
    envdoctor bench --suite all         matmul, memory bandwidth, transformer layers
    envdoctor fit Llama-3.1-8B --train --gpu H200   will it fit, term by term
    envdoctor burn                      60 s of load: OK or FAULTY per GPU
    envdoctor topo; envdoctor comms     GPU links, NCCL bus bandwidth
    torchrun ... -m envdoctor fleet --gather   every node, the odd one named
    envdoctor profile -- python train.py   where your own step's time goes
    envdoctor diag -r 2                 may this node take a job: PASS, WARN or FAIL
    envdoctor dockerfile                lint ./Dockerfile for the GPU stack
    """


def main(argv: Optional[List[str]] = None) -> None:
    """Console entry point. Usage errors exit 2 (Click's own convention)."""
    from envdoctor.escape import escape_streams

    escape_streams(sys.stdout, sys.stderr)
    if argv is None:  # the program itself (a caller passes argv): a command may end the process
        own_process()  # once its output is written (clicore.finish)
    try:
        cli.main(args=argv, prog_name="envdoctor", standalone_mode=True)
    except SystemExit as done:
        # Click ends a write to a closed pipe (``envdoctor explain | head -1``) with exit 1, after
        # wrapping standard output in its (Pacify)FlushWrapper: that is the closed pipe, 141
        if done.code == 1 and type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper":
            closed_pipe()
        raise
    except KeyboardInterrupt:
        click.echo("envdoctor: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader of the output went away (| head), outside a command
        closed_pipe()
    except OSError as exc:  # a full output (``envdoctor explain > /dev/full``), outside a guarded command
        if exc.errno not in FULL_OUTPUT:
            raise
        full_output(exc)

"""The ``envdoctor`` command. Subcommands live one per module and load only when used.

Only this package imports Click; it parses, calls the probes/rules/advisor, renders, and sets the
exit code: 0 no error findings, 1 error findings, 2 usage error, 3 envdoctor itself failed.
"""

from __future__ import annotations

import importlib
import sys
from typing import Dict, List, Optional

import click

from envdoctor import __version__

#: command name -> "module:function" under envdoctor.cli
COMMANDS: Dict[str, str] = {
    "check": "check:check",
    "recommend": "recommend:recommend",
    "index": "index:index",
    "bench": "bench:bench",
    "table": "table:table",
    "snapshot": "snapshot:snapshot",
    "verify": "snapshot:verify",
    "fleet": "fleet:fleet",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"envdoctor.cli.{module_name}")
        return getattr(module, attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envdoctor")
def cli() -> None:
    """Doctor and install advisor for PyTorch on NVIDIA GPU machines.

    \b
    envdoctor check        what is installed, what is broken, how to fix it
    envdoctor recommend    which route, torch and wheel to install, as exact commands
    envdoctor index cu128  does that wheel index exist, what does it hold for this Python
    envdoctor bench        matmul TFLOP/s: are the Tensor Cores delivering?
    envdoctor snapshot / verify   prove a driver upgrade broke nothing
    envdoctor table torch 2.7     the compatibility table, each fact with its source
    """


def main(argv: Optional[List[str]] = None) -> None:
    """Console entry point. Usage errors exit 2 (Click's own convention)."""
    try:
        cli.main(args=argv, prog_name="envdoctor", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("envdoctor: interrupted", err=True)
        sys.exit(130)

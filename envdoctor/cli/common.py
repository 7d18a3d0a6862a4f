"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import functools
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

import click

from envdoctor.probes.context import Context

#: Exit codes of every command.
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def python_option(f: Callable) -> Callable:
    return click.option(
        "--python", "python", metavar="PATH", default=None,
        help="Target interpreter whose torch is inspected (default: python3 on PATH).",
    )(f)


def timeout_option(f: Callable) -> Callable:
    return click.option(
        "--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
        help="Seconds each external command may take.",
    )(f)


def debug_option(f: Callable) -> Callable:
    return click.option("--debug", is_flag=True, help="Show tracebacks of envdoctor's own failures.")(f)


def root_option(f: Callable) -> Callable:
    # For tests and for inspecting a mounted image: read /sys, /proc, /etc under this folder.
    return click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
                        hidden=True, envvar="ENVDOCTOR_ROOT")(f)


def check_index_url(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    """Click callback for ``--index-url``: an http(s) URL, without its trailing slash.

    Refused (exit 2, the URL masked): not http(s), no host, brackets that do not close
    (``http://[::1/whl``), a port outside 1-65535, a host name with a label over 63 characters
    (or over 253 in all). ``urllib.parse`` raises ``ValueError`` for the first two kinds of fault.
    """
    from urllib.parse import urlsplit

    from envdoctor.redact import mask_url

    if value is None:
        return None
    url = value.strip()
    if not url:
        raise click.BadParameter("empty: give an http(s) URL such as https://download.pytorch.org/whl")
    shown = mask_url(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:          # "Invalid IPv6 URL", "Port out of range 0-65535", ...
        why = "the port must be a number from 1 to 65535" if "port" in str(exc).lower() else str(exc)
        raise click.BadParameter(f"not a usable URL ({why}): {shown}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise click.BadParameter(f"not an http(s) URL: {shown}")
    if port == 0:
        raise click.BadParameter(f"not a usable URL (the port must be a number from 1 to 65535): {shown}")
    if not parts.netloc.rsplit("@", 1)[-1].startswith("["):   # a DNS name or an IPv4 address
        try:
            ascii_host = host.encode("idna")      # what the socket layer does: it refuses the same names
        except UnicodeError:
            ascii_host = b""
        if not ascii_host or len(ascii_host) > 253:
            raise click.BadParameter(f"not a usable host name (each dot-separated label 1-63 characters, "
                                     f"253 in all): {shown}")
    return url.rstrip("/")


def make_context(python: Optional[str], timeout: float, root: Optional[Path]) -> Context:
    return Context(
        root=root or Path("/"),
        env=dict(os.environ),
        timeout=timeout,
        conda_timeout=max(timeout * 3, 30.0),
        torch_timeout=max(timeout * 6, 60.0),
        python=python,
    )


def guarded(f: Callable) -> Callable:
    """Turn an unexpected exception into one line and exit code 3 (traceback with --debug)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug"))
        if debug:
            logging.basicConfig(level=logging.DEBUG, format="envdoctor: %(name)s: %(message)s")
        try:
            return f(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:
            if debug:
                traceback.print_exc()
            click.echo(f"envdoctor: internal error: {type(exc).__name__}: {exc} "
                       "(run with --debug for the traceback, and please report it)", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper


def use_color(stream: Any = None) -> bool:
    """Colours only on a terminal and never with NO_COLOR set (https://no-color.org)."""
    if "NO_COLOR" in os.environ:
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())

"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import errno
import functools
import logging
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, NoReturn, Optional, Sequence, Tuple

import click

from envdoctor.escape import escape_streams
from envdoctor.probes.context import TORCH_TIMEOUT  # the one default of --torch-timeout

if TYPE_CHECKING:
    from envdoctor.probes.context import Context

#: Exit codes of every command.
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
#: The output's reader went away (``envdoctor index --all | head -1``): 128 + SIGPIPE, as the
#: shell reports a program that SIGPIPE ended.
EXIT_PIPE = 141
#: Ctrl-C: 128 + SIGINT, as the shell reports it.
EXIT_INTERRUPTED = 130


def json_after_command(args: Sequence[str], names: Sequence[str]) -> list:
    """``args`` with a ``--json`` given before the (sub)command name moved after it, so that
    ``envdoctor --json check`` and ``envdoctor table --json torch 2.7`` mean what they say::

        json_after_command(["--json", "torch", "2.7"], ["torch", "cuda"])   # ["torch", "--json", "2.7"]
    """
    out = list(args)
    at = next((i for i, a in enumerate(out) if a in names or a == "--"), None)
    if at is None or out[at] == "--" or "--json" not in out[:at]:
        return out
    before = [a for a in out[:at] if a != "--json"]
    return [*before, out[at], "--json", *out[at + 1 :]]


class JsonGroup(click.Group):
    """A group whose ``--json`` may come before its subcommand's name (the subcommand takes it)."""

    def parse_args(self, ctx: click.Context, args: list) -> list:
        return super().parse_args(ctx, json_after_command(args, self.list_commands(ctx)))


#: True once the console entry point (``envdoctor.cli.main()``, no arguments: ``envdoctor``,
#: ``python -m envdoctor``) runs: the process is envdoctor's own, not a caller's (``main(argv)``,
#: a test's CliRunner), so :func:`finish` may end it at once.
_OWN_PROCESS = [False]


def own_process() -> None:
    """Say that this process is envdoctor's own (the console entry point says it)."""
    _OWN_PROCESS[0] = True


def finish(code: int) -> NoReturn:
    """End a command whose output is all written, with exit status ``code``.

    In envdoctor's own process the output is flushed and the process ends at once, without the
    interpreter's teardown: freeing the 250 modules and the table's rows of ``check --skip torch``
    took 20-40 ms on a 2-core box, a tenth of the command (docs/benchmarks.md). Nothing is left to it by then: the
    probes' processes are done, the table cache written, and so are the probes' threads but an
    NVML read given up on past its timeout (``nvml.bounded``): those are waited for at most
    ``nvml.SETTLE_S`` (0.5 s) all together (``nvml.settle``), then ended with the process.
    Elsewhere (a caller's process, a test's CliRunner): ``sys.exit(code)``.
    """
    if not _OWN_PROCESS[0]:
        sys.exit(code)
    nvml = sys.modules.get("envdoctor.nvml")  # not imported: no NVML thread was started
    if nvml is not None:
        nvml.settle()
    try:
        sys.stdout.flush()  # click.echo flushed already: nothing is normally left
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or full output: the interpreter's exit says so, as before
        sys.exit(code)
    logging.shutdown()  # --debug's handler, flushed
    os._exit(code)


def closed_pipe() -> None:
    """Leave quietly when standard output is a pipe whose reader has gone: no traceback, no
    "Exception ignored" at exit (standard output points at /dev/null from here on)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (a test's captured stream)
        pass
    sys.exit(EXIT_PIPE)


#: The longest text read as one number on the command line (more is not a number anyone typed).
MAX_NUMBER_CHARS = 40
#: The longest any timeout may be: a day.
MAX_TIMEOUT = 86400.0


def ascii_int(text: str) -> Optional[int]:
    """``text`` as a non-negative integer when it is ASCII digits only (at most 18 of them, surrounding
    blanks allowed), else None: ``"²"``, ``"٣"`` and ``"1e3"`` are not numbers here, although
    Python's ``str.isdigit``, ``int`` and ``float`` take some of them.

    >>> ascii_int(" 07 "), ascii_int("²"), ascii_int("٣"), ascii_int("-1"), ascii_int("9" * 19)
    (7, None, None, None, None)
    """
    text = text.strip()
    if not text or len(text) > 18 or not text.isascii() or not text.isdigit():
        return None
    return int(text)


class Number(click.FloatRange):
    """A finite number within ``low``..``high`` (``low_open``: above ``low``), for every numeric
    option: NaN, inf, a bound crossed, non-ASCII digits (``"٣"``, which ``float`` takes) and text
    of more than 40 characters are a usage error (exit 2) that names the accepted range. It is a
    FloatRange only for the range ``--help`` shows (``[1<=x<=3600]``); it converts on its own.

    >>> Number(0.1, 86400, unit="s").convert("2.5", None, None), Number(1, 8, integer=True).convert("3", None, None)
    (2.5, 3)
    >>> Number(0.1, 86400, unit="s").convert("nan", None, None)
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: 'nan': give a number from 0.1 to 86400 s
    """

    def __init__(
        self, low: float, high: float, *, integer: bool = False, low_open: bool = False, unit: str = ""
    ) -> None:
        super().__init__(min=low, max=high, min_open=low_open)  # the range --help shows: [0.1<=x<=86400]
        self.low, self.high, self.integer, self.low_open, self.unit = low, high, integer, low_open, unit
        self.name = "integer" if integer else "number"

    def fail(self, message: str, param: Any = None, ctx: Any = None) -> Any:
        _refuse(message, param, ctx)
        return super().fail(message, param, ctx)

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        low = f"above {self.low:g}" if self.low_open else f"from {self.low:g}"
        return f"{kind} {low} to {self.high:g}" + (f" {self.unit}" if self.unit else "")

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, bool):
            self.fail(f"{value!r}: give {self.describe()}", param, ctx)
        if isinstance(value, (int, float)):
            number: Any = value
        else:
            text = str(value).strip()
            number = None
            if text and len(text) <= MAX_NUMBER_CHARS and text.isascii():
                try:
                    number = int(text, 10) if self.integer else float(text)
                except ValueError:
                    number = None
            if number is None:
                self.fail(f"{str(value)[:MAX_NUMBER_CHARS]!r}: give {self.describe()}", param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r}: give {self.describe()}", param, ctx)
        too_low = number <= self.low if self.low_open else number < self.low
        if too_low or number > self.high:
            self.fail(f"{str(value)[:MAX_NUMBER_CHARS]!r}: give {self.describe()}", param, ctx)
        return int(number) if self.integer else float(number)

    def __repr__(self) -> str:
        return f"Number({self.low!r}, {self.high!r})"


class AsciiInt(click.ParamType):
    """A whole number in ASCII digits (a sign allowed, at most 18 digits), for options whose range
    their command checks itself (fit's, with its own messages): Click's ``int`` would read ``"٣"``
    as 3 and take ``"²"`` to a ValueError.

    >>> AsciiInt().convert(" -3 ", None, None)
    -3
    """

    name = "integer"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        number = ascii_int(text[1:] if text[:1] in "+-" and len(text) > 1 else text)
        if number is None:
            self.fail(f"{str(value)[:MAX_NUMBER_CHARS]!r} is not a whole number (ASCII digits)", param, ctx)
        return -number if text.startswith("-") else number


def _refuse(message: str, param: Any, ctx: Any) -> None:
    """A value that came from an environment variable (``ENVDOCTOR_INDEX_TTL=nan``) is refused in
    the variable's name, not the option's (the user set no option)."""
    name = getattr(param, "name", None)
    envvar = getattr(param, "envvar", None)
    if ctx is None or not name or not isinstance(envvar, str):
        return
    if ctx.get_parameter_source(name) == click.core.ParameterSource.ENVIRONMENT:
        raise click.UsageError(f"{envvar} (the variable, not an option): {message}", ctx)


def seconds(low: float = 0.1, high: float = MAX_TIMEOUT) -> Number:
    """A duration option's type: seconds from ``low`` to ``high`` (default up to a day)."""
    return Number(low, high, unit="seconds")


#: The longest file name (one component) and path Linux takes, in bytes (NAME_MAX, PATH_MAX).
NAME_MAX, PATH_MAX = 255, 4096


def path_problem(value: str) -> Optional[str]:
    """Why no file can have this path (a NUL, a name or path past the system's limit), or None (an
    empty path is the command's to refuse, with its own hint). ``os.stat`` would raise ValueError
    or OSError (ENAMETOOLONG) for these, and end the run as a bug.

    >>> path_problem("reports/a.json"), path_problem("a\\0b"), path_problem("x" * 300)
    (None, 'a path cannot hold a NUL character', 'a file name of 300 bytes (at most 255)')
    """
    if "\0" in value:
        return "a path cannot hold a NUL character"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX:
        return f"a path of {size} bytes (at most {PATH_MAX})"
    longest = max((len(part.encode("utf-8", "surrogatepass")) for part in value.split("/")), default=0)
    if longest > NAME_MAX:
        return f"a file name of {longest} bytes (at most {NAME_MAX})"
    return None


class FilePath(click.Path):
    """``click.Path`` that first refuses what no file can be named (:func:`path_problem`): one line,
    exit 2, where ``os.stat`` would raise ValueError (a NUL) or ENAMETOOLONG; and an empty value,
    which Click reads as ".", this folder (``check --html -o ''`` said "cannot write .: it is a
    folder"). ``allow_empty``: the command refuses it itself, with its own hint."""

    def __init__(self, *args: Any, allow_empty: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.allow_empty = allow_empty

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and not value.strip() and not self.allow_empty:
            what = "a folder" if not self.file_okay else "a file name" if not self.dir_okay else "a path"
            empty = f"it is empty: give {what}"
            _refuse(empty, param, ctx)
            self.fail(empty, param, ctx)
        if isinstance(value, str):
            problem = path_problem(value)
            if problem is not None:
                _refuse(problem, param, ctx)
                self.fail(problem, param, ctx)
        return super().convert(value, param, ctx)


def _python_path(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    """``--python``: refused when empty, blank, or holding a NUL (no program has such a name)."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("it is empty: give the path of a Python interpreter (or a name on PATH)")
    problem = path_problem(value)
    if problem is not None:
        raise click.BadParameter(problem)
    return value


def python_option(f: Callable) -> Callable:
    return click.option(
        "--python",
        "python",
        metavar="PATH",
        default=None,
        callback=_python_path,
        help="Target interpreter whose torch is inspected (default: python3 on PATH).",
    )(f)


def timeout_option(f: Callable) -> Callable:
    return click.option(
        "--timeout",
        type=seconds(),
        default=10.0,
        show_default=True,
        help="Seconds each external command may take (nvidia-smi, conda, docker, nvcc, the target Python).",
    )(f)


def torch_timeout_option(f: Callable) -> Callable:
    return click.option(
        "--torch-timeout",
        type=seconds(),
        default=TORCH_TIMEOUT,
        show_default=True,
        help="Seconds the target Python may take to import torch and answer (CUDA init included).",
    )(f)


def debug_option(f: Callable) -> Callable:
    return click.option("--debug", is_flag=True, help="Show tracebacks of envdoctor's own failures.")(f)


def root_option(f: Callable) -> Callable:
    # For tests and for inspecting a mounted image: read /sys, /proc, /etc under this folder.
    return click.option(
        "--root", type=FilePath(file_okay=False, path_type=Path), default=None, hidden=True, envvar="ENVDOCTOR_ROOT"
    )(f)


def check_index_url(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    """Click callback for ``--index-url``: an http(s) URL, without its trailing slash.

    Refused (exit 2, the URL masked): not http(s), no host, brackets that do not close
    (``http://[::1/whl``), a port outside 1-65535, a host name with a label over 63 characters
    (or over 253 in all). ``urllib.parse`` raises ``ValueError`` for the first two kinds of fault.
    """
    from envdoctor.wheels.client import url_problem

    if value is None:
        return None
    url = value.strip()
    problem = url_problem(url)
    if problem is not None:
        if ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.ENVIRONMENT:
            raise click.UsageError(f"ENVDOCTOR_INDEX_URL (the variable, not an option) is {problem}", ctx)
        raise click.BadParameter(problem)
    return url.rstrip("/")


def make_context(
    python: Optional[str], timeout: float, root: Optional[Path], torch_timeout: float = TORCH_TIMEOUT
) -> Context:
    """The probes' context: ``timeout`` bounds every external command (``--timeout``, no floor),
    ``torch_timeout`` the child that imports torch (``--torch-timeout``)."""
    from envdoctor.probes.context import Context

    return Context(
        root=root or Path("/"),
        env=dict(os.environ),
        timeout=timeout,
        torch_timeout=torch_timeout,
        python=python,
    )


def guarded(f: Callable) -> Callable:
    """Turn an unexpected exception into one line and exit code 3 (traceback with --debug)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug"))
        escape_streams(sys.stdout, sys.stderr)  # a byte that is not UTF-8 is shown escaped, not a crash
        output_files(kwargs)  # --plot, --html -o: before anything is measured
        if debug:
            logging.basicConfig(level=logging.DEBUG, format="envdoctor: %(name)s: %(message)s")
        try:
            return f(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except BrokenPipeError:
            closed_pipe()
        except KeyboardInterrupt:  # Click would say "Aborted!" and exit 1, the code of findings
            click.echo("envdoctor: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except OSError as exc:
            if exc.errno not in FULL_OUTPUT:
                _internal(exc, debug)
            full_output(exc)
        except Exception as exc:
            _internal(exc, debug)

    return wrapper


#: the errors of a write that cannot take more (``check > /dev/full``, a full disk under ``-o``): exit 2,
#: not ED900's 3
FULL_OUTPUT = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, name))


def full_output(exc: OSError) -> NoReturn:
    """The machine's fault, not envdoctor's (the disk or /dev/full under the output is full): one line
    on standard error and exit 2, standard output pointed at /dev/null so that the interpreter's own
    flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    click.echo(
        f"envdoctor: cannot write the output: {exc.strerror or exc} (free some space or write elsewhere)", err=True
    )
    sys.exit(EXIT_USAGE)


def _internal(exc: BaseException, debug: bool) -> NoReturn:
    """ED900's one line and exit 3 (the traceback first with --debug)."""
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    click.echo(
        f"envdoctor: internal error: {type(exc).__name__}: {exc} "
        "(run with --debug for the traceback, and please report it)",
        err=True,
    )
    sys.exit(EXIT_INTERNAL)


#: Where ``--color`` keeps its value for the whole command line (``ctx.meta`` is shared by the
#: group's context and the command's).
COLOR_KEY = "envdoctor.color"
VERBOSITY_KEY = "envdoctor.verbosity"


def _set_color(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> None:
    """``--color`` on the group or on a command: the later one wins, an absent one changes nothing.

    Where the flag or the environment decides, Click is told too (``ctx.color``), so that
    ``click.echo`` keeps the colour in a pipe (``always``, ``FORCE_COLOR``) or strips it on a
    terminal (``never``, ``NO_COLOR``).
    """
    from envdoctor.style import color_choice

    mode = value if value is not None else ctx.meta.get(COLOR_KEY)
    ctx.meta[COLOR_KEY] = mode
    ctx.color = color_choice(mode, os.environ)


def color_option(f: Callable) -> Callable:
    return click.option(
        "--color",
        type=click.Choice(["auto", "always", "never"]),
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_set_color,
        help="Colour the text: auto (a terminal, unless NO_COLOR or TERM=dumb; FORCE_COLOR forces it), "
        "always or never.",
    )(f)


def use_color(stream: Any = None) -> bool:
    """Whether to colour what goes to ``stream`` (default stdout): ``--color``, then ``NO_COLOR``,
    ``FORCE_COLOR``, ``TERM=dumb``, then whether the stream is a terminal (``render.style``)."""
    from envdoctor.style import color_enabled

    ctx = click.get_current_context(silent=True)
    mode = ctx.meta.get(COLOR_KEY) if ctx is not None else None
    stream = stream or sys.stdout
    return color_enabled(mode, os.environ, bool(getattr(stream, "isatty", lambda: False)()))


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value:
        return
    level = -1 if param.name == "quiet" else 1
    if ctx.meta.get(VERBOSITY_KEY, 0) not in (0, level):
        raise click.UsageError("choose one of -q/--quiet and -v/--verbose")
    ctx.meta[VERBOSITY_KEY] = level


def verbosity_options(f: Callable) -> Callable:
    """``-q/--quiet`` (only the findings and the verdict) and ``-v/--verbose`` (also where each
    fact came from and how long each probe took); read them with :func:`verbosity`."""
    f = click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_set_verbosity,
        help="Also show where each fact came from and how long each probe took.",
    )(f)
    return click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_set_verbosity,
        help="Show only the findings and the verdict.",
    )(f)


def verbosity() -> int:
    """-1 with ``--quiet``, 1 with ``--verbose``, 0 otherwise."""
    ctx = click.get_current_context(silent=True)
    return int(ctx.meta.get(VERBOSITY_KEY, 0)) if ctx is not None else 0


class ChoiceList(click.ParamType):
    """A comma-separated list of names from a closed set: ``ChoiceList(("fp32", "fp16"), "DTYPES")``
    turns ``"FP16, fp32,fp16"`` into ``("fp16", "fp32")`` (lower case, ``-`` read as ``_``, each
    once, in the order given). With ``every="all"`` that word stands for all of ``choices``.
    Anything else is a usage error (exit 2) that lists the choices; the option may also be repeated."""

    def __init__(self, choices: Sequence[str], name: str, every: Optional[str] = None) -> None:
        self.choices = tuple(choices)
        self.name = name
        self.every = every

    def convert(self, value: Any, param: Any, ctx: Any) -> Tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        names = tuple(dict.fromkeys(v.strip().lower().replace("-", "_") for v in str(value).split(",") if v.strip()))
        if self.every is not None and self.every in names:
            return self.choices
        bad = [v for v in names if v not in self.choices]
        if bad or not names:
            also = f" or {self.every}" if self.every is not None else ""
            self.fail(f"{value!r}: choose from {', '.join(self.choices)}{also} (comma-separated)", param, ctx)
        return names


#: GPU indices go below this (NVML numbers at most a few dozen; CUDA_VISIBLE_DEVICES the same).
MAX_GPUS = 1024


def gpu_index_or_all(ctx: click.Context, param: Any, value: str) -> str:
    """Click callback of ``--device``: ``"all"``, or one GPU index below 1024 (``"01"`` -> ``"1"``),
    in ASCII digits (``"²"`` and ``"٣"`` are refused, although ``str.isdigit`` takes them)."""
    value = value.strip().lower()
    if value == "all":
        return value
    index = ascii_int(value)
    if index is not None and index < MAX_GPUS:
        return str(index)
    raise click.BadParameter(
        f"{value[:MAX_NUMBER_CHARS]!r}: give a GPU index (0, 1, ... up to {MAX_GPUS - 1}) or 'all'"
    )


def check_visible_devices(env: Optional[Any] = None) -> None:
    """A usage error (exit 2, one line naming the variable and its form) when CUDA_VISIBLE_DEVICES
    holds something that is no GPU index or UUID (``"²"``, ``"٣"``, ``"999999999999"``)."""
    from envdoctor.parse.visible import VisibleError, check_visible

    try:
        check_visible((os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES"))
    except VisibleError as exc:
        raise click.UsageError(str(exc)) from None


def gpu_indices(value: str) -> Tuple[int, ...]:
    """``"0,1,3"`` as GPU indices, each below 1024 and named once; ValueError (its message for the
    user) otherwise.

    >>> gpu_indices("0, 1,3")
    (0, 1, 3)
    >>> gpu_indices("0,0")
    Traceback (most recent call last):
    ...
    ValueError: GPU 0 is named twice
    """
    out: list = []
    for part in value.split(","):
        index = ascii_int(part)
        if index is None or index >= MAX_GPUS:
            raise ValueError(f"{part.strip()[:MAX_NUMBER_CHARS]!r} is not a GPU index (0 to {MAX_GPUS - 1})")
        if index in out:
            raise ValueError(f"GPU {index} is named twice")
        out.append(index)
    return tuple(out)


def suppress_codes(ctx: Any, param: Any, values: Tuple[str, ...]) -> Tuple[str, ...]:
    """Click callback of ``--suppress``: codes of the registry (``envdoctor explain`` lists them); a
    comma list is several. Anything else is a usage error (exit 2), so a typo never hides nothing."""
    if not values:  # nothing given (every run): the checks' module loads later, not before the probes
        return ()
    from envdoctor.checks import bad_codes, suppressed_codes

    codes = suppressed_codes(values)
    problem = bad_codes(values) if codes else None  # the registry loads only when there is something to look up
    if problem:
        raise click.BadParameter(problem, param_hint="--suppress")
    return codes


def suppress_option(f: Callable) -> Callable:
    """``--suppress CODE`` (repeatable) for every command that prints findings; the command hands the
    codes to :func:`envdoctor.checks.split`."""
    return click.option(
        "--suppress",
        multiple=True,
        metavar="CODE",
        callback=suppress_codes,
        help="Hide a finding by its code, e.g. ED305 (repeatable).",
    )(f)


def for_tests(name: str, low: float, high: float, whole: bool = False) -> Optional[float]:
    """A number from the test-only environment variable ``name`` (docs/cli.md lists them), or
    None when it is unset: the tests' switches stay out of the product's options. What
    :class:`Number` refuses (NaN, inf, out of [low, high]) is a usage error naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value: float = Number(low, high, integer=whole).convert(raw, None, None)
    except click.BadParameter as exc:
        raise click.UsageError(f"{name}: for tests only; {exc.message}") from None
    return value


# --- --html and -o: one self-contained page per run (envdoctor/htmlpage.py) ---------------------------------


def html_options(f: Callable) -> Callable:
    """``--html`` (a page beside --json) and ``-o FILE`` (write it atomically instead of printing it)."""
    f = click.option(
        "-o",
        "--output",
        "html_output",
        type=FilePath(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="With --html: write the page to FILE (atomically) instead of printing it.",
    )(f)
    return click.option(
        "--html",
        "as_html",
        is_flag=True,
        help="Print one self-contained HTML page (no network, no external files; the JSON "
        "document embedded; personal details masked as --redact does).",
    )(f)


def check_formats(**given: bool) -> None:
    """A usage error for two formats at once (``--json --html``): one line naming them."""
    chosen = [f"--{name.replace('_', '-')}" for name, on in given.items() if on]
    if len(chosen) > 1:
        raise click.UsageError(f"choose one of {', '.join(chosen)}")


def machine_redactor() -> Any:
    """The ``--redact`` of the machine envdoctor runs on (its host name, user and home), which every
    page applies on top of what its document names."""
    import getpass
    import socket

    from envdoctor.redact import Redactor

    try:
        user: Optional[str] = getpass.getuser()
    except (KeyError, OSError):
        user = None
    home = os.environ.get("HOME")
    return Redactor(socket.gethostname(), user if user != "root" else None, home)


def emit_page(text: str, output: Optional[Path], command: str) -> None:
    """Print the page, or write it to ``output`` atomically (never over anything but a regular file;
    exit 2 with one line when it cannot be written)."""
    if output is None:
        click.echo(text, nl=False)
        return
    from envdoctor.atomic import write_atomic

    if not output.parent.is_dir():
        click.echo(f"envdoctor {command}: -o {output}: the folder {output.parent} does not exist", err=True)
        sys.exit(EXIT_USAGE)
    try:
        write_atomic(output, text)
    except OSError as exc:
        click.echo(f"envdoctor {command}: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"envdoctor {command}: wrote {output}", err=True)


#: What each file an output option writes must be called (the one rule, :func:`output_files`):
#: ``--plot`` draws a PNG (matplotlib picks the format from the name: ``x.txt`` failed after the
#: whole run, ``x.pdf`` was not the PNG the option promises), ``--html -o`` a page a browser opens
#: by its name.
OUTPUT_SUFFIXES: Dict[str, Tuple[str, ...]] = {"--plot": (".png",), "-o": (".html", ".htm")}


def _suffix(value: str, option: str, what: str) -> None:
    suffixes = OUTPUT_SUFFIXES[option]
    if not value.lower().endswith(suffixes):
        raise click.BadParameter(
            f"{value}: {what}: name a file ending {' or '.join(suffixes)}", param_hint=f"'{option}'"
        )


def output_files(given: Mapping[str, Any]) -> None:
    """The files a command is asked to write, checked before anything runs (by :func:`guarded`):
    ``--plot FILE.png`` (bench, burn, comms) ends .png and its folder exists (envdoctor makes no
    folder the user did not name, as for ``-o``); ``--html -o FILE`` ends .html (or .htm), and
    ``-o`` of :func:`html_options` without ``--html`` writes nothing, so it is refused. fleet's
    ``-o`` writes every format: the .html rule only with its ``--html``. A usage error (2), one line."""
    plot = given.get("plot")
    if isinstance(plot, str):
        _suffix(plot, "--plot", "the plot is a PNG")
        folder = os.path.dirname(os.path.abspath(plot))
        if not os.path.isdir(folder):
            shown = os.path.dirname(plot) or folder
            raise click.BadParameter(
                f"the folder {shown} does not exist (create it, or name a file in a folder that exists)",
                param_hint="'--plot'",
            )
    page = given.get("html_output")
    if page is not None and not given.get("as_html"):
        raise click.UsageError(f"-o {page}: -o writes the --html page; add --html (or leave -o out)")
    if page is None and given.get("as_html"):
        page = given.get("output")  # fleet's -o, with --html
    if page is not None:
        _suffix(str(page), "-o", "the --html page is HTML")

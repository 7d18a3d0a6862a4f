"""``envdoctor burn``: sustained load on every GPU, each result checked, NVML watched: OK or FAULTY.

Exit codes: 0 every GPU OK (or, with --cpu, a CPU run whose products were all right); 1 a GPU
FAULTY (unlike gpu-burn, which exits 0 then); 2 usage, or a target that cannot run the load (no
torch, a bad --device, a CPU-only torch on a GPU machine, no GPU at all without --cpu); 3 envdoctor
itself failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import click

from envdoctor.burn.facts import DEFAULT_SECONDS, DTYPES, MAX_SECONDS, MIN_SECONDS, BurnResult
from envdoctor.burn.host import IDLE_TIMEOUT, run_burn, write_plot
from envdoctor.burn.render import chart_lines, render_burn_text, verdict_line
from envdoctor.child import find_python
from envdoctor.clicore import (
    EXIT_ERRORS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    ChoiceList,
    FilePath,
    check_formats,
    check_visible_devices,
    debug_option,
    emit_page,
    for_tests,
    gpu_index_or_all,
    guarded,
    html_options,
    machine_redactor,
    python_option,
    seconds,
    suppress_option,
    use_color,
)
from envdoctor.documents import dumps, stamp
from envdoctor.facts.serde import to_data
from envdoctor.redact import mask_data, mask_text


class Progress:
    """Progress on stderr: on a terminal one line rewritten every second, else a line every 10 s."""

    def __init__(self, stream: Any, seconds: float, jobs: int = 1) -> None:
        self.stream = stream
        self.seconds = seconds
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every = 1.0 if self.tty else 10.0
        self.state: Dict[int, str] = {}
        self.started: Optional[float] = None
        self.last = 0.0
        self.lock = threading.Lock()

    def __call__(self, job: int, event: Dict[str, Any]) -> None:
        kind = event.get("kind")
        with self.lock:
            if kind == "interval" and isinstance(event.get("interval"), dict):
                i = event["interval"]
                if self.started is None:
                    self.started = time.monotonic()
                rate = i.get("tflops")
                shown = f" {rate:.3g} TFLOP/s" if isinstance(rate, float) else ""
                self.state[job] = f"{i.get('dtype')}{shown}"
            elif kind == "stage" and event.get("stage") == "memory test":
                self.state[job] = "memory test"
            elif kind == "device" and isinstance(event.get("device"), dict):
                d = event["device"]
                self.state[job] = f"{d.get('name')} ready"
            else:
                return
            now = time.monotonic()
            if now - self.last < self.every and kind == "interval":
                return
            self.last = now
            done = f"{now - self.started:.0f}/{self.seconds:g} s" if self.started is not None else "starting"
            text = "burn: " + done + "  " + "  ".join(f"[{j}] {s}" for j, s in sorted(self.state.items()))
            self.stream.write(("\r\x1b[K" + text) if self.tty else text + "\n")
            self.stream.flush()

    def end(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def exit_code(result: BurnResult) -> int:
    """0 all OK; 1 a device FAULTY or nothing measured; 2 a target that cannot run the load or a bad
    --device; 3 envdoctor failed."""
    if result.error is not None:
        return EXIT_INTERNAL if result.error.kind == "unparseable" else EXIT_USAGE
    if not result.gpus:
        return EXIT_INTERNAL
    if result.faulty or any(f.severity == "error" for f in result.findings):
        return EXIT_ERRORS  # a FAULTY device, or a run that measured nothing (ED830)
    return EXIT_OK


#: What to do when the target's torch sees no GPU (and NVML none either): nothing to load.
NO_GPU_HINT = (
    "run burn on a machine with an NVIDIA GPU, or add --cpu to try the load on the CPU "
    "(every product checked; no GPU verdict)"
)


def _failure_hint(result: BurnResult, said: bool = False) -> Optional[str]:
    """The line on stderr when the load could not run: the error and what to do, or only what to
    do when the text report above has ``said`` the error already."""
    e = result.error
    if e is None:
        return None
    hint = {
        "not_found": (
            "install torch there (`envdoctor recommend --python PATH` plans it for that interpreter) "
            "or point --python at one that has it"
        ),
        "crashed": "run `envdoctor check` to see why torch fails in this interpreter",
        "unavailable": {"--device": "see `nvidia-smi -L`", "no_gpu": NO_GPU_HINT}.get(
            str(e.command), "see `envdoctor check`"
        ),
    }.get(e.kind)
    if said:
        return f"envdoctor burn: {hint}" if hint else None
    return f"envdoctor burn: {e.message}" + (f"; {hint}" if hint else "")


def _plot(result: BurnResult, path: str, python: str, ascii_only: bool) -> List[str]:
    """The PNG (envdoctor.child.draw_plot writes it atomically); the terminal chart instead where
    the target has no matplotlib."""
    ok, line, kind = write_plot(result, path, python)
    if ok:
        return [line]
    lines = [line]
    if kind == "no_matplotlib":
        lines.append("the terminal chart instead:")
        for g in result.gpus:
            lines.extend(chart_lines(g, ascii_only=ascii_only))
    return lines


@click.command("burn")
@python_option
@click.option(
    "--seconds",
    type=seconds(MIN_SECONDS, MAX_SECONDS),
    default=DEFAULT_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="Seconds of load per GPU (5 s to 24 h), shared out over the dtypes; the start and a memory "
    "test of at most 10 s come on top.",
)
@click.option(
    "--device",
    default="all",
    show_default=True,
    callback=gpu_index_or_all,
    metavar="N|all",
    help="GPU index in the target's torch, or 'all' (one process per GPU).",
)
@click.option(
    "--dtype",
    "dtypes",
    type=ChoiceList(DTYPES, "DTYPES"),
    multiple=True,
    metavar="bf16,fp32",
    help="Dtypes to load (bf16, fp16, tf32, fp32, fp64; default bf16 and fp32, plus fp64 on GPUs "
    "whose Tensor Cores take it).",
)
@click.option(
    "--cpu",
    is_flag=True,
    help="Where torch sees no GPU, load the CPU instead of stopping (a trial of the load: every "
    "product checked, no GPU verdict).",
)
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.burn/1").')
@html_options
@click.option(
    "--plot",
    type=FilePath(dir_okay=False),
    default=None,
    metavar="FILE.png",
    help="Also draw the time series as a PNG, with matplotlib from the target environment.",
)
@click.option(
    "--hang-timeout",
    type=seconds(1, 3600),
    default=IDLE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="A GPU whose process prints nothing this long is hung (FAULTY).",
)
@suppress_option
@debug_option
@guarded
def burn(
    python: Optional[str],
    seconds: float,
    device: str,
    dtypes: Tuple[Tuple[str, ...], ...],
    as_json: bool,
    plot: Optional[str],
    hang_timeout: float,
    debug: bool,
    cpu: bool = False,
    as_html: bool = False,
    html_output: Optional[Path] = None,
    suppress: Tuple[str, ...] = (),
) -> None:
    """Load every GPU with repeated matrix products for SECONDS, check every result, watch NVML.

    \b
    Each product is compared with the first (bit for bit on a GPU); a memory pattern test covers
    most of the free memory; NVML is read every second (temperatures, power, clocks, throttle
    reasons, ECC, remapped rows, PCIe/NVLink errors, Xid events). Per GPU: OK or FAULTY, with
    the reasons as findings ED800-ED829.
    \b
    envdoctor burn                          every GPU, 60 s, about 70 s in all
    envdoctor burn --device 1 --seconds 600 --plot burn.png
    envdoctor burn --json > burn.json
    envdoctor burn --cpu --seconds 5        no GPU here: a trial of the load on the CPU
    """
    check_formats(json=as_json, html=as_html)
    check_visible_devices()
    # for tests only (docs/cli.md): a small CPU matrix, a short memory test
    size = for_tests("ENVDOCTOR_TEST_BURN_SIZE", 16, 32768, whole=True)
    memtest_seconds = for_tests("ENVDOCTOR_TEST_BURN_MEMTEST_SECONDS", 0, 600)
    target, chosen_by = find_python(python)
    if target is None:
        raise click.UsageError(f"--python {python}: not found or not executable")
    flat = tuple(dict.fromkeys(d for group in dtypes for d in group))
    progress = Progress(sys.stderr, seconds)
    sys.stderr.write(f"burn: {seconds:g} s per GPU in {target}; Ctrl-C stops and reports what ran\n")
    with _term_as_interrupt():
        result = run_burn(
            target,
            seconds,
            device,
            flat,
            chosen_by=chosen_by,
            idle_timeout=hang_timeout,
            size=None if size is None else int(size),
            memtest_s=memtest_seconds,
            on_event=progress,
            gpu_required=not cpu,
        )
    if suppress:
        from envdoctor.burn.rules import suppressed

        result = suppressed(result, suppress)
    progress.end()
    ascii_only = not _utf8(sys.stdout)
    plot_lines = _plot(result, plot, target, ascii_only) if plot and result.gpus else []
    if as_html:
        from envdoctor.burn.page import burn_page

        emit_page(
            burn_page(stamp(mask_data(to_data(result)), exit_code(result)), machine_redactor()), html_output, "burn"
        )
        sys.stderr.write(verdict_line(result) + "\n")
    elif as_json:
        click.echo(dumps(stamp(mask_data(to_data(result)), exit_code(result))))
        sys.stderr.write(verdict_line(result) + "\n")
    else:
        click.echo(mask_text(render_burn_text(result, color=use_color(), ascii_only=ascii_only)), nl=False)
    hint = _failure_hint(result, said=not (as_json or as_html))
    if hint:
        click.echo(hint, err=True)
    for line in plot_lines:
        click.echo(("envdoctor burn: " if line.startswith(("plot", "no plot")) else "") + line, err=True)
    sys.exit(exit_code(result))


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler's time limit, ``kill``) stops the children as Ctrl-C does, instead of
    leaving them burning in their own sessions until their timeout."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _utf8(stream: Any) -> bool:
    enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return enc.startswith("utf8") or os.environ.get("PYTHONIOENCODING", "").lower().startswith("utf")

"""Hostile input files: ``verify --baseline`` and ``recommend --from`` given a FIFO, /dev/zero, a folder,
a huge file, or a report with values no probe writes. Each is one line and exit 2, never a hang,
a traceback or exit 3. ``inputs.read_input`` is the one function every such file goes through.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.inputs import InputError, read_input
from tests.machines import h200

FIXTURE = Path(__file__).parent / "fixtures" / "snapshots" / "h200-580.json"
FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]


@contextlib.contextmanager
def deadline(seconds: int = 20):
    """Fail (instead of hanging the test run) when the body blocks, as a read of a FIFO would."""

    def expired(signum, frame):
        raise AssertionError(f"blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def on_the_h200(monkeypatch, tmp_path):
    monkeypatch.setattr(socket, "gethostname", lambda: "h200-vm")
    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.fifo"
    os.mkfifo(path)
    return path


def huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:  # sparse: 17 MiB that take no disk
        fh.truncate(17 * 1024 * 1024)
    return path


def linked_fifo(tmp_path: Path) -> Path:
    link = tmp_path / "link.json"
    link.symlink_to(fifo(tmp_path))
    return link


# --- read_input ---------------------------------------------------------------------------------------


def test_read_input_reads_a_regular_file(tmp_path):
    (tmp_path / "r.json").write_text('{"schema": "envdoctor.report/1"}')
    assert read_input(tmp_path / "r.json") == '{"schema": "envdoctor.report/1"}'


@pytest.mark.parametrize(
    "make, reason",
    [
        (fifo, "is a named pipe (FIFO), not a regular file"),
        (linked_fifo, "is a named pipe (FIFO), not a regular file"),
        (lambda tmp: Path("/dev/zero"), "is a character device, not a regular file"),
        (lambda tmp: tmp, "is a folder, not a regular file"),
        (huge, "is 17 MiB, larger than the 16 MiB envdoctor reads"),
        (lambda tmp: tmp / "missing.json", "does not exist"),
    ],
)
def test_read_input_refuses_without_reading(tmp_path, make, reason):
    path = make(tmp_path)
    with deadline(), pytest.raises(InputError) as info:
        read_input(path)
    assert info.value.reason == reason and str(info.value) == f"{path} {reason}"


def test_read_input_bounds_a_file_that_grows_or_lies_about_its_size(tmp_path):
    (tmp_path / "r.json").write_text("x" * 5000)
    with pytest.raises(InputError, match="larger than the 4 KiB envdoctor reads"):
        read_input(tmp_path / "r.json", max_bytes=4096)
    assert len(read_input("/proc/self/status")) > 0  # size 0 in stat, read up to the bound


def test_read_input_refuses_binary(tmp_path):
    (tmp_path / "x.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="is not a text file"):
        read_input(tmp_path / "x.json")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_read_input_says_permission_denied(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{}")
    path.chmod(0)
    with pytest.raises(InputError, match="cannot be read: permission denied"):
        read_input(path)


# --- through the commands ------------------------------------------------------------------------------


def verify(ctx, path: Path):
    return CliRunner().invoke(
        cli, ["verify", "--baseline", str(path), *FAST, "--root", str(ctx.root)], env=dict(ctx.env)
    )


def recommend(ctx, path: Path):
    return CliRunner().invoke(cli, ["recommend", "--from", str(path), "--offline"], env=dict(ctx.env))


def one_line_exit_2(r, text: str) -> None:
    assert r.exit_code == 2, r.output
    assert text in r.output, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("command", [verify, recommend], ids=["verify --baseline", "recommend --from"])
@pytest.mark.parametrize(
    "make, text",
    [
        (fifo, "is a named pipe (FIFO), not a regular file"),
        (linked_fifo, "is a named pipe (FIFO), not a regular file"),
        (lambda tmp: Path("/dev/zero"), "is a character device, not a regular file"),
        (huge, "larger than the 16 MiB envdoctor reads"),
    ],
    ids=["fifo", "symlink to a fifo", "/dev/zero", "17 MiB"],
)
def test_hostile_input_file_does_not_block_or_fill_memory(tmp_path, command, make, text):
    path = make(tmp_path)
    with deadline():
        r = command(h200(tmp_path / "m"), path)
    one_line_exit_2(r, text)


def test_a_folder_is_refused_by_both(tmp_path):
    one_line_exit_2(verify(h200(tmp_path / "m"), tmp_path), "is a folder, not a regular file")
    r = recommend(h200(tmp_path / "m2"), tmp_path)  # Click's own check of --from (dir_okay=False)
    assert r.exit_code == 2 and "is a directory" in r.output and "Traceback" not in r.output


def edited(tmp_path: Path, edit) -> Path:
    doc = json.loads(FIXTURE.read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def _driver(value):
    return lambda doc: doc["facts"]["driver"].update(driver_version=value)


@pytest.mark.parametrize("command", [verify, recommend], ids=["verify --baseline", "recommend --from"])
@pytest.mark.parametrize(
    "edit, text",
    [
        (_driver("banana"), "facts.driver.driver_version is 'banana', not a driver version like 580.159.04"),
        (
            lambda doc: doc["facts"]["driver"]["gpus"][0].update(compute_capability="x.y"),
            "facts.driver.gpus[0].compute_capability is 'x.y', not a compute capability like 9.0",
        ),
        (_driver("5" * 5000), "facts.driver.driver_version is 5000 characters long, not a version"),
        (
            lambda doc: doc["facts"]["torch"].update(version="2." + "1" * 5000),
            "facts.torch.version is 5002 characters long, not a version",
        ),
        (
            lambda doc: doc["facts"]["system"].update(glibc="2.150000000"),
            "facts.system.glibc is '2.150000000', not a glibc version like 2.39",
        ),
        (
            lambda doc: doc["facts"]["python"].update(platform_tags=["manylinux_2_10000000_x86_64"]),
            "facts.python.platform_tags[0] is 'manylinux_2_10000000_x86_64', not a platform tag",
        ),
        (
            lambda doc: doc.update(schema="envdoctor.report/\u00b2"),
            "has schema 'envdoctor.report/\u00b2', which this envdoctor cannot read",
        ),
        (lambda doc: doc.update(findings=7), "does not have the shape of a report: findings: expected a list"),
        (
            lambda doc: doc["findings"].append({"code": "ED101", "severity": "fatal", "title": "x"}),
            "does not have the shape of a report",
        ),
    ],
    ids=[
        "driver banana",
        "cc x.y",
        "5000-digit driver",
        "5000-digit torch",
        "glibc 2.150000000",
        "manylinux_2_10000000",
        "schema report/2 superscript",
        "findings 7",
        "severity fatal",
    ],
)
def test_report_with_values_no_probe_writes_is_exit_2(tmp_path, command, edit, text):
    r = command(h200(tmp_path / "m"), edited(tmp_path, edit))
    one_line_exit_2(r, text)


def test_the_recorded_baseline_still_reads(tmp_path):
    assert verify(h200(tmp_path / "m"), FIXTURE).exit_code == 0
    assert recommend(h200(tmp_path / "m2"), FIXTURE).exit_code == 0

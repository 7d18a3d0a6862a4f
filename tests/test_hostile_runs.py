"""Hostile runs end to end (issue 27): the real entry point (``python -m envdoctor``) in a process of
its own, with the input planted; each row says the command, what was planted, the exit code the
documented policy gives, and what standard error holds: one line (or Click's usage block with one
``Error:`` line), never a traceback, never "internal error", never a hang past its bound.

Rows of the other families of the issue (fleet reports, fit configs, launcher variables, child
result lines, the topo header) live with their owners' tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pytest

from tests.fakes import FakeBin
from tests.indexserver import IndexServer

ROOT = Path(__file__).parent.parent
SKIP = ["--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
CP312 = ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]
#: tools a check may run; each leaves a grandchild on its pipes in the "lingering" row
TOOLS = (
    "nvidia-smi",
    "nvcc",
    "gcc",
    "cc",
    "conda",
    "mamba",
    "docker",
    "podman",
    "nvidia-container-cli",
    "nvidia-ctk",
    "python3",
    "python",
    "mokutil",
    "dkms",
    "modinfo",
    "lspci",
)


def child_line(kind: str, **data: object) -> str:
    return json.dumps({"envdoctor_child": 2, "kind": kind, **data})


INTERPRETER = {
    "version": [3, 12, 3],
    "implementation": "cpython",
    "abiflags": "",
    "soabi": "cpython-312",
    "libc": ["glibc", "2.39"],
    "confstr": "glibc 2.39",
    "machine": "x86_64",
    "bits": 64,
    "platform": "linux-x86_64",
    "mac_ver": "",
}


@dataclass
class Planted:
    """What a row's setup made: the arguments to add, the environment, the folder to run in."""

    args: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    cwd: Optional[Path] = None


def fake_python(tmp: Path, folder: bytes, answer: str) -> bytes:
    """A 'python3' in ``folder`` (bytes: it may be no UTF-8) that answers one protocol line."""
    d = os.path.join(os.fsencode(tmp), folder)
    os.makedirs(d, exist_ok=True)
    data = tmp / f"answer-{len(os.listdir(tmp))}.json"
    data.write_text(answer + "\n")
    exe = os.path.join(d, b"python3")
    with open(exe, "w") as fh:
        fh.write(f"#!/bin/sh\ncat > /dev/null\ncat {data}\n")
    os.chmod(exe, 0o755)
    return exe


def odd_glibc(tmp: Path, server: IndexServer) -> Planted:
    answer = child_line("result", result=dict(INTERPRETER, confstr="glibc 2.150000000", libc=["glibc", "2.150000000"]))
    return Planted([os.fsdecode(fake_python(tmp, b"odd", answer)), "--index-url", server.url()])


def libc_int(tmp: Path, server: IndexServer) -> Planted:
    answer = child_line("result", result=dict(INTERPRETER, libc=5, confstr=" ", soabi=73, mac_ver="1\u00b2"))
    return Planted([os.fsdecode(fake_python(tmp, b"libc", answer)), "--index-url", server.url()])


def error_line(tmp: Path, server: IndexServer) -> Planted:
    answer = child_line("error", error={"kind": "no_torch", "message": "No module named 'torch'"})
    return Planted([os.fsdecode(fake_python(tmp, b"caf\xe9", answer))])


def undecodable_path(tmp: Path, server: IndexServer) -> Planted:
    odd = os.path.join(os.fsencode(tmp), b"d\xff")
    os.makedirs(odd, exist_ok=True)
    return Planted(env={"PATH": os.fsdecode(odd) + ":/usr/bin:/bin", "PYTHONIOENCODING": "utf-8:strict"})


def lingering(tmp: Path, server: IndexServer) -> Planted:
    bin = FakeBin(tmp)
    for name in TOOLS:
        bin.add_script(name, "sleep 30 &\necho x")
    return Planted(env={"PATH": f"{bin.dir}:/usr/bin:/bin"})


def server_mode(mode: str) -> Callable[[Path, IndexServer], Planted]:
    return lambda tmp, server: Planted(["--index-url", server.url(mode)])


def huge_uv(tmp: Path, server: IndexServer) -> Planted:
    (tmp / ".config" / "uv").mkdir(parents=True)
    (tmp / ".config" / "uv" / "uv.toml").write_text("[pip]\nconcurrent-downloads = " + "9" * 5000 + "\n")
    (tmp / "pyproject.toml").write_text("[tool.uv]\nconcurrent-downloads = " + "9" * 5000 + "\n")
    return Planted(env={"HOME": str(tmp)}, cwd=tmp)


def huge_fetched_at(tmp: Path, server: IndexServer) -> Planted:
    from envdoctor.wheels.cache import PageCache

    cache = PageCache(tmp / "cache")
    cache.directory.mkdir(parents=True)
    url = f"{server.url()}/cu128/torch/"
    cache.path_for(url).write_text(
        '{"format": 2, "url": "' + url + '", "status": 200, "fetched_at": 1' + "0" * 399 + ', "page": null}'
    )
    return Planted(["--index-url", server.url()])


def missing_folder(tmp: Path, server: IndexServer) -> Planted:
    return Planted(["--plot", str(tmp / "missing" / "b.png")])


def secret_beside_a_stray_byte(tmp: Path, server: IndexServer) -> Planted:
    return Planted(
        env={
            "PIP_INDEX_URL": "https://m.example/simple/?x=caf\udce9&token=qs3cretval",
            "ALL_PROXY": "u:pr0xyval@proxy:1080",
            "CONDA_PWD": "c0ndapwdval",
            "PYTHONIOENCODING": "utf-8:strict",
        }
    )


def dotted_reports(tmp: Path, server: IndexServer) -> Planted:
    from tests import fleetdocs as fd

    odd = fd.host(fd.h200(), "gpu-02")
    odd["findings"] = [
        {
            "code": "ED205",
            "severity": "error",
            "title": "x." * 40000 + "gpu-02",
            "evidence": [".".join("9" * 4 for _ in range(100_000))],
            "fix": [],
            "reference": None,
            "area": "torch",
            "explanation": None,
        }
    ]
    fd.write(tmp / "a", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp / "b", odd)
    return Planted([str(tmp / "a"), str(tmp / "b")])


@dataclass
class Row:
    name: str
    command: Sequence[str]
    plant: Callable[[Path, IndexServer], Planted]
    exits: Tuple[int, ...]
    stderr_lines: Optional[int]  # None: at most one; 0: nothing; "usage": Click's block
    bound: float = 60.0  # wall seconds the run may take
    absent: Tuple[str, ...] = ()  # what must be in no output
    check: Optional[Callable[[str, Path], None]] = None


def json_document(stdout: str, tmp: Path) -> None:
    json.loads(stdout)


def escaped_byte(stdout: str, tmp: Path) -> None:
    assert "caf\\xe9" in stdout


def snapshot_written(stdout: str, tmp: Path) -> None:
    written = list((tmp / "state").rglob("*.json"))
    assert written
    for p in written:
        json.loads(p.read_text(encoding="utf-8"))


ROWS = [
    Row(
        "index: a redirect to a malformed IPv6-literal URL",
        ["index", "cu128", *CP312],
        server_mode("badredirect"),
        (2,),
        0,
    ),
    Row("index: charset=undefined", ["index", "cu128", *CP312], server_mode("charsetundefined"), (2,), 0),
    Row("index: charset=idna", ["index", "cu128", *CP312], server_mode("charsetidna"), (2,), 0),
    Row("index: PEP 691 JSON with a 5,000-digit integer", ["index", "cu128", *CP312], server_mode("bigint"), (2,), 0),
    Row("recommend: charset=idna", ["recommend", "--route", "system"], server_mode("charsetidna"), (0,), 0),
    Row(
        "recommend: a redirect to a malformed URL",
        ["recommend", "--route", "system"],
        server_mode("badredirect"),
        (0,),
        0,
    ),
    Row("index --python: glibc 2.150000000", ["index", "cu128", "--python"], odd_glibc, (1,), 0, bound=30),
    Row(
        "index --python: libc an int, blank confstr, superscript mac_ver",
        ["index", "cu128", "--python"],
        libc_int,
        (0, 1),
        0,
        bound=30,
    ),
    Row(
        "check --python caf\\xe9/python3 answering an error line",
        ["check", *SKIP, "--python"],
        error_line,
        (1,),
        0,
        check=escaped_byte,
    ),
    Row(
        "check --json, a PATH folder named with byte 0xff, strict UTF-8 stdout",
        ["check", *SKIP, "--json"],
        undecodable_path,
        (0, 1),
        0,
        check=json_document,
    ),
    Row(
        "snapshot, a PATH folder named with byte 0xff",
        ["snapshot", *SKIP],
        undecodable_path,
        (0, 1),
        None,
        check=snapshot_written,
    ),
    Row(
        "check --timeout 0.5, every tool leaving a grandchild on its pipes",
        ["check", "--timeout", "0.5", "--torch-timeout", "1"],
        lingering,
        (0, 1),
        None,
        bound=6.0,
    ),
    Row("check: uv.toml and [tool.uv] with a 5,000-digit integer", ["check", *SKIP], huge_uv, (0, 1), 0),
    Row("index: a uv.toml with a 5,000-digit integer", ["index", "cu128", *CP312, "--offline"], huge_uv, (0, 1), 0),
    Row("index: a cache entry with a 400-digit fetched_at", ["index", "cu128", *CP312], huge_fetched_at, (0,), 0),
    Row("bench --plot into a folder that does not exist", ["bench"], missing_folder, (2,), -1),
    Row(
        "fleet --redact: a title of 40,000 dots and 500 kB of dotted version text",
        ["fleet", "--redact"],
        dotted_reports,
        (0, 1),
        None,
        bound=10.0,
    ),
    Row(
        "check --json: a secret query key beside a non-UTF-8 byte",
        ["check", *SKIP, "--json"],
        secret_beside_a_stray_byte,
        (0, 1),
        0,
        absent=("qs3cretval", "pr0xyval", "c0ndapwdval"),
    ),
]


@pytest.fixture(scope="module")
def server():
    with IndexServer() as s:
        yield s


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_hostile_run(row, server, tmp_path):
    planted = row.plant(tmp_path, server)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
        "ENVDOCTOR_STATE_DIR": str(tmp_path / "state"),
        "ENVDOCTOR_INDEX_RETRIES": "0",
        "ENVDOCTOR_INDEX_BACKOFF": "0",
        "PYTHONPATH": str(ROOT),
    }
    env.update(planted.env)
    argv = [sys.executable, "-m", "envdoctor", *row.command, *planted.args]
    started = time.monotonic()
    done = subprocess.run(
        [os.fsencode(a) for a in argv],
        env={k: os.fsencode(v) for k, v in env.items()},
        cwd=planted.cwd or tmp_path,
        capture_output=True,
        timeout=row.bound + 30,
    )
    took = time.monotonic() - started
    stdout = done.stdout.decode("utf-8")  # strict: every output encodes
    stderr = done.stderr.decode("utf-8")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr + stdout and "internal error" not in stderr + stdout, stderr[-2000:]
    assert done.returncode in row.exits, (done.returncode, stdout[-1500:], stderr[-1500:])
    assert took < row.bound, took
    if row.stderr_lines == -1:  # Click's usage block: one Error: line
        assert sum(line.startswith("Error:") for line in lines) == 1, stderr
    elif row.stderr_lines is None:
        assert len(lines) <= 1, stderr
    else:
        assert len(lines) == row.stderr_lines, stderr
    for secret in row.absent:
        assert secret not in stdout + stderr
    if row.check is not None:
        row.check(stdout, tmp_path)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [["check", "--skip", "torch"], ["explain", "ED102"], ["table", "gpu", "H200"]])
def test_a_full_output_is_one_line_and_exit_2_not_a_bug(args):
    """``> /dev/full`` (a full disk): the machine's fault, not ED900's "please report it" or a traceback."""
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "envdoctor", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "envdoctor: cannot write the output: No space left on device (free some space or write elsewhere)"
    )
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr

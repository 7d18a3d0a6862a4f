"""Siblings of issue 12's items found by trying every command with hostile inputs: each bounded,
one line, the documented exit code."""

from __future__ import annotations

import os
import time

from envdoctor.cli import cli
from tests.fakes import FakeBin, cli_runner


def test_bench_raw_out_into_an_unwritable_place_is_one_line_not_a_bug(tmp_path):
    from tests.test_bench_fakes import fake_python

    doc = {"schema": "envdoctor.bench.child/1", "error": {"kind": "no_torch", "message": "x"}}
    r = cli_runner().invoke(
        cli,
        [
            "bench",
            "--python",
            fake_python(tmp_path, result=doc),
            "--raw-out",
            str(tmp_path / "no" / "such" / "dir" / "x.json"),
        ],
    )
    assert r.exit_code == 2 and (tmp_path / "no/such/dir/x.json").exists()  # no torch: 2; folders are made
    os.mkfifo(tmp_path / "fifo")
    r = cli_runner().invoke(
        cli, ["bench", "--python", fake_python(tmp_path / "b", result=doc), "--raw-out", str(tmp_path / "fifo")]
    )
    assert r.exit_code == 2 and "internal error" not in r.stderr
    assert f"--raw-out {tmp_path / 'fifo'}: it is a named pipe (FIFO), not a regular file" in r.stderr


def test_table_does_not_echo_a_100_kb_key(tmp_path):
    r = cli_runner().invoke(cli, ["table", "gpu", "x" * 100_000])
    assert r.exit_code == 1 and len(r.stderr) < 2000
    assert "... (100000 characters)" in r.stderr


def test_index_python_is_bounded_by_the_timeout_without_a_floor(tmp_path):
    fb = FakeBin(tmp_path)
    python = fb.add("python3", hang=True)
    started = time.monotonic()
    r = cli_runner().invoke(
        cli,
        ["index", "cu130", "--offline", "--python", str(python), "--timeout", "1"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert time.monotonic() - started < 6  # was: at least 10 s whatever --timeout said
    assert r.exit_code == 2 and "did not answer in 1 s" in r.stderr, (
        r.stderr
    )  # 2: an interpreter that cannot answer is unusable input


def test_a_100_kb_cuda_visible_devices_is_one_short_line_in_the_text():
    from envdoctor.facts import DriverFacts, Facts
    from envdoctor.render.text import gpu_rows

    rows = dict(gpu_rows(Facts(driver=DriverFacts(cuda_visible_devices="0," * 50_000))))
    assert rows["CUDA_VISIBLE_DEVICES"] == "'" + "0," * 99 + "0... (100002 characters)"

"""``envdoctor snapshot`` and ``envdoctor verify`` end to end, on machines rebuilt from recorded output.

The baseline tests/fixtures/snapshots/h200-580.json was taken on ``tests.machines.h200`` (see the
README there); the "after" machines change one thing each, the way an upgrade would.
"""

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.bench.facts import BenchDevice, BenchPoint, BenchResult
from envdoctor.cli import cli
from envdoctor.facts.serde import to_data
from tests.fakes import FakeBin, recorded
from tests.faketorch import gpu, make_torch
from tests.machines import H200, SMI_MISMATCH, SMI_QUERY_ARGS, h200

FIXTURE = Path(__file__).parent / "fixtures" / "snapshots" / "h200-580.json"
FAST = ["--skip", "torch", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
HOST = "h200-vm"


@pytest.fixture(autouse=True)
def on_the_h200(monkeypatch, tmp_path):
    """The host name the fixture was recorded under; snapshots in a folder of the test."""
    monkeypatch.setattr(socket, "gethostname", lambda: HOST)
    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))


def run(ctx, *args, env=None):
    env = dict(ctx.env if env is None else env)
    return CliRunner().invoke(cli, [*args, "--root", str(ctx.root)], env=env, catch_exceptions=False)


def baseline(tmp_path, edit=None):
    doc = json.loads(FIXTURE.read_text())
    if edit:
        edit(doc)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc))
    return path


def upgraded_smi(bin, version="590.44.01", cuda="13.1"):
    """nvidia-smi of the H200 after a clean upgrade: the recorded output with the new versions."""

    def new(text):
        return (
            text.replace("580.159.04", version)
            .replace("580.159", version.rsplit(".", 1)[0])
            .replace("CUDA Version: 13.0", f"CUDA Version: {cuda}")
            .replace("CUDA Version        : 13.0", f"CUDA Version        : {cuda}")
        )

    bin.add(
        "nvidia-smi",
        stdout=new(recorded(H200, "nvidia-smi.txt")),
        by_args={
            SMI_QUERY_ARGS: (new(recorded(H200, "nvidia-smi-query.txt")), "", 0),
            "--version": (new(recorded(H200, "nvidia-smi-version.txt")), "", 0),
        },
    )


def upgraded_files(kernel_module="590.44.01"):
    return {
        "/sys/module/nvidia/version": kernel_module + "\n",
        "/proc/driver/nvidia/version": recorded(H200, "proc-driver.txt").replace("580.159.04", kernel_module),
        "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
        "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
    }


# --- snapshot ------------------------------------------------------------------------------------


def test_snapshot_then_verify_finds_nothing(tmp_path):
    ctx = h200(tmp_path)
    r = run(ctx, "snapshot", *FAST)
    assert r.exit_code == 0, r.output
    assert "Snapshot saved: " in r.output and "(latest)" in r.output
    assert "driver 580.159.04, torch not inspected, 1x NVIDIA H200" in r.output
    store = tmp_path / "state" / "snapshots"
    name = (store / "latest").read_text().strip()
    doc = json.loads((store / name).read_text())
    assert doc["schema"] == "envdoctor.report/1" and doc["snapshot"]["host"] == HOST

    r = run(ctx, "verify", *FAST)
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Verify against {store / name} (taken ")
    assert ", driver 580.159.04, torch not inspected)" in r.output.splitlines()[0]
    assert "Unchanged: GPUs 1x NVIDIA H200; NVML / nvidia-smi answer; driver 580.159.04 (CUDA 13.0)" in r.output
    assert "Result: no regressions." in r.output


def test_snapshot_list(tmp_path):
    ctx = h200(tmp_path)
    assert "No snapshots in" in run(ctx, "snapshot", "--list").output
    run(ctx, "snapshot", *FAST)
    run(ctx, "snapshot", *FAST)
    r = run(ctx, "snapshot", "--list")
    lines = [line for line in r.output.splitlines() if line.startswith("  ")]
    assert len(lines) == 2 and lines[-1].endswith("<- latest") and not lines[0].endswith("<- latest")
    assert "driver 580.159.04  torch not inspected  1x NVIDIA H200" in lines[0]


def test_snapshot_output_file_is_never_overwritten_without_force(tmp_path):
    ctx = h200(tmp_path)
    target = tmp_path / "before.json"
    target.write_text("my notes")
    r = run(ctx, "snapshot", "-o", str(target), *FAST)
    assert r.exit_code == 2 and "already exists; choose another name or pass --force" in r.output
    assert target.read_text() == "my notes"
    r = run(ctx, "snapshot", "-o", str(target), "--force", *FAST)
    assert r.exit_code == 0 and json.loads(target.read_text())["snapshot"]["host"] == HOST
    assert not (tmp_path / "state" / "snapshots" / "latest").exists()  # -o leaves the store alone
    assert run(ctx, "snapshot", "--force", *FAST).exit_code == 2  # --force needs -o


def test_snapshot_with_bench_keeps_the_results(tmp_path, monkeypatch):
    import envdoctor.bench.host as host

    calls = []

    def fake_run_bench(python, **kwargs):
        calls.append(kwargs)
        return slow_bench(640.0)

    monkeypatch.setattr(host, "run_bench", fake_run_bench)
    ctx = h200(tmp_path)
    out = tmp_path / "with-bench.json"
    r = run(ctx, "snapshot", "--bench", "-o", str(out), *FAST)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["bench"]["points"][0]["tflops"] == 640.0
    assert calls and calls[0]["env"]["PATH"] == ctx.env["PATH"]


def test_snapshot_not_written_when_a_probe_crashes(tmp_path, monkeypatch):
    import envdoctor.probes.pci as pci

    monkeypatch.setattr(pci, "probe", lambda ctx: 1 / 0)
    r = run(h200(tmp_path), "snapshot", *FAST)
    assert r.exit_code == 3 and "no snapshot written" in r.output
    assert not (tmp_path / "state" / "snapshots").exists()


# --- verify against the recorded baseline -------------------------------------------------------


def test_verify_the_same_machine(tmp_path):
    r = run(h200(tmp_path), "verify", "--baseline", str(FIXTURE), *FAST)
    assert r.exit_code == 0, r.output
    assert "torch: not inspected now (skipped with --skip torch)" in r.output


def test_upgrade_without_reboot(tmp_path):
    ctx = h200(
        tmp_path,
        files={
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
            "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
        },
    )
    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    r = run(ctx, "verify", "--baseline", str(FIXTURE), *FAST, env=bin.env())
    assert r.exit_code == 1, r.output
    out = r.output
    assert "✗ ED701 Driver upgraded without a reboot" in out
    assert "# on the host: sudo reboot" in out and "$ sudo reboot" not in out  # the H200 is a container
    assert "• ED720 Driver 580.159.04 -> 590.44.01 (upgrade, installed; loads at the next reboot)" in out
    assert "ED702" not in out and "ED704" not in out and "New problem ED102" not in out
    assert out.index("Regressions") < out.index("Changes") < out.index("Result: 1 regression(s)")


def test_clean_upgrade_580_to_590(tmp_path):
    ctx = h200(tmp_path, files=upgraded_files())
    bin = FakeBin(tmp_path / "b")
    upgraded_smi(bin)
    r = run(ctx, "verify", "--baseline", str(FIXTURE), *FAST, env=bin.env())
    assert r.exit_code == 0, r.output
    assert "• ED720 Driver 580.159.04 -> 590.44.01 (upgrade)" in r.output
    assert "- driver's CUDA 13.0 -> 13.1" in r.output
    assert "Result: no regressions; 1 change(s) listed above." in r.output


def test_lost_gpu(tmp_path):
    def two_gpus(doc):
        second = dict(
            doc["facts"]["driver"]["gpus"][0],
            index=1,
            uuid="GPU-0b1e2c3d-0000-4000-8000-000000000002",
            pci_bus_id="00000000:00:07.0",
        )
        doc["facts"]["driver"]["gpus"].append(second)

    r = run(h200(tmp_path), "verify", "--baseline", str(baseline(tmp_path, two_gpus)), *FAST)
    assert r.exit_code == 1, r.output
    assert "✗ ED702 GPU missing: 1 of the baseline's 2 GPU(s) are gone" in r.output
    assert "- missing: GPU 1: NVIDIA H200, GPU-0b1e2c3d-0000-4000-8000-000000000002" in r.output


def test_torch_stopped_seeing_cuda(tmp_path):
    ctx = h200(tmp_path)
    site = make_torch(
        tmp_path / "torch",
        version="2.11.0+cu130",
        cuda="13.0",
        init_error="CUDA driver version is insufficient for CUDA runtime version",
        devices=[gpu("NVIDIA H200", 9, 0)],
    )
    env = dict(ctx.env, PYTHONPATH=str(site))
    r = run(
        ctx,
        "verify",
        "--baseline",
        str(FIXTURE),
        "--python",
        sys.executable,
        "--skip",
        "conda",
        "--skip",
        "docker",
        "--skip",
        "toolkits",
        env=env,
    )
    assert r.exit_code == 1, r.output
    assert "✗ ED707 torch no longer sees the GPUs" in r.output
    assert "CUDA driver version is insufficient for CUDA runtime version" in r.output


def slow_bench(tflops, clock=1980, reasons=()):
    return BenchResult(
        dtypes=("bf16",),
        sizes=(8192,),
        budget_s=2.0,
        torch_version="2.11.0+cu130",
        devices=(BenchDevice(0, name="NVIDIA H200", max_sm_clock_mhz=1980, power_limit_w=700.0),),
        points=(BenchPoint(0, "bf16", 8192, tflops=tflops, sm_clock_mhz=clock, power_w=690.0, reasons=reasons),),
    )


def test_slower_bench(tmp_path, monkeypatch):
    import envdoctor.bench.host as host

    calls = []

    def fake_run_bench(python, **kwargs):
        calls.append(kwargs)
        return slow_bench(540.0, clock=1650, reasons=("sw_power_cap",))

    monkeypatch.setattr(host, "run_bench", fake_run_bench)
    path = baseline(tmp_path, lambda doc: doc.update(bench=to_data(slow_bench(640.0))))
    ctx = h200(tmp_path)
    r = run(ctx, "verify", "--baseline", str(path), "--bench", *FAST)
    assert r.exit_code == 1, r.output
    assert (
        "✗ ED712 Bench slower: GPU 0 (NVIDIA H200) bf16 n=8192: 640.0 -> 540.0 TFLOP/s (-15.6%, tolerance 10%)"
        in r.output
    )
    assert "- SM clock 1980 -> 1650 MHz (max 1980)" in r.output
    assert calls[0]["dtypes"] == ("bf16",) and calls[0]["sizes"] == (8192,) and calls[0]["budget"] == 2.0
    assert calls[0]["device"] == "0"
    r = run(ctx, "verify", "--baseline", str(path), "--bench", "--tolerance", "20", *FAST)
    assert r.exit_code == 0 and "bench: 1 of 1 point(s) within 20% of the baseline" in r.output
    r = run(ctx, "verify", "--baseline", str(path), *FAST)
    assert r.exit_code == 0 and "bench: the baseline has one; add --bench to compare" in r.output


def test_json_result(tmp_path):
    ctx = h200(
        tmp_path,
        files={
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": None,
            "/usr/local/nvidia/lib64/libnvidia-ml.so.590.44.01": "",
        },
    )
    bin = FakeBin(tmp_path / "b")
    bin.add("nvidia-smi", stdout=SMI_MISMATCH, rc=18)
    r = run(ctx, "verify", "--baseline", str(FIXTURE), "--json", *FAST, env=bin.env())
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["schema"] == "envdoctor.verify/1" and doc["exit_code"] == 1
    assert doc["baseline"]["path"] == str(FIXTURE) and doc["baseline"]["driver"] == "580.159.04"
    assert [f["code"] for f in doc["regressions"]] == ["ED701"]
    assert [f["code"] for f in doc["changes"]] == ["ED720"]
    assert doc["regressions"][0]["severity"] == "error" and doc["changes"][0]["severity"] == "info"


# --- bad input: one line, exit 2 ------------------------------------------------------------------


def one_line_exit_2(r, text):
    assert r.exit_code == 2, r.output
    assert text in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_no_baseline_says_how_to_make_one(tmp_path):
    r = run(h200(tmp_path), "verify", *FAST)
    one_line_exit_2(r, "no snapshot to compare with in ")
    assert "take one first with: envdoctor snapshot" in r.output


@pytest.mark.parametrize(
    "content, text",
    [
        (None, "does not exist; take a baseline with: envdoctor snapshot"),
        (FIXTURE.read_text()[:3000], "is not valid JSON (cut short or damaged"),
        ('{"schema": "envdoctor.report/2"}', "written by a newer envdoctor (schema envdoctor.report/2)"),
        ('{"schema": "envdoctor.bench/1"}', "is an envdoctor.bench document, not a report or snapshot"),
    ],
)
def test_unusable_baseline(tmp_path, content, text):
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    one_line_exit_2(run(h200(tmp_path), "verify", "--baseline", str(path), *FAST), text)


def test_bench_without_a_bench_in_the_baseline(tmp_path):
    r = run(h200(tmp_path), "verify", "--baseline", str(FIXTURE), "--bench", *FAST)
    one_line_exit_2(r, "has no bench results to compare with; take a baseline with: envdoctor snapshot --bench")


def test_another_machines_baseline_needs_force(tmp_path):
    def elsewhere(doc):
        doc["snapshot"]["host"] = doc["facts"]["system"]["hostname"] = "gpu-17"
        doc["facts"]["driver"]["gpus"][0]["uuid"] = "GPU-11111111-2222-3333-4444-555555555555"

    path = baseline(tmp_path, elsewhere)
    ctx = h200(tmp_path)
    r = run(ctx, "verify", "--baseline", str(path), *FAST)
    one_line_exit_2(r, "looks like another machine's snapshot: none of the baseline's 1 GPU UUID(s) is here")
    assert "taken on host 'gpu-17', this is 'h200-vm'" in r.output and "--force" in r.output
    r = run(ctx, "verify", "--baseline", str(path), "--force", *FAST)
    assert r.exit_code == 1  # compared: the baseline's GPU is "missing"
    assert "warning: compared with another machine's baseline (--force)" in r.output
    assert "ED702 GPU missing" in r.output


def test_same_gpus_in_a_new_container_is_the_same_machine(tmp_path):
    path = baseline(tmp_path, lambda doc: doc["snapshot"].update(host="3f2a9c1b7d0e"))
    r = run(h200(tmp_path), "verify", "--baseline", str(path), *FAST)
    assert r.exit_code == 0, r.output
    assert "the GPUs are the same (UUIDs match)" in r.output


def test_migrated_prerelease_baseline(tmp_path):
    doc = json.loads(FIXTURE.read_text())
    old = {
        "schema": "envdoctor.report/0",
        "host": HOST,
        "created": "2026-11-01T09:00:00Z",
        "facts": doc["facts"],
        "problems": [],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    r = run(h200(tmp_path), "verify", "--baseline", str(path), *FAST)
    assert r.exit_code == 0, r.output
    assert "is in the older format envdoctor.report/0" in r.output
    assert "(taken 2026-11-01 09:00:00 UTC, driver 580.159.04, torch 2.11.0+cu130)" in r.output


def test_usage_errors(tmp_path):
    ctx = h200(tmp_path)
    assert run(ctx, "verify", "--tolerance", "-5").exit_code == 2
    assert run(ctx, "snapshot", "--list", "-o", str(tmp_path / "x.json")).exit_code == 2


# --- files and folders that cannot be written: one line, exit 2, nothing replaced ------------------


def test_snapshot_onto_a_fifo_with_force_is_refused(tmp_path):
    target = tmp_path / "pipe"
    os.mkfifo(target)
    r = run(h200(tmp_path), "snapshot", "-o", str(target), "--force", *FAST)
    one_line_exit_2(r, f"cannot write {target}: it is a named pipe (FIFO), not a regular file")
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_snapshot_onto_a_fifo_without_force_does_not_ask_for_force(tmp_path):
    """It said 'pass --force to replace it', and with --force it refused again."""
    target = tmp_path / "pipe"
    os.mkfifo(target)
    r = run(h200(tmp_path), "snapshot", "-o", str(target), *FAST)
    one_line_exit_2(r, f"cannot write {target}: it is a named pipe (FIFO), not a regular file")
    assert "--force" not in r.output


def test_snapshot_onto_dev_null_with_force_is_refused():
    """As root the temp-file-and-rename write replaced the character device with a regular file."""
    before = os.lstat("/dev/null")
    r = CliRunner().invoke(cli, ["snapshot", "-o", "/dev/null", "--force", *FAST])
    one_line_exit_2(r, "cannot write /dev/null: it is a character device, not a regular file")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode) and os.lstat("/dev/null").st_rdev == before.st_rdev


def test_snapshot_into_a_folder_under_a_file_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    r = run(h200(tmp_path), "snapshot", "-o", str(tmp_path / "notes.txt" / "before.json"), *FAST)
    notes = tmp_path / "notes.txt"
    one_line_exit_2(r, f"cannot write {notes / 'before.json'}: {notes} is not a folder")


def test_snapshot_into_a_folder_that_does_not_exist_is_refused_not_created(tmp_path):
    """Issue 26: snapshot -o /nonexistent/dir/x.json created the folders."""
    target = tmp_path / "nonexistent" / "dir" / "x.json"
    r = run(h200(tmp_path), "snapshot", "-o", str(target), *FAST)
    one_line_exit_2(r, f"cannot write {target}: the folder {target.parent} does not exist (-o creates no folders")
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder")
def test_snapshot_into_a_folder_the_user_cannot_write_is_one_line(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    r = run(h200(tmp_path), "snapshot", "-o", str(locked / "before.json"), *FAST)
    one_line_exit_2(r, f"permission denied in {locked}")


def test_snapshot_with_a_home_that_is_a_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVDOCTOR_STATE_DIR")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    ctx = h200(tmp_path)
    r = run(ctx, "snapshot", *FAST, env=dict(ctx.env, HOME=str(home)))
    one_line_exit_2(r, f"cannot save snapshots in {home}/.local/state/envdoctor/snapshots: {home} is not a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder")
def test_snapshot_with_an_unwritable_state_folder_is_one_line(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir(mode=0o555)
    r = run(h200(tmp_path), "snapshot", *FAST)
    one_line_exit_2(r, f"permission denied in {state}")


def test_save_into_an_unusable_store_is_a_snapshot_error(tmp_path):
    """The check before the inspection aside, save() itself turns the folder's failure into one line."""
    from envdoctor.snapshot import SnapshotError, save

    (tmp_path / "f").write_text("")
    with pytest.raises(SnapshotError, match="cannot create the snapshot folder .*Not a directory"):
        save({}, tmp_path / "f" / "snapshots")

"""The one subprocess runner: every way a command can go wrong comes back as data."""

from envdoctor.run import run
from tests.fakes import FakeBin


def test_output_and_status(tmp_path):
    b = FakeBin(tmp_path)
    b.add("tool", stdout="out\n", stderr="err\n", rc=0)
    r = run(["tool"], env=b.env())
    assert r.ok and r.stdout == "out\n" and r.stderr == "err\n" and r.returncode == 0


def test_missing_program(tmp_path):
    r = run(["nvidia-smi"], env=FakeBin(tmp_path).env())
    assert r.error.kind == "not_found" and "nvidia-smi: not found" in r.error.message


def test_hang_is_cut_at_the_timeout(tmp_path):
    b = FakeBin(tmp_path)
    b.add("nvidia-smi", hang=True)
    r = run(["nvidia-smi"], env=b.env(), timeout=0.5)
    assert r.error.kind == "timeout" and r.error.message == "nvidia-smi did not answer in 0.5 s"
    assert r.seconds < 5


def test_crash_names_the_signal(tmp_path):
    b = FakeBin(tmp_path)
    b.add("python", signal=11)
    r = run(["python"], env=b.env())
    assert r.error.kind == "crashed" and "SIGSEGV" in r.error.message


def test_non_zero_exit_keeps_the_last_line(tmp_path):
    b = FakeBin(tmp_path)
    b.add("nvidia-smi", stdout="Failed to initialize NVML: Driver/library version mismatch\n", rc=18)
    r = run(["nvidia-smi"], env=b.env())
    assert r.error.kind == "exit_status"
    assert (
        r.error.message
        == "nvidia-smi exited with status 18: Failed to initialize NVML: Driver/library version mismatch"
    )


def test_undecodable_bytes_are_replaced(tmp_path):
    b = FakeBin(tmp_path)
    b.add_script("tool", r"printf 'ok\377\376\n'")
    assert run(["tool"], env=b.env()).stdout.startswith("ok\ufffd")


def test_output_is_capped_while_it_is_read(tmp_path, monkeypatch):
    import envdoctor.run as runner

    monkeypatch.setattr(runner, "MAX_OUTPUT", 1000)
    b = FakeBin(tmp_path)
    b.add_script("chatty", "head -c 5000000 /dev/zero | tr '\\\\0' x")
    r = run(["chatty"], env=b.env())
    assert r.ok and len(r.stdout) == 1000


def test_a_grandchild_holding_the_pipe_does_not_hang_the_runner(tmp_path):
    """After the program exits, an escaped background process keeps stdout open: wait only briefly."""
    import time

    b = FakeBin(tmp_path)
    b.add_script("daemonizes", "setsid sleep 30 & echo started")
    started = time.monotonic()
    r = run(["daemonizes"], env=b.env(), timeout=20)
    assert r.ok and r.stdout.startswith("started") and time.monotonic() - started < 10


def test_stdin_is_passed(tmp_path):
    b = FakeBin(tmp_path)
    b.add_script("reader", "cat")
    assert run(["reader"], env=b.env(), stdin="hello").stdout == "hello"


def test_a_directory_named_like_the_tool_is_said_to_be_one(tmp_path):
    (tmp_path / "bin" / "nvidia-smi").mkdir(parents=True)
    r = run(["nvidia-smi"], env={"PATH": str(tmp_path / "bin")})
    assert r.error.kind == "not_found"
    assert r.error.message == f"nvidia-smi: not installed ({tmp_path}/bin/nvidia-smi is a directory, not a program)"


def test_a_non_executable_file_named_like_the_tool_is_said_to_be_one(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "docker").write_text("#!/bin/sh\n")
    r = run(["docker", "info"], env={"PATH": str(tmp_path / "bin")})
    assert r.error.kind == "not_found" and "is not executable" in r.error.message


def test_lines_are_streamed_as_they_come_and_kept(tmp_path):
    b = FakeBin(tmp_path)
    b.add_script("talker", "echo one; echo two; printf three")
    seen = []
    r = run(["talker"], env=b.env(), on_line=seen.append)
    assert seen == ["one", "two", "three"] and r.stdout == "one\ntwo\nthree"


def test_an_over_long_streamed_line_is_cut(tmp_path, monkeypatch):
    import envdoctor.run as runner

    monkeypatch.setattr(runner, "MAX_LINE", 100)
    b = FakeBin(tmp_path)
    b.add_script("long", "yes x | head -c 2000 | tr -d '\\n'; echo; echo after")
    seen = []
    run(["long"], env=b.env(), on_line=seen.append)
    assert seen == ["x" * 100, "after"]


def test_a_silent_program_is_ended_by_the_idle_timeout(tmp_path):
    b = FakeBin(tmp_path)
    b.add_script("quiet", "echo hello; exec sleep 30")
    r = run(["quiet"], env=b.env(), timeout=20, idle_timeout=0.5, on_line=lambda line: None)
    assert r.error.kind == "timeout" and "printed nothing for 0.5 s" in r.error.message
    assert r.seconds < 5 and r.stdout == "hello\n"


def test_stop_sends_sigterm_first_so_the_program_can_answer(tmp_path):
    import threading

    b = FakeBin(tmp_path)
    b.add_script("polite", "trap 'echo bye; exit 0' TERM; echo started; while :; do sleep 0.1; done")
    stop = threading.Event()
    seen = []

    def on_line(line):
        seen.append(line)
        stop.set()

    r = run(["polite"], env=b.env(), timeout=20, on_line=on_line, stop=stop)
    assert r.error.kind == "interrupted" and "stopped on request" in r.error.message
    assert "bye" in r.stdout and r.seconds < 5


def test_a_grandchild_holding_the_pipes_is_bounded_by_the_timeout_not_two_seconds_per_pipe(tmp_path):
    """check --timeout 0.5 took 8-9 s when every tool left a grandchild on its pipes: the runner
    waited 2 s per pipe after the exit, outside the timeout. Now the whole run keeps to the timeout
    and the grandchild (in the program's process group) is ended."""
    import os
    import time

    b = FakeBin(tmp_path)
    pidfile = tmp_path / "grandchild.pid"
    b.add_script("lingers", f"sleep 30 & echo $! > {pidfile}; echo started; echo oops >&2")
    started = time.monotonic()
    r = run(["lingers"], env=b.env(), timeout=0.5)
    took = time.monotonic() - started
    assert r.ok and r.stdout.startswith("started") and r.stderr.startswith("oops")
    assert took < 1.5, took
    pid = int(pidfile.read_text())
    for _ in range(50):  # killed with its group: gone (or a zombie of init) within a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild still runs")


def test_output_still_coming_after_the_exit_is_read_before_the_group_is_ended(tmp_path):
    """The deadline ends only silent pipes: a grandchild (or the last of a child's output) still
    writing is read on, up to 2 s after the exit, then the group is ended."""
    import time

    b = FakeBin(tmp_path)
    b.add_script("trickles", "(for i in 1 2 3 4 5 6; do echo line$i; sleep 0.1; done; sleep 30) & echo started")
    started = time.monotonic()
    r = run(["trickles"], env=b.env(), timeout=0.3)
    assert r.ok and "line6" in r.stdout and time.monotonic() - started < 2.8

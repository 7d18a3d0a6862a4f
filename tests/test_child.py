"""The one child protocol (envdoctor/child): every way a child can go wrong is one ChildRun.

The children here are the real prelude with tiny scripts written into a temporary copy of the
child folder, run by the test interpreter (no torch needed)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

import envdoctor.child as child
from envdoctor.child import Job, decode_line, run_child, run_children


@pytest.fixture
def scripts(tmp_path, monkeypatch):
    """Write ``name -> source`` as child scripts that run_child can find."""
    folder = tmp_path / "child"
    folder.mkdir()
    (folder / "_prelude.py").write_text(child._resource("_prelude.py"))
    real = child._resource

    def resource(name):
        path = folder / name
        return path.read_text() if path.exists() else real(name)

    monkeypatch.setattr(child, "_resource", resource)

    def write(name, source):
        (folder / name).write_text(source)
        return name

    return write


def test_events_then_the_result(scripts):
    name = scripts(
        "ok.py", "def main(config):\n    emit('point', n=config['n'])\n    return {'twice': config['n'] * 2}\n"
    )
    seen = []
    r = run_child(name, {"n": 21}, python=sys.executable, timeout=30, on_event=seen.append)
    assert r.ok and r.result == {"twice": 42} and r.returncode == 0
    assert [e["kind"] for e in r.events] == ["point"] and r.events[0]["n"] == 21
    assert [e["kind"] for e in seen] == ["point"]


def test_what_the_script_prints_goes_to_stderr_not_into_the_protocol(scripts):
    name = scripts(
        "chatty.py",
        "import os\ndef main(config):\n    print('hello from torch')\n"
        "    os.write(1, b'C library noise\\n')\n    return {}\n",
    )
    r = run_child(name, python=sys.executable, timeout=30)
    assert r.ok and r.other == () and "hello from torch" in r.stderr and "C library noise" in r.stderr


def test_a_failure_with_a_kind(scripts):
    name = scripts("fail.py", "def main(config):\n    raise Failure('no_torch', 'torch is not installed')\n")
    r = run_child(name, python=sys.executable, timeout=30)
    assert not r.ok and r.failure == {"kind": "no_torch", "message": "torch is not installed"}
    assert r.error.kind == "unavailable" and r.error.message == "torch is not installed"


def test_a_bug_in_the_script_is_internal_with_its_traceback(scripts):
    name = scripts("bug.py", "def main(config):\n    return 1 / 0\n")
    r = run_child(name, python=sys.executable, timeout=30)
    assert r.failure["kind"] == "internal" and r.failure["message"] == "ZeroDivisionError: division by zero"
    assert "Traceback" in r.failure["traceback"] and r.error.kind == "crashed"


def test_a_segfault_names_the_signal_and_the_stage(scripts):
    name = scripts(
        "crash.py",
        "import os, signal\ndef main(config):\n    stage('import torch')\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    r = run_child(name, python=sys.executable, timeout=30, what="the torch check")
    assert r.error.kind == "crashed"
    assert r.error.message == f"{sys.executable} was killed by SIGSEGV during import torch"
    assert r.stage == "import torch" and r.result is None


def test_a_hang_is_cut_at_the_timeout_with_its_stack_dumped(scripts):
    name = scripts("hang.py", "import time\ndef main(config):\n    stage('CUDA init')\n    time.sleep(60)\n")
    started = time.monotonic()
    r = run_child(name, python=sys.executable, timeout=2.5, what="the torch check")
    assert time.monotonic() - started < 10
    assert r.error.kind == "timeout"
    assert r.error.message == f"{sys.executable} did not finish the torch check in 2.5 s during CUDA init"
    assert "time.sleep(60)" in r.stderr or "Thread" in r.stderr  # faulthandler's dump before the kill


def test_silence_is_cut_by_the_idle_timeout(scripts):
    name = scripts("quiet.py", "import time\ndef main(config):\n    emit('hello')\n    time.sleep(60)\n")
    r = run_child(name, python=sys.executable, timeout=30, idle_timeout=1.0)
    assert r.error.kind == "timeout" and "printed nothing for 1 s" in r.error.message


def test_stop_lets_the_child_answer_with_what_it_did(scripts):
    name = scripts(
        "loop.py",
        "import time\ndef main(config):\n    n = 0\n    emit('started')\n"
        "    while not STOP.is_set():\n        n += 1\n        time.sleep(0.01)\n"
        "    return {'stopped': True, 'loops': n}\n",
    )
    stop = threading.Event()
    r = run_child(
        name,
        python=sys.executable,
        timeout=30,
        stop=stop,
        on_event=lambda e: stop.set() if e["kind"] == "started" else None,
    )
    assert r.result["stopped"] is True and r.error.kind == "interrupted"


def test_a_large_config_goes_through_a_file(scripts):
    name = scripts("size.py", "def main(config):\n    return {'n': len(config['blob'])}\n")
    r = run_child(name, {"blob": "x" * 300_000}, python=sys.executable, timeout=30)
    assert r.ok and r.result == {"n": 300_000}


def test_an_interpreter_that_is_not_there(scripts):
    r = run_child("interpreter.py", python="/nonexistent/python3", timeout=5)
    assert r.error.kind == "not_found"
    assert r.error.message == "the target Python /nonexistent/python3 could not be run: /nonexistent/python3: not found"


def test_a_program_that_is_not_python_printed_no_result(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\ncat > /dev/null\necho 'I am not Python'\n")
    fake.chmod(0o755)
    r = run_child("interpreter.py", python=str(fake), timeout=5)
    assert r.error.kind == "unparseable" and "its stdout began with: I am not Python" in r.error.message


def test_an_exit_status_gives_the_last_line_and_a_syntax_error_hints_at_an_old_python(tmp_path):
    fake = tmp_path / "python2"
    fake.write_text(
        "#!/bin/sh\ncat > /dev/null\necho '  File \"<stdin>\", line 3' >&2\n"
        "echo 'SyntaxError: invalid syntax' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    r = run_child("bench/target/bench.py", python=str(fake), timeout=5)
    assert r.error.kind == "exit_status" and r.error.message.endswith(
        "exited with status 1: SyntaxError: invalid syntax (" + str(fake) + " is probably too old for "
        "envdoctor's bench/target/bench.py)"
    )


def test_decode_line_takes_only_protocol_lines():
    assert decode_line('{"envdoctor_child": 2, "kind": "point"}') == {"envdoctor_child": 2, "kind": "point"}
    assert decode_line('{"envdoctor_child": 1, "result": "python"}') is None  # another protocol
    assert decode_line('{"envdoctor_child": 2, "kind": 5}') is None
    assert decode_line('{"envdoctor_child": 2, "kind": "x", "n": ' + "9" * 5000 + "}") is None
    assert decode_line("[" * 100000) is None


def test_one_hung_child_does_not_take_the_others_down(scripts):
    ok = scripts("ok1.py", "def main(config):\n    return {'gpu': config['gpu']}\n")
    hang = scripts("hang1.py", "import time\ndef main(config):\n    time.sleep(60)\n")
    jobs = [
        Job(ok, {"gpu": 0}, sys.executable, 30),
        Job(hang, {"gpu": 1}, sys.executable, 2),
        Job(ok, {"gpu": 2}, sys.executable, 30),
    ]
    runs, interrupted = run_children(jobs)
    assert not interrupted
    assert [r.result for r in runs] == [{"gpu": 0}, None, {"gpu": 2}] and runs[1].error.kind == "timeout"


def test_ctrl_c_stops_every_child_and_keeps_what_they_said(scripts):
    name = scripts(
        "loop2.py",
        "import time\ndef main(config):\n    emit('started')\n"
        "    while not STOP.is_set():\n        time.sleep(0.01)\n    return {'gpu': config['gpu']}\n",
    )
    started = []

    def on_event(i, e):
        started.append(i)
        if len(started) == 2:  # both children run: press Ctrl-C
            threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()

    runs, interrupted = run_children([Job(name, {"gpu": g}, sys.executable, 30) for g in range(2)], on_event)
    assert interrupted and [r.result for r in runs] == [{"gpu": 0}, {"gpu": 1}]


def test_every_target_script_defines_main_and_every_part_parses_on_python_38():
    """child/ and every plugin's target/ folder: a file that no ``# envdoctor child uses:`` line
    names is a script and defines ``main``; every file parses on Python 3.8."""
    import ast
    import glob

    import envdoctor
    from envdoctor.child import uses

    base = os.path.dirname(envdoctor.__file__)
    found = [os.path.relpath(p, base) for p in glob.glob(os.path.join(base, "*", "target", "*.py"))]
    common = [
        n
        for n in os.listdir(os.path.join(base, "child"))
        if n.endswith(".py") and n not in ("__init__.py", "__main__.py")
    ]
    texts = {n: child._resource(n) for n in found + common}
    parts = {p for text in texts.values() for p in uses(text)}
    assert parts and "bench/target/matmul.py" in parts and "_torch_common.py" in parts
    assert parts <= set(texts) | {"_prelude.py"}, parts - set(texts)
    scripts = [n for n in texts if n not in parts and not n.startswith("_")]
    assert {
        "torch_probe.py",
        "bench/target/bench.py",
        "burn/target/burn.py",
        "fit/target/measure.py",
        "fleet/target/gather.py",
        "links/target/comms.py",
    } <= set(scripts)
    for name, text in texts.items():
        tree = ast.parse(text, feature_version=(3, 8))
        if name in scripts:
            assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), name

"""The script run inside the target interpreter, and the pure parsers of what it prints."""

from __future__ import annotations

import json
import sys

import pytest

from envdoctor.child import from_ran, run_child
from envdoctor.parse.torch import (
    cudnn_version,
    interpreter_tags,
    linux_platform_tags,
    nccl_version,
    parse_glibc,
    platform_tag,
    target_python,
    torch_facts,
)
from envdoctor.run import Ran
from tests.faketorch import find_python, gpu, make_torch, torch_env

OLD_PYTHONS = ["3.8", "3.9"]


def probe_child(python=sys.executable, **kw):
    return run_child("torch_probe.py", kw.pop("config", {}), python=python, timeout=60, **kw)


# --- the script itself ---------------------------------------------------------------------------


def test_the_child_reports_python_first_then_stages_then_the_answer(tmp_path):
    site = make_torch(
        tmp_path,
        version="2.8.0+cu128",
        cuda="12.8",
        arch_flags="sm_80 sm_90",
        devices=[gpu("NVIDIA H100 80GB HBM3", 9, 0)],
        cudnn=91002,
        nccl=[2, 27, 3],
    )
    child = probe_child(env=torch_env(site))
    assert child.ok and child.returncode == 0 and child.other == ()  # stdout held only protocol lines
    assert child.events[0]["kind"] == "python"
    assert {e["stage"] for e in child.of_kind("stage")} >= {
        "import torch",
        "torch.cuda.is_available()",
        "tiny CUDA operation",
        "/proc/self/maps",
    }
    t = child.result["torch"]
    assert (t["version"], t["cuda"], t["arch_flags"], t["available"], t["count"], t["tiny_op"]) == (
        "2.8.0+cu128",
        "12.8",
        "sm_80 sm_90",
        True,
        1,
        "ok",
    )
    assert t["devices"][0]["capability"] == [9, 0] and t["nccl"] == [2, 27, 3] and t["cudnn"] == 91002


@pytest.mark.parametrize("version", OLD_PYTHONS)
def test_runs_on_old_pythons(tmp_path, version):
    exe = find_python(version)
    if exe is None:
        pytest.skip(f"no Python {version} on this machine")
    site = make_torch(
        tmp_path,
        version="2.4.1+cu118",
        cuda="11.8",
        arch_flags="sm_37 sm_90",
        devices=[gpu("Tesla K80", 3, 7)],
        init_warnings=["old GPU"],
        torchvision="0.19.1+cu118",
    )
    child = probe_child(exe, env=torch_env(site))
    assert child.ok, child.error
    assert child.result["python"]["version"].startswith(version + ".")
    assert child.result["python"]["distributions"] == {
        "torch": "2.4.1+cu118",
        "torchvision": "0.19.1+cu118",
        "torchaudio": None,
    }
    assert child.result["torch"]["devices"][0]["capability"] == [3, 7]
    assert child.result["torch"]["warnings"] == ["UserWarning: old GPU"]


def test_torch_false_skips_torch(tmp_path):
    site = make_torch(tmp_path, on_import="segfault")
    child = probe_child(config={"torch": False}, env=torch_env(site))
    assert child.ok and child.result["torch"] == {"installed": False}


def test_local_torch_folder_does_not_shadow(tmp_path):
    """A folder named torch in the current directory (a source checkout) is not what gets inspected."""
    (tmp_path / "cwd" / "torch").mkdir(parents=True)
    (tmp_path / "cwd" / "torch" / "__init__.py").write_text("raise SystemExit('source tree imported')\n")
    site = make_torch(tmp_path / "fake", version="2.8.0+cpu", cuda=None)
    child = probe_child(env=torch_env(site), cwd=str(tmp_path / "cwd"))
    assert child.result["torch"]["version"] == "2.8.0+cpu"


# --- reading what it printed ------------------------------------------------------------------------

PY_LINE = (
    '{"envdoctor_child": 2, "kind": "python", "python": {"version": "3.12.3", '
    '"implementation": "cpython", "py_version_nodot": "312", "soabi": "cpython-312-x86_64-linux-gnu", '
    '"platform": "linux-x86_64", "maxsize_64bit": true, "libc": "glibc 2.39", '
    '"prefix": "/opt/torch/.venv", "base_prefix": "/usr", "conda_meta": false, "pip": "24.0", '
    '"distributions": {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130", "torchaudio": null}, '
    '"torch_installer": "uv"}}'
)
STAGE_LINE = (
    '{"envdoctor_child": 2, "kind": "stage", "stage": "torch.cuda.is_available()", '
    '"torch": {"installed": true, "version": "2.11.0+cu130", "cuda": "13.0"}}'
)


def replayed(stdout, returncode=0):
    return from_ran("torch_probe.py", "python3", Ran(("python3", "-"), returncode, stdout, "", 1.0))


def test_a_crash_keeps_the_stage_and_the_facts_so_far():
    child = replayed(PY_LINE + "\n" + STAGE_LINE + "\n")
    assert child.result is None and child.stage == "torch.cuda.is_available()"
    assert child.events[0]["python"]["version"] == "3.12.3"
    assert child.of_kind("stage")[-1]["torch"] == {"installed": True, "version": "2.11.0+cu130", "cuda": "13.0"}


def test_foreign_lines_are_kept_apart():
    child = replayed(
        "hello\n"
        + PY_LINE
        + "\n{not json\n"
        + '{"kind": "result"}\n'
        + '{"envdoctor_child": 2, "kind": "result", "result": {"torch": {"installed": false}}}\n'
    )
    assert child.ok and child.stage is None
    assert child.other == ("hello", "{not json", '{"kind": "result"}')
    assert child.result == {"torch": {"installed": False}}


def test_a_deep_or_huge_line_is_a_foreign_line_not_a_crash():
    deep = '{"envdoctor_child": 2, "kind": "stage", "x": ' + "[" * 100000 + "]" * 100000 + "}"
    child = replayed(PY_LINE + "\n" + deep + "\n")
    assert child.result is None and child.error.kind == "unparseable" and len(child.events) == 1


def test_target_python_from_child():
    py = replayed(PY_LINE).events[0]["python"]
    p = target_python(py, "/opt/torch/.venv/bin/python", "python3 on PATH")
    assert (p.version, p.implementation, p.interpreter_tag, p.abi_tag, p.pip, p.venv, p.conda_env) == (
        "3.12.3",
        "cpython",
        "cp312",
        "cp312",
        "24.0",
        True,
        False,
    )
    assert (p.platform, p.glibc, p.prefix) == ("linux_x86_64", "2.39", "/opt/torch/.venv")
    assert p.platform_tags[:2] == ("manylinux_2_39_x86_64", "manylinux_2_38_x86_64")  # packaging's order
    assert p.platform_tags[-3:] == ("manylinux_2_5_x86_64", "manylinux1_x86_64", "linux_x86_64")
    assert len(p.platform_tags) == 1 + 35 + 3


def test_platform_tags_aarch64_glibc_2_28():
    assert linux_platform_tags("2.28", "linux_aarch64") == (
        "manylinux_2_28_aarch64",
        "manylinux_2_27_aarch64",
        "manylinux_2_26_aarch64",
        "manylinux_2_25_aarch64",
        "manylinux_2_24_aarch64",
        "manylinux_2_23_aarch64",
        "manylinux_2_22_aarch64",
        "manylinux_2_21_aarch64",
        "manylinux_2_20_aarch64",
        "manylinux_2_19_aarch64",
        "manylinux_2_18_aarch64",
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
        "linux_aarch64",
    )


def test_platform_tags_without_glibc_and_off_linux():
    assert linux_platform_tags(None, "linux_x86_64") == ("linux_x86_64",)  # musl
    assert linux_platform_tags(None, "macosx_14_0_arm64") == ("macosx_14_0_arm64",)
    assert linux_platform_tags("2.12", "linux_i686")[-4:] == (
        "manylinux_2_6_i686",
        "manylinux_2_5_i686",
        "manylinux1_i686",
        "linux_i686",
    )
    assert "manylinux2010_i686" in linux_platform_tags("2.12", "linux_i686")
    assert platform_tag("linux-aarch64", is_64bit=False) == "linux_armv8l"
    assert parse_glibc("glibc 2.39") == "2.39" and parse_glibc("musl 1.2") is None


def test_interpreter_tags():
    assert interpreter_tags(
        {"implementation": "cpython", "py_version_nodot": "38", "soabi": "cpython-38-x86_64-linux-gnu"}
    ) == ("cp38", "cp38")
    assert interpreter_tags(
        {"implementation": "cpython", "py_version_nodot": "37", "soabi": "cpython-37m-x86_64-linux-gnu"}
    ) == ("cp37", "cp37m")
    assert interpreter_tags({"implementation": "cpython", "version_info": [3, 14, 0], "gil_disabled": True}) == (
        "cp314",
        "cp314t",
    )


def test_versions_of_cudnn_and_nccl():
    assert cudnn_version(91900) == "9.19.0"
    assert cudnn_version(90100) == "9.1.0"
    assert cudnn_version(8907) == "8.9.7"
    assert cudnn_version(None) is None
    assert nccl_version([2, 28, 9]) == "2.28.9"
    assert nccl_version("(2, 28, 9)") == "2.28.9"  # how tests/fixtures/h200-*/torch.txt wrote it
    assert nccl_version(2708) == "2.7.8"


def test_torch_facts_from_child_data():
    data = {
        "installed": True,
        "version": "2.11.0+cu130",
        "cuda": "13.0",
        "hip": None,
        "arch_flags": "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
        "available": True,
        "count": 1,
        "devices": [
            {
                "index": 0,
                "name": "NVIDIA H200",
                "capability": [9, 0],
                "memory": 150109880320,
                "sms": 132,
                "uuid": "c7d3a8fe-462a-58ba-1a7b-0c6231496ec4",
            }
        ],
        "tiny_op": "ok",
        "cudnn": 91900,
        "nccl": [2, 28, 9],
        "import_seconds": 5.0,
        "libraries": [
            {"path": "/usr/local/nvidia/lib64/libcuda.so.580.159.04", "via_ld_library_path": "/usr/local/nvidia/lib64"},
            {
                "path": "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9",
                "via_ld_library_path": None,
            },
            {
                "path": "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                "via_ld_library_path": None,
            },
            {
                "path": "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                "via_ld_library_path": None,
            },
        ],
    }
    py = {"distributions": {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130"}, "torch_installer": "pip"}
    t = torch_facts(data, py)
    assert t.cudnn_version == "9.19.0" and t.nccl_version == "2.28.9"
    assert t.cudnn_path == "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
    assert t.nccl_path == "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
    assert t.devices[0].capability == "9.0" and t.devices[0].uuid == "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4"
    assert t.arch_list[-1] == "sm_120" and t.torchvision == "0.26.0+cu130" and t.installer == "pip"
    assert t.libraries[0].via_ld_library_path == "/usr/local/nvidia/lib64"


def test_facts_survive_the_json_report():
    """TorchFacts with nested LoadedLibrary rows go through facts/serde.py and back unchanged."""
    from envdoctor.facts import Facts
    from envdoctor.facts.serde import from_data, to_data
    from envdoctor.probes.python import interpret
    from envdoctor.run import Ran
    from tests.fakes import recorded

    stdout = recorded("h200-driver580-cuda13", "torch-child.txt")
    child = from_ran("torch_probe.py", "python3", Ran(("python3", "-"), 0, stdout, "", 3.6))
    python, torch = interpret(child, "/opt/torch/.venv/bin/python", "python3 on PATH")
    facts = Facts(python=python, torch=torch)
    back = from_data(Facts, json.loads(json.dumps(to_data(facts))))
    assert back == facts
    assert back.torch.libraries[0].path.endswith("libcudnn_graph.so.9")
    assert back.python.platform_tags[0] == "manylinux_2_39_x86_64"


def test_pip_version_on_python_37_without_importlib_metadata():
    """`check --python` on a pyenv 3.7.16 showed "pip unknown" although pip 22.0.4 was installed."""
    exe = find_python("3.7")
    if exe is None:
        pytest.skip("no Python 3.7 on this machine")
    child = probe_child(exe)
    assert child.events[0]["python"]["pip"] not in (None, "unknown")


def test_the_protocol_2_recording_gives_the_facts_of_the_converted_protocol_1_one():
    """torch-child.txt was recorded in protocol 1 and rewritten; torch-child-protocol2.txt is the
    child of today recorded on another instance of the same H200 image: the facts agree."""
    from envdoctor.probes.python import interpret
    from tests.fakes import recorded

    def facts(name):
        child = from_ran(
            "torch_probe.py", "python3", Ran(("python3", "-"), 0, recorded("h200-driver580-cuda13", name), "", 4.0)
        )
        return interpret(child, "/opt/torch/.venv/bin/python3", "python3 on PATH")

    (py1, t1), (py2, t2) = facts("torch-child.txt"), facts("torch-child-protocol2.txt")
    assert t2.error is None and py2.error is None
    for field in (
        "version",
        "cuda",
        "cudnn_version",
        "nccl_version",
        "arch_list",
        "cuda_available",
        "tiny_op",
        "torchvision",
        "torchaudio",
    ):
        assert getattr(t1, field) == getattr(t2, field), field
    assert (py1.version, py1.platform_tags[:2]) == (py2.version, py2.platform_tags[:2])
    assert t2.devices[0].name == "NVIDIA H200" and t2.devices[0].capability == "9.0"

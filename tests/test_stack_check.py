"""``check`` and the libraries above torch: fake target interpreters with broken installs.

The fakes (tests/fakestack.py) are dist-info folders with the releases' Requires-Dist lines and
packages whose import raises the real error texts of real breakages (each with its issue), warns as
xFormers does, crashes with SIGSEGV or hangs. The child runs in a real interpreter; each import in
a real grandchild process.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from envdoctor.cli import cli
from envdoctor.facts import Facts
from envdoctor.probes.context import Context
from envdoctor.probes.python import probe
from envdoctor.stack import host
from envdoctor.stack.rules import RULES
from tests.fakes import cli_runner
from tests.fakestack import DEEPSPEED_JIT, ERRORS, XFORMERS_BUILT_FOR, deepspeed_prebuilt, make_extension
from tests.faketorch import gpu, make_torch, torch_env
from tests.machines import h200

ROOT_PKG = Path(__file__).parent.parent / "envdoctor"
SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/report-1.json").read_text())
H200 = gpu("NVIDIA H200", 9, 0, memory=150109880320, sms=132)
V100 = gpu("Tesla V100-SXM2-32GB", 7, 0)


def _probe(site, **env):
    return probe(Context(env=torch_env(site, **env), python=sys.executable, torch_timeout=60))


def _findings(python, torch, table=None):
    from envdoctor.table import load_table

    facts = Facts(python=python, torch=torch)
    return [f for rule in RULES for f in rule(facts, table or load_table())]


def _codes(findings):
    return sorted(f.code for f in findings)


@pytest.fixture
def short_budget(monkeypatch):
    monkeypatch.setattr(host, "IMPORT_BUDGET", 4.0)


def test_a_healthy_stack_imports_and_has_no_findings(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "xformers", "0.0.32.post1", "xformers")
    make_extension(site, "flash-attn", "2.8.3", "flash_attn")
    python, torch = _probe(site)
    stack = torch.extensions
    assert stack.checked and stack.torch_cxx11_abi is True and stack.imports_skipped is None
    assert [(e.name, e.version, e.outcome.ok) for e in stack.extensions] == [
        ("flash-attn", "2.8.3", True),
        ("xformers", "0.0.32.post1", True),
    ]
    assert stack.get("xformers").requires == ("numpy", "torch==2.8.0")
    assert _findings(python, torch) == []


def test_flash_attn_built_with_the_cxx11_abi_on_a_torch_without_it_gets_the_prebuilt_wheel(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=False)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn", raises=ERRORS["fa2_cxx11abi"])
    python, torch = _probe(site)
    (f,) = _findings(python, torch)
    assert (f.code, f.severity) == ("ED330", "error")
    assert f.title == "flash-attn 2.8.3 does not load: built with the other C++ ABI (cxx11abi) than this torch"
    assert any("undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx11" in ev for ev in f.evidence)
    py = "cp{}{}".format(*sys.version_info[:2])
    if sys.version_info[:2] in ((3, 9), (3, 10), (3, 11), (3, 12), (3, 13)):
        assert f.fix == (
            "pip install --no-deps --force-reinstall https://github.com/Dao-AILab/flash-attention/releases/download/"
            f"v2.8.3/flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-{py}-{py}-linux_x86_64.whl   # the prebuilt wheel "
            "for this torch, CUDA, C++ ABI and Python",
        )


def test_a_segfault_and_a_hang_are_isolated_and_named(tmp_path, short_budget):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "vllm", "0.11.0", "vllm", requires=["torch==2.8.0"], on_import="segfault")
    make_extension(site, "bitsandbytes", "0.47.0", "bitsandbytes", on_import="hang")
    make_extension(site, "xformers", "0.0.32.post1", "xformers")
    started = time.monotonic()
    python, torch = _probe(site)
    assert time.monotonic() - started < 30
    assert torch.error is None and torch.version == "2.8.0+cu128"  # torch's own facts are whole
    stack = torch.extensions
    assert stack.get("vllm").outcome.signal == 11 and stack.get("bitsandbytes").outcome.timed_out
    assert stack.get("xformers").outcome.ok is True  # the others still answered
    found = {f.code: f for f in _findings(python, torch)}
    assert set(found) == {"ED331", "ED332"}
    assert found["ED331"].title == "import vllm (vllm 0.11.0) crashed the interpreter (SIGSEGV)"
    assert found["ED332"].title.startswith("import bitsandbytes (bitsandbytes 0.47.0) hung: killed after 4 s")


def test_xformers_built_for_another_torch_warns_on_import_and_its_pin_says_which(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(site, "xformers", "0.0.28.post3", "xformers", stderr=XFORMERS_BUILT_FOR)
    python, torch = _probe(site)
    found = {f.code: f for f in _findings(python, torch)}
    assert set(found) == {"ED330", "ED333"}
    assert found["ED330"].title == "xformers 0.0.28.post3 does not load: built for another torch release"
    assert "built for PyTorch 2.2.0+cu121 with CUDA 12.1; this torch is 2.3.0+cu121" in found["ED330"].evidence[1]
    assert found["ED333"].title == "xformers 0.0.28.post3 requires torch==2.5.1; 2.8.0+cu128 is installed"
    assert found["ED333"].fix[0] == (
        "pip install xformers==0.0.32.post1 torch==2.8.0 --extra-index-url "
        "https://download.pytorch.org/whl/cu128   # the xformers release that pins this torch"
    )


def test_vllm_pins_a_torch_that_is_not_installed_and_an_xformers_behind_a_marker(tmp_path):
    site = make_torch(tmp_path, version="2.9.1+cu128", cuda="12.8", devices=[H200])
    make_extension(site, "vllm", "0.10.2", "vllm")
    make_extension(site, "xformers", "0.0.32.post1", "xformers")
    python, torch = _probe(site)
    pins = [f for f in _findings(python, torch) if f.code == "ED333"]
    assert sorted(f.title for f in pins) == [
        "vllm 0.10.2 requires torch==2.8.0; 2.9.1+cu128 is installed",
        "xformers 0.0.32.post1 requires torch==2.8.0; 2.9.1+cu128 is installed",
    ]
    # xformers' own line is behind a marker that holds on Linux x86_64 and is satisfied: no finding for it
    assert not any("requires xformers" in f.title for f in pins)


def test_a_v100_with_flash_attn_2_and_a_missing_cudart_of_another_cuda(tmp_path):
    site = make_torch(tmp_path, version="2.7.1+cu118", cuda="11.8", devices=[V100])
    make_extension(site, "flash-attn", "2.8.3", "flash_attn", raises=ERRORS["fa2_cudart12"])
    python, torch = _probe(site)
    found = {f.code: f for f in _findings(python, torch)}
    assert found["ED334"].title == "flash-attn 2.8.3 does not support 7.0 GPUs (needs compute capability 8.0 or newer)"
    assert found["ED330"].title == "flash-attn 2.8.3 does not load: built for another CUDA release"
    assert "it wants libcudart.so.12 (CUDA 12); this torch is CUDA 11.8" in found["ED330"].evidence[1]


def test_deepspeed_ops_built_for_another_torch_and_cuda(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(
        site,
        "deepspeed",
        "0.17.5",
        "deepspeed",
        files={"git_version_info_installed.py": deepspeed_prebuilt("2.4", "12.1")},
    )
    python, torch = _probe(site)
    (f,) = [f for f in _findings(python, torch) if f.code == "ED335"]
    assert (
        f.title
        == "DeepSpeed 0.17.5's prebuilt ops were compiled with torch 2.4 (now 2.8.0+cu128) and CUDA 12.1 (now 12.8)"
    )
    assert "installed_ops cpu_adam, fused_adam" in f.evidence[0]


def test_deepspeed_jit_without_ninja_is_a_warning(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(
        site,
        "deepspeed",
        "0.14.0",
        "deepspeed",
        requires=["torch"],
        files={"git_version_info_installed.py": DEEPSPEED_JIT},
    )
    python, torch = _probe(site, PATH="/nonexistent")
    assert torch.extensions.build.ninja is None
    (f,) = [f for f in _findings(python, torch) if f.code == "ED335"]
    assert f.severity == "warning" and f.fix == ("pip install ninja",)


def test_pypi_apex_is_not_nvidia_apex(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(site, "apex", "0.9.10.dev0", "apex", requires=["cryptacular", "zope.sqlalchemy"])
    python, torch = _probe(site)
    (f,) = [f for f in _findings(python, torch) if f.code == "ED336"]
    assert f.severity == "error" and "unrelated package" in f.title


def test_when_torch_does_not_import_the_libraries_are_listed_but_not_imported(tmp_path):
    site = make_torch(
        tmp_path,
        version="2.8.0+cu128",
        cuda="12.8",
        on_import="import_error",
        import_error_text="libtorch_cuda.so: cannot open shared object file",
    )
    make_extension(site, "xformers", "0.0.32.post1", "xformers", on_import="segfault")
    python, torch = _probe(site)
    stack = torch.extensions
    assert stack.imports_skipped == "torch does not import here"
    assert stack.get("xformers").outcome is None
    assert [f.code for f in _findings(python, torch)] == []  # torch's own finding speaks for it


def test_an_editable_source_build_with_no_ninja_and_no_max_jobs_is_ed337(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(
        site,
        "flash-attn",
        "2.8.3",
        "flash_attn",
        raises=ERRORS["fa2_aten"],
        direct_url={"url": "file:///src/flash-attention", "dir_info": {"editable": True}},
    )
    python, torch = _probe(site, PATH="/nonexistent")
    e = torch.extensions.get("flash-attn")
    assert e.direct_url.editable and e.direct_url.url == "file:///src/flash-attention"
    found = {f.code: f for f in _findings(python, torch)}
    assert found["ED330"].title == "flash-attn 2.8.3 does not load: built for another torch release"
    build = found["ED337"]
    assert any(ev.startswith("ninja is not on PATH") for ev in build.evidence)
    assert any(ev.startswith("TORCH_CUDA_ARCH_LIST is unset") and "(these GPUs: 9.0)" in ev for ev in build.evidence)
    assert 'TORCH_CUDA_ARCH_LIST="9.0" pip install --no-build-isolation' in build.fix[-1]


def test_check_json_and_text_show_the_extensions(tmp_path):
    ctx = h200(tmp_path)
    site = make_torch(tmp_path, version="2.11.0+cu130", cuda="13.0", devices=[H200], cxx11_abi=True)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn", raises=ERRORS["fa2_torch"])
    env = {**torch_env(site), "PATH": ctx.env["PATH"]}
    args = ["check", "--root", str(ctx.root), "--skip", "conda", "--skip", "docker", "--python", sys.executable]
    r = cli_runner().invoke(cli, args + ["--json"], env={**ctx.env, **env}, catch_exceptions=False)
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    ext = doc["facts"]["torch"]["extensions"]["extensions"]
    assert [(e["name"], e["outcome"]["ok"], e["outcome"]["error_type"]) for e in ext] == [
        ("flash-attn", False, "ImportError")
    ]
    assert "ED330" in {f["code"] for f in doc["findings"]}
    text = cli_runner().invoke(cli, args, env={**ctx.env, **env}, catch_exceptions=False).output
    assert "Extensions above torch" in text and "flash-attn     2.8.3 (pip): does not load (ImportError)" in text
    assert "ED330 error: flash-attn 2.8.3 does not load: built for another torch release" in text
    md = cli_runner().invoke(cli, args + ["--markdown"], env={**ctx.env, **env}, catch_exceptions=False).output
    assert "**Extensions above torch**" in md and "| flash-attn | 2.8.3 (pip): does not load (ImportError) |" in md


@pytest.mark.parametrize("version", ["3.8", "3.9"])
def test_the_extension_part_runs_on_old_pythons(tmp_path, version):
    from tests.faketorch import find_python

    exe = find_python(version)
    if exe is None:
        pytest.skip(f"no Python {version} on this machine")
    site = make_torch(tmp_path, version="2.4.1+cu121", cuda="12.1", devices=[V100], cxx11_abi=False)
    make_extension(site, "flash-attn", "2.6.3", "flash_attn", requires=["torch", "einops"], raises=ERRORS["fa2_torch"])
    make_extension(site, "xformers", "0.0.28.post3", "xformers", on_import="segfault")
    python, torch = probe(Context(env=torch_env(site), python=exe, torch_timeout=60))
    assert python.version.startswith(version + ".")
    found = {f.code for f in _findings(python, torch)}
    assert {"ED330", "ED331", "ED333", "ED334"} <= found


def test_flash_attn_3_is_imported_by_the_module_it_installs(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[gpu("NVIDIA A100-SXM4-80GB", 8, 0)])
    make_extension(site, "flash-attn-3", "3.0.0b1", "flash_attn_3", requires=["torch"])
    python, torch = _probe(site)
    e = torch.extensions.get("flash-attn-3")
    assert e.modules[0] == "flash_attn_3" and e.outcome.ok is True
    (f,) = _findings(python, torch)
    assert f.code == "ED334" and f.title == (
        "flash-attn-3 3.0.0b1 does not support 8.0 GPUs (needs compute capability 9.0 only)"
    )


def test_an_import_that_exits_the_interpreter_is_a_crash_not_silence(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(site, "mamba-ssm", "2.2.4", "mamba_ssm", requires=["torch"], on_import="exit")
    python, torch = _probe(site)
    found = {f.code: f for f in _findings(python, torch)}
    f = found["ED331"]
    assert f.title.endswith("ended the interpreter before the import returned (exit status 3)")
    assert set(found) == {"ED331", "ED337"}  # mamba-ssm is rebuilt from source here: what that needs
    assert "fatal: libflash_attn.so: bad ELF header" in f.evidence


def test_flash_attn_missing_its_own_cuda_module_is_reinstalled_not_pip_install_flash_attn_2_cuda(tmp_path):
    """`No module named 'flash_attn_2_cuda'`: the fix was `pip install flash_attn_2_cuda`, a package
    that does not exist (the module is flash-attn's own compiled part)."""
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn", raises=ERRORS["fa2_no_cuda_module"])
    python, torch = _probe(site)
    (f,) = _findings(python, torch)
    assert f.code == "ED330"
    assert not any("pip install flash_attn_2_cuda" in x for x in f.fix), f.fix
    assert any("flash-attn" in x or "flash_attn-2.8.3" in x for x in f.fix), f.fix


def _note_pid(site, module, log):
    """The fake ``module`` also writes which process imported it (before whatever else it does)."""
    init = site / module / "__init__.py"
    note = f"import os as _o\nwith open({str(log)!r}, 'a') as _f:\n    _f.write('{module} %d\\n' % _o.getpid())\n"
    init.write_text(note + init.read_text())


def test_the_libraries_share_one_import_process_and_those_after_a_crash_are_imported_each_alone(tmp_path):
    """torch is imported once for all the libraries; a segfault ends that process, is named on the
    library it was importing, and the libraries after it are still checked, each in its own."""
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn")  # the catalog's order
    make_extension(site, "xformers", "0.0.32.post1", "xformers", on_import="segfault")
    make_extension(site, "bitsandbytes", "0.47.0", "bitsandbytes", raises=ERRORS["bnb_no_binary"])
    make_extension(site, "vllm", "0.11.0", "vllm", requires=["torch==2.8.0"])
    log = tmp_path / "imported-by.txt"
    for module in ("flash_attn", "xformers", "bitsandbytes", "vllm"):
        _note_pid(site, module, log)
    python, torch = _probe(site)
    stack = torch.extensions
    assert stack.get("flash-attn").outcome.ok is True
    assert stack.get("xformers").outcome.signal == 11 and stack.get("xformers").outcome.ok is None
    bnb = stack.get("bitsandbytes").outcome
    assert (bnb.ok, bnb.error_type) == (False, "OSError") and "libbitsandbytes_cpu.so" in bnb.message
    assert stack.get("vllm").outcome.ok is True
    pids = dict(line.split() for line in log.read_text().splitlines())
    assert pids["flash_attn"] == pids["xformers"]  # one process until the crash
    assert len({pids["xformers"], pids["bitsandbytes"], pids["vllm"]}) == 3  # after it: each alone
    found = {f.code: f for f in _findings(python, torch)}
    assert found["ED331"].title == "import xformers (xformers 0.0.32.post1) crashed the interpreter (SIGSEGV)"
    assert "ED330" in found and "bitsandbytes" in found["ED330"].title


def test_a_healthy_stack_imports_torch_once(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn")
    make_extension(site, "xformers", "0.0.32.post1", "xformers", stderr=XFORMERS_BUILT_FOR)
    make_extension(site, "torchvision", "0.23.0", "torchvision")
    log = tmp_path / "imported-by.txt"
    for module in ("flash_attn", "xformers", "torchvision"):
        _note_pid(site, module, log)
    python, torch = _probe(site)
    stack = torch.extensions
    assert [e.outcome.ok for e in stack.extensions] == [True, True, True]
    assert len({line.split()[1] for line in log.read_text().splitlines()}) == 1
    # each library's own standard error, cut out of the one process's
    assert "xFormers can't load C++/CUDA extensions" in (stack.get("xformers").outcome.stderr or "")
    assert not stack.get("flash-attn").outcome.stderr and not stack.get("torchvision").outcome.stderr


def test_the_libraries_are_imported_while_the_torch_child_imports_torch_itself(tmp_path):
    """The shared process starts before the torch child's own ``import torch`` (which takes a second
    here), not after it: the two imports of torch run side by side."""
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    make_extension(site, "flash-attn", "2.8.3", "flash_attn")
    make_extension(site, "xformers", "0.0.32.post1", "xformers")
    log = tmp_path / "imports.txt"
    init = site / "torch" / "__init__.py"
    note = (
        "import os as _o, time as _t\nwith open({log!r}, 'a') as _f:\n"
        "    _f.write('torch-{what} %d %r\\n' % (_o.getpid(), _t.time()))\n"
    )
    init.write_text(
        note.format(log=str(log), what="start")
        + init.read_text()
        + "\n_t.sleep(1.0)\n"
        + note.format(log=str(log), what="end")
    )
    for module in ("flash_attn", "xformers"):
        _note_pid(site, module, log)
    python, torch = _probe(site)
    assert [e.outcome.ok for e in torch.extensions.extensions] == [True, True]
    lines = [line.split() for line in log.read_text().splitlines()]
    libraries = {pid for what, pid, *_ in lines if not what.startswith("torch")}
    (shared,) = libraries
    ends = {pid: float(t) for what, pid, t in (x for x in lines if x[0] == "torch-end")}
    starts = {pid: float(t) for what, pid, t in (x for x in lines if x[0] == "torch-start")}
    (child,) = set(ends) - libraries  # the torch child itself
    assert starts[shared] < ends[child]


def test_no_import_process_outlives_a_torch_child_that_was_killed(tmp_path):
    """``import torch`` hangs: the torch child is killed at --torch-timeout, and the libraries' process,
    started beside it (in a session of its own), goes with it instead of hanging on."""
    import os

    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200])
    make_extension(site, "flash-attn", "2.8.3", "flash_attn")
    make_extension(site, "xformers", "0.0.32.post1", "xformers")
    log = tmp_path / "torch-importers.txt"
    init = site / "torch" / "__init__.py"
    init.write_text(
        f"import os as _o, time as _t\nwith open({str(log)!r}, 'a') as _f:\n"
        "    _f.write('%d\\n' % _o.getpid())\n_t.sleep(600)\n" + init.read_text()
    )
    python, torch = probe(Context(env=torch_env(site), python=sys.executable, torch_timeout=5))
    assert torch.error is not None and torch.error.kind == "timeout"
    pids = [int(p) for p in log.read_text().split()]
    assert len(pids) == 2  # the torch child and the libraries' process

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"

    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)]


def test_libraries_whose_turn_comes_after_the_budget_are_not_called_hung(tmp_path):
    """A hang first, then more slow libraries than run at once: those the deadline cuts before they had
    the time a hang is judged by, or that never started, are "not checked" (ED338), not ED332 hangs
    killed after 0 s; the hang itself is still a hang."""
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("_ext", ROOT_PKG / "stack" / "target" / "extensions.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[H200], cxx11_abi=True)
    (site / "hangs.py").write_text("import time\ntime.sleep(600)\n")
    slow = [f"slow{i}" for i in range(ext.PARALLEL + 4)]
    for name in slow:
        (site / f"{name}.py").write_text("import time\ntime.sleep(1.5)\n")
    env = dict(torch_env(site), PATH=os.environ.get("PATH", ""))
    started = time.monotonic()
    results = ext.import_all(["hangs"] + slow, started + 3.0, env=env)
    assert time.monotonic() - started < 15
    assert results["hangs"].get("timeout") is True
    cut = [m for m in slow if results[m].get("start_error")]
    assert cut, {m: (r.get("ok"), r.get("timeout"), r.get("seconds")) for m, r in results.items()}
    assert not [m for m in slow if results[m].get("timeout")], results

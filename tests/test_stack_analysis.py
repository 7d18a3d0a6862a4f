"""The pure parts of the stack checks against real texts (tests/fixtures/stack/README.md), the real
data/extensions.toml, and one run of the child with the real CPU torch."""

from __future__ import annotations

import sys

import pytest

from envdoctor.stack.analysis import arch_list, classify, marker_environment, max_jobs, pin_conflicts
from envdoctor.stack.table import load_extensions
from envdoctor.table.schema import TableError
from tests.fakestack import ERRORS, XFORMERS_BUILT_FOR
from tests.tables import REAL


@pytest.mark.parametrize(
    "key, abi, cuda, kind",
    [
        ("fa2_cxx11abi", False, "12.1", "cxx11_abi"),
        ("fa2_cxx11abi", True, "12.8", "other_torch"),  # same symbol, torch with the new ABI: the torch moved on
        ("fa2_torch", True, "12.8", "other_torch"),
        ("fa2_aten", False, "12.4", "other_torch"),
        ("fa2_cudart12", False, "11.8", "other_cuda"),
        ("fa2_cudart12", False, "12.4", "missing_cuda_library"),
        ("vllm_cudart11", True, "12.8", "other_cuda"),
        ("bnb_no_binary", None, "12.1", "missing_cuda_library"),
        ("fa2_arch", True, "12.8", "arch"),
    ],
)
def test_real_import_errors_are_classified(key, abi, cuda, kind):
    error_type, text, _source = ERRORS[key]
    assert classify(error_type, text, torch_abi=abi, torch_cuda=cuda).kind == kind


def test_the_old_abi_symbol_on_a_cxx11_torch():
    # the symbol flash-attention's workflow names for a non-C++11 build on an NGC (C++11 ABI) torch
    b = classify("ImportError", "x.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs", torch_abi=True)
    assert b.kind == "cxx11_abi" and "old (pre-C++11) ABI" in b.detail


def test_xformers_warning_names_the_torch_it_was_built_for():
    b = classify(None, None, XFORMERS_BUILT_FOR)
    assert (b.kind, b.detail) == (
        "other_torch",
        "its C++/CUDA part was built for PyTorch 2.2.0+cu121 with CUDA 12.1; this torch is 2.3.0+cu121",
    )
    cpu = classify(None, None, XFORMERS_BUILT_FOR.replace("(you have 2.3.0+cu121)", "(you have 2.2.0+cpu)"))
    assert cpu.kind == "other_cuda"


def test_other_errors_keep_their_first_line():
    assert classify("ModuleNotFoundError", "No module named 'einops'").kind == "missing_module"
    assert classify("OSError", "version `GLIBCXX_3.4.32' not found (required by x.so)").kind == "libstdcxx"
    assert classify("RuntimeError", "something new\nmore").detail == "something new"


def test_pins_with_markers_and_extras():
    env = marker_environment("3.12.3", "aarch64")
    requires = [
        'xformers==0.0.32.post1; platform_machine == "x86_64"',
        "torch==2.8.0",
        'flash-attn>=2.7; extra == "fa"',
        "numpy<2",
    ]
    found = pin_conflicts("vllm", "0.10.2", requires, {"torch": "2.8.0+cu128", "xformers": "0.0.28.post3"}, env)
    assert found == ()  # xformers' line is for x86_64 only, the extra is not asked, torch matches
    found = pin_conflicts("vllm", "0.10.2", requires, {"torch": "2.9.0"}, marker_environment("3.12.3", "x86_64"))
    assert [c.requirement for c in found] == ["torch==2.8.0"]


def test_build_numbers():
    assert arch_list(["9.0", "8.0", "9.0", "12.0"]) == "8.0;9.0;12.0"
    assert max_jobs(48 * 2**30, 64, 24) == 2 and max_jobs(10 * 2**30, 64, 24) == 1
    assert max_jobs(1000 * 2**30, 8, 24) == 8 and max_jobs(None, 8, 24) is None


def test_the_real_data_file_loads_and_every_row_is_sourced():
    ext = load_extensions(REAL)
    rows = ext.archs + ext.pins + ext.wheels + ext.bad + ext.gccs + ext.images + ext.abis
    assert rows and all(r.source.startswith("https://") and r.checked for r in rows)
    assert ext.max_gcc("13.0") == 15 and ext.arch("flash-attn-3").max_cc == "9.0"


def test_a_broken_row_is_one_line(tmp_path):
    (tmp_path / "extensions.toml").write_text(
        '[[gcc]]\ncuda = "12.4"\nmax_gcc = "13"\nsource = "x"\nchecked = "2026-12-01"\n'
    )
    with pytest.raises(TableError, match=r"\[\[gcc\]\] 12.4: field 'max_gcc' must be an integer"):
        load_extensions(tmp_path)


def test_the_child_with_the_real_cpu_torch(tmp_path):
    pytest.importorskip("torch")
    from envdoctor.probes.context import Context
    from envdoctor.probes.python import probe
    from tests.fakestack import make_extension

    site = tmp_path / "site"
    site.mkdir()
    make_extension(site, "xformers", "0.0.32.post1", "xformers", stderr=XFORMERS_BUILT_FOR)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    _, torch = probe(Context(env=env, python=sys.executable, torch_timeout=120))
    assert torch.installed and torch.version and torch.version.startswith("2.")
    stack = torch.extensions
    assert stack.torch_cxx11_abi in (True, False)  # the real torch says which
    x = stack.get("xformers")
    assert x.outcome.ok is True and "xFormers can't load" in x.outcome.stderr


def test_torchvision_of_another_torch():
    # what this project's CPU box says of PyPI's torchvision beside torch 2.13.0 (its machine notes)
    b = classify("RuntimeError", "operator torchvision::nms does not exist", torch_version="2.13.0+cpu")
    assert b.kind == "other_torch" and "torchvision::nms" in b.detail


def test_extension_facts_survive_a_saved_report():
    from envdoctor.facts.python import TorchFacts
    from envdoctor.facts.serde import from_data, to_data
    from envdoctor.stack.host import interpret

    stack = interpret(
        {
            "installed": [
                {
                    "name": "vllm",
                    "dist": "vllm",
                    "version": "0.11.0",
                    "info": "/s/vllm.dist-info",
                    "requires": ["torch==2.8.0"],
                    "modules": ["vllm"],
                }
            ],
            "imports": {"vllm": {"returncode": -11, "seconds": 0.5}},
            "torch_cxx11_abi": True,
        }
    )
    torch = TorchFacts(installed=True, version="2.8.0+cu128", extensions=stack)
    back = from_data(TorchFacts, to_data(torch))
    assert back == torch and back.extensions.get("vllm").outcome.signal == 11

"""One common module for the scripts run in the target interpreter (envdoctor/child/_torch_common.py):
the clock, the dtype map, rel_error, device_info and free bytes are defined there and nowhere else
(there were two Clocks, three dtype maps, two rel_errors, NaN in bench and None in burn, and two
device_infos writing the PCI bus id in two forms)."""

from __future__ import annotations

import ast
import glob
import math
import os

import pytest

import envdoctor
from envdoctor.child import _resource

BASE = os.path.dirname(envdoctor.__file__)
COMMON = {"Clock", "torch_dtype", "DTYPES", "rel_error", "device_info", "free_bytes", "TORCH_DTYPES"}


def _top_names(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_the_common_parts_are_defined_once():
    scripts = glob.glob(os.path.join(BASE, "*", "target", "*.py")) + glob.glob(os.path.join(BASE, "child", "*.py"))
    where = {}
    for path in scripts:
        for name in _top_names(path) & COMMON:
            where.setdefault(name, []).append(os.path.relpath(path, BASE))
    assert where == {name: ["child/_torch_common.py"] for name in COMMON - {"TORCH_DTYPES"}}


@pytest.fixture(scope="module")
def common():
    torch = pytest.importorskip("torch")
    space = {}
    exec(compile(_resource("_torch_common.py"), "_torch_common.py", "exec"), space)
    return torch, space


def test_rel_error_is_none_for_nan_and_a_number_otherwise(common):
    torch, ns = common
    a, b = torch.eye(4, dtype=torch.float32), torch.ones(4, 4, dtype=torch.float32)
    good = a @ b
    assert ns["rel_error"](torch, a, b, good) == 0.0
    bad = good.clone()
    bad[0, 0] = float("nan")
    assert ns["rel_error"](torch, a, b, bad) is None
    off = good.clone()
    off[0, 0] = 2.0
    assert math.isclose(ns["rel_error"](torch, a, b, off), 1 / 4)


def test_one_dtype_map_and_a_clock_for_a_device_or_its_name(common):
    torch, ns = common
    assert [ns["torch_dtype"](torch, n) for n in ("fp32", "tf32", "fp16", "bf16", "fp64")] == [
        torch.float32,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.float64,
    ]
    clock = ns["Clock"](torch, torch.device("cpu"))
    start = clock.mark()
    assert not clock.cuda and not ns["Clock"](torch, "cpu").cuda and clock.seconds(start, clock.mark()) >= 0
    assert ns["free_bytes"](torch, "cpu") is None

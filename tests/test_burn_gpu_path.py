"""The GPU code of the burn child (the bitwise loop, the GPU memory test) run on the CPU torch.

CI has no GPU, so the child's source is executed here with a stand-in for ``torch.cuda``: CUDA
events timed by the clock, a synchronise that returns at once, and a free-memory figure. The
tensor operations (integer views, ``ne`` into a preallocated mask, counts kept on the device,
the patterns) are torch's own, on CPU tensors: the same calls the child makes on a GPU.
"""

from __future__ import annotations

import importlib.util
import time
import types
from pathlib import Path

import pytest

from envdoctor.child import _resource, uses

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (CPU is enough)")

CHILD = Path(__file__).resolve().parent.parent / "envdoctor" / "burn" / "target" / "burn.py"


class FakeEvent:
    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.at - self.at) * 1000.0


@pytest.fixture
def child():
    """The child's namespace with the prelude's names stubbed and ``torch.cuda`` faked."""
    import torch

    events = []
    stop = types.SimpleNamespace(flag=False)
    stop.is_set = lambda: stop.flag
    ns = {
        "__name__": "burn_child",
        "STOP": stop,
        "emit": lambda kind, **f: events.append((kind, f)),
        "stage": lambda name, **f: None,
        "first_line": lambda exc: f"{type(exc).__name__}: {exc}",
        "Failure": RuntimeError,
    }
    for part in uses(CHILD.read_text()):  # the parts run_child sends before the script
        exec(compile(_resource(part), part, "exec"), ns)
    exec(compile(CHILD.read_text(), str(CHILD), "exec"), ns)
    cuda = types.SimpleNamespace(
        Event=FakeEvent,
        synchronize=lambda *a: None,
        empty_cache=lambda: None,
        mem_get_info=lambda dev: (40 << 20, 80 << 20),
    )

    class Torch:
        def __getattr__(self, name):
            return getattr(torch, name)

    fake = Torch()
    fake.cuda = cuda
    ns.update(CHUNK_BYTES=1 << 20, HEADROOM_BYTES=1 << 20)
    return types.SimpleNamespace(ns=ns, torch=fake, real=torch, events=events, stop=stop)


def test_the_gpu_phase_compares_bit_for_bit_and_times_each_product(child):
    deadline = time.time() + 1.0
    phase = child.ns["run_phase"](child.torch, child.real.device("cpu"), True, "fp32", 64, deadline, 0.2, 7)
    assert phase["status"] == "ok" and phase["compare"] == "bitwise" and "tolerance" not in phase
    assert phase["products"] > 10 and phase["mismatches"] == 0 and phase["ref_error"] < 1e-5
    intervals = [f["interval"] for kind, f in child.events if kind == "interval"]
    assert intervals[0]["products"] == 1 and sum(i["products"] for i in intervals) == phase["products"]
    assert all(i["gemm_s"] > 0 and i["tflops"] > 0 for i in intervals)
    assert [kind for kind, _ in child.events][-1] == "phase"


def test_the_bitwise_compare_catches_one_flipped_low_bit(child):
    torch = child.real
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g)
    ref = a @ b
    c = torch.empty_like(ref)
    mask = torch.empty(32, 32, dtype=torch.bool)
    loop = child.ns["GpuLoop"](child.torch, torch.device("cpu"), a, b, c, ref, torch.int32, mask)
    assert loop.run(3, 0, time.time() + 10)["mismatches"] == 0
    calls = [0]
    real_matmul = torch.matmul

    def flip_one_bit(x, y, out):
        real_matmul(x, y, out=out)
        calls[0] += 1
        if calls[0] == 2:
            out.view(torch.int32).view(-1)[5] ^= 1  # the lowest mantissa bit of one element

    child.torch.matmul = flip_one_bit
    got = loop.run(3, 3, time.time() + 10)
    assert (got["mismatches"], got["bad"]) == (1, [5])  # product 5 counted from the start of the phase


def test_the_gpu_memory_test_covers_the_free_memory_and_finds_a_bad_word(child):
    torch = child.real
    done = child.ns["memtest"](child.torch, torch.device("cpu"), True, 0.5, 0.9, 0, 11)
    # 40 MiB free: 0.9 x 40 MiB - 1 MiB headroom - 2 chunks = 33 chunks of 1 MiB
    assert done["status"] == "ok" and done["bytes"] == 33 << 20 and done["free_bytes"] == 40 << 20
    patterns = [p["pattern"] for p in done["passes"]]
    cycle = ["address", "inverse address", "0x55555555", "0xaaaaaaaa", "random"]
    # the passes go round the patterns in order until the 0.5 s are spent (a fast CI box goes round twice)
    assert patterns and patterns == (cycle * (len(patterns) // len(cycle) + 1))[: len(patterns)]
    assert done["mismatches"] == 0 and all(p["bytes"] == 33 << 20 for p in done["passes"])
    saved, child.ns["PATTERNS"] = child.ns["PATTERNS"], ("random", "0xaaaaaaaa")
    seeded = child.ns["memtest"](child.torch, torch.device("cpu"), True, 0.01, 0.9, 0, 11)
    assert seeded["status"] == "ok" and seeded["passes"][0]["pattern"] == "random"  # regenerated for the check
    child.ns["PATTERNS"] = saved
    real_fill = child.ns["pattern_fill"]
    writes = {"n": 0}

    def corrupt_after_write(t, buf, pattern, ci, seed, dev):
        real_fill(t, buf, pattern, ci, seed, dev)
        writes["n"] += 1
        if writes["n"] == 3:  # the third chunk written in the first pass
            buf[100] ^= 1 << 30

    child.ns["pattern_fill"] = corrupt_after_write
    bad = child.ns["memtest"](child.torch, torch.device("cpu"), True, 0.01, 0.9, 0, 11)
    assert bad["status"] == "mismatch" and bad["mismatches"] == 1
    assert bad["passes"][0]["first_bad"] == 2 * (1 << 20) + 4 * 100


def test_a_gpu_without_room_for_the_memory_test_skips_it_and_says_why(child):
    child.torch.cuda.mem_get_info = lambda dev: (2 << 20, 80 << 20)
    done = child.ns["memtest"](child.torch, child.real.device("cpu"), True, 0.5, 0.9, 0, 11)
    assert done["status"] == "skipped" and done["error"] == "only 2 MiB of 80 MiB GPU memory is free"

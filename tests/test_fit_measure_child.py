"""``fit --measure`` for real: the child in the CPU torch the tests install, the reference decoder
(transformers is not a test dependency), out of memory monkeypatched into the child, a hung
target bounded, a stop, a package that is missing. Each child takes a few seconds (torch's import).

The tiny Llama below, counted by hand: per layer q 64x64, k and v 64x32, o 64x64, gate and up
64x160, down 160x64, two norms of 64 = 43,136; two layers 86,272; embedding and head 1000x64 each;
the final norm 64: 214,336 parameters.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from envdoctor.fit.analysis import compare
from envdoctor.fit.config import spec_from_config
from envdoctor.fit.constants import load_constants
from envdoctor.fit.estimate import estimate
from envdoctor.fit.host import run_measure
from envdoctor.fit.rules import measure_findings
from envdoctor.fit.workload import Workload
from tests.torchtest import needs_torch

TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}
SPEC = spec_from_config(TINY, "tiny-llama")
PARAMS = 214_336
PARAM_TENSORS = 21  # 9 per layer (7 linears, 2 norms), the embedding, the head, the final norm
PY = sys.executable


def measured(w: Workload, **kw):
    est = estimate(SPEC, w, load_constants())
    m = run_measure(SPEC, TINY, est, PY, cpu=True, **kw)
    return est, m


@needs_torch
def test_training_on_the_cpu_measures_each_term_and_the_estimate_agrees():
    est, m = measured(Workload(mode="train", batch=2, seq=64, dtype="fp32"))
    assert m.status == "measured", m.message
    assert m.device_kind == "cpu" and m.builder == "reference" and m.params == PARAMS
    assert m.term("weights") == PARAMS * 4 + 8 * 4  # + the fp32 rotary inv_freq buffer (head_dim / 2)
    assert m.term("gradients") == PARAMS * 4
    assert m.term("optimizer") == PARAMS * 4 * 2 + PARAM_TENSORS * 4  # exp_avg, exp_avg_sq and a step per tensor
    assert [p.name for p in m.phases] == ["build", "forward", "backward", "optimizer step"]
    assert m.context_bytes is None and m.max_reserved is None
    assert m.step_s and m.tokens_per_step == 128 and m.loss is not None and 5.0 < m.loss < 8.5  # ~ln(1000)
    c = compare(est, m)
    assert c.within_target, (c.peak, c.rows)
    assert [f.code for f in measure_findings(est, m, c)] == ["ED636"]
    assert m.matmul is not None and m.matmul.status == "ok" and m.matmul.dtype == "fp32"


@needs_torch
def test_generation_on_the_cpu_measures_the_kv_cache():
    est, m = measured(Workload(mode="infer", batch=2, seq=32, new_tokens=4, dtype="fp32"))
    assert m.status == "measured", m.message
    # 2 layers x (k, v) x batch 2 x 2 KV heads x head_dim 16 x 35 tokens (the last token is not fed back) x 4 B
    assert m.term("kv_cache") == 2 * 2 * 2 * 2 * 16 * 35 * 4
    assert m.tokens_per_step == 2 * 4
    assert compare(est, m).within_target


def _site(tmp_path: Path, body: str) -> dict:
    (tmp_path / "sitecustomize.py").write_text(body)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@needs_torch
def test_out_of_memory_in_backward_is_a_result_naming_the_phase(tmp_path):
    env = _site(
        tmp_path,
        (
            "import torch, torch.autograd\n"
            "_real, _calls = torch.autograd.backward, []\n"
            "def _backward(*a, **k):\n"
            "    _calls.append(1)\n"
            "    if len(_calls) == 2:   # the measured step's backward\n"
            "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB (monkeypatched)')\n"
            "    return _real(*a, **k)\n"
            "torch.autograd.backward = _backward\n"
        ),
    )
    est, m = measured(Workload(mode="train", batch=2, seq=64, dtype="fp32"), env=env)
    assert m.status == "oom", m.message
    assert m.oom_phase == "step 2: backward"
    assert "monkeypatched" in (m.message or "")
    # the peak reached before it: the forward's, above weights and AdamW states
    assert m.max_allocated and m.max_allocated > PARAMS * 4 * 3


@pytest.mark.skipif(importlib.util.find_spec("peft") is not None, reason="peft is installed here")
@needs_torch
def test_lora_without_peft_is_unavailable_not_guessed():
    est, m = measured(Workload(mode="train", batch=1, seq=16, dtype="fp32", lora_rank=4))
    assert m.status == "unavailable"
    assert "peft is not installed" in (m.message or "")
    assert [f.code for f in measure_findings(est, m, None)] == ["ED634"]


def test_a_hung_target_is_bounded(tmp_path):
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexec sleep 60\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    est = estimate(SPEC, Workload(mode="train", seq=16, dtype="fp32"), load_constants())
    started = time.monotonic()
    m = run_measure(SPEC, TINY, est, str(python), cpu=True, timeout=2.0)
    assert time.monotonic() - started < 20
    assert m.status == "failed" and "did not finish" in (m.message or "")
    assert [f.code for f in measure_findings(est, m, None)] == ["ED635"]


@needs_torch
def test_a_stop_ends_the_child_and_says_so():
    est = estimate(SPEC, Workload(mode="train", batch=2, seq=64, dtype="fp32"), load_constants())
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    m = run_measure(SPEC, TINY, est, PY, cpu=True, stop=stop)
    assert time.monotonic() - started < 20
    assert m.status == "stopped", (m.status, m.message)


@needs_torch
def test_the_custom_loop_keeps_the_logits_through_backward_and_the_trainer_loop_does_not():
    """The examples' loop (``outputs = model(...); outputs.loss.backward()``) holds outputs.logits:
    fp32 logits here, b x s x V x 4 = 2 x 64 x 1000 x 4 bytes more alive in the backward, and the
    step before's logits alive through the next forward; HF Trainer's loop frees them."""
    w = Workload(mode="train", batch=2, seq=64, dtype="fp32")
    runs = {}
    for loop in ("custom", "trainer"):
        _, m = measured(w.with_(loop=loop), timed_steps=1, matmul=False)
        assert m.status == "measured", m.message
        runs[loop] = {p.name: p.peak_allocated for p in m.phases}
    logits = 2 * 64 * 1000 * 4
    assert runs["custom"]["backward"] - runs["trainer"]["backward"] == logits
    assert runs["custom"]["forward"] - runs["trainer"]["forward"] == logits
    assert runs["custom"]["optimizer step"] - runs["trainer"]["optimizer step"] == logits


@needs_torch
def test_the_child_runs_with_the_allocator_setting_the_estimate_assumed():
    w = Workload(mode="infer", batch=1, seq=16, new_tokens=2, dtype="fp32", alloc_conf="expandable_segments:True")
    est, m = measured(w, matmul=False)
    assert m.status == "measured", m.message
    assert m.alloc_conf == "expandable_segments:True"
    assert any("expandable_segments" in n for n in est.notes)

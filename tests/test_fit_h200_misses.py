"""Regression tests for the misses of the first H200 accuracy run (2026-12-01, docs/fit.md), each term
counted by hand; the GPT-2 one also with the real CPU torch."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.fit.activations import Precision, layer_bytes_per_token, layer_saved
from envdoctor.fit.constants import Constants
from envdoctor.fit.estimate import estimate
from envdoctor.fit.models import bundled_models
from envdoctor.fit.spec import ModelSpec
from envdoctor.fit.workload import Workload

# h=64, f=128, 2 layers, 4 heads of 16, 2 kv heads, vocab 100 (as in test_fit_estimate.py), here tied
TIED = ModelSpec(
    name="tiny-tied",
    architecture="LlamaForCausalLM",
    family="llama",
    hidden=64,
    intermediate=128,
    layers=2,
    heads=4,
    kv_heads=2,
    head_dim=16,
    vocab=100,
    tie_embeddings=True,
)
N_TIED = 6400 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 64 * 128 + 128) + 64  # the head shares the embedding
# the stranded block's arithmetic alone (the fourth round's gradient-block and states shares set to 0 here)
C = Constants(
    context_bytes=1000,
    cublas_bytes=24,
    allocator_segments_bytes=0,
    allocator_transient_train=0.5,
    allocator_transient_infer=0.5,
    allocator_stranded_factor=1.0,
    allocator_grad_block=0.0,
    allocator_states=0.0,
)
CONTEXT = 1024


def test_llama_1b_long_context_miss_the_embedding_output_and_layer_input_stay_referenced():
    e = estimate(TIED, Workload(mode="infer", batch=1, seq=10, new_tokens=0, dtype="bf16"), C)
    prefill = _phase(e, "prefill")
    working = next(t for t in prefill.terms if t.name == "layer_working")
    # residual + normalised input (2 x 64 x 2), inputs_embeds + the layer's input (2 x 64 x 2), SwiGLU's
    # act(gate), up and product (3 x 128 x 2), per token, x 10 tokens
    assert working.bytes == 10 * (256 + 256 + 768)
    one = dataclasses.replace(TIED, layers=1)  # one layer: its input is the embedding output
    working = next(
        t
        for t in _phase(estimate(one, Workload(mode="infer", seq=10, new_tokens=0, dtype="bf16"), C), "prefill").terms
        if t.name == "layer_working"
    )
    assert working.bytes == 10 * (256 + 128 + 768)


def _phase(e, name):
    return next(p for p in e.phases if p.name == name)


@pytest.mark.parametrize(
    "dtype, amp, stranded",
    [
        ("bf16", None, 2 * 8 * 100 * 2),  # bf16 logits: their 2-byte block cannot hold a 4-byte gradient
        ("fp32", "bf16", 2 * 8 * 100 * 2),  # under autocast the head's output is bf16 too
        ("fp32", None, 0),  # fp32 logits: .float() is the same tensor, its block is reused
    ],
)
def test_qwen_0_5b_train_miss_the_loss_strands_the_low_precision_logits_block(dtype, amp, stranded):
    e = estimate(TIED, Workload(mode="train", batch=2, seq=8, dtype=dtype, amp=amp, loop="trainer"), C)
    loss = _phase(e, "loss backward")
    reserve = next(t for t in loss.terms if t.name == "allocator_reserve")
    transient = sum(
        t.bytes for t in loss.terms if t.name not in ("weights", "optimizer", "context", "allocator_reserve")
    )
    assert loss.stranded == stranded
    assert reserve.bytes == int(transient * 0.5 + stranded)
    # the other moments have no such block: dlogits (b*s*V x A) reuses it in the last layer's backward
    layer = _phase(e, "backward of the last layer")
    transient = sum(
        t.bytes for t in layer.terms if t.name not in ("weights", "optimizer", "context", "allocator_reserve")
    )
    assert layer.stranded == 0
    assert next(t for t in layer.terms if t.name == "allocator_reserve").bytes == int(transient * 0.5)


def test_gpt2_infer_miss_the_tied_head_is_built_before_it_is_tied():
    e = estimate(TIED, Workload(mode="infer", batch=1, seq=10, new_tokens=0, dtype="fp32"), C)
    build = _phase(e, "model build")
    weights, copy = N_TIED * 4, 100 * 64 * 4  # the head's own V x h fp32 weight, freed when tied
    assert [t.bytes for t in build.terms] == [weights, copy, CONTEXT, int(copy * 0.5)]  # the copy is transient
    # the prefill holds kv 2x2x2x16x4x10 = 5120 + working 10x(4x4x64 + 4x3x128) = 25,600 + logits 100x12 = 1200,
    # 31,920 B beside the weights: more than the copy's 25,600, so the prefill is the peak here ...
    assert e.peak_phase == "prefill"
    # ... and with a 1000-token vocabulary the copy (256,000) outgrows it (31,920 - 1200 + 12,000 = 42,720)
    big = dataclasses.replace(TIED, vocab=1000)
    e = estimate(big, Workload(mode="infer", batch=1, seq=10, new_tokens=0, dtype="fp32"), C)
    weights = (N_TIED + 900 * 64) * 4
    assert e.peak_phase == "model build"
    assert e.peak_bytes == weights + 1000 * 64 * 4 + CONTEXT + int(1000 * 64 * 4 * 0.5)


def test_untied_and_quantised_models_have_no_build_copy():
    untied = dataclasses.replace(TIED, tie_embeddings=False)
    assert all(p.name != "model build" for p in estimate(untied, Workload(mode="infer", seq=10), C).phases)
    quant = estimate(TIED, Workload(mode="infer", seq=10, dtype="bf16", quant="int4"), C)
    assert all(p.name != "model build" for p in quant.phases)


def test_gpt2_amp_miss_gelu_new_runs_in_fp32_under_cuda_autocast():
    gpt2 = bundled_models().find("gpt2").spec
    f = gpt2.intermediate  # 3072
    cuda = Precision(act=2, resid=4, autocast=True, mask=1)
    cpu = dataclasses.replace(cuda, cuda=False)
    # CUDA: pow keeps x cast to fp32 (4f), tanh's output and 1+tanh are fp32 (8f), 0.5*x bf16 (2f), and c_proj
    # keeps its bf16 cast of the fp32 product (2f): 16f. CPU autocast leaves pow in bf16: x, 0.5*x, tanh, 1+tanh
    # and the product, 2 bytes each: 10f.
    gelu_cuda = [s for s in layer_saved(gpt2, cuda, 1024, "sdpa", True) if "gelu" in s.name]
    gelu_cpu = [s for s in layer_saved(gpt2, cpu, 1024, "sdpa", True) if "gelu" in s.name or s.name == "c_fc output"]
    assert layer_bytes_per_token(gelu_cuda) == 16 * f
    assert layer_bytes_per_token(gelu_cpu) == 10 * f
    assert (
        layer_bytes_per_token(layer_saved(gpt2, cuda, 1024, "sdpa", True))
        - layer_bytes_per_token(layer_saved(gpt2, cpu, 1024, "sdpa", True))
    ) == 6 * f


def test_gpt2_gelu_new_with_cuda_autocasts_casts_keeps_16f_on_the_real_torch():
    """The CPU torch cannot run CUDA autocast, so the casts it makes are written out: pow gets x.float()
    (pow is on CUDA autocast's fp32 list), addmm gets its input cast to bf16 (on the lower-precision
    list). What autograd then keeps is counted by storage, as benchmarks/fit_saved_bytes.py does."""
    torch = pytest.importorskip("torch")
    import math

    tokens, f, h = 8, 48, 16
    x = torch.randn(tokens, f, dtype=torch.bfloat16, requires_grad=True)  # c_fc's bf16 output
    w = torch.randn(f, h, dtype=torch.bfloat16, requires_grad=True)  # c_proj's cast weight
    kept: dict[int, int] = {}

    def pack(t):
        if t is not w and t is not x:  # parameters and the layer's own input are counted elsewhere
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x.float(), 3.0))  # transformers' gelu_new
        g = 0.5 * x * (1.0 + torch.tanh(inner))
        out = torch.mm(g.to(torch.bfloat16), w)
    assert g.dtype == torch.float32 and out.dtype == torch.bfloat16
    assert sum(kept.values()) == tokens * 16 * f

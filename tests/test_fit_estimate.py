"""The estimate's formulas against arithmetic done by hand (written out here, not the code's output)."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.fit.activations import Precision, layer_bytes_per_token, layer_saved
from envdoctor.fit.constants import Constants, load_constants
from envdoctor.fit.estimate import estimate, kv_bytes_per_token
from envdoctor.fit.models import bundled_models
from envdoctor.fit.params import inventory
from envdoctor.fit.spec import ModelSpec
from envdoctor.fit.verdict import Gpu, fit_report
from envdoctor.fit.workload import Workload

# h=64, f=128, 2 layers, 4 heads of 16, 2 kv heads, vocab 100, untied: 86,848 parameters
# (embed 6400 + head 6400 + 2 x (q 4096 + k 2048 + v 2048 + o 4096 + MLP 3*64*128 + norms 128) + final norm 64)
TINY = ModelSpec(
    name="tiny",
    architecture="LlamaForCausalLM",
    family="llama",
    hidden=64,
    intermediate=128,
    layers=2,
    heads=4,
    kv_heads=2,
    head_dim=16,
    vocab=100,
)
N = 6400 + 6400 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 64 * 128 + 128) + 64
# round numbers for the sums: the allocator reserve is half of what is transient + the stranded block
# (fourth round) + half the loss's second fp32 gradient block + a quarter of the optimizer states in training
C = Constants(
    context_bytes=1000,
    cublas_bytes=24,
    allocator_segments_bytes=0,
    allocator_transient_train=0.5,
    allocator_transient_infer=0.5,
    allocator_stranded_factor=1.0,
    allocator_grad_block=0.5,
    allocator_states=0.25,
)
CONTEXT = 1024


def test_tiny_parameter_count():
    assert N == 86_848
    assert estimate(TINY, Workload(mode="infer", new_tokens=0, dtype="fp32"), C).params_total == N


def test_inference_fp32_prefill_by_hand():
    e = estimate(TINY, Workload(mode="infer", batch=1, seq=10, new_tokens=0, dtype="fp32"), C)
    weights = N * 4
    kv = 2 * 2 * 2 * 16 * 4 * 10  # 2 x layers x kv heads x head_dim x 4 B x 10 tokens
    # hidden + residual, the embedding output and the layer's input (still referenced), then the larger of the
    # MLP's gate, up and product (4 x 3 x 128 = 1536) and attention: fp32 with 2 KV heads for 4 runs SDPA's math
    # kernel, q, k, v (4 x (64 + 32 + 32 + 64) = 768) + k and v repeated to every head (2 x 4 x 64) + the fp32
    # scores and softmax, 4 heads x 10 keys each (2 x 4 x 4 x 10): 1600
    working = 10 * (2 * 4 * 64 + 2 * 4 * 64 + max(4 * 3 * 128, 768 + 2 * 4 * 64 + 2 * 4 * 4 * 10))
    logits = 100 * (4 + 8)  # last position only: V x (fp32 + fp32 copy + processed)
    allocated = weights + kv + working + logits
    transient = kv + working + logits  # all but the weights is allocated and freed per step
    assert e.peak_phase == "prefill"
    assert [t.bytes for t in e.terms] == [weights, kv, working, logits, CONTEXT, int(transient * 0.5)]
    assert e.peak_bytes == allocated + CONTEXT + int(transient * 0.5)
    # the band: 0.15x and 2.0x the variable part; no floor for inference
    assert e.peak_low_bytes == allocated + CONTEXT + int(0.15 * transient * 0.5)
    assert e.peak_high_bytes == allocated + CONTEXT + int(2.0 * transient * 0.5)


def test_llama_layer_keeps_these_bytes_per_token():
    # bf16, SDPA: each RMSNorm keeps an fp32 copy (64*4) + rsqrt (4) + normalised (64*2) + output (64*2) = 516;
    # attention: q 64*2 + k 32*2 + v 32*2 + output 64*2 + log-sum-exp 4 heads*4 = 400;
    # SwiGLU: gate, act, up, product, 128*2 each = 1024. Total 516 + 400 + 516 + 1024 = 2456.
    bf16 = Precision(act=2, resid=2, autocast=False)
    assert layer_bytes_per_token(layer_saved(TINY, bf16, 32, "sdpa", True)) == 2456
    # fp32: the fp32 copy is the input itself (256 + 4), normalised 256, output 256 = 772 per norm;
    # attention 4 x (64 + 32 + 32 + 64) + 16 = 784; MLP 4 x 128 x 4 = 2048. Total 772*2 + 784 + 2048 = 4376.
    fp32 = Precision(act=4, resid=4, autocast=False)
    assert layer_bytes_per_token(layer_saved(TINY, dataclasses.replace(fp32, cuda=False), 32, "sdpa", True)) == 4376
    # on CUDA, fp32 with grouped KV heads runs SDPA's math kernel (flash needs fp16/bf16, the memory-efficient
    # kernel takes no grouped heads): no log-sum-exp (-16), k and v repeated to the 4 heads (+2 x 32 x 4) and
    # the fp32 softmax output 4 heads x 32 x 4 (+512): 5128
    assert layer_bytes_per_token(layer_saved(TINY, fp32, 32, "sdpa", True)) == 5128
    # autocast (fp32 weights, bf16 matmuls): norms keep fp32 input 256 + rsqrt 4 + fp32 normalised 256 and one
    # bf16 cast per linear they feed (3 x 128 for q/k/v, 2 x 128 for gate/up): 900 + 772; attention 400; MLP 1024.
    auto = Precision(act=2, resid=4, autocast=True)
    assert layer_bytes_per_token(layer_saved(TINY, auto, 32, "sdpa", True)) == 900 + 400 + 772 + 1024
    # eager bf16 at s=32: q 128, k and v repeated to 4 heads 128 each, softmax fp32 4*32*4 = 512, probabilities
    # cast back 4*32*2 = 256, contiguous output 128: 1280 instead of SDPA's 400.
    assert layer_bytes_per_token(layer_saved(TINY, bf16, 32, "eager", True)) == 2456 - 400 + 1280


def test_frozen_linears_keep_no_inputs_and_lora_keeps_fp32_copies():
    bf16 = Precision(act=2, resid=2, autocast=False)
    frozen = layer_bytes_per_token(layer_saved(TINY, bf16, 32, "sdpa", trainable_linears=False))
    # frozen weights: each norm keeps only its fp32 input copy and rsqrt (260; the normalised input is kept for
    # the norm weight's gradient, the output for the linears'), attention keeps q, k, v, out, lse (400),
    # the MLP keeps gate, act, up (768): 260 + 400 + 260 + 768
    assert frozen == 260 + 400 + 260 + 768
    lora = layer_bytes_per_token(layer_saved(TINY, bf16, 32, "sdpa", False, lora=["q_proj"], lora_rank=8))
    assert lora == frozen + 64 * 4 + 8 * 4  # PEFT casts q_proj's input to fp32 (64 x 4) + the rank-8 middle


def test_training_bf16_adamw_by_hand():
    w = Workload(mode="train", batch=2, seq=8, dtype="bf16", loop="trainer")
    e = estimate(TINY, w, C)
    weights, grads, states = N * 2, N * 2, N * 2 * 2  # torch AdamW states are zeros_like(param)
    acts = 2 * 8 * (2 * 2456 + (4 * 64 + 4 + 2 * 64 + 2 * 64))  # layers + final norm and head input
    logits = 2 * 8 * 100 * 12  # fp32 log-softmax + its grad + upcast grad
    phases = {p.name: p for p in e.phases}
    loss = weights + states + acts + logits
    last_layer = weights + states + acts + 100 * 64 * 2 + 16 * 3 * 2 * 128  # head grad + 3 f-wide grads
    step = weights + grads + states  # fused AdamW: no step-wide copy
    stranded = 2 * 8 * 100 * 2  # the freed bf16 logits' block, too small for the fp32 loss gradients
    # every moment: the loss's second fp32 gradient block b*s*V x 4 (x 0.5) and the states (x 0.25), which the
    # step keeps reserved
    kept = 2 * 8 * 100 * 4 * 0.5 + states * 0.25
    # transient (allocated and freed every step): all but the weights and the optimizer states
    for name, allocated, transient, extra in (
        ("loss backward", loss, acts + logits, stranded),
        ("backward of the last layer", last_layer, last_layer - weights - states, 0),
        ("optimizer step", step, grads, 0),
    ):
        assert phases[name].bytes == allocated + CONTEXT + int(transient * 0.5 + extra + kept), name
    assert e.peak_phase == "optimizer step"


def test_amp_fp32_adamw_is_16_bytes_per_parameter_plus_foreach_copy():
    amp = estimate(TINY, Workload(mode="train", dtype="fp32", amp="bf16", seq=8), C)
    step = {t.name: t.bytes for t in next(p for p in amp.phases if p.name == "optimizer step").terms}
    assert step["weights"] + step["gradients"] + step["optimizer"] == 16 * N  # 4 + 4 + 8
    assert step["optimizer_step"] == 0
    foreach = estimate(TINY, Workload(mode="train", dtype="fp32", amp="bf16", seq=8, optimizer="adamw_foreach"), C)
    step = {t.name: t.bytes for t in next(p for p in foreach.phases if p.name == "optimizer step").terms}
    assert step["optimizer_step"] == 4 * N  # _foreach_sqrt copies exp_avg_sq
    loss = {t.name: t.bytes for t in amp.phases[0].terms}
    # autocast keeps a bf16 copy of every matmul weight: 2 x (q,k,v,o 12288 + MLP 24576) + head 6400
    assert loss["autocast_copies"] == 2 * (2 * (12288 + 24576) + 6400)


@pytest.mark.parametrize("optimizer,per_param", [("sgd", 2), ("adamw8bit", 2 + 2 * 4 / 256)])
def test_other_optimizers(optimizer, per_param):
    e = estimate(TINY, Workload(mode="train", seq=8, optimizer=optimizer), C)
    assert e.phases[-1].terms[2].bytes == int(N * per_param)


def test_adafactor_factors_the_matrices():
    e = estimate(TINY, Workload(mode="train", seq=8, optimizer="adafactor"), C)
    per_layer = (64 + 64) + (32 + 64) + (32 + 64) + (64 + 64) + 2 * (128 + 64) + (64 + 128) + 2 * 64  # norms: numel
    factored = 2 * per_layer + (100 + 64) + 64 + (100 + 64)  # + embedding, final norm, head
    # torch's Adafactor keeps its factors in the gradient's dtype (p.grad.new_zeros): bf16 here, fp32 below
    assert next(t for t in e.phases[-1].terms if t.name == "optimizer").bytes == 2 * factored
    e32 = estimate(TINY, Workload(mode="train", seq=8, optimizer="adafactor", dtype="fp32"), C)
    assert next(t for t in e32.phases[-1].terms if t.name == "optimizer").bytes == 4 * factored
    # its single-tensor step builds one full-size var_estimate of the largest parameter (an MLP's 128 x 64)
    step = next(t for t in e32.phases[-1].terms if t.name == "optimizer_step")
    assert step.bytes == 128 * 64 * 4


def test_lora_trains_only_the_adapters():
    e = estimate(TINY, Workload(mode="train", seq=8, lora_rank=4), C)
    # r x (d_in + d_out) on q (64,64), k (64,32), v (64,32), o (64,64), gate/up (64,128), down (128,64)
    per_layer = 4 * (128 + 96 + 96 + 128 + 192 + 192 + 192)
    assert e.params_trainable == 2 * per_layer == 8192
    step = {t.name: t.bytes for t in e.phases[-1].terms}
    assert step["weights"] == N * 2 + 8192 * 4  # frozen bf16 base + fp32 adapters
    assert step["gradients"] == 8192 * 4 and step["optimizer"] == 8192 * 8


def test_zero3_shards_model_states_and_gathers_a_layer():
    e = estimate(TINY, Workload(mode="train", seq=8, zero=3, gpus=4), C)
    step = {t.name: t.bytes for t in e.phases[-1].terms}
    assert step["weights"] == N * 2 // 4 and step["gradients"] == N * 2 // 4 and step["optimizer"] == N * 4 // 4
    loss = {t.name: t.bytes for t in e.phases[0].terms}
    assert loss["zero_gathered"] == 2 * 36992 * 2  # two blocks of 36,992 parameters in bf16


def test_zero_with_amp_uses_the_zero_paper_layout():
    # ZeRO §3.1: 2 (half params) + 2 (half grads) + 12 (fp32 master, momentum, variance); stage 1 shards the 12
    e = estimate(TINY, Workload(mode="train", seq=8, dtype="fp32", amp="bf16", zero=1, gpus=8), C)
    step = {t.name: t.bytes for t in e.phases[-1].terms}
    assert (step["weights"], step["gradients"], step["optimizer"]) == (2 * N, 2 * N, 12 * N // 8)


def test_ddp_keeps_a_second_copy_of_the_gradients():
    e = estimate(TINY, Workload(mode="train", seq=8, gpus=2, ddp=True), C)
    assert {t.name: t.bytes for t in e.phases[-1].terms}["ddp_buckets"] == N * 2


def test_kv_cache_llama_3_1_8b():
    spec = bundled_models().find("Llama-3.1-8B").spec
    assert kv_bytes_per_token(spec, 2) == 2 * 32 * 8 * 128 * 2 == 131072  # 128 KiB per token
    e = estimate(spec, Workload(mode="infer", batch=2, seq=1000, new_tokens=24), Constants())
    last = {t.name: t.bytes for t in e.phases[-1].terms}
    assert last["kv_cache"] == 2 * 1024 * 131072


def test_t5_inference_caches_new_tokens_and_the_encoder():
    spec = bundled_models().find("t5-small").spec
    e = estimate(spec, Workload(mode="infer", batch=1, seq=100, new_tokens=10, dtype="fp32"), Constants())
    last = {t.name: t.bytes for t in e.phases[-1].terms}
    per_token = 2 * 6 * 8 * 64 * 4  # decoder layers x heads x d_kv x fp32
    assert last["kv_cache"] == per_token * (10 + 100)  # self-attention cache + cross-attention cache


def test_flops_llama_3_1_8b_at_8192():
    spec = bundled_models().find("Llama-3.1-8B").spec
    f = estimate(spec, Workload(mode="train", seq=8192), Constants()).flops
    # matmul parameters: the 32 blocks' linears and the head (the input embedding is a lookup, norms no matmul)
    n = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336) + 128256 * 4096
    assert f.n_matmul == n == 7_504_658_432
    assert f.per_token == 6 * n + 12 * 32 * 4096 * 8192 == 57_912_852_480
    assert f.per_token_causal == 6 * n + 6 * 32 * 4096 * 8192
    assert f.per_step == f.per_token * 8192


def test_qlora_weights():
    spec = bundled_models().find("Llama-3.1-8B").spec
    c = Constants()
    e = estimate(spec, Workload(mode="train", seq=512, quant="int4", lora_rank=16), c)
    quantised = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    lora = 32 * 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)
    rest = 8_030_261_248 - quantised
    expected = int(quantised * (0.5 + 8 / 64 / 8 + 32 / (64 * 256) / 8) + rest * 2 + lora * 4)
    assert e.term("weights").bytes == expected


@pytest.mark.parametrize(
    "changes,message",
    [
        (dict(batch=0), "--batch must be between 1 and 65536 (got 0)"),
        (dict(seq=10**9), "--seq must be between 1 and 1048576 (got 1000000000)"),
        (dict(mode="train", quant="int4"), "--quant in training needs --lora R"),
        (dict(mode="train", zero=3), "--zero 3 shards over --gpus N"),
        (dict(mode="train", amp="bf16"), "use it with --dtype fp32"),
        (dict(mode="infer", lora_rank=8), "--lora is for --train"),
    ],
)
def test_usage_problems(changes, message):
    w = Workload(**{"mode": "infer", **changes})
    assert any(message in p for p in w.problems(TINY))
    with pytest.raises(ValueError):
        estimate(TINY, w, C)


def test_learned_positions_and_encoders_limit_the_workload():
    gpt2 = bundled_models().find("gpt2").spec
    assert "gpt2 has 1024 learned positions" in Workload(mode="infer", seq=1000, new_tokens=100).problems(gpt2)[0]
    bert = bundled_models().find("bert-base-uncased").spec
    assert "is an encoder" in Workload(mode="infer", seq=128, new_tokens=5).problems(bert)[0]


def test_verdicts_ways_and_limits():
    spec = bundled_models().find("Llama-3.1-8B").spec
    w = Workload(mode="train", batch=1, seq=2048)
    small, big = Gpu("24 GiB card", 24 * 2**30, "given"), Gpu("141 GiB card", 141 * 2**30, "given")
    r = fit_report(spec, w, [big, small], [big], Constants())
    assert [v.fits for v in r.verdicts] == [True, False]
    # judged at the allocator band's upper edge (a "fits" must not OOM)
    assert r.estimate.peak_low_bytes < r.estimate.peak_bytes < r.estimate.peak_high_bytes
    assert r.verdicts[0].spare_bytes == big.total_bytes - r.estimate.peak_high_bytes
    assert r.ways_for == small
    ways = {x.flags: x for x in r.ways}
    assert not ways["--grad-checkpointing"].fits  # activations are not what fills 24 GiB here
    assert ways["--quant int4 --lora 16"].peak_bytes < ways["--lora 16"].peak_bytes < r.estimate.peak_bytes
    assert ways['--gpu "141 GiB card"'].fits
    # ZeRO-3 over 64 GPUs is 25.6 GiB at the upper edge with NCCL's buffers (1 GiB, and NVLS's 1.1 GiB at
    # 4+ GPUs): no such way on 24 GiB; on 28 GiB one is offered, judged at that edge
    assert not any(x.flags.startswith("--zero 3") for x in r.ways)
    assert r.max_batch is None  # not even one sequence on 24 GiB
    mid = Gpu("28 GiB card", 28 * 2**30, "given")
    zero = next(x for x in fit_report(spec, w, [mid], [], Constants()).ways if x.flags.startswith("--zero 3"))
    assert zero.fits and zero.peak_bytes <= mid.total_bytes
    gpus = int(zero.flags.split("--gpus ")[1].split()[0])
    high = estimate(spec, w.with_(zero=3, gpus=gpus), Constants()).peak_high_bytes
    assert zero.peak_bytes == high and estimate(spec, w.with_(zero=3, gpus=gpus), Constants()).term("nccl").bytes


def test_largest_batch_is_the_boundary():
    spec = bundled_models().find("Qwen2.5-0.5B").spec
    gpu = Gpu("16 GiB", 16 * 2**30, "given")
    w = Workload(mode="train", batch=1, seq=1024)
    r = fit_report(spec, w, [gpu], [], Constants())
    assert r.max_batch is not None
    assert estimate(spec, w.with_(batch=r.max_batch), Constants()).peak_high_bytes <= gpu.total_bytes
    assert estimate(spec, w.with_(batch=r.max_batch + 1), Constants()).peak_high_bytes > gpu.total_bytes


@pytest.mark.parametrize("dtype, amp, A", [("fp32", None, 4), ("bf16", None, 2), ("fp32", "bf16", 2)])
def test_the_custom_loop_holds_the_logits_in_every_training_moment_and_strands_none(dtype, amp, A):
    """outputs.logits (b*s*V x A, the head's output dtype) alive in the loss backward, the last layer's
    backward and the step; the trainer loop has no such term, and strands the A = 2 block instead."""
    w = Workload(mode="train", batch=2, seq=8, dtype=dtype, amp=amp)
    custom, trainer = estimate(TINY, w.with_(loop="custom"), C), estimate(TINY, w.with_(loop="trainer"), C)
    held = 2 * 8 * 100 * A
    for name in ("loss backward", "backward of the last layer", "optimizer step"):
        c = next(p for p in custom.phases if p.name == name)
        t = next(p for p in trainer.phases if p.name == name)
        assert [x.bytes for x in c.terms if x.name == "held_logits"] == [held]
        assert not [x for x in t.terms if x.name == "held_logits"]
        assert c.stranded == 0 and t.stranded == (held if name == "loss backward" and A == 2 else 0)


def test_the_allocator_reserve_is_a_model_with_a_band_and_expandable_segments_lower_the_loss_block():
    """Issue 28 §3: not a flat 6% of allocated; weights and optimizer states do not fragment."""
    const = load_constants()
    spec = bundled_models().find("Llama-3.1-70B").spec
    w = Workload(mode="infer", seq=4096, new_tokens=256, dtype="bf16")
    e = estimate(spec, w, const)
    reserve = e.term("allocator_reserve")
    inputs = dict(reserve.inputs)
    weights = e.term("weights").bytes
    # the 131 GiB of weights count nothing: the reserve is a share of what is allocated and freed
    assert reserve.bytes == int(
        const.allocator_segments_bytes + const.allocator_transient_infer * inputs["transient_bytes"]
    )
    assert reserve.bytes < 0.01 * weights
    assert e.peak_low_bytes < e.peak_bytes < e.peak_high_bytes
    # 70B inference at 4k on one H200 (139.80 GiB usable) fits at the band's upper edge; the flat 6% said
    # "does not fit by 1.29 GiB"
    assert e.peak_high_bytes < int(139.8 * 2**30)
    # expandable_segments (measured, X15 and X16): the forward reserves as much as with the default allocator,
    # so inference is unchanged; in training the loss's second fp32 block is mapped on after the freed
    # low-precision logits block, and only what that block does not cover is reserved
    ex = estimate(spec, w.with_(alloc_conf="expandable_segments:True"), const)
    assert ex.peak_bytes == e.peak_bytes
    small = bundled_models().find("Qwen2.5-0.5B").spec
    t = Workload(mode="train", batch=4, seq=2048, dtype="bf16", loop="trainer")
    d, x = estimate(small, t, const), estimate(small, t.with_(alloc_conf="expandable_segments:True"), const)
    logits_block = 4 * 2048 * small.vocab * 2
    assert d.peak_bytes - x.peak_bytes == pytest.approx(const.allocator_grad_block * logits_block, abs=2)
    assert any("expandable_segments" in n for n in x.notes)
    # anything else in the setting is not modelled and changes nothing
    assert estimate(spec, w.with_(alloc_conf="max_split_size_mb:512"), const).peak_bytes == e.peak_bytes


def test_the_training_upper_edge_has_a_floor_of_what_is_allocated():
    const = load_constants()
    spec = bundled_models().find("Llama-3.1-8B").spec
    e = estimate(spec, Workload(mode="train", seq=2048, dtype="fp32", amp="bf16", grad_checkpointing=True), const)
    step = next(p for p in e.phases if p.name == "optimizer step")
    allocated = sum(t.bytes for t in step.terms if t.name not in ("context", "allocator_reserve"))
    assert step.reserve_band[1] >= int(const.allocator_floor * allocated)


def test_gpus_without_a_strategy_is_refused_with_the_choices():
    """Issue 28 §4: `--gpus 2` was silently ignored for inference."""
    train = Workload(mode="train", gpus=2).problems(TINY)
    assert train and "--ddp" in train[0] and "--fsdp" in train[0] and "--tp 2" in train[0]
    infer = Workload(mode="infer", gpus=2).problems(TINY)
    assert infer and "--tp 2" in infer[0]
    assert not Workload(mode="train", gpus=2, ddp=True).problems(TINY)
    assert not Workload(mode="infer", gpus=2, tp=2).problems(TINY)
    assert "give one strategy" in " ".join(Workload(mode="train", gpus=2, ddp=True, zero=3).problems(TINY))
    assert "--infer only" in " ".join(Workload(mode="train", gpus=2, tp=2).problems(TINY))
    assert "do not split" in " ".join(Workload(mode="infer", gpus=8, tp=8).problems(TINY))  # 4 heads


def test_tensor_parallel_inference_splits_weights_kv_heads_and_the_layer_working_set():
    spec = bundled_models().find("Llama-3.1-70B").spec
    const = load_constants()
    w = Workload(mode="infer", seq=4096, new_tokens=256, dtype="bf16")
    one, two = estimate(spec, w, const), estimate(spec, w.with_(tp=2, gpus=2), const)
    # linears and the vocabulary-parallel embedding/head split; the norms (161 x 8192) are replicated
    norms = sum(x.numel for x in inventory(spec) if x.kind == "vector")
    assert two.term("weights").bytes == int(
        one.term("weights").bytes * ((one.params_total - norms) / 2 + norms) / one.params_total
    )
    assert two.term("kv_cache").bytes == one.term("kv_cache").bytes // 2  # 8 KV heads: 4 per GPU
    eight = estimate(spec, w.with_(tp=8, gpus=8), const)
    assert eight.term("kv_cache").bytes == one.term("kv_cache").bytes // 8  # one KV head per GPU
    sixteen = estimate(spec, w.with_(tp=16, gpus=16), const)
    assert sixteen.term("kv_cache").bytes == eight.term("kv_cache").bytes  # fewer KV heads than GPUs: replicated
    assert two.term("layer_working").bytes < one.term("layer_working").bytes
    assert any("NCCL" in n for n in two.notes)
    # a 70B inference on 2 H200s with TP is answerable, and fits
    assert two.peak_high_bytes < int(139.8 * 2**30)


def test_ways_include_pure_bf16_8bit_adamw_and_adafactor():
    """Issue 28: a 7B AMP fine-tune on an H100 never suggested bf16 or 8-bit AdamW."""
    spec = bundled_models().find("Mistral-7B-v0.3").spec
    w = Workload(mode="train", seq=2048, dtype="fp32", amp="bf16")
    r = fit_report(spec, w, [Gpu("H100", int(79.11 * 2**30), "given", "9.0")], (), load_constants())
    flags = {x.flags: x for x in r.ways}
    assert {"--dtype bf16", "--optimizer adamw8bit", "--optimizer adafactor"} <= set(flags)
    assert flags["--dtype bf16"].peak_bytes < r.estimate.peak_high_bytes


def test_device_map_auto_reports_the_fullest_gpu_of_a_balanced_layer_split():
    spec = bundled_models().find("Llama-3.1-70B").spec
    const = load_constants()
    w = Workload(mode="infer", seq=4096, new_tokens=256, dtype="bf16")
    one, split = estimate(spec, w, const), estimate(spec, w.with_(device_map=True, gpus=2), const)
    block = sum(x.numel for x in inventory(spec) if x.block)
    outside = one.params_total - block
    assert split.term("weights").bytes == int(one.term("weights").bytes * (block / 2 + outside) / one.params_total)
    assert split.term("kv_cache").bytes == one.term("kv_cache").bytes // 2
    assert split.term("layer_working").bytes == one.term("layer_working").bytes  # whole where it runs
    assert "--device-map auto" in Workload(mode="infer", gpus=2).problems(spec)[0]
    assert "for --infer" in " ".join(Workload(mode="train", gpus=2, device_map=True).problems(spec))


def test_pipeline_stages_split_the_parameters_and_keep_one_micro_batch_of_all_layers_on_the_first():
    spec = bundled_models().find("Llama-3.1-8B").spec
    const = load_constants()
    w = Workload(mode="train", seq=4096, dtype="bf16", loop="trainer")
    one, pp = estimate(spec, w, const), estimate(spec, w.with_(pp=4, gpus=4), const)
    names = {p.name for p in pp.phases}
    assert "loss backward (first stage)" in names and "optimizer step (last stage)" in names
    first = {t.name: t.bytes for t in next(p for p in pp.phases if p.name == "loss backward (first stage)").terms}
    last = {t.name: t.bytes for t in next(p for p in pp.phases if p.name == "loss backward (last stage)").terms}
    base = {t.name: t.bytes for t in next(p for p in one.phases if p.name == "loss backward").terms}
    assert first["activations"] == base["activations"]  # 4 micro-batches x L/4 layers in flight
    assert last["activations"] == base["activations"] // 4
    assert first["logits"] == 0 and last["logits"] == base["logits"]
    block = sum(x.numel for x in inventory(spec) if x.block)
    emb = spec.vocab * spec.hidden
    assert first["weights"] == int(base["weights"] * (block / 4 + emb) / one.params_total)
    assert pp.peak_bytes < one.peak_bytes
    assert "--pp is modelled for --train" in " ".join(Workload(mode="infer", pp=2, gpus=2).problems(spec))
    assert not any(t.name == "ddp_buckets" for p in pp.phases for t in p.terms)


def test_bert_mlm_loss_in_pure_bf16_is_not_upcast_and_strands_nothing():
    """BertForMaskedLM's CrossEntropyLoss runs on the bf16 scores: 3 x 2 B per logit; under autocast 10 B
    (measured on the H200: bert-large AMP, T3), where a decoder's explicit .float() keeps 12."""
    spec = bundled_models().find("bert-base-uncased").spec
    const = load_constants()
    bf16 = estimate(spec, Workload(mode="train", batch=16, seq=512, dtype="bf16", loop="trainer"), const)
    loss = next(p for p in bf16.phases if p.name == "loss backward")
    logits = next(t for t in loss.terms if t.name == "logits")
    assert logits.bytes == 16 * 512 * spec.vocab * 6
    assert loss.stranded == 0
    amp = estimate(spec, Workload(mode="train", batch=16, seq=512, dtype="fp32", amp="bf16", loop="trainer"), const)
    amp_loss = next(p for p in amp.phases if p.name == "loss backward")
    assert next(t for t in amp_loss.terms if t.name == "logits").bytes == 16 * 512 * spec.vocab * 10
    assert amp_loss.stranded == 16 * 512 * spec.vocab * 2
    gpt2 = bundled_models().find("gpt2").spec
    dec = estimate(gpt2, Workload(mode="train", batch=8, seq=1024, dtype="fp32", amp="bf16", loop="trainer"), const)
    dec_loss = next(p for p in dec.phases if p.name == "loss backward")
    assert next(t for t in dec_loss.terms if t.name == "logits").bytes == 8 * 1024 * gpt2.vocab * 12


def test_fp32_with_grouped_kv_heads_keeps_the_math_kernels_softmax_and_bf16_does_not():
    spec = bundled_models().find("Llama-3.2-1B").spec
    const = load_constants()
    w = Workload(mode="train", seq=2048, dtype="fp32", loop="trainer")
    names = [s.name for _, saved in estimate(spec, w, const).activation_detail for s in saved]
    assert "math SDPA: softmax output (fp32, s x s per head)" in names
    assert not any("log-sum-exp" in n for n in names)
    bf16 = [s.name for _, saved in estimate(spec, w.with_(dtype="bf16"), const).activation_detail for s in saved]
    assert not any("math SDPA" in n for n in bf16) and any("log-sum-exp" in n for n in bf16)
    amp = [s.name for _, saved in estimate(spec, w.with_(amp="bf16"), const).activation_detail for s in saved]
    assert not any("math SDPA" in n for n in amp)  # autocast hands SDPA bf16: flash


@pytest.mark.parametrize("loop", ["trainer", "custom"])
def test_checkpointed_reserve_counts_the_loss_gradient_block_and_a_recomputed_layer(loop):
    spec = bundled_models().find("Llama-3.2-1B").spec
    const = load_constants()
    w = Workload(mode="train", batch=2, seq=8192, dtype="bf16", grad_checkpointing=True, loop=loop)
    e = estimate(spec, w, const)
    loss = next(p for p in e.phases if p.name == "loss backward")
    inputs = dict(next(t for t in loss.terms if t.name == "allocator_reserve").inputs)
    block = 2 * 8192 * spec.vocab * 4
    # the states (1.24B x 2 states x 2 B = 4.9 GB) do not fit in the freed bf16 logits block (4.2 GB): no spare
    assert loss.grad_block == block and loss.stranded == 0 and loss.spare == 0
    c_g = const.allocator_ckpt_grad_block_custom if loop == "custom" else const.allocator_ckpt_grad_block
    assert inputs["c_g"] == c_g and inputs["f"] == const.allocator_transient_ckpt
    states = next(t for t in loss.terms if t.name == "optimizer").bytes
    assert inputs["optimizer_state_bytes"] == states == 1_235_814_400 * 2 * 2
    want = int(
        const.allocator_segments_bytes
        + const.allocator_transient_ckpt * inputs["transient_bytes"]
        + c_g * block
        + const.allocator_ckpt_recompute * inputs["ckpt_recompute_bytes"]
        + const.allocator_states * states
    )
    assert abs(next(t for t in loss.terms if t.name == "allocator_reserve").bytes - want) <= 1
    # the optimizer step keeps what the backward reserved
    step = next(p for p in e.phases if p.name == "optimizer step")
    assert step.grad_block == block
    # fourth round: without checkpointing the second fp32 block is counted too, with its own factor
    plain = estimate(spec, w.with_(grad_checkpointing=False), const)
    plain_loss = next(p for p in plain.phases if p.name == "loss backward")
    assert plain_loss.grad_block == block and plain_loss.recompute == 0
    assert (
        dict(next(t for t in plain_loss.terms if t.name == "allocator_reserve").inputs)["c_g"]
        == const.allocator_grad_block
    )


def test_checkpointed_trainer_loop_keeps_the_fp32_blocks_when_the_states_fit_the_freed_logits_block():
    # H6's shape: Qwen2.5-0.5B, b8 s2048: the bf16 logits block 16,384 x 151,936 x 2 B = 4.98 GB holds the states
    # (494M x 2 x 2 B = 1.98 GB); its rest is the reserve, and no second fp32 gradient block is counted
    spec = bundled_models().find("Qwen2.5-0.5B").spec
    const = load_constants()
    w = Workload(mode="train", batch=8, seq=2048, dtype="bf16", grad_checkpointing=True, loop="trainer")
    loss = next(p for p in estimate(spec, w, const).phases if p.name == "loss backward")
    states = next(t for t in loss.terms if t.name == "optimizer").bytes
    assert loss.grad_block == 0 and loss.spare == 8 * 2048 * 151_936 * 2 - states > 0
    # the custom loop holds its logits, so the block is not free: the fp32 gradient block counts
    custom = next(p for p in estimate(spec, w.with_(loop="custom"), const).phases if p.name == "loss backward")
    assert custom.spare == 0 and custom.grad_block == 8 * 2048 * 151_936 * 4


def test_generation_reserves_the_caches_previous_blocks_at_the_last_token():
    spec = bundled_models().find("gpt2-large").spec
    const = load_constants()
    e = estimate(spec, Workload(mode="infer", batch=16, seq=512, new_tokens=128, dtype="fp16"), const)
    last = next(p for p in e.phases if p.name == "last generated token")
    kv = next(t for t in last.terms if t.name == "kv_cache").bytes
    # fourth round: the generated tokens' share of the cache, 128 of 640 tokens (b x new x 2 x L x d_kv x 2 B)
    assert last.kv_cat == 16 * 128 * 2 * 36 * 1280 * 2 == kv * 128 // 640
    kv = last.kv_cat
    reserve = next(t for t in last.terms if t.name == "allocator_reserve")
    inputs = dict(reserve.inputs)
    assert reserve.bytes == int(
        const.allocator_segments_bytes
        + const.allocator_transient_infer * inputs["transient_bytes"]
        + const.allocator_kv_cat * kv
    )
    assert next(p for p in e.phases if p.name == "prefill").kv_cat == 0


def test_moe_prefill_counts_gate_up_activation_product_and_the_weighted_copy_per_chosen_expert():
    # fourth round (N13, N16): per token and chosen expert 3h (gathered input, expert output, routing-weighted
    # copy) + 4 f_e (gate_up's two halves, the activation, the product), in A bytes
    spec = bundled_models().find("Mixtral-8x7B-v0.1").spec
    e = estimate(spec, Workload(mode="infer", batch=2, seq=1024, new_tokens=0, dtype="bf16"), load_constants())
    working = next(t for t in next(p for p in e.phases if p.name == "prefill").terms if t.name == "layer_working")
    inputs = dict(working.inputs)
    moe = 2 * spec.experts_per_token * (3 * 4096 + 4 * 14336)
    assert inputs["bytes_per_token"] == 2 * 2 * 4096 + inputs["held_bytes_per_token"] + moe
    assert working.bytes == int(2 * 1024 * inputs["bytes_per_token"])


def test_a_4bit_prefill_holds_one_dequantized_linear():
    """bitsandbytes' gemm_4bit falls back to dequantize + F.linear for a long prompt: one bf16 copy of the
    largest block linear (Llama-3.2-1B: the 8192 x 2048 MLP matrices) joins the prefill's working set."""
    spec = bundled_models().find("Llama-3.2-1B").spec
    const = load_constants()
    w = Workload(mode="infer", batch=2, seq=2048, new_tokens=8, dtype="bf16")
    plain = next(p for p in estimate(spec, w, const).phases if p.name == "prefill")
    quant = next(p for p in estimate(spec, w.with_(quant="int4"), const).phases if p.name == "prefill")

    def work(p):
        return next(t for t in p.terms if t.name == "layer_working")

    assert work(quant).bytes - work(plain).bytes == 8192 * 2048 * 2
    assert dict(work(quant).inputs)["dequantized_linear_params"] == 8192 * 2048

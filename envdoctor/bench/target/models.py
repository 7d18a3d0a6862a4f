"""Transformer layers built from torch alone: a part of ``bench.py`` (envdoctor.child), used by
``bench/target/layers.py`` and by ``benchmarks/bench_suites.py`` (the classic method, same layers).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. Five layers
(``F.linear``, ``F.layer_norm``, ``F.rms_norm`` or its formula, ``F.gelu``, ``F.silu``, and
``F.scaled_dot_product_attention`` or an eager ``softmax(Q K^T) V``), random weights (std 0.02),
no dropout:

    bert        BERT-large encoder layer: h 1024, 16 heads, ffn 4096, post-LN, GELU, q/k/v apart, biases
    gpt2        GPT-2-medium block: h 1024, 16 heads, ffn 4096, pre-LN, causal, GELU (tanh), fused qkv, biases
    t5_encoder  T5-large encoder layer: d_model 1024, 16 heads, d_ff 4096, pre-RMSNorm, ReLU, no biases,
                unscaled scores; T5's relative position bias is left out (with SDPA it would be an
                additive mask, which rules out the flash kernel)
    t5_decoder  T5-large decoder layer: as the encoder, plus causal self-attention and cross-attention
                to an encoder output of the same length
    llama       Llama-style block (Llama-3-8B sizes): h 4096, 32 query / 8 key-value heads (GQA), SwiGLU
                ffn 14336, RMSNorm, rotary embedding on q and k, causal, no biases (on the CPU: a
                stand-in with h 1024, 16/4 heads, ffn 2816)

Analytic FLOPs of one forward, mli's convention (matmuls only, 2 per multiply-add, attention
counted in full even where causal), T = b*s tokens, g = kv_heads / heads, f = the ffn width:

    projections  8 T h^2 (GQA: 4 T h^2 (1 + g))   scores and values  4 b s^2 h
    ffn          2 * 2 T h f = 16 T h^2 at f = 4h (SwiGLU: 3 * 2 T h f = 6 T h f)
    cross-attention (t5_decoder, encoder length s): 8 T h^2 + 4 b s^2 h more
    forward+backward = 3 x forward (the input and every weight get their gradient)
"""

import math

if False:  # for readers and linters: this comes from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import first_line

LAYERS = ("bert", "gpt2", "t5_encoder", "t5_decoder", "llama")
DIMS = {
    "bert": {"h": 1024, "heads": 16, "ffn": 4096},
    "gpt2": {"h": 1024, "heads": 16, "ffn": 4096},
    "t5_encoder": {"h": 1024, "heads": 16, "ffn": 4096},
    "t5_decoder": {"h": 1024, "heads": 16, "ffn": 4096},
    "llama": {"h": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336},
}
CPU_DIMS = {"llama": {"h": 1024, "heads": 16, "kv_heads": 4, "ffn": 2816}}
CAUSAL = {"bert": False, "gpt2": True, "t5_encoder": False, "t5_decoder": True, "llama": True}
INIT_STD = 0.02
BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}
SDPA_OPTS = {"scale": True, "enable_gqa": False}


def analytic_flops(name, dims, b, s):
    """FLOPs of one forward of layer ``name`` at batch b, sequence s (see the module docstring)."""
    h, f = float(dims["h"]), float(dims["ffn"])
    tokens = float(b) * s
    if name == "llama":
        g = float(dims.get("kv_heads", dims["heads"])) / dims["heads"]
        proj = 4.0 * tokens * h * h * (1.0 + g)
        ffn = 6.0 * tokens * h * f
    else:
        proj = 8.0 * tokens * h * h
        ffn = 4.0 * tokens * h * f
    att = 4.0 * b * float(s) * s * h
    total = proj + att + ffn
    if name == "t5_decoder":
        total += proj + att
    return total


def attention_flops(name, dims, b, s):
    """The scores and values part of :func:`analytic_flops`: 4 b s^2 h per attention of the layer."""
    return 4.0 * b * float(s) * s * dims["h"] * (2 if name == "t5_decoder" else 1)


# --- building the layers ---------------------------------------------------------------------


def _param(torch, shape, device, dtype, value=None):
    if value is None:
        t = torch.randn(*shape, device=device, dtype=dtype) * INIT_STD
    else:
        t = torch.full(shape, value, device=device, dtype=dtype)
    return t.requires_grad_()


def _heads(t, b, s, n, d):
    return t.view(b, s, n, d).transpose(1, 2)


def _merge(t, b, s):
    return t.transpose(1, 2).reshape(b, s, -1)


def _kernel_of_node(name):
    low = name.lower()
    for key in ("flash", "efficient", "cudnn", "overrideable"):
        if key in low:
            return key
    return "math"  # the math path is ordinary operations: its last node is e.g. BmmBackward0


def kernel_seen(torch, q, k, v, causal, kw, out):
    """What one scaled_dot_product_attention call ran: its autograd node, and the dispatcher's choice."""
    seen = {}
    node = getattr(out, "grad_fn", None)
    if node is not None:
        seen["node"] = node.name()
        seen["kernel"] = _kernel_of_node(seen["node"])
    try:
        extra = dict((key, kw[key]) for key in ("scale", "enable_gqa") if key in kw)
        choice = int(torch._fused_sdp_choice(q, k, v, None, 0.0, causal, **extra))
        seen["choice"] = BACKENDS.get(choice, "backend %d" % choice)
    except Exception as exc:
        seen["choice_error"] = first_line(exc)
    return seen


def attend(torch, q, k, v, causal, scale, attn, ctx, probe):
    """softmax(q k^T * scale [+ causal mask]) v, eager or through SDPA; q (b, heads, s, d), k/v (b, kv, s_k, d)."""
    groups = q.shape[1] // k.shape[1]
    if attn == "eager":
        if groups > 1:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        scores = torch.matmul(q, k.transpose(-2, -1))
        if scale is None:
            scores = scores * (1.0 / math.sqrt(q.shape[-1]))
        elif scale != 1.0:
            scores = scores * scale
        if causal:
            scores = scores.masked_fill(ctx["mask"], float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)
    kw = {"is_causal": causal}
    if scale is not None:
        if SDPA_OPTS["scale"]:
            kw["scale"] = scale
        else:  # a torch before 2.1: SDPA always divides by sqrt(d)
            q = q * (scale * math.sqrt(q.shape[-1]))
    if groups > 1:
        if SDPA_OPTS["enable_gqa"]:
            kw["enable_gqa"] = True
        else:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    if probe is not None:
        probe.append(kernel_seen(torch, q, k, v, causal, kw, out))
    return out


def rotary_tables(torch, s, d, device, dtype):
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(s, device=device, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotary(torch, t, cos, sin):
    half = t.shape[-1] // 2
    return t * cos + torch.cat((-t[..., half:], t[..., :half]), dim=-1) * sin


def build_layer(torch, name, dims, dtype, device):
    """{"name", "dims", "dtype", "params", "forward": fn(x, ctx, attn, probe) -> y} for one layer."""
    F = torch.nn.functional
    h, heads, f = dims["h"], dims["heads"], dims["ffn"]
    kv = dims.get("kv_heads", heads)
    d = h // heads
    P = {}
    biased = name in ("bert", "gpt2")

    def lin(key, out_f, in_f):
        P[key] = _param(torch, (out_f, in_f), device, dtype)
        if biased:
            P[key + "_b"] = _param(torch, (out_f,), device, dtype, 0.0)

    def norm(key):
        P[key] = _param(torch, (h,), device, dtype, 1.0)
        if biased:
            P[key + "_b"] = _param(torch, (h,), device, dtype, 0.0)

    def linear(t, key):
        return F.linear(t, P[key], P.get(key + "_b"))

    eps = 1e-12 if name == "bert" else 1e-5 if name == "gpt2" else 1e-6
    has_rms = hasattr(F, "rms_norm")

    def normed(t, key):
        if biased:
            return F.layer_norm(t, (h,), P[key], P[key + "_b"], eps)
        if has_rms:
            return F.rms_norm(t, (h,), P[key], eps)
        var = t.float().pow(2).mean(-1, keepdim=True)
        return (t.float() * torch.rsqrt(var + eps)).to(t.dtype) * P[key]

    def attention(y, src, prefix, causal, scale, ctx, attn, probe, rope=False):
        b, s, _ = y.shape
        q = _heads(linear(y, prefix + "q"), b, s, heads, d)
        k = _heads(linear(src, prefix + "k"), b, src.shape[1], kv, d)
        v = _heads(linear(src, prefix + "v"), b, src.shape[1], kv, d)
        if rope:
            q = _rotary(torch, q, ctx["cos"], ctx["sin"])
            k = _rotary(torch, k, ctx["cos"], ctx["sin"])
        out = attend(torch, q, k, v, causal, scale, attn, ctx, probe)
        return linear(_merge(out, b, s), prefix + "o")

    for prefix in ("s_", "c_") if name == "t5_decoder" else ("s_",):
        if name == "gpt2":
            lin("qkv", 3 * h, h)
        else:
            lin(prefix + "q", h, h)
            lin(prefix + "k", kv * d, h)
            lin(prefix + "v", kv * d, h)
        lin(prefix + "o", h, h)
    for key in ("n1", "n2", "n3") if name == "t5_decoder" else ("n1", "n2"):
        norm(key)
    lin("w1", f, h)
    lin("w2", h, f)
    if name == "llama":
        lin("w3", f, h)

    def bert(x, ctx, attn, probe):
        x = F.layer_norm(x + attention(x, x, "s_", False, None, ctx, attn, probe), (h,), P["n1"], P["n1_b"], eps)
        y = linear(F.gelu(linear(x, "w1")), "w2")
        return F.layer_norm(x + y, (h,), P["n2"], P["n2_b"], eps)

    def gpt2(x, ctx, attn, probe):
        b, s, _ = x.shape
        q, k, v = linear(normed(x, "n1"), "qkv").split(h, dim=2)
        out = attend(
            torch,
            _heads(q, b, s, heads, d),
            _heads(k, b, s, heads, d),
            _heads(v, b, s, heads, d),
            True,
            None,
            attn,
            ctx,
            probe,
        )
        x = x + linear(_merge(out, b, s), "s_o")
        return x + linear(F.gelu(linear(normed(x, "n2"), "w1"), approximate="tanh"), "w2")

    def t5_encoder(x, ctx, attn, probe):
        y = normed(x, "n1")
        x = x + attention(y, y, "s_", False, 1.0, ctx, attn, probe)
        return x + linear(F.relu(linear(normed(x, "n2"), "w1")), "w2")

    def t5_decoder(x, ctx, attn, probe):
        y = normed(x, "n1")
        x = x + attention(y, y, "s_", True, 1.0, ctx, attn, probe)
        x = x + attention(normed(x, "n2"), ctx["enc"], "c_", False, 1.0, ctx, attn, probe)
        return x + linear(F.relu(linear(normed(x, "n3"), "w1")), "w2")

    def llama(x, ctx, attn, probe):
        y = normed(x, "n1")
        x = x + attention(y, y, "s_", True, None, ctx, attn, probe, rope=True)
        y = normed(x, "n2")
        return x + linear(F.silu(linear(y, "w1")) * linear(y, "w3"), "w2")

    forward = {"bert": bert, "gpt2": gpt2, "t5_encoder": t5_encoder, "t5_decoder": t5_decoder, "llama": llama}[name]
    return {"name": name, "dims": dims, "dtype": dtype, "params": P, "forward": forward, "head_dim": d}


def point_inputs(torch, layer, b, s, device, grad):
    """The input x (b, s, h) and what the forward needs beside it (mask, rotary tables, encoder output)."""
    h, dtype = layer["dims"]["h"], layer["dtype"]
    x = torch.randn(b, s, h, device=device, dtype=dtype).requires_grad_(grad)
    ctx = {}
    if layer["name"] == "t5_decoder":
        ctx["enc"] = torch.randn(b, s, h, device=device, dtype=dtype).requires_grad_(grad)
    if CAUSAL[layer["name"]]:
        ctx["mask"] = torch.ones(s, s, device=device, dtype=torch.bool).triu(1)
    if layer["name"] == "llama":
        ctx["cos"], ctx["sin"] = rotary_tables(torch, s, layer["head_dim"], device, dtype)
    return x, ctx


def pass_fn(torch, layer, attn, mode, x, ctx, dy, probe=None):
    """The call a point times: the forward under no_grad, or forward then backward from ``dy``.

    Before each backward every gradient is set to None, as ``zero_grad(set_to_none=True)`` (the
    default since torch 2.0) leaves them before a training step's: the backward then writes
    fresh gradients, with no accumulation pass over every weight.
    """
    forward = layer["forward"]
    if mode == "fwd":

        def fwd():
            with torch.no_grad():
                return forward(x, ctx, attn, probe)

        return fwd
    leaves = [
        t for t in list(layer["params"].values()) + [x] + list(ctx.values()) if getattr(t, "requires_grad", False)
    ]

    def fwd_bwd():
        for t in leaves:
            t.grad = None
        y = forward(x, ctx, attn, probe)
        y.backward(dy)
        return y

    return fwd_bwd

"""A plain-torch reference decoder for ``fit/target/measure.py`` where transformers is not installed.

A part of ``fit/target/measure.py`` (envdoctor.child); standard library and torch only, Python 3.8+. It
builds a Llama-style decoder of the config's shape with the operations transformers 5.x writes
for ``LlamaForCausalLM`` (and Mistral, Qwen2 with its q/k/v biases, Qwen3 with its per-head q/k
RMSNorm), in the same order, so the tensors autograd keeps are the ones
``envdoctor/fit/activations.py`` lists:

- RMSNorm: ``x.to(float32)``, ``pow(2).mean(-1)``, ``x * rsqrt(var + eps)``, ``weight * x.to(dtype)``;
- rotary embeddings as ``q * cos + rotate_half(q) * sin`` with cos/sin computed once per forward;
- attention: SDPA with ``enable_gqa`` (no mask, ``is_causal`` for more than one query), or eager:
  ``repeat_kv``, ``q @ k.T * scale + causal mask``, ``softmax(dtype=float32).to(dtype)``, dropout,
  ``@ v``, then ``transpose(1, 2).contiguous()`` into ``o_proj``;
- SwiGLU MLP ``down(silu(gate(x)) * up(x))``;
- the loss as ``ForCausalLMLoss``: ``logits.float()``, labels padded by one and shifted,
  ``cross_entropy(ignore_index=-100)``;
- generation as ``generate(do_sample=False)`` with a ``DynamicCache``: a prefill, then one token at a
  time, each layer's K and V grown by ``torch.cat``, the last position's logits copied to fp32.

Weights are random (normal, std 0.02, as ``initializer_range``); norms start at one.
"""

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")


def reference_supported(family):
    return family in FAMILIES


def build_reference(torch, shape, dtype, device, attention):
    """The model (``nn.Module``) for ``shape`` (the host's normalised fields), on ``device`` in ``dtype``."""
    nn = torch.nn
    F = torch.nn.functional

    h = int(shape["hidden"])
    heads = int(shape["heads"])
    kv_heads = int(shape["kv_heads"])
    d = int(shape["head_dim"])
    f = int(shape["intermediate"])
    vocab = int(shape["vocab"])
    layers = int(shape["layers"])
    eps = float(shape.get("rms_norm_eps") or 1e-6)
    theta = float(shape.get("rope_theta") or 10000.0)
    bias = bool(shape.get("attention_bias"))
    o_bias = bias and shape.get("family") in ("llama", "mistral")
    mlp_bias = bool(shape.get("mlp_bias"))
    qk_norm = shape.get("family") == "qwen3"
    dropout = float(shape.get("attention_dropout") or 0.0)
    groups = heads // kv_heads

    class RMSNorm(nn.Module):
        def __init__(self, n):
            nn.Module.__init__(self)
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            var = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(var + self.eps)
            return self.weight * x.to(dt)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def repeat_kv(x):
        if groups == 1:
            return x
        b, n, s, dd = x.shape
        return x[:, :, None, :, :].expand(b, n, groups, s, dd).reshape(b, n * groups, s, dd)

    class Attention(nn.Module):
        def __init__(self):
            nn.Module.__init__(self)
            self.q_proj = nn.Linear(h, heads * d, bias=bias)
            self.k_proj = nn.Linear(h, kv_heads * d, bias=bias)
            self.v_proj = nn.Linear(h, kv_heads * d, bias=bias)
            self.o_proj = nn.Linear(heads * d, h, bias=o_bias)
            if qk_norm:
                self.q_norm = RMSNorm(d)
                self.k_norm = RMSNorm(d)

        def forward(self, x, cos, sin, mask, cache, index):
            b, s = x.shape[0], x.shape[1]
            q = self.q_proj(x).view(b, s, -1, d)
            k = self.k_proj(x).view(b, s, -1, d)
            if qk_norm:
                q, k = self.q_norm(q), self.k_norm(k)
            q = q.transpose(1, 2)
            k = k.transpose(1, 2)
            v = self.v_proj(x).view(b, s, -1, d).transpose(1, 2)
            c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
            q = (q * c) + (rotate_half(q) * sn)
            k = (k * c) + (rotate_half(k) * sn)
            if cache is not None:
                if cache[index] is not None:
                    k = torch.cat([cache[index][0], k], dim=-2)
                    v = torch.cat([cache[index][1], v], dim=-2)
                cache[index] = (k, v)
            p = dropout if self.training else 0.0
            if attention == "sdpa":
                kw = {}
                if groups > 1:
                    kw["enable_gqa"] = True
                out = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=p, scale=d**-0.5, is_causal=s > 1, **kw
                )
            else:
                kk, vv = repeat_kv(k), repeat_kv(v)
                w = torch.matmul(q, kk.transpose(2, 3)) * (d**-0.5)
                if mask is not None:
                    w = w + mask
                w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
                w = F.dropout(w, p=p, training=self.training)
                out = torch.matmul(w, vv)
            out = out.transpose(1, 2).contiguous()
            return self.o_proj(out.reshape(b, s, -1).contiguous())

    class MLP(nn.Module):
        def __init__(self):
            nn.Module.__init__(self)
            self.gate_proj = nn.Linear(h, f, bias=mlp_bias)
            self.up_proj = nn.Linear(h, f, bias=mlp_bias)
            self.down_proj = nn.Linear(f, h, bias=mlp_bias)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self, index):
            nn.Module.__init__(self)
            self.index = index
            self.self_attn = Attention()
            self.mlp = MLP()
            self.input_layernorm = RMSNorm(h)
            self.post_attention_layernorm = RMSNorm(h)

        def forward(self, x, cos, sin, mask, cache):
            r = x
            x = r + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, self.index)
            r = x
            return r + self.mlp(self.post_attention_layernorm(x))

    class Decoder(nn.Module):
        def __init__(self):
            nn.Module.__init__(self)
            self.embed_tokens = nn.Embedding(vocab, h)
            self.layers = nn.ModuleList([Layer(i) for i in range(layers)])
            self.norm = RMSNorm(h)
            self.lm_head = nn.Linear(h, vocab, bias=False)
            if shape.get("tie_embeddings"):
                self.lm_head.weight = self.embed_tokens.weight
            inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
            self.register_buffer("inv_freq", inv, persistent=False)
            self.gradient_checkpointing = False
            self.vocab = vocab

        def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
            self.gradient_checkpointing = True

        def _rope(self, x, positions):
            freqs = positions[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float32)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        def hidden(self, ids, cache=None, offset=0):
            embeds = self.embed_tokens(ids)  # kept referenced through the layers, as transformers'
            x = embeds  # inputs_embeds is
            b, s = ids.shape
            positions = (torch.arange(s, device=ids.device) + offset).unsqueeze(0)
            cos, sin = self._rope(x, positions)
            mask = None
            if attention == "eager" and s > 1:
                allowed = torch.ones(s, s, dtype=torch.bool, device=ids.device).tril()
                mask = torch.where(allowed, 0.0, torch.finfo(x.dtype).min).to(x.dtype)
                mask = mask[None, None].expand(b, 1, s, s).contiguous()
            for layer in self.layers:
                if self.gradient_checkpointing and self.training:
                    import torch.utils.checkpoint as ckpt

                    x = ckpt.checkpoint(layer, x, cos, sin, mask, None, use_reentrant=False)
                else:
                    x = layer(x, cos, sin, mask, cache)
            return self.norm(x)

        def forward(self, input_ids, labels=None, keep_logits=False):
            """The logits; with ``labels`` the loss, or (loss, the head's logits) with ``keep_logits``,
            as transformers' output object holds both."""
            head = self.lm_head(self.hidden(input_ids))
            if labels is None:
                return head
            logits = head.float()
            shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
            loss = F.cross_entropy(logits.view(-1, self.vocab), shifted.view(-1), ignore_index=-100)
            return (loss, head) if keep_logits else loss

        def generate_tokens(self, ids, new_tokens):
            """Greedy generation of exactly ``new_tokens``; returns (tokens, cache)."""
            cache = [None] * len(self.layers)
            out = ids
            offset = 0
            step_ids = ids
            for _ in range(new_tokens):
                x = self.hidden(step_ids, cache, offset)
                logits = self.lm_head(x[:, -1:, :])
                last = logits[:, -1, :].to(copy=True, dtype=torch.float32)
                del logits
                token = torch.argmax(last, dim=-1)
                offset += step_ids.shape[1]
                step_ids = token[:, None]
                out = torch.cat([out, step_ids], dim=-1)
            return out, cache

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in its dtype, as transformers does (no fp32 copy first)
    try:
        with torch.device(device):
            model = Decoder()
    finally:
        torch.set_default_dtype(before)
    std = 0.02
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                continue
            if name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, std)
    return model

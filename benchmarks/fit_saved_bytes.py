"""Check envdoctor.fit's per-layer saved-activation recipe against real transformers on the CPU.

Builds tiny models of each family from a config (random weights, no download) with 1 and 2
layers, runs forward + loss under ``torch.autograd.graph.saved_tensors_hooks`` and counts the
bytes of the distinct storages autograd keeps that are not parameters. The difference between
the 2- and 1-layer models is one layer; divided by batch x seq it is bytes per token, which is
what ``envdoctor.fit.activations.layer_saved`` predicts.

Needs torch and transformers in the running interpreter (not envdoctor dependencies):

    python benchmarks/fit_saved_bytes.py            # prints one line per family x precision x attention

Dropout is off in the GPT-2, BERT and T5 configs here: on the CPU, SDPA with dropout falls back to
the math kernel (which keeps the s x s probabilities), unlike CUDA's flash kernel. The masks
themselves were checked with dropout on and eager attention (the CPU keeps them in the input
dtype, CUDA's fused dropout as bool). CPU differs from CUDA in SDPA kernels (the CPU flash kernel
keeps the same q, k, v, output and log-sum-exp) and in autocast's op lists, so the autocast rows are indicative only.
"""

from __future__ import annotations

import sys

import torch
import transformers

from envdoctor.fit.activations import Precision, layer_bytes_per_token, layer_saved
from envdoctor.fit.config import spec_from_config

B, S = 2, 48

TINY = {
    "llama": dict(
        architectures=["LlamaForCausalLM"],
        model_type="llama",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    ),
    "qwen2": dict(
        architectures=["Qwen2ForCausalLM"],
        model_type="qwen2",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    ),
    "qwen3": dict(
        architectures=["Qwen3ForCausalLM"],
        model_type="qwen3",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=100,
    ),
    "gemma2": dict(
        architectures=["Gemma2ForCausalLM"],
        model_type="gemma2",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=100,
    ),
    "phi3": dict(
        architectures=["Phi3ForCausalLM"],
        model_type="phi3",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
    ),
    "mixtral": dict(
        architectures=["MixtralForCausalLM"],
        model_type="mixtral",
        hidden_size=64,
        intermediate_size=96,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    "gpt2": dict(
        architectures=["GPT2LMHeadModel"],
        model_type="gpt2",
        n_embd=64,
        n_head=4,
        vocab_size=100,
        n_positions=128,
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
    ),
    "bert": dict(
        architectures=["BertForMaskedLM"],
        model_type="bert",
        hidden_size=64,
        intermediate_size=160,
        num_attention_heads=4,
        vocab_size=100,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    ),
    "t5": dict(
        architectures=["T5ForConditionalGeneration"],
        model_type="t5",
        d_model=64,
        d_ff=160,
        d_kv=16,
        num_heads=4,
        vocab_size=100,
        dropout_rate=0.0,
    ),
}


def saved_bytes(model: torch.nn.Module, family: str, autocast: bool) -> int:
    """Distinct non-parameter storages autograd keeps; autocast's bf16 copies of the weights are
    left out too (fit counts them in their own term, not per token)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    shapes = {tuple(p.shape) for p in model.parameters()} | {tuple(p.shape)[::-1] for p in model.parameters()}
    seen: dict = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if autocast and t.dim() == 2 and tuple(t.shape) in shapes and t.dtype == torch.bfloat16:
            return t
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    ids = torch.randint(0, 100, (B, S))
    kwargs = {"labels": ids}
    if family == "t5":
        kwargs["decoder_input_ids"] = ids
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, **kwargs)
        loss = out.loss
    del out
    total = sum(seen.values())
    loss.backward()
    return total


def build(family: str, layers: int, dtype: torch.dtype, attention: str) -> torch.nn.Module:
    cfg = dict(TINY[family])
    key = {"gpt2": "n_layer", "t5": "num_layers"}.get(family, "num_hidden_layers")
    cfg[key] = layers
    config = transformers.AutoConfig.for_model(**cfg)  # type: ignore[arg-type]
    config._attn_implementation = attention
    model = (
        transformers.AutoModelForCausalLM.from_config(config)
        if family not in ("bert", "t5")
        else (
            transformers.AutoModelForMaskedLM.from_config(config)
            if family == "bert"
            else transformers.AutoModelForSeq2SeqLM.from_config(config)
        )
    )
    model.config._attn_implementation = attention
    return model.to(dtype).train()


def main() -> int:
    torch.manual_seed(0)
    rows = []
    for family in TINY:
        for label, dtype, autocast in (
            ("bf16", torch.bfloat16, False),
            ("fp32", torch.float32, False),
            ("fp32+autocast", torch.float32, True),
        ):
            for attention in ("sdpa", "eager"):
                try:
                    one = saved_bytes(build(family, 1, dtype, attention), family, autocast)
                    two = saved_bytes(build(family, 2, dtype, attention), family, autocast)
                except Exception as exc:  # a family/precision the CPU cannot run
                    rows.append(f"{family:8} {label:14} {attention:5} failed: {type(exc).__name__}: {exc}")
                    continue
                measured = (two - one) / (B * S)
                cfg = dict(TINY[family])
                cfg[{"gpt2": "n_layer", "t5": "num_layers"}.get(family, "num_hidden_layers")] = 1
                spec = spec_from_config(cfg, "tiny")
                act = 2 if dtype == torch.bfloat16 or autocast else 4
                # the CPU's dropout keeps its mask in the input dtype (CUDA's fused kernel: bool)
                p = Precision(
                    act=act,
                    resid=2 if dtype == torch.bfloat16 else 4,
                    autocast=autocast,
                    mask=2 if dtype == torch.bfloat16 else 4,
                    cuda=False,
                )  # the CPU's autocast lists
                layers = 2 if family == "t5" else 1  # T5: one more encoder and one more decoder layer
                predicted = layer_bytes_per_token(layer_saved(spec, p, S, attention, True))  # type: ignore[arg-type]
                if family == "t5":
                    predicted += layer_bytes_per_token(layer_saved(spec, p, S, attention, True, cross_attention=True))
                    layers = 1
                rows.append(
                    f"{family:8} {label:14} {attention:5} measured {measured:8.1f} B/token/layer  "
                    f"predicted {predicted / layers:8.1f}  ratio {predicted / measured:5.3f}"
                )
    rows += lora_rows()
    print("\n".join(rows))
    return 0


def lora_rows() -> list:
    """LoRA r=8 through PEFT (when installed): frozen base, fp32 adapters."""
    try:
        import peft
    except ImportError:
        return ["(peft not installed: LoRA rows skipped)"]
    out = []
    targets: dict = {
        "gpt2": (["c_attn", "c_proj", "c_fc"], ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]),
        "mixtral": (["q_proj", "k_proj", "v_proj", "o_proj"], ["q_proj", "k_proj", "v_proj", "o_proj"]),
        "llama": ("all-linear", ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    }
    for family, (peft_targets, names) in targets.items():
        for label, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            got = []
            for layers in (1, 2):
                model = peft.get_peft_model(
                    build(family, layers, dtype, "sdpa"),
                    peft.LoraConfig(r=8, target_modules=peft_targets, lora_dropout=0.0),
                )
                got.append(saved_bytes(model, family, False))
            measured = (got[1] - got[0]) / (B * S)
            cfg = dict(TINY[family])
            cfg[{"gpt2": "n_layer"}.get(family, "num_hidden_layers")] = 1
            spec = spec_from_config(cfg, "tiny")
            act = 2 if dtype == torch.bfloat16 else 4
            p = Precision(act=act, resid=act, autocast=False, mask=act)
            predicted = layer_bytes_per_token(layer_saved(spec, p, S, "sdpa", False, lora=names, lora_rank=8))
            out.append(
                f"{family:8} {label + '+lora8':14} sdpa  measured {measured:8.1f} B/token/layer  "
                f"predicted {predicted:8.1f}  ratio {predicted / measured:5.3f}"
            )
    return out


if __name__ == "__main__":
    sys.exit(main())

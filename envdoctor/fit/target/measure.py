"""The ``fit --measure`` child: build the model from its config with random weights and run the workload.

Standard library and torch only (transformers, peft and bitsandbytes when the target has them),
Python 3.8+, never imported by envdoctor itself. Nothing is downloaded: the model is built from
the config (``AutoModelFor...from_config`` under ``torch.device``, no remote code), or, without
transformers, as the plain-torch reference decoder of ``fit/target/reference.py``. Config, e.g.::

    {"model": {"config": {...config.json...}, "family": "llama", "kind": "decoder", "shape": {...}},
     "workload": {"mode": "train", "batch": 1, "seq": 2048, "dtype": "bf16", "optimizer": "adamw", ...},
     "device": "cuda", "builder": "auto", "seed": 0, "timed_steps": 3, "budget_s": 120,
     "matmul": {"dtype": "bf16", "n": 8192, "budget": 1.0}}

Training: random token ids, labels = ids; step 1 warms up (the optimizer creates its states);
step 2 is measured: the peak counters are reset before its forward, its backward and its
optimizer step, and each phase's peak and what is allocated after it are kept; the saved tensors
of its forward are summed through ``saved_tensors_hooks``. Further steps are timed only.
Inference: a short warm-up generation, the cache emptied, then one ``generate`` of exactly
``new_tokens`` greedy tokens (a forward for encoders), its peak and the KV cache it holds.
Out of memory is a result (``status: "oom"``, the phase, the peak reached), not a crash.
Then, with the model freed, one matmul point of the compute dtype (``bench/target/matmul.py``'s ``measure``,
the method of ``envdoctor bench``) for the MFU against the measured peak.

The result (schema ``envdoctor.fit.child/1``) holds raw readings; the host computes the context
(it knows the GPU's free memory before the child started) and compares with the estimate.
"""
# envdoctor child uses: _torch_common.py bench/target/matmul.py fit/target/memory.py fit/target/reference.py

import gc
import os
import sys
import time

if False:  # for readers and linters: these come from the files sent before this one
    from envdoctor.bench.target.matmul import measure
    from envdoctor.child._prelude import STOP, Failure, emit, first_line, stage
    from envdoctor.child._torch_common import Clock, Tf32, device_info, import_torch, is_oom, torch_dtype
    from envdoctor.fit.target.memory import CudaMemory, distinct_bytes, make_cpu_memory
    from envdoctor.fit.target.reference import build_reference, reference_supported

CHILD_SCHEMA = "envdoctor.fit.child/1"
OPTIONAL = ("transformers", "peft", "bitsandbytes", "accelerate")


def package_version(name):
    """The installed version of ``name`` without importing it, or None."""
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def check_stop():
    if STOP.is_set():
        raise KeyboardInterrupt


class Phases(object):
    """Which step and phase runs now (named by an OOM), and the measured phases' readings."""

    def __init__(self, mem):
        self.mem = mem
        self.name = "start"
        self.rows = []

    def begin(self, name, measured):
        self.name = name
        stage(name)
        if measured:
            self.mem.reset_peak()

    def end(self, name):
        peak_alloc, peak_res = self.mem.peaks()
        self.rows.append(
            {
                "name": name,
                "peak_allocated": peak_alloc,
                "peak_reserved": peak_res,
                "allocated_after": self.mem.allocated(),
            }
        )


def choose_builder(cfg, out):
    """ "transformers" or "reference", or (None, why not)."""
    want = cfg.get("builder") or "auto"
    family = cfg["model"]["family"]
    if want in ("auto", "transformers") and out["versions"].get("transformers"):
        return "transformers", None
    if want == "transformers":
        return None, "transformers is not installed in %s" % sys.executable
    if reference_supported(family):
        return "reference", None
    return None, (
        "transformers is not installed in %s, and the reference decoder builds Llama-style "
        "decoders only (not %s)" % (sys.executable, family)
    )


def unavailable_reason(cfg, out, builder, torch):
    """Why this workload cannot be measured here (a package it needs is missing), or None."""
    w = cfg["workload"]
    have = out["versions"]
    if w.get("lora_rank") and not have.get("peft"):
        return "peft is not installed in %s (LoRA adapters need it)" % sys.executable
    if w.get("lora_rank") and not w.get("lora_modules"):
        return "the LoRA targets of this model do not map onto module names the child can give peft"
    if w.get("quant") and not have.get("bitsandbytes"):
        return "bitsandbytes is not installed in %s (%s weights need it)" % (sys.executable, w["quant"])
    if w.get("quant") and cfg["model"].get("moe"):
        return "bitsandbytes cannot quantise the experts here (they are not nn.Linear modules)"
    if w.get("optimizer") == "adamw8bit" and not have.get("bitsandbytes"):
        return "bitsandbytes is not installed in %s (8-bit AdamW needs it)" % sys.executable
    if w.get("optimizer") == "adafactor" and not hasattr(torch.optim, "Adafactor"):
        return "this torch has no torch.optim.Adafactor (torch 2.5 or later)"
    if (w.get("quant") or w.get("optimizer") == "adamw8bit") and cfg.get("device") == "cpu":
        return "bitsandbytes is measured on a GPU only"
    if builder == "reference" and cfg["model"].get("kind") != "decoder":
        return "the reference decoder builds decoders only"
    return None


def build(torch, cfg, builder, dtype, device):
    m = cfg["model"]
    attention = cfg["workload"]["attention"]
    if builder == "reference":
        return build_reference(torch, m["shape"], dtype, device, attention)
    import transformers

    try:
        transformers.logging.set_verbosity_error()
    except Exception:
        pass
    conf = dict(m["config"])
    model_type = conf.pop("model_type")
    for key in ("auto_map", "quantization_config", "_name_or_path", "transformers_version"):
        conf.pop(key, None)
    config = transformers.AutoConfig.for_model(model_type, **conf)
    auto = {
        "decoder": transformers.AutoModelForCausalLM,
        "encoder": transformers.AutoModelForMaskedLM,
        "encoder-decoder": transformers.AutoModelForSeq2SeqLM,
    }[m["kind"]]
    major = int(str(transformers.__version__).split(".")[0])
    kwargs = {"attn_implementation": attention, "trust_remote_code": False}
    kwargs["dtype" if major >= 5 else "torch_dtype"] = dtype
    with torch.device(device):
        model = auto.from_config(config, **kwargs)
    return model.to(device)


def quantise(torch, model, quant, dtype, device):
    """Swap the linears (all but the output head and BERT's MLM transform) for bitsandbytes ones."""
    import bitsandbytes as bnb

    names = [
        n
        for n, mod in model.named_modules()
        if isinstance(mod, torch.nn.Linear) and not n.endswith(("lm_head", "predictions.transform.dense"))
    ]
    for name in names:
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        attr = name.rsplit(".", 1)[-1]
        old = getattr(parent, attr)
        bias = old.bias is not None
        if quant == "int4":
            new = bnb.nn.Linear4bit(
                old.in_features,
                old.out_features,
                bias=bias,
                compute_dtype=dtype,
                compress_statistics=True,
                quant_type="nf4",
            )
            new.weight = bnb.nn.Params4bit(
                old.weight.data.to("cpu"), requires_grad=False, quant_type="nf4", compress_statistics=True
            )
        else:
            new = bnb.nn.Linear8bitLt(
                old.in_features, old.out_features, bias=bias, has_fp16_weights=False, threshold=6.0
            )
            new.weight = bnb.nn.Int8Params(old.weight.data.to("cpu"), requires_grad=False, has_fp16_weights=False)
        if bias:
            new.bias = torch.nn.Parameter(old.bias.data.to("cpu"), requires_grad=False)
        setattr(parent, attr, new.to(device))
        del old
    gc.collect()
    return model


def add_lora(model, w):
    import peft

    r = int(w["lora_rank"])
    conf = peft.LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, bias="none", target_modules=list(w["lora_modules"]))
    return peft.get_peft_model(model, conf)


def make_optimizer(torch, name, params, device):
    lr = 1e-5
    if name == "adamw":
        try:
            return torch.optim.AdamW(params, lr=lr, fused=True)
        except (RuntimeError, TypeError, ValueError):  # a torch without the fused kernel for this device
            return torch.optim.AdamW(params, lr=lr, foreach=True)
    if name == "adamw_foreach":
        return torch.optim.AdamW(params, lr=lr, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=lr)
    if name == "adamw8bit":
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(params, lr=lr)
    raise Failure("usage", "unknown optimizer %r" % name)


def loss_of(model, ids, builder, loop):
    """(loss, what the caller keeps). ``trainer``: the output object (and its logits) is dropped
    before backward, as HF Trainer's ``compute_loss`` does; ``custom``: the loop of the examples,
    ``outputs = model(**batch); loss = outputs.loss; loss.backward()``, keeps ``outputs`` (its
    logits) through backward and the optimizer step until the next forward has returned."""
    custom = loop != "trainer"
    if builder == "reference":
        if custom:
            return model(ids, labels=ids, keep_logits=True)
        return model(ids, labels=ids), None
    outputs = model(input_ids=ids, labels=ids)
    return outputs.loss, (outputs if custom else None)


class SavedBytes(object):
    """Distinct storages autograd keeps in one forward, parameters and buffers left out; under
    autocast the low-precision copies of weights (a parameter's shape) are counted apart."""

    def __init__(self, torch, model, autocast):
        self.torch = torch
        self.params = set()
        self.shapes = set()
        for p in list(model.parameters()) + list(model.buffers()):
            try:
                self.params.add(int(p.untyped_storage().data_ptr()))
            except Exception:
                pass
            self.shapes.add(tuple(p.shape))
            self.shapes.add(tuple(p.shape)[::-1])
        self.autocast = autocast
        self.activations = {}
        self.weight_copies = {}

    def pack(self, t):
        try:
            st = t.untyped_storage()
            ptr, n = int(st.data_ptr()), int(st.nbytes())
        except Exception:
            return t
        if ptr == 0 or ptr in self.params:
            return t
        if self.autocast and t.dim() == 2 and tuple(t.shape) in self.shapes and t.dtype != self.torch.float32:
            self.weight_copies[ptr] = n
        else:
            self.activations[ptr] = n
        return t

    def hooks(self):
        return self.torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)


def end_readings(mem):
    """What the process holds now: the driver's free memory, and the allocator's reserved and allocated."""
    free, total = mem.mem_info()
    return {"cuda_free_end": free, "reserved_end": mem.reserved(), "allocated_end": mem.allocated()}


def train(torch, model, cfg, mem, clock, dev, builder, res, phases):
    w = cfg["workload"]
    b, s = int(w["batch"]), int(w["seq"])
    vocab = int(cfg["model"]["shape"]["vocab"])
    g = torch.Generator(device=dev)
    g.manual_seed(int(cfg.get("seed") or 0))
    ids = torch.randint(0, vocab, (b, s), device=dev, generator=g)
    model.train()
    if w.get("grad_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(torch, w["optimizer"], params, dev)
    amp = w.get("amp")
    amp_dtype = torch_dtype(torch, amp) if amp else None
    scaler = None
    if amp == "fp16" and dev.type == "cuda":
        scaler = (
            torch.amp.GradScaler("cuda")
            if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")
            else torch.cuda.amp.GradScaler()
        )

    def autocast():
        if amp_dtype is None:
            return torch.autocast(dev.type, enabled=False)
        return torch.autocast(dev.type, dtype=amp_dtype)

    saved = None
    kept = None
    loop = w.get("loop") or "custom"
    res["loop"] = loop
    times = []
    measured = False
    # Step 1 warms up, step 2 is measured (and timed on a GPU; on the CPU the tracker slows it, so
    # the steps after it are timed), until ``timed_steps`` are timed or the budget is spent.
    want = max(1, int(cfg.get("timed_steps") or 1))
    cpu = dev.type == "cpu"
    started = time.time()
    budget = float(cfg.get("budget_s") or 0)
    step = 0
    while step < 2 or len(times) < want:
        check_stop()
        step += 1
        measure = step == 2
        if step > 2 and budget and time.time() - started > budget:
            res["notes"].append("%d timed step(s) instead of %d: the time budget ran out" % (len(times), want))
            break
        if measure:
            mem.register(
                list(model.parameters())
                + list(model.buffers())
                + [ids]
                + list(opt_state_tensors(torch, opt))
                + list(cache_tensors(torch, kept))
            )
        track = mem.tracking() if measure else _null()
        with track:
            if measure:
                mem.sync()
            t0 = clock.mark()
            name = "step %d: " % step
            phases.begin(name + "forward", measure)
            # ``kept`` (the custom loop's outputs) of the step before stays alive until this forward
            # returns: the assignment replaces it only then, as in a user's loop
            if measure and not w.get("grad_checkpointing"):
                saved = SavedBytes(torch, model, bool(amp))
                with saved.hooks():
                    with autocast():
                        loss, kept = loss_of(model, ids, builder, loop)
            else:
                with autocast():
                    loss, kept = loss_of(model, ids, builder, loop)
            if measure:
                phases.end("forward")
            phases.begin(name + "backward", measure)
            (scaler.scale(loss) if scaler is not None else loss).backward()
            if measure:
                phases.end("backward")
                res["memory"]["gradient_bytes"] = distinct_bytes(p.grad for p in params if p.grad is not None)
            phases.begin(name + "optimizer step", measure)
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if measure:
                phases.end("optimizer step")
            opt.zero_grad(set_to_none=True)
            t1 = clock.mark()
            clock.sync()
        value = float(loss.detach().float())
        del loss
        if step == 1:
            res["memory"]["optimizer_bytes"] = distinct_bytes(opt_state_tensors(torch, opt))
            res["loss_first"] = value
        if measure:
            measured = True
            res["memory"].update(end_readings(mem))
            res["loss"] = value
        if step >= 2 and not (measure and cpu):
            times.append(clock.ms(t0, t1) / 1000.0)
    del kept
    if saved is not None:
        res["memory"]["saved_bytes"] = sum(saved.activations.values())
        res["memory"]["autocast_copy_bytes"] = sum(saved.weight_copies.values()) if amp else None
    res["timing"] = {"step_s": times, "tokens_per_step": b * s}
    return measured


def opt_state_tensors(torch, opt):
    for state in opt.state.values():
        for v in state.values():
            if isinstance(v, torch.Tensor):
                yield v


def cache_tensors(torch, obj, depth=0):
    """Every tensor inside a generation cache (DynamicCache, EncoderDecoderCache, tuples, lists)."""
    if isinstance(obj, torch.Tensor):
        yield obj
        return
    if depth > 6 or obj is None or isinstance(obj, (str, int, float, bool)):
        return
    if isinstance(obj, (list, tuple)):
        items = obj
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif hasattr(obj, "__dict__"):
        items = [v for k, v in vars(obj).items() if k != "config"]
    else:
        return
    for x in items:
        for t in cache_tensors(torch, x, depth + 1):
            yield t


def generate(torch, model, ids, new_tokens, builder, kind):
    """(generated ids, the cache it holds); a prefill alone for new_tokens 0."""
    if builder == "reference":
        if new_tokens == 0:
            cache = [None] * len(model.layers)
            with torch.no_grad():
                x = model.hidden(ids, cache, 0)
                last = model.lm_head(x[:, -1:, :]).float()
            return last, cache
        with torch.no_grad():
            return model.generate_tokens(ids, new_tokens)
    if new_tokens == 0:
        extra = {"decoder_input_ids": ids[:, :1]} if kind == "encoder-decoder" else {"logits_to_keep": 1}
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True, **extra)
        return out.logits, getattr(out, "past_key_values", None) or getattr(out, "cache", None)
    res = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        num_beams=1,
        use_cache=True,
        return_dict_in_generate=True,
        pad_token_id=0,
    )
    cache = getattr(res, "past_key_values", None)
    if cache is None:
        cache = getattr(res, "cache", None)
    return res.sequences, cache


def infer(torch, model, cfg, mem, clock, dev, builder, res, phases):
    w = cfg["workload"]
    b, s, new = int(w["batch"]), int(w["seq"]), int(w.get("new_tokens") or 0)
    vocab = int(cfg["model"]["shape"]["vocab"])
    kind = cfg["model"]["kind"]
    g = torch.Generator(device=dev)
    g.manual_seed(int(cfg.get("seed") or 0))
    ids = torch.randint(0, vocab, (b, s), device=dev, generator=g)
    model.eval()
    small = ids[:, : min(s, 8)]
    phases.begin("warm-up", False)
    with torch.no_grad():
        if kind == "encoder":
            model(input_ids=small)
        else:
            generate(torch, model, small, min(new, 2), builder, kind)
    gc.collect()
    mem.release()
    check_stop()
    mem.register(list(model.parameters()) + list(model.buffers()) + [ids])
    with mem.tracking():
        mem.sync()
        name = "forward" if kind == "encoder" else "generate"
        phases.begin(name, True)
        t0 = clock.mark()
        if kind == "encoder":
            with torch.no_grad():
                held = model(input_ids=ids).logits
            cache = None
        else:
            held, cache = generate(torch, model, ids, new, builder, kind)
        t1 = clock.mark()
        clock.sync()
        phases.end(name)
    res["memory"]["kv_cache_bytes"] = distinct_bytes(cache_tensors(torch, cache)) if kind != "encoder" else 0
    res["memory"].update(end_readings(mem))
    del held, cache
    seconds = clock.ms(t0, t1) / 1000.0
    res["timing"] = {
        "step_s": [seconds],
        "tokens_per_step": b * (s if kind == "encoder" else new),
        "prompt_tokens": b * s,
        "generated_tokens": 0 if kind == "encoder" else b * new,
    }
    return True


class _null(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def matmul_peak(torch, dev, spec):
    """One point of envdoctor bench's matmul method for the compute dtype (the MFU's measured peak)."""
    stage("matmul peak")
    clock = Clock(torch, dev)
    tf32 = Tf32(torch)
    saved = tf32.save()
    try:
        return measure(torch, dev, clock, tf32, spec["dtype"], int(spec["n"]), float(spec.get("budget") or 1.0))
    finally:
        tf32.restore(saved)


def main(cfg):
    started = time.time()
    out = {
        "schema": CHILD_SCHEMA,
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "status": None,
        "message": None,
        "builder": None,
        "device": None,
        "phases": [],
        "memory": {},
        "timing": None,
        "notes": [],
        "matmul": None,
        "versions": dict((name, package_version(name)) for name in OPTIONAL),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF"),
    }
    torch = import_torch(out)
    want_cpu = cfg.get("device") == "cpu"
    stage("CUDA init")
    t = time.perf_counter()
    if want_cpu:
        dev = torch.device("cpu")
        mem = make_cpu_memory(torch)
        out["device"] = {"kind": "cpu", "index": 0, "name": "CPU", "threads": torch.get_num_threads()}
    else:
        if not torch.cuda.is_available():
            out["status"] = "no_gpu"
            out["message"] = "torch %s in %s sees no GPU (torch.cuda.is_available() is False)" % (
                torch.__version__,
                sys.executable,
            )
            return out
        dev = torch.device("cuda", 0)
        torch.cuda.set_device(dev)
        torch.zeros(1, device=dev)
        torch.cuda.synchronize(dev)
        mem = CudaMemory(torch, dev)
        out["device"] = device_info(torch, 0)
        free, total = mem.mem_info()
        out["memory"].update(cuda_free_init=free, cuda_total=total, reserved_init=mem.reserved())
        out["tf32"] = Tf32(torch).get()
    out["init_s"] = round(time.perf_counter() - t, 3)
    builder, why = choose_builder(cfg, out)
    if builder is None:
        out.update(status="unavailable", message=why)
        return out
    out["builder"] = builder
    why = unavailable_reason(cfg, out, builder, torch)
    if why:
        out.update(status="unavailable", message=why)
        return out
    torch.manual_seed(int(cfg.get("seed") or 0))
    w = cfg["workload"]
    dtype = torch_dtype(torch, w["dtype"])
    phases = Phases(mem)
    clock = Clock(torch, dev)
    measured = False
    try:
        try:
            check_stop()
            phases.begin("build the model", True)
            t = time.perf_counter()
            model = build(torch, cfg, builder, dtype, dev)
            if w.get("quant"):
                phases.name = "quantise the weights"
                model = quantise(torch, model, w["quant"], dtype, dev)
                mem.release()
            if w.get("lora_rank"):
                phases.name = "add the LoRA adapters"
                model = add_lora(model, w)
            out["build_s"] = round(time.perf_counter() - t, 3)
            phases.end("build")
            out["memory"]["weights_bytes"] = distinct_bytes(list(model.parameters()) + list(model.buffers()))
            out["memory"]["weights_allocated"] = mem.allocated()
            out["params"] = sum(p.numel() for p in model.parameters())
            out["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
            run = train if w["mode"] == "train" else infer
            measured = run(torch, model, cfg, mem, clock, dev, builder, out, phases)
        except Exception as exc:
            if not is_oom(exc):
                raise
            peak_alloc, peak_res = mem.peaks()
            out["oom"] = {
                "phase": phases.name,
                "message": first_line(exc),
                "peak_allocated": peak_alloc,
                "peak_reserved": peak_res,
            }
            out["memory"].update(end_readings(mem))
            out["status"] = "oom"
    finally:
        out["phases"] = phases.rows
        model = None
    gc.collect()
    mem.release()
    if out["status"] is None:
        out["status"] = "measured" if measured else "failed"
    out["measure_s"] = round(time.time() - started, 3)
    spec = cfg.get("matmul")
    if spec and not STOP.is_set():
        try:
            out["matmul"] = matmul_peak(torch, dev, spec)
        except Exception as exc:
            out["matmul"] = {
                "status": "failed",
                "error": first_line(exc),
                "dtype": spec.get("dtype"),
                "n": spec.get("n"),
            }
        mem.release()
    emit("measured", status=out["status"])
    return out

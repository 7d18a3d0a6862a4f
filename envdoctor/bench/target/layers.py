"""Transformer layers against the matmul peak: the layers suite, a part of ``bench.py`` (envdoctor.child).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. The layers
and their analytic FLOPs are in ``bench/target/models.py``. Per layer and dtype, in fp16 and bf16 on a
GPU (fp32 on the CPU), eager and SDPA attention, ``fwd`` and ``fwd+bwd``, at the shapes below.

Per point: a first call, checked for NaN/Inf, that also shows which attention kernel ran (the
autograd node of the SDPA output, and ``torch._fused_sdp_choice``, the dispatcher's own choice);
one call under a counting dispatch mode (kernels launched, bytes through the non-matmul
operations, and FLOPs by FlopCounterMode's own formulas); then the timed repeats
(``_torch_common.time_repeats``), on a GPU after a heat of ``HEAT_S`` for a call that runs at
``HEAT_SHARE`` of the matmul rate or more (such a call is the one a power cap slows). ``fwd``
runs under ``torch.no_grad()``; ``fwd+bwd`` is ``layer(x).backward(dy)`` with the gradients set
to None before it. A point that runs out of memory is skipped with the reason. Per layer and
attention the counted FLOPs of the first shape's two points, beside the analytic count, make a
``flop_check`` event. The matmul rates the host compares with come from the matmul suite of the
same run or, where it did not run, from one short product per dtype (``reference`` points).
"""

import time

if False:  # for readers and linters: these come from the files bench.py sends before this one
    from envdoctor.bench.target.matmul import measure
    from envdoctor.bench.target.models import (
        BACKENDS,
        CPU_DIMS,
        DIMS,
        LAYERS,
        SDPA_OPTS,
        analytic_flops,
        attention_flops,
        build_layer,
        pass_fn,
        point_inputs,
    )
    from envdoctor.child._prelude import emit, first_line
    from envdoctor.child._torch_common import (
        Clock,
        Tf32,
        point_failure,
        release,
        settled_median,
        time_repeats,
        torch_dtype,
    )

ATTENTIONS = ("eager", "sdpa")
MODES = ("fwd", "fwd+bwd")
# (batch, sequence) per layer: a small batch and a large one, mli's sequence lengths.
GPU_SHAPES = {
    "bert": [[4, 128], [32, 512]],
    "gpt2": [[4, 512], [16, 1024]],
    "t5_encoder": [[4, 512], [16, 512]],
    "t5_decoder": [[4, 512], [16, 512]],
    "llama": [[1, 1024], [2, 2048]],
}
CPU_SHAPES = dict((name, [[1, 128]]) for name in LAYERS)
MAX_ONE_PASS_S = 3.0  # a point whose one call would take longer is skipped
LAYER_EFFICIENCY = 0.4  # for that estimate: a layer runs at about this share of the matmul rate
REFERENCE_BUDGET_S = 0.3  # the matmul run for the peak when the matmul suite did not run
# The heat before a compute-dense point's repeats. On the H200 (700 W cap) such a call ran 5-12%
# faster for its first 50-100 ms after the pause of a point's set-up, then the clocks settled
# (docs/benchmarks.md, the layers against the classic method). The calibration comes first,
# so the repeats start about 90 ms into the load.
HEAT_S = 0.08
SETUP_S = 0.3  # a GPU point's set-up (first call, profile, calibration) beyond its repeats
CPU_SETUP_S = 0.1  # the same allowance on a CPU
HEAT_SHARE = 0.3  # heat a call whose calibrated rate is at least this share of the matmul rate
NO_KERNEL = (
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "detach",
    "alias",
    "lift_fresh",
    "_local_scalar_dense",
    "sym_size",
    "sym_stride",
    "is_same_size",
    "_has_compatible_shallow_copy_type",
    "_to_copy_noop",
)
MATMUL_OPS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addbmm")


# --- what a call does: kernels, bytes, FLOPs --------------------------------------------------


def _tensors(torch, obj, out):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(torch, o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(torch, o, out)
    return out


def flop_formulas(torch):
    """FlopCounterMode's formulas (``torch.utils.flop_counter.flop_registry``: op -> FLOPs), or None."""
    try:
        from torch.utils import flop_counter
    except Exception:
        return None
    table = getattr(flop_counter, "flop_registry", None)
    return table if isinstance(table, dict) else None


def op_profile(torch, fn, formulas=None):
    """One call of ``fn`` under a counting dispatch mode: {"ops": kernels launched (about: every
    operation that is not a view), "matmul_ops": of them products and attention kernels,
    "other_bytes": bytes read and written by all the others (norms, softmax, GELU, adds, copies),
    and with ``formulas`` (:func:`flop_formulas`) "counted_flops", or "flops_error" where a
    formula failed}.

    FlopCounterMode counts the same way, op by op from the same table. Its own mode is not used:
    torch (2.6 and later) wraps every dispatch mode's ``__torch_dispatch__`` in
    ``torch._disable_dynamo``, whose first call imports torch._dynamo (about 800 modules, 2-3 s).
    That wrapper looks for the function it would build in the ``__dynamo_disable`` attribute of
    the wrapped function first; set to the function itself, nothing is imported. A torch
    without the wrapper ignores the attribute.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    stats = {"ops": 0, "matmul_ops": 0, "other_bytes": 0}
    flops = {"n": 0.0, "error": None}

    def nbytes(obj):
        return sum(t.numel() * t.element_size() for t in _tensors(torch, obj, []))

    def dispatch(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if getattr(func, "is_view", False) or name in NO_KERNEL:
            return out
        stats["ops"] += 1
        if name in MATMUL_OPS or "attention" in name:
            stats["matmul_ops"] += 1
        else:
            stats["other_bytes"] += nbytes(args) + nbytes(kwargs) + nbytes(out)
        formula = formulas.get(func.overloadpacket) if formulas is not None else None
        if formula is not None and flops["error"] is None:
            try:
                flops["n"] += float(formula(*args, out_val=out, **kwargs))
            except Exception as exc:  # sdpa_flop_count asserts on GQA shapes (torch 2.11)
                flops["error"] = first_line(exc)
        return out

    setattr(dispatch, "__dynamo_disable", dispatch)

    class Count(TorchDispatchMode):
        __torch_dispatch__ = dispatch

    with Count():
        fn()
    if formulas is not None:
        if flops["error"] is None:
            stats["counted_flops"] = flops["n"]
        else:
            stats["flops_error"] = flops["error"]
    return stats


def kernel_info(attn, probe):
    """The point's attention kernel from what its first call saw, and how it was found out."""
    if attn == "eager":
        return {"kernel": "eager"}
    if not probe:
        return {"kernel": "unknown", "kernel_how": "no scaled_dot_product_attention call was seen"}
    kernels, choices, hows = [], [], []
    for seen in probe:
        kernel = seen.get("kernel") or seen.get("choice") or "unknown"
        how = (
            ("autograd node " + seen["node"])
            if "node" in seen
            else ("torch._fused_sdp_choice" if "choice" in seen else "unknown: " + seen.get("choice_error", "?"))
        )
        for value, into in ((kernel, kernels), (seen.get("choice"), choices), (how, hows)):
            if value and value not in into:
                into.append(value)
    info = {"kernel": "+".join(kernels), "kernel_how": "; ".join(hows)}
    if choices:
        info["kernel_choice"] = "+".join(choices)
    return info


def flop_record(layer, attn, b, s, fwd, fwd_bwd):
    """The counted FLOPs of one layer's ``fwd`` and ``fwd+bwd`` points (dicts) at one shape,
    beside the analytic count: a ``flop_check`` event."""
    name = layer["name"]
    analytic = analytic_flops(name, layer["dims"], b, s)
    rec = {
        "layer": name,
        "attention": attn,
        "batch": b,
        "seq": s,
        "analytic_fwd": analytic,
        "analytic_fwd_bwd": 3.0 * analytic,
        "attention_fwd": attention_flops(name, layer["dims"], b, s),
    }
    for point, key in ((fwd, "counted_fwd"), (fwd_bwd, "counted_fwd_bwd")):
        if point.get("counted_flops") is not None:
            rec[key] = point["counted_flops"]
        elif "error" not in rec:
            rec["error"] = (
                point.get("flops_error")
                or point.get("profile_error")
                or point.get("error")
                or "this torch has no torch.utils.flop_counter.flop_registry"
            )
    if attn == "sdpa" and fwd_bwd.get("kernel"):
        rec["kernel"] = fwd_bwd["kernel"]
    return rec


# --- the suite ---------------------------------------------------------------------------------


def sdpa_setup(torch):
    """Which keywords this torch's scaled_dot_product_attention takes (scale: 2.1, enable_gqa: 2.5).

    Asked on the CPU: a keyword is this torch's, whatever the device, and a tiny call on the GPU
    would make cuDNN build (and compile) an attention graph that no point uses.
    """
    F = torch.nn.functional
    q = torch.zeros(1, 2, 4, 8)
    kv = torch.zeros(1, 1, 4, 8)
    for key, args, kw in (("scale", (q, q, q), {"scale": 1.0}), ("enable_gqa", (q, kv, kv), {"enable_gqa": True})):
        try:
            F.scaled_dot_product_attention(*args, **kw)
            SDPA_OPTS[key] = True
        except (TypeError, RuntimeError):
            SDPA_OPTS[key] = False


def sdpa_state(torch):
    """The SDPA backends this torch has switched on, their priority, the flash implementation."""
    state = {"enable_gqa": SDPA_OPTS["enable_gqa"]}
    cuda = torch.backends.cuda
    for key, fn in (
        ("flash", "flash_sdp_enabled"),
        ("efficient", "mem_efficient_sdp_enabled"),
        ("cudnn", "cudnn_sdp_enabled"),
        ("math", "math_sdp_enabled"),
    ):
        try:
            state[key] = bool(getattr(cuda, fn)())
        except Exception:
            pass
    try:
        state["priority"] = [BACKENDS.get(int(i), str(i)) for i in torch._C._get_sdp_priority_order()]
    except Exception:
        pass
    try:
        from torch.nn.attention import current_flash_attention_impl

        state["flash_impl"] = current_flash_attention_impl() or "built-in"
    except Exception:
        pass
    return state


def layers_plan(info, cfg, cuda):
    """(dtypes, [(layer, dims, shapes)], {what: why skipped}) for one device."""
    skipped = {}
    cc = tuple(int(x) for x in info["capability"].split(".")) if info.get("capability") else None
    if cuda:
        dtypes = []
        for d in cfg.get("dtypes") or ["fp16", "bf16"]:
            if d not in ("fp16", "bf16"):
                continue
            if d == "bf16" and cc is not None and cc < (8, 0):
                skipped["bf16"] = "bf16 needs compute capability 8.0 or later; this GPU is %s" % info["capability"]
            else:
                dtypes.append(d)
        if not dtypes and not skipped:
            skipped["layers"] = "the layers run in fp16 and bf16; --dtype asked for neither"
    else:
        dtypes = ["fp32"]
    layers = []
    for name in cfg.get("names") or LAYERS:
        if name not in DIMS:
            skipped[name] = "no such layer (choose from %s)" % ", ".join(LAYERS)
            continue
        dims = dict(DIMS[name])
        if not cuda:
            dims.update(CPU_DIMS.get(name, {}))
        dims.update((cfg.get("dims") or {}).get(name, {}))
        shapes = (cfg.get("shapes") or {}).get(name) or (GPU_SHAPES if cuda else CPU_SHAPES)[name]
        layers.append((name, dims, [(int(b), int(s)) for b, s in shapes]))
    return dtypes, layers, skipped


def layers_count(info, cfg, cuda):
    dtypes, layers, _ = layers_plan(info, cfg, cuda)
    per = len(cfg.get("attentions") or ATTENTIONS) * len(cfg.get("modes") or MODES)
    return len(dtypes) * sum(len(shapes) for _, _, shapes in layers) * per


def matmul_rates(torch, device, clock, tf32, dtypes, points, refs):
    """dtype -> the best matmul TFLOP/s of this run (n >= 2048 on a GPU), measured now where missing."""
    rates = {}
    floor = 2048 if clock.cuda else 256
    for d in dtypes:
        ok = [
            p["tflops"]
            for p in points
            if p.get("dtype") == d and p.get("status") == "ok" and p.get("tflops") and p.get("n", 0) >= floor
        ]
        if ok:
            rates[d] = max(ok)
            continue
        p = measure(torch, device, clock, tf32, d, 8192 if clock.cuda else 512, REFERENCE_BUDGET_S)
        p["reference"] = True
        refs.append(p)
        emit("point", suite="reference", point=p)
        if p.get("status") == "ok" and p.get("tflops"):
            rates[d] = p["tflops"]
    return rates


def heat_for(flops, rate, cuda):
    """The heat a point gets, as a function of its calibrated ms per call (see HEAT_S)."""

    def heat(per_ms):
        if not cuda:
            return 0.0
        if rate and flops / (max(per_ms, 1e-9) / 1000.0) / 1e12 < HEAT_SHARE * rate:
            return 0.0
        return HEAT_S

    return heat


def fastest_rates(points, floor):
    """dtype -> the fastest repeat's TFLOP/s of this run's matmul points (n >= ``floor``). The skip
    estimate uses it: repeats disturbed by other load (a median of 0.00026 TFLOP/s beside a best
    of 0.12) must not make every layer point "would take 65 s"."""
    rates = {}
    for p in points:
        if p.get("status") != "ok" or p.get("n", 0) < floor:
            continue
        best = max(p.get("best_tflops") or 0.0, p.get("tflops") or 0.0)
        if best > rates.get(p.get("dtype"), 0.0):
            rates[p.get("dtype")] = best
    return rates


def call_estimate_s(flops, rate):
    """Seconds one call of ``flops`` takes at LAYER_EFFICIENCY of ``rate`` TFLOP/s (None: no rate)."""
    return flops / (rate * 1e12 * LAYER_EFFICIENCY) if rate else None


def layer_point(
    torch, device, clock, tf32, layer, dtype_name, attn, mode, b, s, share, rate, formulas=None, fastest=None
):
    name = layer["name"]
    flops = analytic_flops(name, layer["dims"], b, s) * (3.0 if mode == "fwd+bwd" else 1.0)
    point = {
        "device": device.index or 0,
        "layer": name,
        "dtype": dtype_name,
        "attention": attn,
        "mode": mode,
        "batch": b,
        "seq": s,
        "flops": flops,
        "status": "ok",
        "started": time.time(),
    }
    one = call_estimate_s(flops, max(rate or 0.0, fastest or 0.0))
    if one is not None:
        if one > MAX_ONE_PASS_S:
            point.update(
                status="skipped", error="one call would take about %.0f s on this device" % one, ended=time.time()
            )
            return point
    failed = False
    try:
        x, ctx = point_inputs(torch, layer, b, s, device, mode == "fwd+bwd")
        dy = torch.randn(x.shape, device=device, dtype=x.dtype) if mode == "fwd+bwd" else None
        probe = []
        y = pass_fn(torch, layer, attn, mode, x, ctx, dy, probe)()
        clock.sync()
        finite = bool(torch.isfinite(y).all()) and (x.grad is None or bool(torch.isfinite(x.grad).all()))
        del y
        point.update(kernel_info(attn, probe))
        fn = pass_fn(torch, layer, attn, mode, x, ctx, dy)
        try:
            point.update(op_profile(torch, fn, formulas))
        except Exception as exc:
            point["profile_error"] = first_line(exc)
        extra = {}
        times, launches, warm = time_repeats(clock, fn, share, heat_for(flops, rate, clock.cuda), extra)
        med = settled_median(times)
        point.update(
            ms=med,
            tflops=flops / (med / 1000.0) / 1e12,
            burst_tflops=flops / (extra["burst_ms"] / 1000.0) / 1e12,
            best_tflops=flops / (min(times) / 1000.0) / 1e12,
            repeats_ms=[round(t, 6) for t in times],
            launches=launches,
            warmup=warm + 2,
            heat_ms=round(extra["heat_ms"], 3),
        )
        if "issue_ms" in extra:
            point["issue_ms"] = round(extra["issue_ms"], 6)
        if clock.cuda:
            point["tf32"] = tf32.get()
        if not finite:
            point.update(status="wrong", error="the output (or the input's gradient) holds NaN or Inf")
    except Exception as exc:  # out of memory at a large point: skipped; anything else: failed
        point_failure(point, exc)
        failed = True
    point["ended"] = time.time()
    if failed:
        release(torch, clock.cuda)
    return point


def over_budget(device, layer, dtype_name, attn, mode, b, s, budget):
    """A point left out because the suite's budget was spent before it could start."""
    flops = analytic_flops(layer["name"], layer["dims"], b, s) * (3.0 if mode == "fwd+bwd" else 1.0)
    now = time.time()
    return {
        "device": device.index or 0,
        "layer": layer["name"],
        "dtype": dtype_name,
        "attention": attn,
        "mode": mode,
        "batch": b,
        "seq": s,
        "flops": flops,
        "status": "skipped",
        "error": "the layers budget of %g s was spent (a larger --budget measures it)" % budget,
        "started": now,
        "ended": now,
    }


def layers_device(torch, device, info, cfg, matmul_points, out):
    """The layers suite on one device; ``out`` receives layer_points, reference_points, flop_checks."""
    clock = Clock(torch, device)
    tf32 = Tf32(torch)
    dtypes, layers, skipped = layers_plan(info, cfg, clock.cuda)
    info["layers_skipped"] = skipped
    info["layer_dims"] = dict((name, dims) for name, dims, _ in layers)
    if not dtypes or not layers:
        return
    attentions = cfg.get("attentions") or list(ATTENTIONS)
    modes = cfg.get("modes") or list(MODES)
    rates = matmul_rates(torch, device, clock, tf32, dtypes, matmul_points, out["reference_points"])
    info["matmul_rates"] = rates
    fastest = fastest_rates(list(matmul_points) + list(out["reference_points"]), 2048 if clock.cuda else 256)
    t = time.perf_counter()
    sdpa_setup(torch)
    info["sdpa"] = sdpa_state(torch)
    setup = {"sdpa_setup": round(time.perf_counter() - t, 3)}
    info["layers_setup_s"] = setup
    formulas = flop_formulas(torch) if cfg.get("flop_check", True) else None
    total = len(dtypes) * sum(len(shapes) for _, _, shapes in layers) * len(attentions) * len(modes)
    budget = float(cfg.get("budget") or 5.0)
    share = budget / max(1, total)
    # The budget bounds the suite's wall time, not only the repeats: a point's first call, profile
    # and calibration cost several calls, which on a CPU (a call of 0.1-0.3 s) overran a 2 s budget
    # 20-50x. No point starts once the budget and a set-up allowance per point are spent (GPU 0.3 s:
    # the H200's 80 points took 28 s for a 7 s budget; CPU 0.1 s; ``setup_s`` in the config).
    started = time.perf_counter()
    setup_s = float(cfg.get("setup_s", SETUP_S if clock.cuda else CPU_SETUP_S))
    deadline = started + budget + setup_s * total
    state = {"left": total, "measured": 0}
    for name, dims, shapes in layers:
        for i, dtype_name in enumerate(dtypes):
            layer, error = None, None
            t = time.perf_counter()
            try:
                layer = build_layer(torch, name, dims, torch_dtype(torch, dtype_name), device)
                clock.sync()
            except Exception as exc:
                error = {"status": "ok"}
                point_failure(error, exc)
            setup["build %s %s" % (name, dtype_name)] = round(time.perf_counter() - t, 3)
            if layer is None:
                release(torch, clock.cuda)
                for b, s in shapes:
                    for attn in attentions:
                        for mode in modes:
                            point = {
                                "device": device.index or 0,
                                "layer": name,
                                "dtype": dtype_name,
                                "attention": attn,
                                "mode": mode,
                                "batch": b,
                                "seq": s,
                                "flops": analytic_flops(name, dims, b, s) * (3.0 if mode == "fwd+bwd" else 1.0),
                                "status": error["status"],
                                "error": "building the layer: " + error["error"],
                                "started": time.time(),
                                "ended": time.time(),
                            }
                            out["layer_points"].append(point)
                            emit("point", suite="layers", point=point)
                continue
            check = i == 0 and cfg.get("flop_check", True) and "fwd" in modes and "fwd+bwd" in modes
            for j, (b, s) in enumerate(shapes):
                for attn in attentions:
                    done = {}
                    for mode in modes:
                        now = time.perf_counter()
                        if state["measured"] and now > deadline:
                            point = over_budget(device, layer, dtype_name, attn, mode, b, s, budget)
                        else:
                            mine = share if clock.cuda else min(share, max(0.0, deadline - now) / state["left"])
                            point = layer_point(
                                torch,
                                device,
                                clock,
                                tf32,
                                layer,
                                dtype_name,
                                attn,
                                mode,
                                b,
                                s,
                                mine,
                                rates.get(dtype_name),
                                formulas,
                                fastest.get(dtype_name),
                            )
                            state["measured"] += 1
                        state["left"] -= 1
                        done[mode] = point
                        out["layer_points"].append(point)
                        emit("point", suite="layers", point=point)
                    spent = any("budget" in (done[m].get("error") or "") for m in done)
                    if check and j == 0 and not spent:
                        rec = flop_record(layer, attn, b, s, done["fwd"], done["fwd+bwd"])
                        rec.update(device=device.index or 0, dtype=dtype_name)
                        out["flop_checks"].append(rec)
                        emit("flop_check", check=rec)
            layer = None
            release(torch, clock.cuda)

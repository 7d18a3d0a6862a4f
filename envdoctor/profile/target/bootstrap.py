"""envdoctor profile, target side: run the user's script unchanged under torch.profiler.

The script runs here through runpy, as ``python train.py ARGS`` would run it (its folder first on
sys.path, its argv, ``__name__ == "__main__"``). A step is an optimizer step (torch's global
optimizer step hook) or, for a script without an optimizer, one outermost module forward (the
global forward hooks). Steps go: ``warmup`` untimed, ``baseline`` timed without the profiler, one
profiler warm-up step, then ``steps`` profiled; the Chrome trace is written, an event "profile"
carries the figures at once (so a script that hangs later still leaves them), and the script goes
on (or, with ``stop_after``, the child answers and ends).
"""

import os
import runpy
import sys
import time
import traceback

if False:  # for readers and linters: these come from the prelude sent before this file
    from envdoctor.child._prelude import Failure, emit, first_line, stage

TAIL_FRAMES = 12


def _info(torch):
    cuda = bool(torch.cuda.is_available())
    info = {"torch": torch.__version__, "cuda": cuda, "torch_cuda": getattr(torch.version, "cuda", None)}
    if cuda:
        i = torch.cuda.current_device()
        cap = torch.cuda.get_device_capability(i)
        info.update(
            device=torch.cuda.get_device_name(i), capability="%d.%d" % cap, device_count=torch.cuda.device_count()
        )
    try:
        info["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
        info["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)
        info["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception:
        pass
    return info


class SyncWatch(object):
    """While the profiled steps run, the calls that make the host wait for the device (``.item()``,
    ``.tolist()``, ``.cpu()``, ``.numpy()``, ``bool(tensor)``, ``torch.cuda.synchronize()``) are
    counted at the user's own line (the first frame outside torch) with the seconds they blocked."""

    METHODS = ("item", "tolist", "cpu", "numpy", "__bool__")

    def __init__(self, torch):
        self.torch = torch
        self.sites = {}
        self.saved = []
        self.skip = (os.path.dirname(os.path.abspath(torch.__file__)), "<stdin>")

    def _user_frame(self, f):
        while f is not None and f.f_code.co_filename.startswith(self.skip):
            f = f.f_back
        return f

    def _wrap(self, op, original, always):
        watch = self

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                took = time.perf_counter() - t0
                caller = sys._getframe(1)
                # the user's own call, or torch's own on a CUDA tensor (a real wait, at the user's line)
                direct = not caller.f_code.co_filename.startswith(watch.skip)
                if direct or always or (args and getattr(args[0], "is_cuda", False)):
                    f = watch._user_frame(caller)
                    where = "%s:%d" % (f.f_code.co_filename, f.f_lineno) if f is not None else "?"
                    key = (op, where, f.f_code.co_name if f is not None else "?")
                    entry = watch.sites.setdefault(key, [0, 0.0])
                    entry[0] += 1
                    entry[1] += took

        return wrapper

    def install(self):
        cls = self.torch.Tensor
        for name in self.METHODS:
            original = getattr(cls, name, None)
            if original is not None:
                self.saved.append((cls, name, original))
                setattr(cls, name, self._wrap("." + name.strip("_") + "()", original, False))
        if self.torch.cuda.is_available():
            mod = self.torch.cuda
            self.saved.append((mod, "synchronize", mod.synchronize))
            mod.synchronize = self._wrap("torch.cuda.synchronize()", mod.synchronize, True)

    def remove(self):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved = []

    def report(self):
        rows = [
            {"op": op, "where": where, "function": func, "count": n, "seconds": secs}
            for (op, where, func), (n, secs) in self.sites.items()
        ]
        rows.sort(key=lambda r: -r["seconds"])
        return rows[:20]


class FlopCount(object):
    """One step under torch's FlopCounterMode (the FLOPs of its matmuls, convolutions and
    attention, forward and backward) and a dispatch mode that tallies the dtypes the matmuls ran
    in, so the profiled steps need not record shapes (which slows every operator)."""

    MATMULS = ("mm", "addmm", "bmm", "baddbmm", "convolution", "_scaled_mm", "addmv", "mv")

    def __init__(self, torch):
        self.torch = torch
        self.flops = None
        self.dtypes = {}
        self.modes = []
        self.error = None

    def start(self):
        try:
            from torch.utils._python_dispatch import TorchDispatchMode
            from torch.utils.flop_counter import FlopCounterMode
        except ImportError as exc:
            self.error = first_line(exc)
            return
        tally = self.dtypes
        names = self.MATMULS

        class Dtypes(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if str(func.overloadpacket).split(".")[-1] in names:
                    for a in args:
                        if hasattr(a, "dtype"):
                            key = str(a.dtype).replace("torch.", "")
                            tally[key] = tally.get(key, 0) + 1
                            break
                return func(*args, **(kwargs or {}))

        try:
            flop = FlopCounterMode(display=False)
            flop.__enter__()
            self.modes.append(flop)
            dt = Dtypes()
            dt.__enter__()
            self.modes.append(dt)
        except Exception as exc:
            self.error = first_line(exc)
            self.stop()

    def stop(self):
        modes, self.modes = self.modes, []
        for mode in reversed(modes):
            try:
                mode.__exit__(None, None, None)
            except Exception as exc:
                self.error = first_line(exc)
        if modes and self.error is None:
            try:
                self.flops = int(modes[0].get_total_flops())
            except Exception as exc:
                self.error = first_line(exc)


class Steps(object):
    """Counts the steps of one mode and moves the profiler through its phases."""

    def __init__(self, torch, config):
        self.torch = torch
        self.warmup = int(config.get("warmup", 3))
        self.baseline = int(config.get("baseline", 3))
        self.steps = int(config.get("steps", 5))
        self.mode = config.get("steps_by") if config.get("steps_by") in ("optimizer", "forward") else None
        self.trace_path = config["trace"]
        self.stop_after = bool(config.get("stop_after"))
        self.n = 0  # boundaries seen in the chosen mode
        self.forwards = 0
        self.optimizer_steps = 0
        self.depth = 0
        self.last = None
        self.warmup_s = []
        self.baseline_s = []
        self.profiled_s = []
        self.prof = None
        self.done = False
        self.figures = None
        self.optimizer = None
        self.handles = []
        self.cuda = bool(torch.cuda.is_available())
        self.syncs = SyncWatch(torch)
        self.counter = FlopCount(torch)
        self.detail = config.get("detail") or "light"

    # -- hooks ----------------------------------------------------------------------------------
    def install(self):
        import importlib

        optim = importlib.import_module("torch.optim.optimizer")
        self.handles.append(optim.register_optimizer_step_post_hook(self._on_optimizer))
        if self.mode != "optimizer":
            mod = importlib.import_module("torch.nn.modules.module")
            self.handles.append(mod.register_module_forward_pre_hook(self._pre))
            self.handles.append(mod.register_module_forward_hook(self._post))

    def _drop_forward_hooks(self):
        for h in self.handles[1:]:
            h.remove()
        del self.handles[1:]

    def _on_optimizer(self, optimizer, args, kwargs):
        self.optimizer_steps += 1
        if self.optimizer is None:
            d = getattr(optimizer, "defaults", {}) or {}
            self.optimizer = {"class": type(optimizer).__name__, "fused": d.get("fused"), "foreach": d.get("foreach")}
        if self.mode is None:
            self.mode = "optimizer"
            self._drop_forward_hooks()
        if self.mode == "optimizer":
            self._boundary()

    def _pre(self, module, args):
        self.depth += 1

    def _post(self, module, args, output):
        self.depth -= 1
        if self.depth > 0:
            return
        self.depth = 0
        self.forwards += 1
        if self.mode is None and self.optimizer_steps == 0 and self.forwards >= 2:
            self.mode = "forward"
        if self.mode == "forward":
            self._boundary()

    # -- phases ---------------------------------------------------------------------------------
    def _boundary(self):
        """The end of step ``n``: steps 1..W warm-up, W+1..P0 baseline (P0 = W + B), P0+1 counts
        the FLOPs (and the matmuls' dtypes) under FlopCounterMode, P0+2 is the profiler's own
        warm-up, P0+3..P0+2+S are profiled."""
        if self.done:
            return
        now = time.perf_counter()
        took = None if self.last is None else now - self.last
        self.n += 1
        n, p0, s = self.n, self.warmup + self.baseline, self.steps
        if took is not None:
            if n <= self.warmup:
                self.warmup_s.append(took)
            elif n <= p0:
                self.baseline_s.append(took)
            elif p0 + 2 < n <= p0 + 2 + s:
                self.profiled_s.append(took)
        if n == p0:
            self.counter.start()
        elif n == p0 + 1:
            self.counter.stop()
            self._start()
        elif n == p0 + 2:
            self.prof.step()
            if self.cuda:
                self.torch.cuda.reset_peak_memory_stats()
            self.syncs.install()
        elif p0 + 2 < n < p0 + 2 + s:
            self.prof.step()
        elif n == p0 + 2 + s:
            self._finish()
        self.last = time.perf_counter() if n in (p0, p0 + 1) else now

    def _start(self):
        torch = self.torch
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
            torch.cuda.synchronize()
        full = self.detail == "full"
        self.prof = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=self.steps, repeat=1),
            record_shapes=full,
            with_stack=False,
            with_flops=full,
        )
        self.prof.start()

    def _finish(self):
        torch = self.torch
        self.syncs.remove()
        if self.cuda:
            torch.cuda.synchronize()
        prof, self.prof = self.prof, None
        prof.stop()
        prof.export_chrome_trace(self.trace_path)
        self.done = True
        figures = {
            "mode": self.mode,
            "warmup_s": self.warmup_s,
            "baseline_s": self.baseline_s,
            "profiled_s": self.profiled_s,
            "flops_per_step": self.counter.flops,
            "flop_error": self.counter.error,
            "matmul_dtypes": self.counter.dtypes,
            "optimizer": self.optimizer,
            "trace": self.trace_path,
            "forwards": self.forwards,
            "optimizer_steps": self.optimizer_steps,
            "syncs": self.syncs.report(),
        }
        if self.cuda:
            figures["peak_allocated"] = int(torch.cuda.max_memory_allocated())
            figures["peak_reserved"] = int(torch.cuda.max_memory_reserved())
        self.figures = figures
        self._drop_forward_hooks()
        emit("profile", profile=figures)
        if self.stop_after:
            emit("result", result={"profile": figures, "script": {"finished": False, "stopped": True}})
            sys.stderr.flush()
            os._exit(0)


def _script_failure(exc):
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(frames[-TAIL_FRAMES:])[-3000:]


def main(config):
    stage("import torch")
    try:
        import torch
        import torch.profiler  # noqa: F401
    except ImportError as exc:
        raise Failure("no_torch", "torch cannot be imported: %s" % first_line(exc)) from None
    emit("target", target=_info(torch))
    script = os.path.abspath(config["script"])
    steps = Steps(torch, config)
    steps.install()
    sys.argv = [script] + [str(a) for a in config.get("args", [])]
    sys.path.insert(0, os.path.dirname(script))
    stage("run the script")
    outcome = {"finished": True, "exit": 0}
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        outcome["exit"] = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, (int, type(None))):
            outcome["message"] = str(code)[:500]
    except KeyboardInterrupt:
        outcome = {"finished": False, "exit": None, "message": "stopped by a signal"}
    except BaseException as exc:  # the user's script failed: its traceback is the answer
        outcome = {"finished": False, "exit": 1, "error": first_line(exc), "traceback": _script_failure(exc)}
    steps.counter.stop()
    if steps.prof is not None:  # the script ended while the profiler was still on
        steps.syncs.remove()
        try:
            steps.prof.stop()
        except Exception:
            pass
    return {
        "profile": steps.figures,
        "script": outcome,
        "steps_seen": steps.n,
        "mode": steps.mode,
        "forwards": steps.forwards,
        "optimizer_steps": steps.optimizer_steps,
    }

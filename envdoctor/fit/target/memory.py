"""How ``fit/target/measure.py`` reads memory: a part of it (envdoctor.child), standard library and torch only.

Two backends with one interface, so the steps are written once:

- ``CudaMemory``: the caching allocator's own counters (``memory_allocated``, ``max_memory_reserved``,
  ``reset_peak_memory_stats``) and ``torch.cuda.mem_get_info`` (cudaMemGetInfo) for what the process
  holds outside the allocator (the CUDA context, cuBLAS handles, loaded kernels);
- ``CpuMemory``: torch's CPU allocator keeps no statistics, so a ``TorchDispatchMode`` sees every
  tensor an operator returns (forward, backward and the optimizer's, which all dispatch through
  it), keeps a weak reference to its storage and sums the storages still alive: the peak of live
  tensor bytes, the CPU's counterpart of ``max_memory_allocated``. There is no reserve above it and
  no context; temporaries that live only inside one operator are not seen.

Both count a storage once however many tensors view it.
"""

import contextlib


def storage_key(t):
    """(data pointer, bytes) of a tensor's storage, or None for a tensor without one (meta, empty)."""
    try:
        st = t.untyped_storage()
        n = int(st.nbytes())
        ptr = int(st.data_ptr())
    except Exception:
        return None
    if n <= 0 or ptr == 0:
        return None
    return ptr, n


def distinct_bytes(tensors):
    """Bytes of the distinct storages behind ``tensors`` (views of one storage count once)."""
    seen = {}
    for t in tensors:
        key = storage_key(t)
        if key is not None:
            seen[key[0]] = key[1]
    return sum(seen.values())


class CudaMemory(object):
    kind = "cuda"
    tracker = "cuda caching allocator (max_memory_allocated / max_memory_reserved)"

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device

    def allocated(self):
        return int(self.torch.cuda.memory_allocated(self.device))

    def reserved(self):
        return int(self.torch.cuda.memory_reserved(self.device))

    def reset_peak(self):
        self.torch.cuda.reset_peak_memory_stats(self.device)

    def peaks(self):
        """(max allocated, max reserved) since the last reset."""
        return (
            int(self.torch.cuda.max_memory_allocated(self.device)),
            int(self.torch.cuda.max_memory_reserved(self.device)),
        )

    def mem_info(self):
        """(free, total) bytes of the device as the driver sees them (cudaMemGetInfo)."""
        free, total = self.torch.cuda.mem_get_info(self.device)
        return int(free), int(total)

    def sync(self):
        self.torch.cuda.synchronize(self.device)

    def release(self):
        self.torch.cuda.empty_cache()

    def tracking(self):
        return contextlib.nullcontext()

    def register(self, tensors):
        pass


def make_cpu_memory(torch):
    """A CpuMemory: live tensor bytes seen through a TorchDispatchMode (see the module docstring)."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class LiveBytes(TorchDispatchMode):
        def __init__(self, owner):
            TorchDispatchMode.__init__(self)
            self.owner = owner

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    self.owner.add(t)
            return out

    class CpuMemory(object):
        kind = "cpu"
        tracker = (
            "live tensor bytes seen by a TorchDispatchMode (torch's CPU allocator keeps no "
            "statistics; no reserve, no context)"
        )

        def __init__(self):
            self.live = {}  # storage data pointer -> (StorageWeakRef, bytes)
            self.current = 0
            self.peak = 0
            self.active = False

        def add(self, t):
            key = storage_key(t)
            if key is None:
                return
            ptr, n = key
            held = self.live.get(ptr)
            if held is not None and not held[0].expired():
                return
            self._sweep()
            try:
                ref = StorageWeakRef(t.untyped_storage())
            except Exception:
                return
            self.live[ptr] = (ref, n)
            self.current += n
            if self.current > self.peak:
                self.peak = self.current

        def _sweep(self):
            dead = [k for k, (ref, _) in self.live.items() if ref.expired()]
            for k in dead:
                self.current -= self.live.pop(k)[1]

        def register(self, tensors):
            for t in tensors:
                self.add(t)

        def allocated(self):
            self._sweep()
            return self.current

        def reserved(self):
            return None

        def reset_peak(self):
            self._sweep()
            self.peak = self.current

        def peaks(self):
            return self.peak, None

        def mem_info(self):
            return None, None

        def sync(self):
            pass

        def release(self):
            pass

        def tracking(self):
            return LiveBytes(self)

    return CpuMemory()

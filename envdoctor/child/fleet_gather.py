"""``envdoctor fleet --gather``: carry this rank's report to rank 0 over torch.distributed.

Run once per node by the host side (``envdoctor/fleet/gather.py``) in the target interpreter.
The configuration names this rank, rank 0's store and a file holding this rank's payload (its
report as envdoctor wrote it)::

    {"rank": 2, "world_size": 4, "master_addr": "gpu07", "master_port": 21234, "agent_store": false,
     "run_id": "slurm-81234.0", "join_timeout": 60, "payload": "/tmp/envdoctor-fleet-2/payload.json",
     "out_dir": "/tmp/envdoctor-fleet-0/ranks"}

1. every rank connects to the rendezvous store (a c10d TCPStore: rank 0 serves it, or torchrun's
   agent already does) and checks in under ``joined/<rank>``;
2. rank 0 waits up to ``join_timeout`` seconds for every rank, then sets the ``plan``: ``group``
   when all joined, else ``store`` with the ranks that did;
3. ``group``: all ranks form a gloo process group (every pair connects, as a job's NCCL will have
   to) with ``join_timeout`` as its timeout, and ``gather`` brings every payload to rank 0;
   ``store``, or when the group fails: each joined rank puts its payload in the store;
4. rank 0 writes each payload to ``out_dir/rank-<N>.json`` and answers with who joined, who is
   missing and how the payloads travelled; the others answer how they sent theirs.

Standard library and torch only; nothing of envdoctor is imported here.
"""

import os
import socket
import time

if False:  # for readers and linters: these come from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure, emit, first_line, stage

_KEY_JOINED = "joined/%d"
_KEY_PAYLOAD = "payload/%d"


def _store(dist, cfg, timeout):
    from datetime import timedelta

    rank, world = int(cfg["rank"]), int(cfg["world_size"])
    wait = timedelta(seconds=timeout)
    if cfg.get("agent_store"):
        # torchrun's agent serves the store at MASTER_ADDR:MASTER_PORT already: connect to it
        store = dist.TCPStore(cfg["master_addr"], int(cfg["master_port"]), None, False, wait)
    else:
        store = dist.TCPStore(cfg["master_addr"], int(cfg["master_port"]), world, rank == 0, wait,
                              wait_for_workers=False)
    return dist.PrefixStore("envdoctor-fleet/%s/" % cfg.get("run_id", "run"), store)


def _has(store, key):
    try:
        return bool(store.check([key]))
    except Exception:
        return False


def _wait_for(store, keys, deadline, what, world):
    """The keys of ``keys`` present by ``deadline``, announcing the count now and then."""
    present, last = set(), 0.0
    while True:
        for key in keys:
            if key not in present and _has(store, key):
                present.add(key)
        now = time.time()
        if len(present) == len(keys) or now >= deadline:
            return present
        if now - last >= 2.0:
            emit("waiting", what=what, have=len(present), want=len(keys), world=world,
                 left_s=round(deadline - now, 1))
            last = now
        time.sleep(0.05)


def _bytes(tensor, size):
    """The first ``size`` bytes of a CPU uint8 tensor, without numpy (``tensor.numpy()`` needs it)."""
    import ctypes

    return ctypes.string_at(tensor.data_ptr(), size)


def _gather_group(dist, store, cfg, payload, timeout):
    """Every rank's payload at rank 0 through a gloo process group: the lengths first, then the
    bytes padded to the longest. (``gather_object`` would do the same, but it turns the tensors
    back into bytes with ``tensor.numpy()``, and torch runs without numpy.)"""
    from datetime import timedelta

    import torch

    rank, world = int(cfg["rank"]), int(cfg["world_size"])
    stage("gloo process group", world_size=world)
    dist.init_process_group("gloo", store=dist.PrefixStore("pg/", store), rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout))
    try:
        stage("gather the payloads")
        data = payload.encode("utf-8")
        size = torch.tensor([len(data)], dtype=torch.int64)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)] if rank == 0 else None
        dist.gather(size, sizes, dst=0)
        longest = torch.zeros(1, dtype=torch.int64)
        if rank == 0:
            longest[0] = max(int(t[0]) for t in sizes)
        dist.broadcast(longest, src=0)
        mine = torch.zeros(int(longest[0]), dtype=torch.uint8)
        if data:
            mine[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        buffers = [torch.zeros(int(longest[0]), dtype=torch.uint8) for _ in range(world)] if rank == 0 else None
        dist.gather(mine, buffers, dst=0)
        if rank != 0:
            return None
        return [_bytes(b, int(n[0])).decode("utf-8") for b, n in zip(buffers, sizes)]
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass


def main(config):
    rank, world = int(config["rank"]), int(config["world_size"])
    timeout = float(config.get("join_timeout", 60))
    started = time.time()
    stage("import torch")
    try:
        import torch.distributed as dist
    except ImportError as exc:
        kind = "no_torch" if getattr(exc, "name", "") in ("torch", "torch.distributed") else "import_failed"
        raise Failure(kind, "fleet --gather needs torch in the target Python (torch.distributed carries the "
                      "reports): " + first_line(exc)) from None
    if not dist.is_available() or not dist.is_gloo_available():
        raise Failure("no_gloo", "this torch has no gloo backend for torch.distributed")
    with open(config["payload"]) as fh:
        payload = fh.read()
    imported = time.time()
    host = socket.gethostname()

    stage("connect to the store", addr=config["master_addr"], port=config["master_port"])
    # a little longer than rank 0 waits, so that a rank that joined on time hears the plan
    store = _store(dist, config, timeout + 30)
    store.set(_KEY_JOINED % rank, host)
    connected = time.time()

    if rank == 0:
        stage("wait for the ranks", world_size=world)
        keys = [_KEY_JOINED % r for r in range(world)]
        present = _wait_for(store, keys, connected + timeout, "joined", world)
        joined = sorted(r for r in range(world) if _KEY_JOINED % r in present)
        plan = "group" if len(joined) == world else "store"
        store.set("plan", plan + ":" + ",".join(str(r) for r in joined))
    else:
        stage("wait for rank 0's plan")
        text = store.get("plan").decode()
        plan, _, ranks = text.partition(":")
        joined = [int(r) for r in ranks.split(",") if r.strip().isdigit()]
    planned = time.time()

    if rank not in joined:
        raise Failure("late", "this rank joined after rank 0 stopped waiting (--join-timeout %gs): rank 0 names "
                      "it as missing" % timeout)
    transport, group_error, gathered = "store", None, None
    if plan == "group":
        try:
            gathered = _gather_group(dist, store, config, payload, timeout)
            transport = "gloo"
        except Exception as exc:
            group_error = first_line(exc)
    if transport == "store" and rank != 0:
        store.set(_KEY_PAYLOAD % rank, payload)
    sent = time.time()

    if rank != 0:
        # rank 0 says whether the group's gather reached it; if not, the store carries the payload
        stage("wait for rank 0's answer")
        try:
            answer = store.get("result").decode()
            if answer == "store" and transport == "gloo":
                store.set(_KEY_PAYLOAD % rank, payload)
                transport = "store"
            store.add("acks", 1)
        except Exception as exc:
            if transport != "gloo":
                raise Failure("no_answer", "rank 0 did not confirm it has this rank's report: "
                              + first_line(exc)) from None
        return {"rank": rank, "host": host, "transport": transport, "group_error": group_error,
                "seconds": {"import": round(imported - started, 3), "join": round(planned - imported, 3),
                            "send": round(sent - planned, 3), "total": round(time.time() - started, 3)}}

    # rank 0: every payload into out_dir
    out_dir = config["out_dir"]
    payloads = {0: payload}
    if transport == "gloo":
        for r, text in enumerate(gathered or []):
            if isinstance(text, str):
                payloads[r] = text
        store.set("result", "gloo")
    else:
        store.set("result", "store")
        stage("collect payloads from the store")
        keys = [_KEY_PAYLOAD % r for r in joined if r != 0]
        present = _wait_for(store, keys, time.time() + timeout, "sent", world)
        for r in joined:
            if r != 0 and _KEY_PAYLOAD % r in present:
                payloads[r] = store.get(_KEY_PAYLOAD % r).decode()
    files = {}
    for r, text in sorted(payloads.items()):
        path = os.path.join(out_dir, "rank-%05d.json" % r)
        with open(path, "w") as fh:
            fh.write(text)
        files[str(r)] = path
    late = [r for r in range(world) if r not in joined and _has(store, _KEY_JOINED % r)]
    # let the others read the result before this process (the store's server, unless torchrun's
    # agent serves it) goes away
    others = len([r for r in joined if r != 0])
    deadline = time.time() + 5.0
    while others and time.time() < deadline:
        try:
            if int(store.add("acks", 0)) >= others:
                break
        except Exception:
            break
        time.sleep(0.05)
    done = time.time()
    return {"rank": 0, "host": host, "transport": transport, "group_error": group_error, "joined": joined,
            "missing": [r for r in range(world) if r not in joined], "late": late, "files": files,
            "seconds": {"import": round(imported - started, 3), "join": round(planned - connected, 3),
                        "gather": round(sent - planned, 3), "total": round(done - started, 3)}}

"""``envdoctor fleet --gather``: carry this rank's report to rank 0 over torch.distributed.

Run once per node by the host side (``envdoctor/fleet/host.py``) in the target interpreter.
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

With ``"comms"`` in the configuration (``fleet --comms``), once every rank's report is with rank 0
(who emits it at once as a ``gathered`` event, so that a comms phase that goes wrong loses
nothing), every rank takes part in the comms phase (:func:`_comms`): an all-reduce over all ranks
and the pairwise pass of the rounds the host gives, timed by ``links/target/common.py`` as ``envdoctor
comms`` times them. Each rank says in the store which step it entered and which it finished;
every step has ``join_timeout`` seconds (rank 0 judges; the others give up later), after which
rank 0 names the ranks that did not finish the first unfinished step. The figures travel through
the store too, so a pair that hangs does not cost the figures of the others.

Standard library and torch only; nothing of envdoctor is imported here.
"""
# envdoctor child uses: _torch_common.py links/target/common.py

import json
import os
import socket
import sys
import threading
import time

if False:  # for readers and linters: these come from _prelude.py and links/target/common.py, sent first
    from envdoctor.child._prelude import Failure, emit, first_line, stage
    from envdoctor.links.target.common import Rank, one_point

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
        store = dist.TCPStore(
            cfg["master_addr"], int(cfg["master_port"]), world, rank == 0, wait, wait_for_workers=False
        )
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
            emit("waiting", what=what, have=len(present), want=len(keys), world=world, left_s=round(deadline - now, 1))
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
    dist.init_process_group(
        "gloo", store=dist.PrefixStore("pg/", store), rank=rank, world_size=world, timeout=timedelta(seconds=timeout)
    )
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
        raise Failure(
            kind,
            "fleet --gather needs torch in the target Python (torch.distributed carries the "
            "reports): " + first_line(exc),
        ) from None
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
        raise Failure(
            "late",
            "this rank joined after rank 0 stopped waiting (--join-timeout %gs): rank 0 names it as missing" % timeout,
        )
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
                raise Failure(
                    "no_answer", "rank 0 did not confirm it has this rank's report: " + first_line(exc)
                ) from None
        out = {
            "rank": rank,
            "host": host,
            "transport": transport,
            "group_error": group_error,
            "seconds": {
                "import": round(imported - started, 3),
                "join": round(planned - imported, 3),
                "send": round(sent - planned, 3),
                "total": round(time.time() - started, 3),
            },
        }
        if config.get("comms") and plan == "group":
            out["comms"] = _comms(dist, store, config, timeout)
        return out

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
    result = {
        "rank": 0,
        "host": host,
        "transport": transport,
        "group_error": group_error,
        "joined": joined,
        "missing": [r for r in range(world) if r not in joined],
        "late": late,
        "files": files,
        "seconds": {
            "import": round(imported - started, 3),
            "join": round(planned - connected, 3),
            "gather": round(sent - planned, 3),
            "total": round(done - started, 3),
        },
    }
    if config.get("comms"):
        if plan != "group":
            result["comms"] = {
                "status": "skipped",
                "why": "ranks %s did not join: the comms phase needs every "
                "rank" % ", ".join(str(r) for r in result["missing"]),
            }
        else:
            emit("gathered", result=result)  # the reports are safe whatever the comms phase does
            result["comms"] = _comms(dist, store, config, timeout)
            result["seconds"]["total"] = round(time.time() - started, 3)
    return result


# --- the comms phase (fleet --comms) ------------------------------------------------------------

_COMMS = "comms/"


class _Slowed(Rank):
    """A pair's Rank whose every transfer first sleeps ``delay`` seconds (ENVDOCTOR_FLEET_COMMS_DELAY,
    for envdoctor's tests and demos only): a slow node or link on demand."""

    def __init__(self, *args, **kwargs):
        self.delay = float(kwargs.pop("delay", 0.0))
        Rank.__init__(self, *args, **kwargs)

    def operation(self, collective, inp, out):
        op = Rank.operation(self, collective, inp, out)
        if self.delay <= 0:
            return op
        delay = self.delay

        def slowed():
            time.sleep(delay)
            op()

        return slowed


def _delay_for(cfg, rank, peer):
    """The delay this rank sleeps before each transfer with ``peer``: only the rank named sleeps (its
    partner waits for it in the collective, as for a slow node), with every peer or the one named."""
    d = cfg.get("delay") or {}
    if d.get("rank") != rank or d.get("peer") not in (None, peer):
        return 0.0
    return float(d.get("seconds") or 0.0)


def _phases(rounds):
    return ["ready", "group", "all_reduce"] + ["round %d" % (i + 1) for i in range(len(rounds))] + ["end"]


def _measure(dist, store, cfg, plan, rank, world, progress):
    """This rank's part: the group, the all-reduce over everyone, the rounds of pairs. Runs in a thread
    (the caller watches the clock); each step is announced and marked done in the store."""
    from datetime import timedelta

    import torch

    comms = cfg["comms"]
    rounds = [[tuple(p) for p in r] for r in comms["rounds"]]
    backend, nbytes = plan["backend"], int(plan["bytes"])
    point_cfg = {
        "warmup": comms.get("warmup", 5),
        "iters": comms.get("iters", 20),
        "point_budget_s": comms.get("point_budget_s", 0.5),
    }

    def enter(phase):
        progress["phase"], progress["since"] = phase, time.time()
        store.set(_COMMS + "stage/%d" % rank, phase)
        stage("comms: " + phase)

    def done(phase):
        store.set(_COMMS + "done/%s/%d" % (phase, rank), "1")

    enter("group")
    cuda = backend == "nccl"
    device = torch.device("cpu")
    if cuda:
        index = int(os.environ.get("LOCAL_RANK", "0") or 0) % max(1, torch.cuda.device_count())
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
    wait = timedelta(seconds=4 * float(comms["phase_timeout"]) + 60)  # rank 0's clock ends a hang first
    dist.init_process_group(
        backend, store=dist.PrefixStore("comms-pg/", store), rank=rank, world_size=world, timeout=wait
    )
    groups = {}
    for pairs in rounds:  # every rank creates every subgroup, in the same order
        for a, b in pairs:
            groups[(a, b)] = dist.new_group([a, b])
    world_rank = Rank(torch, dist, device, cuda, rank, world)
    world_rank.agree([0.0])
    done("group")

    enter("all_reduce")
    progress["all_reduce"] = one_point(point_cfg, world_rank, "all_reduce", nbytes, 0)
    done("all_reduce")

    for i, pairs in enumerate(rounds):
        phase = "round %d" % (i + 1)
        enter(phase)
        world_rank.agree([0.0])  # the pairs of a round start together
        for a, b in pairs:
            if rank not in (a, b):
                continue
            peer = b if rank == a else a
            r = _Slowed(
                torch,
                dist,
                device,
                cuda,
                0 if rank == a else 1,
                2,
                group=groups[(a, b)],
                delay=_delay_for(comms, rank, peer),
            )
            point = one_point(point_cfg, r, "all_reduce", nbytes, 0)
            if rank == a:
                point.update({"round": i + 1, "a": a, "b": b})
                store.set(_COMMS + "pair/%d-%d" % (a, b), json.dumps(point))
        done(phase)
    enter("end")
    world_rank.agree([0.0])
    done("end")
    progress["finished"] = True
    try:
        dist.destroy_process_group()
    except Exception:
        pass


def _where(thread):
    """Where ``thread`` is now: its innermost Python frame, and whether a torch.distributed call is on
    its stack (a rank waiting in a collective for a peer, unlike one stuck elsewhere). Under NCCL a
    collective returns at once and the wait is in the CUDA synchronize, so both look alike there."""
    frame = sys._current_frames().get(thread.ident)
    inner, waiting = None, False
    while frame is not None:
        code = frame.f_code
        if inner is None:
            inner = "%s (%s:%d)" % (code.co_name, os.path.basename(code.co_filename), frame.f_lineno)
        if os.sep.join(("torch", "distributed")) in code.co_filename:
            waiting = True
        frame = frame.f_back
    return {"where": inner, "in_collective": waiting}


def _unfinished(store, world, phases):
    """The first step some rank did not finish, and those ranks with the step they last entered,
    what they raised and where their measuring thread was."""
    for phase in phases:
        missing = [r for r in range(world) if not _has(store, _COMMS + "done/%s/%d" % (phase, r))]
        if missing:
            out = []
            for r in missing:
                entry = {"rank": r, "stage": None, "error": None, "where": None, "in_collective": None}
                for key, field in (("stage/%d", "stage"), ("error/%d", "error")):
                    if _has(store, _COMMS + key % r):
                        entry[field] = store.get(_COMMS + key % r).decode("utf-8", "replace")[:500]
                if _has(store, _COMMS + "where/%d" % r):
                    try:
                        entry.update(json.loads(store.get(_COMMS + "where/%d" % r).decode()))
                    except ValueError:
                        pass
                out.append(entry)
            return phase, out
    return None, []


def _comms(dist, store, cfg, timeout):
    """The comms phase for this rank; rank 0's answer holds everyone's figures and who did not finish."""
    rank, world = int(cfg["rank"]), int(cfg["world_size"])
    comms = cfg["comms"]
    rounds = comms["rounds"]
    phases = _phases(rounds)
    started = time.time()
    stage("comms: ready")
    try:
        import torch

        cuda = bool(torch.cuda.is_available()) and bool(dist.is_nccl_available())
        name = (
            torch.cuda.get_device_name(int(os.environ.get("LOCAL_RANK", "0") or 0) % max(1, torch.cuda.device_count()))
            if cuda
            else "CPU"
        )
    except Exception as exc:
        cuda, name = False, "CPU (CUDA failed: %s)" % first_line(exc)
    store.set(_COMMS + "stage/%d" % rank, "ready")
    store.set(_COMMS + "ready/%d" % rank, json.dumps({"cuda": cuda, "device": name}))
    store.set(_COMMS + "done/ready/%d" % rank, "1")
    out = {"status": "ok", "phase_timeout": timeout, "rounds": rounds, "error": None}
    if rank == 0:
        keys = [_COMMS + "ready/%d" % r for r in range(world)]
        present = _wait_for(store, keys, time.time() + timeout, "ready for the comms phase", world)
        if len(present) < world:
            plan = {"skip": "did not reach the comms phase within %gs" % timeout}
        else:
            ready = [json.loads(store.get(k).decode()) for k in keys]
            out["devices"] = {str(r): d.get("device") for r, d in enumerate(ready)}
            no_gpu = [r for r, d in enumerate(ready) if not d.get("cuda")]
            backend = "gloo" if no_gpu else "nccl"
            if not no_gpu:
                why = "every rank has a CUDA GPU and NCCL"
            elif len(no_gpu) == world:
                why = "no rank has a CUDA GPU with NCCL"
            else:
                why = "rank%s %s ha%s no CUDA GPU with NCCL" % (
                    "s" if len(no_gpu) > 1 else "",
                    ", ".join(map(str, no_gpu[:8])),
                    "ve" if len(no_gpu) > 1 else "s",
                )
            plan = {"backend": backend, "why": why, "bytes": int(comms["bytes"][backend])}
        store.set(_COMMS + "plan", json.dumps(plan))
    else:
        plan = json.loads(store.get(_COMMS + "plan").decode())
    if "skip" in plan:
        out.update(status="stalled", why=plan["skip"])
        if rank == 0:
            out["stalled"], out["unfinished"] = _unfinished(store, world, phases)
        return out
    out.update(backend=plan["backend"], why=plan["why"], bytes=plan["bytes"])

    progress = {"phase": "group", "since": time.time()}
    failure = {}

    def work():
        try:
            _measure(dist, store, cfg, plan, rank, world, progress)
        except Exception as exc:
            failure["error"] = "rank %d during %s: %s" % (rank, progress.get("phase"), first_line(exc))
            try:
                store.set(_COMMS + "error/%d" % rank, failure["error"])
            except Exception:
                pass

    thread = threading.Thread(target=work, name="envdoctor-comms", daemon=True)
    thread.start()
    # rank 0 judges each step by --join-timeout; the others wait longer (a step may start with a
    # barrier behind the previous one), so that rank 0 is the one that names who did not finish
    # (or until rank 0 says it is over: then each says where its measuring thread was)
    limit = timeout if rank == 0 else 2 * timeout + 30
    looked = 0.0
    while thread.is_alive():
        thread.join(0.1)
        if not thread.is_alive():
            break
        if time.time() - progress["since"] > limit:
            out["status"] = "stalled"
            break
        if rank != 0 and time.time() - looked > 0.5:
            looked = time.time()
            try:
                if _has(store, _COMMS + "over") or not store.check([_COMMS + "plan"]):
                    out["status"] = "ok" if progress.get("finished") else "stopped"
                    break
            except Exception:  # rank 0's store is gone
                out["status"] = "ok" if progress.get("finished") else "stopped"
                break
    if thread.is_alive() and not progress.get("finished"):
        try:
            store.set(_COMMS + "where/%d" % rank, json.dumps(_where(thread)))
        except Exception:
            pass
    if "error" in failure:
        out.update(status="failed", error=failure["error"])
    out["all_reduce"] = progress.get("all_reduce") if rank == 0 else None
    out["seconds"] = round(time.time() - started, 3)
    if rank != 0:
        out["phase"] = progress.get("phase")
        return out
    store.set(_COMMS + "over", out["status"])
    if out["status"] != "ok":
        stalled, unfinished = _unfinished(store, world, phases)
        # the others say where they were within a second or two of hearing it is over
        keys = [_COMMS + "where/%d" % u["rank"] for u in unfinished]
        _wait_for(store, keys, time.time() + 3.0, "said where they were", world)
        out["stalled"], out["unfinished"] = _unfinished(store, world, phases)
    pairs = []
    for i, round_pairs in enumerate(rounds):
        for a, b in round_pairs:
            key = _COMMS + "pair/%d-%d" % (a, b)
            if _has(store, key):
                pairs.append(json.loads(store.get(key).decode()))
            else:
                pairs.append({"round": i + 1, "a": a, "b": b, "status": "unfinished"})
    out["pairs"] = pairs
    return out

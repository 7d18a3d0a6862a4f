"""The libraries above torch (flash-attn, xformers, vLLM, ...), read inside the target interpreter.

A part of ``child/torch_probe.py`` (named on its ``# envdoctor child uses:`` line), run after
torch's own facts, so the machine's interpreter starts once. For each library of the catalog the
host sends (``{"name": "flash-attn", "dists": ["flash-attn"], "modules": ["flash_attn"]}``):
the dist-info's version, installer, ``direct_url.json``, ``Requires-Dist`` lines and wheel tags;
then the imports, all bounded by one deadline: ONE grandchild (``sys.executable -c ...``) imports
torch once and then each library in turn, writing a line before and after each; when it crashes,
exits or stays on one library longer than :func:`stall_after`, the library it was on is named by
its last line and the libraries after it are imported each in a grandchild of its own (in
parallel). So a segfault or a hang in one library's import is that library's fact and never the
check's, and torch is imported once, not once per library. DeepSpeed's op report comes from
``deepspeed/git_version_info_installed.py``, read as text (ds_report's ``installed_ops``,
``compatible_ops`` and ``torch_info``), not imported.

Standard library only, Python 3.8 syntax (no f-strings).
"""

import os
import sys
import time

if False:  # for readers and linters: these come from _prelude.py and torch_probe.py
    from envdoctor.child.torch_probe import _normalize, installed_distributions

#: When the child started (this part is sent before the script): the imports end within its bound.
STARTED = getattr(time, "monotonic", time.time)()  # Python 2 still says its version
MAX_METADATA = 512 * 1024
MAX_REQUIRES = 200
MAX_STDERR = 4000
#: grandchildren importing at once (each imports torch: memory, not CPU, is what they share)
PARALLEL = 6

#: The program of a grandchild: import torch, then each module named in turn. It writes one JSON
#: line on the results file (its descriptor is the first argument) when torch is imported, when a
#: module's import starts and when it ended, with where its standard error stood (the host cuts
#: each module's part out of it); the modules' own output goes where it likes.
_IMPORT = r"""
import json, os, sys, time, traceback
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
fd = int(sys.argv[1])
names = sys.argv[3:]
try:   # ends with the torch child (it may crash or be killed meanwhile): PR_SET_PDEATHSIG, SIGKILL
    import ctypes
    ctypes.CDLL(None).prctl(1, 9)
except BaseException:
    pass
if os.getppid() != int(sys.argv[2]):
    os._exit(0)
def say(obj):
    os.write(fd, (json.dumps(obj) + "\n").encode())
def stderr_at():
    for stream in (sys.__stderr__, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        return os.lseek(2, 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return None
torch_error = None
try:
    import torch
except BaseException as exc:
    torch_error = "%s: %s" % (type(exc).__name__, str(exc)[:1500])
say({"torch": torch_error is None, "stderr_at": stderr_at()})
for name in names:
    started = time.time()
    say({"start": name, "stderr_at": stderr_at(), "t": started})
    out = {"module": name, "torch": torch_error is None}
    if torch_error is not None:
        out["torch_error"] = torch_error
    else:
        try:
            import importlib
            mod = importlib.import_module(name)
            out["ok"] = True
            version = getattr(mod, "__version__", None)
            out["version"] = None if version is None else str(version)[:100]
            out["file"] = getattr(mod, "__file__", None)
        except BaseException as exc:
            out["ok"] = False
            out["type"] = type(exc).__name__
            out["message"] = str(exc)[:3000]
            frames = traceback.extract_tb(sys.exc_info()[2])[-3:]
            out["where"] = ["%s:%s" % (f[0], f[1]) for f in frames]
        if out.get("ok") and name == "deepspeed":
            try:
                from deepspeed.ops.op_builder.all_ops import ALL_OPS
                compat = {}
                for op, builder in sorted(ALL_OPS.items())[:60]:
                    try:
                        compat[op] = bool(builder.is_compatible(False))
                    except BaseException:
                        compat[op] = None
                out["compatible_ops"] = compat
            except BaseException as exc:
                out["ops_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:500])
    out["seconds"] = round(time.time() - started, 3)
    out["stderr_at"] = stderr_at()
    say(out)
say({"done": True})
os._exit(0)
"""


def _read(path, limit):
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except (OSError, ValueError):
        return None
    return data[:limit].decode("utf-8", "replace")


def _metadata(info):
    """Name, Version and the Requires-Dist lines of a dist-info's METADATA (headers only)."""
    name = "METADATA" if info.endswith(".dist-info") else "PKG-INFO"
    text = _read(os.path.join(info, name), MAX_METADATA)
    out = {"requires": []}
    if text is None:
        out["metadata_error"] = "no %s in %s" % (name, info)
        return out
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first empty line; the description follows
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "requires-dist" and len(out["requires"]) < MAX_REQUIRES:
            out["requires"].append(value[:500])
        elif key in ("name", "version") and key not in out:
            out[key] = value[:200]
    return out


def _direct_url(info):
    import json

    text = _read(os.path.join(info, "direct_url.json"), 64 * 1024)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return {"unreadable": True}
    if not isinstance(data, dict):
        return {"unreadable": True}
    out = {"url": str(data.get("url", ""))[:500]}
    dir_info = data.get("dir_info")
    if isinstance(dir_info, dict) and dir_info.get("editable"):
        out["editable"] = True
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        out["vcs"] = str(vcs.get("vcs", ""))[:20]
        out["commit"] = str(vcs.get("commit_id", ""))[:64]
    if isinstance(data.get("archive_info"), dict):
        out["archive"] = True
    return out


def _wheel_tags(info):
    text = _read(os.path.join(info, "WHEEL"), 16 * 1024) or ""
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")][:20]


def _installer_of(info):
    text = _read(os.path.join(info, "INSTALLER"), 200)
    return text.strip() if text and text.strip() else None


def _literal_assignments(text):
    """``name = <literal>`` lines of a generated module, as a dict (ast.literal_eval; nothing runs)."""
    import ast

    out = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                continue
    return out


def _deepspeed_build(site):
    """What DeepSpeed's installer wrote about its build (git_version_info_installed.py), or None."""
    path = os.path.join(site, "deepspeed", "git_version_info_installed.py")
    text = _read(path, 64 * 1024)
    if text is None:
        return None
    values = _literal_assignments(text)
    if values is None:
        return {"path": path, "unreadable": True}
    out = {"path": path}
    for key in ("version", "installed_ops", "compatible_ops", "torch_info", "accelerator_name"):
        if key in values:
            out[key] = values[key]
    return out


def _build_environment():
    """What a source build would use: ninja, RAM, CPUs and the variables torch's cpp_extension reads."""
    import shutil

    env = {}
    for name in (
        "TORCH_CUDA_ARCH_LIST",
        "MAX_JOBS",
        "CUDA_HOME",
        "CUDA_PATH",
        "NVCC_THREADS",
        "FLASH_ATTENTION_FORCE_BUILD",
        "FLASH_ATTENTION_SKIP_CUDA_BUILD",
        "CC",
        "CXX",
    ):
        if name in os.environ:
            env[name] = os.environ[name][:300]
    out = {"env": env, "ninja": shutil.which("ninja"), "cpus": os.cpu_count()}
    try:
        out["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        out["memory_bytes"] = None
    text = _read("/proc/meminfo", 16 * 1024) or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            try:
                out["available_bytes"] = int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                pass
    return out


def _torch_abi():
    torch = sys.modules.get("torch")
    value = getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", None)
    return value if isinstance(value, bool) else None


def _start(names, env):
    """A grandchild importing ``names`` in turn: (its state, None), or (None, why it did not start)."""
    import subprocess
    import tempfile

    results = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    fd = results.fileno()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _IMPORT, str(fd), str(os.getpid())] + list(names),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
            pass_fds=(fd,),
        )
    except (OSError, ValueError) as exc:
        results.close()
        err.close()
        return None, "%s: %s" % (type(exc).__name__, exc)
    now = time.monotonic()
    return {
        "proc": proc,
        "names": list(names),
        "results": results,
        "err": err,
        "started": now,
        "read": 0,
        "buffer": b"",
        "done": {},
        "current": None,
        "since": now,
        "err_at": 0,
    }, None


def _kill(proc):
    import signal
    import subprocess

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass
    try:  # a process inside the driver ends only when it leaves the kernel: do not wait on it for ever
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass


def _stderr(run, start, end=None):
    """The end of what the grandchild printed on standard error from ``start`` to ``end`` (offsets)."""
    fd = run["err"].fileno()
    try:
        size = os.fstat(fd).st_size
        end = size if end is None else min(end, size)
        start = max(start or 0, end - MAX_STDERR * 4)
        data = os.pread(fd, max(0, end - start), start)
    except (OSError, TypeError):
        return ""
    return data.decode("utf-8", "replace").strip()[-MAX_STDERR:]


def _poll(run):
    """Read the grandchild's new lines (with pread: the file's offset is the grandchild's): the module
    it is on, and the outcome of each module it finished."""
    import json

    fd = run["results"].fileno()
    while True:
        try:
            chunk = os.pread(fd, 65536, run["read"])
        except OSError:
            break
        if not chunk:
            break
        run["read"] += len(chunk)
        run["buffer"] += chunk
    while b"\n" in run["buffer"]:
        line, run["buffer"] = run["buffer"].split(b"\n", 1)
        try:
            item = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("start"), str):
            # when it started, on this clock (the line may be read late: the torch child was busy)
            late = time.time() - item["t"] if isinstance(item.get("t"), float) else 0.0
            run["current"], run["since"], run["err_at"] = (
                item["start"],
                time.monotonic() - max(0.0, late),
                item.get("stderr_at"),
            )
        elif isinstance(item.get("module"), str) and item["module"] == run["current"]:
            end = item.pop("stderr_at", None)
            item["returncode"] = 0
            stderr = _stderr(run, run["err_at"], end)
            if stderr:
                item["stderr"] = stderr
            run["done"][item["module"]] = item
            run["current"] = None


def _ended(run, now, timed_out):
    """The outcome of the module a grandchild was on when it died (or was killed at the deadline);
    a grandchild that died in ``import torch`` was on its first module."""
    result = {"returncode": run["proc"].returncode, "seconds": round(now - run["since"], 3)}
    if timed_out:
        result["timeout"] = True
    stderr = _stderr(run, run["err_at"])
    if stderr:
        result["stderr"] = stderr
    return result


def _close(run):
    run["results"].close()
    run["err"].close()


def stall_after(seconds_left):
    """How long the shared grandchild may stay on one library before the libraries after it are
    imported each in a grandchild of its own (a slow import goes on; a hang ends at the deadline)."""
    return min(10.0, max(0.5, seconds_left / 4.0))


def _import_env(env=None):
    env = dict(os.environ if env is None else env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def import_all(modules, deadline, env=None, shared=None):
    """{module: outcome} for each module, all bounded by ``deadline`` (a time.monotonic() value).

    One shared grandchild imports them in turn (``shared``: one already started by
    :func:`start_imports`); the module it is on when it crashes, exits or is killed at the deadline
    gets that outcome (what still runs then is reported with "timeout"), and the modules after it
    (or after one it stays on past :func:`stall_after`) are imported each in a grandchild of its
    own, at most PARALLEL at once."""
    env = _import_env(env)
    modules = list(modules)
    results = {}
    alone = []  # the modules left to import each in a grandchild of its own
    if shared is None and len(modules) > 1:
        shared, error = _start(modules, env)
    if shared is None:
        alone = list(modules)
    stall = stall_after(deadline - time.monotonic())
    handed = set()  # modules the shared grandchild is no longer waited for
    running = {}
    while True:
        now = time.monotonic()
        if shared is not None:
            _poll(shared)
            exited = shared["proc"].poll() is not None
            if exited:
                _poll(shared)
            for name, outcome in shared["done"].items():
                if name not in handed:
                    results[name] = outcome
            current = shared["current"]
            if exited or now >= deadline or (handed and (current is None or current in handed)):
                if not exited:
                    _kill(shared["proc"])
                if current is not None and current not in handed:
                    results[current] = _ended(shared, now, not exited)
                alone += [m for m in modules if m not in results and m not in handed and m not in alone]
                _close(shared)
                shared = None
            elif current is not None and not handed and now - shared["since"] > stall:
                after = shared["names"][shared["names"].index(current) + 1 :]
                handed.update(after)
                alone += after
        while alone and len(running) < PARALLEL:
            name = alone.pop(0)
            if time.monotonic() >= deadline:  # never tried: no verdict on it, and no process spawned
                results[name] = {"start_error": "not imported: the time for the imports was spent first"}
                continue
            run, error = _start([name], env)
            if run is None:
                results[name] = {"start_error": error}
            else:
                run["current"] = name  # until its start line: it dies in import torch
                running[name] = run
        now = time.monotonic()
        for name in list(running):
            run = running[name]
            proc = run["proc"]
            exited = proc.poll() is not None
            if not exited and now < deadline:
                continue
            if not exited:
                _kill(proc)
            _poll(run)
            ran = now - run["started"]
            if not exited and name not in run["done"] and ran < stall:
                # started late, cut by the deadline before it had the time a hang is judged by
                outcome = {
                    "start_error": "not finished: the time for the imports ran out %.1f s after it started" % ran
                }
            else:
                outcome = run["done"].get(name) or _ended(run, now, not exited)
            outcome["seconds"] = round(now - run["started"], 3)  # the whole process, torch's import too
            results[name] = outcome
            _close(run)
            del running[name]
        if shared is None and not running and not alone:
            return results
        time.sleep(0.02)


def _importable(modules):
    """The modules with the first one that is installed first (flash-attn 3 is flash_attn_interface in
    older builds, flash_attn_3 in newer ones); a top-level find_spec imports nothing."""
    import importlib.util

    for i, name in enumerate(modules):
        try:
            if importlib.util.find_spec(name) is not None:
                return [name] + modules[:i] + modules[i + 1 :]
        except (ImportError, ValueError):
            continue
    return modules


def _found(config):
    """Every library of the catalog that is installed here, with its metadata (nothing imported)."""
    catalog = config.get("catalog") or []
    dists = installed_distributions()
    found = []
    for entry in catalog[:100]:
        names = [_normalize(n) for n in entry.get("dists") or []]
        hit = next((n for n in names if n in dists), None)
        if hit is None:
            continue
        version, info = dists[hit]
        item = {
            "name": entry.get("name"),
            "dist": hit,
            "version": version,
            "info": info,
            "installer": _installer_of(info),
            "direct_url": _direct_url(info),
            "wheel_tags": _wheel_tags(info),
            "modules": list(entry.get("modules") or [])[:4],
        }
        item.update(_metadata(info))
        if entry.get("name") == "deepspeed":
            item["deepspeed_build"] = _deepspeed_build(os.path.dirname(info))
        found.append(item)
    return found


def _plan(config, found):
    """(the modules to import, first the one each library installs, and their deadline)."""
    now = time.monotonic()
    deadline = min(now + float(config.get("budget") or 60), STARTED + float(config.get("deadline") or 60))
    modules = []
    for item in found:
        item["modules"] = _importable(item["modules"])
        for module in item["modules"][:1]:
            if module not in modules:
                modules.append(module)
    return modules, deadline


def start_imports(config):
    """The imports of the installed libraries started in their shared grandchild, before the torch
    child imports torch itself, so that the two imports of torch run side by side; None where there
    is nothing to import. :func:`extension_facts` takes what it returns (and ends the grandchild
    when torch does not import in the child: then nothing is imported)."""
    if not config.get("imports", True):
        return None
    started = time.monotonic()
    found = _found(config)
    modules, deadline = _plan(config, found)
    run = None
    if modules and deadline - time.monotonic() >= 1:
        run, error = _start(modules, _import_env())
    return {"found": found, "modules": modules, "deadline": deadline, "run": run, "started": started}


def extension_facts(config, torch_data, early=None):
    """The answer's ``extensions`` part: every installed library of the catalog, its metadata and
    the outcome of its import. ``config``: {"catalog": [...], "budget": seconds, "imports": bool};
    ``early``: what :func:`start_imports` started."""
    started = early["started"] if early else time.monotonic()
    found = early["found"] if early else _found(config)
    out = {"installed": found, "torch_cxx11_abi": _torch_abi(), "build": _build_environment()}
    torch_ok = bool(torch_data.get("installed")) and not torch_data.get("import_error") and "version" in torch_data
    shared = early["run"] if early else None
    if not config.get("imports", True):
        out["imports_skipped"] = "not asked"
    elif not torch_ok:
        installed = torch_data.get("installed")
        out["imports_skipped"] = "torch does not import here" if installed else "torch is not installed"
    elif found:
        modules, deadline = (early["modules"], early["deadline"]) if early else _plan(config, found)
        if shared is None and deadline - time.monotonic() < 1:
            out["imports_skipped"] = "no time left within the torch check's bound (--torch-timeout)"
        else:
            out["imports"] = import_all(modules, deadline, shared=shared)
            shared = None
    if shared is not None:  # started early, not wanted: torch does not import here
        if shared["proc"].poll() is None:
            _kill(shared["proc"])
        _close(shared)
    out["seconds"] = round(time.monotonic() - started, 3)
    return out

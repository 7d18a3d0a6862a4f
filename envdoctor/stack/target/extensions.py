"""The libraries above torch (flash-attn, xformers, vLLM, ...), read inside the target interpreter.

A part of ``child/torch_probe.py`` (named on its ``# envdoctor child uses:`` line), run after
torch's own facts, so the machine's interpreter starts once. For each library of the catalog the
host sends (``{"name": "flash-attn", "dists": ["flash-attn"], "modules": ["flash_attn"]}``):
the dist-info's version, installer, ``direct_url.json``, ``Requires-Dist`` lines and wheel tags;
then each import in a grandchild process of its own (``sys.executable -c ...``), all bounded by
one deadline, so a segfault or a hang in one library's import is that library's fact and never
the check's. DeepSpeed's op report comes from ``deepspeed/git_version_info_installed.py``, read as
text (ds_report's ``installed_ops``, ``compatible_ops`` and ``torch_info``), not imported.

Standard library only, Python 3.8 syntax (no f-strings).
"""

import os
import sys
import time

if False:  # for readers and linters: these come from _prelude.py and torch_probe.py
    from envdoctor.child.torch_probe import _normalize, installed_distributions

#: When the child started (this part is sent before the script): the imports end within its bound.
STARTED = getattr(time, "monotonic", time.time)()   # Python 2 still says its version
MARK = "@@envdoctor-extension@@"
MAX_METADATA = 512 * 1024
MAX_REQUIRES = 200
MAX_STDERR = 4000
#: grandchildren importing at once (each imports torch: memory, not CPU, is what they share)
PARALLEL = 6

#: The program each grandchild runs: import torch, then the module; print one marked JSON line.
_IMPORT = r'''
import json, os, sys, time, traceback
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
name = sys.argv[1]
out = {"module": name}
started = time.time()
try:
    import torch
    out["torch"] = True
except BaseException as exc:
    out["torch"] = False
    out["torch_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:1500])
if out["torch"]:
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
sys.stdout.flush()
sys.stdout.write("\n" + MARK + json.dumps(out) + "\n")
sys.stdout.flush()
os._exit(0)
'''.replace("MARK", repr(MARK))


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
            break   # the headers end at the first empty line; the description follows
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
    for name in ("TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CUDA_HOME", "CUDA_PATH", "NVCC_THREADS",
                 "FLASH_ATTENTION_FORCE_BUILD", "FLASH_ATTENTION_SKIP_CUDA_BUILD", "CC", "CXX"):
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


def _start(name, env):
    import subprocess
    import tempfile

    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen([sys.executable, "-c", _IMPORT, name], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, env=env, start_new_session=True)
    except (OSError, ValueError) as exc:
        out.close()
        err.close()
        return None, None, None, "%s: %s" % (type(exc).__name__, exc)
    return proc, out, err, None


def _kill(proc):
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass


def _collect(proc, out, err, seconds, timed_out):
    import json

    out.seek(0)
    stdout = out.read(256 * 1024).decode("utf-8", "replace")
    err.seek(0, 2)                       # only the end of what it printed on stderr (a library may print MBs)
    err.seek(max(0, err.tell() - MAX_STDERR * 4))
    stderr = err.read(MAX_STDERR * 4).decode("utf-8", "replace")
    out.close()
    err.close()
    result = {"returncode": proc.returncode, "seconds": round(seconds, 3)}
    if timed_out:
        result["timeout"] = True
    for line in stdout.splitlines():
        if line.startswith(MARK):
            try:
                result.update(json.loads(line[len(MARK):]))
            except ValueError:
                result["garbled"] = True
    stderr = stderr.strip()
    if stderr:
        result["stderr"] = stderr[-MAX_STDERR:]
    return result


def import_all(modules, deadline, env=None):
    """{module: outcome} for each module, each imported in a grandchild; all bounded by ``deadline``
    (a time.monotonic() value): what still runs then is killed and reported with "timeout"."""
    env = dict(os.environ if env is None else env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    waiting = list(modules)
    running = {}
    results = {}
    while waiting or running:
        while waiting and len(running) < PARALLEL:
            name = waiting.pop(0)
            proc, out, err, error = _start(name, env)
            if proc is None:
                results[name] = {"start_error": error}
            else:
                running[name] = (proc, out, err, time.monotonic())
        now = time.monotonic()
        for name in list(running):
            proc, out, err, started = running[name]
            if proc.poll() is not None:
                results[name] = _collect(proc, out, err, now - started, False)
                del running[name]
            elif now >= deadline:
                _kill(proc)
                proc.wait()
                results[name] = _collect(proc, out, err, now - started, True)
                del running[name]
        if running:
            time.sleep(0.02)
    return results


def _importable(modules):
    """The modules with the first one that is installed first (flash-attn 3 is flash_attn_interface in
    older builds, flash_attn_3 in newer ones); a top-level find_spec imports nothing."""
    import importlib.util

    for i, name in enumerate(modules):
        try:
            if importlib.util.find_spec(name) is not None:
                return [name] + modules[:i] + modules[i + 1:]
        except (ImportError, ValueError):
            continue
    return modules


def extension_facts(config, torch_data):
    """The answer's ``extensions`` part: every installed library of the catalog, its metadata and
    the outcome of its import. ``config``: {"catalog": [...], "budget": seconds, "imports": bool}."""
    started = time.monotonic()
    catalog = config.get("catalog") or []
    dists = installed_distributions()
    found = []
    for entry in catalog[:100]:
        names = [_normalize(n) for n in entry.get("dists") or []]
        hit = next((n for n in names if n in dists), None)
        if hit is None:
            continue
        version, info = dists[hit]
        item = {"name": entry.get("name"), "dist": hit, "version": version, "info": info,
                "installer": _installer_of(info), "direct_url": _direct_url(info),
                "wheel_tags": _wheel_tags(info), "modules": list(entry.get("modules") or [])[:4]}
        item.update(_metadata(info))
        if entry.get("name") == "deepspeed":
            item["deepspeed_build"] = _deepspeed_build(os.path.dirname(info))
        found.append(item)
    out = {"installed": found, "torch_cxx11_abi": _torch_abi(), "build": _build_environment()}
    torch_ok = bool(torch_data.get("installed")) and not torch_data.get("import_error") and "version" in torch_data
    if not config.get("imports", True):
        out["imports_skipped"] = "not asked"
    elif not torch_ok:
        installed = torch_data.get("installed")
        out["imports_skipped"] = "torch does not import here" if installed else "torch is not installed"
    elif found:
        now = time.monotonic()
        deadline = min(now + float(config.get("budget") or 60), STARTED + float(config.get("deadline") or 60))
        modules = []
        for item in found:
            item["modules"] = _importable(item["modules"])
            for module in item["modules"][:1]:
                if module not in modules:
                    modules.append(module)
        if deadline - now < 1:
            out["imports_skipped"] = "no time left within the torch check's bound (--torch-timeout)"
        else:
            out["imports"] = import_all(modules, deadline)
    out["seconds"] = round(time.monotonic() - started, 3)
    return out

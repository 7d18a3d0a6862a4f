# -- envdoctor child protocol (child side) ------------------------------------------------------
# envdoctor sends this prelude, then one script of this folder, then the line "_envdoctor_run(main)"
# to ``PYTHON - CONFIG`` on standard input. CONFIG is JSON, or "@FILE" naming a JSON file.
# Every line the child writes to stdout is one JSON object, {"envdoctor_child": 2, "kind": ...}:
#   "stage"   before a step that may crash or hang ({"stage": "import torch", ...})
#   "result"  the script's answer, always last when it ran to the end ({"result": {...}})
#   "error"   the script could not answer ({"error": {"kind": "no_torch", "message": "..."}})
#   anything else is an event the host may show as progress ("point", "sample", "python", ...)
# Whatever else writes to fd 1 (torch, a C library) is sent to stderr, so stdout holds only these
# lines. Written for every Python envdoctor may meet: no f-strings, no annotations, standard
# library only, so even a Python too old for the script still says its version.
import json as _json
import os as _os
import signal as _signal
import sys as _sys
import time as _time

PROTOCOL = 2
TEXT_LIMIT = 2000


class Failure(Exception):
    """An answer the script cannot give, for a reason with a kind: raise Failure("no_torch", ...)."""

    def __init__(self, kind, message, **extra):
        Exception.__init__(self, message)
        self.kind = kind
        self.message = message
        self.extra = extra


class _Stop(object):
    """Set by SIGTERM: envdoctor asked the child to stop (Ctrl-C, a deadline). Long loops check it."""

    def __init__(self):
        self.asked = False

    def is_set(self):
        return self.asked


STOP = _Stop()


def _text(value, limit=TEXT_LIMIT):
    s = str(value)
    return s if len(s) <= limit else s[:limit] + " [cut]"


def first_line(exc):
    lines = str(exc).strip().splitlines()
    return _text("%s: %s" % (type(exc).__name__, lines[0] if lines else ""))


def _finite(obj):
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    if isinstance(obj, dict):
        return dict((str(k), _finite(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


class _Out(object):
    def __init__(self):
        try:
            fd = _os.dup(1)
            _os.dup2(2, 1)
            self.stream = _os.fdopen(fd, "w")
            _sys.stdout = _sys.stderr
        except (OSError, ValueError):
            self.stream = _sys.stdout

    def write(self, line):
        try:
            text = _json.dumps(line, sort_keys=True, default=str, allow_nan=False)
        except ValueError:
            text = _json.dumps(_finite(line), sort_keys=True, default=str)
        self.stream.write(text + "\n")
        self.stream.flush()


_OUT = _Out()


def emit(kind, **fields):
    """One protocol line: emit("point", point={...})."""
    line = {"envdoctor_child": PROTOCOL, "kind": kind, "t": _time.time()}
    line.update(fields)
    _OUT.write(line)


def stage(name, **fields):
    """Say which step comes next, so a crash or a hang in it names it."""
    emit("stage", stage=name, **fields)


def _config(argv):
    if len(argv) < 2:
        return {}
    arg = argv[1]
    if arg.startswith("@"):
        with open(arg[1:]) as fh:
            arg = fh.read()
    value = _json.loads(arg)
    if not isinstance(value, dict):
        raise ValueError("the configuration is not a JSON object")
    return value


def _on_term(signum, frame):
    STOP.asked = True


def _envdoctor_run(main):
    try:
        import faulthandler

        faulthandler.enable()
    except Exception:
        faulthandler = None
    try:
        _signal.signal(_signal.SIGTERM, _on_term)
    except (ValueError, OSError, AttributeError):
        pass
    # The current folder (the script came on stdin) must not shadow an installed package.
    if _sys.path and _sys.path[0] in ("", _os.getcwd()):
        del _sys.path[0]
    try:
        config = _config(_sys.argv)
        if faulthandler is not None and config.get("dump_after"):
            faulthandler.dump_traceback_later(float(config["dump_after"]), exit=False)
        emit("result", result=main(config))
    except Failure as exc:
        error = {"kind": exc.kind, "message": _text(exc.message)}
        error.update(exc.extra)
        emit("error", error=error)
    except KeyboardInterrupt:
        emit("error", error={"kind": "stopped", "message": "stopped by a signal"})
    except Exception as exc:
        import traceback

        emit(
            "error",
            error={"kind": "internal", "message": first_line(exc), "traceback": _text(traceback.format_exc(), 4000)},
        )
    _sys.stderr.flush()
    if faulthandler is not None:
        try:
            faulthandler.cancel_dump_traceback_later()
        except Exception:
            pass
    # Skip interpreter teardown: CUDA contexts are slow to destroy and some crash on exit.
    _os._exit(0)


# -- end of the prelude; the script follows -----------------------------------------------------

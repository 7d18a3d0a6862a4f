"""What a probe may read: a file root, an environment, a timeout.

Probes never touch ``os.environ`` or absolute paths directly. Tests point ``root`` at a folder of
recorded files and ``env['PATH']`` at fake executables; on a real machine both are the machine's.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.run import Ran, not_a_program, run, which

#: The default of ``--torch-timeout``: a cold first ``import torch`` of a CUDA build is slow.
TORCH_TIMEOUT = 60.0


@dataclass(frozen=True)
class Context:
    root: Path = Path("/")
    env: Dict[str, str] = field(default_factory=lambda: dict(os.environ))
    #: seconds every external command may take (``--timeout``): nvidia-smi, conda, docker, nvcc, ...
    timeout: float = 10.0
    #: seconds the child that imports torch may take (``--torch-timeout``; a cold first import is slow)
    torch_timeout: float = TORCH_TIMEOUT
    python: Optional[str] = None  # --python PATH
    #: NVML binding to use: None = ``pynvml`` on the real root, not consulted under another root;
    #: tests pass an object with the pynvml functions that replays recorded values.
    nvml: Any = None
    #: set on Ctrl-C: every command a probe runs is ended (SIGTERM, then SIGKILL), not waited for
    stop: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    #: the one NVML session of an inspection (``envdoctor.nvml.Shared``), set by the probes' runner;
    #: None: each probe opens its own
    nvml_shared: Any = field(default=None, compare=False, repr=False)

    def path(self, absolute: str) -> Path:
        """``/sys/module/nvidia/version`` under this context's root."""
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str, limit: int = 1 << 20) -> Tuple[Optional[str], Optional[ProbeError]]:
        """(text, None) when readable; (None, None) when absent; (None, error) when unreadable."""
        p = self.path(absolute)
        try:
            with open(p, "rb") as fh:
                return fh.read(limit).decode("utf-8", errors="replace"), None
        except FileNotFoundError:
            return None, None
        except NotADirectoryError:
            return None, None
        except PermissionError:
            return None, ProbeError("permission", f"{absolute}: permission denied")
        except OSError as exc:
            return None, ProbeError("unavailable", f"{absolute}: {exc.strerror or exc}")
        except ValueError:  # a NUL in a path that came from a tool's output: no such file
            return None, None

    def exists(self, absolute: str) -> bool:
        try:
            return os.path.lexists(self.path(absolute))
        except ValueError:
            return False

    def listdir(self, absolute: str) -> Tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(self.path(absolute))))
        except (OSError, ValueError):
            return ()

    def run(
        self, argv: Sequence[str], timeout: Optional[float] = None, stdin: Optional[str] = None, **streaming: Any
    ) -> Ran:
        """:func:`envdoctor.run.run` in this context's environment (``streaming``: on_line, stop, ...)."""
        streaming.pop("env", None)
        if streaming.get("stop") is None:
            streaming["stop"] = self.stop
        return run(argv, timeout=self.timeout if timeout is None else timeout, env=self.env, stdin=stdin, **streaming)

    def which(self, name: str) -> Optional[str]:
        return which(name, self.env)

    def locate(self, name: str) -> Tuple[Optional[str], Optional[ProbeError]]:
        """(path, None) for a program on PATH; (None, error) when something named ``name`` is
        there but is not a program ("nvcc: not installed (/opt/x/nvcc is a directory, not a
        program)"); (None, None) when nothing is."""
        found = self.which(name)
        if found:
            return found, None
        why = not_a_program(name, self.env)
        return None, (ProbeError("not_found", why, name) if why else None)

"""Open a page in a real headless Chromium (Debian's ``chromium`` package; nothing is downloaded).
No tests here.

``open_page(path, tmp)`` returns the DOM after the page's scripts ran and the console lines the
browser logged; ``screenshot(path, png)`` draws it. Where Chromium is absent the browser tests skip
with the reason, unless ENVDOCTOR_REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio"]


def chromium() -> Optional[str]:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def need_chromium() -> str:
    exe = chromium()
    if exe is None:
        if os.environ.get("ENVDOCTOR_REQUIRE_BROWSER"):
            pytest.fail("ENVDOCTOR_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
        pytest.skip("needs Chromium for the browser tests (apt-get install chromium)")
    return exe


@dataclass(frozen=True)
class Opened:
    dom: str
    console: List[str]        # every console message the page logged (errors included)
    seconds: float            # the browser's whole run, start to exit


def _run(args: List[str], timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="envdoctor-chromium-") as profile:
        return subprocess.run([need_chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, "HOME": profile})


def open_page(path: Path, fragment: str = "") -> Opened:
    import time

    started = time.monotonic()
    r = _run(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom",
              path.resolve().as_uri() + fragment])
    took = time.monotonic() - started
    assert r.returncode == 0, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return Opened(r.stdout, console, took)


def screenshot(path: Path, png: Path, width: int = 1280, height: int = 1800) -> Path:
    r = _run([f"--window-size={width},{height}", "--hide-scrollbars", f"--screenshot={png}", path.resolve().as_uri()])
    assert r.returncode == 0 and png.exists() and png.stat().st_size > 1000, r.stderr[-2000:]
    return png

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

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
]


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
    console: List[str]  # every console message the page logged (errors included)
    seconds: float  # the browser's whole run, start to exit


def _run(args: List[str], timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="envdoctor-chromium-") as profile:
        return subprocess.run(
            [need_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "HOME": profile},
        )


def open_page(path: Path, fragment: str = "") -> Opened:
    import time

    started = time.monotonic()
    r = _run(
        [
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.resolve().as_uri() + fragment,
        ]
    )
    took = time.monotonic() - started
    assert r.returncode == 0, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return Opened(r.stdout, console, took)


def screenshot(path: Path, png: Path, width: int = 1280, height: int = 1800) -> Path:
    r = _run([f"--window-size={width},{height}", "--hide-scrollbars", f"--screenshot={png}", path.resolve().as_uri()])
    assert r.returncode == 0 and png.exists() and png.stat().st_size > 1000, r.stderr[-2000:]
    return png


class Cdp:
    """A tiny client of the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (fd 3 reads the
    browser's commands, fd 4 its answers, messages ending in NUL): open a page, evaluate script,
    click with the mouse as a person does. ``with Cdp(path) as page: page.click("#nodes th:nth-child(4)")``."""

    def __init__(self, path: Path, width: int = 1280, height: int = 900) -> None:
        self.path, self.size = path, (width, height)
        self.next_id = 0

    def __enter__(self) -> Cdp:
        exe = need_chromium()
        self.profile = tempfile.TemporaryDirectory(prefix="envdoctor-cdp-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds() -> None:  # the browser reads fd 3 and writes fd 4 (close_fds runs after this)
            r, w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                "--remote-debugging-pipe",
                f"--window-size={self.size[0]},{self.size[1]}",
                "about:blank",
            ],
            preexec_fn=fds,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HOME": self.profile.name},
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        target = self.call("Target.createTarget", url=self.path.resolve().as_uri())["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        import time

        deadline = time.monotonic() + 60
        ready = "document.documentElement && document.documentElement.getAttribute('data-ready')"
        while self.evaluate(ready) != "1":
            assert time.monotonic() < deadline, "the page never became ready"
            time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.call("Browser.close")
        except Exception:  # the browser may be gone already
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)
        self.profile.cleanup()

    def call(self, method: str, session: bool = False, **params: object) -> dict:
        import json
        import select

        self.next_id += 1
        message: dict = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                ready, _, _ = select.select([self.from_browser], [], [], 60)
                assert ready, f"no answer to {method}"
                chunk = os.read(self.from_browser, 1 << 20)
                assert chunk, "the browser closed its pipe"
                self.buffer += chunk
            raw, _, self.buffer = self.buffer.partition(b"\0")
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                assert "error" not in answer, answer["error"]
                return dict(answer.get("result") or {})

    def evaluate(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result.get("result", {}).get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) in the middle of the element."""
        import json

        box = self.evaluate(
            f"(function () {{ var e = document.querySelector({json.dumps(selector)}); "
            "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect(); "
            "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        assert isinstance(box, list), f"{selector}: no such element"
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1)

    def type_into(self, selector: str, text: str) -> None:
        self.click(selector)
        self.call("Input.insertText", session=True, text=text)

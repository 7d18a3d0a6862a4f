"""A local wheel index for tests: a real HTTP server on 127.0.0.1 (port 0) in a thread.

It serves ``tests/fixtures/pytorch-index/whl/`` at ``/whl/``. A first path segment picks a
behaviour, so one server covers every failure mode:

    http://127.0.0.1:PORT/whl/cu121/torch/            the real shape (HTML only)
    http://127.0.0.1:PORT/pep691/whl/cu121/torch/     JSON when the Accept header asks for it
    /flaky/...      first ``flaky_failures`` requests per path answer 500, then the page
    /down/...       always 503
    /slow/...       sleeps ``slow`` seconds first
    /garbage/...    200 text/html that is not HTML; /badjson/... a JSON content type, broken body
    /truncated/...  200 with the page cut in half (honest Content-Length)
    /cut/...        Content-Length of the whole page, half of it sent, connection closed
    /moved/...      301 to the same path under /whl/;  /loop/... 302 to itself
    /s3/...         missing paths answer 403 AccessDenied XML (S3 behind CloudFront)
    /auth/...       needs basic auth ada:s3cret (401 otherwise)
    /autoindex/whl/ a directory listing of the variants (a plain mirror)
    /noetag/...     no ETag / Last-Modified headers
    /drip/...       the headers at once, then the page one byte every ``drip`` seconds
    /driphead/...   even the status line and headers one byte every ``drip`` seconds
    /dripnolength/... as /drip/, with no Content-Length (the body ends when the connection closes)
    /badredirect/... 302 to a malformed IPv6-literal URL (``http://[::1/whl/``: "Invalid IPv6 URL")
    /v6redirect/... 302 to an IPv6 literal nobody listens on (``http://[::1]:9/whl/``)
    /charsetundefined/..., /charsetidna/... the page with ``charset=undefined`` / ``charset=idna``
    /bigint/...     a PEP 691 page (asked for or not) whose ``meta`` holds a 5,000-digit integer

It also answers absolute-form requests (``GET http://host/whl/... HTTP/1.1``), so it can stand in
for an HTTP proxy.

>>> with IndexServer() as server:
...     IndexClient(server.url("pep691"), cache_dir=tmp).variant("cu121")
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit

FIXTURE_ROOT = Path(__file__).parent / "fixtures" / "pytorch-index"
MODES = {
    "pep691",
    "flaky",
    "down",
    "slow",
    "garbage",
    "badjson",
    "truncated",
    "cut",
    "moved",
    "loop",
    "s3",
    "auth",
    "autoindex",
    "noetag",
    "drip",
    "driphead",
    "dripnolength",
    "badredirect",
    "v6redirect",
    "charsetundefined",
    "charsetidna",
    "bigint",
}
LAST_MODIFIED = "Fri, 01 Aug 2025 00:00:00 GMT"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
USER, PASSWORD = "ada", "s3cret"


class IndexServer:
    """Start with ``with IndexServer() as s:`` or ``start()``/``stop()``; ``s.requests`` logs
    (path, headers) of every request; ``latency`` delays every answer (seconds)."""

    def __init__(
        self,
        root: Path = FIXTURE_ROOT,
        latency: float = 0.0,
        slow: float = 2.0,
        flaky_failures: int = 1,
        drip: float = 0.5,
    ) -> None:
        self.root = Path(root)
        self.drip = drip
        self.latency = latency
        self.slow = slow
        self.flaky_failures = flaky_failures
        self.requests: List[Tuple[str, Dict[str, str]]] = []
        self.statuses: List[Tuple[str, int]] = []
        self._failures: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> IndexServer:
        handler = type("Handler", (_Handler,), {"index": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="indexserver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> IndexServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    def url(self, mode: Optional[str] = None, userinfo: Optional[str] = None) -> str:
        """The index base, e.g. ``http://127.0.0.1:PORT/flaky/whl``."""
        auth = f"{userinfo}@" if userinfo else ""
        prefix = f"/{mode}" if mode else ""
        return f"http://{auth}127.0.0.1:{self.port}{prefix}/whl"

    def count(self, fragment: str = "") -> int:
        with self._lock:
            return sum(1 for path, _ in self.requests if fragment in path)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.statuses.clear()
            self._failures.clear()

    def _log(self, path: str, headers: Dict[str, str]) -> None:
        with self._lock:
            self.requests.append((path, headers))

    def _fail_once(self, path: str) -> bool:
        with self._lock:
            n = self._failures.get(path, 0)
            self._failures[path] = n + 1
            return n < self.flaky_failures


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 drops bursts of 40 connections

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that gave up (a deadline, a refused page): not a server bug
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    index: IndexServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms stalls

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        server = self.index
        server._log(self.path, dict(self.headers.items()))
        if server.latency:
            time.sleep(server.latency)
        path = self.path.split("?", 1)[0]
        if path.startswith(("http://", "https://")):  # asked as an HTTP proxy
            path = urlsplit(path).path or "/"
        parts = [p for p in path.split("/") if p]
        mode = parts[0] if parts and parts[0] in MODES else None
        rest = parts[1:] if mode else parts
        if not rest or rest[0] != "whl":
            return self._send(404, b"<html><body>404 Not Found</body></html>", "text/html")
        if mode == "down":
            return self._send(503, b"<html><body>Service Unavailable</body></html>", "text/html")
        if mode == "flaky" and server._fail_once(path):
            return self._send(500, b"<html><body>Internal Server Error</body></html>", "text/html")
        if mode == "slow":
            time.sleep(server.slow)
        if mode == "loop":
            return self._redirect(302, path)
        if mode == "badredirect":
            return self._redirect(302, "http://[::1/whl/")
        if mode == "v6redirect":
            return self._redirect(302, "http://[::1]:9/whl/")
        if mode == "moved":
            return self._redirect(301, "/" + "/".join(rest) + ("/" if path.endswith("/") else ""))
        if mode == "auth" and not self._authorized():
            return self._send(
                401,
                b"<html><body>401 Unauthorized</body></html>",
                "text/html",
                {"WWW-Authenticate": 'Basic realm="mirror"'},
            )
        if mode == "autoindex" and rest == ["whl"]:
            return self._send(200, self._autoindex(), "text/html")
        if not path.endswith("/"):
            return self._redirect(301, path + "/")
        wants_json = mode == "pep691" and JSON_TYPE in self.headers.get("Accept", "")
        folder = server.root.joinpath(*rest)
        page = folder / ("index.json" if wants_json else "index.html")
        if ".." in rest or not page.is_file():
            if mode == "s3":
                body = (
                    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                    b"<Message>Access Denied</Message></Error>"
                )
                return self._send(403, body, "application/xml")
            return self._send(404, b"<html><body>404 Not Found</body></html>", "text/html")
        body = page.read_bytes()
        ctype = JSON_TYPE if wants_json else "text/html"
        if mode in ("charsetundefined", "charsetidna"):
            return self._send(200, body, f"text/html; charset={mode[len('charset') :]}")
        if mode == "bigint":
            page = (
                b'{"meta": {"api-version": "1.1", "_last-serial": ' + b"9" * 5000 + b'}, "name": "torch", "files": []}'
            )
            return self._send(200, page, JSON_TYPE)
        if mode == "garbage":
            return self._send(200, b"\x1f\x8b\x08\x00 this is not an index \xff\xfe" * 20, ctype)
        if mode == "badjson":
            return self._send(200, body[: len(body) // 3], JSON_TYPE)
        if mode == "truncated":
            return self._send(200, body[: len(body) // 2], ctype)
        if mode == "cut":
            return self._send(200, body, ctype, cut=True)
        if mode in ("drip", "driphead", "dripnolength"):
            return self._drip(body, ctype, headers_too=mode == "driphead", length=mode != "dripnolength")
        headers = {"Vary": "Accept"}
        if mode != "noetag":
            etag = '"' + hashlib.sha1(body).hexdigest() + '"'
            headers.update({"ETag": etag, "Last-Modified": LAST_MODIFIED})
            if self.headers.get("If-None-Match") == etag:
                return self._send(304, b"", None, headers)
        return self._send(200, body, ctype, headers)

    def _drip(self, body: bytes, ctype: str, headers_too: bool, length: bool = True) -> None:
        """One byte every ``drip`` seconds: of the page, or of the whole answer (``headers_too``)."""
        size = f"Content-Length: {len(body)}\r\n" if length else ""
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n{size}Connection: close\r\n\r\n").encode()
        self.close_connection = True
        data = head + body if headers_too else body
        try:
            if not headers_too:
                self.wfile.write(head)
                self.wfile.flush()
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                time.sleep(self.index.drip)
        except OSError:  # the client gave up and closed the connection
            pass

    def _authorized(self) -> bool:
        expected = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        return self.headers.get("Authorization", "") == f"Basic {expected}"

    def _autoindex(self) -> bytes:
        names = sorted(p.name for p in (self.index.root / "whl").iterdir() if p.is_dir())
        rows = "".join(f'<a href="{n}/">{n}/</a>                 01-Aug-2025 00:00       -\n' for n in names)
        return (
            f"<html>\n<head><title>Index of /whl/</title></head>\n<body>\n<h1>Index of /whl/</h1>"
            f'<hr><pre><a href="../">../</a>\n{rows}</pre><hr></body>\n</html>\n'
        ).encode()

    def _redirect(self, status: int, location: str) -> None:
        self._send(status, b"", None, {"Location": location})

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: Optional[str],
        headers: Optional[Dict[str, str]] = None,
        cut: bool = False,
    ) -> None:
        with self.index._lock:
            self.index.statuses.append((self.path, status))
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        if cut:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(body[: len(body) // 2] if cut else body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        if cut:
            self.close_connection = True


def main(argv: Optional[List[str]] = None) -> None:
    """``python -m tests.indexserver [--root DIR] [--latency S]``: serve until stdin closes.

    Prints the port on the first line (the benchmark runs the server in its own process so that
    its work does not compete with the client for one interpreter lock).
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=FIXTURE_ROOT)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args(argv)
    with IndexServer(root=args.root, latency=args.latency) as server:
        print(server.port, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()

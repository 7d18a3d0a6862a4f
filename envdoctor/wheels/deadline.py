"""A deadline for a whole HTTP request: connect, headers, body, redirects and retries together.

requests' timeouts bound the connect and each socket read, so a server that sends one byte every
half second is never timed out. Inside ``with Deadline(10) as d:`` every connection the request
uses is watched, and once the 10 s are over their sockets are shut down: a blocked read returns at
once, the request fails, and ``d.expired`` says why::

    >>> with Deadline(10.0) as d:                               # doctest: +SKIP
    ...     resp = session.get(url, stream=True, timeout=(10, 10))
    ...     body = resp.raw.read()
    >>> d.expired
    False

The session must be made with :func:`adapter` mounted (``make_session`` in client.py does it).
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Any, List, Optional, Type

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

#: How often an expired deadline shuts the sockets again (a connection made after it expired).
_REPEAT = 0.1
_current = threading.local()


class Deadline:
    """Watch the connections the current thread's request uses; shut them after ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._connections: List[Any] = []
        self._sockets: List[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._thread = threading.Thread(target=self._watch, name="envdoctor-deadline", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        _current.deadline = None
        with self._lock:  # no shutdown after this: the connections go back to the pool
            self._done.set()

    def watch(self, connection: Any) -> None:
        """Follow ``connection`` and the socket it holds now (http.client lets go of the socket
        once the headers of a ``Connection: close`` answer are read; the body still uses it)."""
        with self._lock:
            if connection not in self._connections:
                self._connections.append(connection)
            sock = getattr(connection, "sock", None)
            if sock is not None and sock not in self._sockets:
                self._sockets.append(sock)
        if self.expired:
            self._shut_all()

    def _watch(self) -> None:
        if self._done.wait(self.seconds):
            return
        self.expired = True
        while True:
            self._shut_all()
            if self._done.wait(_REPEAT):
                return

    def _shut_all(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            for connection in self._connections:  # a socket made since it was first watched
                sock = getattr(connection, "sock", None)
                if sock is not None and sock not in self._sockets:
                    self._sockets.append(sock)
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:  # already closed
                    pass


def _deadline() -> Optional[Deadline]:
    return getattr(_current, "deadline", None)


class _Watched:
    """A urllib3 connection that joins the deadline of the request that uses it."""

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        deadline = _deadline()
        if deadline is not None:
            deadline.watch(self)

    def request(self, *args: Any, **kwargs: Any) -> Any:
        deadline = _deadline()
        if deadline is not None:
            deadline.watch(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Watched, HTTPConnection):
    pass


class _HTTPSConnection(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections (direct or through an HTTP proxy) obey :class:`Deadline`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS has pools of its own; the read timeout bounds it
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager

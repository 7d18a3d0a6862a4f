"""One line for a failed request: DNS, refused, timeout, TLS, proxy, cut off, redirect loop.

>>> describe_exception(exc, "http://127.0.0.1:9/whl/cu121/torch/", 10)
'connection refused by 127.0.0.1:9 (http://127.0.0.1:9/whl/cu121/torch/)'
"""

from __future__ import annotations

import re
import socket
from typing import Any, List
from urllib.parse import urlsplit

from envdoctor.redact import mask_text, mask_url


class PageTooLarge(Exception):
    """A page bigger than the client's limit (a wrong URL pointing at a large file)."""


def describe_exception(exc: BaseException, url: str, timeout: float) -> str:
    """One line for a failed request, naming the host and never a credential.

    >>> describe_exception(requests.exceptions.ConnectTimeout(...), "https://mirror.example/whl/", 10)
    'timed out connecting to mirror.example after 10 s (https://mirror.example/whl/)'
    """
    import requests

    parts = urlsplit(url)
    host = parts.hostname or "?"
    where = f"{host}:{parts.port}" if parts.port else host
    shown = mask_url(url)
    chain = _exception_chain(exc)
    names = {type(e).__name__ for e in chain}

    def has(*types: type) -> bool:
        return any(isinstance(e, types) for e in chain)

    if isinstance(exc, PageTooLarge):
        return f"{shown}: {exc}"
    if isinstance(exc, requests.TooManyRedirects):
        return f"{shown}: redirect loop (more than 10 redirects)"
    if isinstance(
        exc, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)
    ):
        return f"not a usable index URL: {shown}"
    if isinstance(exc, requests.exceptions.SSLError) or "SSLError" in names:
        return f"TLS error talking to {where}: {_short_reason(chain)} ({shown})"
    if isinstance(exc, requests.exceptions.ProxyError):
        return f"the proxy failed to reach {where}: {_short_reason(chain)} ({shown})"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"timed out connecting to {where} after {timeout:g} s ({shown})"
    if isinstance(exc, requests.exceptions.ReadTimeout) or "ReadTimeoutError" in names:
        return f"{where} did not answer within {timeout:g} s ({shown})"
    if has(socket.gaierror) or "NameResolutionError" in names:
        return f"cannot resolve host {host} (DNS failure) ({shown})"
    if has(ConnectionRefusedError):
        return f"connection refused by {where} ({shown})"
    if has(ConnectionResetError):
        return f"connection reset by {where} ({shown})"
    if isinstance(
        exc, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)
    ) or names & {"IncompleteRead", "ProtocolError"}:
        return f"the answer from {where} was cut off (truncated) ({shown})"
    if has(TimeoutError, socket.timeout):
        return f"{where} did not answer within {timeout:g} s ({shown})"
    return f"network error talking to {where}: {_short_reason(chain)} ({shown})"


def _exception_chain(exc: BaseException) -> List[BaseException]:
    seen: List[BaseException] = []
    todo: List[Any] = [exc]
    while todo and len(seen) < 20:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo.extend([getattr(e, "reason", None), e.__cause__, e.__context__])
        todo.extend(a for a in e.args if isinstance(a, BaseException))
    return seen


def _short_reason(chain: List[BaseException]) -> str:
    root = chain[-1]
    text = str(root) or type(root).__name__
    text = re.sub(r"<urllib3\.[^>]*>:?\s*", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return mask_text(text[:160])

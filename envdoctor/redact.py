"""Masking: secrets always, personal details with ``--redact``.

>>> mask_url("https://user:s3cret@mirror.example/whl/cu128?token=abc")
'https://user:***@mirror.example/whl/cu128?token=***'
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Mapping, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

#: Variable names whose values are secrets.
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|CREDENTIAL|AUTH)", re.I)
_SECRET_QUERY = re.compile(r"(token|secret|password|passwd|key|auth|signature|sig|credential)", re.I)
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def mask_url(url: str) -> str:
    """Hide the password of ``user:password@host`` and secret-looking query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:{MASK}@{host}"
        else:
            netloc = f"{MASK}@{host}"  # a bare token used as the user name
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_QUERY.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_text(text: str) -> str:
    """Mask every URL with credentials inside free text."""
    return _URL.sub(lambda m: mask_url(m.group(0)), text)


def mask_data(obj: Any) -> Any:
    """``mask_text`` on every string of a JSON-ready document (dicts, lists)."""
    if isinstance(obj, str):
        return mask_text(obj)
    if isinstance(obj, list):
        return [mask_data(x) for x in obj]
    if isinstance(obj, dict):
        return {k: mask_data(v) for k, v in obj.items()}
    return obj


def mask_env(name: str, value: str) -> str:
    if _SECRET_NAME.search(name):
        return MASK
    return mask_text(value)


def mask_env_map(env: Mapping[str, str]) -> Dict[str, str]:
    return {k: mask_env(k, v) for k, v in env.items()}


class Redactor:
    """``--redact``: replace host name, user name, home paths, GPU UUIDs and serials in output."""

    _UUID = re.compile(r"(GPU-|MIG-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)

    def __init__(self, hostname: Optional[str], user: Optional[str], home: Optional[str],
                 serials: Iterable[str] = ()) -> None:
        self.pairs = []
        if home and home not in ("/", ""):
            self.pairs.append((home, "~"))
        for value, label in ((hostname, "<host>"), (user, "<user>")):
            if value and len(value) >= 2:
                self.pairs.append((value, label))
        for s in serials:
            if s:
                self.pairs.append((s, "<serial>"))

    def text(self, text: str) -> str:
        text = self._UUID.sub(lambda m: (m.group(1) or "") + "<uuid>", text)
        for value, label in self.pairs:
            if label == "~":
                text = text.replace(value, label)
            else:  # whole words only: a host called "vm" must not turn "nvml" into "n<host>l"
                text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", label, text)
        return text

    def data(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, list):
            return [self.data(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self.data(v) for k, v in obj.items()}
        return obj

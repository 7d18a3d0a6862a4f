"""Masking: secrets always, personal details with ``--redact``.

>>> mask_url("https://user:s3cret@mirror.example/whl/cu128?token=abc")
'https://user:***@mirror.example/whl/cu128?token=***'
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Mapping, Optional
from urllib.parse import unquote

MASK = "***"

#: Words that mark a variable name as holding a secret: HF_TOKEN, WANDB_API_KEY, CONDA_PASS,
#: NVIDIA_LICENSE_KEY, CUDA_PRIVATE_KEY, TORCH_SESSION_COOKIE, NGC_CLI_API_KEY, AWS_SECRET_ACCESS_KEY...
#: A name is split at "_", "-" and "."; any of these words, or one containing TOKEN, SECRET or PASSWORD
#: ("GITHUBTOKEN"), marks it. PWD and OLDPWD themselves are the working directory, not passwords.
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "PW",
        "PWD",
        "KEY",
        "KEYS",
        "APIKEY",
        "ACCESSKEY",
        "PRIVATE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "COOKIES",
        "SESSION",
        "SIGNATURE",
        "PAT",
        "JWT",
        "BEARER",
        "OTP",
        "SALT",
        "DSN",
    }
)
_SHELL_FOLDERS = frozenset({"PWD", "OLDPWD"})
_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIAL")
_SECRET_QUERY = re.compile(r"(token|secret|password|passwd|key|auth|signature|sig|credential)", re.I)
#: Credentials by their shape, wherever they appear (prefix-anchored, bounded: linear time).
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255}|"  # GitHub
    r"hf_[A-Za-z0-9]{30,255}|"  # Hugging Face
    r"(?:AKIA|ASIA)[0-9A-Z]{16}|"  # AWS access key id
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,255}|"  # OpenAI / Anthropic style
    r"xox[abprs]-[A-Za-z0-9-]{10,255}|"  # Slack
    r"glpat-[A-Za-z0-9_-]{20,255}|"  # GitLab
    r"eyJ[A-Za-z0-9_-]{8,2048}\.[A-Za-z0-9_-]{8,2048}\.[A-Za-z0-9_-]{8,2048}"  # a JWT
    r")"
)
#: "Authorization: Bearer <token>", "password=hunter2", "api_key: abc123": the value goes.
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{16,1024})")
_ASSIGNED = re.compile(r"(?i)\b(token|api[_-]?key|password|passwd|secret)(\s*[=:]\s*\"?)([^\s\"',;]{4,1024})")
#: Where a URL may start: the scheme is at most this long ("git+https" is 9).
_SCHEME_MAX = 32
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_END = frozenset(' \t\r\n"<>`')


def is_secret_name(name: str) -> bool:
    """``HF_TOKEN``, ``CONDA_PASS``, ``CONDA_PWD``, ``NVIDIA_LICENSE_KEY`` -> True; ``CUDA_HOME``,
    ``PWD`` -> False (the shell's ``PWD`` and ``OLDPWD`` are folders; ``PWD`` as a word of any
    other name is a password)."""
    upper = name.upper()
    if upper in _SHELL_FOLDERS:
        return False
    words = re.split(r"[_\-.]+", upper)
    return any(w in _SECRET_WORDS for w in words) or any(p in upper for p in _SECRET_PARTS)


def mask_url(url: str) -> str:
    """Hide the password of ``user:password@host`` and secret-looking query values.

    The password may hold ``#``, ``?`` or ``/`` unquoted (pip and uv take it so; a URL split would
    end the host part before the ``@`` and find no user part). The URL is never re-encoded: a
    broken one (``http://[::1/whl``) or one with a byte that is not UTF-8 is masked as it stands.

    >>> mask_url("https://me:p#ss/w?rd@mirror.example/simple/?key=abc&x=1")
    'https://me:***@mirror.example/simple/?key=***&x=1'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or not scheme[0].isalpha() or not all(c in _SCHEME_CHARS for c in scheme):
        return _mask_bare_userinfo(url)  # u:pw@proxy:1080
    at = _userinfo(rest)
    if at >= 0:
        userinfo = rest[:at]
        user = userinfo.split(":", 1)[0] + ":" if ":" in userinfo else ""  # else a bare token as the user
        rest = f"{user}{MASK}{rest[at:]}"
    q = rest.find("?", _authority_end(rest))
    if q >= 0:
        rest = rest[: q + 1] + _mask_query(rest[q + 1 :])
    return f"{scheme}://{rest}"


def _authority_end(rest: str) -> int:
    """Where the host part of ``rest`` (a URL after ``://``) ends: at ``/``, ``?`` or ``#``, but
    after the ``@`` of a user part whose password holds one of them."""
    at = _userinfo(rest)
    begin = at + 1 if at >= 0 else 0
    ends = [k for k in (rest.find(ch, begin) for ch in "/?#") if k >= 0]
    return min(ends) if ends else len(rest)


def _userinfo(rest: str) -> int:
    """The index of the ``@`` that ends the user part of ``rest``, or -1 without one.

    The standard form has its ``@`` before the first ``/``, ``?`` or ``#``; else a ``user:`` before
    that delimiter and an ``@`` after it with a host behind it (``u:p/w@host/simple``) is one too.
    """
    ends = [k for k in (rest.find(ch) for ch in "/?#") if k >= 0]
    end = min(ends) if ends else len(rest)
    at = rest.rfind("@", 0, end)
    if at >= 0:
        return at
    colon = rest.find(":", 0, end)
    if colon <= 0 or end == len(rest) or (rest[colon + 1 : end].isdigit() and end - colon <= 6 and rest[end] == "/"):
        return -1  # no delimiter, or a port before the path: https://host:8080/pkg@1.0
    at = rest.find("@", end)
    if at < 0:
        return -1
    slash = rest.find("/", at)
    at = rest.rfind("@", at, slash if slash >= 0 else len(rest))  # an @ in the password too: the last
    return at if _HOST_START.match(rest, at + 1) else -1


def _mask_query(query: str) -> str:
    """``key=abc&x=1`` -> ``key=***&x=1``: the value of each secret-looking key, as written."""
    if not _SECRET_QUERY.search(query):
        return query
    fragment = ""
    k = query.find("#")
    if k >= 0:
        query, fragment = query[:k], query[k:]
    pairs = []
    for pair in query.split("&"):
        key, eq, _value = pair.partition("=")
        if eq and _SECRET_QUERY.search(unquote(key, errors="replace")):
            pair = f"{key}={MASK}"
        pairs.append(pair)
    return "&".join(pairs) + fragment


#: What may follow the ``@`` of a user part: a host name, an IPv4 or an ``[IPv6]`` literal.
_HOST_START = re.compile(r"[A-Za-z0-9\[]")
#: Where a word ends for :func:`_mask_bare_userinfo` (the password may hold anything else).
_WORD_END = frozenset(" \t\r\n'\"<>`@")
_DIGESTS = ("sha256:", "sha384:", "sha512:")
#: What may stand before the user name inside a word: ``proxy=u:pw@h``, ``(u:pw@h``.
_USER_BEFORE = "=(,[{"


def _mask_bare_userinfo(text: str) -> str:
    """``user:password@host`` without a scheme, as curl and pip take a proxy (``ALL_PROXY=u:pw@proxy:1080``,
    pip.conf ``proxy = u:pw@proxy:3128``) -> ``user:***@host``. A password that starts with ``//``
    is a URL's (masked as one). Each ``@`` looks back at most to the one before it: linear.

    >>> _mask_bare_userinfo("proxy = u:pw@proxy:3128, git@github.com:x")
    'proxy = u:***@proxy:3128, git@github.com:x'
    """
    out = []
    i = 0
    prev = 0
    while True:
        at = text.find("@", prev)
        if at < 0:
            break
        start = at
        while start > prev and at - start < 1282 and text[start - 1] not in _WORD_END:
            start -= 1
        prev = at + 1
        word = text[start:at]
        colon = word.find(":")
        if colon < 0 or not _HOST_START.match(text, at + 1) or text.startswith(_DIGESTS, at + 1):
            continue  # no user:password, or an image's tag and digest (ubuntu:24.04@sha256:...)
        user, password = word[:colon], word[colon + 1 :]
        cut = max(user.rfind(c) for c in _USER_BEFORE)
        user = user[cut + 1 :]
        if not user or "/" in user or not password or password.startswith("//") or password == MASK:
            continue
        out.append(text[i : start + colon + 1])
        out.append(MASK)
        i = at
    out.append(text[i:])
    return "".join(out)


def mask_text(text: str) -> str:
    """Mask credentials inside free text: every URL's password and secret query values, conda
    token channels (``/t/<token>/``), and values shaped like known tokens. Linear in the text.

    >>> mask_text("export UV_INDEX_URL='https://me:pa'ss@mirror/simple'")
    "export UV_INDEX_URL='https://me:***@mirror/simple'"
    >>> mask_text("channel https://conda.anaconda.org/t/tk-1234abcd/nvidia ok")
    'channel https://conda.anaconda.org/t/***/nvidia ok'
    >>> mask_text("channels: t/TOKABC-1234/pytorch, conda-forge")
    'channels: t/***/pytorch, conda-forge'
    """
    if "://" in text:
        text = _mask_urls(text)
    if "@" in text and ":" in text:
        text = _mask_bare_userinfo(text)
    if "t/" in text:
        text = _mask_short_token_channels(text)
    if _maybe_token(text):
        text = _TOKEN_SHAPES.sub(MASK, text)
        text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        text = _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    return text


def _maybe_token(text: str) -> bool:
    lowered = text.lower()
    return any(p in text for p in ("_", "AKIA", "ASIA", "sk-", "xox", "eyJ", "glpat-")) or any(
        w in lowered for w in ("bearer", "basic", "token", "key", "pass", "secret")
    )


def _mask_urls(text: str) -> str:
    out = []
    i = 0
    while True:
        j = text.find("://", i)
        if j < 0:
            break
        start = j
        while start > i and j - start < _SCHEME_MAX and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < j and not text[start].isalpha():  # a scheme starts with a letter
            start += 1
        end = j + 3
        while end < len(text) and text[end] not in _URL_END:
            end += 1
        if start == j:  # "://" with no scheme before it: not a URL
            out.append(text[i:end])
            i = end
            continue
        url = text[start:end]
        quote = ""
        opened = text[start - 1] if start > 0 else ""
        if len(url) > 1 and (opened, url[-1]) in (("'", "'"), ("(", ")"), ("[", "]")):
            url, quote = url[:-1], url[-1]  # the quote or bracket that holds the URL
        out.append(text[i:start])
        out.append(_mask_token_path(mask_url(url)) + quote)
        i = end
    out.append(text[i:])
    return "".join(out)


#: What may stand before the ``t/`` of a channel's short name (``t/<token>/pytorch``, as conda
#: shows a token channel of anaconda.org): the start, white space, a quote, a bracket, a comma.
_SHORT_BEFORE = frozenset(" \t\n'\"([{,=:>")


def _mask_short_token_channels(text: str) -> str:
    """``t/<token>/channel`` at the start of a word -> ``t/***/channel``. Linear in the text."""
    out = []
    i = 0
    while True:
        k = text.find("t/", i)
        if k < 0:
            break
        if k > 0 and text[k - 1] not in _SHORT_BEFORE:
            out.append(text[i : k + 2])
            i = k + 2
            continue
        end = k + 2
        while end < len(text) and text[end] not in "/ \t\n'\",;)]}":
            end += 1
        token = text[k + 2 : end]
        out.append(text[i : k + 2])
        if token and token != MASK and end < len(text) and text[end] == "/":
            out.append(MASK)
        else:
            out.append(token)
        i = end
    out.append(text[i:])
    return "".join(out)


def _mask_token_path(url: str) -> str:
    """anaconda.org token channels carry the token as a path segment: ``/t/<token>/channel``."""
    k = url.find("/t/")
    if k < 0:
        return url
    rest = url[k + 3 :]
    seg_end = rest.find("/")
    token = rest if seg_end < 0 else rest[:seg_end]
    if not token or token == MASK:
        return url
    return url[: k + 3] + MASK + ("" if seg_end < 0 else rest[seg_end:])


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
    if is_secret_name(name):
        return MASK
    return mask_text(value)


def mask_env_map(env: Mapping[str, str]) -> Dict[str, str]:
    return {k: mask_env(k, v) for k, v in env.items()}


class Redactor:
    """``--redact``: replace host name, user name, home paths, GPU UUIDs and serials in output."""

    _UUID = re.compile(r"(GPU-|MIG-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)

    def __init__(
        self, hostname: Optional[str], user: Optional[str], home: Optional[str], serials: Iterable[str] = ()
    ) -> None:
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

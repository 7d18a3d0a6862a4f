"""The package indexes the user's pip and uv are really configured with, and the proxy.

Reads, through the probe Context, the files pip and uv read (in their order; see
``envdoctor/parse/indexconf.py`` for the rules and their sources) and the variables ``PIP_*``,
``UV_*``, ``HTTPS_PROXY``/``https_proxy``/``HTTP_PROXY``/``ALL_PROXY``/``NO_PROXY`` (requests honours
those by itself: they are only shown). Never runs pip or uv.

``index_config(ctx, prefix)`` gives the facts (every URL masked); ``configured_torch_base(ctx, prefix)``
the torch wheel base they imply, unmasked, for ``index`` and ``recommend`` to use when the user gives
no ``--index-url`` (``envdoctor.wheels.client.default_choice``).

>>> index_config(Context()).torch_base                                    # doctest: +SKIP
'https://mirror.example/pytorch/whl'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from envdoctor.facts.python import ConfiguredIndex, IndexConfig
from envdoctor.parse.indexconf import (
    MAX_BYTES,
    IndexConfigError,
    IndexSetting,
    key_true,
    parse_pip_config,
    parse_uv_config,
    pip_indexes,
    torch_base,
    uv_env_indexes,
    uv_indexes,
)
from envdoctor.probes.context import Context
from envdoctor.redact import mask_env, mask_url

PROXY_VARS = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)
#: How far up from the working directory uv's project configuration is looked for.
MAX_PARENTS = 32


@dataclass
class Settings:
    """What was read, raw (URLs unmasked): for the facts and for the default base."""

    pip: list[IndexSetting] = field(default_factory=list)
    uv: list[IndexSetting] = field(default_factory=list)
    proxies: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _home(ctx: Context) -> Optional[str]:
    home = ctx.env.get("HOME")
    return home.rstrip("/") if home and home.startswith("/") else None


def pip_config_files(ctx: Context, prefix: Optional[str]) -> list[str]:
    """The files pip reads, lowest priority first (pip's configuration.py); [] for PIP_CONFIG_FILE=/dev/null."""
    env, home = ctx.env, _home(ctx)
    named = env.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    dirs = [d for d in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d.startswith("/")]
    files = [f"{d.rstrip('/')}/pip/pip.conf" for d in dirs] + ["/etc/pip.conf"]
    if not (named and ctx.exists(named)) and home:
        config_home = env.get("XDG_CONFIG_HOME") or f"{home}/.config"
        files += [f"{home}/.pip/pip.conf", f"{config_home.rstrip('/')}/pip/pip.conf"]
    if prefix:
        files.append(f"{prefix.rstrip('/')}/pip.conf")
    if named:
        files.append(named)
    return files


def uv_config_files(ctx: Context) -> list[tuple[str, bool]]:
    """(path, is a pyproject.toml) of the uv files that apply, highest priority first."""
    env, home = ctx.env, _home(ctx)
    if key_true(env.get("UV_NO_CONFIG", "")):
        return []
    if env.get("UV_CONFIG_FILE"):
        return [(env["UV_CONFIG_FILE"], False)]
    out: list[tuple[str, bool]] = []
    for folder in _upwards(env.get("PWD")):
        if _is_file(ctx, f"{folder}/uv.toml"):
            out.append((f"{folder}/uv.toml", False))
            break
        if _has_tool_uv(ctx, f"{folder}/pyproject.toml"):
            out.append((f"{folder}/pyproject.toml", True))
            break
    if home:
        config_home = env.get("XDG_CONFIG_HOME") or f"{home}/.config"
        out.append((f"{config_home.rstrip('/')}/uv/uv.toml", False))
    dirs = [d for d in (env.get("XDG_CONFIG_DIRS") or "").split(":") if d.startswith("/")]
    system = [f"{d.rstrip('/')}/uv/uv.toml" for d in dirs] + ["/etc/uv/uv.toml"]
    first = next((p for p in system if _is_file(ctx, p)), None)  # only the first system file counts
    if first:
        out.append((first, False))
    return out


def _upwards(start: Optional[str]) -> list[str]:
    """``/a/b`` -> ["/a/b", "/a", ""] (the last one is the root, written without its slash).

    >>> _upwards("/home/ada/proj/")
    ['/home/ada/proj', '/home/ada', '/home', '']
    """
    if not start or not start.startswith("/"):
        return []
    parts = [p for p in start.split("/") if p][:MAX_PARENTS]
    return ["/" + "/".join(parts[:n]) if n else "" for n in range(len(parts), -1, -1)]


def _is_file(ctx: Context, path: str) -> bool:
    """A regular file (a FIFO or a device would block the read)."""
    try:
        return os.path.isfile(ctx.path(path))
    except (OSError, ValueError):
        return False


def _has_tool_uv(ctx: Context, path: str) -> bool:
    text = _text(ctx, path)
    return text is not None and "[tool.uv" in text


def _text(ctx: Context, path: str) -> Optional[str]:
    if not _is_file(ctx, path):
        return None
    text, _ = ctx.read(path, limit=MAX_BYTES + 1)
    return text


def read_settings(ctx: Context, prefix: Optional[str] = None) -> Settings:
    """Every index setting of pip and uv, and the proxies, raw."""
    s = Settings()
    parsed = []
    for path in pip_config_files(ctx, prefix):
        text = _text(ctx, path)
        if text is None:
            continue
        s.files.append(path)
        try:
            parsed.append((path, parse_pip_config(text, path)))
        except IndexConfigError as exc:
            s.problems.append(str(exc))
    s.pip, pip_proxy = pip_indexes(parsed, ctx.env)
    s.uv = uv_env_indexes(ctx.env)
    for path, pyproject in uv_config_files(ctx):
        text = _text(ctx, path)
        if text is None:
            continue
        s.files.append(path)
        try:
            settings = parse_uv_config(text, path, pyproject=pyproject)
        except IndexConfigError as exc:
            s.problems.append(str(exc))
            continue
        if settings is not None:
            s.uv += uv_indexes(settings, path)
    for name in PROXY_VARS:
        if ctx.env.get(name):
            s.proxies[name] = ctx.env[name]
    if pip_proxy is not None:
        s.proxies[f"pip proxy ({pip_proxy[1]})"] = pip_proxy[0]
    return s


def _candidates(s: Settings) -> list[IndexSetting]:
    """Where torch would come from, most telling first: a uv index torch is pinned to, pip's
    indexes (variables over files), uv's."""
    pinned = [i for i in s.uv if i.torch_pinned]
    return (
        pinned
        + [i for i in s.pip if i.role != "find-links"]
        + [i for i in s.uv if not i.torch_pinned and i.role != "find-links"]
    )


def torch_base_of(s: Settings) -> Optional[tuple[str, str]]:
    """(base, "PIP_INDEX_URL=<masked URL>") of the first configured torch wheel index, or None."""
    for setting in _candidates(s):
        base = torch_base(setting.url)
        if base:
            return base, f"{setting.source}: {mask_url(setting.url)}"
    return None


def configured_torch_base(ctx: Context, prefix: Optional[str] = None) -> Optional[tuple[str, str]]:
    """The torch wheel base the user's pip/uv configuration implies (unmasked) and where it is set."""
    return torch_base_of(read_settings(ctx, prefix))


def _fact(i: IndexSetting) -> ConfiguredIndex:
    return ConfiguredIndex(
        url=mask_url(i.url),
        role=i.role,
        tool=i.tool,
        source=i.source,
        name=i.name,
        explicit=i.explicit,
        torch_pinned=i.torch_pinned,
    )


def index_config(ctx: Context, prefix: Optional[str] = None) -> IndexConfig:
    """The facts: every configured index and proxy, masked; the torch base they imply."""
    return read_index_config(ctx, prefix)[0]


def read_index_config(ctx: Context, prefix: Optional[str] = None) -> tuple[IndexConfig, Optional[tuple[str, str]]]:
    """:func:`index_config` and :func:`configured_torch_base` from one read of the files: the facts
    (masked) and the torch base unmasked, for ``wheels.client.default_choice``."""
    s = read_settings(ctx, prefix)
    base = torch_base_of(s)
    return IndexConfig(
        indexes=tuple(_fact(i) for i in s.pip + s.uv),
        torch_base=mask_url(base[0]) if base else None,
        torch_base_source=base[1] if base else None,
        proxies={k: mask_env(k, v) for k, v in s.proxies.items()},
        files=tuple(s.files),
        problems=tuple(s.problems),
    ), base

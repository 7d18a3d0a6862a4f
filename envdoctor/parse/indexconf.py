"""Pure parsers of the package-index settings pip and uv read: pip.conf, uv.toml, pyproject's
``[tool.uv]``, and their environment variables; and the torch wheel base such a URL implies.

pip (https://pip.pypa.io/en/stable/topics/configuration/; pip's ``configuration.py``) reads INI files
in this order, a later one winning for the same ``section.key``: the global ones
(``$XDG_CONFIG_DIRS/pip/pip.conf``, default ``/etc/xdg/pip/pip.conf``, then ``/etc/pip.conf``), the user's
(``~/.pip/pip.conf``, then ``$XDG_CONFIG_HOME/pip/pip.conf``, default ``~/.config/pip/pip.conf``; not read
when ``PIP_CONFIG_FILE`` names a file that exists), the site's (``<sys.prefix>/pip.conf``), then
``PIP_CONFIG_FILE``; ``PIP_CONFIG_FILE=/dev/null`` reads none. For ``pip install`` the merged ``[global]``
keys apply, then ``[install]``, then ``PIP_*`` variables::

    [global]
    index-url = https://mirror.example/pytorch/whl/cu128
    extra-index-url = https://pypi.org/simple
        https://other.example/simple

uv (https://docs.astral.sh/uv/concepts/configuration-files/, .../concepts/indexes/) reads the project's
``uv.toml`` or the ``[tool.uv]`` table of its ``pyproject.toml`` (this folder or the nearest parent
with one), the user's ``~/.config/uv/uv.toml``, the system's ``/etc/uv/uv.toml``; ``UV_CONFIG_FILE``
replaces them, ``UV_NO_CONFIG`` disables them::

    [[tool.uv.index]]
    name = "pytorch-cu128"
    url = "https://download.pytorch.org/whl/cu128"
    explicit = true

    [tool.uv.sources]
    torch = [{ index = "pytorch-cu128" }]

Variables: ``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL`` (space-separated), ``UV_DEFAULT_INDEX``,
``UV_INDEX`` (space-separated, each ``URL`` or ``name=URL``), ``UV_INDEX_URL``, ``UV_EXTRA_INDEX_URL``
(the last two deprecated by uv, still read).
"""

from __future__ import annotations

import configparser
import re
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from envdoctor.facts.python import Role, Tool
from envdoctor.parse import ParseError

#: The largest config file read (pip.conf and uv.toml are a few lines), and the longest line.
MAX_BYTES = 256 * 1024
MAX_LINE = 8192
#: At most this many indexes are kept from one source.
MAX_INDEXES = 32


class IndexConfigError(ParseError):
    """A pip or uv configuration file that pip or uv would refuse too: one line saying where."""


@dataclass(frozen=True)
class IndexSetting:
    """One index URL as configured (the raw URL: mask it before showing it)."""

    url: str
    role: Role  # "index" (replaces PyPI), "extra" (in addition), "find-links"
    tool: Tool
    source: str  # "PIP_INDEX_URL", "/etc/pip.conf [global]", "uv.toml [[index]] pytorch"
    name: Optional[str] = None  # uv's index name
    explicit: bool = False  # uv: used only for the packages pinned to it in [tool.uv.sources]
    torch_pinned: bool = False  # uv: [tool.uv.sources] pins torch to this index


def _split_urls(value: str) -> list[str]:
    return [u for u in value.split() if u][:MAX_INDEXES]


def _defused(text: str, where: str) -> str:
    """The text with long runs of blanks shortened: configparser's option pattern (``.*?\\s*[=:]``)
    is quadratic in a run of blanks, so a hostile 100 kB line of spaces would take minutes."""
    if len(text) > MAX_BYTES:
        raise IndexConfigError(f"{where}: larger than {MAX_BYTES // 1024} KiB; pip.conf holds a few lines")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE:
            raise IndexConfigError(f"{where}: line {n} is longer than {MAX_LINE} characters")
        indent = len(line) - len(line.lstrip(" \t"))
        out.append(line[: min(indent, 8)] + re.sub(r"[ \t]{8,}", "   ", line[indent:]))
    return "\n".join(out)


def parse_pip_config(text: str, where: str = "pip.conf") -> dict[tuple[str, str], str]:
    """A pip.conf -> {(section, key): value}, keys normalized as pip does (lower case, "_" -> "-").

    >>> parse_pip_config("[global]\\nindex_url = https://mirror.example/whl/cu128\\n"
    ...                  "extra-index-url = https://a.example/simple\\n  https://b.example/simple\\n")
    {('global', 'index-url'): 'https://mirror.example/whl/cu128', \
('global', 'extra-index-url'): 'https://a.example/simple\\nhttps://b.example/simple'}
    >>> parse_pip_config("index-url = x")                      # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    IndexConfigError: pip.conf: not an INI file: a key before any [section] (line 1)
    """
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(_defused(text, where))
    except configparser.MissingSectionHeaderError as exc:
        raise IndexConfigError(f"{where}: not an INI file: a key before any [section] (line {exc.lineno})") from None
    except configparser.DuplicateOptionError as exc:
        raise IndexConfigError(
            f"{where}: line {exc.lineno}: {exc.option[:100]!r} is set twice in "
            f"[{exc.section[:100]}] (pip refuses the file too)"
        ) from None
    except configparser.DuplicateSectionError as exc:
        raise IndexConfigError(
            f"{where}: line {exc.lineno}: [{exc.section[:100]}] appears twice (pip refuses the file too)"
        ) from None
    except configparser.ParsingError as exc:
        lineno, line = exc.errors[0] if exc.errors else (0, "")
        raise IndexConfigError(f"{where}: line {lineno}: {str(line)[:100]} is not 'key = value'") from None
    except configparser.Error as exc:
        raise IndexConfigError(f"{where}: {type(exc).__name__}") from None
    out: dict[tuple[str, str], str] = {}
    for section in parser.sections():
        for key, value in parser.items(section, raw=True):
            out[(section.lower(), key.lower().replace("_", "-"))] = (value or "").strip()
    return out


def pip_indexes(
    files: Sequence[tuple[str, dict[tuple[str, str], str]]], env: Mapping[str, str]
) -> tuple[list[IndexSetting], Optional[tuple[str, str]]]:
    """The indexes ``pip install`` uses, from the parsed files in pip's order and the ``PIP_*``
    variables, and the proxy it is told to use ((value, source) or None).

    >>> found, proxy = pip_indexes([("/etc/pip.conf", {("global", "index-url"): "https://a/whl/cu126"}),
    ...                             ("~/.config/pip/pip.conf", {("install", "extra-index-url"): "https://b/simple"})],
    ...                            {"PIP_INDEX_URL": "https://c/whl/cu128"})
    >>> [(s.url, s.role, s.source) for s in found]                          # doctest: +NORMALIZE_WHITESPACE
    [('https://c/whl/cu128', 'index', 'PIP_INDEX_URL'),
     ('https://b/simple', 'extra', '~/.config/pip/pip.conf [install]')]
    """
    merged: dict[tuple[str, str], tuple[str, str]] = {}
    for path, data in files:  # later files win for the same section.key
        for (section, key), text in data.items():
            merged[(section, key)] = (text, f"{path} [{section}]")
    effective: dict[str, tuple[str, str]] = {}
    for section in ("global", "install"):  # [install] over [global], whatever the file
        for (sec, key), setting in merged.items():
            if sec == section:
                effective[key] = setting
    for key in ("index-url", "extra-index-url", "find-links", "proxy", "no-index"):
        var = "PIP_" + key.upper().replace("-", "_")
        if env.get(var):
            effective[key] = (env[var], var)
    found: list[IndexSetting] = []
    if key_true(effective.get("no-index", ("", ""))[0]):
        value, source = effective["no-index"]
        found.append(IndexSetting("", "index", "pip", f"{source}: no-index (only find-links)"))
    elif "index-url" in effective:
        value, source = effective["index-url"]
        found += [IndexSetting(u, "index", "pip", source) for u in _split_urls(value)[:1]]
    for key, role in (("extra-index-url", "extra"), ("find-links", "find-links")):
        if key in effective:
            value, source = effective[key]
            found += [IndexSetting(u, role, "pip", source) for u in _split_urls(value)]  # type: ignore[arg-type]
    return found, effective.get("proxy")


def key_true(value: str) -> bool:
    return value.strip().lower() in ("1", "yes", "true", "on")


def parse_uv_config(text: str, where: str = "uv.toml", pyproject: bool = False) -> Optional[dict[str, Any]]:
    """uv's settings table: the whole uv.toml, or ``[tool.uv]`` of a pyproject.toml (None when it has
    none: uv then looks further up, as for a folder without a file).

    >>> parse_uv_config('[tool.uv]\\nindex-url = "https://m/simple"\\n', pyproject=True)
    {'index-url': 'https://m/simple'}
    >>> parse_uv_config('[project]\\nname = "x"\\n', pyproject=True) is None
    True
    """
    _check_toml_shape(text, where)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IndexConfigError(f"{where}: not valid TOML: {str(exc)[:300]}") from None
    except RecursionError:
        raise IndexConfigError(f"{where}: nested too deeply to be a uv configuration") from None
    except ValueError as exc:  # an integer past Python's 4,300 digits for int(): no setting is one
        raise IndexConfigError(
            f"{where}: not a uv configuration: a number of more digits than Python reads ({str(exc)[:60]})"
        ) from None
    if pyproject:
        tool = data.get("tool")
        uv = tool.get("uv") if isinstance(tool, dict) else None
        return uv if isinstance(uv, dict) else None
    return data


#: Dotted parts a line of a uv.toml may hold outside its strings: tomllib is quadratic in the parts
#: of one dotted key ("a.a.a...": 4,000 parts take 0.4 s), and a real uv setting has a handful.
MAX_DOTS = 16
#: tomllib reads about 300 kB/s of dotted keys on one core: a larger file is refused, not parsed.
MAX_TOML_BYTES = 128 * 1024
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


def _check_toml_shape(text: str, where: str) -> None:
    """Refuse what would make tomllib slow: a file over MAX_TOML_BYTES, a line with a key of too many parts."""
    if len(text) > MAX_TOML_BYTES:
        raise IndexConfigError(
            f"{where}: larger than {MAX_TOML_BYTES // 1024} KiB; a uv configuration (or a "
            "pyproject.toml) holds a few screens"
        )
    for n, line in enumerate(text.splitlines(), 1):
        if line.count(".") > MAX_DOTS and _QUOTED.sub("", line).count(".") > MAX_DOTS:
            raise IndexConfigError(f"{where}: line {n}: a key of more than {MAX_DOTS} dotted parts")


def uv_indexes(settings: Mapping[str, Any], where: str) -> list[IndexSetting]:
    """The indexes of one uv settings table: ``[[index]]`` (with ``default``/``explicit`` and the
    ``[sources]`` pin of torch), ``index-url``, ``extra-index-url``, ``find-links`` and the ``[pip]``
    table's own ones (``uv pip install``). Malformed entries are skipped, as uv would refuse them.

    >>> s = {"index": [{"name": "pytorch", "url": "https://download.pytorch.org/whl/cu128", "explicit": True}],
    ...      "sources": {"torch": [{"index": "pytorch"}]}}
    >>> [(i.url, i.role, i.name, i.explicit, i.torch_pinned) for i in uv_indexes(s, "pyproject.toml")]
    [('https://download.pytorch.org/whl/cu128', 'extra', 'pytorch', True, True)]
    """
    out: list[IndexSetting] = []
    pinned = _torch_pins(settings.get("sources"))
    entries = settings.get("index")
    for entry in (entries if isinstance(entries, list) else [])[:MAX_INDEXES]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        name = entry.get("name") if isinstance(entry.get("name"), str) else None
        role: Role = "index" if entry.get("default") is True else "extra"
        out.append(
            IndexSetting(
                entry["url"],
                role,
                "uv",
                f"{where} [[index]]" + (f" {name}" if name else ""),
                name=name,
                explicit=entry.get("explicit") is True,
                torch_pinned=name is not None and name in pinned,
            )
        )
    for table, label in ((settings, where), (settings.get("pip"), f"{where} [pip]")):
        if not isinstance(table, Mapping):
            continue
        if isinstance(table.get("index-url"), str):
            out.append(IndexSetting(table["index-url"], "index", "uv", f"{label} index-url"))
        for key, role in (("extra-index-url", "extra"), ("find-links", "find-links")):
            value = table.get(key)
            urls = (
                [value]
                if isinstance(value, str)
                else [v for v in value if isinstance(v, str)]
                if isinstance(value, list)
                else []
            )
            out += [IndexSetting(u, role, "uv", f"{label} {key}") for u in urls[:MAX_INDEXES]]
    return out


def _torch_pins(sources: Any) -> set[str]:
    """Index names ``[tool.uv.sources]`` pins torch to (one table, or a list of them per marker)."""
    if not isinstance(sources, dict):
        return set()
    pin = sources.get("torch")
    pins = pin if isinstance(pin, list) else [pin]
    return {p["index"] for p in pins if isinstance(p, dict) and isinstance(p.get("index"), str)}


def uv_env_indexes(env: Mapping[str, str]) -> list[IndexSetting]:
    """``UV_DEFAULT_INDEX``, ``UV_INDEX_URL``, ``UV_INDEX`` (``name=URL`` or ``URL``), ``UV_EXTRA_INDEX_URL``.

    >>> [(i.url, i.role, i.name) for i in uv_env_indexes({"UV_INDEX": "pytorch=https://d/whl/cu126 https://e/simple"})]
    [('https://d/whl/cu126', 'extra', 'pytorch'), ('https://e/simple', 'extra', None)]
    """
    out: list[IndexSetting] = []
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if env.get(var):
            out += [IndexSetting(u, "index", "uv", var) for u in _split_urls(env[var])[:1]]
    for item in _split_urls(env.get("UV_INDEX", "")):
        name, sep, url = item.partition("=")
        if sep and "://" not in name and url:
            out.append(IndexSetting(url, "extra", "uv", "UV_INDEX", name=name))
        else:
            out.append(IndexSetting(item, "extra", "uv", "UV_INDEX"))
    extra = _split_urls(env.get("UV_EXTRA_INDEX_URL", ""))
    out += [IndexSetting(u, "extra", "uv", "UV_EXTRA_INDEX_URL") for u in extra]
    return out


_VARIANT = re.compile(r"^(?:cu\d{2,3}|cpu|cpu-cxx11-abi|xpu|rocm\d{1,2}(?:\.\d{1,2}){0,2})$")


def torch_base(url: str) -> Optional[str]:
    """The base envdoctor appends variants to, when ``url`` is a torch wheel index: ``<base>/cu128``
    (also ``<base>/nightly/cu130``, ``<base>/test/cu128``) or the base itself (``.../whl``). None for
    other indexes (a PyPI mirror's ``/simple``: it may hold torch, but not the variant folders).

    >>> torch_base("https://download.pytorch.org/whl/cu128/"), torch_base("https://m.example/pt/whl/nightly/cu130")
    ('https://download.pytorch.org/whl', 'https://m.example/pt/whl')
    >>> torch_base("https://download.pytorch.org/whl"), torch_base("https://pypi.org/simple")
    ('https://download.pytorch.org/whl', None)
    """
    url = url.strip()
    if "://" not in url or len(url) > 2048 or any(c.isspace() for c in url):
        return None
    head, _, rest = url.partition("://")
    path = rest.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    parts = path.split("/")
    if len(parts) < 2:
        return None
    if parts[-1] == "whl":
        return f"{head}://{path}"
    if _VARIANT.match(parts[-1]):
        parts = parts[:-1]
        if len(parts) >= 2 and parts[-1] in ("nightly", "test"):
            parts = parts[:-1]
        if len(parts) >= 2:
            return f"{head}://{'/'.join(parts)}"
    return None

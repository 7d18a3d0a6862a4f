"""MODEL as ``envdoctor fit`` takes it: a config.json, a directory holding one, or a bundled name.

>>> resolve_model("Llama-3.1-8B").name
'Llama-3.1-8B'
>>> resolve_model("lama-3.1-8b")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
envdoctor.fit.config.ConfigError: 'lama-3.1-8b' is not ... (did you mean: Llama-3.1-8B, Llama-3.1-70B?); ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envdoctor.fit.config import MAX_CONFIG_CHARS, ConfigError, spec_from_text
from envdoctor.fit.models import bundled_models
from envdoctor.fit.spec import ModelSpec
from envdoctor.parse.jsontext import loads_object


def read_config_file(path: Path) -> ModelSpec:
    """One config.json from disk (bounded; undecodable bytes replaced, then refused by the JSON reader)."""
    return spec_from_text(_read_text(path), str(path))


def _read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_CONFIG_CHARS:
            raise ConfigError(f"{path}: {path.stat().st_size} bytes is too large for a config.json "
                              f"(the limit is {MAX_CONFIG_CHARS})")
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_CONFIG_CHARS + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return text


#: the longest MODEL argument taken (a path or a name; Linux's PATH_MAX is 4096)
MAX_MODEL_ARG = 4096


def _kind(arg: str) -> tuple[Path, str]:
    """(the path MODEL names, "dir", "file" or "none"); a name too long for the file system, or with
    a NUL, is no file (a bundled name or a Hub id then)."""
    if len(arg) > MAX_MODEL_ARG:
        raise ConfigError(f"MODEL is {len(arg):,} characters long; give a config.json path, a directory or a "
                          f"bundled name of at most {MAX_MODEL_ARG}")
    try:
        path = Path(arg).expanduser()
        if path.is_dir():
            return path, "dir"
        if path.is_file():
            return path, "file"
    except (OSError, ValueError, RuntimeError):   # ENAMETOOLONG, a NUL, an unknown ~user
        return Path(), "none"
    return path, "none"


def resolve_model(arg: str) -> ModelSpec:
    """The spec for MODEL; ConfigError (one line, with near-miss suggestions) when it is none of the three."""
    path, kind = _kind(arg)
    if kind == "dir":
        config = path / "config.json"
        if not config.is_file():
            raise ConfigError(f"{path}: a directory without config.json")
        return read_config_file(config)
    if kind == "file":
        return read_config_file(path)
    found = bundled_models().find(arg)
    if found is not None:
        return found.spec
    hint = bundled_models().suggest(arg[:200])
    did = f" (did you mean: {', '.join(hint)}?)" if hint else ""
    shown = repr(arg) if len(arg) <= 80 else repr(arg[:80]) + f"... ({len(arg)} characters)"
    raise ConfigError(f"{shown} is not a file, a directory or a bundled model{did}; "
                      "`envdoctor fit --list` shows them")


def resolve_model_config(arg: str) -> tuple[ModelSpec, dict[str, Any]]:
    """The spec for MODEL and the config.json object it came from (a bundled row's fields with its
    ``architectures``), for ``--measure``, which builds the model from it."""
    path, kind = _kind(arg)
    if kind == "dir":
        path = path / "config.json"
    if kind in ("dir", "file") and path.is_file():
        text = _read_text(path)
        spec = spec_from_text(text, str(path))
        return spec, dict(loads_object(text, what=str(path), max_chars=MAX_CONFIG_CHARS))
    spec = resolve_model(arg)
    found = bundled_models().find(arg)
    return spec, dict(found.config) if found is not None else {}

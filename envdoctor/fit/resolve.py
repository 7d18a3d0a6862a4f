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


def resolve_model(arg: str) -> ModelSpec:
    """The spec for MODEL; ConfigError (one line, with near-miss suggestions) when it is none of the three."""
    path = Path(arg).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise ConfigError(f"{path}: a directory without config.json")
        return read_config_file(config)
    if path.is_file():
        return read_config_file(path)
    found = bundled_models().find(arg)
    if found is not None:
        return found.spec
    hint = bundled_models().suggest(arg)
    did = f" (did you mean: {', '.join(hint)}?)" if hint else ""
    raise ConfigError(f"{arg!r} is not a file, a directory or a bundled model{did}; "
                      "`envdoctor fit --list` shows them")


def resolve_model_config(arg: str) -> tuple[ModelSpec, dict[str, Any]]:
    """The spec for MODEL and the config.json object it came from (a bundled row's fields with its
    ``architectures``), for ``--measure``, which builds the model from it."""
    path = Path(arg).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        text = _read_text(path)
        spec = spec_from_text(text, str(path))
        return spec, dict(loads_object(text, what=str(path), max_chars=MAX_CONFIG_CHARS))
    spec = resolve_model(arg)
    found = bundled_models().find(arg)
    return spec, dict(found.config) if found is not None else {}

"""MODEL as ``envdoctor fit`` takes it: a config.json, a directory holding one, a Hugging Face id
found in the local Hub cache (never the network), or a bundled name.

A Hub id (``meta-llama/Llama-3.1-8B``) is looked up in ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``,
else ``~/.cache/huggingface/hub``, as ``models--ORG--NAME/snapshots/<rev>/config.json`` (the
revision ``refs/main`` names, else the newest snapshot); then in the bundled list by its name part;
not found, one line names where it looked and how to get the config.

>>> resolve_model("Llama-3.1-8B").name
'Llama-3.1-8B'
>>> resolve_model("lama-3.1-8b")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
envdoctor.fit.config.ConfigError: 'lama-3.1-8b' is not ... (did you mean: Llama-3.1-8B, Llama-3.1-70B?); ...
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envdoctor.fit.config import MAX_CONFIG_CHARS, ConfigError, spec_from_config, spec_from_text
from envdoctor.fit.models import bundled_models
from envdoctor.fit.spec import ModelSpec
from envdoctor.parse.jsontext import loads_object


def read_config_file(path: Path) -> ModelSpec:
    """One config.json from disk (bounded; undecodable bytes replaced, then refused by the JSON reader)."""
    return spec_from_text(_read_text(path), str(path))


def _read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_CONFIG_CHARS:
            raise ConfigError(
                f"{path}: {path.stat().st_size} bytes is too large for a config.json (the limit is {MAX_CONFIG_CHARS})"
            )
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
        raise ConfigError(
            f"MODEL is {len(arg):,} characters long; give a config.json path, a directory or a "
            f"bundled name of at most {MAX_MODEL_ARG}"
        )
    try:
        path = Path(arg).expanduser()
        if path.is_dir():
            return path, "dir"
        if path.is_file():
            return path, "file"
    except (OSError, ValueError, RuntimeError):  # ENAMETOOLONG, a NUL, an unknown ~user
        return Path(), "none"
    return path, "none"


#: a Hub repository id: ORG/NAME, each part as the Hub allows them
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$", re.ASCII)


def hub_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where huggingface_hub keeps downloads: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def hub_config(repo_id: str, environ: Mapping[str, str] | None = None) -> tuple[Path | None, Path]:
    """(the cached config.json of ``repo_id`` or None, the cache folder looked in)."""
    cache = hub_cache_dir(environ)
    if not _HUB_ID.match(repo_id) or ".." in repo_id:
        return None, cache
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    try:
        ref = (folder / "refs" / "main").read_text(encoding="ascii", errors="replace").strip()[:100]
        if ref and re.fullmatch(r"[0-9a-f]{7,64}", ref) and (folder / "snapshots" / ref / "config.json").is_file():
            return folder / "snapshots" / ref / "config.json", cache
    except OSError:
        pass
    try:
        found = [c for c in (folder / "snapshots").glob("*/config.json") if c.is_file()]
    except OSError:
        found = []
    if not found:
        return None, cache
    return max(found, key=lambda c: c.stat().st_mtime), cache


def _cached_spec(repo_id: str, path: Path) -> tuple[ModelSpec, dict[str, Any]]:
    """The spec of a cached config.json, named by its Hub id, its source the file."""
    text = _read_text(path)
    spec_from_text(text, str(path))  # the one reader's errors, naming the file
    data = dict(loads_object(text, what=str(path), max_chars=MAX_CONFIG_CHARS))
    return spec_from_config(data, f"Hub cache: {path}", name=repo_id), data


def _not_found(arg: str, cache: Path) -> ConfigError:
    folder = cache / ("models--" + arg.replace("/", "--"))
    try:
        present = folder.is_dir()
    except OSError:
        present = False
    if present:
        # the repository was fetched in part (a gated model refused, an interrupted download, a
        # snapshot whose blob was deleted): say so, not "not in the cache"
        return ConfigError(
            f"{arg!r}: its Hugging Face cache folder {folder} holds no readable config.json (a gated "
            "model needs its license accepted on the Hub and `huggingface-cli login`; an interrupted "
            f"download or a deleted blob leaves the same) nor is it a bundled model; get it with "
            f"`huggingface-cli download {arg} config.json` (envdoctor never downloads)"
        )
    return ConfigError(
        f"{arg!r} is not in the local Hugging Face cache (looked in {cache / 'models--'}"
        f"{arg.replace('/', '--')}; HF_HUB_CACHE or HF_HOME move it) nor a bundled model; "
        f"get its config with `huggingface-cli download {arg} config.json` (envdoctor never downloads)"
    )


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
    if _HUB_ID.match(arg):
        cached, cache = hub_config(arg)
        if cached is not None:
            return _cached_spec(arg, cached)[0]
        bundled = bundled_models().find(arg)
        if bundled is not None:
            return bundled.spec
        raise _not_found(arg, cache)
    found = bundled_models().find(arg)
    if found is not None:
        return found.spec
    hint = bundled_models().suggest(arg[:200])
    did = f" (did you mean: {', '.join(hint)}?)" if hint else ""
    shown = repr(arg) if len(arg) <= 80 else repr(arg[:80]) + f"... ({len(arg)} characters)"
    raise ConfigError(f"{shown} is not a file, a directory or a bundled model{did}; `envdoctor fit --list` shows them")


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
    if kind == "none" and _HUB_ID.match(arg):
        cached, _ = hub_config(arg)
        if cached is not None:
            return _cached_spec(arg, cached)
    spec = resolve_model(arg)
    found = bundled_models().find(arg)
    return spec, dict(found.config) if found is not None else {}

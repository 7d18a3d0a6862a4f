"""The bundled model shapes of ``data/models.toml``: loading, checking, looking up by name.

>>> m = bundled_models().find("llama-3.1-8b")
>>> m.name, m.spec.layers, m.spec.kv_heads
('Llama-3.1-8B', 32, 8)
>>> bundled_models().suggest("lama-3.1-8")[:1]
['Llama-3.1-8B']
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envdoctor.fit.config import ConfigError, spec_from_config
from envdoctor.fit.spec import ModelSpec
from envdoctor.table import TableError
from envdoctor.table.schema import Doc, check_top, fields, rows
from envdoctor.table.source import read_doc

_SOURCE = re.compile(r"^https://huggingface\.co/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/blob/main/config\.json$")
_META = {"name": "str", "aliases": "strs?", "architecture": "str", "confirmed_from": "str?"}


@dataclass(frozen=True)
class BundledModel:
    name: str
    aliases: tuple[str, ...]
    spec: ModelSpec
    source: str
    confirmed_from: str | None
    checked: str
    unconfirmed: bool
    unconfirmed_fields: tuple[str, ...]
    note: str | None
    #: the config.json fields of the row (with ``architectures``), as ``--measure`` hands them to transformers
    config: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class ModelTable:
    models: tuple[BundledModel, ...]

    def find(self, name: str) -> BundledModel | None:
        """By name or alias, case-insensitively; an ``org/Name`` Hub id matches by its last part."""
        key = _key(name)
        tail = _key(name.rsplit("/", 1)[-1])
        for m in self.models:
            keys = {_key(m.name)} | {_key(a) for a in m.aliases}
            if key in keys or tail in keys:
                return m
        return None

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """The closest bundled names to a miss."""
        names = {_key(m.name): m.name for m in self.models}
        for m in self.models:
            for a in m.aliases:
                names.setdefault(_key(a), m.name)
        hits = difflib.get_close_matches(_key(name.rsplit("/", 1)[-1]), list(names), n=n * 2, cutoff=0.6)
        return list(dict.fromkeys(names[h] for h in hits))[:n]


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def read_models(path: Path) -> ModelTable:
    """Load and check one models.toml; TableError naming file, row and field when it is broken."""
    return models_of(read_doc(path.name, path.parent))


def models_of(doc: Doc) -> ModelTable:
    check_top(doc, ("model",))
    out: list[BundledModel] = []
    seen: dict[str, str] = {}
    for where, raw in rows(doc, "model", "name"):
        if not isinstance(raw.get("config"), dict):
            raise where.fail("missing table 'config' (the config.json fields)")
        v = fields(where, {k: val for k, val in raw.items() if k != "config"}, _META)
        if not _SOURCE.match(v["source"]):
            raise where.fail(
                f"field 'source': {v['source']!r} is not https://huggingface.co/<org>/<model>/blob/main/config.json"
            )
        if not v["confirmed_from"] and not v["unconfirmed"]:
            raise where.fail(
                "no 'confirmed_from': name the stored copy the values were checked against, "
                "or mark the row unconfirmed = true"
            )
        config: dict[str, Any] = dict(raw["config"])
        for f in v["unconfirmed_fields"]:
            if f not in config:
                raise where.fail(f"field 'unconfirmed_fields': {f!r} is not in [model.config]")
        if "architectures" in config:
            raise where.fail("give the architecture as 'architecture', not config.architectures")
        config["architectures"] = [v["architecture"]]
        try:
            spec = spec_from_config(config, f"{doc.label}: {v['name']}", name=v["name"])
        except ConfigError as exc:
            raise TableError(str(exc)) from None
        spec = _with_source(spec, f"bundled: {v['name']} ({v['source']})")
        for key in (v["name"], *v["aliases"]):
            k = _key(key)
            if k in seen:
                raise where.fail(f"name {key!r} is already used by {seen[k]!r}")
            seen[k] = v["name"]
        out.append(
            BundledModel(
                name=v["name"],
                aliases=tuple(v["aliases"]),
                spec=spec,
                source=v["source"],
                confirmed_from=v["confirmed_from"],
                checked=v["checked"],
                unconfirmed=v["unconfirmed"],
                unconfirmed_fields=v["unconfirmed_fields"],
                note=v["note"],
                config=config,
            )
        )
    return ModelTable(tuple(out))


def _with_source(spec: ModelSpec, source: str) -> ModelSpec:
    return replace(spec, source=source)


@functools.lru_cache(maxsize=1)
def _default() -> ModelTable:
    return models_of(read_doc("models.toml"))


def bundled_models(path: Path | None = None) -> ModelTable:
    """The bundled table (loaded once), or a fresh load of ``path``."""
    return _default() if path is None else read_models(path)

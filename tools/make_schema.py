"""Write the JSON Schema of every document envdoctor writes from the document's type.

    python tools/make_schema.py            # writes every generated schema into envdoctor/schemas/
    python tools/make_schema.py burn       # writes envdoctor/schemas/burn-1.json
    python tools/make_schema.py --check    # writes nothing; exit 1 and a diff where a file and its type disagree

A document's type is a frozen dataclass (``BurnResult``, written by ``to_data``) or a ``TypedDict``
(the documents built as dicts; the function that builds one returns it, so mypy checks it), in the
module that builds the document. The schema says what the type says: each field's JSON type
(``Optional[int]`` is an integer or null, ``Tuple[X, ...]``/``List[X]`` an array of X, ``Dict[str, X]``
an object of X, a ``Literal`` its values), the keys a ``TypedDict`` requires (a ``total=False``
class holds the others), every dataclass field required (``to_data`` writes them all) unless the
document is read back (``read_back``: then the fields with a default, which ``from_data`` fills, are
not, but those the class lists in ``json_required``), nested types as ``$defs``, the first paragraph
of a docstring as the description, and what a type cannot say (a pattern, a range, a reference to
another schema file) from ``envdoctor.doctypes.Json`` words next to the type.
tests/test_documents.py regenerates each one and fails when the file on disk is out of date, so a
new field is one line of its type and one run of this script.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Dict, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envdoctor.doctypes import Json  # noqa: E402 - after the checkout is on the path

#: document kind -> (the type of the whole document: a dataclass or a TypedDict, the title, who prints
#: it[, options: "top": words of the top level the type cannot say (a rule across keys); "read_back":
#: the document is read back through facts.serde.from_data, so a dataclass field with a default is
#: not required unless the class names it in ``json_required``; "more": a TypedDict of the keys the
#: builder adds to a dataclass's own])
GENERATED: Dict[str, Tuple[Any, ...]] = {
    "burn": ("envdoctor.burn.facts:BurnResult", "envdoctor burn result", "envdoctor burn --json"),
    "diag": ("envdoctor.diag.facts:DiagResult", "envdoctor diag result", "envdoctor diag --json"),
    "explain": ("envdoctor.cli.explain:ExplainDocument", "envdoctor explain --json", "envdoctor explain --json"),
    "table": (
        "envdoctor.render.table:TableDocument",
        "envdoctor table answer",
        "envdoctor table KIND [KEY] --json",
        {"top": "envdoctor.render.table:TABLE_ONE_ROW"},
    ),
    "dockerfile": (
        "envdoctor.dockerfile.render:DockerfileDocument",
        "envdoctor Dockerfile lint",
        "envdoctor dockerfile [PATH] --json",
    ),
    "verify": ("envdoctor.render.verify:VerifyDocument", "envdoctor verify result", "envdoctor verify --json"),
    "index": ("envdoctor.cli.index:IndexDocument", "envdoctor index answer", "envdoctor index VARIANT... --json"),
    "plan": ("envdoctor.render.plan:PlanDocument", "envdoctor install plan", "envdoctor recommend --json"),
    "bench": (
        "envdoctor.bench.facts:BenchResult",
        "envdoctor bench result",
        "envdoctor bench --json",
        {"read_back": True},
    ),
    "profile": (
        "envdoctor.profile.render:ProfileDocument",
        "envdoctor profile result",
        "envdoctor profile --json -- python SCRIPT ARGS",
    ),
    "comms": (
        "envdoctor.links.facts_comms:CommsResult",
        "envdoctor collectives",
        "envdoctor comms --json",
        {"read_back": True, "more": "envdoctor.links.render_comms:CommsKeys"},
    ),
    "topo": (
        "envdoctor.links.render_topo:TopoDocument",
        "envdoctor topology",
        "envdoctor topo --json",
        {"read_back": True},
    ),
    "fleet": (
        "envdoctor.fleet.render:FleetDocument",
        "envdoctor fleet result",
        "envdoctor fleet REPORT.json... --json` and by rank 0 of `envdoctor fleet --gather --json",
    ),
    "report": (
        "envdoctor.render.json:ReportDocument",
        "envdoctor report",
        "envdoctor check --json",
        {"read_back": True, "top": "envdoctor.render.json:REPORT_WHEN"},
    ),
    "snapshot": (
        "envdoctor.snapshot:SnapshotDocument",
        "envdoctor snapshot",
        "envdoctor snapshot (a report plus 'snapshot' and, with --bench, 'bench')",
        {"top": "envdoctor.snapshot:SNAPSHOT_IS_A_REPORT"},
    ),
    "stale": (
        "envdoctor.render.table:StaleAnswer",
        "envdoctor table staleness answer",
        "envdoctor table --stale --json",
    ),
    "fit": ("envdoctor.fit.render:FitDocument", "envdoctor fit estimate", "envdoctor fit --json"),
}


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(__import__(module, fromlist=[name]), name)


#: (the document's $defs, a name) -> the type it names there
_OWNERS: Dict[Tuple[int, str], Any] = {}
#: ``Optional[int]`` and ``int | None`` (a dataclass under ``from __future__ import annotations``, Python
#: 3.10+: types.UnionType, not typing.Union) are one schema, never an empty one that takes anything
_UNIONS = (typing.Union, getattr(types, "UnionType", typing.Union))
#: [True] while the document being generated is one envdoctor reads back (GENERATED's "read_back")
_READ_BACK: list = [False]


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _nullable(schema: Dict[str, Any]) -> Dict[str, Any]:
    """``schema`` or null: a type list grows "null", an enum None, anything else an anyOf."""
    if "type" in schema and "$ref" not in schema and "anyOf" not in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return {**schema, "type": kinds + ["null"]}
    if set(schema) == {"enum"}:
        return {"enum": list(schema["enum"]) + [None]}
    return {"anyOf": [schema, {"type": "null"}]}


def _type(tp: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        marks = [m for m in getattr(tp, "__metadata__", ()) if isinstance(m, Json)]
        schema = _type(args[0], defs)
        for mark in marks:
            schema = dict(mark.whole) if mark.whole is not None else schema
            words = dict(mark.words)
            if "read_back" in words:  # what a document read back may hold there instead (older values)
                older = words.pop("read_back")
                if _READ_BACK[0]:
                    schema = dict(older)
            if "extends" in words:
                schema = {"allOf": [_type(words.pop("extends"), defs), schema]}
            schema.update(words)
        return schema
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if origin in _UNIONS:
        options = [_type(a, defs) for a in args if a is not type(None)]
        if all(set(o) == {"type"} and isinstance(o["type"], str) for o in options) and len(options) > 1:
            schema = {"type": [o["type"] for o in options]}
        else:
            schema = options[0] if len(options) == 1 else {"anyOf": options}
        return _nullable(schema) if type(None) in args else schema
    if origin is typing.Literal:
        return {"enum": list(args)}
    if dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        name = tp.__name__
        owner = _OWNERS.setdefault((id(defs), name), tp)  # cleared for each document
        if owner is not tp:  # two types of one name in one document: the module tells them apart
            name = f"{tp.__module__.rpartition('.')[2]}.{name}"
            _OWNERS.setdefault((id(defs), name), tp)
        if name not in defs:
            defs[name] = {}  # a placeholder first: recursive models terminate
            defs[name] = _object(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    if origin in (tuple, list):
        item = args[0] if args else Any
        return {"type": "array", "items": _type(item, defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1] if len(args) == 2 else Any, defs)}
    if tp is dict:
        return {"type": "object"}
    return {
        bool: {"type": "boolean"},
        int: {"type": "integer"},
        float: {"type": "number"},
        str: {"type": "string"},
    }.get(tp, {})


def _doc(cls: Any) -> str:
    """The first paragraph of ``cls``'s docstring on one line (not a dataclass's generated signature)."""
    text = (cls.__doc__ or "").strip()
    if not text or text.startswith(f"{cls.__name__}("):
        return ""
    return " ".join(text.split("\n\n")[0].split())


def _object(cls: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    if _is_typeddict(cls):
        names = list(hints)
        required = [n for n in names if n in cls.__required_keys__]
    else:
        fields = dataclasses.fields(cls)
        names = [f.name for f in fields]
        missing = dataclasses.MISSING
        # a document read back through facts.serde.from_data (which fills a missing field with its
        # default) may lack a field with a default: one written before the field existed still reads
        always = set(getattr(cls, "json_required", ()))
        required = [
            f.name
            for f in fields
            if not (_READ_BACK and _READ_BACK[0])
            or f.name in always
            or (f.default is missing and f.default_factory is missing)
        ]
    props = {name: _type(hints[name], defs) for name in names}
    out: Dict[str, Any] = {"type": "object", "required": required, "properties": props}
    doc = _doc(cls)
    if doc:
        out["description"] = doc
    return out


def schema_for(kind: str) -> Dict[str, Any]:
    from envdoctor.documents import DOCUMENTS

    target, title, emitted_by = GENERATED[kind][:3]
    options: Dict[str, Any] = dict(GENERATED[kind][3]) if len(GENERATED[kind]) > 3 else {}
    extra: Dict[str, Any] = dict(_load(options["top"])) if "top" in options else {}
    row = next(d for d in DOCUMENTS if d.kind == kind)
    defs: Dict[str, Any] = {}
    cls = _load(target)
    _READ_BACK[:] = [bool(options.get("read_back"))]
    _OWNERS.clear()
    top = _object(cls, defs)
    if "more" in options:  # the keys the builder adds to the dataclass's own (a TypedDict)
        more = _object(_load(options["more"]), defs)
        top["properties"].update(more["properties"])
        top["required"] += [k for k in more["required"] if k not in top["required"]]
    if "schema" in top["properties"]:  # a snapshot has its report's (through allOf)
        top["properties"]["schema"] = {"const": row.schema}
    about = _doc(cls)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://envdoctor.invalid/schemas/{row.file}",
        "title": f"{title}, schema {row.schema}",
        "description": (f"{about} " if about else "") + f"Printed by `{emitted_by}`; generated from {target} by "
        "tools/make_schema.py (do not edit by hand). Keys are stable within the schema version; "
        "new keys may be added.",
        **{k: v for k, v in top.items() if k != "description"},
        **extra,
        "$defs": dict(sorted(defs.items())),
    }


def text_for(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=1) + "\n"


def check(kinds: list, folder: Path) -> list:
    """The unified diffs of each schema file in ``folder`` that differs from what its type generates."""
    from envdoctor.documents import DOCUMENTS

    diffs = []
    for kind in kinds:
        row = next(d for d in DOCUMENTS if d.kind == kind)
        path = folder / row.file
        on_disk = path.read_text() if path.is_file() else ""
        wanted = text_for(kind)
        if on_disk != wanted:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        on_disk.splitlines(True),
                        wanted.splitlines(True),
                        f"{path} (on disk)",
                        f"{path} (from {GENERATED[kind][0]})",
                    )
                )
            )
    return diffs


def main(argv: list) -> int:
    args = list(argv[1:])
    checking = "--check" in args
    folder = ROOT / "envdoctor" / "schemas"
    if "--schemas" in args:  # another folder (tests point it at a tampered copy)
        at = args.index("--schemas")
        folder = Path(args[at + 1])
        del args[at : at + 2]
    kinds = [a for a in args if a != "--check"] or list(GENERATED)
    for kind in kinds:
        if kind not in GENERATED:
            print(f"no generated schema for {kind!r}; these are: {', '.join(GENERATED)}", file=sys.stderr)
            return 2
    if checking:
        diffs = check(kinds, folder)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            print(
                f"{len(diffs)} schema file(s) disagree with their types: run python tools/make_schema.py",
                file=sys.stderr,
            )
        return 1 if diffs else 0
    from envdoctor.documents import DOCUMENTS

    for kind in kinds:
        row = next(d for d in DOCUMENTS if d.kind == kind)
        path = folder / row.file
        path.write_text(text_for(kind))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

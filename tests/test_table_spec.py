"""Each data row is declared once, as its dataclass: the loaders read a row's fields and kinds from
the dataclass (``table.schema.spec_of``), not from a second list of strings."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional, Tuple

import pytest

from envdoctor.table.schema import TableError, Where, fields, spec_of

ROOT = Path(__file__).resolve().parent.parent
LOADERS = (
    "envdoctor/table/load.py",
    "envdoctor/table/health.py",
    "envdoctor/table/security.py",
    "envdoctor/links/table.py",
)
#: Rows still spelled out: a distro row joins its [[family]] row (docs/data.md), two specs for one class.
SPELLED_OUT = {("envdoctor/table/load.py", "load_distros")}


@dataclass(frozen=True)
class Row:
    name: str
    kind: Literal["a", "b"]
    size: Optional[int]
    tags: Tuple[str, ...]
    ranges: Tuple[Tuple[int, int], ...]
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    fast: bool = False
    extra: Tuple[str, ...] = ()
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


def test_the_spec_comes_from_the_fields_and_their_types():
    assert spec_of(Row) == {
        "name": "str",
        "kind": "str",
        "size": "int?",
        "tags": "strs",
        "ranges": "ranges",
        "fast": "bool?",
        "extra": "strs?",
    }
    assert spec_of(Row, derived=("kind",), loose=("name",), strict=("size",), renamed=(("tags", "tag"),)) == {
        "name": "str?",
        "size": "int",
        "tag": "strs",
        "ranges": "ranges",
        "fast": "bool?",
        "extra": "strs?",
    }


def test_a_field_added_to_the_dataclass_is_read_from_the_file_with_no_second_edit():
    @dataclass(frozen=True)
    class Wider(Row):
        watts: Optional[float] = None

    where = Where("data/x.toml", "row", "r1")
    raw = {"name": "r1", "kind": "a", "tags": [], "ranges": [], "source": "https://x", "checked": "2026-12-01"}
    assert fields(where, dict(raw, watts=300.0), spec_of(Wider))["watts"] == 300.0
    with pytest.raises(TableError, match="unknown field 'watts'"):
        fields(where, dict(raw, watts=300.0), spec_of(Row))
    with pytest.raises(TableError, match="missing field 'name'"):
        fields(where, {k: v for k, v in raw.items() if k != "name"}, spec_of(Row))


def _calls(path: str):
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fields" and len(node.args) >= 3:
                    yield func.name, node


@pytest.mark.parametrize("path", LOADERS)
def test_no_loader_spells_a_row_out_again(path):
    """Before: every loader passed a dict literal of "str"/"int?" kinds beside the dataclass."""
    spelled = [
        f"{path}:{node.lineno} ({name})"
        for name, node in _calls(path)
        if isinstance(node.args[2], ast.Dict) and (path, name) not in SPELLED_OUT
    ]
    assert spelled == []


# --- one sourced-row base, one loader (issue 25) ---------------------------------------------------------


def _row_classes():
    import dataclasses
    import importlib

    for name in (
        "envdoctor.table.rows",
        "envdoctor.links.table",
        "envdoctor.stack.table",
        "envdoctor.table.health",
        "envdoctor.table.security",
    ):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                dataclasses.is_dataclass(value)
                and value.__module__ == name
                and {"source", "checked"} <= {f.name for f in dataclasses.fields(value)}
            ):
                yield value


def test_every_sourced_row_of_every_table_file_has_the_one_base():
    from envdoctor.table.rows import Sourced

    found = list(_row_classes())
    assert len(found) >= 25
    assert [c.__name__ for c in found if not issubclass(c, Sourced)] == []
    import ast

    package = Path(__file__).resolve().parent.parent / "envdoctor"
    bases = [
        f"{p.relative_to(package)}:{n.name}"
        for p in package.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.ClassDef) and n.name in ("_Sourced", "Sourced")
    ]
    assert bases == ["table/rows.py:Sourced"]


def test_row_fields_are_declared_once_by_their_dataclass_and_loaded_by_the_one_loader():
    """stack/table.py wrote every row's fields twice (its dataclass and a string spec); links/table.py,
    stack/table.py and table/health.py each wrote table/load.py's loop out again."""
    import re

    package = Path(__file__).resolve().parent.parent / "envdoctor"
    for name in ("links/table.py", "stack/table.py", "table/health.py", "table/security.py"):
        text = (package / name).read_text()
        assert not re.search(r'"(str|strs|int|bool|float)\??"', text), name
        assert "load_rows(" in text and "make_row(" not in text.replace("make_row(Xid", ""), name


def test_the_one_loader_names_file_row_and_field_and_runs_the_row_check(tmp_path):
    from envdoctor.stack.table import GccRow
    from envdoctor.table.schema import Doc, TableError, load_rows, version

    doc = Doc(
        "extensions.toml",
        {
            "gcc": [
                {"cuda": "12.4", "max_gcc": 13, "source": "https://x", "checked": "2026-12-01"},
                {"cuda": "12.x", "max_gcc": 13, "source": "https://x", "checked": "2026-12-01"},
            ]
        },
    )
    with pytest.raises(TableError, match=r"extensions.toml.*12.x.*cuda"):
        load_rows(doc, "gcc", "cuda", GccRow, lambda where, v: version(where, "cuda", v["cuda"]))
    doc.data["gcc"].pop()
    (row,) = load_rows(doc, "gcc", "cuda", GccRow)
    assert (row.cuda, row.max_gcc, row.confirmed()) == ("12.4", 13, True)

"""``envdoctor explain``: what a finding code means, and the list of every code.

$ envdoctor explain ED205
ED205  torch's CUDA is newer than the driver runs
  area       torch (ED200-ED299: torch in the target Python: ...)
  severity   error or warning
...
"""

from __future__ import annotations

import textwrap
from typing import Annotated, List, Literal, Sequence, Tuple, TypedDict

import click

from envdoctor.clicore import color_option, use_color
from envdoctor.codes import CODES, RANGES, Code, lookup, range_of
from envdoctor.doctypes import Json
from envdoctor.findings import Severity
from envdoctor.style import Style

WIDTH = 96


def _wrap(text: str) -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)


def explain_lines(entry: Code, style: Style) -> List[str]:
    where = range_of(entry.code)
    span = f" (ED{where.first}-ED{where.last}: {where.covers})" if where else ""
    lines = [
        style(f"{entry.code}  {entry.title}", "bold"),
        f"  area       {entry.area}{span}",
        f"  severity   {' or '.join(entry.severities)}",
        "",
        style("What it means", "bold"),
        *_wrap(entry.meaning),
    ]
    if entry.fix:
        lines += ["", style("Fix", "bold"), *_wrap(entry.fix)]
    if entry.references:
        lines += ["", style("Reference", "bold"), *(f"  {url}" for url in entry.references)]
    return lines


def list_lines(style: Style) -> List[str]:
    lines = [style(f"{'code':<7}{'severity':<17}{'area':<11}title", "bold")]
    for entry in CODES.values():
        lines.append(f"{entry.code:<7}{'/'.join(entry.severities):<17}{entry.area:<11}{entry.title}")
    lines += ["", style("Ranges", "bold")]
    for r in RANGES:
        mark = "  (reserved: no code yet)" if r.reserved else ""
        lines.append(f"ED{r.first}-ED{r.last}  {r.name}: {r.covers}{mark}")
    lines += ["", "envdoctor explain CODE says more about one code."]
    return lines


class ExplainCode(TypedDict):
    """One code of the registry (envdoctor/codes.py), as ``envdoctor explain CODE`` prints it."""

    code: Annotated[str, Json(pattern="^ED[0-9]{3}$")]
    title: str
    area: str
    severities: Annotated[List[Severity], Json(minItems=1)]
    meaning: str
    fix: str
    references: List[str]


class ExplainRange(TypedDict):
    """A range of codes: ``{"first": "ED100", "last": "ED199", "name": "driver", ...}``."""

    first: str
    last: str
    name: str
    covers: str
    reserved: bool


class ExplainSummary(TypedDict):
    exit_code: Literal[0]


class _ExplainKeys(TypedDict):
    schema: str
    codes: List[ExplainCode]
    ranges: List[ExplainRange]


class ExplainDocument(_ExplainKeys, total=False):
    """The codes asked for (every code without one) and every range of codes."""

    #: what ``documents.stamp`` adds to every document written
    envdoctor_version: str
    created_at: str
    summary: ExplainSummary


def explain_document(entries: Sequence[Code]) -> ExplainDocument:
    """``{"schema": "envdoctor.explain/1", "codes": [{"code": "ED205", "title": ..., ...}], "ranges": [...]}``."""
    from envdoctor.documents import document

    return {
        "schema": document("explain").schema,
        "codes": [
            {
                "code": e.code,
                "title": e.title,
                "area": e.area,
                "severities": list(e.severities),
                "meaning": e.meaning,
                "fix": e.fix,
                "references": list(e.references),
            }
            for e in entries
        ],
        "ranges": [
            {"first": f"ED{r.first}", "last": f"ED{r.last}", "name": r.name, "covers": r.covers, "reserved": r.reserved}
            for r in RANGES
        ],
    }


def _known(ctx: click.Context, param: click.Parameter, values: Tuple[str, ...]) -> Tuple[Code, ...]:
    entries = []
    for value in values:
        entry = lookup(value)
        if entry is None:
            where = range_of(value)
            why = (
                f"no finding has this code (ED{where.first}-ED{where.last} are {where.name} codes)"
                if where
                else "finding codes look like ED205"
            )
            raise click.BadParameter(f"{value}: {why}; envdoctor explain --list shows every code")
        entries.append(entry)
    return tuple(entries)


@click.command("explain")
@click.argument("codes", nargs=-1, metavar="[CODE]...", callback=_known)
@color_option
@click.option("--list", "as_list", is_flag=True, help="List every finding code (the default without CODE).")
@click.option("--json", "as_json", is_flag=True, help='Print the versioned JSON document ("envdoctor.explain/1").')
def explain(codes: Tuple[Code, ...], as_list: bool, as_json: bool) -> None:
    """What a finding CODE means (ED205: title, area, severity, meaning, fix, reference).

    Without a CODE, or with --list, every code envdoctor emits and the ranges they come from.
    """
    if as_json:
        from envdoctor.documents import dumps, stamp

        chosen = tuple(CODES.values()) if as_list or not codes else codes
        click.echo(dumps(stamp(explain_document(chosen), 0)))
        return
    style = Style(use_color())
    if as_list or not codes:
        click.echo("\n".join(list_lines(style)))
        return
    click.echo("\n\n".join("\n".join(explain_lines(entry, style)) for entry in codes))

"""``envdoctor schema NAME``: the JSON Schema of one document, self-contained.

    $ envdoctor schema bench | python -c 'import json, sys, jsonschema; ...'
    $ envdoctor schema nosuch
    envdoctor schema: no document named 'nosuch'; the names are: report, snapshot, plan, ...

Every ``$ref`` resolves inside the printed schema (``documents.schema``), so plain
``jsonschema.validate(doc, schema)`` needs no registry and no network. Exit 0, or 2 for an
unknown NAME.
"""

from __future__ import annotations

import sys

import click

from envdoctor.clicore import EXIT_USAGE
from envdoctor.documents import DOCUMENTS, dumps
from envdoctor.documents import schema as schema_of


@click.command("schema")
@click.argument("name", required=False, metavar="NAME")
def schema(name: str | None) -> None:
    """Print the JSON Schema of document NAME (report, plan, bench, ...); without NAME, list them."""
    kinds = [row.kind for row in DOCUMENTS]
    if name is None:
        for row in DOCUMENTS:
            click.echo(f"{row.kind:<9} {row.schema:<22} {row.emitted_by}")
        return
    if name not in kinds:
        shown = name if len(name) <= 40 else name[:40] + "..."
        click.echo(f"envdoctor schema: no document named {shown!r}; the names are: {', '.join(kinds)}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(dumps(schema_of(name)))

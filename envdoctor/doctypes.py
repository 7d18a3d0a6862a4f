"""The words a document's typed definition adds to its JSON Schema, for ``tools/make_schema.py``.

Every JSON document envdoctor writes has one typed definition in the module that builds it: a
frozen dataclass (``BurnResult``, written by ``to_data``) or a ``TypedDict`` (the documents built
as dicts: the function that builds one returns it, so mypy checks the keys and their types). The
schema in ``envdoctor/schemas/`` is generated from it; what a Python type cannot say (a pattern, a
range, a reference to another document's schema) is said next to the type with :class:`Json`::

    class ExplainCode(TypedDict):
        code: Annotated[str, Json(pattern="^ED[0-9]{3}$")]
        severities: Annotated[List[Severity], Json(minItems=1)]
        bench: Annotated[Optional[Dict[str, Any]], Json.raw({"oneOf": [{"type": "null"}, {"$ref": "bench-1.json"}]})]

A ``TypedDict`` key is required unless the class is ``total=False`` (a base class holds the required
keys); a dataclass field is always required (``to_data`` writes them all). Nothing here is read at
run time: ``typing.get_type_hints`` drops these annotations, so ``facts.serde`` reads the plain type.
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, Mapping, Optional, TypedDict


class Json:
    """JSON Schema words for one type: ``Json(pattern="^ED[0-9]{3}$", description="...")`` adds them
    to the schema its type gives; ``Json.raw({...})`` is the whole schema instead (a ``$ref`` to
    another document's schema file, a ``oneOf`` the type cannot say)."""

    __slots__ = ("words", "whole")

    def __init__(self, whole: Optional[Mapping[str, Any]] = None, **words: Any) -> None:
        self.words: Dict[str, Any] = dict(words)
        self.whole: Optional[Dict[str, Any]] = dict(whole) if whole is not None else None

    @classmethod
    def raw(cls, schema: Mapping[str, Any], **words: Any) -> Json:
        """The schema ``schema`` (and ``words``, a description) instead of the one the type gives."""
        return cls(schema, **words)

    @classmethod
    def extends(cls, base: Any, **words: Any) -> Json:
        """The type's object and ``base``'s (a dataclass: ``Finding``) both: a finding written with
        more keys (``to_data(finding)`` and its ``line``) is ``Annotated[LintLine, Json.extends(Finding)]``."""
        return cls(None, extends=base, **words)

    def __repr__(self) -> str:
        return f"Json({self.whole!r}, **{self.words!r})" if self.whole is not None else f"Json(**{self.words!r})"


#: a count of things: an integer, 0 or more
Count = Annotated[int, Json(minimum=0)]


class FindingsSummary(TypedDict):
    """How many findings of each severity a document holds, and the exit code they give."""

    errors: Count
    warnings: Count
    info: Count
    #: 2: the command could not run for a named reason (topo and comms without a GPU); 3: a bug in
    #: envdoctor (ED900) -- README's exit-code table
    exit_code: Annotated[int, Json(enum=[0, 1, 2, 3])]


#: the values a probe writes into a report, as a report read back must hold them (report.py checks them)
DriverVersion = Annotated[Optional[str], Json(pattern="^([0-9]{1,4}(\\.[0-9]{1,4}){0,3})?$")]
ComputeCapability = Annotated[Optional[str], Json(pattern="^([0-9]{1,2}\\.[0-9]{1,2})?$")]
GlibcVersion = Annotated[Optional[str], Json(pattern="^([0-9]{1,2}\\.[0-9]{1,3})?$")]
ShortText = Annotated[Optional[str], Json(maxLength=64)]


__all__ = ["ComputeCapability", "Count", "DriverVersion", "FindingsSummary", "GlibcVersion", "Json", "ShortText"]

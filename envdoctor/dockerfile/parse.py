"""A bounded parser of real Dockerfile syntax (pure: text in, :class:`Dockerfile` out).

What BuildKit's frontend accepts, as far as a lint needs it: parser directives (``# syntax=``,
``# escape=``), comments, line continuations (with the escape character, comment lines inside a
continuation dropped), heredocs (``RUN <<EOF``, ``<<-EOF``, quoted terminators, several on a line),
exec (JSON) form, leading ``--flags``, multi-stage builds (``FROM ... AS name``, ``FROM name``),
ARG scoping (global ARGs for FROM lines, a stage's ``ARG NAME`` importing the global default,
``--build-arg`` overrides) and ``$VAR``/``${VAR}``/``${VAR:-word}``/``${VAR:+word}`` substitution::

    >>> d = parse("ARG CUDA=12.8.1\\nFROM nvidia/cuda:${CUDA}-devel-ubuntu22.04 AS build\\n"
    ...           "RUN pip install \\\\\\n  torch\\n")
    >>> d.stages[0].base, d.stages[0].name, d.instructions[-1].line, d.instructions[-1].args
    ('nvidia/cuda:12.8.1-devel-ubuntu22.04', 'build', 3, 'pip install torch')

Everything is bounded (size, lines, instructions, heredocs, expansion); what docker build would
refuse raises :class:`DockerfileError` with the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

MAX_BYTES = 1024 * 1024
MAX_LINES = 50_000
MAX_INSTRUCTIONS = 5_000
MAX_VALUE = 64 * 1024
INSTRUCTIONS = (
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
)
_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$")
_HEREDOC = re.compile(r"<<(-?)(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class DockerfileError(ValueError):
    """The text is not a Dockerfile docker build would accept: one line, naming the line."""


@dataclass(frozen=True)
class Heredoc:
    name: str
    body: str
    expand: bool = True  # an unquoted terminator: the shell expands variables in the body
    strip_tabs: bool = False  # <<-: leading tabs removed


@dataclass(frozen=True)
class Instruction:
    """One instruction: ``Instruction(12, 14, "RUN", "pip install torch", ...)``; ``args`` has the
    continuations joined and the leading --flags removed (they are in ``flags``)."""

    line: int
    end_line: int
    keyword: str
    args: str
    flags: Tuple[str, ...] = ()
    exec_form: Optional[Tuple[str, ...]] = None
    heredocs: Tuple[Heredoc, ...] = ()
    stage: int = -1  # the stage it belongs to (-1: before the first FROM)
    #: RUN: the ARG and ENV values in effect (what its shell sees), ENV winning
    scope: Dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The shell text it runs: the exec form joined, or the args, then each heredoc body."""
        head = " ".join(self.exec_form) if self.exec_form is not None else self.args
        return "\n".join([head] + [h.body for h in self.heredocs])


@dataclass(frozen=True)
class Stage:
    index: int
    line: int
    base: str  # the FROM image after ARG substitution ("nvidia/cuda:12.8.1-devel-ubuntu22.04")
    name: Optional[str] = None  # AS name
    platform: Optional[str] = None
    parent: Optional[int] = None  # FROM an earlier stage: its index
    unresolved: Tuple[str, ...] = ()  # ARGs in the FROM line with no value
    env: Dict[str, str] = field(default_factory=dict)  # ENV at the end of the stage (inherited included)
    args: Dict[str, str] = field(default_factory=dict)  # ARG values in the stage


@dataclass(frozen=True)
class Dockerfile:
    directives: Dict[str, str]
    escape: str
    global_args: Dict[str, str]
    stages: Tuple[Stage, ...]
    instructions: Tuple[Instruction, ...]

    def stage_of(self, ins: Instruction) -> Optional[Stage]:
        return self.stages[ins.stage] if 0 <= ins.stage < len(self.stages) else None

    def chain(self, stage: Stage) -> List[Stage]:
        """The stage and the stages it is built FROM, nearest first."""
        out = [stage]
        while out[-1].parent is not None and len(out) <= len(self.stages):
            out.append(self.stages[out[-1].parent])
        return out


def expand(text: str, values: Mapping[str, str], missing: Optional[List[str]] = None, escape: str = "\\") -> str:
    """Docker's substitution: ``expand("${A:-x}/$B", {"B": "b"})`` -> "x/b"; an unknown name is ""
    (and is added to ``missing``); the escape character before ``$`` keeps it literal."""
    out: List[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == escape and i + 1 < len(text) and text[i + 1] == "$":
            out.append("$")
            i += 2
            continue
        if ch == "$":
            m = _VAR.match(text, i)
            if m:
                name = m.group(1) or m.group(4)
                op, word = m.group(2), m.group(3) or ""
                have = name in values
                value = values.get(name, "")
                if op in (":-", "-"):
                    value = value if (value if op == ":-" else have) else word
                elif op in (":+", "+"):
                    value = word if (value if op == ":+" else have) else ""
                elif not have and missing is not None:
                    missing.append(name)
                out.append(value)
                i = m.end()
                if sum(len(p) for p in out) > MAX_VALUE:
                    raise DockerfileError(f"a substitution grows past {MAX_VALUE} characters")
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _pairs(text: str, legacy_ok: bool) -> List[Tuple[str, str]]:
    """``ENV A=1 B="two words"`` -> [("A", "1"), ("B", "two words")]; legacy ``ENV A 1 2`` -> [("A", "1 2")]."""
    import shlex

    text = text.strip()
    if legacy_ok and "=" not in text.split(None, 1)[0]:
        parts = text.split(None, 1)
        return [(parts[0], _unquote(parts[1].strip()) if len(parts) > 1 else "")]
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        tokens = text.split()
    out = []
    for tok in tokens:
        key, sep, value = tok.partition("=")
        out.append((key, value if sep else ""))
    return out


def _flags(args: str) -> Tuple[Tuple[str, ...], str]:
    flags = []
    rest = args.lstrip()
    while rest.startswith("--"):
        tok, _, tail = rest.partition(" ")
        if "=" not in tok and tok != "--":
            break
        flags.append(tok)
        rest = tail.lstrip()
    return tuple(flags), rest


def _logical_lines(lines: List[str], escape: str, start: int) -> List[Tuple[int, int, str, List[str]]]:
    """(first line, last line, joined text, following raw lines consumed as heredoc) per instruction."""
    out: List[Tuple[int, int, str, List[str]]] = []
    i = start
    n = len(lines)
    while i < n:
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        first = i
        parts: List[str] = []
        while True:
            text = lines[i]
            body = text.rstrip()
            if body.endswith(escape):
                parts.append(body[:-1])
                i += 1
                while i < n and (not lines[i].strip() or lines[i].strip().startswith("#")):
                    i += 1  # comment and empty lines inside a continuation are dropped
                if i >= n:
                    break
                continue
            parts.append(text)
            break
        joined = " ".join(p.strip() for p in parts if p.strip())
        last = min(i, n - 1)
        i += 1
        if not joined:  # a lone continuation: nothing to run
            continue
        bodies: List[str] = []
        docs = _HEREDOC.findall(joined) if joined.split(None, 1)[0].upper() in ("RUN", "COPY", "ADD") else []
        for strip, _quote, name in docs:
            body_lines = []
            while i < n:
                line = lines[i]
                check = line.lstrip("\t") if strip else line
                if check.rstrip("\r") == name:
                    break
                body_lines.append(line.lstrip("\t") if strip else line)
                i += 1
            else:
                raise DockerfileError(f"line {first + 1}: the heredoc <<{name} is never closed (no line '{name}')")
            last = i
            i += 1
            bodies.append("\n".join(body_lines))
        out.append((first + 1, last + 1, joined, bodies))
        if len(out) > MAX_INSTRUCTIONS:
            raise DockerfileError(f"more than {MAX_INSTRUCTIONS} instructions")
    return out


def parse(text: str, build_args: Optional[Mapping[str, str]] = None) -> Dockerfile:
    """The Dockerfile of ``text``; ``build_args`` as ``docker build --build-arg K=V`` gives them."""
    if len(text) > MAX_BYTES:
        raise DockerfileError(f"larger than {MAX_BYTES // 1024} KiB: not a Dockerfile envdoctor reads")
    if "\0" in text:
        raise DockerfileError("it holds NUL bytes: not a text file")
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise DockerfileError(f"more than {MAX_LINES} lines")
    directives: Dict[str, str] = {}
    start = 0
    while start < len(lines):  # directives: only at the very top, before anything else
        m = _DIRECTIVE.match(lines[start].strip())
        if not m or m.group(1).lower() in directives:
            break
        directives[m.group(1).lower()] = m.group(2)
        start += 1
    escape = directives.get("escape", "\\")
    if escape not in ("\\", "`"):
        raise DockerfileError(f"line 1: escape={escape!r}: the escape character must be \\ or `")
    overrides = dict(build_args or {})
    global_args: Dict[str, str] = {}
    stages: List[Stage] = []
    instructions: List[Instruction] = []
    env: Dict[str, str] = {}
    args: Dict[str, str] = {}
    names: Dict[str, int] = {}
    for first, last, joined, bodies in _logical_lines(lines, escape, start):
        keyword, _, rest = joined.partition(" ")
        kw = keyword.upper()
        if kw not in INSTRUCTIONS:
            raise DockerfileError(f"line {first}: unknown instruction {keyword!r} (docker build stops here too)")
        flags, rest = _flags(rest) if kw in ("RUN", "COPY", "ADD", "FROM") else ((), rest.strip())
        exec_form = None
        if kw in ("RUN", "CMD", "ENTRYPOINT", "SHELL") and rest.startswith("["):
            try:
                value = json.loads(rest)
            except ValueError:
                value = None
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                exec_form = tuple(value)
        heredocs = tuple(
            Heredoc(name, body, expand=not quote, strip_tabs=bool(strip))
            for (strip, quote, name), body in zip(_HEREDOC.findall(joined) if bodies else [], bodies)
        )
        if kw == "FROM":
            if stages:
                stages[-1] = _close(stages[-1], env, args)
            missing: List[str] = []
            words = rest.split()
            if not words:
                raise DockerfileError(f"line {first}: FROM names no image")
            scope = dict(global_args)
            base = expand(words[0], scope, missing, escape)
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            platform = next((f.split("=", 1)[1] for f in flags if f.startswith("--platform=")), None)
            parent = names.get(base.lower())
            env = dict(stages[parent].env) if parent is not None else {}
            args = {}
            stage = Stage(len(stages), first, base, name, platform, parent, tuple(missing))
            stages.append(stage)
            if name:
                names[name.lower()] = stage.index
        elif kw == "ARG":
            raw_pairs = {tok.split("=", 1)[0]: tok for tok in rest.split()}
            for key, value in _pairs(rest, legacy_ok=False):
                if not key:
                    continue
                given = overrides.get(key)
                has_value = "=" in raw_pairs.get(key, "")
                if not stages:
                    default = expand(value, global_args, None, escape) if has_value else None
                    chosen = given if given is not None else default
                    if chosen is not None:  # ARG NAME without a value and no --build-arg: unset
                        global_args[key] = chosen
                else:
                    scope = {**global_args, **args, **env}
                    default = expand(value, scope, None, escape) if has_value else global_args.get(key)
                    chosen = given if given is not None else default
                    if chosen is not None:
                        args[key] = chosen
        elif kw == "ENV" and stages:
            for key, value in _pairs(rest, legacy_ok=True):
                if key:
                    env[key] = expand(value, {**args, **env}, None, escape)[:MAX_VALUE]
        scope = {**args, **env} if kw == "RUN" else {}
        instructions.append(Instruction(first, last, kw, rest, flags, exec_form, heredocs, len(stages) - 1, scope))
    if not stages:
        raise DockerfileError("no FROM instruction: not a Dockerfile docker build accepts")
    stages[-1] = _close(stages[-1], env, args)
    return Dockerfile(directives, escape, global_args, tuple(stages), tuple(instructions))


def _close(stage: Stage, env: Dict[str, str], args: Dict[str, str]) -> Stage:
    from dataclasses import replace

    return replace(stage, env=dict(env), args=dict(args))

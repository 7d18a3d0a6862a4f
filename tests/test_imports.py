"""The package's imports, read from the source (ast): no circle, the core never imports up into a
plugin, a plugin never imports the command layer, and every plugin folder has the one shape.

The floors (docs/internals.md, "Plugins and the core"), each importing only its own and lower ones:

- the command layer: ``envdoctor/cli/`` (and ``envdoctor/__main__.py``);
- the plugins: the measurement plugins ``envdoctor/<plugin>/`` (:data:`PLUGINS`, each a folder of one
  shape), and check's layered pipeline (:data:`CHECK`: probes, rules, renderers, inspect, snapshot,
  verify), which uses the links plugin's probe, rules and rows and the bench plugin's document; a
  plugin may use another's parts, never in a circle;
- the core: every other module, ``envdoctor/clicore.py`` among them (the shared options and
  parameter types: the one core module besides the command layer that imports Click), and
  ``envdoctor/probes/context.py`` (:data:`CORE_ELSEWHERE`: the Context every floor reads).

Every import counts, at module level or inside a function, and so do the modules the lazy
registries name by string (``cli.COMMANDS``, ``probes.AREAS``, ``rules.PLUGIN_MODULES``).
The scripts sent to the target interpreter (``envdoctor/child/*.py`` but its ``__init__`` and
``__main__``, ``envdoctor/<plugin>/target/``) import nothing of envdoctor and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envdoctor"

#: The measurement plugins, each a folder of one shape.
PLUGINS = ("bench", "burn", "diag", "fit", "fleet", "links", "profile")

#: check's pipeline: a plugin too, layered in folders of its own rather than of the shape.
CHECK = ("probes", "rules", "render", "inspect", "snapshot", "verify")

#: Core modules that live in check's folders.
CORE_ELSEWHERE = {"envdoctor.probes.context"}

#: Imports that still run up, each with the step that removes it; the test fails once one is gone,
#: so that the entry goes too.
KNOWN_UPWARD: Set[Tuple[str, str]] = set()

#: The files of the shape: ``ROLE.py``, or ``ROLE_PART.py`` where a plugin has several (links:
#: ``command_topo.py`` and ``command_comms.py``); and ``target/`` with the target scripts.
SHAPE = ("command", "host", "analysis", "rules", "render", "facts")

#: Modules besides the command layer that may import Click: the core's shared options, and each
#: plugin's command modules.
CLICK_CORE = {"envdoctor.clicore"}


def _is_target_script(path: Path) -> bool:
    rel = path.relative_to(PACKAGE).parts
    if rel[0] == "child":
        return rel[-1] not in ("__init__.py", "__main__.py")
    return len(rel) >= 3 and rel[1] == "target"


def _modules() -> Dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts or _is_target_script(path):
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _known(name: str) -> str:
    """The module ``name`` is or is in: ``envdoctor.bench.host.run_bench`` -> ``envdoctor.bench.host``."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path) -> List[Tuple[str, int]]:
    """``(imported module, line)`` for every import of envdoctor in the file, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.extend((_known(a.name), node.lineno) for a in node.names if a.name.split(".")[0] == "envdoctor")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "envdoctor":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if full in MODULES else _known(base), node.lineno))
    return [(m, line) for m, line in out if m and m != module]


def _named_by_string() -> List[Tuple[str, str]]:
    """The lazy registries: (registry module, module it loads by name)."""
    from envdoctor import cli, probes, rules

    edges = []
    for target in cli.COMMANDS.values():
        name = target.split(":")[0]
        edges.append(("envdoctor.cli", name if "." in name else f"envdoctor.cli.{name}"))
    for name in probes.AREAS.values():
        edges.append(("envdoctor.probes", name if "." in name else f"envdoctor.probes.{name}"))
    for name in rules.MODULES:
        edges.append(("envdoctor.rules", rules.PLUGIN_MODULES.get(name, f"envdoctor.rules.{name}")))
    return edges


def _graph() -> Dict[str, Dict[str, int]]:
    graph: Dict[str, Dict[str, int]] = {m: {} for m in MODULES}
    for module, path in MODULES.items():
        for target, line in _imports(module, path):
            graph[module].setdefault(target, line)
    for module, target in _named_by_string():
        assert target in MODULES, f"{module} names {target}, which is not a module of envdoctor"
        graph[module].setdefault(target, 0)
    return graph


GRAPH = _graph()


def floor(module: str) -> str:
    """ "command", "plugin" or "core"."""
    parts = module.split(".")
    if module == "envdoctor.__main__" or parts[1:2] == ["cli"]:
        return "command"
    if module in CORE_ELSEWHERE:
        return "core"
    if len(parts) > 1 and (parts[1] in PLUGINS or parts[1] in CHECK):
        return "plugin"
    return "core"


def _where(module: str, target: str) -> str:
    line = GRAPH[module][target]
    return f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {target}"


def _cycles() -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out = []
    counter = 0
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(GRAPH[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(GRAPH[nxt])))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        part.append(m)
                        if m == node:
                            break
                    if len(part) > 1:
                        out.append(sorted(part))
    return out


def test_the_graph_sees_the_imports_it_must():
    # a reader that found nothing would pass every test below
    assert "envdoctor.bench.command" in GRAPH["envdoctor.cli"]  # by string
    assert "envdoctor.links.probe" in GRAPH["envdoctor.probes"]  # by string
    assert "envdoctor.clicore" in GRAPH["envdoctor.bench.command"]  # module level
    assert "envdoctor.links.render_topo" in GRAPH["envdoctor.render.text"]
    assert len(MODULES) > 150 and sum(map(len, GRAPH.values())) > 800


def test_no_import_circle():
    assert _cycles() == []


def test_cycle_finder_finds_a_circle_through_a_function_level_import():
    # the circle of issue 25 (render/links.py <-> render/text.py) had one end inside a function
    global GRAPH
    saved = GRAPH
    try:
        GRAPH = {k: dict(v) for k, v in saved.items()}
        GRAPH["envdoctor.lines"]["envdoctor.render.text"] = 1
        assert any("envdoctor.lines" in c and "envdoctor.render.text" in c for c in _cycles())
    finally:
        GRAPH = saved


def test_the_core_never_imports_a_plugin_or_the_command_layer():
    upward = {(m, t) for m in GRAPH for t in GRAPH[m] if floor(m) == "core" and floor(t) != "core"}
    assert sorted(_where(m, t) for m, t in upward - KNOWN_UPWARD) == []
    assert KNOWN_UPWARD <= upward, f"gone, drop them from KNOWN_UPWARD: {KNOWN_UPWARD - upward}"


def test_a_plugin_never_imports_the_command_layer():
    bad = [_where(m, t) for m in GRAPH for t in GRAPH[m] if floor(m) == "plugin" and floor(t) == "command"]
    assert bad == []


def test_only_the_command_layer_clicore_and_plugin_commands_import_click():
    bad = []
    for module, path in MODULES.items():
        if floor(module) == "command" or module in CLICK_CORE:
            continue
        if floor(module) == "plugin" and module.split(".")[-1].split("_")[0] == "command":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad.extend(f"{module}:{node.lineno}" for n in names if n.split(".")[0] == "click")
    assert bad == []


@pytest.mark.parametrize("plugin", PLUGINS)
def test_every_plugin_folder_has_the_shape(plugin):
    folder = PACKAGE / plugin
    names = {p.stem for p in folder.glob("*.py")}
    missing = [role for role in SHAPE if role not in names and not any(n.startswith(role + "_") for n in names)]
    assert missing == [], f"envdoctor/{plugin}/ has no {', '.join(missing)}"
    assert list((folder / "target").glob("*.py")), f"envdoctor/{plugin}/target/ holds no script"


def test_a_plugin_folder_without_the_shape_is_named(tmp_path):
    global PACKAGE
    (tmp_path / "lame" / "target").mkdir(parents=True)
    for role in ("command", "host", "rules_a", "render", "facts"):
        (tmp_path / "lame" / f"{role}.py").write_text("")
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        with pytest.raises(AssertionError, match=r"envdoctor/lame/ has no analysis"):
            test_every_plugin_folder_has_the_shape("lame")
    finally:
        PACKAGE = saved


def test_floors():
    assert floor("envdoctor.cli.check") == floor("envdoctor.__main__") == "command"
    assert floor("envdoctor.links.probe") == floor("envdoctor.bench") == "plugin"
    assert floor("envdoctor.render.text") == floor("envdoctor.probes.links") == "plugin"
    assert floor("envdoctor.clicore") == floor("envdoctor.child") == floor("envdoctor.probes.context") == "core"

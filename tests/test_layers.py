"""The rooms of ../shared/DESIGN.md and what each may import: the pipeline goes one way.

load → model → resolve → render → synth; effective and policy read resolve and render;
validate and rehearse read from the pipeline, never the other way round.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib/trainkit"

# room → rooms it may import (besides itself). Leaves import no other room.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "collector": set(),
    "kube": set(),
    "cache_dir": set(),
    "injected_env": set(),
    "health": set(),
    "cdk8s_node": {"errors"},
    "serialize": {"cache_dir", "cdk8s_node"},
    "runcache": {"cache_dir", "deployed", "repo_root", "write"},
    "write": {"errors"},
    "model": {"collector", "errors", "kube", "injected_env"},
    "load": {"cache_dir", "collector", "errors", "kube", "model"},
    "resolve": {"errors", "load", "model"},
    "render": {"injected_env", "model", "resolve"},
    "effective": {"injected_env", "kube", "resolve", "render"},
    "policy": {"effective", "errors", "kube", "load", "model", "resolve"},
    "deployed": {"errors", "load", "model"},
    "kubectl": set(),
    "validate": {"cache_dir", "collector", "deployed", "errors", "kube", "kubectl"},
    "schema": {"model", "plan", "write"},
    "synth": {
        "cache_dir",
        "deployed",
        "effective",
        "errors",
        "health",
        "load",
        "model",
        "resolve",
        "policy",
        "render",
        "repo_root",
        "runcache",
        "serialize",
        "write",
    },
    "explain": {"effective", "errors", "load", "resolve", "policy", "synth"},
    "rehearse": {
        "effective",
        "errors",
        "injected_env",
        "load",
        "model",
        "resolve",
        "render",
        "synth",
    },
    "upstream": {"errors"},
    "scaffold": {"errors"},
    "repo_root": set(),
    "progress": set(),
    "crd_report": {"errors", "load", "synth", "upstream", "validate"},
    "plan": {
        "deployed",
        "effective",
        "errors",
        "kube",
        "load",
        "model",
        "resolve",
        "render",
        "synth",
    },
    "cli": {
        "cache_dir",
        "crd_report",
        "deployed",
        "errors",
        "kubectl",
        "explain",
        "load",
        "model",
        "progress",
        "rehearse",
        "repo_root",
        "plan",
        "runcache",
        "scaffold",
        "schema",
        "serialize",
        "synth",
        "validate",
        "write",
    },
    "__main__": {"cli"},
    "__init__": {"errors", "model"},
}


@functools.cache
def _import_statements(source: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every import statement of a module's text, anywhere in it; parsed once per text for
    the tests here (each reads all of lib/)."""
    return tuple(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
    )


def imported_rooms(path: Path) -> set[str]:
    rel = path.relative_to(LIB)
    package = list(rel.parts[:-1])
    rooms = set()
    for node in _import_statements(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] == "trainkit" and len(parts) > 1:
                    rooms.add(parts[1])
                continue
            base = package[: len(package) - node.level + 1]
            target = base + (node.module.split(".") if node.module else [])
            if target:
                rooms.add(target[0])
            else:
                rooms.update(alias.name for alias in node.names)
        else:
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "trainkit" and len(parts) > 1:
                    rooms.add(parts[1])
    return {r.removesuffix(".py") for r in rooms}


def test_every_room_imports_only_what_its_layer_allows() -> None:
    wrong = []
    for path in sorted(LIB.rglob("*.py")):
        room = path.relative_to(LIB).parts[0].removesuffix(".py")
        assert room in ALLOWED, f"{path.relative_to(LIB)}: unknown room {room!r}; add it to ALLOWED"
        extra = imported_rooms(path) - ALLOWED[room] - {room}
        if extra:
            wrong.append(f"{path.relative_to(LIB)} imports {sorted(extra)}")
    assert wrong == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    # A render module importing synth would close a loop; the test must notice it.
    module = LIB / "render" / "_probe_layers.py"
    module.write_text("from ..synth import synthesize\n", encoding="utf-8")
    try:
        assert imported_rooms(module) == {"synth"}
    finally:
        module.unlink()


def test_no_two_modules_share_a_name() -> None:
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(LIB.rglob("*")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
            name = path.stem
            if name in seen:
                clashes.append(f"{seen[name].relative_to(LIB)} and {path.relative_to(LIB)}")
            seen.setdefault(name, path)
    assert clashes == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path, modules: set[str]) -> set[str]:
    """The trainkit modules ``path`` imports anywhere: at the top, inside functions and under
    ``TYPE_CHECKING`` alike (each is an edge a reader follows, and a lazy import only hides
    a circle from the interpreter)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_statements(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
        else:
            found.update(alias.name for alias in node.names if alias.name in modules)
    found.discard(name)
    return found


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w not in index or w in on_stack), None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == node:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))
            elif nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on_stack.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            else:
                low[node] = min(low[node], index[nxt])
    return circles


def _graph() -> dict[str, set[str]]:
    paths = [p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): module_imports(p, modules) for p in paths}


def test_no_module_imports_itself_through_others() -> None:
    assert import_circles(_graph()) == []


def test_the_circle_finder_sees_a_circle() -> None:
    graph = _graph()
    assert "trainkit.model.messages" in graph["trainkit.model.base"]
    # messages importing base back (even under TYPE_CHECKING) would close a circle.
    graph["trainkit.model.messages"] = graph["trainkit.model.messages"] | {"trainkit.model.base"}
    assert ["trainkit.model.base", "trainkit.model.messages"] in import_circles(graph)
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_reader_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    module = LIB / "render" / "_probe_modules.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..synth import layout\n"
        "def f():\n    from .pod import forwarded\n    import trainkit.kube.names\n",
        encoding="utf-8",
    )
    try:
        modules = {_module_name(p) for p in LIB.rglob("*.py")}
        assert module_imports(module, modules) == {
            "trainkit.synth.layout",
            "trainkit.render.pod",
            "trainkit.kube.names",
        }
    finally:
        module.unlink()


def _code_map_rooms() -> set[str]:
    """The rooms the README's code map names in its first column (``name/`` or ``name.py``)."""
    readme = (LIB.parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Code map", 1)[1].split("\n\n\n", 1)[0]
    rooms: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            rooms.update(re.findall(r"`([a-z_0-9]+)(?:/|\.py)`", line.split("|")[1]))
    return rooms


def test_the_code_map_names_every_room() -> None:
    """A newcomer finds each package and top-level module of lib/trainkit in the README's
    code map, and the map names no room that is gone."""
    rooms = {
        p.stem
        for p in LIB.iterdir()
        if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())
    } - {"__init__", "__main__"}
    assert rooms == _code_map_rooms()
    assert set(ALLOWED) - {"__init__", "__main__"} == rooms


def test_each_command_lives_in_the_module_named_for_it() -> None:
    """``trainkit X`` is ``cli/cmd_X.py`` (its options and what it runs)."""
    from trainkit.cli import COMMANDS, parser

    sub = next(a for a in parser()._actions if a.dest == "command")
    names = sorted(getattr(sub, "choices", {}) or {})
    assert sorted(m.__name__.rpartition(".cmd_")[2] for m in COMMANDS) == names
    assert all((LIB / "cli" / f"cmd_{name}.py").is_file() for name in names)

"""The layers point one way (issue 33, item 5), read statically from the source: no module is imported.

Every `import` of eir_dspy, signatures, programs and eval counts, function-level ones too (a lazy import
still ties the two modules together), and so does `importlib.import_module` (a string, or `f"a.b.{x}"` over a
module-level tuple of names). `import a.b` and `from a import b` with b a submodule are edges to
a.b; `from a import name` is an edge to a. The checks:
- no cycle between modules, nor between packages (a package is a directory; its modules' edges are summed);
- no library module imports a command module (what `python -m` runs);
- no lower layer imports a higher one: eir_dspy <- signatures <- programs <- eval, and inside eval
  files, data <- scoring <- runs <- compare, analyze <- compile, grid <- the commands;
- and in tests/, no file imports a test module (`test_*.py`): what tests share lives in tests/fixtures/.

`python tests/test_import_graph.py` prints the graph's layers and any violation.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP_PACKAGES = ("eir_dspy", "signatures", "programs", "eval")

# The commands: a module's `if __name__ == "__main__"` is what `python -m` runs. Checked against the
# source below, so a new command must be named here (and given its layer) to pass.
COMMANDS = {"eval.run", "eval.summary", "eval.index", "eval.genai_eval", "eval.compare.__main__",
            "eval.analyze.__main__", "eval.compile.__main__", "eval.grid.__main__",
            "eir_dspy.lm.wheel_server"}  # the prebuilt engine's server process, started by eir_dspy/lm/embedded_server.py

# Rank of each layer: a module may import modules of its own rank or lower. The most specific prefix wins.
LAYERS = {
    "eir_dspy": 0,
    "signatures": 1,
    "programs": 2,
    "eval.files": 3,  # leaf modules: a question's record, the results file, the program file
    "eval.data": 4,
    "eval.scoring": 5,
    "eval.runs": 6,
    "eval.compare": 7,
    "eval.analyze": 7,
    "eval.compile": 8,
    "eval.grid": 8,
    "eval": 9,  # the commands at eval/'s top level, and each package's __main__ (below)
}
COMMAND_RANK = 9


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules() -> dict[str, Path]:
    return {module_name(p): p for top in TOP_PACKAGES for p in sorted((ROOT / top).rglob("*.py"))}


def is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def package_of(name: str, modules: dict[str, Path]) -> str:
    """The directory a module lives in, as a dotted name (a package's __init__ is in its own directory)."""
    return name if is_package(name, modules) else name.rpartition(".")[0]


def internal(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of ours that `name` names (`a.b.c` where c is a function of a.b: a.b)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, modules: dict[str, Path]) -> dict[str, int]:
    """The modules of ours that `name` imports, each with the line of its first import."""
    path = modules[name]
    tree = ast.parse(path.read_text(), str(path))
    here = name if is_package(name, modules) else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str | None, line: int) -> None:
        if target and target != name:
            found.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(internal(alias.name, modules), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                add(sub if sub in modules else internal(source, modules), node.lineno)
        elif isinstance(node, ast.Call) and _called(node.func) == "import_module" and node.args:
            for target in _dynamic_targets(node.args[0], tree):
                add(internal(target, modules), node.lineno)
    return found


def _called(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _dynamic_targets(arg: ast.expr, tree: ast.Module) -> list[str]:
    """What `importlib.import_module(arg)` imports: the module a string names, or for `f"a.b.{x}"` with
    `x` running over a module-level tuple of strings (`for x in NAMES`), a.b.<each of NAMES>, as
    eval.analyze loads its analyses. Anything else fails the test: the graph must not miss an edge."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    parts = arg.values if isinstance(arg, ast.JoinedStr) else []
    if len(parts) == 2 and isinstance(parts[0], ast.Constant) and isinstance(parts[1].value, ast.Name):
        loop = parts[1].value.id
        iterables = {c.iter.id for c in ast.walk(tree) if isinstance(c, ast.comprehension | ast.For)
                     and isinstance(c.target, ast.Name) and c.target.id == loop and isinstance(c.iter, ast.Name)}
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in iterables and isinstance(node.value, ast.Tuple)):
                return [f"{parts[0].value}{c.value}" for c in node.value.elts]
    raise AssertionError(f"an import_module call the import-graph test cannot read: {ast.unparse(arg)}")


def build_graph() -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    modules = find_modules()
    return modules, {name: imports_of(name, modules) for name in modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles to name: per strongly connected component (Tarjan) of more than one node, a shortest
    cycle through each of its nodes, each cycle once."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    found: dict[tuple[str, ...], list[str]] = {}
    for component in components:
        for start in sorted(component):
            cycle = shortest_cycle(graph, component, start)
            first = cycle.index(min(cycle[:-1]))
            found.setdefault(tuple(cycle[first:-1] + cycle[:first]), cycle)
    return list(found.values())


def shortest_cycle(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest loop from `start` back to it, found breadth-first inside its component."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected component always has one


def rank(name: str) -> int:
    if name in COMMANDS:
        return COMMAND_RANK
    prefix = name
    while prefix not in LAYERS:
        prefix = prefix.rpartition(".")[0]
    return LAYERS[prefix]


def layer_name(name: str) -> str:
    if name in COMMANDS:
        return "commands"
    prefix = name
    while prefix not in LAYERS:
        prefix = prefix.rpartition(".")[0]
    return prefix


def spelled(cycle: list[str], imports: dict[str, dict[str, int]] | None = None) -> str:
    if imports is None:
        return " -> ".join(cycle)
    return " -> ".join(f"{a} (line {imports[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def module_cycles() -> list[str]:
    _, imports = build_graph()
    return [spelled(c, imports) for c in cycles({m: set(t) for m, t in imports.items()})]


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    modules, imports = build_graph()
    graph: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source, targets in imports.items():
        a = package_of(source, modules)
        graph[a]
        for target in targets:
            b = package_of(target, modules)
            if a != b:
                graph[a].add(b)
                why[a, b].append(f"{source} imports {target}")
    return graph, why


def package_cycles() -> list[str]:
    graph, why = package_graph()
    return [spelled(c) + "\n    " + "\n    ".join(w for a, b in zip(c, c[1:]) for w in why[a, b]) for c in cycles(graph)]


def commands_imported() -> list[str]:
    _, imports = build_graph()
    return [f"{source} (a library module) imports the command {target} (line {line})"
            for source, targets in sorted(imports.items()) if source not in COMMANDS
            for target, line in sorted(targets.items()) if target in COMMANDS]


def upward_imports() -> list[str]:
    _, imports = build_graph()
    return [f"{source} ({layer_name(source)}) imports {target} ({layer_name(target)}), a higher layer (line {line})"
            for source, targets in sorted(imports.items())
            for target, line in sorted(targets.items()) if rank(target) > rank(source)]


def imports_of_test_modules() -> list[str]:
    """Imports of a test module (`test_*.py`) from another file under tests/: shared data and helpers
    belong in modules pytest does not collect (tests/fixtures/, tests/scripted.py), so that no test
    module runs a second time under another name and each test file can change on its own."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("tests.") and name.rpartition(".")[2].startswith("test_") \
                        and (ROOT / (name.replace(".", "/") + ".py")).exists():
                    found.append(f"{path.relative_to(ROOT)} imports the test module {name} (line {node.lineno})")
    return found


def test_the_graph_is_read():
    modules, imports = build_graph()
    assert {"eir_dspy.episode", "programs.eir", "eval.run", "eval.runs.execute"} <= set(modules)
    assert "eir_dspy.episode" in imports["programs.eir"] or any(t.startswith("eir_dspy") for t in imports["programs.eir"])


def test_no_cycle_between_modules():
    found = module_cycles()
    assert not found, "import cycles between modules:\n  " + "\n  ".join(found)


def test_no_cycle_between_packages():
    found = package_cycles()
    assert not found, "import cycles between packages (directories):\n  " + "\n  ".join(found)


def test_the_commands_are_the_modules_run_with_python_m():
    modules = find_modules()
    runnable = {name for name, path in modules.items() if 'if __name__ == "__main__"' in path.read_text()}
    assert runnable == COMMANDS, f"commands not listed here: {sorted(runnable - COMMANDS)}; " \
                                 f"listed but not runnable: {sorted(COMMANDS - runnable)}"


def test_no_library_module_imports_a_command():
    found = commands_imported()
    assert not found, "library modules importing command modules:\n  " + "\n  ".join(found)


def test_no_test_module_imports_another():
    found = imports_of_test_modules()
    assert not found, "test modules imported (move what they share to tests/fixtures/):\n  " + "\n  ".join(found)


def test_no_layer_imports_a_higher_one():
    found = upward_imports()
    assert not found, "imports that run up the layers:\n  " + "\n  ".join(found)


if __name__ == "__main__":
    for title, found in [("module cycles", module_cycles()), ("package cycles", package_cycles()),
                         ("commands imported by library modules", commands_imported()),
                         ("imports running up the layers", upward_imports()),
                         ("test modules imported by others", imports_of_test_modules())]:
        print(f"{title}: {len(found)}")
        for line in found:
            print("  " + line)


def test_an_import_by_name_is_an_edge_too():
    from eval.analyze import MODULE_NAMES

    _, graph = build_graph()
    assert set(graph["eval.analyze"]) == {f"eval.analyze.{name}" for name in MODULE_NAMES}
    tree = ast.parse("NAMES = ('a', 'b')\nfor n in NAMES:\n    importlib.import_module(f'x.{n}')\n")
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call))
    assert _dynamic_targets(call.args[0], tree) == ["x.a", "x.b"]
    unreadable = ast.parse("importlib.import_module(name)")
    with pytest.raises(AssertionError, match="cannot read: name"):
        _dynamic_targets(next(n for n in ast.walk(unreadable) if isinstance(n, ast.Call)).args[0], unreadable)

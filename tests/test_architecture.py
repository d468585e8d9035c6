"""The house rules of docs/architecture.md, checked on the source (no import runs):

- imports go one way, down the layer order ``LAYERS`` (or sideways inside one layer),
  counting imports inside functions too;
- no import cycle at all: modules are the nodes, and an import of a package is an import
  of its ``__init__`` (so a submodule imports its siblings, never its own package);
- no module over ``MAX_MODULE_LINES`` lines and no function over ``MAX_FUNCTION_LINES``
  lines, where the numba kernels are not counted (a function compiled by numba, and the
  kernels a ``make_*`` factory defines inside it: the factory counts its own lines).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("solvers", "meanfield")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# low to high: a module may import its own layer or a lower one (docs/architecture.md)
LAYERS = (
    "solvers",
    "meanfield.errors",
    "meanfield.version",  # the version string alone: the runs stamp it on their results
    "meanfield.config",
    "meanfield.io",
    "meanfield.metrics",
    "meanfield.model",
    "meanfield.initial",
    "meanfield.discretizations",
    "meanfield.runs",
    "meanfield.studies",
    "meanfield.plotting",
    "meanfield.demo",
    "meanfield.cli",
    "meanfield",  # the package's __init__: the public face
    "meanfield.__main__",
)


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


MODULES = module_files()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _known(name: str) -> str | None:
    """The module of ours that importing ``name`` runs (its longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str) -> set[str]:
    """The modules of ours that module ``name`` imports, anywhere in its body."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports the submodule; `from mod import name`, mod
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES
                       else base for alias in node.names]
        else:
            continue
        found |= {t for t in map(_known, targets) if t and t != name}
    return found


GRAPH = {name: imports(name) for name in MODULES}


def layer(name: str) -> int:
    """The index in ``LAYERS`` of the longest layer prefix of ``name``."""
    best = -1
    for i, prefix in enumerate(LAYERS):
        if name == prefix or name.startswith(prefix + "."):
            if best < 0 or len(prefix) > len(LAYERS[best]):
                best = i
    assert best >= 0, f"{name} is in no layer of LAYERS: add it where it belongs"
    return best


def test_every_module_has_a_layer():
    for name in MODULES:
        layer(name)


def test_imports_go_down_the_layers():
    upward = sorted(f"{a} -> {b} ({LAYERS[layer(a)]} imports {LAYERS[layer(b)]})"
                    for a, targets in GRAPH.items() for b in targets
                    if layer(b) > layer(a))
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module (iterative: no recursion limit)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = strongly_connected(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _compiled(node: ast.AST) -> bool:
    """A function compiled by numba: decorated with numba.njit, njit, jit (a factory's
    local ``jit = numba.njit(...)``), vectorize, or a call of one of them."""
    for decorator in getattr(node, "decorator_list", ()):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit", "vectorize", "guvectorize", "cfunc"):
            return True
    return False


def _lines(node: ast.AST) -> int:
    return node.end_lineno - node.lineno + 1


def _own_lines(node: ast.AST) -> int:
    """A function's lines less those of the numba kernels defined inside it."""
    kernels = sum(_lines(inner) for inner in ast.walk(node)
                  if inner is not node and isinstance(inner, ast.FunctionDef)
                  and _compiled(inner))
    return _lines(node) - kernels


def long_functions() -> list[str]:
    found = []
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not _compiled(node) and _own_lines(node) > MAX_FUNCTION_LINES:
                found.append(f"{name}.{node.name}: {_own_lines(node)} lines")
    return sorted(found)


def test_functions_fit_on_a_screen():
    found = long_functions()
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_a_few_hundred_lines(name):
    count = len(MODULES[name].read_text().splitlines())
    assert count <= MAX_MODULE_LINES, f"{MODULES[name].relative_to(ROOT)}: {count} lines"


def test_the_size_rules_see_kernels_and_long_functions():
    source = "def make_k():\n    import numba\n\n    @numba.njit\n    def k(x):\n" + \
        "        x += 1\n" * 100 + "        return x\n    return k\n"
    factory = ast.parse(source).body[0]
    assert _lines(factory) > MAX_FUNCTION_LINES >= _own_lines(factory)
    plain = ast.parse("def f():\n" + "    x = 1\n" * 100).body[0]
    assert _own_lines(plain) > MAX_FUNCTION_LINES and not _compiled(plain)

"""The package layering and the absence of import cycles, read from the source with ``ast``.

Every ``import`` of a ``cuzk`` module counts, wherever it stands: at module level, inside a
function (a lazy import runs all the same, only later, so it can hide a cycle but not remove
one) or in a class body. Imports under ``if TYPE_CHECKING:`` never run: they must still respect
the layering (naming a higher layer's type is a dependency on it) but they are left out of the
cycle check, since two modules of one layer naming each other's types cannot fail to import.

Rules, checked on every edge importer → imported module:

* a module imports its own layer or one its layer stands on (the graph below, :data:`STANDS_ON`,
  read transitively), never another: not a higher one, not one of the other branch;
* the graph of runtime imports has no cycle. Importing ``a.b.c`` also runs the packages
  ``a.b`` and ``a`` (their ``__init__``), so an import of a module in another package counts
  as an import of that package's ``__init__`` too;
* ``importlib.import_module`` and ``__import__`` are not used on cuzk modules (the checks
  cannot read a computed name).
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

#: Layers any layer may import, which import nothing of cuzk above them: ``""`` is the ``cuzk``
#: package itself (only ``__version__``), ``errors`` the exception types, ``openmp`` the
#: process's OpenMP setting and ``safejson`` untrusted JSON reading (raising ``errors``' types).
BASE = ("", "errors", "openmp", "safejson")

#: The layers each layer stands on: it may import them and, transitively, whatever they stand
#: on (names are the first component under ``cuzk``). Two branches rise side by side: the
#: circuits (``r1cs`` → ``gadgets`` → ``circuits``, on ``field``) and the proving
#: (``backend`` → ``groth16`` → ``interop``, on ``curve``, ``poly`` and ``r1cs``: a backend
#: runs a shape's MSMs and NTTs, and knows no circuit and nothing of Groth16, which is written
#: against its ``Backend`` protocol). ``field`` and ``curve`` are independent (Fr and Fq). The
#: ``engine`` joins the branches, ``server`` and ``cli`` stand on top.
STANDS_ON: dict[str, tuple[str, ...]] = {
    "": (),
    "errors": (),
    "openmp": (),
    "safejson": ("errors",),
    "field": BASE,
    "curve": BASE,
    "poly": ("field",),
    "r1cs": ("field",),
    "gadgets": ("r1cs",),
    "circuits": ("gadgets",),
    "backend": ("curve", "poly", "r1cs"),
    "groth16": ("backend",),
    "interop": ("groth16",),
    "engine": ("circuits", "interop"),
    "server": ("engine",),
    "cli": ("server",),
}

#: Imports against the graph that stay for now, each with why: (importing module, layer).
PENDING: set[tuple[str, str]] = set()


def below(name: str) -> set[str]:
    """Every layer ``name`` may import: what it stands on, transitively, and :data:`BASE`."""
    seen: set[str] = set()
    todo = list(STANDS_ON[name]) + ([] if name in BASE else list(BASE))
    while todo:
        layer_ = todo.pop()
        if layer_ not in seen:
            seen.add(layer_)
            todo += STANDS_ON[layer_]
    return seen


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    path: Path
    line: int
    lazy: bool  # inside a function: runs when called
    typing_only: bool  # under ``if TYPE_CHECKING:``: never runs
    via: str = ""  # the import statement's own target when this edge is its package's __init__

    def where(self) -> str:
        how = " (lazy)" if self.lazy else " (TYPE_CHECKING)" if self.typing_only else ""
        via = f" (runs {self.imported}/__init__ to import {self.via})" if self.via else ""
        return f"{self.path.relative_to(SRC.parent)}:{self.line}{how}{via}"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / "cuzk").rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """Collects (target modules, line, lazy, typing-only) per cuzk import statement, plus
    dynamic imports."""

    def __init__(self, module: str, is_package: bool, known: set[str]) -> None:
        self.module, self.is_package, self.known = module, is_package, known
        self.found: list[tuple[str, int, bool, bool]] = []
        self.dynamic: list[int] = []
        self._depth = 0
        self._typing = 0

    def _add(self, target: str, line: int) -> None:
        if target == "cuzk" or target.startswith("cuzk."):
            self.found.append((target, line, self._depth > 0, self._typing > 0))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # the visitor's naming scheme

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._typing += 1
            for child in node.body:
                self.visit(child)
            self._typing -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            package = self.module if self.is_package else self.module.rpartition(".")[0]
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:  # `from pkg import submodule` imports the submodule
            sub = f"{source}.{alias.name}"
            self._add(sub if sub in self.known else source, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in ("import_module", "__import__"):
            self.dynamic.append(node.lineno)
        self.generic_visit(node)


def _packages_run(importer: str, target: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` runs, leaving out those that
    contain ``importer`` (already running by the time it runs)."""
    parts = target.split(".")
    return [
        pkg
        for pkg in (".".join(parts[:i]) for i in range(1, len(parts)))
        if not (importer == pkg or importer.startswith(pkg + "."))
    ]


def collect() -> tuple[list[Edge], list[str]]:
    """Every import edge between cuzk modules, and the problems found while reading them."""
    mods = modules()
    known = set(mods)
    edges: list[Edge] = []
    problems: list[str] = []
    for name, path in mods.items():
        v = _Imports(name, path.name == "__init__.py", known)
        v.visit(ast.parse(path.read_text(), str(path)))
        rel = path.relative_to(SRC.parent)
        problems += [
            f"{rel}:{ln}: dynamic import (name it in an import statement)" for ln in v.dynamic
        ]
        for target, line, lazy, typing_only in v.found:
            if target not in known:
                problems.append(f"{rel}:{line}: imports {target}, which is not a cuzk module")
                continue
            if target != name:
                edges.append(Edge(name, target, path, line, lazy, typing_only))
            for pkg in _packages_run(name, target):
                edges.append(Edge(name, pkg, path, line, lazy, typing_only, via=target))
    return edges, problems


def test_every_package_has_a_layer() -> None:
    missing = sorted({layer(m) for m in modules()} - set(STANDS_ON))
    assert not missing, f"give these packages a layer in tests/test_layering.py: {missing}"


def test_the_graph_is_a_graph_of_layers_without_a_circle() -> None:
    named = {b for bs in STANDS_ON.values() for b in bs} | {b for _, b in PENDING}
    assert named <= set(STANDS_ON), f"unknown layers: {sorted(named - set(STANDS_ON))}"
    circle = sorted(name for name in STANDS_ON if name in below(name))
    assert not circle, f"layers that stand on themselves: {circle}"


def test_imports_resolve_and_are_static() -> None:
    _, problems = collect()
    assert not problems, "\n".join(problems)


def against_layering(edges: list[Edge]) -> list[str]:
    """One line per import of a layer the importer's layer does not stand on (TYPE_CHECKING
    ones included), :data:`PENDING` ones aside."""
    bad = []
    for e in edges:
        a, b = layer(e.importer), layer(e.imported)
        if a != b and b not in below(a) and (e.importer, b) not in PENDING:
            bad.append(
                f"{e.where()}: {e.importer} ({a!r}) imports {e.imported} ({b!r}, which {a!r} "
                "does not stand on)"
            )
    return sorted(bad)


def test_imports_follow_the_graph() -> None:
    bad = against_layering(collect()[0])
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def _strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for e in it:
                w = e.imported
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _shortest_cycle(graph: dict[str, list[Edge]], comp: list[str]) -> list[Edge]:
    """A shortest cycle through the component's first module (BFS back to it)."""
    inside = set(comp)
    start = comp[0]
    came: dict[str, Edge] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for e in graph[v]:
            if e.imported not in inside:
                continue
            if e.imported == start:
                path = [e]
                while path[0].importer != start:
                    path.insert(0, came[path[0].importer])
                return path
            if e.imported not in came:
                came[e.imported] = e
                queue.append(e.imported)
    raise AssertionError(f"no cycle through {start} in its component")  # pragma: no cover


def cycles(edges: list[Edge]) -> list[str]:
    """One report per set of modules importing each other at runtime: its members and a
    shortest cycle through them, edge by edge (file:line, lazy or not)."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        graph.setdefault(e.imported, [])
        if not e.typing_only:
            graph.setdefault(e.importer, []).append(e)
    report = []
    for comp in _strongly_connected(graph):
        cycle = _shortest_cycle(graph, comp)
        steps = "\n".join(f"    {e.where()}: {e.importer} -> {e.imported}" for e in cycle)
        report.append(f"cycle among {', '.join(comp)}:\n{steps}")
    return report


def test_no_import_cycle() -> None:
    report = cycles(collect()[0])
    assert not report, "import cycles (move the shared piece down):\n" + "\n".join(report)


@pytest.mark.parametrize(
    ("source", "module", "want"),
    [
        ("import cuzk.field.fr\n", "cuzk.poly.ntt", [("cuzk.field.fr", False, False)]),
        (
            "def f():\n    from cuzk.cli import main\n",
            "cuzk.cli.x",
            [("cuzk.cli.main", True, False)],
        ),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cuzk.r1cs import X\n",
            "cuzk.gadgets.y",
            [("cuzk.r1cs", False, True)],
        ),
        (
            "from . import fr\nfrom ..curve import G1\n",
            "cuzk.field.z",
            [("cuzk.field.fr", False, False), ("cuzk.curve", False, False)],
        ),  # fmt: skip
        ("import numpy\nfrom os import path\n", "cuzk.field.z", []),
    ],
)
def test_reader_classifies_imports(source: str, module: str, want: list) -> None:
    """The reader itself: absolute, relative, lazy and TYPE_CHECKING imports resolve as meant."""
    known = {"cuzk.field.fr", "cuzk.cli.main", "cuzk.field", "cuzk.curve", "cuzk.r1cs"}
    v = _Imports(module, False, known)
    v.visit(ast.parse(source))
    assert [(t, lazy, typing) for t, _, lazy, typing in v.found] == want


def _edge(importer: str, imported: str, line: int, lazy: bool = False, typing: bool = False):
    path = SRC / Path(*importer.split(".")).with_suffix(".py")
    return Edge(importer, imported, path, line, lazy, typing)


def test_checks_see_what_they_must() -> None:
    """Upward, sideways and cross-branch imports are reported with file:line (TYPE_CHECKING
    ones too), pending ones are not; a cycle closed by a lazy import is reported edge by edge;
    one closed only by TYPE_CHECKING is not."""
    up = [_edge("cuzk.r1cs.system", "cuzk.gadgets.num", 7, lazy=True)]
    side = [_edge("cuzk.curve.points", "cuzk.field.fr", 3, typing=True)]
    across = [_edge("cuzk.backend.cpu", "cuzk.gadgets.num", 4),
              _edge("cuzk.groth16.prover", "cuzk.circuits.catalogue", 6)]  # fmt: skip
    down = [_edge("cuzk.gadgets.num", "cuzk.r1cs.system", 5),
            _edge("cuzk.interop.prover", "cuzk.r1cs.shape", 2)]  # fmt: skip
    pending = [_edge("cuzk.groth16.official", "cuzk.circuits.catalogue", 8)]
    assert len(against_layering(pending)) == 1
    entry = ("cuzk.groth16.official", "circuits")
    added = entry not in PENDING
    PENDING.add(entry)
    try:
        assert against_layering(pending) == []
    finally:
        if added:
            PENDING.discard(entry)
    assert against_layering(up) == [
        "src/cuzk/r1cs/system.py:7 (lazy): cuzk.r1cs.system ('r1cs') imports cuzk.gadgets.num "
        "('gadgets', which 'r1cs' does not stand on)"
    ]
    assert "which 'curve' does not stand on" in against_layering(side)[0]
    assert len(against_layering(across)) == 2
    assert against_layering(down) == []
    lazy_cycle = [_edge("cuzk.a.x", "cuzk.a.y", 1), _edge("cuzk.a.y", "cuzk.a.x", 9, lazy=True)]
    (report,) = cycles([*lazy_cycle, _edge("cuzk.a.z", "cuzk.a.x", 2)])
    assert report.splitlines() == [
        "cycle among cuzk.a.x, cuzk.a.y:",
        "    src/cuzk/a/x.py:1: cuzk.a.x -> cuzk.a.y",
        "    src/cuzk/a/y.py:9 (lazy): cuzk.a.y -> cuzk.a.x",
    ]
    types_only = [_edge("cuzk.a.x", "cuzk.a.y", 1), _edge("cuzk.a.y", "cuzk.a.x", 9, typing=True)]
    assert cycles(types_only) == []

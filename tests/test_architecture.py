"""The package's structure, checked from its source: private names, module size, import cycles, layers.

Every check reads the modules of ``interfpred/`` with :mod:`ast` (nothing is imported) and reports
every breach it finds, each as ``file:line: what, why``. Each check also has a self-test on a
small synthetic package, so none of them can pass by finding nothing to look at.

The layer table below is the one docs/architecture.md shows; a test keeps the two identical.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "interfpred"
DOC = ROOT / "docs" / "architecture.md"

# ------------------------------------------------------------------------------------------------ the layers
# (layer, members, the layers it may import besides itself), lowest first. A member is a folder of
# ``interfpred/`` (everything inside it belongs to the layer) or one of the few top-level modules.
LAYERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("foundation", ("__init__", "_version", "errors", "constants", "_core/"), ()),
    ("data", ("data/",), ("foundation",)),
    ("features", ("features/",), ("foundation", "data")),
    ("predictors", ("predictors/",), ("foundation", "data")),
    ("evaluation", ("evaluation/",), ("foundation", "data", "features", "predictors")),
    ("model", ("model/",), ("foundation", "data", "features", "predictors", "evaluation")),
    ("serving", ("serving/",), ("foundation", "data", "features", "predictors", "evaluation", "model")),
    ("sim", ("sim/",), ("foundation", "data")),
    ("provisioning", ("provisioning/",), ("foundation", "data", "sim")),
    ("measure", ("measure/",), ("foundation", "data")),
    ("experiments", ("experiments/",),
     ("foundation", "data", "features", "predictors", "evaluation", "model", "serving", "sim", "provisioning")),
    ("cli", ("cli/", "__main__"),
     ("foundation", "data", "features", "predictors", "evaluation", "model", "serving", "sim", "provisioning",
      "measure", "experiments")),
)

# What each layer is for, one line each, shown beside the table in docs/architecture.md.
LAYER_JOBS = {
    "foundation": "the lazy public namespace, errors, constants; in `_core/` the numba switch and its cache, "
                  "atomic file output, pyarrow access, the JSON file schemas, hyperparameters given as text, "
                  "the one conversion of a prediction into a rate, slowdown or latency",
    "data": "traces, profiles, measurement runs, entities, counters, columnar I/O, Nsight ingestion, shipped "
            "datasets",
    "features": "co-location timelines, feature maps and their temporal aggregation, specs, measurement-run and "
                "entity features, bounded-memory chunks",
    "predictors": "every predictor behind one contract, their compiled steps, the baselines, the adapters",
    "evaluation": "metrics, prequential runs, folds, the baselines beside every number, coverage, the predictor "
                  "contract checks",
    "model": "`InterferenceModel`: extractor plus predictor, fitted, evaluated, saved and loaded; its "
             "prediction tables; its fit on Dask",
    "serving": "the live running set, the what-if projection (compiled and generic), the tracker, placement over a "
               "fleet",
    "sim": "the ground-truth GPU simulator and its workloads (knows nothing of predictors)",
    "provisioning": "MIG profile tables and placements; plans that pack models onto the fewest GPUs under SLOs "
                    "from a measured table, and their validator; advice on which sharing mechanism to use, by "
                    "simulating each",
    "measure": "measuring campaigns on a GPU (co-location runs under each sharing mechanism, persistent workers, "
               "resumable results log, profiles through Nsight Compute) and the simulated device they are tested on",
    "experiments": "the paper's experiments, scheduling (E3), reproduction, benchmarks, coverage of a "
                   "model's bounds",
    "cli": "argument parsing and wiring only",
}

# The only modules allowed directly in interfpred/ (besides the folders of the layers).
TOP_LEVEL = frozenset({"__init__", "__main__", "_version", "errors", "constants"})

# namedtuple methods carry an underscore only to stay clear of field names; they are public API.
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


def layer_table_markdown() -> str:
    """The layer table as docs/architecture.md shows it."""
    rows = ["| layer | folders and modules (in `interfpred/`) | may import | job |", "|---|---|---|---|"]
    for name, members, allowed in LAYERS:
        shown = ", ".join(f"`{m}`" if m.endswith("/") else f"`{m}.py`" for m in members)
        rows.append(f"| {name} | {shown} | {', '.join(allowed) or '(nothing)'} | {LAYER_JOBS[name]} |")
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------------ reading the package
@dataclass
class Module:
    name: str                 # dotted: interfpred.predictors.rls; a package is named by its folder
    label: str                # what a message shows: interfpred/predictors/rls.py
    tree: ast.Module
    n_lines: int
    is_package: bool = False
    parents: dict[int, ast.AST] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while id(node) in self.parents:
            node = self.parents[id(node)]
            yield node


def read_package(root: pathlib.Path = PACKAGE) -> dict[str, Module]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        text = path.read_text(encoding="utf-8")
        name = ".".join(parts)
        out[name] = Module(name, path.relative_to(root.parent).as_posix(), ast.parse(text, str(path)), text.count("\n"),
                           is_package)
    return out


def synthetic(sources: dict[str, str]) -> dict[str, Module]:
    """A package from source strings; a key ending in ``.__init__`` is a package."""
    out = {}
    for key, text in sources.items():
        is_package = key.endswith(".__init__")
        name = key.removesuffix(".__init__")
        label = key.replace(".", "/") + ".py"
        out[name] = Module(name, label, ast.parse(text), text.count("\n"), is_package)
    return out


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """Ids of every node inside the body of an ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _resolve_from(mod: Module, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    base = mod.name.split(".") if mod.is_package else mod.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _lazy_table(modules: dict[str, Module]) -> dict[str, str]:
    """The top-level package's ``_LAZY`` table (name -> module), read from its source."""
    top = modules.get("interfpred")
    if top is None:
        return {}
    for node in top.tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "_LAZY" and node.value is not None:
            value = ast.literal_eval(node.value)
            return {str(k): str(v) for k, v in value.items()}
    return {}


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str                # file:line of the import
    runtime: bool             # False under ``if TYPE_CHECKING:``


def import_edges(modules: dict[str, Module]) -> list[Edge]:
    """Every interfpred -> interfpred import, at any depth (function-level imports included).

    ``from interfpred.pkg import name`` points at ``interfpred.pkg.name`` when that is a module
    and at the package ``interfpred.pkg`` otherwise; ``from interfpred import Name`` of a name
    the lazy namespace serves points at the module that defines it, since reading it imports that.
    """
    lazy = _lazy_table(modules)
    edges = []
    for mod in modules.values():
        checking = _type_checking_nodes(mod.tree)
        for node in ast.walk(mod.tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve_from(mod, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if sub in modules:
                        targets.append(sub)
                    elif base == "interfpred" and a.name in lazy:
                        targets.append(lazy[a.name])
                    else:
                        targets.append(base)
            for t in dict.fromkeys(targets):
                if t == "interfpred" or t.startswith("interfpred."):
                    edges.append(Edge(mod.name, t, f"{mod.label}:{node.lineno}", id(node) not in checking))
    return edges


# ------------------------------------------------------------------------------------------------ the checks
def private_import_violations(modules: dict[str, Module]) -> list[str]:
    """``from M import _x`` where ``_x`` is not a module, and ``alias._x`` on an imported module."""
    out = []
    for mod in modules.values():
        module_aliases: dict[str, str] = {}   # local name -> the module it is bound to
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve_from(mod, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if sub in modules:
                        module_aliases[a.asname or a.name] = sub
                    elif is_private(a.name):
                        out.append(f"{mod.label}:{node.lineno}: imports the private name {a.name} from {base}: "
                                   f"a private name belongs to its module; make it public or keep the use there")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules:   # ``import a.b as c`` binds c to a.b; ``import a.b`` binds a to a
                        local = a.asname or a.name.split(".")[0]
                        module_aliases[local] = a.name if a.asname else local
        for node in ast.walk(mod.tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            dotted = _dotted(node.value)
            if dotted is None:
                continue
            head, *rest = dotted.split(".")
            if head not in module_aliases:
                continue
            target = ".".join([module_aliases[head], *rest])
            if target in modules and f"{target}.{node.attr}" not in modules:
                out.append(f"{mod.label}:{node.lineno}: uses the private name {node.attr} of {target}: "
                           f"a private name belongs to its module; make it public or keep the use there")
    return _in_order(out)


def private_module_package(name: str) -> str | None:
    """The package that owns the private module ``name`` (dotted): the package above its first private
    component (``interfpred.features`` for ``interfpred.features._sweep``), or None when no component is private.

    >>> private_module_package("interfpred.features._sweep"), private_module_package("interfpred.features.maps")
    ('interfpred.features', None)
    """
    parts = name.split(".")
    for i, part in enumerate(parts):
        if is_private(part):
            return ".".join(parts[:i])
    return None


def private_module_violations(modules: dict[str, Module]) -> list[str]:
    """An import of a private module (a module whose name, or a package's above it, starts with ``_``) from
    outside the package that holds it: ``interfpred.serving.x`` may not import ``interfpred.features._sweep``;
    ``interfpred.features.timeline`` and ``interfpred.features.sub.y`` may."""
    out = []
    for e in import_edges(modules):
        owner = private_module_package(e.dst)
        if owner is None or e.dst not in modules:
            continue
        if e.src == owner or e.src.startswith(owner + "."):
            continue
        out.append(f"{e.label}: {e.src} imports the private module {e.dst}, which belongs to {owner}: "
                   f"make the module public (a name without the underscore) or keep its use inside {owner}")
    return _in_order(out)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _own_private_names(cls: ast.ClassDef) -> set[str]:
    """Private names a class defines: in its body, through ``self._x = ...`` or in ``__slots__``."""
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in stmt.targets):
                names.update(c.value for c in ast.walk(stmt.value)
                             if isinstance(c, ast.Constant) and isinstance(c.value, str))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    for node in ast.walk(cls):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                    names.add(n.attr)
    return {n for n in names if is_private(n)}


def _module_names(mod: Module, modules: dict[str, Module]) -> set[str]:
    """Local names bound to modules: by ``import``, or by ``from`` naming a module of the package."""
    out = set()
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Import):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(mod, node)
            out.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" in modules)
    return out


_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private_access(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(object, name) of ``obj._name`` or ``getattr(obj, "_name", ...)`` (and set/has/delattr)."""
    if isinstance(node, ast.Attribute) and is_private(node.attr):
        return node.value, node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str) and is_private(node.args[1].value)):
        return node.args[0], node.args[1].value
    return None


def reach_in_violations(modules: dict[str, Module]) -> list[str]:
    """``x._attr`` where ``x`` is not ``self``/``cls``/``super()``, outside a class that defines ``_attr``."""
    out = []
    for mod in modules.values():
        module_names = _module_names(mod, modules)
        own: dict[int, set[str]] = {}
        for node in ast.walk(mod.tree):
            access = _private_access(node)
            if access is None:
                continue
            value, attr = access
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                continue
            if attr in NAMEDTUPLE_API:
                continue
            dotted = _dotted(value)
            if dotted is not None and dotted.split(".")[0] in module_names:
                continue  # a module's private name: the private-import check's business
            classes = [a for a in mod.ancestors(node) if isinstance(a, ast.ClassDef)]
            if any(attr in own.setdefault(id(c), _own_private_names(c)) for c in classes):
                continue
            where = f"class {classes[0].name}" if classes else "module level or a function"
            out.append(f"{mod.label}:{node.lineno}: touches {ast.unparse(node)} from {where}: only the class "
                       f"that defines {attr} may touch it; expose a public method or property")
    return _in_order(out)


def top_level_violations(modules: dict[str, Module]) -> list[str]:
    """Modules directly in interfpred/ other than the few the layout allows."""
    return [f"{m.label}:1: {m.name} sits at the top level: move it into the folder of its layer"
            for m in modules.values()
            if m.name.count(".") == 1 and not m.is_package and m.name.split(".")[1] not in TOP_LEVEL]


def reexport_violations(modules: dict[str, Module]) -> list[str]:
    """Modules (not package ``__init__`` files) that only import names and list them in ``__all__``."""
    out = []
    for m in modules.values():
        if m.is_package:
            continue
        body = [s for s in m.tree.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]   # the docstring
        only_imports = all(isinstance(s, (ast.Import, ast.ImportFrom)) or (
            isinstance(s, ast.Assign) and [ast.unparse(x) for x in s.targets] == ["__all__"]) for s in body)
        if body and only_imports:
            out.append(f"{m.label}:1: {m.name} only re-exports other modules: import from where the names live")
    return out


def cycle_violations(modules: dict[str, Module]) -> list[str]:
    """Every strongly connected group of modules (runtime imports at any depth), with its imports."""
    edges = [e for e in import_edges(modules) if e.runtime and e.src != e.dst and e.dst in modules]
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges:
        graph[e.src].add(e.dst)
    out = []
    for group in _strongly_connected(graph):
        if len(group) < 2:
            continue
        inside = _in_order({f"{e.label}: {e.src} -> {e.dst}" for e in edges if e.src in group and e.dst in group})
        out.append(f"import cycle among {', '.join(sorted(group))}: a cycle makes import order matter and "
                   f"hides which module is below which; move the shared piece down a layer. Imports:\n    "
                   + "\n    ".join(inside))
    return sorted(out)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups


def layer_of(name: str) -> str | None:
    """The layer of a dotted module name: its folder under interfpred/, or the top-level module itself."""
    parts = name.split(".")
    if parts[0] != "interfpred":
        return None
    member = "__init__" if len(parts) == 1 else (parts[1] if len(parts) == 2 and parts[1] in TOP_LEVEL
                                                  else parts[1] + "/")
    for layer, members, _ in LAYERS:
        if member in members:
            return layer
    return None


def unclassified_modules(modules: dict[str, Module]) -> list[str]:
    return [f"{m.label}:1: {m.name} is in no layer: add a pattern for it to LAYERS in tests/test_architecture.py "
            f"and to the table in docs/architecture.md" for m in modules.values() if layer_of(m.name) is None]


def layer_violations(modules: dict[str, Module]) -> list[str]:
    allowed = {name: set(deps) | {name} for name, _, deps in LAYERS}
    out = []
    for e in import_edges(modules):
        if not e.runtime:
            continue
        src, dst = layer_of(e.src), layer_of(e.dst)
        if src is None or dst is None or dst in allowed[src]:
            continue
        out.append(f"{e.label}: {e.src} ({src}) imports {e.dst} ({dst}): the {src} layer may import only "
                   f"{', '.join(n for n, _, _ in LAYERS if n in allowed[src])}")
    return _in_order(out)


def _in_order(lines: Iterable[str]) -> list[str]:
    """Messages sorted by file, then line number."""
    def key(line: str) -> tuple[str, int]:
        label, _, rest = line.partition(":")
        number = rest.partition(":")[0]
        return label, int(number) if number.isdigit() else 0
    return sorted(lines, key=key)


def _report(violations: Iterable[str], what: str) -> None:
    found = list(violations)
    assert not found, f"{len(found)} {what}:\n" + "\n".join(found)


# ------------------------------------------------------------------------------------------------ the package
@pytest.fixture(scope="module")
def package() -> dict[str, Module]:
    modules = read_package()
    assert len(modules) > 50 and "interfpred.predictors.rls" in modules  # the real package, not an empty folder
    return modules


def test_no_private_names_imported_across_modules(package):
    _report(private_import_violations(package), "private names used outside their module")


def test_no_private_module_imported_from_another_package(package):
    _report(private_module_violations(package), "imports of another package's private module")


def test_no_reach_in_to_private_attributes(package):
    _report(reach_in_violations(package), "reach-ins to another object's private attribute")


def test_only_the_allowed_modules_sit_at_the_top_level(package):
    _report(top_level_violations(package), "modules at the top level")


def test_no_module_only_reexports_another(package):
    _report(reexport_violations(package), "modules that only re-export")


def test_no_import_cycles(package):
    _report(cycle_violations(package), "import cycles")


def test_every_module_has_a_layer(package):
    _report(unclassified_modules(package), "modules in no layer")


def test_imports_follow_the_layers(package):
    _report(layer_violations(package), "imports against the layers")


def test_layers_only_import_layers_below():
    seen: set[str] = set()
    for name, _, allowed in LAYERS:
        assert set(allowed) <= seen, f"{name} may import {sorted(set(allowed) - seen)}, which are not below it"
        seen.add(name)
    assert set(LAYER_JOBS) == seen


def test_docs_show_the_same_layer_table():
    assert layer_table_markdown() in DOC.read_text(encoding="utf-8"), (
        "docs/architecture.md must contain the table printed by tests.test_architecture.layer_table_markdown()")


def test_tests_import_their_helpers_one_way():
    """``from naive import ...``: pytest puts tests/ on sys.path; ``tests.naive`` only works from the root."""
    offenders = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"tests/{path.name}:{node.lineno}: imports {n}; write `from {n[6:]} import ...`"
                          for n in names if n == "tests" or n.startswith("tests.")]
    assert not offenders, "\n".join(offenders)
    assert not list((ROOT / "tests" / "data").glob("*.log")), "tests read the example log through example_path()"


# ------------------------------------------------------------------------------------------------ self-tests
def test_private_import_check_catches_and_accepts():
    bad = synthetic({
        "interfpred.__init__": "",
        "interfpred._k": "def _f(): pass\ndef g(): pass\n",
        "interfpred.a": "from interfpred._k import _f\n",
        "interfpred.b": "from interfpred import _k\n_k._f()\n",
        "interfpred.c": "import interfpred._k\ninterfpred._k._f()\n",
        "interfpred.p.__init__": "",
        "interfpred.p._q": "def _h(): pass\n",
        "interfpred.p.d": "from ._q import _h\n",
    })
    found = private_import_violations(bad)
    assert len(found) == 4, found
    assert any("interfpred/a.py:1" in f and "_f" in f for f in found)
    assert any("interfpred/b.py:2" in f for f in found) and any("interfpred/c.py:2" in f for f in found)
    assert any("interfpred/p/d.py:1" in f and "interfpred.p._q" in f for f in found)
    clean = synthetic({
        "interfpred.__init__": "from interfpred._version import __version__\n",
        "interfpred._version": "__version__ = '1'\n",
        "interfpred._k": "def _f(): pass\ndef g(): pass\n_f()\n",
        "interfpred.a": "from interfpred import _k\nfrom interfpred._k import g\n_k.g()\n",
        "interfpred.p.__init__": "from interfpred.p import _q\n",
        "interfpred.p._q": "",
    })
    assert private_import_violations(clean) == []


def test_private_module_check_catches_and_accepts():
    bad = synthetic({
        "interfpred.__init__": "",
        "interfpred.f.__init__": "",
        "interfpred.f._k": "def g(): pass\n",
        "interfpred.s.__init__": "",
        "interfpred.s.a": "from interfpred.f._k import g\n",
        "interfpred.s.b": "from interfpred.f import _k\n",
        "interfpred.s.c": "def h():\n    import interfpred.f._k\n",     # at any depth
        "interfpred.f2.__init__": "",
        "interfpred.f2.d": "from interfpred.f._k import g\n",            # a sibling whose name shares a prefix
    })
    found = private_module_violations(bad)
    assert [f.split(":")[0] + ":" + f.split(":")[1] for f in found] == [
        "interfpred/f2/d.py:1", "interfpred/s/a.py:1", "interfpred/s/b.py:1", "interfpred/s/c.py:2"], found
    assert "belongs to interfpred.f" in found[0]
    clean = synthetic({
        "interfpred.__init__": "from interfpred._version import v\n",
        "interfpred._version": "v = 1\n",
        "interfpred.f.__init__": "from interfpred.f._k import g\n",
        "interfpred.f._k": "from interfpred._version import v\ndef g(): pass\n",
        "interfpred.f.m": "from interfpred.f import _k\n",
        "interfpred.f.sub.__init__": "",
        "interfpred.f.sub.n": "from interfpred.f._k import g\n",        # a subpackage is inside its owner
        "interfpred.s.__init__": "",
        "interfpred.s.a": "from interfpred.f import g\nfrom interfpred._version import v\n",
    })
    assert private_module_violations(clean) == []


def test_reach_in_check_catches_and_accepts():
    bad = synthetic({"interfpred.a": (
        "class A:\n"
        "    def __init__(self):\n"
        "        self._d = 1\n"
        "class B:\n"
        "    def f(self, a):\n"
        "        return a._d\n"
        "def g(tracker):\n"
        "    return tracker._state\n"
        "class C:\n"
        "    def f(self):\n"
        "        return self.inner._d\n"
        "def h(args):\n"
        "    return getattr(args, '_argv', None)\n")})
    found = reach_in_violations(bad)
    assert [f.split(":")[1] for f in found] == ["6", "8", "11", "13"], found
    assert "class B" in found[0] and "a._d" in found[0]
    clean = synthetic({"interfpred.a": (
        "import numpy as np\n"
        "class A:\n"
        "    _cache = None\n"
        "    def __init__(self):\n"
        "        self._d = 1\n"
        "    def merge(self, other):\n"
        "        return self._d + other._d + type(self)._cache\n"
        "    def size(self):\n"
        "        return super()._size() + self.__class__.__name__.__len__()\n"
        "def f(row, obj):\n"
        "    return row._replace(a=1), obj.__dict__, np._NoValue, getattr(obj, 'name'), getattr(obj, '__doc__')\n")})
    assert reach_in_violations(clean) == []


def test_top_level_and_reexport_checks_catch_and_accept():
    modules = synthetic({"interfpred.__init__": "", "interfpred.errors": "", "interfpred.loose": "x = 1\n",
                         "interfpred.data.__init__": "from interfpred.data.a import f\n",
                         "interfpred.data.a": "def f(): pass\n",
                         "interfpred.data.b": '"""Doc."""\nfrom interfpred.data.a import f\n__all__ = ["f"]\n'})
    found = top_level_violations(modules)
    assert len(found) == 1 and "interfpred/loose.py" in found[0]
    found = reexport_violations(modules)
    assert len(found) == 1 and "interfpred/data/b.py" in found[0]


def test_cycle_check_catches_and_accepts():
    bad = synthetic({
        "interfpred.__init__": "",
        "interfpred.a": "from interfpred.b import x\n",
        "interfpred.b": "def f():\n    from interfpred import a\n",   # a function-level import counts
        "interfpred.c": "from interfpred.d import y\n",
        "interfpred.d": "from interfpred.c import z\n",
        "interfpred.p.__init__": "from interfpred.p.m import K\n",
        "interfpred.p.m": "from interfpred.p import K2\n",            # a name of the package __init__
    })
    found = cycle_violations(bad)
    assert len(found) == 3, found
    assert any("interfpred.a, interfpred.b" in f and "interfpred/b.py:2" in f for f in found)
    assert any("interfpred.p, interfpred.p.m" in f for f in found)
    clean = synthetic({
        "interfpred.__init__": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from interfpred.a import A\n"
                               "_LAZY = {'A': 'interfpred.a'}\n",
        "interfpred.a": "from interfpred import b\n",
        "interfpred.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from interfpred.a import A\n",
        "interfpred.p.__init__": "from interfpred.p.m import K\n",
        "interfpred.p.m": "from interfpred.p import q\n",             # a submodule, not the package __init__
        "interfpred.p.q": "",
    })
    assert cycle_violations(clean) == []
    lazy = synthetic({
        "interfpred.__init__": "_LAZY = {'A': 'interfpred.a'}\n",
        "interfpred.a": "from interfpred import b\n",
        "interfpred.b": "def f():\n    from interfpred import A\n",  # served by the lazy table: an edge to a
    })
    assert len(cycle_violations(lazy)) == 1


def test_layer_check_catches_and_accepts():
    empty = dict.fromkeys(["interfpred.predictors.__init__", "interfpred.sim.__init__", "interfpred.features.__init__",
                           "interfpred.experiments.__init__", "interfpred.experiments.paper",
                           "interfpred.model.__init__"], "")
    bad = synthetic({**empty,
                     "interfpred.predictors.x": "from interfpred.features import Static\n",
                     "interfpred.model.interference": "def f():\n    from interfpred.experiments.paper import e1\n",
                     "interfpred.sim.y": "from interfpred.predictors import RLS\n"})
    found = layer_violations(bad)
    assert len(found) == 3, found
    assert any(f.startswith("interfpred/model/interference.py:2") and "(experiments)" in f for f in found)
    assert any(f.startswith("interfpred/sim/y.py:1") and "(predictors)" in f for f in found)
    clean = synthetic({
        "interfpred.cli.main": "from interfpred.experiments.paper import e1\nfrom interfpred import constants\n",
        "interfpred.serving.store": "from interfpred.model.interference import M\n"
                                    "from interfpred.predictors.rls import RLS\n",
        "interfpred.model.interference": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from interfpred.serving.tracker import T\n",
    })
    assert layer_violations(clean) == []
    assert layer_of("interfpred.serving.store") == "serving" and layer_of("interfpred.data.trace") == "data"
    assert layer_of("interfpred.serving.tracker.core") == "serving" and layer_of("interfpred.errors") == "foundation"
    assert layer_of("interfpred._core.jit") == "foundation" and layer_of("interfpred.__main__") == "cli"
    assert layer_of("interfpred.tracker_store") is None       # no prefix rule: a loose module has no layer
    assert layer_of("interfpred.features_maps") is None
    assert unclassified_modules(synthetic({"interfpred.nowhere": ""})) != []
    assert unclassified_modules(synthetic({"interfpred.sim.new": ""})) == []


def test_no_merge_conflict_markers_in_sources_or_docs():
    """A merge left half-resolved shows in no Python file, doc or README (a doc would still build)."""
    root = pathlib.Path(__file__).resolve().parent.parent
    files = [*root.joinpath("interfpred").rglob("*.py"), *root.joinpath("docs").rglob("*.md"),
             *root.joinpath("tests").rglob("*.py"), *root.joinpath("examples").rglob("*.py"), root / "README.md"]
    marks = ("<" * 7 + " ", ">" * 7 + " ", "=" * 7 + "\n")
    found = [f"{f.relative_to(root)}:{i}" for f in files
             for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(keepends=True), 1)
             if line.startswith(marks)]
    assert not found, "merge conflict markers at " + ", ".join(found)

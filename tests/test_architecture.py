"""The package's architecture: imports point down the layers, no private names cross modules,
no two modules import each other (directly or round a circle), and nothing sets global state at
import. Modules are cut by concept, not by a line count: there is no line cap on a module (issue
32); a function of the models layer, which trains, reads on one screen (issue 52)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "dsmlib"
LAYERS = ["foundation", "theory", "models", "chapters", "figures", "book"]


def modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def layer_of(module: str) -> int | None:
    """Layer index of a dotted module name inside dsmlib (None for the package root)."""
    parts = module.split(".")
    if parts[0] != "dsmlib" or len(parts) < 2:
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def dotted(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every dsmlib import in a file."""
    tree = ast.parse(path.read_text())
    here = dotted(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("dsmlib"):
                out.append((mod, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("dsmlib")]
    return out


def test_every_module_lives_in_a_layer():
    for p in modules():
        name = dotted(p)
        if name in ("dsmlib", "dsmlib.__main__"):
            continue
        assert layer_of(name) is not None, f"{name} is outside the layers {LAYERS}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: dotted(p))
def test_imports_point_down_and_names_are_public(path):
    me = layer_of(dotted(path))
    for mod, names in imports(path):
        target = layer_of(mod)
        if me is not None and target is not None:
            assert target <= me, f"{dotted(path)} (layer {LAYERS[me]}) imports {mod} " \
                                 f"(layer {LAYERS[target]}): imports must point down"
        # importing a submodule by name is fine; importing a private name is not
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private, f"{dotted(path)} imports private names {private} from {mod}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the dsmlib modules it imports (a ``TYPE_CHECKING`` import counts: it ties the
    two modules together for a reader just the same). ``from pkg import mod`` counts
    ``pkg.mod`` when that is a module; a package's ``__init__`` is not counted as imported
    by its submodules' importers."""
    names = {dotted(p) for p in modules()}
    graph: dict[str, set[str]] = {}
    for p in modules():
        me = dotted(p)
        out = set()
        for mod, imported in imports(p):
            subs = [f"{mod}.{n}" for n in imported if f"{mod}.{n}" in names]
            out.update(subs or ([mod] if mod in names else []))
        graph[me] = out - {me}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_find_cycles_finds_a_circle():
    """The mutant: the circle that remark3_stability <-> remark3_valley made before issue 32."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(g) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    assert find_cycles(import_graph()) == []


def test_no_global_state_at_import():
    """No module calls torch.set_num_threads / manual_seed / np.random.seed at top level."""
    banned = {"set_num_threads", "manual_seed", "seed", "set_default_dtype",
              "use_deterministic_algorithms"}
    for p in modules():
        tree = ast.parse(p.read_text())
        for node in tree.body:
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                f = call.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                    continue
                assert name not in banned, f"{dotted(p)} calls {name} at import"


def test_notebooks_set_no_global_state():
    nb_dir = PKG.parent / "notebooks"
    for p in nb_dir.glob("*.md"):
        text = p.read_text()
        for bad in ("set_num_threads", "manual_seed(", "np.random.seed(", "set_default_dtype"):
            assert bad not in text, f"{p.name} sets global state ({bad})"


def test_no_notebook_imports_the_book():
    """A page runs below the book (issue 68, item 1): no code cell of a chapter's notebook
    imports ``dsmlib.book``, directly or through the modules it imports; it hands its claims
    over through ``dsmlib.foundation.handoff``. (The cell the runner puts under an executed
    chapter's title is the book's own, and is in no source.)"""
    from dsmlib.book.execute.closure import import_closure, imported_names, notebook_code
    sources = sorted(p for p in (PKG.parent / "notebooks").glob("*.md") if p.stem != "README")
    assert len(sources) >= 6
    for p in sources:
        names = set().union(*(imported_names(ast.parse(code)) for code in notebook_code(p)))
        assert "dsmlib.foundation.handoff.write_results" in names, p.name
        book = sorted(n for n in names if n == "dsmlib.book" or n.startswith("dsmlib.book."))
        assert not book, f"{p.name} imports {book}"
        reached = [f.relative_to(PKG).as_posix() for f in import_closure(p, PKG)]
        assert not [f for f in reached if f.startswith("book/")], (p.name, reached)


# The one module allowed to import by a computed name: the book finds a chapter's Parameters
# by the notebook's name (dsmlib.chapters.parameters.<name>; dsmlib.book.profiles.parameters_class), which keeps the book layer free of chapter
# names. No content key depends on that import: each notebook imports its chapter module itself
# (test_each_notebook_imports_its_chapter_module), so its import closure covers it.
FINDS_CHAPTERS = "dsmlib.book.profiles"


def test_nothing_imports_by_computed_name():
    """The content key follows a notebook's import closure (dsmlib.book.execute.closure), which only
    sees ``import`` statements: no module may import by a name computed at run time (but the
    runner's lookup of a chapter's declaration, above)."""
    for p in modules():
        if dotted(p) == FINDS_CHAPTERS:
            continue
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                assert name not in ("import_module", "__import__", "spec_from_file_location"), \
                    f"{dotted(p)} imports by computed name ({name})"


def test_each_notebook_imports_its_chapter_module():
    """A notebook imports dsmlib.chapters.<its name> by a plain import statement, so that its
    content key (its import closure) covers the Parameters the runner checked it with."""
    import re
    for p in sorted((PKG.parent / "notebooks").glob("*.md")):
        if p.stem == "README":
            continue
        text = p.read_text()
        plain = (re.search(rf"^from dsmlib\.chapters\.{p.stem} import", text, re.M)
                 or re.search(rf"^from dsmlib\.chapters import [^\n]*\b{p.stem}\b", text, re.M))
        assert plain, f"{p.name} does not import dsmlib.chapters.{p.stem}"


#: The longest a function of the models layer may be (issue 52): its lines from ``def`` (its
#: decorators aside) to its last, its docstring aside.
MAX_FUNCTION_LINES = 50


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method in ``path``, its docstring aside."""
    tree = ast.parse(path.read_text())
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1
                doc = child.body[0] if child.body else None
                if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                        and isinstance(doc.value.value, str)):
                    lines -= doc.end_lineno - doc.lineno + 1
                out.append((prefix + child.name, lines))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
    visit(tree, "")
    return out


def test_function_lengths_counts_code_lines_not_docstrings(tmp_path):
    import textwrap
    src = textwrap.dedent('''
        def f(x):
            """Two lines
            of docstring."""
            y = x
            return y

        class C:
            def g(self):
                def inner():
                    return 1
                return inner()
        ''')
    path = tmp_path / "probe.py"
    path.write_text(src)
    assert function_lengths(path) == [("f", 3), ("C.g", 4), ("C.g.inner", 2)]


def test_no_function_of_the_models_layer_is_over_fifty_lines():
    """Section 5's training code reads top-down on one screen: no function of
    ``dsmlib.models`` is longer than :data:`MAX_FUNCTION_LINES`, the rest in named helpers."""
    long = [f"{dotted(p)}.{name}: {n} lines" for p in modules() if p.parent.name == "models"
            for name, n in function_lengths(p) if n > MAX_FUNCTION_LINES]
    assert not long, long

"""The package has no import circles: each module's imports (lazy ones included) form a DAG."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "lineage_listener"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules ``path`` imports anywhere, except under ``if TYPE_CHECKING:``.

    ``from p import n`` imports the module ``p.n`` when there is one (``from lineage_listener import redact``),
    else ``p`` itself (``from lineage_listener import __version__`` runs the package root)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                      for a in node.names}
    return {m for m in found if m in modules}


def import_graph() -> nx.DiGraph:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in files.items():
        graph.add_node(name)
        for target in imports(path, set(files)):
            if target != name:
                graph.add_edge(name, target)
    return graph


def test_no_import_circles():
    graph = import_graph()
    assert graph.has_edge("lineage_listener.lineage.nodes", "lineage_listener.lineage.walker")
    assert list(nx.simple_cycles(graph)) == []


def test_imports_of_the_package_root_count(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text("from lineage_listener import redact\nfrom lineage_listener import __version__\n")
    names = {"lineage_listener", "lineage_listener.redact"}
    assert imports(module, names) == names
    module.write_text("from lineage_listener import redact\n")
    assert imports(module, names) == {"lineage_listener.redact"}


def test_walker_imports_no_handlers_or_rules():
    graph = import_graph()
    walker = set(graph.successors("lineage_listener.lineage.walker"))
    assert not walker & {"lineage_listener.lineage.nodes", "lineage_listener.lineage.expressions"}


#: The package's layers, lowest first: a module imports only from its own layer or lower ones
#: (docs/development.md, "Layers"). Modules directly in the package are named by their file.
LAYERS = (
    # shared helpers; plan classes; Python code read
    ("redact", "tls", "timewindow", "ownthread", "jar", "version", "plan", "pycode"),
    ("lineage",),                              # the walk: plan -> column edges
    ("store",),                                # the DuckDB store: schema, batches, writers
    ("query",),                                # questions over a store: graphs, copies, windows
    ("govern",),                               # labels, policies, diffs over a store
    ("openlineage", "datahub", "kafka"),       # formats and transports (labels travel in them)
    ("capture",),                              # listener -> walk -> store or transport
    ("bridge", "preview"),                     # the zero-code worker; SQL walked as capture walks it
    ("server",),                               # REST and UI
    ("cli", "__init__", "__main__"),           # the command line and the Python entry points
)


def layer_of(module: str) -> int:
    parts = module.split(".")
    room = parts[1] if len(parts) > 1 else "__init__"
    for n, rooms in enumerate(LAYERS):
        if room in rooms:
            return n
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS and docs/development.md")


def test_no_import_from_a_lower_layer_to_a_higher_one():
    graph = import_graph()
    upward = sorted(f"{a} -> {b}" for a, b in graph.edges() if layer_of(a) < layer_of(b))
    assert upward == []

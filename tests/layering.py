"""The import picture of the tree: #include edges between the C folders
(cpython/ core/ guards/ inspect/ tui/ viz/ readerfuzz/), include and call
edges between the C files (c_file_edges), and import edges between the Python
modules of dynamo/ and between its rooms.  A room is a package under
dynamo/ (bytecode, tracer, backends, compat: everything inside it counts
as the package) or one top-level module of dynamo/ (convert_frame,
output_graph, guards, ...; dynamo/__init__.py is the room `dynamo`).
Every import statement counts, function-level ones too; `from pkg import
mod` is an import of mod (pkg is loading already), `from pkg import name`
of pkg (its __init__).  `python tests/layering.py` prints the graphs and
any cycle; tests/test_layering.py asserts the picture (issues 11 and 28).

Only folder-to-folder edges are kept for C: a file including a file of its
own folder is no edge.  An include is resolved against the including
file's folder first (the compilers' rule for quoted includes), then
against the folders the Makefile passes with -I.
"""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_FOLDERS = ("cpython", "core", "guards", "inspect", "tui", "viz", "readerfuzz")
C_SUFFIXES = (".c", ".h", ".cpp")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _c_files():
    for folder in C_FOLDERS:
        for dirpath, _dirs, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(C_SUFFIXES):
                    yield os.path.join(dirpath, name)


# Files that are a layer of their own inside another folder (none: cpython/
# holds the one header with CPython internals, below core/ and guards/ both,
# STYLE.md rule 6; readerfuzz/ the test harness over the reader and both
# tools, above them).
OWN_LAYER = ()


def _folder_of(path):
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    for layer in OWN_LAYER:
        if rel == layer or rel.startswith(layer + "/"):
            return layer
    return rel.split("/")[0]


def c_edges():
    """{(from folder, to folder): [(file, included file)]} over quoted includes."""
    files = list(_c_files())
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    edges = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in _INCLUDE.findall(text):
            local = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if os.path.exists(local):
                target = local
            elif len(by_name.get(os.path.basename(inc), [])) == 1:
                target = by_name[os.path.basename(inc)][0]
            else:
                continue            # a system or generated header
            if os.path.relpath(target, ROOT) == os.path.relpath(f, ROOT):
                continue
            src, dst = _folder_of(f), _folder_of(target)
            if src != dst:
                edges.setdefault((src, dst), []).append(
                    (os.path.relpath(f, ROOT), os.path.relpath(target, ROOT)))
    return edges


# ---------------------------------------------------------------- C files

def _c_module_of(path):
    """core/telemetry.c, core/telemetry.h and core/telemetry_int.h (its
    private header) -> 'core/telemetry': a .c file and its headers are one
    module."""
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    stem = rel.rsplit(".", 1)[0]
    return stem[:-len("_int")] if rel.endswith("_int.h") else stem


def _strip_c(text):
    """The text without comments, string and character literals (lines kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', text)


_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Static_assert",
             "__attribute__", "typeof", "alignof", "_Alignof", "offsetof",
             "main"}             # every program has one: no edge between the programs
_DEF_NAME = re.compile(r"(\w+)\s*\($")


def c_definitions(path):
    """Names of the functions `path` (a .c or .cpp file) defines with
    external linkage: a signature at column 0 followed by a body, not
    static (the return type on the line before or on the same line)."""
    lines = _strip_c(open(path, encoding="utf-8", errors="replace").read()).split("\n")
    names = []
    for k, line in enumerate(lines):
        if not line or line[0] in " \t#{}" or "(" not in line:
            continue
        head = line[:line.index("(") + 1]
        m = _DEF_NAME.search(head)
        if m is None or m.group(1) in _KEYWORDS or "=" in head:
            continue
        rest = "\n".join(lines[k:k + 12])
        body, proto = rest.find("{"), rest.find(";")
        if body < 0 or (0 <= proto < body) or "=" in rest[:body]:
            continue
        before = head[:m.start()] if head[:m.start()].strip() else (lines[k - 1] if k else "")
        if re.search(r"\b(static|inline)\b", before):
            continue
        names.append(m.group(1))
    return names


def c_file_edges():
    """{(module, module): [why]} between the C modules (a .c file and its
    header are one module, `_c_module_of`): an #include of another module's
    header, or a call of a function another module's .c defines (its name
    anywhere in the calling file followed by "(", after comments and
    strings are dropped)."""
    files = list(_c_files())
    defined = {}
    for f in files:
        if f.endswith((".c", ".cpp")):
            for name in c_definitions(f):
                defined.setdefault(name, set()).add(_c_module_of(f))
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    edges = {}
    call = re.compile(r"\b(\w+)\s*\(")
    for f in files:
        src = _c_module_of(f)
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in _INCLUDE.findall(text):
            local = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            target = local if os.path.exists(local) else (
                by_name[os.path.basename(inc)][0] if len(by_name.get(os.path.basename(inc), [])) == 1
                else None)
            if target is not None and _c_module_of(target) != src:
                edges.setdefault((src, _c_module_of(target)), []).append(f"#include \"{inc}\"")
        if not f.endswith((".c", ".cpp")):
            continue
        for name in sorted(set(call.findall(_strip_c(text)))):
            for dst in defined.get(name, ()):
                if dst != src:
                    edges.setdefault((src, dst), []).append(f"calls {name}()")
    return edges


def _py_room_of(module):
    """dynamo.tracer.variables.base -> 'dynamo/tracer'; dynamo.guards ->
    'dynamo/guards'; dynamo (the package's __init__) -> 'dynamo'."""
    parts = module.split(".")
    return f"{parts[0]}/{parts[1]}" if len(parts) >= 2 else parts[0]


def _py_modules():
    base = os.path.join(ROOT, "dynamo")
    for dirpath, _dirs, names in os.walk(base):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                    is_pkg = True
                else:
                    is_pkg = False
                yield path, ".".join(rel), is_pkg


def _is_ours(module):
    """Is the dotted name a module or package of the tree (dynamo._C, the
    built extension, counts)?"""
    path = os.path.join(ROOT, *module.split("."))
    return (os.path.isdir(path) or os.path.exists(path + ".py")
            or module == "dynamo._C")


def _imported(node, package):
    """The dotted names an import statement `node` of a module in `package`
    imports, before resolving them to modules of ours."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = package.split(".")
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base)
        mod = f"{prefix}.{node.module}" if node.module else prefix
    else:
        mod = node.module or ""
    # `from pkg import mod` imports mod (pkg is already loading); a name
    # that is no module of ours is an import of pkg itself
    return [f"{mod}.{a.name}" if _is_ours(f"{mod}.{a.name}") else mod for a in node.names]


def py_module_edges():
    """{(module, imported module): [line, ...]} between the modules of
    dynamo/ (a package is its __init__) over every import statement,
    function-level ones too: they are edges all the same."""
    edges = {}
    for path, module, is_pkg in _py_modules():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        package = module if is_pkg else module.rpartition(".")[0]
        for node in ast.walk(tree):
            for t in _imported(node, package):
                if not t.startswith("dynamo"):
                    continue
                # the longest prefix that is a module or package of ours
                parts = t.split(".")
                while parts and not _is_ours(".".join(parts)):
                    parts.pop()
                if parts and ".".join(parts) != module:
                    edges.setdefault((module, ".".join(parts)), []).append(node.lineno)
    return edges


def py_edges():
    """{(from room, to room): [(module, imported module)]}: the module
    edges between rooms."""
    edges = {}
    for (module, t), lines in sorted(py_module_edges().items()):
        src, dst = _py_room_of(module), _py_room_of(t)
        if src != dst:
            edges.setdefault((src, dst), []).extend([(module, t)] * len(lines))
    return edges


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan):
    folders, rooms or modules, whatever `edges` joins."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):               # depth bounded by the length of a path: some dozens of modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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


def picture(edges):
    lines = []
    for (a, b), why in sorted(edges.items()):
        sample = ", ".join(f"{x} -> {y}" for x, y in why[:2])
        more = f" (+{len(why) - 2})" if len(why) > 2 else ""
        lines.append(f"  {a:16} -> {b:16} {sample}{more}")
    return "\n".join(lines)


def main():
    found = cycles(c_file_edges())
    print("C file-level cycles (includes and calls): " +
          ("; ".join(" <-> ".join(c) for c in found) if found else "none"))
    for title, edges in (("C #include edges between folders", c_edges()),
                         ("Python import edges between dynamo/ rooms", py_edges())):
        print(title + ":")
        print(picture(edges))
        found = cycles(edges)
        print("  cycles: " + ("; ".join(" <-> ".join(c) for c in found) if found else "none"))
    found = cycles(py_module_edges())
    print("Python import cycles between dynamo/ modules: " +
          ("; ".join(" <-> ".join(c) for c in found) if found else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

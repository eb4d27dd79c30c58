"""Top-level functions and classes of tebench/ whose name is referenced nowhere in tebench/, templates/,
benchmarks/, scripts/ or docs/ (mkdocs hooks) but is referenced in tests/. Name-based: a name is 'referenced'
where an identifier, attribute or import of that name appears (ast), or where it appears as a word in a Jinja
template; its own definition does not count. Methods are not looked at. Also: private (leading underscore)
names of tebench reached by tests (imported, or read as module._name)."""
import ast, pathlib, re, sys, collections

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))

def names_in(path):
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:  # a .py file that is not Python (a fixture of the fuzz corpus): no names
        return collections.Counter()
    seen = collections.Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            seen[node.id] += 1
        elif isinstance(node, ast.Attribute):
            seen[node.attr] += 1
        elif isinstance(node, ast.alias):
            seen[node.name.split(".")[-1]] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Za-z_]\w*", node.value):
            seen[node.value] += 1  # getattr(module, "name"), __all__ entries
    return seen

def defs():
    out = []
    for path in sorted((ROOT / "tebench").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append((path, node.name))
    return out

def counter(folders, exts=(".py",)):
    c = collections.Counter()
    for f in folders:
        base = ROOT / f
        if not base.exists():
            continue
        for path in base.rglob("*"):
            if path.suffix == ".py":
                c.update(names_in(path))
            elif path.suffix in (".j2",):
                c.update(re.findall(r"[A-Za-z_]\w*", path.read_text()))
    return c

def test_only():
    prod = counter(["tebench", "templates", "benchmarks", "scripts", "docs"])
    tests = counter(["tests"])
    # A name's own def is one Name-less occurrence (FunctionDef.name is not an ast.Name), so prod[name] counts uses.
    out = []
    for path, name in defs():
        if name.startswith("__"):
            continue
        if prod[name] == 0 and tests[name] > 0:
            out.append((path.relative_to(ROOT), name, tests[name]))
    return out

def private_reached():
    """(test file, tebench name) for `from tebench... import _x` and `mod._x` where mod is a tebench module imported."""
    hits = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        mods = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("tebench"):
                        mods.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tebench"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        hits.append((path.relative_to(ROOT), f"{node.module}.{a.name}", node.lineno))
                    else:
                        mods.add(a.asname or a.name)  # may be a module (from tebench.report import tables)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                chain = []
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in mods:
                    hits.append((path.relative_to(ROOT), ".".join([base.id, *reversed(chain), node.attr]), node.lineno))
    return hits

if __name__ == "__main__":
    t = test_only()
    print(f"top-level tebench functions/classes referenced only from tests/: {len(t)}")
    for p, n, k in t:
        print(f"  {p}: {n} ({k} test refs)")
    h = private_reached()
    names = collections.Counter(n for _, n, _ in h)
    print(f"private tebench names reached from tests/: {len(names)} names, {len(h)} sites, "
          f"{len({p for p, _, _ in h})} test modules")
    for n, k in sorted(names.items()):
        print(f"  {n}: {k}")

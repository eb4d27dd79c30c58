"""Attributes with a leading underscore read or written in tebench/ (x._name, x.__name__), with how many sites,
and whether tebench itself defines that name (def/class/assignment/annotation/PrivateAttr). A name not defined in
tebench belongs to a library or to Python; those on pydantic objects are what 'pydantic internals' would be."""
import ast, pathlib, sys, collections
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2])) / "tebench"
used = collections.defaultdict(list)
defined = set()
for path in sorted(ROOT.rglob("*.py")):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            used[node.attr].append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
if __name__ == "__main__":
    for name, sites in sorted(used.items()):
        if name in defined:
            continue
        print(f"{name}: {len(sites)}  {', '.join(sites[:6])}{' …' if len(sites) > 6 else ''}")

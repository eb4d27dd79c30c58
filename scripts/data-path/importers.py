"""Modules that import a given tebench module (any import statement, at top level or inside a function,
TYPE_CHECKING blocks included and reported). Usage: importers.py tebench.plan.environment [ROOT] [folder]"""
import ast, pathlib, sys

def importers(target, root, folder="tebench"):
    pkg, _, leaf = target.rpartition(".")
    out = []
    for path in sorted((root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        parents = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        hits = []
        for node in ast.walk(tree):
            ok = False
            if isinstance(node, ast.Import):
                ok = any(a.name == target or a.name.startswith(target + ".") for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                ok = node.module == target or (node.module == pkg and any(a.name == leaf for a in node.names))
            if ok:
                p, tc = node, False
                while p in parents:
                    p = parents[p]
                    if isinstance(p, ast.If) and "TYPE_CHECKING" in ast.unparse(p.test):
                        tc = True
                hits.append((node.lineno, tc))
        if hits:
            out.append((path.relative_to(root), hits))
    return out

if __name__ == "__main__":
    target = sys.argv[1]
    root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else str(pathlib.Path(__file__).resolve().parents[2]))
    folder = sys.argv[3] if len(sys.argv) > 3 else "tebench"
    found = importers(target, root, folder)
    for p, hits in found:
        print(p, hits)
    print("modules:", len(found), " of which only under TYPE_CHECKING:", sum(all(tc for _, tc in h) for _, h in found))

"""Helper names defined at the top level of more than one test module: `def _name` (and, separately, any
top-level def/class whose name starts with an underscore) in tests/**/*.py, counted per file."""
import ast, collections, pathlib, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))

def duplicated(folder="tests"):
    where = collections.defaultdict(list)
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(ROOT)))
    return {n: fs for n, fs in where.items() if len(set(fs)) >= 2}

if __name__ == "__main__":
    d = duplicated()
    print(f"top-level `def _name` defined in >= 2 test files: {len(d)} names")
    for n, fs in sorted(d.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {n}: {len(set(fs))} files")
    print("_case:", len(set(d.get("_case", []))))


def duplicated_any(folder="tests"):
    """Every top-level function of a test module that is not a test (name not starting with test_), fixtures
    included, by name, in >= 2 files; and fixtures apart."""
    where = collections.defaultdict(set)
    fixtures = collections.defaultdict(set)
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("test_"):
                is_fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
                (fixtures if is_fixture else where)[node.name].add(str(path.relative_to(ROOT)))
    return ({n: fs for n, fs in where.items() if len(fs) >= 2}, {n: fs for n, fs in fixtures.items() if len(fs) >= 2})


if __name__ == "__main__":
    helpers, fixtures = duplicated_any()
    print(f"top-level non-test, non-fixture functions (any name) in >= 2 test files: {len(helpers)} names")
    for n, fs in sorted(helpers.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {n}: {len(fs)} files: {', '.join(sorted(fs))}")
    print(f"fixtures defined in >= 2 test files: {len(fixtures)} names")
    for n, fs in sorted(fixtures.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {n}: {len(fs)} files")

"""String-key reads of an environment object in tebench/ (AST).

Method: every `X["lit"]` subscript load and every `X.get("lit", ...)` call in tebench/**/*.py where
either (a) the receiver's source text contains "env" (case-insensitive) but is not a process-environment
mapping (os.environ, environ, child_env, probe_env, env_vars of os), or (b) the key is a field name of
schema/environment.Environment / GPU / Support / PeakRates and the receiver text contains "env".
Printed per site; classified by hand in data-path.md.
"""
import ast, pathlib, re, sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
PROCESS_ENV = re.compile(r"(os\.environ|^environ$|environ\b|child_env|probe_env|^os_env)")

def sites():
    for path in sorted((ROOT / "tebench").rglob("*.py")):
        src = path.read_text()
        tree = ast.parse(src)
        for node in ast.walk(tree):
            recv = key = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    recv, key = node.value, node.slice.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                recv, key = node.func.value, node.args[0].value
            if recv is None:
                continue
            text = ast.get_source_segment(src, recv) or ""
            if "env" not in text.lower() or PROCESS_ENV.search(text):
                continue
            yield path.relative_to(ROOT), node.lineno, text, key

if __name__ == "__main__":
    found = list(sites())
    for p, line, text, key in found:
        print(f"{p}:{line}: {text}[{key!r}]")
    print("total", len(found))

"""Where numeric limits are declared in tebench/: `knob(..., min=, max=)` (schema/knobs.py's dataclass metadata,
checked by knobs.check_value) and the record model's `field(..., ge=/le=/gt=/lt=)` and `Limits(...)` (pydantic,
schema/part.py). Printed per file, and the quantities limited in both (matched by field name)."""
import ast, collections, pathlib, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))

def scan():
    knob, model = collections.defaultdict(list), collections.defaultdict(list)
    for path in sorted((ROOT / "tebench").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            target = None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Call):
                target, call = node.target.id, node.value
            else:
                continue
            fn = ast.unparse(call.func)
            kws = {k.arg for k in call.keywords}
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if fn.endswith("knob") and kws & {"min", "max"}:
                knob[target].append(where)
            if fn.endswith("field") and (kws & {"ge", "le", "gt", "lt"} or "Limits(" in ast.unparse(node.annotation)):
                model[target].append(where)
    return knob, model

if __name__ == "__main__":
    knob, model = scan()
    files = collections.Counter(w.split(":")[0] for ws in knob.values() for w in ws)
    print(f"knob(min/max) fields: {sum(map(len, knob.values()))} in {dict(files)}")
    files = collections.Counter(w.split(":")[0] for ws in model.values() for w in ws)
    print(f"record-model fields with ge/le/gt/lt or Limits: {sum(map(len, model.values()))} in {dict(files)}")
    both = sorted(set(knob) & set(model))
    print(f"field names limited in both: {both}")
    for n in both:
        print(f"  {n}: knob {knob[n]}; model {model[n]}")

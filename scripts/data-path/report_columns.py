"""The report's case table: its declared columns (report/rows.py) and how often tebench/report/ reads a column by
string key (`x["col"]`, `x.get("col")` with col a declared column of CaseRow/Baselines/CaseMarks/HeadlineRow/AoFp8)."""
import ast, collections, dataclasses, pathlib, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT))
from tebench.report import rows

def declared():
    case = [f.name for f in dataclasses.fields(rows.CaseRow)]
    base = [f.name for f in dataclasses.fields(rows.Baselines)]
    marks = [f.name for f in dataclasses.fields(rows.CaseMarks)]
    head = list(rows.columns(rows.HeadlineRow))
    return case, base, marks, head

def string_reads(names):
    per_file = collections.Counter()
    for path in sorted((ROOT / "tebench" / "report").rglob("*.py")):
        src = path.read_text()
        for node in ast.walk(ast.parse(src)):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                key = node.args[0].value
            if isinstance(key, str) and key in names:
                per_file[path.name] += 1
    return per_file

if __name__ == "__main__":
    case, base, marks, head = declared()
    print(f"case table columns declared: CaseRow {len(case)} (7 energy ones dropped where no row has them) "
          f"+ Baselines {len(base)} = {len(case) + len(base)}; CaseMarks {len(marks)}; headline {len(head)}")
    reads = string_reads(set(case + base + marks + head))
    print(f"reads of a declared column by string literal in tebench/report/: {sum(reads.values())}: {dict(reads)}")

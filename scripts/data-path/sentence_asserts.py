"""Asserts in tests/ that compare with a whole sentence.

Definition: an `assert` statement whose test holds a comparison (==, !=, in, not in) with an operand that is a
string literal of >= 6 whitespace-separated words. A plain literal (ast.Constant str, implicit concatenation
included) is counted in `literal`; an f-string whose literal parts alone hold >= 6 words in `fstring`.
Counted once per assert statement."""
import ast, collections, pathlib, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
WORDS = 6

def words(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return len(node.value.split()), "literal"
    if isinstance(node, ast.JoinedStr):
        text = " ".join(v.value for v in node.values if isinstance(v, ast.Constant))
        return len(text.split()), "fstring"
    return 0, None

def count(folder="tests"):
    out = collections.Counter()
    by_op = collections.Counter()
    files = collections.Counter()
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            best = None
            for cmp in ast.walk(node.test):
                if not isinstance(cmp, ast.Compare):
                    continue
                for op, (left, right) in zip(cmp.ops, zip([cmp.left, *cmp.comparators], cmp.comparators)):
                    if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                        continue
                    for side in (left, right):
                        n, kind = words(side)
                        if n >= WORDS and (best is None or kind == "literal"):
                            best = (kind, type(op).__name__)
            if best:
                out[best[0]] += 1
                by_op[best[1]] += 1
                files[str(path.relative_to(ROOT))] += 1
    return out, by_op, files

if __name__ == "__main__":
    out, by_op, files = count()
    print(f"asserts comparing with a string of >= {WORDS} words: {sum(out.values())} "
          f"(plain literal {out['literal']}, f-string {out['fstring']}); by operator {dict(by_op)}; in {len(files)} files")
    for f, n in files.most_common(10):
        print(f"  {f}: {n}")

"""Judgeable case records (a loss curve, ok or diverged) under reports/ and tests/fixtures/ with a parity verdict: how many carry this tebench's rules
(tebench.analysis.parity.PARITY_RULES), so that a reader takes them as stored, and how many do not (judged again on
every read). Plain json, no tebench reader."""
import gzip, json, pathlib, sys, collections
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT))
from tebench.analysis.parity import PARITY_RULES
files = collections.Counter()
recs = collections.Counter()
for path in sorted([*ROOT.glob("reports/**/*.jsonl"), *ROOT.glob("reports/**/*.jsonl.gz"), *ROOT.glob("tests/fixtures/*.jsonl")]):
    opener = gzip.open if path.suffix == ".gz" else open
    kinds = collections.Counter()
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            # parity.judgeable: a loss curve, status ok or diverged; parity.current: parity.rules == PARITY_RULES
            if isinstance(r, dict) and r.get("type") == "case" and r.get("loss") is not None \
                    and r.get("status") in ("ok", "diverged"):
                par = r.get("parity") if isinstance(r.get("parity"), dict) else {}
                kinds["current" if par.get("rules") == PARITY_RULES else "other-or-none"] += 1
    if kinds:
        recs.update(kinds)
        files["all current" if not kinds["other-or-none"] else ("none current" if not kinds["current"] else "mixed")] += 1
print(f"PARITY_RULES = {PARITY_RULES!r}; verdicts: {dict(recs)}; files: {dict(files)}")

"""Runtime checks behind data-path.md (import tebench from ROOT; no files written):

1. a worker's result is validated once: record_builder.measurements(raw) builds the Measurements; the CaseResult
   built from it holds the same part objects (identity), and the plan's Case object itself;
2. a record built here, written (to_dict), read back (from_dict) and written again gives the same JSON text;
3. each case line of tests/fixtures/cpu-smoke.jsonl, read and written again: equal to the line's object apart
   from `case` (the reader completes a case's settings with those added since the file was written);
4. every record part derives from schema/part.PartBase (a pydantic BaseModel): how many classes.
"""
import json, pathlib, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT))
from tebench.schema.records import Measurements, CaseResult, Case
from tebench.schema import part
from tebench.run import record_builder
from tebench.store import reader

lines = (ROOT / "tests/fixtures/cpu-smoke.jsonl").read_text().splitlines()
first = next(json.loads(l) for l in lines if json.loads(l).get("type") == "case")
case = Case.from_dict(first["case"])
m = record_builder.measurements({"status": "ok", "timing": {"samples_ms": [1.0, 2.0, 3.0], "timer": "perf_counter"}})
cr = CaseResult(**{n: getattr(m, n) for n in Measurements.measured()}, type="case", run_id="r", case_id=case.id,
                round=0, case=case)
print(f"1. CaseResult built from the Measurements keeps its part objects: {cr.timing is m.timing}; "
      f"holds the plan's Case object: {cr.case is case}")
built = cr.to_dict()
again = CaseResult.from_dict(json.loads(json.dumps(built))).to_dict()
print(f"2. built record: to_dict == to_dict after writing and reading back: {json.dumps(built) == json.dumps(again)}")
same = differ = 0
for l in lines:
    d = json.loads(l)
    if d.get("type") != "case":
        continue
    out = reader.parse_record(json.loads(l)).to_dict()
    strip = lambda x: json.dumps({k: v for k, v in x.items() if k != "case"})
    same, differ = (same + 1, differ) if strip(out) == strip(d) else (same, differ + 1)
print(f"3. fixture case lines read and written again, equal apart from `case`: {same}; differing: {differ}")

def subs(c):
    out = set()
    for s in c.__subclasses__():
        out |= {s} | subs(s)
    return out
from tebench.schema import environment  # noqa: F401  (its parts)
print(f"4. classes deriving from PartBase (pydantic BaseModel): {len(subs(part.PartBase))}")

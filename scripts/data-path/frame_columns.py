"""Columns of report/tables.case_frame for a results file: how wide the report's case table is in practice."""
import sys, pathlib, warnings
ROOT = pathlib.Path(sys.argv[1]); sys.path.insert(0, str(ROOT))
from tebench.report import load, tables
for f in sys.argv[2:]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = tables.case_frame(load.load_all([ROOT / f]))
    print(f"{f}: {df.shape[1]} columns, {df.shape[0]} rows; dtypes: {dict(df.dtypes.astype(str).value_counts())}")

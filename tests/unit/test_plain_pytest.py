"""Plain `pytest` (and so `tox`) collects every test module, as `python -m pytest` does.

`python -m pytest` puts the working directory on the import path; the `pytest` script does not. Four modules
import `tests.*` and many import `conftest`: the `pythonpath` setting of [tool.pytest.ini_options] is what lets
them collect either way. `python -P` (3.11) runs pytest the way the script does, without the working directory.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (no working directory on the path) is 3.11's")
def test_collection_needs_no_working_directory_on_the_path():
    done = subprocess.run([sys.executable, "-P", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]

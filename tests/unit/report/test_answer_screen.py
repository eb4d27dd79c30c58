"""The first screen in a real browser: headless Chromium opens index.html at 1,400 px and measures whether the first
answer table, or the page, scrolls sideways. Skipped where no Chromium is installed; failed instead in CI
(see the ``chromium`` fixture in conftest).

The measurement runs as a script added to a copy of the page; it writes its numbers into the DOM, and
``--dump-dom`` returns them. Virtual time (``--virtual-time-budget``) lets the page load and lay out
completely however loaded the machine is: nothing here depends on wall-clock time.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from tebench.report import render

WIDTH = 1400
PROBE = """<script>
window.addEventListener('load', function () {
  var table = document.querySelector('table.answer'), page = document.documentElement;
  var figures = Array.from(document.querySelectorAll('figure img'));
  var out = {found: !!table, table_right: table ? table.getBoundingClientRect().right : null,
             page_scroll: page.scrollWidth, page_client: page.clientWidth,
             figures_over: figures.filter(function (i) { return i.getBoundingClientRect().right > page.clientWidth; }).length};
  var pre = document.createElement('pre');
  pre.id = 'tebench-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def measure(chromium: str, index_html: Path, work: Path) -> dict:
    """Open ``index_html`` at :data:`WIDTH` px in headless Chromium; what the probe measured."""
    page = work / "probe.html"
    page.write_text(index_html.read_text().replace("</body>", PROBE + "</body>"))
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--window-size={WIDTH},1000", "--virtual-time-budget=10000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=300)
    found = re.search(r'<pre id="tebench-probe">([^<]*)</pre>', run.stdout)
    assert found, f"the probe did not report (exit {run.returncode}): {run.stderr[-2000:]}"
    return json.loads(found.group(1))


@pytest.mark.parametrize("results", [ROOT / "reports" / "h200-nightly-energy" / "results.jsonl",
                                     FIXTURES / "cpu-smoke.jsonl"], ids=["h200-nightly-energy", "cpu-smoke"])
def test_the_first_screen_does_not_scroll_sideways_at_1400_px(results, tmp_path, chromium):
    out = render([results], tmp_path / "report")
    seen = measure(chromium, out / "index.html", tmp_path)
    assert seen["found"], "no first-screen table in index.html"
    assert seen["table_right"] <= seen["page_client"], seen
    assert seen["page_scroll"] <= seen["page_client"], seen  # nothing else pushes the page sideways either
    assert seen["figures_over"] == 0, seen  # every chart fits the page: none scrolls in its frame

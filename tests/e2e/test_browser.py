"""The HTML report in a real browser: headless Chromium opens it from disk, reports no
console error or failed load, and decodes every chart. Skips when no Chromium is installed
(Debian: apt-get install chromium), except in CI, where it fails (the ``chromium`` fixture in conftest).

Chromium is driven over its DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages separated by NUL bytes on file descriptors 3 and 4), so no websocket client or
extra package is needed.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from tebench import report



class Browser:
    """A headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, chromium: str, tmp: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4, where Chromium expects them
            # First out of the way (>= 10): one end may itself be fd 3 or 4.
            r, w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={tmp / 'profile'}",
             "--window-size=1400,1000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, timeout: float = 60.0, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


# Every <img> decoded, with its natural size (0 x 0 when it did not decode).
DECODE_ALL = """
Promise.all([...document.images].map(img => img.decode()
    .then(() => [img.alt, img.naturalWidth, img.naturalHeight])
    .catch(e => [img.alt, 0, 0, String(e)])))
"""


def open_page(chromium: str, path: Path, tmp: Path) -> tuple[list, list[str], dict]:
    """Load ``path`` and return (decoded images, error messages, layout facts)."""
    browser = Browser(chromium, tmp)
    try:
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable", session=True)
        browser.call("Page.navigate", session=True, url=path.resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        images = browser.call("Runtime.evaluate", session=True, expression=DECODE_ALL, awaitPromise=True,
                              returnByValue=True)["result"]["value"]
        layout = browser.call("Runtime.evaluate", session=True, returnByValue=True, expression="""({
            answerTop: document.getElementById('answer').getBoundingClientRect().top,
            pageWidth: document.documentElement.scrollWidth,
            viewWidth: window.innerWidth,
            stickyFirst: getComputedStyle(document.querySelector('#cases .table-wrap.scroll td')).position,
        })""")["result"]["value"]
        errors = []
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(a.get("value", a)) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                errors.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append("log: " + params["entry"].get("text", ""))
        return images, errors, layout
    finally:
        browser.close()


@pytest.mark.parametrize("fixture", ["cpu-smoke.jsonl", "h200-crossover.jsonl"])
def test_report_opens_in_chromium_without_errors(fixture, tmp_path, chromium):
    out = report.render([FIXTURES / fixture], tmp_path / "rep")
    images, errors, layout = open_page(chromium, out / "index.html", tmp_path)
    assert errors == []
    assert len(images) >= 4
    broken = [img for img in images if not (img[1] > 0 and img[2] > 0)]
    assert broken == []
    # The answer is on the first screen; the page itself never scrolls sideways (wide tables and
    # charts scroll inside their own boxes); the case table keeps its first column in view.
    assert layout["answerTop"] < 400
    assert layout["pageWidth"] <= layout["viewWidth"]
    assert layout["stickyFirst"] == "sticky"


def test_a_broken_image_is_caught(tmp_path, chromium):
    """The check itself can fail: a page with an undecodable image and a console error."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><section id="answer"></section>'
                    '<div id="cases"><div class="table-wrap scroll"><table><tr><td>x</td></tr></table></div></div>'
                    '<img alt="bad" src="data:image/png;base64,AAAA"><script>console.error("boom")</script>'
                    '</body></html>')
    images, errors, _ = open_page(chromium, page, tmp_path)
    assert images[0][1] == 0 and any("boom" in e for e in errors)


@pytest.mark.parametrize("ci, code, said", [("true", 1, "CI is set but no Chromium is on PATH"),
                                            ("", 0, "1 skipped")])
def test_a_missing_chromium_fails_in_ci_and_skips_elsewhere(ci, code, said, tmp_path):
    """Without a browser on PATH, a CI run of a browser test fails (CI must not pass by skipping it);
    elsewhere it skips."""
    env = {**os.environ, "PATH": str(tmp_path), "CI": ci}  # an empty folder: no chromium to find
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{__file__}::test_a_broken_image_is_caught"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert said in proc.stdout

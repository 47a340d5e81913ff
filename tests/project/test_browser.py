"""The app in a real browser: headless Chromium opens every page, trains, and screenshots.

Starts `streamlit run project/app.py` on a free localhost port and Debian's
`chromium` with its DevTools protocol (driven with the `websockets` package), opens
each page as `/<page>?demo=1&epochs=N` (a demo page starts its default action by
itself), waits for the page to finish, checks what a student would see, and saves
`docs/screenshots/<n>-<page>.png` (shown in the README; `MINIFW_SCREENSHOTS=DIR`
saves them in DIR instead). Skipped where Chromium is not installed (`apt-get
install chromium`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from project.app_pages import PAGES

ROOT = Path(__file__).resolve().parents[2]
# MINIFW_SCREENSHOTS=DIR saves them elsewhere (to check the app without touching docs/).
SHOTS = Path(os.environ.get("MINIFW_SCREENSHOTS") or ROOT / "docs" / "screenshots")
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.extra,
    pytest.mark.skipif(BROWSER is None, reason="needs Chromium (apt-get install chromium)"),
]

WIDTH = 1400
# page slug -> (query, text that shows the page is done, seconds to wait, window height)
PLAN = {
    "train": ("?demo=1&epochs=20", "training finished after 20 epochs", 240, 1500),
    "autograd": ("", "backward() fills grad", 60, 1400),
    "tensors": ("?demo=1", "Shaded storage cells", 60, 1400),
    "digits": ("?demo=1&epochs=2", "feature maps", 300, 2400),
    "profiler": ("?demo=1", "profiler table", 240, 2000),
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def wait_for(url: str, timeout: float) -> Any:
    """The JSON (or True) an HTTP GET of `url` answers, once it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                body = reply.read()
                return json.loads(body) if url.endswith("/list") else True
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer within {timeout} s") from None
            time.sleep(0.3)


class Browser:
    """One Chromium tab over the DevTools protocol (synchronous calls)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.counter = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.counter += 1
        self.connection.send(json.dumps({"id": self.counter, "method": method, "params": params}))
        while True:
            reply = json.loads(self.connection.recv(timeout=60))
            if reply.get("id") == self.counter:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]  # type: ignore[no-any-return]

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def text(self) -> str:
        return str(self.js("document.body ? document.body.innerText : ''") or "")

    def open(self, url: str, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.call("Page.navigate", url=url)

    def wait_text(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.text()
            if text in body:
                return body
            time.sleep(1.0)
        raise AssertionError(f"the page never showed {text!r}; it shows:\n{self.text()[:3000]}")

    def screenshot(self, path: Path) -> None:
        result = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(result["data"]))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    pytest.importorskip("streamlit", reason="the app needs streamlit (pip install -e '.[app]')")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "project/app.py",
         "--server.headless", "true", "--server.address", "localhost",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(f"http://localhost:{port}/_stcore/health", 90)
        yield f"http://localhost:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert BROWSER is not None
    pytest.importorskip("websockets", reason="drives Chromium (pip install websockets)")
    port = free_port()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--window-size={WIDTH},1400", f"--remote-debugging-port={port}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            targets = wait_for(f"http://localhost:{port}/json/list", 60)
            deadline = time.monotonic() + 30
            while not [t for t in targets if t.get("type") == "page"]:
                if time.monotonic() > deadline:
                    raise TimeoutError("Chromium opened no page")
                time.sleep(0.3)
                targets = wait_for(f"http://localhost:{port}/json/list", 10)
            from websockets.sync.client import connect

            page = next(t for t in targets if t.get("type") == "page")
            with connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024) as connection:
                yield Browser(connection)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def visit(browser: Browser, server: str, slug: str) -> str:
    """Open a page, wait until it is done and has settled, screenshot it; its text."""
    query, done, timeout, height = PLAN[slug]
    info = next(p for p in PAGES if p.slug == slug)
    path = "" if info == PAGES[0] else slug  # the first page is the app's root
    browser.open(f"{server}/{path}{query}", height)
    body = browser.wait_text(done, timeout)
    time.sleep(3.0)  # the last redraw and the figures
    body = browser.text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(SHOTS / f"{info.number}-{slug}.png")
    assert "Traceback" not in body and "Error" not in body.replace("Errors", "")
    assert "Deploy" not in body  # client.toolbarMode = "minimal"
    return body


def test_every_page_in_a_real_browser(server: str, browser: Browser) -> None:
    started = time.monotonic()
    body = visit(browser, server, "train")
    assert "train accuracy (final)" in body and "time per epoch" in body

    visit(browser, server, "autograd")
    browser.js(
        "[...document.querySelectorAll('label')].find(l => l.innerText.trim() === 'Tensors')"
        ".click()"
    )
    browser.wait_text("shape (3,)", 60)
    time.sleep(2.0)
    browser.screenshot(SHOTS / "2-autograd.png")
    smallest = browser.js(
        "Math.min(...[...document.querySelectorAll('svg text')].map(t =>"
        " parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a))"
    )
    assert smallest >= 12, f"graph text is {smallest:.1f} px at a {WIDTH} px window"
    dashed = browser.js("document.querySelectorAll('svg [stroke-dasharray]').length")
    filled = browser.js("document.querySelectorAll('svg [fill=\"#dbeafe\"]').length")
    assert (dashed, filled) == (0, 3)  # x, y, z are leaves that require grad: no constants

    body = visit(browser, server, "tensors")
    assert "strides" in body and "position of index" in body

    body = visit(browser, server, "digits")
    assert "training finished after 2 epochs" in body and "test accuracy" in body

    body = visit(browser, server, "profiler")
    assert "speed-up" in body
    overflow = browser.js(
        "(() => { const t = document.querySelector('[data-testid=\"stDataFrame\"]');"
        " const main = document.querySelector('[data-testid=\"stMainBlockContainer\"]');"
        " return t.getBoundingClientRect().right - main.getBoundingClientRect().right; })()"
    )
    assert overflow <= 1, f"the profiler's table sticks out {overflow} px"
    print(f"browser test: {time.monotonic() - started:.0f} s")

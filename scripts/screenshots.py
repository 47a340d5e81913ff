"""Screenshot every page of the app with headless Chromium, after full-length demo runs.

The README's screenshots come from tests/project/test_browser.py (a few epochs per
page, with checks); this script takes them after the pages' default runs instead.

    python scripts/screenshots.py                 # writes docs/screenshots/*.png
    python scripts/screenshots.py --out /tmp/shots --wait 20

Starts `streamlit run project/app.py` headless on localhost, opens each page as
`http://localhost:PORT/<page>?demo=1` (a demo page starts its default training or
profiling by itself) in headless Chromium, waits in real time, and saves one PNG
per page. Needs Chromium (`apt-get install chromium` on Debian) and streamlit.
"""

from __future__ import annotations

import argparse
import asyncio
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from project.app_pages import PAGES  # noqa: E402

SLOW = {"digits": 12.0, "train": 4.0}  # pages that train may take this many times --wait
TALL = {"digits": 1.9, "profiler": 1.5}  # long pages get a taller window
DONE = {"train": "training finished", "digits": "training finished", "profiler": "speed-up"}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def wait_healthy(port: int, timeout: float) -> None:
    """Wait until the streamlit server answers its health check."""
    deadline = time.monotonic() + timeout
    url = f"http://localhost:{port}/_stcore/health"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"streamlit did not answer on port {port} within {timeout} s")


def screenshot(
    browser: str, url: str, path: Path, wait: float, height: int, done: str | None = None
) -> None:
    """Open `url` in headless Chromium, wait, save a PNG.

    Waits `wait` real seconds, or, when `done` is given, until the page shows the
    text `done` (at most `wait` seconds) and a few seconds more for it to draw.

    Chromium's own `--screenshot --virtual-time-budget` fast-forwards timers but
    not streamlit's websocket, so it captures the loading skeleton; instead this
    drives the browser over the DevTools protocol (with the `websockets` package,
    which streamlit's server already installs) and waits in real time.
    """
    port = free_port()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        command = [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size=1280,{height}",
            f"--remote-debugging-port={port}",
            "about:blank",
        ]
        chromium = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            target = _page_target(port, timeout=30)
            png = asyncio.run(_capture(target, url, wait, done))
            path.write_bytes(png)
        finally:
            os.killpg(chromium.pid, signal.SIGTERM)  # the browser and its helper processes
            chromium.wait(timeout=30)


def _page_target(port: int, timeout: float) -> str:
    """The DevTools websocket URL of the browser's first page."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/json/list", timeout=2) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages:
                return str(pages[0]["webSocketDebuggerUrl"])
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"Chromium's DevTools did not answer on port {port}")


async def _capture(target: str, url: str, wait: float, done: str | None) -> bytes:
    """Navigate, wait (for the text `done`, if given), and return the PNG bytes."""
    import websockets

    async with websockets.connect(target, max_size=64 * 1024 * 1024) as connection:
        counter = 0

        async def call(method: str, **params: object) -> dict[str, object]:
            nonlocal counter
            counter += 1
            await connection.send(json.dumps({"id": counter, "method": method, "params": params}))
            while True:
                reply = json.loads(await connection.recv())
                if reply.get("id") == counter:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]  # type: ignore[no-any-return]

        await call("Page.enable")
        await call("Page.navigate", url=url)
        if done is None:
            await asyncio.sleep(wait)
        else:
            check = f"document.body.innerText.includes({json.dumps(done)})"
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                reply = await call("Runtime.evaluate", expression=check)
                if reply.get("result", {}).get("value") is True:  # type: ignore[union-attr]
                    break
                await asyncio.sleep(2.0)
            await asyncio.sleep(4.0)  # let the last redraw (and the figures) arrive
        result = await call("Page.captureScreenshot", format="png")
    return base64.b64decode(str(result["data"]))


def main(argv: list[str] | None = None) -> int:
    """Start the app, screenshot each page, stop the app."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--wait", type=float, default=20.0, help="seconds per page to load")
    parser.add_argument("--height", type=int, default=1400, help="window height in pixels")
    parser.add_argument("--browser", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "project/app.py",
         "--server.headless", "true", "--server.address", "localhost",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        wait_healthy(port, 60)
        for info in PAGES:
            path = out / f"{info.number}-{info.slug}.png"
            slug = "" if info == PAGES[0] else info.slug  # the first page is the app's root
            url = f"http://localhost:{port}/{slug}?demo=1"
            wait = args.wait * SLOW.get(info.slug, 1.0)
            height = int(args.height * TALL.get(info.slug, 1.0))
            screenshot(args.browser, url, path, wait, height, DONE.get(info.slug))
            print(f"{info.label}: {path}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

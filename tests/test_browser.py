"""A real browser: `streamlit run app.py` on a free port, headless Chromium (Debian's, driven by Playwright
with executable_path; no browser download), change the deadline, wait for the plan to update, screenshot.

Skipped when Chromium or Playwright is missing, unless PLANNER_REQUIRE_BROWSER=1 (set by .ci/run).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _require() -> None:
    missing = []
    if CHROMIUM is None:
        missing.append("chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install playwright)")
    if missing:
        if os.environ.get("PLANNER_REQUIRE_BROWSER") == "1":
            pytest.fail("browser test required but missing: " + ", ".join(missing))
        pytest.skip("missing: " + ", ".join(missing))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    _require()
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_plan_updates_in_a_real_browser(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from planner.optimize import PlanRequest, solve

    want30 = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30)).plan
    want10 = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=10)).plan
    assert want30 is not None and want10 is not None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server)
        expect(page.get_by_text(f"{want30.nodes} x {want30.server}").first).to_be_visible(timeout=90_000)
        box = page.get_by_label("Deadline (days)")
        box.fill("10")
        box.press("Enter")
        expect(page.get_by_text(f"{want10.nodes} x {want10.server}").first).to_be_visible(timeout=90_000)
        shot = tmp_path / "plan.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
    if os.environ.get("PLANNER_SCREENSHOT"):
        shutil.copy(shot, os.environ["PLANNER_SCREENSHOT"])

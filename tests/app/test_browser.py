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
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
            "--server.fileWatcherType",
            "none",  # the app as it was when started: an edit of the tree during a test does not reload it
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


LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _save(shot: Path, name: str) -> None:
    """Copy a screenshot to $PLANNER_SCREENSHOT_DIR (used to refresh docs/*.png)."""
    target = os.environ.get("PLANNER_SCREENSHOT_DIR")
    if target:
        shutil.copy(shot, Path(target) / name)


def _sidebar_select(page: Any, label: str, option: str) -> None:
    box = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text=label)
    box.click()
    page.get_by_role("option", name=option, exact=True).click()


def _upload(page: Any, label: str, path: Path) -> None:
    box = page.get_by_test_id("stFileUploader").filter(has_text=label)
    box.locator("input[type=file]").set_input_files(str(path))


def test_plan_page_follows_workload_unit_and_invalid_input(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from planner import load_catalog
    from planner.formatting import parse_number
    from planner.plan import PlanRequest, solve

    wl = load_catalog().workload("resnet50")
    want30 = solve(PlanRequest(model="llama3-8b", deadline_days=30)).plan
    want10 = solve(PlanRequest(model="llama3-8b", deadline_days=10)).plan
    # a workload chosen brings its own defaults: its amount of work and a deadline that plans (30 days for resnet50)
    want_resnet = solve(PlanRequest(model="resnet50", samples=wl.default_samples, deadline_days=30)).plan
    assert want30 is not None and want10 is not None and want_resnet is not None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(server)
        card = page.locator(".plan-card")
        expect(card.get_by_text(f"{want30.nodes} x {want30.server}", exact=True)).to_be_visible(timeout=90_000)
        box = page.get_by_role("spinbutton", name="Deadline (days)")
        box.fill("10")
        box.press("Enter")
        expect(card.get_by_text(f"{want10.nodes} x {want10.server}", exact=True)).to_be_visible(timeout=90_000)
        # the plan card never cuts a value off: every value fits its cell at 1,280 px
        expect(page.get_by_text("Why this plan")).to_be_visible()
        overflow = "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).length"
        clipped = page.eval_on_selector_all(".plan-value", overflow)
        assert clipped == 0
        shot = tmp_path / "plan.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        _save(shot, "plan-page.png")

        # switch the workload: the amount is resnet50's default in samples (with thousands separators), and the
        # plan is resnet50's
        _sidebar_select(page, "Workload", "resnet50")
        amount = page.get_by_role("textbox", name="Samples to train")
        expect(amount).to_be_visible(timeout=60_000)
        assert amount.input_value() == f"{wl.default_samples:,.0f}"
        expect(card.get_by_text(f"{want_resnet.nodes} x {want_resnet.server}", exact=True)).to_be_visible(
            timeout=90_000
        )
        # switch the unit: the amount is the default in epochs
        page.get_by_test_id("stSidebar").get_by_text("epochs", exact=True).click()
        epochs = page.get_by_role("textbox", name="Epochs to train")
        expect(epochs).to_be_visible(timeout=60_000)
        assert parse_number(epochs.input_value()) == pytest.approx(wl.default_samples / (wl.dataset_samples or 1))
        expect(card).to_be_visible(timeout=90_000)

        # an invalid value: the page says so and shows no (stale) plan
        nodes = page.get_by_role("spinbutton", name="Max nodes")
        nodes.fill("0")
        nodes.press("Enter")
        expect(page.get_by_text("Max nodes must be a whole number from 1 to 100,000.")).to_be_visible(timeout=60_000)
        expect(page.locator(".plan-card")).to_have_count(0)
        nodes.fill("64")
        nodes.press("Enter")
        expect(page.locator(".plan-card")).to_have_count(1, timeout=90_000)

        # malformed CSV uploads: one clear error on the batch and the catalog pages
        bad = tmp_path / "bad.csv"
        bad.write_text('model,deadline_days\n"llama3-8b,3\n')
        page.get_by_test_id("stSidebar").get_by_text("Batch", exact=True).click()
        expect(page.get_by_text("Batch: many procurement scenarios")).to_be_visible(timeout=60_000)
        _upload(page, "Scenario file", bad)
        said = page.get_by_text("bad.csv, line 2: 1 cells where the header has 2", exact=False)
        expect(said).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(1)
        expect(page.get_by_text("Something went wrong")).to_have_count(0)
        page.get_by_test_id("stSidebar").get_by_text("Catalog", exact=True).click()
        expect(page.get_by_text("Hardware catalog")).to_be_visible(timeout=60_000)
        _upload(page, "Upload servers", bad)
        expect(page.get_by_text("bad.csv: not valid YAML/CSV")).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(1)
        expect(page.get_by_test_id("stAlertContentSuccess")).to_have_count(0)

        # the validation page leads with the summary and the scatter
        page.get_by_test_id("stSidebar").get_by_text("Validation", exact=True).click()
        expect(page.get_by_text("Predicted vs published").first).to_be_visible(timeout=90_000)
        expect(page.locator(".vega-embed").first).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1500)
        vshot = tmp_path / "validation.png"
        page.screenshot(path=str(vshot), full_page=False)
        assert vshot.stat().st_size > 10_000
        _save(vshot, "validation-page.png")
        browser.close()

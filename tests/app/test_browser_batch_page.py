"""The app's batch page in a real browser: its results stay on the page across reruns.

The results table appears after **Run** and is still there after the next rerun of the page -- the click on its
own "Results (CSV)" download starts one, so results kept only for the run that made them would vanish. Same
tooling as tests/app/test_browser.py (its server fixture: `streamlit run app.py` on a free port, Debian's Chromium
through Playwright; skipped where either is missing unless PLANNER_REQUIRE_BROWSER=1). The scenarios are bad
input, so nothing is solved: the test measures the page.
"""

from __future__ import annotations

from pathlib import Path

from tests.app.test_browser import CHROMIUM, LAUNCH_ARGS, _upload, server

__all__ = ["server"]  # the fixture, imported for pytest


def test_batch_results_stay_on_the_page_after_the_download(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    spec = tmp_path / "two.yaml"
    spec.write_text("scenarios:\n  - {model: no-such-model-a}\n  - {model: no-such-model-b}\n")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(server)
        page.get_by_test_id("stSidebar").get_by_text("Batch", exact=True).click()
        expect(page.get_by_text("Batch: many procurement scenarios")).to_be_visible(timeout=90_000)
        _upload(page, "Scenario file", spec)
        page.get_by_role("button", name="Run").click()
        headline = page.get_by_text("2 scenarios: 2 bad_input")
        expect(headline).to_be_visible(timeout=90_000)
        with page.expect_download() as got:
            page.get_by_role("button", name="Results (CSV)").click()
        assert "no-such-model-a" in Path(got.value.path()).read_text()
        page.wait_for_timeout(1500)  # a rerun, if the click started one, has drawn the page again by now
        expect(headline).to_be_visible()
        browser.close()

"""The Plan page's inputs in a real browser (the widgets' state as Chromium sends it back, which AppTest does not
model): a workload round trip shows each workload's plan with its own framework and precision, the page keeps its
inputs across a visit to another page, the alternatives table fits at 1,400 px and the Pareto table at 1,366 px,
and an edited catalog price is summarised (a price cell given text is a warning). Same tooling as
tests/app/test_browser.py (its server fixture; skipped where Chromium or Playwright is missing unless
PLANNER_REQUIRE_BROWSER=1)."""

from __future__ import annotations

from typing import Any

from planner import load_catalog
from planner.plan import PlanRequest, solve
from planner.present import catalog_table
from tests.app.test_browser import CHROMIUM, LAUNCH_ARGS, server

__all__ = ["server"]  # the fixture, imported for pytest

WIDE = {"width": 1400, "height": 1000}


def _open(pw: Any, url: str) -> tuple[Any, Any]:
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
    page = browser.new_page(viewport=WIDE)
    page.goto(url)
    return browser, page


def _sidebar_box(page: Any, label: str) -> Any:
    """The sidebar select box's field (its value is the option shown)."""
    return page.get_by_test_id("stSidebar").get_by_role("combobox", name=label)


def _idle(page: Any) -> None:
    """Wait until the app has finished its run (a select box opened during a run may close when the run redraws)."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=90_000)
    expect(page.get_by_test_id("stStatusWidgetRunningManIcon")).to_have_count(0, timeout=90_000)


def _choose(page: Any, label: str, option: str) -> None:
    """Choose ``option`` in the sidebar's select box ``label`` once the app is idle; the list is opened again when a
    redraw closed it before the option was clicked (on a loaded machine)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    box = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text=label)
    for _ in range(3):
        _idle(page)
        box.click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=10_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    expect(_sidebar_box(page, label)).to_have_value(option)


def _shows_the_workloads_plan(page: Any, model: str) -> None:
    """The card shows the API's plan of the workload's default request, in its precision; the Precision and
    Framework boxes show the workload's own; no input problem is said."""
    from playwright.sync_api import expect

    wl = load_catalog().workload(model)
    plan = solve(PlanRequest(model=model, deadline_days=30)).plan
    assert plan is not None
    card = page.locator(".plan-card")
    expect(card.get_by_text(f"{plan.nodes} x {plan.server}", exact=True)).to_be_visible(timeout=90_000)
    expect(card.get_by_text(plan.estimate.precision, exact=True)).to_be_visible()
    expect(_sidebar_box(page, "Precision")).to_have_value(wl.precision)
    expect(_sidebar_box(page, "Framework")).to_have_value(wl.framework)
    expect(page.get_by_text("Input problem")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    _idle(page)
    expect(card.get_by_text(f"{plan.nodes} x {plan.server}", exact=True)).to_be_visible()


def test_a_workload_round_trip_shows_each_workloads_plan_in_the_browser(server: str) -> None:
    """llama3-8b -> resnet50 -> llama3-8b and gpt3-175b -> llama3-8b: a plan each time, with the workload's
    framework (resnet50: horovod) and precision (gpt3-175b: fp8) -- never 'unknown framework' or a stale label."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser, page = _open(pw, server)
        _shows_the_workloads_plan(page, "llama3-8b")
        for model in ("resnet50", "llama3-8b", "gpt3-175b", "llama3-8b"):
            _choose(page, "Workload", model)
            _shows_the_workloads_plan(page, model)
        browser.close()


def test_leaving_the_plan_page_keeps_its_inputs_in_the_browser(server: str) -> None:
    """A cost objective and a 45-day deadline are still there, with their plan, after a visit to the Catalog page."""
    from playwright.sync_api import expect, sync_playwright

    plan = solve(PlanRequest(model="llama3-8b", deadline_days=45, objective="cost")).plan
    assert plan is not None
    with sync_playwright() as pw:
        browser, page = _open(pw, server)
        card = page.locator(".plan-card")
        expect(card).to_be_visible(timeout=90_000)
        _choose(page, "Minimise", "cost")
        deadline = page.get_by_role("spinbutton", name="Deadline (days)")
        deadline.fill("45")
        deadline.press("Enter")
        expect(card.get_by_text(f"{plan.nodes} x {plan.server}", exact=True)).to_be_visible(timeout=90_000)
        page.get_by_test_id("stSidebar").get_by_text("Catalog", exact=True).click()
        expect(page.get_by_text("Hardware catalog")).to_be_visible(timeout=60_000)
        page.get_by_test_id("stSidebar").get_by_text("Plan", exact=True).click()
        expect(card.get_by_text(f"{plan.nodes} x {plan.server}", exact=True)).to_be_visible(timeout=90_000)
        expect(_sidebar_box(page, "Minimise")).to_have_value("cost")
        assert float(page.get_by_role("spinbutton", name="Deadline (days)").input_value()) == 45
        browser.close()


def test_the_alternatives_table_fits_at_1400_px(server: str) -> None:
    """Every column of the alternatives table is in view at 1,400 px: the grid needs no horizontal scrolling."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser, page = _open(pw, server)
        expect(page.locator(".plan-card")).to_be_visible(timeout=90_000)
        grid = page.get_by_test_id("stDataFrame").first
        grid.scroll_into_view_if_needed()
        expect(grid.locator(".dvn-scroller")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1000)  # the grid sizes its columns once drawn
        widths = grid.locator(".dvn-scroller").evaluate("s => [s.scrollWidth, s.clientWidth]")
        assert widths[0] <= widths[1] + 1, f"the table is {widths[0]} px wide in {widths[1]} px"
        expect(grid.locator("table th").filter(has_text="Up-front (USD)")).to_have_count(1)
        browser.close()


def test_the_pareto_table_fits_at_1366_px(server: str) -> None:
    """The Pareto front's table on a laptop screen: every column in view (was 1,302 px wide in 978 at 1,440 px),
    the objectives first, what every point shares said once above it (present.pareto_view)."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.goto(server)
        expect(page.locator(".plan-card")).to_be_visible(timeout=90_000)
        _idle(page)
        page.get_by_role("tab", name="Pareto front").click()
        page.get_by_text("Compute the Pareto front").click()
        expect(page.get_by_text("optimal plans")).to_be_visible(timeout=120_000)
        _idle(page)
        expect(page.get_by_text("Every row: Precision: bf16; Buy / rent: buy")).to_have_count(2)  # and the alternatives
        grid = page.get_by_test_id("stDataFrame").last
        grid.scroll_into_view_if_needed()
        expect(grid.locator(".dvn-scroller")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1000)  # the grid sizes its columns once drawn
        widths = grid.locator(".dvn-scroller").evaluate("s => [s.scrollWidth, s.clientWidth]")
        assert widths[0] <= widths[1] + 1, f"the table is {widths[0]} px wide in {widths[1]} px"
        headers = grid.locator("table th").all_inner_texts()
        assert headers[:3] == ["Cost (USD)", "Energy (kWh)", "Time (days)"], headers
        assert {"Server", "Nodes", "Cap (of TDP)"} <= set(headers), headers
        browser.close()


def _type_into_cell(page: Any, grid: Any, column: int, row: int, text: str, shown: str) -> None:
    """Type ``text`` into a cell of a data editor: select its first cell, move with the arrow keys, open the cell's
    editor, replace what is there, commit; wait until the cell shows ``shown``."""
    from playwright.sync_api import expect

    grid.locator(".dvn-scroller").evaluate("s => { s.scrollLeft = 0; s.scrollTop = 0; }")
    page.wait_for_timeout(300)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 35 + 17)  # the first row's id cell, below the header
    page.wait_for_timeout(300)
    for _ in range(column):
        page.keyboard.press("ArrowRight")
    for _ in range(row):
        page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")  # opens the cell's editor
    page.wait_for_timeout(300)
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")  # commits
    # the grid's accessible table: column 0 is the row marker, so the data's column c is cell c + 1
    expect(grid.locator(f"#glide-cell-{column + 1}-{row}")).to_have_text(shown, timeout=30_000)
    page.wait_for_timeout(1000)  # the edit reaches the server (a rerun) before the button is pressed


def test_an_edited_price_is_summarised_and_a_price_typed_as_text_is_a_warning(server: str) -> None:
    """On the Catalog page, mi350x-8's price typed as 3100000 and mi355x-8's typed as text (the editor empties
    the cell): validating summarises both edits ('mi350x-8: price_usd 310,000 → 3,100,000') and warns that
    mi355x-8 can no longer be bought -- it does not report success alone."""
    from playwright.sync_api import expect, sync_playwright

    table = catalog_table(load_catalog(), "servers")
    column = list(table.columns).index("price_usd")
    row = {sid: int(table.index[table["id"] == sid][0]) for sid in ("mi350x-8", "mi355x-8")}
    price = int(table.loc[row["mi355x-8"], "price_usd"])
    with sync_playwright() as pw:
        browser, page = _open(pw, server)
        expect(page.locator(".plan-card")).to_be_visible(timeout=90_000)
        page.get_by_test_id("stSidebar").get_by_text("Catalog", exact=True).click()
        expect(page.get_by_text("Hardware catalog")).to_be_visible(timeout=60_000)
        grid = page.get_by_test_id("stDataFrame").first
        expect(grid.locator(".dvn-scroller")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1000)
        _type_into_cell(page, grid, column, row["mi350x-8"], "3100000", "3100000")
        _type_into_cell(page, grid, column, row["mi355x-8"], "abc", "")
        page.get_by_role("button", name="Validate and use this table").click()
        expect(page.get_by_text("Using the edited servers table on the Plan page (2 changes).")).to_be_visible(
            timeout=60_000
        )
        expect(page.get_by_text("mi350x-8: price_usd 310,000 → 3,100,000", exact=True)).to_be_visible()
        warning = page.get_by_test_id("stAlertContentWarning").filter(has_text="mi355x-8 can no longer be bought")
        expect(warning).to_be_visible()
        expect(warning).to_contain_text(f"mi355x-8: price_usd {price:,} → empty")
        browser.close()

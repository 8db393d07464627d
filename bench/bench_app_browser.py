"""App responsiveness as a person sees it: from an input change in a real browser to the page at rest.

Starts `streamlit run app.py` on a free port, opens it in headless Chromium (Playwright, Debian's chromium), waits
for the first plan, then changes the deadline, the objective and the workload in turn and times each from the
keystroke or click until the plan card names the plan the API returns for the new inputs and Streamlit's
"running" indicator is gone (the script finished and the browser drew what it sent). bench_app.py times the
script alone, in-process; the difference is the websocket, the browser's rendering and the charts.
Run: python bench/bench_app_browser.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(cwd: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port)),
            *("--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"),
            *("--server.fileWatcherType", "none"),
        ],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit("streamlit did not start within 120 s")


def settled(page: Any, card_text: str) -> None:
    """Wait until the plan card shows ``card_text`` and the script is no longer running."""
    from playwright.sync_api import expect

    expect(page.locator(".plan-card").get_by_text(card_text, exact=True)).to_be_visible(timeout=120_000)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=120_000)


def plan_text(**request: Any) -> str:
    from planner.plan import PlanRequest, solve

    plan = solve(PlanRequest(**request)).plan
    assert plan is not None, request
    return f"{plan.nodes} x {plan.server}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs chromium (apt-get install chromium) and playwright (pip install -e '.[test]')")
    from playwright.sync_api import sync_playwright

    from planner import load_catalog

    resnet_samples = load_catalog().workload("resnet50").default_samples
    deadlines = [20 + i for i in range(args.repeats)]
    objectives = (["cost", "carbon", "time", "energy"] * args.repeats)[: args.repeats]
    timings: dict[str, list[float]] = {"deadline": [], "objective": [], "workload": []}
    with tempfile.TemporaryDirectory() as cwd:
        proc, url = start_server(cwd)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, headless=True, args=LAUNCH_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                t = time.perf_counter()
                page.goto(url)
                settled(page, plan_text(model="llama3-8b", deadline_days=30))
                first_s = time.perf_counter() - t
                sidebar = page.get_by_test_id("stSidebar")
                objective = "energy"  # the page's default
                for i, d in enumerate(deadlines):
                    want = plan_text(model="llama3-8b", deadline_days=d, objective=objective)
                    box = page.get_by_role("spinbutton", name="Deadline (days)")
                    box.fill(str(d))
                    t = time.perf_counter()
                    box.press("Enter")
                    settled(page, want)
                    timings["deadline"].append(time.perf_counter() - t)

                    objective = objectives[i]
                    want = plan_text(model="llama3-8b", deadline_days=d, objective=objective)
                    combo = sidebar.get_by_role("combobox", name="Minimise")
                    combo.click()
                    combo.fill(objective)  # narrow the list to the option wanted
                    t = time.perf_counter()
                    page.get_by_role("option", name=objective, exact=True).click()
                    settled(page, want)
                    timings["objective"].append(time.perf_counter() - t)

                    # to resnet50 (its own default amount and deadline, 30 days) and back to llama3-8b
                    for model, card in (
                        (
                            "resnet50",
                            plan_text(model="resnet50", samples=resnet_samples, deadline_days=30, objective=objective),
                        ),
                        ("llama3-8b", plan_text(model="llama3-8b", deadline_days=30, objective=objective)),
                    ):
                        combo = sidebar.get_by_role("combobox", name="Workload")
                        combo.click()
                        combo.fill(model)  # the list shows the first options only: narrow it to the one wanted
                        t = time.perf_counter()
                        page.get_by_role("option", name=model, exact=True).click()
                        settled(page, card)
                        timings["workload"].append(time.perf_counter() - t)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(f"first plan after opening the page: {first_s:.2f} s")
    for what, ts in timings.items():
        median_s, max_s = statistics.median(ts), max(ts)
        print(f"after the {what} changes: median {median_s:.2f} s (max {max_s:.2f} s, {len(ts)} changes)")


if __name__ == "__main__":
    main()

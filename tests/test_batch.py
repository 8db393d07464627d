"""Batch runs: grid expansion with stable ids, local == Ray, nothing lost on interruption, bad rows recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from planner.batch import batch, expand, load_scenarios, read_results, report, scenario_id
from planner.errors import PlannerInputError

SMALL = {
    "base": {"model": "resnet50", "deadline_days": 0.5, "objective": "cost"},
    "grid": {"gpus": [["A100"], ["H100"]], "purchase": ["buy", "rent"], "electricity_price_multiplier": [0.7, 1.3]},
}
COMPARE = ["id", "status", "server", "nodes", "fabric", "power_cap", "purchase", "objective_value", "cost_usd"]


def test_grid_expands_to_the_cartesian_product_with_stable_ids() -> None:
    sc = expand(SMALL)
    assert len(sc) == 8
    assert {(tuple(s["gpus"]), s["purchase"], s["electricity_price_multiplier"]) for s in sc} == {
        (g, p, e) for g in (("A100",), ("H100",)) for p in ("buy", "rent") for e in (0.7, 1.3)
    }
    again = expand(json.loads(json.dumps(SMALL)))
    assert [s["id"] for s in sc] == [s["id"] for s in again]  # content-derived, order-independent of dict order
    s0 = {k: v for k, v in sc[0].items() if k != "id"}
    assert sc[0]["id"] == scenario_id(dict(reversed(list(s0.items()))))


def test_grid_and_explicit_list_merge_onto_base() -> None:
    sc = expand({"base": {"model": "m"}, "grid": {"a": [1, 2]}, "scenarios": [{"b": 1}, {"b": 2, "a": 9}]})
    assert sorted((s["a"], s["b"]) for s in sc) == [(1, 1), (2, 1), (9, 2)]  # (9,2) twice collapses to one id


def test_malformed_spec_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PlannerInputError, match="unknown top-level keys"):
        expand({"bse": {}})
    bad = tmp_path / "s.yaml"
    bad.write_text("grid: {gpus: [A100\n")
    with pytest.raises(PlannerInputError, match=r"s\.yaml: not valid YAML"):
        load_scenarios(bad)


def test_mixed_good_infeasible_and_malformed_scenarios(tmp_path: Path) -> None:
    spec = [
        {"model": "bert-large", "deadline_days": 1, "gpus": ["H100"]},
        {"model": "bert-large", "deadline_days": 1e-5, "max_nodes": 2},
        {"model": "no-such-model", "deadline_days": 1},
        {"model": "bert-large", "deadline_days": -3},
        {"model": "bert-large", "deadline_days": 1, "pue": 0.5},
    ]
    df = batch(spec, tmp_path / "out", workers=1, progress=False)
    status = dict(zip(df["id"], df["status"], strict=True))
    ids = [s["id"] for s in expand(spec)]
    assert [status[i] for i in ids] == ["optimal", "infeasible", "bad_input", "bad_input", "bad_input"]
    msgs = dict(zip(df["id"], df["message"], strict=True))
    assert "unknown model 'no-such-model'" in msgs[ids[2]]
    assert f"scenario {ids[3]}: deadline_days" in msgs[ids[3]]
    assert "deadline of at least" in msgs[ids[1]]
    path = report(tmp_path / "out")
    assert "Scenarios without a plan" in path.read_text()


def test_rerun_skips_finished_scenarios(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = batch(SMALL, out, workers=1, progress=False)
    lines = (out / "results.jsonl").read_text().splitlines()
    second = batch(SMALL, out, workers=2, progress=False)
    assert (out / "results.jsonl").read_text().splitlines() == lines  # nothing re-run
    pd.testing.assert_frame_equal(
        first[COMPARE].sort_values("id").reset_index(drop=True),
        second[COMPARE].sort_values("id").reset_index(drop=True),
    )


def test_interrupted_batch_resumes_and_every_scenario_appears_once(tmp_path: Path) -> None:
    spec = {
        "base": {"model": "resnet50", "objective": "energy"},
        "grid": {
            "deadline_days": [0.2, 0.3, 0.5, 1, 2, 3],
            "gpus": [["A100"], ["H100"], ["H200"], ["B200"]],
            "purchase": ["buy", "rent"],
        },
    }
    f = tmp_path / "s.yaml"
    f.write_text(json.dumps(spec))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "planner.cli", "batch", str(f), "--out", str(out), "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 3):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C to the whole process group, workers included
    proc.wait(timeout=60)
    partial = len(results.read_text().splitlines())
    total = len(expand(spec))
    assert 3 <= partial < total, f"interrupt came too late to test resuming ({partial}/{total})"
    resumed = batch(str(f), out, workers=2, progress=False)
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    answered = [r["id"] for r in rows if r["status"] != "interrupted"]
    assert len(answered) == len(set(answered)) == total == len(resumed)
    clean = batch(str(f), tmp_path / "clean", workers=1, progress=False)
    pd.testing.assert_frame_equal(
        resumed[COMPARE].sort_values("id").reset_index(drop=True),
        clean[COMPARE].sort_values("id").reset_index(drop=True),
    )


def test_ray_engine_gives_the_same_results_as_local(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    local = batch(SMALL, tmp_path / "local", workers=2, progress=False)
    ray_df = batch(SMALL, tmp_path / "ray", workers=2, engine="ray", progress=False)
    pd.testing.assert_frame_equal(
        local[COMPARE].sort_values("id").reset_index(drop=True),
        ray_df[COMPARE].sort_values("id").reset_index(drop=True),
    )
    assert len(read_results(tmp_path / "ray")) == 8

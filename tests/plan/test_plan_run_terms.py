"""A plan's start-up and evaluations (PlanRequest.startup_s, evaluations x evaluation_samples): they are part of
its time-to-train, so the deadline holds for the whole run; the plan, its alternatives, the summary, the CLI and the
app's request carry them."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import planner
from planner.batch.scenarios import result_fields, run_scenario
from planner.checks import PlanRequest
from planner.errors import PlannerInputError
from planner.formatting import duration_text
from planner.plan import run_terms_text
from planner.present import cli_command

BASE = {"model": "llama3-8b", "tokens": 1e12, "deadline_days": 30, "gpus": ["H100"], "max_nodes": 64}
TERMS = {"startup_s": 3600.0, "evaluations": 50, "evaluation_samples": 20_000.0}


@pytest.fixture(scope="module")
def cat() -> planner.Catalog:
    return planner.load_catalog()


def training_alone(cat: planner.Catalog, config: dict[str, Any]) -> planner.Estimate:
    """A plan's or a Pareto point's configuration evaluated without the run terms: its training alone."""
    fields = ("server", "nodes", "fabric", "power_cap")
    return planner.evaluate(cat, {"model": BASE["model"], "samples": 1e12 / 8192, **{k: config[k] for k in fields}})


def test_a_plan_time_to_train_is_training_plus_evaluation_plus_startup(cat: planner.Catalog) -> None:
    res = planner.solve({**BASE, **TERMS, "alternatives": 2}, cat)
    p = res.plan
    assert p is not None
    assert p.startup_h == pytest.approx(1.0)
    # 50 x 20,000 held-out sequences, each a forward pass (a third of a trained sample), at the plan's throughput
    assert p.evaluation_h == pytest.approx(50 * 20_000 / 3 / p.throughput_samples_per_s / 3600.0)
    assert p.training_h + p.evaluation_h + p.startup_h == pytest.approx(p.time_to_train_h)
    assert p.time_to_train_days <= BASE["deadline_days"] * (1 + 1e-9)
    assert all(a.startup_h == pytest.approx(1.0) and a.evaluation_h > 0 for a in res.alternatives)
    assert "start-up 1 h" in res.summary() and "evaluation" in res.summary()


def test_the_alternatives_table_shows_the_terms_that_sum_to_each_time_only_where_the_run_has_them(
    cat: planner.Catalog,
) -> None:
    from planner.present.tables import alternatives_frame, alternatives_view

    res = planner.solve({**BASE, **TERMS, "alternatives": 2}, cat)
    df = alternatives_frame(res)
    at = list(df.columns).index("time_to_train_days")
    assert list(df.columns)[at : at + 4] == ["time_to_train_days", "training_days", "evaluation_h", "startup_h"]
    # each term as the configuration has it alone: training without the run terms, 50 x 20,000 / 3 samples
    for k, plan in enumerate([res.plan, *res.alternatives]):
        assert plan is not None
        alone = training_alone(cat, plan.model_dump())
        assert df["training_days"].iloc[k] * 24.0 == pytest.approx(alone.time_to_train_h, rel=1e-9)
        held_out_h = 50 * 20_000 / 3 / alone.throughput_samples_per_s / 3600.0
        assert df["evaluation_h"].iloc[k] == pytest.approx(held_out_h, rel=1e-9)
    view, line = alternatives_view(res)  # the app's: the request's start-up said once, the varying terms as columns
    assert "Train (days)" in view.columns and any(c.startswith("Eval (") for c in view.columns)
    assert "Start-up: 1 h" in line and not any(c.startswith("Start-up") for c in view.columns)
    plain = planner.solve({**BASE, "alternatives": 2}, cat)
    assert "training_days" not in alternatives_frame(plain).columns


def test_the_cli_alternatives_and_the_json_carry_the_training_term(cat: planner.Catalog) -> None:
    from planner.cli.plan import render_result, result_json

    res = planner.solve({**BASE, **TERMS, "alternatives": 2}, cat)
    header = next(line for line in render_result(res).splitlines() if "time_to_train_days" in line)
    assert header.split()[header.split().index("time_to_train_days") + 1 :][:3] == [
        "training_days",
        "evaluation_h",
        "startup_h",
    ]
    out = result_json(res)
    assert out["training_h"] + out["evaluation_h"] + out["startup_h"] == pytest.approx(out["time_to_train_h"])
    assert all("training_h" in a for a in out["alternatives"])


def test_a_start_up_that_outlasts_the_servers_life_is_named_as_the_reason(cat: planner.Catalog) -> None:
    res = planner.solve({**BASE, "deadline_days": 400, "startup_s": 300 * 86400.0, "life_years": 0.5}, cat)
    assert res.plan is None and res.explanation is not None
    msg = res.explanation.message
    assert "counting the run's 300 days of start-up" in msg and "start-up alone" in msg
    assert "more nodes" not in msg  # no hardware shortens a start-up


def test_a_pareto_front_shows_each_points_terms_where_the_run_has_them(cat: planner.Catalog) -> None:
    front = planner.pareto({**BASE, **TERMS}, "cost", "energy", points=3, catalog=cat)
    total_h = front["training_days"] * 24.0 + front["evaluation_h"] + front["startup_h"]
    assert (total_h - front["time_to_train_days"] * 24.0).abs().max() < 1e-9
    for _, point in front.iterrows():  # each term as the configuration has it alone
        alone = training_alone(cat, point.to_dict())
        assert point["training_days"] * 24.0 == pytest.approx(alone.time_to_train_h, rel=1e-9)
        held_out_h = 50 * 20_000 / 3 / alone.throughput_samples_per_s / 3600.0
        assert point["evaluation_h"] == pytest.approx(held_out_h, rel=1e-9)
    assert (front["startup_h"] == 1.0).all() and (front["evaluation_h"] > 0).all()
    assert front.attrs["units"]["evaluation_h"] == "hours"
    assert "training_days" not in planner.pareto(BASE, "cost", "energy", points=3, catalog=cat).columns


def test_a_start_up_the_deadline_cannot_absorb_leaves_no_plan_and_the_explanation_counts_it(
    cat: planner.Catalog,
) -> None:
    fastest = planner.solve({**BASE, "deadline_days": None, "objective": "time", "alternatives": 0}, cat)
    assert fastest.plan is not None
    t_days = fastest.plan.time_to_train_days
    assert planner.solve({**BASE, "deadline_days": 1.5 * t_days, "alternatives": 0}, cat).plan is not None
    res = planner.solve({**BASE, "deadline_days": 1.5 * t_days, "startup_s": t_days * 86400, "alternatives": 0}, cat)
    assert res.plan is None
    assert res.explanation is not None
    need = next(r.needed for r in res.explanation.relaxations if r.requirement == "deadline")
    assert need == pytest.approx(2.0 * t_days, rel=1e-3)  # the fastest run plus its start-up
    assert "of start-up" in res.explanation.message and "counting the run's" in res.explanation.message


def test_evaluations_without_their_samples_are_a_clear_error(cat: planner.Catalog) -> None:
    with pytest.raises(PlannerInputError, match=r"evaluations needs evaluation_samples > 0 \(got 0\)"):
        planner.solve(PlanRequest(**BASE, evaluations=5), cat)
    row = run_scenario({"id": "e", **BASE, "evaluations": 5}, cat)
    assert row["status"] == "bad_input" and "evaluations needs evaluation_samples > 0" in row["message"]


def test_the_app_command_line_reproduces_the_run_terms() -> None:
    req = PlanRequest(**BASE, **TERMS)
    text = cli_command(req)
    assert "--startup-s 3600 --evaluations 50 --evaluation-samples 20000" in text


def test_cli_solve_takes_the_run_terms_and_refuses_half_of_them() -> None:
    args = [sys.executable, "-m", "planner.cli", "solve", "--model", "llama3-8b", "--tokens", "1e12"]
    args += ["--deadline-days", "30", "--gpus", "H100", "--max-nodes", "64", "--alternatives", "0"]
    ok = subprocess.run([*args, "--startup-s", "3600"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "start-up 1 h" in ok.stdout
    bad = subprocess.run([*args, "--evaluations", "5"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "--evaluations needs --evaluation-samples" in bad.stderr


def test_cli_refuses_a_start_up_beyond_a_year_and_a_zero_count_of_evaluations() -> None:
    args = [sys.executable, "-m", "planner.cli", "evaluate", "--model", "llama3-8b", "--server", "dgx-h100"]
    args += ["--nodes", "4"]
    huge = subprocess.run([*args, "--rent", "--startup-s", "1e308"], capture_output=True, text=True)
    assert huge.returncode == 2
    assert "--startup-s: must be a number of seconds from 0 to 31,536,000 (0 = none)" in huge.stderr
    zero = subprocess.run([*args, "--evaluations", "0", "--evaluation-samples", "100"], capture_output=True, text=True)
    assert zero.returncode == 2
    assert "--evaluation-samples needs --evaluations > 0 (got 0)" in zero.stderr


def test_short_terms_read_in_seconds_and_the_training_term_in_four_figures() -> None:
    assert duration_text(1 / 86400) == "1 s"
    res = planner.solve({**BASE, "startup_s": 30.0, "alternatives": 0})
    assert res.plan is not None
    text = run_terms_text(res.plan)
    assert text.startswith(" (training ") and text.endswith(" + start-up 30 s)")


def test_batch_rows_carry_the_terms_of_scenarios_that_state_them(cat: planner.Catalog) -> None:
    req = PlanRequest(**BASE, **TERMS, alternatives=0)
    row = result_fields(cat, req, planner.solve(req, cat))
    assert row["startup_h"] == pytest.approx(1.0) and row["evaluation_h"] > 0
    assert row["training_days"] * 24 + row["evaluation_h"] + row["startup_h"] == pytest.approx(
        row["time_to_train_days"] * 24
    )
    plain = PlanRequest(**BASE, alternatives=0)
    assert "startup_h" not in result_fields(cat, plain, planner.solve(plain, cat))


def test_changing_only_the_run_terms_reprices_the_physics_already_computed(cat: planner.Catalog) -> None:
    base = {**BASE, "max_nodes": 40, "alternatives": 0}  # a request of its own: its physics computed here
    first = planner.solve(base, cat)
    again = planner.solve({**base, **TERMS}, cat)
    assert first.plan is not None and again.plan is not None
    assert "configurations" not in again.timings_s  # no configuration evaluated again: the terms are priced
    assert again.plan.startup_h == pytest.approx(1.0) and again.plan.evaluation_h > 0

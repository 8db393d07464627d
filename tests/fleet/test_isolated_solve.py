"""The full fleet MIP's HiGHS in a child process (planner/solver/highs.py, ``solve_model(..., isolate=True)``): the same
answer as in this process; a HiGHS that never answers is killed at the time limit (a real process, SIGKILL), one
that dies is reported as such, and ``fleet()`` then returns its best start plan -- re-checked like every plan --
within the call's limit (HiGHS's root phase on a large fleet MIP does not always answer its interrupt:
docs/fleet-bound.md, "The time limit").
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from typing import Any
from unittest import mock

import pyomo.environ as pyo
import pytest

from planner.data import Catalog
from planner.fleet import DEFAULT_TUNING, evaluate_fleet, fleet, job_modes, pools_of
from planner.fleet import run as run_mod
from planner.solver import ISOLATE_GRACE_S, SolverOptions, SolverStatus, solve_model
from tests.fleet.test_fleet import freq, side_by_side_start


def _never_answers(problem: Any, options: Any, deadline: float, conn: Any) -> None:
    """A HiGHS that does not stop at its limit and is deaf to SIGTERM: it sleeps far past any limit."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)


def _answers_then_lingers(problem: Any, options: Any, deadline: float, conn: Any) -> None:
    """A HiGHS that answers and then takes long to exit (a slow interpreter teardown on a loaded machine)."""
    from planner.solver.highs import _child

    class KeepOpen:  # _child closes its channel; keep it open, as a process still tearing down does
        def send(self, obj: Any) -> None:
            conn.send(obj)

        def close(self) -> None:
            pass

    _child(problem, options, deadline, KeepOpen())
    time.sleep(600)


def _dies(problem: Any, options: Any, deadline: float, conn: Any) -> None:
    """A HiGHS process that crashes before it answers."""
    os._exit(3)


def test_an_isolated_solve_answers_as_the_solve_in_this_process(toy: Catalog) -> None:
    # the squeeze tests' model (two jobs side by side on 2 + 2 toy-a, a start): the child is handed the same arrays
    # and the same start, so HiGHS finds the same optimum, read back into the same values
    _req, mip, _state = side_by_side_start(toy)
    m = mip.model
    opts = SolverOptions(time_limit_s=30.0, mip_rel_gap=1e-9)
    here = solve_model(m, opts)
    there = solve_model(m, opts, isolate=True)
    assert here.report.status == there.report.status == SolverStatus.OPTIMAL
    assert not there.unanswered
    assert there.report.objective == pytest.approx(here.report.objective, rel=1e-9)
    assert there.report.bound == pytest.approx(here.report.bound, rel=1e-9)
    assert (there.values["z"].round() == here.values["z"].round()).all()
    assert there.keyed["N"] == pytest.approx(here.keyed["N"])


class _Children:
    """subprocess.Popen, recording the processes started (the HiGHS children)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.real = subprocess.Popen

    def __call__(self, *a: Any, **kw: Any) -> Any:
        proc = self.real(*a, **kw)
        self.procs.append(proc)
        return proc


def test_an_isolated_solve_that_never_answers_is_killed_at_its_time_limit(toy: Catalog) -> None:
    # the child ignores SIGTERM and would sleep 600 s: it is SIGKILLed at the limit + ISOLATE_GRACE_S and reaped,
    # and the report says there is no solution and why
    m = side_by_side_start(toy)[1].model
    children = _Children()
    t = time.perf_counter()
    with mock.patch.object(subprocess, "Popen", children):
        out = solve_model(m, SolverOptions(time_limit_s=2.0), isolate=True, child=_never_answers)
    took = time.perf_counter() - t
    assert out.unanswered and out.report.status == SolverStatus.NO_SOLUTION
    assert out.report.highs_status.startswith("killed at the time limit")
    assert out.values == {} and out.keyed == {}
    assert took < 2.0 + ISOLATE_GRACE_S + 5.0  # not the child's 600 s
    assert len(children.procs) == 1 and children.procs[0].returncode == -signal.SIGKILL  # killed and reaped


def test_an_isolated_solve_that_answered_but_exits_late_keeps_its_answer(toy: Catalog) -> None:
    # the child answers (the toy MIP is solved at once) and then lingers past the limit + grace: it is killed, but
    # its whole answer was on the pipe, and that answer is the result -- not 'killed at the time limit: HiGHS did
    # not stop' (an interpreter's teardown on a loaded machine takes 0.8-1.4 s)
    m = side_by_side_start(toy)[1].model
    # 5 s: the child's interpreter start and imports count against the limit (2-3 s on a loaded 2-core machine)
    opts = SolverOptions(time_limit_s=5.0, mip_rel_gap=1e-9)
    here = solve_model(m, opts)
    t = time.perf_counter()
    there = solve_model(m, opts, isolate=True, child=_answers_then_lingers)
    assert time.perf_counter() - t < 5.0 + ISOLATE_GRACE_S + 10.0  # killed, not the child's 600 s
    assert not there.unanswered and there.report.status == here.report.status == SolverStatus.OPTIMAL
    assert there.report.objective == pytest.approx(here.report.objective, rel=1e-9)


def test_an_isolated_solve_whose_process_dies_says_so(toy: Catalog) -> None:
    m = side_by_side_start(toy)[1].model
    out = solve_model(m, SolverOptions(time_limit_s=60.0), isolate=True, child=_dies)
    assert out.unanswered and out.report.status == SolverStatus.NO_SOLUTION
    assert out.report.highs_status == "the HiGHS process ended without an answer (exit code 3)"
    assert out.report.solve_time_s < 30.0  # at once, not at the limit


def test_fleet_returns_its_best_start_within_the_limit_when_highs_never_answers(toy: Catalog) -> None:
    # four toy jobs on the large-model path (restricted start, starts, isolated full MIP: both thresholds at 0);
    # the full MIP's HiGHS never answers. fleet() returns by its time limit with the start HiGHS was given: status
    # time_limit, HiGHS's objective the start's, a plan evaluate_fleet accepts (as _extract checked), never below
    # the optimum that the same request finds when HiGHS answers
    jobs = [
        {"id": f"j{i}", "model": "toy-model", "samples": s, "release_slot": r, "due_slot": d}
        for i, (s, r, d) in enumerate([(1.5e6, 0, 1), (1.0e6, 0, 2), (5e5, 1, 3), (1.5e6, 2, 3)])
    ]
    limit = 4.0
    req = freq(slots=4, slot_hours=6.0, servers=["toy-a"], node_counts=[1, 2], jobs=jobs)
    req = req.model_copy(update={"solver": req.solver.model_copy(update={"time_limit_s": limit})})
    real = run_mod.solve_model
    starts: list[float] = []

    def never(m: Any, options: Any, **kw: Any) -> Any:
        if kw.get("isolate"):
            starts.append(float(pyo.value(m.objective)))
            kw["child"] = _never_answers
        return real(m, options, **kw)

    children = _Children()
    tuning = dataclasses.replace(DEFAULT_TUNING, restricted_start_modes=0, isolate_modes=0)
    with mock.patch.object(run_mod, "solve_model", never), mock.patch.object(subprocess, "Popen", children):
        t = time.perf_counter()
        plan = fleet(req, toy, explain=False, tuning=tuning)
        took = time.perf_counter() - t
    assert len(starts) == 1
    assert plan.status == "time_limit" and plan.solver is not None
    assert plan.solver.highs_status.endswith("the plan is the best start")
    assert plan.solver.objective is not None and plan.solver.objective == pytest.approx(starts[0], rel=1e-9)
    assert plan.solver.bound is not None and plan.solver.bound <= plan.solver.objective  # the LP relaxation's
    assert took < limit + 6.0  # the call's limit holds (the child would have slept 600 s)
    assert len(children.procs) == 1 and children.procs[0].returncode == -signal.SIGKILL
    # the plan as returned is within every rule
    pools = pools_of(toy, req)
    modes = job_modes(toy, req, pools=pools)
    rows = {}
    for a in plan.assignments:
        hit = modes[
            (modes["job"] == a["job"]) & (modes["nodes"] == a["nodes"]) & (modes["power_cap"] == a["power_cap"])
        ]
        rows[a["job"]] = hit.iloc[0]
    slots = {a["job"]: a["slots"] for a in plan.assignments}
    bought = {(p["server"], p["fabric"]): p["added"] for p in plan.purchases if p["added"]}
    assert evaluate_fleet(toy, req, pools, rows, slots, bought, []) is not None
    best = fleet(req.model_copy(update={"solver": req.solver.model_copy(update={"time_limit_s": 60.0})}), toy)
    assert best.objective_value is not None and plan.objective_value is not None
    assert plan.objective_value >= best.objective_value * (1 - 1e-6) - 1e-4


UNGUARDED_SCRIPT = """
import pyomo.environ as pyo
from planner.solver import SolverOptions, solve_model

print("script ran")
m = pyo.ConcreteModel()
m.x = pyo.Var(range(3), domain=pyo.Binary)
m.pick = pyo.Constraint(expr=sum(m.x[i] for i in range(3)) >= 2)
m.objective = pyo.Objective(expr=3 * m.x[0] + 1 * m.x[1] + 2 * m.x[2])
out = solve_model(m, SolverOptions(time_limit_s=60.0), isolate=True)
print(out.report.status.value, round(out.report.objective or -1, 6))
"""


def test_an_isolated_solve_from_a_script_without_a_main_guard_runs_it_once(tmp_path: Any) -> None:
    # a user's script that calls the planner at top level (no `if __name__ == "__main__":`), run as a real process:
    # the child must not run the script again (a spawned multiprocessing child did, and then could not start its
    # own process: no answer). Pick two of three at costs 3, 1, 2: the optimum is 3
    script = tmp_path / "plan.py"
    script.write_text(UNGUARDED_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["script ran", "optimal 3.0"], done.stdout

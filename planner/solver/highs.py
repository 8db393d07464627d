"""Handing a Pyomo model to HiGHS and reading the answer back, honestly.

The model is compiled to sparse arrays (planner/solver/compiler.py: the arrays of Pyomo's
LinearStandardFormCompiler in mixed form, assembled with NumPy, no SciPy) and passed to ``highspy`` directly: the
lowest-overhead route measured on this stack (../shared/SOLVER-NOTES.md).
Nothing is loaded silently: the report says whether the solution is proven optimal, a time-limited
incumbent (with its gap), or absent, and the caller decides what to load.

The time limit is HiGHS's own and an interrupt callback polled in its MIP search and simplex
(``deadline_interrupt``). Where HiGHS does not poll it (the fleet MIP's root phase after its first cut round ran
42-53 s against a 25 s limit, docs/fleet-bound.md, "The time limit"), ``solve_model(..., isolate=True)`` runs HiGHS in a
child process (``python -c``: a fresh interpreter that runs no script of the parent's again), handed the same
arrays pickled on its stdin, and kills it (SIGKILL) when it has not answered within the limit plus
ISOLATE_GRACE_S. The child imports this package (about 1-1.5 s of the limit on a shared machine), so only
solves that need it are isolated.
"""

from __future__ import annotations

import ctypes
import enum
import importlib
import os
import pickle
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from planner.solver.compiler import StandardForm, standard_form

if TYPE_CHECKING:
    import pyomo.core as pyo

_THREADS: int | None = None  # HiGHS's thread pool is process-wide: set once
ISOLATE_GRACE_S = 0.5  # isolate: seconds past the time limit the parent waits for the child's answer


class SolverStatus(enum.StrEnum):
    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"  # best incumbent returned, with its gap
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"  # stopped without an incumbent
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (SolverStatus.OPTIMAL, SolverStatus.TIME_LIMIT)


class SolverOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    time_limit_s: float = Field(60.0, gt=0, description="HiGHS time limit, seconds")
    mip_rel_gap: float = Field(1e-9, ge=0, lt=1, description="relative MIP gap at which HiGHS stops")
    threads: int | None = Field(None, ge=1, le=256, description="HiGHS threads (process-wide; first call wins)")
    presolve: bool = Field(
        False,
        description="HiGHS MIP presolve; off by default: on the plan MIP (one-hot "
        "selection, already presolved exactly) its probing costs seconds and saves nothing",
    )


class SolverReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    status: SolverStatus
    highs_status: str
    objective: float | None
    bound: float | None
    gap: float | None
    solve_time_s: float
    build_time_s: float
    handoff_time_s: float
    nodes: int
    simplex_iterations: int
    variables: int
    constraints: int


@dataclass
class Solved:
    report: SolverReport
    values: dict[str, np.ndarray] = field(default_factory=dict)  # RangeSet-indexed variables -> dense arrays
    keyed: dict[str, dict[Any, float]] = field(default_factory=dict)  # other variables -> {index: value}
    unanswered: bool = False  # isolate: the HiGHS process gave no answer (killed at the time limit, or died)


def _var_index(v: Any) -> Any:
    return v.index()


def _dense_whole(comp: Any, run: list[Any]) -> bool:
    """Whether a run of columns is every variable of a component indexed 0..n-1, in index order: its values are then
    the component's dense array as they stand."""
    return (
        comp.is_indexed()
        and len(run) == len(comp)
        and list(comp.keys()) == list(range(len(run)))
        and all(a is b for a, b in zip(run, comp.values(), strict=True))
    )


def deadline_interrupt(deadline_s: float) -> Any:
    """A HiGHS interrupt callback that stops the solve once ``time.perf_counter()`` passes ``deadline_s``: HiGHS
    polls it inside the MIP search and every simplex solve, so the time limit holds within a poll interval
    (the solve then reports HiGHS's interrupt status, read here as the time limit)."""

    def stop(event: Any) -> None:
        if time.perf_counter() > deadline_s:
            event.interrupt()

    return stop


def _compile(m: pyo.ConcreteModel) -> StandardForm:
    """The model in standard form (``standard_form``). A model whose builder states its standard form
    (``m._compiled``: the single-job MIP, planner/plan/formulation.py) is not compiled. A model that sets
    ``m.reuse_compiled`` is compiled once, with every variable free of its fixing (a fixed variable stays a column;
    its value becomes both bounds at each solve), and the arrays are kept on the model for the next solves: a model
    re-solved with other variables fixed (the fleet's LP relaxation, restricted MIP and full MIP) is not compiled
    again. Only variables may change between such solves (values, bounds, fixing), not constraints."""
    if not getattr(m, "reuse_compiled", False):
        stated: StandardForm | None = getattr(m, "_compiled", None)
        return stated if stated is not None else standard_form(m)
    compiled: StandardForm | None = getattr(m, "_compiled", None)
    if compiled is None:
        import pyomo.core as pyo

        fixed = [v for v in m.component_data_objects(pyo.Var, descend_into=True) if v.fixed]
        for v in fixed:
            v.unfix()
        try:
            compiled = standard_form(m)
        finally:
            for v in fixed:
                v.fix()
        m._compiled = compiled
    return compiled


def _problem(m: pyo.ConcreteModel, relax: bool) -> tuple[list[Any], dict[str, Any]]:
    """The model's columns, and the arrays HiGHS takes (costs, bounds, rows, the column-wise matrix, integrality;
    the starting solution when the model carries a complete one and ``relax`` is off) -- plain numpy, so that a
    child process can take them (``isolate``)."""
    import highspy

    sf = _compile(m)
    cols = sf.columns
    sense, rhs = sf.sense, sf.rhs
    start = None
    if not relax and getattr(m, "warm_start", False) and all(v.value is not None for v in cols):
        start = np.asarray([float(v.value) for v in cols])  # a starting solution (e.g. a greedy plan)
    lower, upper, integer = _column_bounds(cols, highspy.kHighsInf)
    return cols, {
        "ncol": len(cols),
        "nrow": sf.num_rows,
        "lower": lower,
        "upper": upper,
        "integer": integer & (not relax),
        "row_lo": np.where(sense >= 0, np.where(sense == 0, rhs, -highspy.kHighsInf), rhs),
        "row_hi": np.where(sense <= 0, np.where(sense == 0, rhs, highspy.kHighsInf), rhs),
        "indptr": sf.indptr,
        "indices": sf.indices,
        "data": sf.data,
        "cost": sf.cost,
        "offset": sf.offset,
        "start": start,
    }


def _column_bounds(cols: list[Any], inf: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each column's lower and upper bound (its value, both, where it is fixed; +-inf where it has none) and whether
    it is integer (an integer or binary domain, read once per domain object)."""
    lower = np.empty(len(cols))
    upper = np.empty(len(cols))
    integer = np.empty(len(cols), dtype=bool)
    kinds: dict[int, bool] = {}
    for j, v in enumerate(cols):
        if v.fixed:
            lower[j] = upper[j] = v.value
        else:
            lb, ub = v.bounds
            lower[j] = -inf if lb is None else lb
            upper[j] = inf if ub is None else ub
        kind = kinds.get(id(v.domain))
        if kind is None:
            kind = kinds[id(v.domain)] = bool(v.is_integer() or v.is_binary())
        integer[j] = kind
    return lower, upper, integer


def process_threads() -> int | None:
    """The HiGHS thread count this process's solves set first (HiGHS's thread pool is process-wide: a solve that
    asks for another count fails), None before any solve asked for one."""
    return _THREADS


def _highs(problem: dict[str, Any], options: SolverOptions, time_limit_s: float) -> Any:
    """A HiGHS instance holding the problem, with the options and the starting solution (HiGHS keeps it if it is
    feasible)."""
    import highspy

    global _THREADS
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", float(options.mip_rel_gap))
    h.setOptionValue("presolve", "on" if options.presolve else "off")
    if not problem.get("feasibility_jump", True):
        h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
    if options.threads is not None and _THREADS is None:
        h.setOptionValue("threads", int(options.threads))
        _THREADS = options.threads
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = problem["ncol"], problem["nrow"]
    lp.col_cost_ = problem["cost"]
    lp.col_lower_, lp.col_upper_ = problem["lower"], problem["upper"]
    lp.row_lower_, lp.row_upper_ = problem["row_lo"], problem["row_hi"]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = problem["indptr"]
    lp.a_matrix_.index_ = problem["indices"]
    lp.a_matrix_.value_ = problem["data"]
    lp.offset_ = problem["offset"]
    if problem["integer"].any():
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in problem["integer"]
        ]
    h.passModel(lp)
    if problem["start"] is not None:
        start = highspy.HighsSolution()
        start.col_value = list(problem["start"])
        start.value_valid = True
        h.setSolution(start)
    return h


def _run(h: Any, time_limit_s: float) -> dict[str, Any]:
    """Run HiGHS (stopped by ``deadline_interrupt`` too) and read what it found: status, HiGHS's own status text,
    objective and dual bound (unscaled), B&B nodes, simplex iterations, seconds, and the column values when it
    has a solution."""
    import highspy

    t1 = time.perf_counter()
    stop = deadline_interrupt(t1 + float(time_limit_s))
    h.cbMipInterrupt += stop  # HiGHS checks its own time limit only between phases (its root cut rounds and
    h.cbSimplexInterrupt += stop  # presolve probing overran it by 13-39 s on the fleet benchmark)
    h.run()
    solve_s = time.perf_counter() - t1
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if ms == highspy.HighsModelStatus.kOptimal:
        status = SolverStatus.OPTIMAL
    elif ms in (highspy.HighsModelStatus.kInfeasible,):
        status = SolverStatus.INFEASIBLE
    elif ms in (
        highspy.HighsModelStatus.kTimeLimit,
        highspy.HighsModelStatus.kIterationLimit,
        highspy.HighsModelStatus.kSolutionLimit,
        highspy.HighsModelStatus.kInterrupt,
    ):
        status = SolverStatus.TIME_LIMIT if has_sol else SolverStatus.NO_SOLUTION
    else:
        status = SolverStatus.ERROR if not has_sol else SolverStatus.TIME_LIMIT
    return {
        "status": status,
        "highs_status": h.modelStatusToString(ms),
        "objective": float(info.objective_function_value),
        "bound": float(info.mip_dual_bound),
        "nodes": int(max(info.mip_node_count, 0)),
        "iterations": int(max(info.simplex_iteration_count, 0)),
        "solve_s": solve_s,
        "x": np.asarray(h.getSolution().col_value) if status.has_solution else None,
    }


def _child(problem: dict[str, Any], options: SolverOptions, deadline_epoch_s: float, conn: Any) -> None:
    """HiGHS in a child process (``solve_model(..., isolate=True)``): solves the problem until the absolute wall
    time ``deadline_epoch_s`` and sends ``_run``'s result (or the error's text) back on ``conn``."""
    try:
        h = _highs(problem, options, max(0.0, deadline_epoch_s - time.time()))
        conn.send(_run(h, max(0.0, deadline_epoch_s - time.time())))
    except Exception as exc:  # reported to the parent as an error status, never a traceback there
        conn.send({"error": f"{exc.__class__.__name__}: {exc}"})


class _Answer:
    """The child's way back: one pickled object on the file descriptor its stdout was on."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh

    def send(self, obj: Any) -> None:
        pickle.dump(obj, self.fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.fh.flush()


def _child_main(target_spec: str) -> None:
    """The child process's entry (``python -c``, so that no script of the parent is run again, as a spawned
    multiprocessing child would): reads (problem, options, deadline) pickled on stdin, runs the target
    ("module:function", ``_child`` unless a test names another) and answers on the original stdout, which is
    moved aside first so that nothing else printed can mix with the answer."""
    _die_with_parent()
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    module, name = target_spec.split(":")
    target = getattr(importlib.import_module(module), name)
    problem, options, deadline = pickle.load(sys.stdin.buffer)
    target(problem, options, deadline, _Answer(answer))
    answer.close()
    # nothing after the answer matters: skip the interpreter's teardown (HiGHS's thread pool, modules, atexit),
    # which took 0.8-1.4 s on a loaded 2-core machine -- past ISOLATE_GRACE_S, so a parent waiting for the exit
    # had killed a child that had answered
    os._exit(0)


def _die_with_parent() -> None:
    """Linux: the kernel SIGKILLs this process when its parent dies (prctl PR_SET_PDEATHSIG), so a parent killed by
    SIGTERM or SIGKILL, which runs no ``finally``, leaves no HiGHS running on; a parent already gone: exit now.
    Elsewhere nothing (the child then stops at its own deadline, or when HiGHS next polls)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:
        os._exit(1)


def _in_child(problem: dict[str, Any], options: SolverOptions, time_limit_s: float, target: Any) -> dict[str, Any]:
    """``target(problem, options, deadline, conn)`` (``_child``) in a child process (a fresh interpreter that
    imports this module), waited for until the time limit plus ISOLATE_GRACE_S and killed (SIGKILL) then: its
    result, or a NO_SOLUTION / ERROR result saying why there is none."""
    t1 = time.perf_counter()
    payload = pickle.dumps((problem, options, time.time() + time_limit_s), protocol=pickle.HIGHEST_PROTOCOL)
    code = "import sys; from planner.solver.highs import _child_main; _child_main(sys.argv[1])"
    spec = f"{target.__module__}:{target.__qualname__}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the modules this process has
    # -P: the current directory is not put first on the child's path (a cwd holding another planner/ would be
    # imported instead of the parent's)
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", code, spec],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    out = b""
    killed = False
    try:
        wait = max(0.0, t1 + time_limit_s + ISOLATE_GRACE_S - time.perf_counter())
        out, _ = proc.communicate(payload, timeout=wait)
    except subprocess.TimeoutExpired:
        killed = True
    finally:
        if proc.poll() is None:
            proc.kill()
        rest, _ = proc.communicate()  # what the child wrote before it was killed (or everything, on an exception)
        out = out or rest or b""
    res: dict[str, Any] | None = None
    try:
        res = pickle.loads(out) if out else None  # a whole answer counts even when the exit came too late
    except (pickle.UnpicklingError, EOFError, ValueError):  # a partial answer: the child died while it wrote
        res = None
    if res is not None:
        killed = False
    empty = {"objective": float("nan"), "bound": float("nan"), "nodes": 0, "iterations": 0, "x": None}
    solve_s = time.perf_counter() - t1
    if res is None:
        why = (
            f"killed at the time limit ({time_limit_s:.1f} s + {ISOLATE_GRACE_S:g} s): HiGHS did not stop"
            if killed
            else f"the HiGHS process ended without an answer (exit code {proc.returncode})"
        )
        return {**empty, "status": SolverStatus.NO_SOLUTION, "highs_status": why, "solve_s": solve_s, "lost": True}
    if "error" in res:  # no answer either: the caller falls back as for a lost child (``unanswered``)
        return {**empty, "status": SolverStatus.ERROR, "highs_status": res["error"], "solve_s": solve_s, "lost": True}
    return {**res, "solve_s": solve_s}


def solve_model(
    m: pyo.ConcreteModel,
    options: SolverOptions,
    build_time_s: float = 0.0,
    relax: bool = False,
    isolate: bool = False,
    child: Any = None,
    feasibility_jump: bool = True,
) -> Solved:
    """Solve m with HiGHS (``relax``: its LP relaxation, every integer column continuous within its bounds, and
    no starting solution) and read the answer back.

    ``feasibility_jump``: HiGHS's feasibility-jump heuristic, which it runs before the root LP. A caller that knows
    the MIP has one optimum, clear of every other solution by more than HiGHS's tolerances, turns it off
    (planner/plan/mip.py): every solve path then returns that optimum, and the heuristic only costs time -- half of
    HiGHS's time on the plan MIP. Where optima tie, which one HiGHS returns depends on its path: leave it on.

    ``isolate``: HiGHS runs in a child process that is killed when it has not answered within the time limit
    plus ISOLATE_GRACE_S -- the time limit then holds even where HiGHS ignores its interrupt (the fleet MIP's
    root phase, docs/fleet-bound.md, "The time limit"). A solve without an answer (killed, or the process died) reports
    NO_SOLUTION with ``unanswered`` set on the result; the caller decides what to fall back on. ``child``
    replaces the child's function (tests: a HiGHS that never answers)."""
    t0 = time.perf_counter()
    cols, problem = _problem(m, relax)
    problem["feasibility_jump"] = feasibility_jump
    handoff = time.perf_counter() - t0
    if isolate:
        res = _in_child(problem, options, max(0.0, float(options.time_limit_s) - handoff), child or _child)
    else:
        h = _highs(problem, options, options.time_limit_s)
        handoff = time.perf_counter() - t0
        res = _run(h, options.time_limit_s)
    status: SolverStatus = res["status"]
    scale = float(getattr(m, "objective_scale", 1.0))
    obj = res["objective"] * scale if status.has_solution else None
    bound = res["bound"] * scale if status.has_solution and np.isfinite(res["bound"]) else None
    gap = None
    if obj is not None and bound is not None:
        gap = abs(obj - bound) / max(abs(obj), 1e-12)
    report = SolverReport(
        status=status,
        highs_status=res["highs_status"],
        objective=obj,
        bound=bound,
        gap=gap,
        solve_time_s=res["solve_s"],
        build_time_s=build_time_s,
        handoff_time_s=handoff,
        nodes=res["nodes"],
        simplex_iterations=res["iterations"],
        variables=len(cols),
        constraints=problem["nrow"],
    )
    solved = _solution(m, cols, report, res["x"])
    solved.unanswered = bool(res.get("lost", False))
    return solved


def current_solution(m: pyo.ConcreteModel, report: SolverReport) -> Solved | None:
    """The values the model's variables hold now (a start plan), read back as ``solve_model`` reads a solution;
    None when a column has none."""
    cols = _compile(m).columns
    if any(v.value is None for v in cols):
        return None
    return _solution(m, cols, report, np.asarray([float(v.value) for v in cols]))


def _solution(m: pyo.ConcreteModel, cols: list[Any], report: SolverReport, x: np.ndarray | None) -> Solved:
    values: dict[str, np.ndarray] = {}
    keyed: dict[str, dict[Any, float]] = {}
    if x is not None:
        by_comp: dict[str, dict[Any, float]] = {}
        parents = [v.parent_component() for v in cols]
        vals = x.tolist()
        i = 0
        while i < len(cols):  # each run of columns of one variable component
            comp = parents[i]
            j = i + 1
            while j < len(cols) and parents[j] is comp:
                j += 1
            if _dense_whole(comp, cols[i:j]):
                values[comp.name] = np.asarray(x[i:j], dtype=float)
            else:
                d = by_comp.setdefault(comp.name, {})
                for v, val in zip(cols[i:j], vals[i:j], strict=True):
                    d[_var_index(v)] = val
            i = j
        for name, d in by_comp.items():
            if all(isinstance(i, int) for i in d):  # a RangeSet-indexed variable: a dense array
                arr = np.zeros(len(getattr(m, name)))
                for idx, val in d.items():
                    arr[idx] = val
                values[name] = arr
            else:
                keyed[name] = d
    return Solved(report, values, keyed)

"""The planner command line that reproduces a request from the app (shell-quoted, every number exact)."""

from __future__ import annotations

import shlex

from planner.checks import format_owned
from planner.physics import DEFAULT_CAPS
from planner.plan import PlanRequest
from planner.solver import SolverOptions


def cli_number(value: float) -> str:
    """A number as the command line reads it back exactly (the shortest round-trip form: 14999552000000, not
    1.49996e+13, which would be another request)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def cli_command(req: PlanRequest) -> str:  # noqa: C901 -- one flag per request field that differs from its default
    """The `planner solve` command that reproduces the request: every field that differs from the command's
    default, numbers in their exact form."""

    parts = ["planner", "solve", "--model", req.model]
    for name in ("samples", "tokens", "epochs"):
        v = getattr(req, name)
        if v is not None:
            parts += [f"--{name}", cli_number(v)]
    if req.startup_s:
        parts += ["--startup-s", cli_number(req.startup_s)]
    if req.evaluations:
        parts += ["--evaluations", str(req.evaluations), "--evaluation-samples", cli_number(req.evaluation_samples)]
    if req.deadline_days is not None:
        parts += ["--deadline-days", cli_number(req.deadline_days)]
    if req.budget_usd is not None:
        parts += ["--budget-usd", cli_number(req.budget_usd), "--budget-kind", req.budget_kind]
    if req.power_kw is not None:
        parts += ["--power-kw", cli_number(req.power_kw)]
    parts += ["--site", ",".join(req.sites), "--objective", req.objective, f"--{req.purchase}"]
    for flag, items in (("--gpus", req.gpus), ("--servers", req.servers), ("--fabrics", req.fabrics)):
        if items:
            parts += [flag, ",".join(items)]
    if tuple(req.power_caps) != tuple(DEFAULT_CAPS):
        parts += ["--power-caps", ",".join(cli_number(c) for c in req.power_caps)]
    if req.global_batch is not None:
        parts += ["--global-batch", str(req.global_batch)]
    if req.max_nodes != 1024:
        parts += ["--max-nodes", str(req.max_nodes)]
    if req.max_rack_units is not None:
        parts += ["--max-rack-units", str(req.max_rack_units)]
    if req.precision is not None:
        parts += ["--precision", req.precision]
    if req.framework is not None:
        parts += ["--framework", req.framework]
    if req.owned:
        parts += ["--owned", format_owned(req.owned)]
    if req.life_years != 4.0:
        parts += ["--life-years", cli_number(req.life_years)]
    if req.alternatives != 3:
        parts += ["--alternatives", str(req.alternatives)]
    default = SolverOptions()
    if req.solver.time_limit_s != default.time_limit_s:
        parts += ["--time-limit", cli_number(req.solver.time_limit_s)]
    if req.solver.mip_rel_gap != default.mip_rel_gap:
        parts += ["--gap", cli_number(req.solver.mip_rel_gap)]
    if req.solver.threads is not None:
        parts += ["--threads", str(req.solver.threads)]
    return " ".join(shlex.quote(p) for p in parts)

"""fp8 and fp4 asked for by name: which allowed GPUs compute in them, and the one wording of the problem when none
does."""

from __future__ import annotations

from planner.checks.hardware import allowed_servers
from planner.checks.problems import Problem, Style, field_name, raise_problem
from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.physics import (
    compute,
)

# where a low precision is asked for by name and no allowed GPU has it: the GPUs that do, for the message
PRECISION_GPUS_HINT = {
    "fp8": ("Hopper or newer", ("h100-sxm", "b200")),
    "fp4": ("Blackwell or MI350", ("b200", "mi355x")),
}


def gpus_without_precision(catalog: Catalog, req: PlanRequest) -> list[str] | None:
    """The allowed GPUs, where fp8 or fp4 is asked for by name and none of them has it; None otherwise (where some
    allowed GPUs have it, a plan on one without computes in the fallback precision -- fp4 in fp8, fp8 in bf16 -- and
    says so in its notes)."""
    if req.precision not in compute.LOW_PRECISION_FIELDS:
        return None
    gpus = sorted({catalog.server(s).gpu or "" for s in allowed_servers(catalog, req)})
    return None if any(compute.has_precision(catalog.gpu(g), req.precision) for g in gpus) else gpus


def fp8_in(catalog: Catalog, gpus: list[str]) -> bool:
    """Some of these GPUs compute in fp8 (what an fp4 request falls back to)."""
    return any(g and catalog.gpu(g).fp8_tflops is not None for g in gpus)


def precision_problem_text(
    precision: str, gpus: list[str], fix: str, style: str = "api", fp8_allowed: bool = False
) -> str:
    """'<precision>: none of the allowed GPUs (...) has <precision>: <fix>, or allow GPUs with <precision> (...)': the
    one wording every entry point uses, the examples written as the Python API and app (``api``), the command line
    (``flags``) or a batch file (``fields``) take them. For fp4 the fix suggests fp8 where an allowed GPU has it
    (``fp8_allowed``)."""
    p = precision
    family, examples = PRECISION_GPUS_HINT[p]
    fix = fix.replace("bf16", compute.LOW_PRECISION_FALLBACK[p]) if p == "fp4" and fp8_allowed else fix
    if style == "flags":
        allow = "--gpus " + ",".join(e.split("-")[0].upper() for e in examples)
    elif style == "fields":
        allow = "gpus: [" + ", ".join(e.split("-")[0].upper() for e in examples) + "]"
    else:
        allow = ", ".join(examples)
    none = f"none of the allowed GPUs ({', '.join(gpus)}) has {p}"
    return f"{p}: {none}: {fix}, or allow GPUs with {p} ({family}, e.g. {allow})"


def precision_problem(catalog: Catalog, req: PlanRequest, style: Style = "cli") -> Problem | None:
    """``precision: fp8`` (or fp4) asked for by name where none of the allowed GPUs has it: bad input for every
    entry point (exit 2 from solve and pareto, a bad_input row in a batch, a message and no plan in the app, an
    error from the Python API), never a plan silently computed in another precision; None otherwise (where some
    allowed GPUs have it, a plan on one without says so in its notes)."""
    gpus = gpus_without_precision(catalog, req)
    if gpus is None:
        return None
    fp8, p = fp8_in(catalog, gpus), str(req.precision)
    if style == "app":
        text = precision_problem_text(p, gpus, "choose bf16 (or the workload's default)", fp8_allowed=fp8)
    elif style == "cli":
        text = precision_problem_text(p, gpus, "give --precision bf16", "flags", fp8)
    elif style == "fields":
        text = precision_problem_text(p, gpus, "give precision: bf16", "fields", fp8)
    else:
        text = precision_problem_text(p, gpus, "ask for bf16 (or the workload's default)", fp8_allowed=fp8)
    return Problem("precision", req.precision, f"{field_name('precision', style)} {text}", style)


def check_precision(catalog: Catalog, req: PlanRequest) -> None:
    """precision_problem, raised (the Python API)."""
    raise_problem(precision_problem(catalog, req, "api"))

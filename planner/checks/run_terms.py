"""The run's evaluations, checked before a solve: a number of evaluations and the held-out samples in each go
together (the rule: planner.data ``evaluations_unpaired``, which ``Configuration`` also keeps), worded for each
entry point."""

from __future__ import annotations

from planner.checks.problems import Problem, Style, field_name
from planner.checks.request import PlanRequest
from planner.data import Catalog, evaluations_unpaired, evaluations_unpaired_message


def evaluations_problem(evaluations: int, evaluation_samples: float, style: Style = "api") -> Problem | None:
    """Evaluations without held-out samples, or held-out samples without evaluations (0 counts as none:
    planner.data ``evaluations_unpaired``), worded for ``style``; None when both or neither are given."""
    unpaired = evaluations_unpaired(evaluations, evaluation_samples)
    if unpaired is None:
        return None
    given, missing, value = unpaired
    message = evaluations_unpaired_message(field_name(given, style), field_name(missing, style), value)
    return Problem(field=missing, given=value, message=message, style=style)


def run_terms_problem(catalog: Catalog, req: PlanRequest, style: Style = "api") -> Problem | None:
    """``evaluations_problem`` of a request (a check of ``before_solve.CHECKS``)."""
    return evaluations_problem(req.evaluations, req.evaluation_samples, style)

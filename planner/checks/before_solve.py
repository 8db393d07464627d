"""The checks every entry point runs on a single-job request before it is solved, in one order.

The Python API (``solve``, ``pareto``), the command line, the app and batch all call ``request_problems``: the
command line words the problems in flags, the app in its labels, batch in a scenario's fields, and the Python
API raises the first (``check_request``). A check that raises ``PlannerInputError`` itself (an unknown id, a GPU
pattern nothing matches) stops the sequence: what follows it would only repeat it.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.checks.catalog import catalog_for
from planner.checks.hardware import (
    allowed_servers,
    caps_problem,
    no_server_problem,
    purchase_problem,
    rented_caps_problem,
)
from planner.checks.precision import precision_problem
from planner.checks.problems import InputProblem, Problem, Style
from planner.checks.request import PlanRequest
from planner.checks.run_terms import run_terms_problem
from planner.checks.search import search_size_problem
from planner.data import Catalog

CHECKS: tuple[Callable[[Catalog, PlanRequest, Style], Problem | None], ...] = (
    run_terms_problem,  # evaluations without held-out samples, or the reverse
    no_server_problem,  # allowed servers, GPUs and fabrics that exclude each other
    search_size_problem,  # an exact search over too many configurations
    precision_problem,  # fp8 / fp4 by name on GPUs none of which computes in it
    caps_problem,  # power caps no allowed GPU can be set to
    purchase_problem,  # servers that cannot be bought or rented as asked
    rented_caps_problem,  # rentals at full power only, with caps that leave 1.0 out
)


def request_problems(catalog: Catalog, req: PlanRequest, style: Style = "api") -> list[Problem]:
    """The problems of ``req`` over ``catalog``, worded for ``style``; [] when it can be solved. Each later check
    assumes the earlier ones passed, so the first problem found ends the list. Unknown ids and malformed owned
    servers raise PlannerInputError (from the catalog's lookups)."""
    cat = catalog_for(catalog, req)
    if no_server_problem(cat, req, style) is None:
        allowed_servers(cat, req)  # unknown ids, servers without a GPU, GPU patterns nothing matches: raised
    for check in CHECKS:
        problem = check(cat, req, style)
        if problem is not None:
            return [problem]
    return []


def check_request(catalog: Catalog, req: PlanRequest, style: Style = "api") -> None:
    """Raise the request's first problem as an InputProblem (a PlannerInputError), worded for ``style``."""
    problems = request_problems(catalog, req, style)
    if problems:
        raise InputProblem(problems[0])

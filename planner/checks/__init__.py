"""Checks of a request before a solve, one definition of each rule.

The single-job request schema (``request``), the allowed hardware, acquisition and power caps (``hardware``),
fp8 / fp4 by name (``precision``), owned servers and the service rule (``owned``), the size of the exact search
(``search``) and the catalog a request is planned over (``catalog``). Each problem is a ``Problem``: the field,
the value given and a message saying what would fix it, worded for the Python API, the command line, the app or
a batch file (``problems``); ``before_solve`` runs them in one order for every entry point.
"""

from __future__ import annotations

from planner.checks.before_solve import check_request, request_problems
from planner.checks.catalog import catalog_for, unknown_ids
from planner.checks.hardware import (
    NO_SERVER,
    allowed_servers,
    caps_problem,
    check_caps,
    check_purchase,
    check_rented_caps,
    match_gpus,
    no_server_problem,
    purchase_problem,
    rentals_without_caps,
    rented_caps_problem,
    servers_with_gpus,
)
from planner.checks.owned import OWNED_FORMAT, check_owned, format_owned, in_service, owned_fabric, parse_owned
from planner.checks.precision import (
    PRECISION_GPUS_HINT,
    check_precision,
    fp8_in,
    gpus_without_precision,
    precision_problem,
    precision_problem_text,
)
from planner.checks.problems import FIELD_NAMES, InputProblem, Problem, Style, field_name, raise_problem
from planner.checks.request import Objective, OwnedServers, PlanRequest, one_as_list
from planner.checks.run_terms import evaluations_problem
from planner.checks.search import (
    BINDING_STEP,
    MAX_CONFIGS,
    largest_max_nodes,
    node_step,
    options_per_count,
    search_size_problem,
)

__all__ = [
    "BINDING_STEP",
    "FIELD_NAMES",
    "MAX_CONFIGS",
    "NO_SERVER",
    "OWNED_FORMAT",
    "PRECISION_GPUS_HINT",
    "InputProblem",
    "Objective",
    "OwnedServers",
    "PlanRequest",
    "Problem",
    "Style",
    "allowed_servers",
    "caps_problem",
    "catalog_for",
    "check_caps",
    "check_owned",
    "check_precision",
    "check_purchase",
    "check_rented_caps",
    "check_request",
    "evaluations_problem",
    "field_name",
    "format_owned",
    "fp8_in",
    "gpus_without_precision",
    "in_service",
    "largest_max_nodes",
    "match_gpus",
    "no_server_problem",
    "node_step",
    "one_as_list",
    "options_per_count",
    "owned_fabric",
    "parse_owned",
    "precision_problem",
    "precision_problem_text",
    "purchase_problem",
    "raise_problem",
    "rentals_without_caps",
    "rented_caps_problem",
    "request_problems",
    "search_size_problem",
    "servers_with_gpus",
    "unknown_ids",
]

"""A problem with a request, structured: the field it concerns, the value given and the message that says what is
wrong and what would fix it, worded for where the request came from.

The same request field has a different name in each entry point: ``max_nodes`` in the Python API and a batch
file, ``--max-nodes`` on the command line, "Max nodes" in the app. ``field_name`` is the one table of those names;
each check words its message with it, so the command line speaks in flags, the app in labels and batch in fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from planner.errors import PlannerInputError

Style = Literal["api", "cli", "app", "fields"]

# request field -> its name in the Python API, on the command line, in the app and in a batch scenario file
FIELD_NAMES: dict[str, tuple[str, str, str, str]] = {
    "servers": ("servers", "--servers", "Allowed servers", "servers"),
    "gpus": ("gpus", "--gpus", "Allowed GPUs", "gpus"),
    "fabrics": ("fabrics", "--fabrics", "Allowed fabrics", "fabrics"),
    "precision": ("precision", "--precision", "Precision", "precision"),
    "max_nodes": ("max_nodes", "--max-nodes", "Max nodes", "max_nodes"),
    "power_caps": ("power_caps", "--power-caps", "Power caps", "power_caps"),
    "life_years": ("life_years", "--life-years", "the service life of bought servers", "life_years"),
    "purchase": ("purchase", "--buy / --rent / --either", "Purchase", "purchase"),
    "owned": ("owned", "--owned", "Owned servers", "owned"),
    "evaluations": ("evaluations", "--evaluations", "Evaluations during the run", "evaluations"),
    "evaluation_samples": (
        "evaluation_samples",
        "--evaluation-samples",
        "Held-out samples per evaluation",
        "evaluation_samples",
    ),
}
_STYLES: tuple[Style, ...] = ("api", "cli", "app", "fields")


def field_name(field: str, style: Style) -> str:
    """The name of request field ``field`` where a request of ``style`` is written."""
    return FIELD_NAMES[field][_STYLES.index(style)]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request: ``field`` (the request field, as PlanRequest names it), ``given`` (the value
    given) and ``message`` (what is wrong and what would fix it, worded for ``style``)."""

    field: str
    given: Any
    message: str
    style: Style = "api"

    def __str__(self) -> str:
        return self.message

    def sentence(self) -> str:
        """The message as a sentence (a capital first letter and a full stop), as the app shows it."""
        return self.message[:1].upper() + self.message[1:] + ("" if self.message.endswith(".") else ".")


class InputProblem(PlannerInputError):
    """Bad input found by a check before a solve; ``problem`` holds it structured."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def raise_problem(problem: Problem | None) -> None:
    """Raise ``problem`` as an InputProblem (nothing when it is None): how the Python API reports a check."""
    if problem is not None:
        raise InputProblem(problem)

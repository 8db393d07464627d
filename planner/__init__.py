"""planner: capacity planning for distributed ML training clusters."""

from planner.batch import batch
from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.model import Work, evaluate, evaluate_space
from planner.schemas import Configuration, Estimate, Layout
from planner.version import __version__

__all__ = [
    "Catalog",
    "Configuration",
    "Estimate",
    "Layout",
    "PlannerInputError",
    "Work",
    "__version__",
    "batch",
    "evaluate",
    "evaluate_space",
    "load_catalog",
]

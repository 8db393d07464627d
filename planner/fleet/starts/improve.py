"""The start heuristics of a large fleet in turn, each from the best start so far."""

from __future__ import annotations

from collections.abc import Callable

from planner.data import Catalog
from planner.fleet.formulation import FleetMIP
from planner.fleet.request import FleetRequest
from planner.fleet.starts.flatten import flatten_start
from planner.fleet.starts.pack import pack_start
from planner.fleet.starts.restricted import restricted_start
from planner.fleet.starts.squeeze import squeeze_start
from planner.fleet.starts.state import StartState
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning


def improve_start(
    mip: FleetMIP,
    cat: Catalog,
    req: FleetRequest,
    state: StartState,
    left: Callable[[], float],
    tuning: FleetTuning = DEFAULT_TUNING,
) -> dict[str, float]:
    """The start heuristics in turn, each from the best start so far, within ``left()`` (the seconds left to them
    and the full MIP): the LP relaxation and the MIP over its modes (``restricted_start``, ``tuning.restricted_share``
    of what is left after the LP), the local search (``flatten_start``, at most ``tuning.flatten_share``), then of
    the time left after these, ``tuning.squeeze_share`` for ``squeeze_start`` and ``tuning.pack_share`` kept for
    ``pack_start``, which runs last and ends early once no packing can beat the plan in hand; the full MIP gets the
    rest. Returns their figures and seconds (each function's docstring)."""
    opts = req.solver
    heur = restricted_start(mip, state, opts.model_copy(update={"time_limit_s": left()}), tuning)
    heur.update(flatten_start(mip, cat, req, state, tuning.flatten_share * left(), tuning))
    rest = left()
    pack_s = tuning.pack_share * rest  # kept for pack_start, which runs last
    squeeze = opts.model_copy(update={"time_limit_s": tuning.squeeze_share * rest})
    heur.update(squeeze_start(mip, cat, req, state, squeeze, tuning))
    heur.update(pack_start(mip, cat, req, state, min(pack_s, left()), tuning))  # never past the call's limit
    return heur

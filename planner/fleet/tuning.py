"""How ``fleet()`` spends its time limit and steers its start heuristics: one frozen object, passed down.

None of these fields changes which plans are feasible or what a plan is worth; they decide which heuristics run,
how long each may take and how hard each searches, so they change which plan is found within the limit and how
fast. ``DEFAULT_TUNING`` is what every entry point uses; tests and benchmarks pass ``dataclasses.replace(
DEFAULT_TUNING, ...)`` to ``fleet(..., tuning=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FleetTuning:
    """The knobs of ``fleet()``'s start heuristics and time budget (module docstring); each field's unit follows it."""

    # ------------------------------------------------------------------ which path a fleet takes (counts of modes)
    restricted_start_modes: int = 2000  # from this many modes on, the start heuristics run (``improve_start``)
    isolate_modes: int = 2000  # from this many modes on, the full MIP's HiGHS runs in a child process killed at
    # the time limit (``planner.solver.solve_model(..., isolate=True)``)

    # ------------------------------------------------------------------ the time limit (seconds, or shares of it)
    min_solve_s: float = 1.0  # seconds every HiGHS solve gets at least, even past the call's limit
    extract_reserve_s: float = 1.0  # seconds of the call's limit kept for reading the plan back after HiGHS
    full_presolve_min_s: float = 120.0  # after the start heuristics, the full MIP is presolved only with at least
    # this many seconds left (HiGHS's presolve of the large MIP takes 10-35 s)
    restricted_share: float = 0.3  # share of the time left after the LP relaxation for the restricted MIP
    flatten_share: float = 0.1  # share of the time left that ``flatten_start`` may take at most
    squeeze_share: float = 0.5  # share of the time left after the restricted MIP and flatten for ``squeeze_start``
    pack_share: float = 0.4  # share of that same time kept for ``pack_start`` (the full MIP gets the rest)
    proof_s: float = 3.0  # most seconds of HiGHS for one cluster-size question of ``pack_start`` (``cluster_fits``)
    proof_min_s: float = 1.0  # seconds left below which ``pack_start`` asks no cluster-size question
    explain_min_s: float = 1.0  # seconds left below which an infeasible fleet's explanation tries no relaxation

    # ------------------------------------------------------------------ how the MIP heuristics choose their modes
    restricted_support: float = 0.02  # modes the LP relaxation uses at least this much (z_m) enter the restricted
    # MIP and the squeeze MIP
    squeeze_top_modes: int = 20  # each job's cheapest modes (standalone estimate) in the squeeze MIP

    # ------------------------------------------------------------------ the local search and the packing
    flatten_candidates: int = 64  # modes of lowest resulting peak that ``flatten_start`` prices per job move
    pack_options: int = 12  # (type, fabric) options ``pack_start`` packs at most, cheapest lower bound first
    pack_iters: int = 400  # repair moves per cluster size while ``pack_start`` gallops up from its size bound
    pack_refine_iters: int = 4000  # repair moves per size below the first size that packed
    pack_retries: int = 8  # fresh repair searches at one size below an option's packing before it is given up
    pack_noise: float = 0.15  # share of repair placements in a random mode (leaves local minima)
    pack_pair: float = 0.3  # share of repair moves that take out two jobs busy in one overloaded slot
    pack_seed: int = 0  # seed of the repair search's random numbers (the same request packs the same way)


DEFAULT_TUNING = FleetTuning()

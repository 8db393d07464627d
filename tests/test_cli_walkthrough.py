"""Defects met in a new-user walkthrough at scale (1,000-16,000 GPUs), each pinned by the check that found it."""

from __future__ import annotations

from pathlib import Path

from planner.optimize import Relaxation, _delta

from .test_cli_qa import planner_process


def _r(requirement: str, given: float, needed: float, unit: str) -> Relaxation:
    return Relaxation(requirement=requirement, given=given, needed=needed, unit=unit, message="")


def test_relaxation_pairs_write_large_deltas_out_not_in_scientific_notation() -> None:
    """Was: '+1.3e+03 days and +39 nodes', '+4.98e+03 kW' in the smallest pairs of an infeasible 405B request."""
    assert _delta(_r("deadline", 30, 1330.2, "days")) == "+1,310 days"  # 1,300.2 rounded up to 3 figures
    assert _delta(_r("power", 2000, 6976.4, "kW")) == "+4,980 kW"
    assert _delta(_r("deadline", 30, 39.25, "days")) == "+9.25 days"
    assert _delta(_r("power", 500, 500.4201, "kW")) == "+0.421 kW"


def test_an_empty_request_file_says_it_is_empty(tmp_path: Path) -> None:
    """Was, for `planner fleet empty.yaml`: '(root): Input should be a valid dictionary or instance of FleetRequest
    (got None)'."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n\n")
    for args in (["fleet", str(empty)], ["batch", str(empty), "--out", str(tmp_path / "out")]):
        p = planner_process(*args)
        assert p.returncode == 2 and f"{empty} is empty (nothing but blanks or comments)" in p.stderr, p.stderr
        assert "FleetRequest" not in p.stderr and "Traceback" not in p.stderr

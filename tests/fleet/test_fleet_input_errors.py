"""`planner fleet` on examples/portfolio.yaml changed in plausible wrong ways.

* A job whose window is backwards, or whose model is unknown, is bad input (exit 2) naming the job by its id
  (not 'jobs.1: Value error, ...', nor the unknown id alone, the job to be searched for).
* A job's work it cannot take (two of samples/tokens/epochs, tokens for a vision model) names the job, in
  ``fleet()`` and before the CLI's progress line.
* Owned servers past the end of their service are never silently retired: the plan says so and how to keep them
  (not 'Keeps 0 of 64 owned ..., retires 64' and nothing on why).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.fleet import FleetRequest, check_fleet_ids
from planner.present import fleet_owned_service_notes, read_fleet_upload

PORTFOLIO = Path(__file__).resolve().parents[2] / "examples" / "portfolio.yaml"


def portfolio(**changes: Any) -> dict[str, Any]:
    spec = yaml.safe_load(PORTFOLIO.read_text())
    spec.update(changes)
    return spec


def with_job(index: int, **changes: Any) -> dict[str, Any]:
    spec = portfolio()
    jobs = [dict(j) for j in spec["jobs"]]
    jobs[index].update(changes)
    spec["jobs"] = jobs
    return spec


def upload(spec: dict[str, Any]) -> FleetRequest:
    return read_fleet_upload("portfolio.yaml", yaml.safe_dump(spec).encode())


def test_a_backwards_window_names_the_job() -> None:
    spec = with_job(1, release_slot=6, due_slot=5)  # burst-8b
    with pytest.raises(PlannerInputError) as exc:
        upload(spec)
    assert "job burst-8b" in str(exc.value) and "due_slot (5) must not be before release_slot (6)" in str(exc.value)
    assert "Value error" not in str(exc.value)


def test_an_unknown_model_names_the_job_and_the_valid_ids(shipped: Catalog) -> None:
    req = upload(with_job(1, model="llama4-8b"))
    with pytest.raises(PlannerInputError, match=r"job burst-8b: unknown model 'llama4-8b'.*llama3-8b"):
        check_fleet_ids(shipped, req)


def test_an_unknown_owned_server_names_the_entry(shipped: Catalog) -> None:
    req = upload(portfolio(owned=[{"server": "dgx-a1000", "count": 64}]))
    with pytest.raises(PlannerInputError, match=r"owned\.0 .*unknown server 'dgx-a1000'"):
        check_fleet_ids(shipped, req)


def test_the_cli_exits_2_naming_the_job_without_planning(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(with_job(1, model="llama4-8b")))
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli", "fleet", str(f)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, r.stderr
    assert "job burst-8b: unknown model 'llama4-8b'" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("changes", "expect"),
    [
        ({"tokens": 1e11, "samples": 5.0}, "job burst-8b: give only one of samples, tokens or epochs"),
        ({"model": "resnet50", "tokens": 1e9}, "job burst-8b: model 'resnet50' is not a sequence model"),
    ],
)
def test_work_a_job_cannot_take_names_the_job_in_the_api_and_the_cli(
    changes: dict[str, Any], expect: str, tmp_path: Path
) -> None:
    """fleet() and the CLI check every job's work first (check_fleet_ids): work_from's message ('give only one of
    samples, tokens or epochs') names the job and comes before the CLI's progress line, not from the mode stage."""
    from planner.fleet import fleet

    spec = with_job(1, **changes)
    with pytest.raises(PlannerInputError, match=expect):
        fleet(spec)
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(spec))
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli", "fleet", str(f)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, r.stderr
    assert expect in r.stderr and "Traceback" not in r.stderr and "Planning the fleet" not in r.stderr


@pytest.mark.parametrize(
    ("age", "life", "expect"),
    [
        (7.0, 4.0, "are 7 years old, past the end of their service at 4 years (life_years): they serve no slot"),
        # 3.9 + 6 x 168 h / 8,766 h = 4.015 > 4 at the end of slot 5; 3.996 at the end of slot 4
        (3.9, 4.0, "during slot 5: they serve slots 0-4 only"),
        (2.5, 4.0, None),  # the shipped example: in service for its 13 weeks
        (7.0, 8.0, None),
    ],
)
def test_owned_servers_out_of_service_are_said(shipped: Catalog, age: float, life: float, expect: str | None) -> None:
    spec = portfolio(
        life_years=life, owned=[{"server": "dgx-a100-80gb", "count": 64, "fabric": "hdr200", "age_years": age}]
    )
    notes = fleet_owned_service_notes(shipped, upload(spec))
    if expect is None:
        assert notes == []
    else:
        (note,) = notes
        assert note.startswith("the 64 owned dgx-a100-80gb on hdr200") and expect in note, note


def test_a_batch_file_given_to_fleet_and_a_fleet_file_given_to_batch_say_which_command_reads_them() -> None:
    """`planner fleet examples/mixed.yaml` says it is a batch scenario file for `planner batch` (not 'jobs: Field
    required / slots: Field required / ...'), and `planner batch examples/portfolio.yaml` says it is a fleet request
    for `planner fleet` (not only 'unknown top-level keys [...]')."""
    from planner.batch import expand

    mixed = (PORTFOLIO.parent / "mixed.yaml").read_bytes()
    with pytest.raises(PlannerInputError, match=r"mixed.yaml is a batch scenario file .*`planner batch mixed.yaml"):
        read_fleet_upload("mixed.yaml", mixed)
    with pytest.raises(
        PlannerInputError, match=r"this is a fleet request \(slots, jobs\): plan it with `planner fleet"
    ):
        expand(yaml.safe_load(PORTFOLIO.read_text()))


def test_a_job_id_given_twice_is_named() -> None:
    """Two jobs called 'burst-8b': the message names the id to rename, not only that ids must be unique."""
    spec = with_job(2, id="burst-8b")
    with pytest.raises(PlannerInputError) as exc:
        upload(spec)
    assert "job ids must be unique: 'burst-8b' is given to more than one job; rename them" in str(exc.value)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"node_counts": []}, "node_counts: give at least one count from 1 to max_nodes (256)"),
        ({"node_counts": [5000]}, "all of [5000] are above it, or leave node_counts out for every count"),
        ({"slot_hours": float("inf")}, "slot_hours: Input should be a finite number"),
        ({"life_years": float("nan")}, "life_years: Input should be a finite number"),
    ],
)
def test_node_counts_that_leave_none_and_infinite_hours_are_bad_input(changes: dict[str, Any], says: str) -> None:
    """node_counts empty or all above max_nodes (a KeyError from the mode table) and an infinite slot (an
    OverflowError from billing) are refused with what to give."""
    with pytest.raises(PlannerInputError) as exc:
        upload(portfolio(**changes))
    assert says in str(exc.value)


def test_a_power_relaxation_below_a_kilowatt_is_not_rounded_to_zero(shipped: Catalog) -> None:
    from types import SimpleNamespace

    from planner.fleet.run import _relaxation_text

    req = upload(portfolio(power_kw=0.5))
    said = _relaxation_text(shipped, req, "power", SimpleNamespace(totals={"peak_site_power_kw": 8.25}))  # type: ignore[arg-type]
    assert said == "7.75 kW more power (peak 8.25 kW against 0.5 kW)"

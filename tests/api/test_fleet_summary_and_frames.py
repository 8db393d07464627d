"""The fleet plan as the Python API hands it out: its text summary (the same decisions as the app's list), its
tables as CSV that reads back to the plan, and the proof line of a plan on its proved smallest cluster. Also: a
whole-number float global batch in Work, no temp file left by a batch export interrupted twice, and the note on FP4
for workloads without a published FP4 training recipe."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import PlannerInputError, Work


def test_work_takes_a_float_global_batch_that_is_a_whole_number() -> None:
    """Work(global_batch=2048.0) is the whole number 2048 (a float from YAML or pandas); a fractional, infinite,
    NaN or zero batch is refused."""
    w = Work(global_batch=2048.0)
    assert w.global_batch == 2048 and isinstance(w.global_batch, int)
    big = 2**53 + 1  # an int is kept as given: a float of it would round to 2**53
    assert Work(global_batch=big).global_batch == big
    for bad in (2048.5, math.inf, math.nan, 0.0):
        with pytest.raises(PlannerInputError, match=r"Work.global_batch must be a whole number of samples >= 1"):
            Work(global_batch=bad)


SECOND_CTRL_C = """
import os, signal, sys, time
import pandas as pd
import importlib
batch = importlib.import_module("planner.batch.runner")

def first_ctrl_c(*args, **kwargs):  # the first Ctrl-C arrives while the scenarios run
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

def half_written_then_ctrl_c(self, path, *args, **kwargs):  # the second one while results.csv is written
    with open(path, "w") as fh:
        fh.write("id,status\\n")
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

batch.run_local = first_ctrl_c
pd.DataFrame.to_csv = half_written_then_ctrl_c
batch.run_batch([{"model": "resnet50", "deadline_days": 1}], sys.argv[1], workers=1, progress=False)
"""


def test_a_second_ctrl_c_during_the_export_leaves_no_temp_file(tmp_path) -> None:
    """A second SIGINT while the interrupted batch writes results.csv leaves no `.results.csv.tmp` beside the
    results and no half-written results.csv: the export removes its temp file on any exception, not on OSError
    only. A real process, signalled twice."""
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", SECOND_CTRL_C, str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr, proc.stderr[-2000:]
    assert "results.sqlite" in {p.name for p in out.iterdir()}  # the run had started and stored its scenarios
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    assert not (out / "results.csv").exists()  # never a half-written results.csv under the final name


# ------------------------------------------------------------------------------------------- fleet plan text
def a_fleet_plan(**update: object):  # type: ignore[no-untyped-def]
    """A plan written by hand: 4 owned dgx-a100-80gb on hdr200 (3 kept, 1 retired) and 2 bought beside them, 5
    rented a100-pcie-4 at peak; 'pre' runs 3 x on the owned cluster in slots 0-2 and 4, 'ft' on the rented pool in
    slot 5, one slot after its due slot, and asked for fp4 on an A100 (computes in bf16 -- an instance of the
    note, whatever the model would do)."""
    from planner.fleet import FleetPlan
    from planner.solver import SolverReport, SolverStatus

    pre = {"job": "pre", "model": "llama3-8b", "server": "dgx-a100-80gb", "gpu": "a100-sxm-80gb", "kind": "site",
           "pool": "dgx-a100-80gb|hdr200", "nodes": 3, "fabric": "hdr200", "precision": "bf16",
           "precision_asked": "bf16", "slots": [0, 1, 2, 4], "first_slot": 0, "last_slot": 4,
           "late_slots": 0}  # fmt: skip
    ft = {**pre, "job": "ft", "server": "a100-pcie-4", "kind": "rent", "pool": "a100-pcie-4|eth25 (rent)",
          "nodes": 5, "fabric": "eth25", "precision_asked": "fp4", "slots": [5], "first_slot": 5, "last_slot": 5,
          "late_slots": 1}  # fmt: skip
    owned = {"server": "dgx-a100-80gb", "gpu": "a100-sxm-80gb", "fabric": "hdr200", "kind": "owned+buy", "nodes": 5,
             "owned": 4, "kept": 3, "retired": 1, "added": 2, "peak_busy_nodes": 3, "switches_added": 1,
             "capex_usd": 700_000.0, "rent_usd": 0.0, "node_periods": 0}  # fmt: skip
    rent = {**owned, "server": "a100-pcie-4", "fabric": "eth25", "kind": "rent", "owned": 0, "kept": 0, "retired": 0,
            "added": 5, "switches_added": 0, "capex_usd": 0.0, "rent_usd": 1_234.5, "node_periods": 5}  # fmt: skip
    solver = SolverReport(status=SolverStatus.TIME_LIMIT, highs_status="time limit", objective=100_000.0,
                          bound=95_000.0, gap=0.05, solve_time_s=1.0, build_time_s=0.1, handoff_time_s=0.1, nodes=0,
                          simplex_iterations=1, variables=1, constraints=1)  # fmt: skip
    totals = {"capex_usd": 700_000.0, "rent_usd": 1_234.5, "cost_usd": 100_000.4, "facility_energy_kwh": 23_384.2,
              "peak_site_power_kw": 13.046}  # fmt: skip
    fields = {"status": "time_limit", "objective": "cost", "objective_value": 100_000.4, "purchases": [owned, rent],
              "assignments": [pre, ft], "schedule": [], "totals": totals, "solver": solver, **update}  # fmt: skip
    return FleetPlan(**fields)


def test_a_fleet_plan_summarises_itself_as_a_single_job_plan_does() -> None:
    """FleetPlan.summary() is the fleet's text as PlanResult.summary() is a plan's: status and objective, each
    purchase decision, each job's pool, slots and lateness, the precision notes, totals and the solver's bound."""
    assert a_fleet_plan().summary().splitlines() == [
        "Best fleet within the time limit (not proven optimal): cost = 100,000 USD",
        "  Keeps 3 of 4 owned dgx-a100-80gb on hdr200, retires 1",
        "  Buys 2 x dgx-a100-80gb extending the owned hdr200 cluster (1 switch added, capex $700,000)",
        "  Rents 5 x a100-pcie-4 at peak (5 node billing periods, $1,234)",
        "  Jobs (pool, slots run, lateness):",
        "    pre: 3 x dgx-a100-80gb on hdr200, slots 0-2,4 (4 run), on time",
        "    ft: 5 x a100-pcie-4 on eth25 (rented), slot 5 (1 run), late by 1 slot",
        "  ft runs on a100-sxm-80gb, which has no fp4: it computes in bf16",
        "  Totals: capex $700,000, rent $1,234, cost over the horizon $100,000 (the bought hardware's share + site "
        "energy + rent + late penalties); facility energy 23,380 kWh; peak site power 13.05 kW",
        "  Solver: HiGHS time_limit, bound 95,000 USD, gap 5.00%",
    ]
    # the app's lines are the same decisions as markdown list items
    assert a_fleet_plan().decisions(markdown=True)[:2] == [
        "- **Keeps** 3 of 4 owned dgx-a100-80gb on hdr200, **retires** 1.",
        "- **Buys** 2 x dgx-a100-80gb extending the owned hdr200 cluster (1 switch added, capex $700,000).",
    ]
    nothing = a_fleet_plan(purchases=[], status="optimal", objective="energy", objective_value=527.04)
    assert nothing.summary().splitlines()[:3] == [
        "Optimal fleet: energy = 527.04 kWh (facility)",
        "  Buys nothing",
        "  Rents nothing",
    ]


def test_a_fleet_plan_without_a_fleet_says_why() -> None:
    none = {"objective_value": None, "purchases": [], "assignments": [], "totals": {}, "solver": None}
    infeasible = a_fleet_plan(**none, status="infeasible", explanation="needs a budget of at least $2,000,000")
    assert infeasible.summary() == "No feasible fleet: needs a budget of at least $2,000,000"
    late = a_fleet_plan(**none, status="no_solution", explanation="HiGHS found no fleet within the time limit")
    assert late.summary() == "No fleet within the time limit: HiGHS found no fleet within the time limit"


def test_the_fleet_frames_round_trip_through_csv(tmp_path) -> None:
    """Every cell of the fleet frames is a scalar, so a CSV reads back to the same frame: the slots are text
    ('0-2,4') that parses back into the plan's list -- a list cell would be written as '[0, 1, 2, 4]' and read
    back as that string."""
    import pandas as pd

    from planner.formatting import parse_slot_ranges

    plan = a_fleet_plan()
    frame = plan.assignment_frame()
    assert list(frame["slots"]) == ["0-2,4", "5"] and list(frame["slots_run"]) == [4, 1]
    for name, df in {"jobs": frame, "purchases": plan.purchase_frame()}.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
        back = pd.read_csv(tmp_path / f"{name}.csv", dtype={"slots": str})
        pd.testing.assert_frame_equal(back, df, check_dtype=False)
    back = pd.read_csv(tmp_path / "jobs.csv")
    assert [parse_slot_ranges(s) for s in back["slots"]] == [a["slots"] for a in plan.assignments]
    assert plan.assignments[0]["slots"] == [0, 1, 2, 4]  # the data keeps the list


@given(st.lists(st.integers(min_value=0, max_value=520), max_size=40))
def test_slot_ranges_read_back_to_the_slots(slots: list[int]) -> None:
    from planner.formatting import parse_slot_ranges, slot_ranges

    text = slot_ranges(slots)
    assert parse_slot_ranges(text) == sorted(set(slots))
    runs = {t for t in slots if t - 1 not in slots}  # a run of consecutive slots starts where the one before is not
    assert len(text.split(",")) == len(runs) if slots else text == ""


# ------------------------------------------------------------------------------------------- fp4 for a CNN
CNN_FP4 = "no published recipe trains its convolutions in FP4"


def test_fp4_for_a_cnn_is_said_to_be_an_extrapolation(capsys: pytest.CaptureFixture[str]) -> None:
    """`--precision fp4` for resnet50 is planned at the FP4 peak with a note that FP4 training is published for
    transformers only, so the figure is an extrapolation. Said by evaluate, solve (plan_notes: also the app and
    batch rows) and a fleet's summary; not for an LLM in fp4, nor for a CNN in bf16 or in the fp8 an fp4 request
    falls back to."""
    import pandas as pd

    from planner.cli.main import main
    from planner.formatting import precision_caveat

    assert CNN_FP4 in (precision_caveat("resnet50", "cnn", "fp4") or "")
    assert [precision_caveat("resnet50", "cnn", p) for p in ("bf16", "fp8")] == [None, None]
    assert precision_caveat("llama3-8b", "llm", "fp4") is None
    lora = precision_caveat("llama2-70b-lora", "llm", "fp4", frozen_base=True) or ""
    assert "no faster than FP8" in lora and "0.97x and 1.07x" in lora and "compare with fp8" in lora
    assert precision_caveat("llama2-70b-lora", "llm", "fp8", frozen_base=True) is None
    assert precision_caveat("bert-large", "encoder", "fp4") is None
    # the reason (FP4 is published for transformers only) covers a recommender too, not only a CNN
    assert "its embedding and feature-interaction layers in FP4" in (
        precision_caveat("dlrm-dcnv2", "recsys", "fp4") or ""
    )
    assert precision_caveat("dlrm-dcnv2", "recsys", "fp8") is None
    args = ["evaluate", "--server", "hgx-b200", "--nodes", "1", "--precision"]
    assert main([*args, "fp4", "--model", "resnet50"]) == 0 and CNN_FP4 in capsys.readouterr().err
    assert main([*args, "bf16", "--model", "resnet50"]) == 0 and CNN_FP4 not in capsys.readouterr().err
    assert main([*args, "fp4", "--model", "llama3-8b"]) == 0 and CNN_FP4 not in capsys.readouterr().err
    code = main(["solve", "--model", "resnet50", "--deadline-days", "1", "--precision", "fp4", "--gpus", "B200"])
    assert code == 0 and CNN_FP4 in capsys.readouterr().err
    from planner import PlanRequest, load_catalog
    from planner.present import front_with_precision

    request = PlanRequest(model="resnet50", deadline_days=1, precision="fp4", gpus=["B200", "H100"])
    _, notes = front_with_precision(load_catalog(), request, pd.DataFrame({"gpu": ["b200", "h100-sxm"]}))
    assert sum(CNN_FP4 in n for n in notes) == 1  # the b200 points compute in fp4; the h100 ones in fp8
    assert "h100-sxm has no fp4: the front's plans on it compute in fp8" in notes
    cnn = {"model": "resnet50", "workload_family": "cnn", "precision": "fp4", "precision_asked": "fp4"}
    plan = a_fleet_plan()
    plan = plan.model_copy(update={"assignments": [plan.assignments[0], {**plan.assignments[1], **cnn}]})
    assert "  ft: resnet50 computes in fp4 here, but FP4 training is published for transformers" in plan.summary()
    assert any(line.startswith("- **ft**: resnet50 computes in fp4") for line in plan.decisions(markdown=True))
    lora = {"model": "llama2-70b-lora", "workload_family": "llm", "precision": "fp4", "frozen_base": True}
    plan = plan.model_copy(update={"assignments": [plan.assignments[0], {**plan.assignments[1], **lora}]})
    assert "  ft: llama2-70b-lora fine-tunes a frozen base in fp4 here: published FP4 LoRA runs" in plan.summary()


def test_the_fleet_csv_export_reads_back_to_the_plan(tmp_path) -> None:
    """`planner fleet FILE --csv DIR` writes the plan's three tables beside the --json output; read
    back with pandas they hold the plan's values (the plan taken from the same run's --json), the slots readable
    back into the lists. A file where the directory belongs is bad input before the solve."""
    import contextlib
    import io
    import json

    import pandas as pd

    from planner.cli.main import main
    from planner.fleet import FleetPlan
    from planner.formatting import FLEET_CSV_TEXT_COLUMNS, parse_slot_ranges

    f = tmp_path / "tiny.yaml"  # bert may run in any of the 4 daily slots, resnet in slots 1-2; idle slots follow
    f.write_text(
        "slots: 4\nslot_hours: 24\ngpus: [L40S]\nmax_nodes: 4\njobs:\n"
        "  - {id: bert, model: bert-large, release_slot: 0, due_slot: 3}\n"
        "  - {id: resnet, model: resnet50, epochs: 90, release_slot: 1, due_slot: 2}\n"
    )
    out = tmp_path / "plan"
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        assert main(["fleet", str(f), "--json", "--csv", str(out), "--time-limit", "20"]) == 0
    plan = FleetPlan.model_validate(json.loads(stdout.getvalue()))
    frames = {"purchases": plan.purchase_frame(), "jobs": plan.assignment_frame(), "schedule": plan.schedule_frame()}
    assert "" in set(frames["schedule"]["jobs"])  # an idle slot: the empty cell must read back as ''
    for name, frame in frames.items():
        back = pd.read_csv(out / f"{name}.csv", keep_default_na=False, dtype=dict.fromkeys(FLEET_CSV_TEXT_COLUMNS, str))
        pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    plain = pd.read_csv(out / "jobs.csv")
    assert [parse_slot_ranges(s) for s in plain["slots"]] == [a["slots"] for a in plan.assignments]
    assert main(["fleet", str(f), "--csv", str(f)]) == 2


def test_a_plan_on_its_proved_smallest_cluster_says_so_and_no_other_plan_does() -> None:
    """pack_start proves (HiGHS, cluster_fits, or its window bound) that no cluster of its type and
    fabric below its size runs every job; a plan that is that cluster alone says so, with the value bound that
    follows (the cluster at that size + each job's least energy) and how far the plan is above it. A plan that also
    keeps owned nodes or rents, or buys another size, says nothing."""
    from planner.fleet.run import plan_proofs
    from planner.fleet.starts import PackProof

    bought = {"server": "type-10", "gpu": "h100-sxm", "fabric": "hdr200", "kind": "buy", "nodes": 29, "owned": 0,
              "kept": 0, "retired": 0, "added": 29, "peak_busy_nodes": 29, "switches_added": 3,
              "capex_usd": 8_000_000.0, "rent_usd": 0.0, "node_periods": 0}  # fmt: skip
    plan = a_fleet_plan(purchases=[bought], objective_value=2_302_183.3)
    proof = PackProof("type-10", "hdr200", 29, 2_284_791.4)
    (line,) = plan_proofs(proof, plan)
    assert line.startswith("29 is the fewest type-10 nodes on hdr200 that run every job in its window")
    assert "worth at least 2,284,791 USD" in line and line.endswith("this plan is within 0.8% of it")
    assert "  Proved: 29 is the fewest" in plan.model_copy(update={"proofs": [line]}).summary()
    assert plan.model_copy(update={"proofs": [line]}).decisions(markdown=True)[-1].startswith("- **Proved**: 29 is")
    assert plan_proofs(proof, a_fleet_plan(objective_value=2_302_183.3)) == []  # owned kept + rented: not that one
    assert plan_proofs(proof, a_fleet_plan(purchases=[{**bought, "added": 30}], objective_value=2e6)) == []
    assert plan_proofs(None, plan) == []

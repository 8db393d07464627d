"""The Python API as a notebook user meets it: wrong types and values at the public entry points (evaluate,
evaluate_space, Work, PlanRequest, solve, pareto) are a PlannerInputError (or, constructing a request, pydantic's
ValidationError: both ValueError) saying what is wrong and what to give -- never an AttributeError, KeyError or
TypeError from inside, an empty frame without columns, or NaN / negative figures computed from nonsense. Results as
pandas keep their columns and units; the optimizer's names are at the top level without importing Pyomo."""

from __future__ import annotations

import importlib
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

import planner
from planner import Configuration, PlannerInputError, Work
from planner.data import Catalog
from planner.plan import Plan, PlanRequest, pareto, solve

BERT = {"model": "bert-large", "server": "dgx-h100", "nodes": 2}
SMALL = {"model": "llama3-8b", "tokens": 1e10, "deadline_days": 30, "servers": ["dgx-h100"], "max_nodes": 4}


# ------------------------------------------------------------------------------------------------ evaluate
def test_evaluate_takes_a_dict_of_configuration_fields_as_the_configuration_itself(shipped: Catalog) -> None:
    assert planner.evaluate(shipped, dict(BERT)) == planner.evaluate(shipped, Configuration(**BERT))


@pytest.mark.parametrize(
    "args, says",
    [
        ((None, BERT), "catalog must be a planner.Catalog, got NoneType"),
        (("catalog", BERT), "catalog must be a planner.Catalog, got str"),
        ((Configuration(**BERT), "swapped"), "catalog must be a planner.Catalog, got Configuration"),
        (("shipped", ["bert-large", "dgx-h100", 2]), "configuration must be a planner Configuration or a dict"),
        (("shipped", {**BERT, "nodes": -1}), "configuration: nodes: Input should be greater than or equal to 1"),
        (("shipped", {**BERT, "power_cap": "full"}), "configuration: power_cap"),
    ],
)
def test_evaluate_of_a_wrong_argument_is_bad_input_naming_it(shipped: Catalog, args: tuple, says: str) -> None:
    cat, config = args
    with pytest.raises(PlannerInputError, match=says.replace("(", r"\(").replace(".", r"\.")):
        planner.evaluate(shipped if cat == "shipped" else cat, config)


# ------------------------------------------------------------------------------------------------ evaluate_space
@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"nodes": [-1, 0, 2]}, "-1 is not one"),  # would give NaN rows and divide-by-zero warnings
        ({"nodes": [1.5]}, "1.5 is not one"),  # never truncated to 1 node in silence
        ({"nodes": []}, "whole numbers >= 1"),  # never an empty frame without columns
        ({"nodes": "8"}, "whole numbers >= 1"),
        ({"caps": [1.5]}, "1.5 is not one"),  # never an empty frame without columns
        ({"caps": [0.0]}, "0.0 is not one"),
        ({"caps": [math.nan]}, "nan is not one"),
        ({"caps": None}, "fractions of TDP"),
        ({"life_years": -1}, "life_years must be a finite number of years > 0"),  # would price negative costs
        ({"life_years": 0}, "life_years must be a finite number of years > 0"),  # would price infinite costs
        ({"life_years": math.inf}, "life_years must be a finite number of years > 0"),
        ({"work": {"samples": 10}}, "work must be a planner.Work"),
        ({"purchase": "lease"}, "purchase must be 'buy' or 'rent'"),
    ],
)
def test_evaluate_space_refuses_values_it_would_compute_nonsense_from(
    shipped: Catalog, kwargs: dict, says: str
) -> None:
    base = {"servers": ["dgx-h100"], "nodes": [2]}
    with pytest.raises(PlannerInputError, match=says.replace("(", r"\(").replace(".", r"\.")):
        planner.evaluate_space(shipped, "bert-large", **{**base, **kwargs})


def test_caps_outside_every_listed_gpus_range_give_no_rows_but_the_columns(shipped: Catalog) -> None:
    """A cap below the GPU's configurable range (H100: 200-700 W of 700 W) gives no configuration, as each server
    keeps only the caps within its range -- and the empty frame keeps every column and its dtype, so
    df[["power_cap"]] selects an empty column rather than raising a KeyError."""
    df = planner.evaluate_space(shipped, "bert-large", servers=["dgx-h100"], caps=[0.1], nodes=[2])
    full = planner.evaluate_space(shipped, "bert-large", servers=["dgx-h100"], caps=[1.0], nodes=[2])
    assert df.empty and list(df.columns) == list(full.columns)
    assert [pd.api.types.is_numeric_dtype(df[c]) for c in df] == [pd.api.types.is_numeric_dtype(full[c]) for c in full]
    assert df[["power_cap", "time_to_train_h"]].empty


def test_evaluate_space_says_when_no_listed_server_has_the_fabric(shipped: Catalog) -> None:
    assert "edr100" not in shipped.server("dgx-h100").fabrics
    with pytest.raises(PlannerInputError, match="none of the listed servers can use fabric"):
        planner.evaluate_space(shipped, "bert-large", servers=["dgx-h100"], fabrics=["edr100"], nodes=[2])


def test_evaluate_space_reads_one_id_or_one_number_as_a_list_of_one(shipped: Catalog) -> None:
    """servers="dgx-h100" is one server, the same as ["dgx-h100"] -- not a string iterated letter by letter
    ("unknown server 'd'")."""
    one = planner.evaluate_space(shipped, "bert-large", servers="dgx-h100", fabrics="ndr400", caps=0.8, nodes=4)
    listed = planner.evaluate_space(
        shipped, "bert-large", servers=["dgx-h100"], fabrics=["ndr400"], caps=[0.8], nodes=[4]
    )
    pd.testing.assert_frame_equal(one, listed)
    assert len(one) == 1


def test_evaluate_space_refuses_a_workload_of_another_type(shipped: Catalog) -> None:
    with pytest.raises(PlannerInputError, match="workload must be a workload id"):
        planner.evaluate_space(shipped, 42, servers=["dgx-h100"], nodes=[2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"samples": -5}, "Work.samples must be a finite number of samples > 0"),  # would give a negative time
        ({"samples": math.nan}, "Work.samples"),
        ({"samples": "1e6"}, "Work.samples"),
        ({"global_batch": 0}, "Work.global_batch must be a whole number"),
        ({"global_batch": 2.5}, "Work.global_batch"),
        ({"precision": "int8"}, "Work.precision must be one of bf16, fp16, fp8, fp4, tf32, fp32"),
    ],
)
def test_work_refuses_values_out_of_range(kwargs: dict, says: str) -> None:
    with pytest.raises(PlannerInputError, match=says):
        Work(**kwargs)


def test_work_takes_numpy_numbers() -> None:
    import numpy as np

    w = Work(samples=np.float64(1e6), global_batch=np.int64(256))
    assert w.samples == 1e6 and w.global_batch == 256


# ------------------------------------------------------------------------------------------------ requests
@pytest.mark.parametrize(
    "field, value, says",
    [
        ("budget_usd", math.inf, "budget_usd must be a finite number (got inf); leave it out (None) for no limit"),
        ("budget_usd", math.nan, "budget_usd must be a finite number (got nan)"),  # not '>= 0': NaN fails every compare
        ("deadline_days", math.inf, "deadline_days must be a finite number"),
        ("power_kw", math.inf, "power_kw must be a finite number"),
        ("power_kw", math.nan, "power_kw must be a finite number"),
        ("tokens", math.inf, "tokens must be a finite number (got inf); leave it out (None) for the workload"),
        ("life_years", math.nan, "life_years must be a finite number"),
    ],
)
def test_a_request_refuses_nan_and_infinity_as_the_cli_and_batch_do(field: str, value: float, says: str) -> None:
    """inf and NaN are refused, not taken as a limit: the same rule as `planner solve --budget-usd inf` (exit 2)
    and a batch scenario (a bad_input row)."""
    with pytest.raises(ValidationError, match=says.replace("(", r"\(").replace(")", r"\)")):
        PlanRequest(**{**SMALL, field: value})
    with pytest.raises(PlannerInputError) as exc:
        solve({**SMALL, field: value})
    # the validator's own words, once: not pydantic's 'Value error, ' nor the value said twice ('(got nan) (got nan)')
    assert str(exc.value).startswith(f"request: {field}: {says}") and str(exc.value).count("(got ") == 1


def test_an_empty_list_of_allowed_ids_or_caps_says_what_to_give() -> None:
    """gpus=[] (servers, fabrics, power_caps likewise) allows nothing, which no request means: the message says to
    give one or leave the field out (it read 'gpus : no server in the catalog carries them')."""
    for field, says in (
        ("gpus", "gpus: give at least one GPU id, or leave gpus out to allow every GPU"),
        ("servers", "servers: give at least one server id, or leave servers out to allow every server"),
        ("fabrics", "fabrics: give at least one fabric id, or leave fabrics out to allow every fabric"),
        ("power_caps", "power_caps: give at least one power cap, or leave power_caps out for 0.4, 0.5, ..., 1.0"),
    ):
        with pytest.raises(PlannerInputError) as exc:
            solve({**SMALL, field: []})
        assert str(exc.value).startswith(f"request: {says}"), str(exc.value)


def test_solve_and_pareto_refuse_wrong_types_with_a_message(shipped: Catalog) -> None:
    with pytest.raises(PlannerInputError, match=r"catalog must be a planner\.Catalog, got str"):
        solve(PlanRequest(**SMALL), "catalog")  # type: ignore[arg-type]
    with pytest.raises(PlannerInputError, match="request must be a planner PlanRequest or a dict of its fields"):
        solve("llama3-8b", shipped)  # type: ignore[arg-type]
    with pytest.raises(PlannerInputError, match=r"request: tokens: Input should be greater than 0 \(got -1\)"):
        solve({**SMALL, "tokens": -1}, shipped)  # a dict request: PlannerInputError, not ValidationError
    req = PlanRequest(**SMALL)
    for kwargs, says in (
        ({"x": "money"}, "pareto x must be one of energy, cost, carbon, time"),  # not KeyError: 'money'
        ({"y": "kwh"}, "pareto y must be one of"),
        ({"points": "5"}, "pareto points must be a whole number >= 2"),  # not a TypeError
        ({"points": 3.5}, "pareto points must be a whole number >= 2"),
        ({"points": True}, "pareto points must be a whole number >= 2"),
        ({"points": 1}, "pareto points must be a whole number >= 2"),
        ({"x": "cost", "y": "cost"}, "two different objectives"),
    ):
        with pytest.raises(PlannerInputError, match=says):
            pareto(req, catalog=shipped, **kwargs)  # type: ignore[arg-type]


def test_caps_below_every_allowed_gpu_are_bad_input_not_a_plan_that_fits_no_memory(shipped: Catalog) -> None:
    """power_caps=[0.1] is below every allowed GPU's settable range: bad input naming each GPU's range, not
    'infeasible: no parallel layout fits GPU memory on the allowed GPUs' (a wrong reason)."""
    gpu = shipped.gpu("h100-sxm")
    lo = gpu.min_power_limit_w / gpu.tdp_w
    with pytest.raises(PlannerInputError, match=rf"no allowed GPU can run at power cap 0\.1 .*h100-sxm {lo:.2f}-1\.00"):
        solve({**SMALL, "power_caps": [0.1]}, shipped)
    with pytest.raises(PlannerInputError, match=r"no allowed GPU can run at power cap 0\.1"):
        pareto({**SMALL, "power_caps": [0.1]}, catalog=shipped)


# ------------------------------------------------------------------------------------------------ results as pandas
def test_an_infeasible_result_has_the_plan_table_columns_and_says_the_relaxation_in_numbers(shipped: Catalog) -> None:
    res = solve({**SMALL, "tokens": 1e12, "deadline_days": 1}, shipped)
    assert res.status == "infeasible" and res.plan is None
    df = res.to_frame()
    columns = [k for k in Plan.model_fields if k != "estimate"] + ["training_h", "precision", "role"]
    assert df.empty and list(df.columns) == columns
    assert res.explanation is not None
    deadline = [r for r in res.explanation.relaxations if r.requirement == "deadline"]
    assert deadline and deadline[0].given == 1 and deadline[0].needed > 1 and deadline[0].unit == "days"
    assert res.summary().startswith("No plan:") and "deadline of at least" in res.summary()


def test_the_plan_table_round_trips_through_csv_with_numeric_dtypes(shipped: Catalog) -> None:
    res = solve(SMALL, shipped)
    df = res.to_frame()
    for col in ("nodes", "gpus", "power_cap_w", "time_to_train_days", "facility_energy_kwh", "cost_usd", "upfront_usd"):
        assert pd.api.types.is_numeric_dtype(df[col]), col
    back = pd.read_csv(io.StringIO(df.to_csv(index=False)))
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    text = res.summary()
    p = res.plan
    assert p is not None
    for part in (p.server, p.gpu, p.fabric, f"{p.nodes} x", "cap", "precision", "days", "kWh", "cost $"):
        assert part in text, part


def test_the_pareto_front_states_its_units(shipped: Catalog) -> None:
    front = pareto(SMALL, x="cost", y="energy", points=2, catalog=shipped)
    assert front.attrs["units"]["cost"] == "USD" and front.attrs["units"]["energy"] == "kWh"
    assert front.attrs["units"]["epsilon"] == "kWh"


# ------------------------------------------------------------------------------------------------ top level
def test_the_optimizer_names_are_at_the_top_level_and_import_planner_stays_without_pyomo() -> None:
    plan = importlib.import_module("planner.plan")
    fleet_module = importlib.import_module("planner.fleet")
    assert planner.solve is plan.solve and planner.pareto is plan.pareto
    assert planner.PlanRequest is plan.PlanRequest and planner.PlanResult is plan.PlanResult
    assert planner.load_fleet_request is fleet_module.load_fleet_request
    assert set(planner.__all__) <= set(dir(planner))
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        planner.nonesuch  # noqa: B018
    code = "import sys, planner; print('pyomo.environ' in sys.modules, 'planner.plan.solve' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ------------------------------------------------------------------------------------------------ an explicit space
def _space(**cols: list) -> pd.DataFrame:
    base = {"server": ["dgx-h100"], "fabric": ["ndr400"], "power_cap": [1.0], "nodes": [2]}
    return pd.DataFrame({**base, **cols})


@pytest.mark.parametrize(
    "cols, says",
    [
        ({"nodes": [0]}, r"space: nodes are whole numbers >= 1 \(row 0: 0\)"),  # not a NaN row
        ({"nodes": [2.5]}, r"space: nodes are whole numbers >= 1 \(row 0: 2\.5\)"),  # not truncated to 2
        ({"power_cap": [0.1]}, r"space: power cap 0\.1 of server 'dgx-h100' is outside h100-sxm's configurable"),
        ({"power_cap": [1.5]}, r"space: power cap 1\.5"),
        ({"fabric": ["edr100"]}, "space: server 'dgx-h100' cannot use fabric 'edr100'"),  # not estimated on EDR
        ({"fabric": [None]}, "every row needs a server and a fabric"),  # not an IndexError
        ({"server": ["dgx-h1000"]}, "unknown server 'dgx-h1000'"),
    ],
)
def test_an_explicit_space_is_checked_row_by_row(shipped: Catalog, cols: dict, says: str) -> None:
    """Each row is checked before it is estimated: a cap outside the GPU's settable range (0.1 of an H100 would
    extrapolate the power curve below it), a node count that is not a whole number >= 1 (0 would give NaN, 2.5 be
    truncated to 2), a fabric the server cannot use, a missing or unknown server."""
    with pytest.raises(PlannerInputError, match=says):
        planner.evaluate_space(shipped, "bert-large", space=_space(**cols))


def test_an_explicit_space_without_a_column_says_which(shipped: Catalog) -> None:
    with pytest.raises(
        PlannerInputError, match=r"space needs the columns server, fabric, power_cap, nodes .* missing: fabric"
    ):
        planner.evaluate_space(shipped, "bert-large", space=_space().drop(columns="fabric"))  # not KeyError: 'fabric'


def test_an_explicit_space_of_no_rows_gives_no_rows(shipped: Catalog) -> None:
    """A table of no configurations is evaluated to no rows (it was an IndexError in the fabric check)."""
    empty = pd.DataFrame({"server": [], "fabric": [], "power_cap": [], "nodes": []})
    assert len(planner.evaluate_space(shipped, "bert-large", space=empty)) == 0


def test_several_configurations_in_one_space_are_the_configurations_one_by_one(shipped: Catalog) -> None:
    space = pd.DataFrame(
        {
            "server": ["dgx-h100", "dgx-a100-80gb"],
            "fabric": ["ndr400", "hdr200"],
            "power_cap": [1.0, 0.5],
            "nodes": [2, 3],
        }
    )
    df = planner.evaluate_space(shipped, "bert-large", space=space)
    for i, row in space.iterrows():
        est = planner.evaluate(shipped, {"model": "bert-large", **row.to_dict()})
        assert df["time_to_train_h"].iloc[i] == pytest.approx(est.time_to_train_h, rel=1e-12)
        assert df["facility_energy_kwh"].iloc[i] == pytest.approx(est.facility_energy_kwh, rel=1e-12)


def test_a_request_reads_one_id_as_a_list_of_one() -> None:
    """sites="us-colo" is a list of one, as evaluate_space takes servers="dgx-h100" -- not 'Input should be a
    valid list'."""
    one = PlanRequest(**{**SMALL, "servers": "dgx-h100", "sites": "hydro-nordic", "gpus": "H100", "fabrics": "ndr400"})
    assert one == PlanRequest(
        **{**SMALL, "servers": ["dgx-h100"], "sites": ["hydro-nordic"], "gpus": ["H100"], "fabrics": ["ndr400"]}
    )


def test_a_list_too_short_or_too_long_is_said_plainly() -> None:
    """'jobs: give at least 1 entry, got none', not pydantic's 'List should have at least 1 item after validation,
    not 0'."""
    from pydantic import BaseModel, Field

    from planner.errors import describe_validation_error

    class Jobs(BaseModel):
        jobs: list[int] = Field(min_length=1, max_length=2)

    for given, said in (([], "give at least 1 entry, got none"), ([1, 2, 3], "give at most 2 entries, got 3")):
        with pytest.raises(ValidationError) as err:
            Jobs(jobs=given)
        assert describe_validation_error(err.value, "fleet.yaml") == f"fleet.yaml: jobs: {said}"


def test_a_request_dict_with_a_wrong_value_and_an_unknown_id_is_told_both(shipped: Catalog) -> None:
    """solve of a dict names every problem at once: the schema's (a negative deadline) and the ids the catalog lacks
    (a misspelt model and server), one line each."""
    with pytest.raises(PlannerInputError) as exc:
        solve({"model": "llama-8b", "deadline_days": -5, "servers": ["dgx-h10"]}, shipped)
    lines = str(exc.value).splitlines()
    assert lines[0] == "request: deadline_days: Input should be greater than 0 (got -5)"
    assert lines[1].startswith("request: model: unknown model 'llama-8b'. Did you mean 'llama3-8b'?")
    assert lines[2].startswith("request: servers: unknown server 'dgx-h10'. Did you mean 'dgx-h100'?")
    # a request whose fields are all well formed names only what the catalog lacks, as before
    with pytest.raises(PlannerInputError, match=r"^unknown model 'llama-8b'"):
        solve({"model": "llama-8b", "deadline_days": 5}, shipped)


def test_a_site_named_twice_is_the_site_once(shipped: Catalog) -> None:
    """sites=[us-colo, us-colo] plans as sites=[us-colo] (it crashed with 'Categorical categories must be unique'
    from pricing, exit 3 on the command line and an error row in a batch); the order of distinct sites is kept."""
    req = PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, alternatives=0, sites=["us-colo", "us-colo"])
    assert req.sites == ["us-colo"]
    assert PlanRequest(model="llama3-8b", deadline_days=30, sites=["hyperscale", "us-colo", "hyperscale"]).sites == [
        "hyperscale",
        "us-colo",
    ]
    twice, once = solve(req, shipped), solve(req.model_copy(update={"sites": ["us-colo"]}), shipped)
    assert twice.plan is not None and twice.plan == once.plan


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"server": "rental-i5-13500-rtx4000"}, "is offered for rent only: give purchase='rent'"),
        ({"server": "power-optimized-a100", "purchase": "rent"}, "is not offered for rent: give purchase='buy'"),
        (
            {"server": "dgx-h100", "purchase": "rent", "power_cap": 0.5},
            "the rented 'dgx-h100' does not let you set the GPU power limit: give power_cap=1.0",
        ),
    ],
)
def test_evaluate_refuses_a_configuration_that_cannot_be_had_as_asked(
    shipped: Catalog, config: dict[str, object], says: str
) -> None:
    """planner.evaluate refuses what `planner evaluate` refuses (one rule, physics.acquisition_problem): bought with
    no price (it returned cost_usd nan, and an Estimate that failed its own JSON round-trip), rented with no rent, or
    rented below TDP where the provider sets the limit (it returned figures at a cap nobody can set)."""
    with pytest.raises(PlannerInputError) as exc:
        planner.evaluate(shipped, {"model": "bert-large", "nodes": 2, **config})
    assert says in str(exc.value)
    rented = planner.evaluate(shipped, {"model": "bert-large", "nodes": 2, "server": "dgx-h100", "purchase": "rent"})
    assert math.isfinite(rented.cost_usd) and rented.power_cap == 1.0


def test_evaluate_space_refuses_a_space_it_cannot_read_or_arguments_it_would_ignore(shipped: Catalog) -> None:
    """A dict as the space (an AttributeError), a grid argument beside an explicit space (servers, caps and nodes
    were silently ignored) and a site column other than the call's (dropped, the rows priced at us-colo) are bad input
    saying what to give; a server listed twice is listed once (pandas' 'Categorical categories must be unique')."""
    rows = {"server": ["dgx-h100"], "fabric": ["ndr400"], "power_cap": [1.0], "nodes": [2]}
    with pytest.raises(PlannerInputError, match=r"space must be a pandas DataFrame .* got dict"):
        planner.evaluate_space(shipped, "bert-large", space=rows)
    with pytest.raises(PlannerInputError, match=r"give either space .* or servers, caps, nodes .*, not both"):
        planner.evaluate_space(
            shipped, "bert-large", servers="dgx-a100-80gb", caps=[0.5], nodes=[7], space=pd.DataFrame(rows)
        )
    with pytest.raises(PlannerInputError, match="space has a site column with values other than site='us-colo'"):
        planner.evaluate_space(shipped, "bert-large", space=pd.DataFrame({**rows, "site": ["hydro-nordic"]}))
    # the defaults, however written, are no grid given
    table = planner.evaluate_space(shipped, "bert-large", space=pd.DataFrame(rows), nodes=range(1, 1025))
    assert len(table) == 1 and table["nodes"].iloc[0] == 2
    twice = planner.evaluate_space(shipped, "bert-large", servers=["dgx-h100", "dgx-h100"], nodes=[1, 2])
    assert twice.equals(planner.evaluate_space(shipped, "bert-large", servers=["dgx-h100"], nodes=[1, 2]))


@pytest.mark.parametrize(
    ("layout", "says"),
    [
        ({"tensor_parallel": 3}, "layout tensor_parallel=3 does not divide the 8 GPUs of a dgx-h100 node"),
        (
            {"tensor_parallel": 8, "pipeline_parallel": 3},
            "layout tensor x context x pipeline parallel = 24 does not divide the 32 GPUs of 4 x dgx-h100",
        ),
        ({"sequence_parallel": True}, "layout sequence_parallel=True splits what tensor parallelism replicates"),
    ],
)
def test_evaluate_says_why_a_fixed_layout_cannot_run(shipped: Catalog, layout: dict[str, object], says: str) -> None:
    """A fixed layout the cluster cannot hold is refused with its cause, as `planner evaluate` says it (one rule,
    physics.layout_cluster_problem) -- not 'no parallel layout is valid ... (use fewer nodes)', and sequence
    parallelism without tensor parallelism is not estimated as a plain DP layout."""
    with pytest.raises(PlannerInputError, match=re.escape(says)):
        planner.evaluate(shipped, {"model": "llama3-8b", "server": "dgx-h100", "nodes": 4, "layout": layout})


def test_the_plan_table_says_the_precision_each_row_computes_in(shipped: Catalog) -> None:
    """fp8 asked on A100 and H100: a plan or alternative on an A100 computes in bf16 (its fallback), and to_frame says
    so per row, as the command line's tables and batch rows do."""
    res = solve({**SMALL, "precision": "fp8", "gpus": ["A100", "H100"], "alternatives": 3}, shipped)
    df = res.to_frame()
    assert res.plan is not None and len(df) > 1
    every = [res.plan, *res.alternatives]
    assert list(df["precision"]) == [p.estimate.precision for p in every]
    assert set(df["precision"]) <= {"fp8", "bf16"}
    pairs = zip(df["gpu"], df["precision"], strict=True)
    assert all(gpu.startswith("a100") == (prec == "bf16") for gpu, prec in pairs)


def test_one_id_or_one_cap_reads_as_a_list_of_one_in_plan_and_fleet_requests() -> None:
    """PlanRequest(power_caps=0.8) and a fleet request's gpus: H100 / power_caps: 0.7 are lists of one, as
    PlanRequest(gpus="H100") and evaluate_space(caps=0.8) already read them (they were refused)."""
    import yaml

    from planner.fleet import FleetRequest

    assert PlanRequest(model="llama3-8b", deadline_days=3, power_caps=0.8).power_caps == [0.8]
    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml").read_text())
    fleet = FleetRequest.model_validate({**spec, "gpus": "H100", "servers": "dgx-h100", "power_caps": 0.7})
    assert fleet.gpus == ["H100"] and fleet.servers == ["dgx-h100"] and fleet.power_caps == [0.7]

"""The app's and the batch report's charts (Vega-Lite specs from planner.present and planner.batch).

* Scaling: every GPU type has a colour of its own -- Vega's 10-colour default scheme would give two of the
  catalog's 14 GPU types one colour (a100-pcie and mi325x one blue, b200 and mi355x one red) -- and a GPU that
  computes in a fallback precision says it in its label.
* Cost & energy: the bars in the plan's order -- the plan first, then alt 1, 2, ..., not alphabetical (which puts
  the plan last) -- each labelled with what tells it apart, so alternatives that differ in fabric or cap do not
  read alike ('225x hgx-b300' three times).
* Fleet schedule: jobs in the order they start, cluster names whole, the axis over the whole horizon.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.data import Catalog
from planner.formatting import COLOR_SCHEMES
from planner.plan import PlanRequest, PlanResult, solve
from planner.present import breakdown_chart, breakdown_frame, scaling_chart, scaling_frame


def _find(spec: Any, key: str) -> list[Any]:
    """Every value under ``key`` anywhere in a Vega-Lite spec."""
    out = []
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == key:
                out.append(v)
            out += _find(v, key)
    elif isinstance(spec, list):
        for v in spec:
            out += _find(v, key)
    return out


def test_every_gpu_type_of_the_scaling_chart_has_a_colour_of_its_own(shipped: Catalog) -> None:
    req = PlanRequest(model="bert-large", deadline_days=1, max_nodes=8)  # every GPU of the catalog, cheap to evaluate
    frame = scaling_frame(shipped, req)
    n = frame["gpu"].nunique()
    assert n > 10  # more than Vega's default scheme holds
    colors = [c for c in _find(scaling_chart(frame, None, 8).to_dict(), "color") if isinstance(c, dict)]
    assert colors and all(c.get("field") == "gpu" for c in colors)
    for c in colors:
        scale = c.get("scale", {})
        assert scale.get("scheme") in COLOR_SCHEMES and COLOR_SCHEMES[scale["scheme"]] >= n, scale


@pytest.fixture(scope="module")
def with_alternatives(shipped: Catalog) -> PlanResult:
    return solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, alternatives=3), shipped)


def test_the_cost_and_energy_bars_keep_the_plans_order_and_tell_alternatives_apart(
    with_alternatives: PlanResult,
) -> None:
    frame = breakdown_frame(with_alternatives)
    labels = list(dict.fromkeys(frame["plan"]))
    every = [with_alternatives.plan, *with_alternatives.alternatives]
    assert len(labels) == len(every) > 2
    assert labels[0].startswith("plan: ")
    assert [x.split(":")[0] for x in labels[1:]] == [f"alt {i}" for i in range(1, len(every))]
    hardware = [x.split(": ", 1)[1] for x in labels]
    distinct = {(p.nodes, p.server, p.fabric, p.power_cap, p.purchase) for p in every if p is not None}
    assert len(set(hardware)) == len(distinct)  # as many distinct labels as distinct hardware
    spec = breakdown_chart(frame).to_dict()
    ys = [e["y"] for e in _find(spec, "encoding") if "y" in e]
    assert ys and all(y.get("sort", "ascending") is None for y in ys)  # data order, not alphabetical
    # each chart its own legend: the cost's parts are not listed under the energy's (GPUs, cooling, host, ...)
    assert spec["resolve"] == {"scale": {"color": "independent"}}
    titles = [e["color"]["title"] for e in _find(spec, "encoding") if "color" in e]
    assert titles == ["part of the cost", "part of the energy"]


def test_the_fleet_schedule_lists_jobs_as_they_start_and_names_clusters_whole() -> None:
    """Jobs are listed in the order they start (pretrain first, not alphabetical), the legend's cluster names are
    not cut ('a100-pcie-4 on hdr200 (r…' at Vega's default 160 px), and the time axis spans the whole horizon,
    idle slots after the last job included."""
    from types import SimpleNamespace

    from planner.present import fleet_gantt, fleet_job_order

    def job(jid: str, slots: list[int], server: str = "dgx-a100-80gb", kind: str = "buy") -> dict[str, Any]:
        return {"job": jid, "slots": slots, "nodes": 2, "server": server, "fabric": "hdr200", "kind": kind}

    assignments = [
        job("eval-bert", [4], "a100-pcie-4", "rent"),
        job("lora-b", [6, 7]),
        job("pretrain", [0, 1, 2, 3]),
        job("lora-a", [1, 2]),
    ]
    schedule = [
        {"slot": t, "on_site": True, "facility_power_kw": 10.0 * (t + 1), "server": "dgx-a100-80gb"} for t in range(8)
    ]
    plan = SimpleNamespace(assignments=assignments, schedule=schedule)
    assert fleet_job_order(plan) == ["pretrain", "lora-a", "eval-bert", "lora-b"]
    spec = fleet_gantt(plan, 168.0).to_dict()
    bars = spec["vconcat"][0]["encoding"]
    assert bars["y"]["sort"] == ["pretrain", "lora-a", "eval-bert", "lora-b"]
    assert bars["color"]["legend"]["labelLimit"] == 0
    assert bars["x"]["scale"]["domain"] == [0, 8]  # the whole horizon, its last slot (7) included


def test_the_batch_reports_cost_chart_gives_every_gpu_a_colour_and_says_the_precision() -> None:
    """report.html's cost chart uses a colour scheme with at least as many colours as GPU types (Vega's 10-colour
    default would repeat colours in a sweep over every GPU type), and its tooltip says the precision."""
    import pandas as pd

    from planner.batch import cost_chart

    gpus = [f"gpu-{i}" for i in range(14)]
    ok = pd.DataFrame(
        {
            "id": [f"s{i}" for i in range(14)],
            "gpu": gpus,
            "precision": ["bf16"] * 14,
            "upfront_usd": [1e6 + i for i in range(14)],
            "cost_usd": [1e4 + i for i in range(14)],
            "purchase": ["buy"] * 14,
        }
    )
    enc = cost_chart(ok, "t")["encoding"]
    assert COLOR_SCHEMES[enc["color"]["scale"]["scheme"]] >= 14
    assert "precision" in [t["field"] for t in enc["tooltip"]]


def test_the_scaling_chart_says_which_gpus_compute_in_a_fallback_precision(shipped: Catalog) -> None:
    """With fp4 asked for, each curve is labelled by GPU and the precision it computes in ('h100-sxm (fp8)',
    'a100-sxm-80gb (bf16)'), not by GPU alone with the precision in a tooltip; with one precision, by GPU alone."""
    req = PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, precision="fp4", max_nodes=4)
    frame = scaling_frame(shipped, req)
    spec = scaling_chart(frame, None, 4).to_dict()
    colors = [c for c in _find(spec, "color") if isinstance(c, dict) and "field" in c]
    assert colors and {c["field"] for c in colors} == {"series"} and colors[0]["title"] == "GPU (precision)"
    labels = set(_find(spec, "series")) | {
        r["series"] for d in _find(spec, "datasets") for rows in d.values() for r in rows if "series" in r
    }
    assert "b200 (fp4)" in labels and "h100-sxm (fp8)" in labels and "a100-sxm-80gb (bf16)" in labels
    bf16 = PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, max_nodes=4)
    spec16 = scaling_chart(scaling_frame(shipped, bf16), None, 4).to_dict()
    plain = [c for c in _find(spec16, "color") if isinstance(c, dict) and "field" in c]
    assert {c["field"] for c in plain} == {"gpu"}  # one precision: the GPU alone

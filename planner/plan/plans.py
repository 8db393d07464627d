"""A plan from a candidate row: the configuration re-evaluated by the exact model (planner.evaluate) and priced as
the request asks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.data import Catalog, Configuration, Estimate, Layout
from planner.physics import (
    Space,
    compute,
    cost,
    estimate_from_row,
    evaluate,
)
from planner.physics.space import LAYOUT_COLUMNS, space_columns
from planner.physics.tables import ColumnsRow
from planner.plan.limits import (
    samples_of,
    work_of,
)
from planner.plan.owned import owned_credit_usd, owned_use
from planner.plan.result import Plan


def plan_from_row(catalog: Catalog, req: PlanRequest, row: Any) -> Plan:
    """Re-evaluate a candidate with the exact scalar path (planner.evaluate) at the layout the search chose for it
    (``chosen_layout``) and in the precision the scan priced it in:
    the request's where its GPU has it (fp16 stays fp16: its gradients reduce in fp16, bf16's in fp32 under
    Megatron), else the fallback the GPU computes it in (a plan on a GPU without fp4 computes in fp8, and says so).
    ``row``: a candidate row read by column name (a pandas Series, or ``Columns.row``)."""
    server = catalog.server(str(row["server"]))
    gpu = catalog.gpu(server.gpu or "")
    precision: str | None = req.precision
    if precision is not None and not compute.has_precision(gpu, precision):
        precision = compute.precision_used(gpu, precision)
    est = evaluate(
        catalog,
        Configuration(
            model=req.model,
            server=str(row["server"]),
            nodes=int(row["nodes"]),
            fabric=str(row["fabric"]),
            power_cap=float(row["power_cap"]),
            global_batch=req.global_batch,
            samples=samples_of(catalog, req),
            precision=precision,
            site=str(row["site"]),
            purchase=row["purchase"],
            life_years=req.life_years,
            layout=chosen_layout(row),
            startup_s=req.startup_s,
            evaluations=req.evaluations,
            evaluation_samples=req.evaluation_samples,
        ),
    )
    return _plan_from_estimate(catalog, req, est)


def chosen_layout(row: Any) -> Layout | None:
    """The layout the search chose for a candidate row (its layout columns and interleave), so that the plan is
    re-evaluated at that layout instead of searched again: the same step terms, hence the same figures. None for
    a row without them (then the search runs)."""
    if "tensor_parallel" not in row:
        return None
    return _layout({c: row[c] for c in (*LAYOUT_COLUMNS, "virtual_stages")})


def chosen_layouts(rows: pd.DataFrame, interleave: bool = True) -> list[Layout | None]:
    """``chosen_layout`` of every row of a table, read column by column; ``interleave`` off: without the virtual
    stages (None: a search among the layouts chooses them)."""
    if "tensor_parallel" not in rows.columns:
        return [None] * len(rows)
    names = (*LAYOUT_COLUMNS, "virtual_stages")
    values = zip(*(rows[c].tolist() for c in names), strict=True)
    return [_layout(dict(zip(names, v, strict=True)), interleave) for v in values]


_LAYOUT_KINDS = {"recompute": str, "sequence_parallel": bool}


def _layout(values: dict[str, Any], interleave: bool = True) -> Layout:
    """The ``Layout`` of one row's layout columns and interleave (virtual stages only where it is pipelined, and
    with ``interleave``)."""
    fields = {c: _LAYOUT_KINDS.get(c, int)(values[c]) for c in LAYOUT_COLUMNS}
    virtual = int(values["virtual_stages"]) if interleave and int(values["pipeline_parallel"]) > 1 else None
    return Layout(**fields, virtual_stages=virtual)


class Columns:
    """A table's columns as NumPy arrays, each converted on first use, and its rows read by column name through them
    (``row``): a few rows of a wide table are read without building a pandas Series per row, which costs more than
    the reading."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        a = self._arrays.get(name)
        if a is None:
            a = self._arrays[name] = self._df[name].to_numpy()
        return a

    def __contains__(self, name: str) -> bool:
        return name in self._df.columns

    def row(self, k: int) -> Row:
        return Row(self, k)


class Row:
    """Row ``k`` of a table read by column name (``Columns.row``): the value a Series of the row holds, as
    ``row[name]``, and ``name in row``."""

    __slots__ = ("_columns", "_k")

    def __init__(self, columns: Columns, k: int) -> None:
        self._columns, self._k = columns, k

    def __getitem__(self, name: str) -> Any:
        return self._columns[name][self._k]

    def __contains__(self, name: str) -> bool:
        return name in self._columns


def _plan_from_estimate(catalog: Catalog, req: PlanRequest, est: Estimate) -> Plan:
    """A plan from the exact model's estimate, with the request's owned servers credited (owned_credit_usd)."""
    capex_usd, cost_usd = est.capex_usd, est.cost_usd
    if est.purchase == "buy" and req.owned:
        credit = float(owned_credit_usd(catalog, req, est.server, est.fabric, [est.nodes], [est.time_to_train_h])[0])
        capex_usd -= credit
        cost_usd -= float(cost.amortized_usd(credit, est.time_to_train_h, req.life_years))
    upfront = capex_usd if est.purchase == "buy" else cost_usd
    used, unused, unused_kw = owned_use(catalog, req, est) if req.owned else (0, 0, 0.0)
    return Plan(
        owned_nodes=used,
        owned_unused_nodes=unused,
        owned_unused_idle_kw=unused_kw,
        server=est.server,
        gpu=est.gpu,
        nodes=est.nodes,
        gpus=est.gpus,
        fabric=est.fabric,
        switches=est.switches,
        power_cap=est.power_cap,
        power_cap_w=est.power_cap_w,
        site=est.site,
        purchase=est.purchase,
        layout=est.layout,
        global_batch=est.global_batch,
        time_to_train_h=est.time_to_train_h,
        time_to_train_days=est.time_to_train_h / 24.0,
        evaluation_h=est.evaluation_s / 3600.0,
        startup_h=est.startup_s / 3600.0,
        power_kw=est.power_kw,
        facility_power_kw=est.facility_power_kw,
        energy_kwh=est.energy_kwh,
        facility_energy_kwh=est.facility_energy_kwh,
        cost_usd=cost_usd,
        capex_usd=capex_usd,
        upfront_usd=upfront,
        carbon_kg=est.carbon_kg,
        rack_units=est.nodes * catalog.server(est.server).rack_units,
        throughput_samples_per_s=est.throughput_samples_per_s,
        mfu=est.mfu,
        bottleneck=est.bottleneck,
        estimate=est,
    )


def plans_from_rows(catalog: Catalog, req: PlanRequest, rows: pd.DataFrame) -> list[Plan]:
    """Re-evaluate several candidates with the exact model in one evaluation per (site, purchase): the computation
    `planner.evaluate` does for one configuration (`space.space_columns` of an explicit space, then
    `estimate_from_row`), batched, with the search among the layouts the full search chose for them (each
    is its configuration's fastest, so the search among them finds it again: ``search_among``)."""
    out: list[Plan | None] = [None] * len(rows)
    work = work_of(catalog, req)
    sites = _strings(rows["site"])
    buys = _strings(rows["purchase"])
    layouts = chosen_layouts(rows, interleave=False)  # the search among them chooses each one's interleave
    hardware = {
        "server": _strings(rows["server"]),
        "fabric": _strings(rows["fabric"]),
        "power_cap": rows["power_cap"].to_numpy(dtype=float),
        "nodes": rows["nodes"].to_numpy(dtype=np.int64),
    }
    for site, purchase in sorted(set(zip(sites, buys, strict=True))):
        sel = np.flatnonzero((sites == site) & (buys == purchase))
        space = explicit_space(*(v[sel] for v in hardware.values()))
        chosen = [layouts[i] for i in sel]
        among = None if None in chosen else [c for c in chosen if c]
        # evaluate_space's columns for these rows, read without building their table
        columns = space_columns(
            catalog,
            catalog.workload(req.model),
            space,
            catalog.site(site).id,
            purchase,
            work,
            life_years=req.life_years,
            search_among=among,
        )
        for k, i in enumerate(sel):
            out[int(i)] = _plan_from_estimate(catalog, req, estimate_from_row(ColumnsRow(columns, k)))
    return [p for p in out if p is not None]


def _strings(s: pd.Series) -> np.ndarray:
    """A column's values as strings (a categorical's categories picked by its codes)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return np.asarray([str(c) for c in s.cat.categories], dtype=object)[np.asarray(s.cat.codes)]
    return s.astype(str).to_numpy()


def explicit_space(servers: np.ndarray, fabrics: np.ndarray, caps: np.ndarray, nodes: np.ndarray) -> Space:
    """The ``Space`` that ``evaluate_space`` makes of a table of these columns (physics.space.space_from_frame: server
    and fabric ids as sorted categories and their codes), made directly: the rows are candidates of the scan, valid
    by construction, so the table's row-by-row checks would find nothing."""
    s_cat, f_cat = pd.Categorical(servers), pd.Categorical(fabrics)
    return Space(
        [str(x) for x in s_cat.categories],
        [str(x) for x in f_cat.categories],
        np.asarray(s_cat.codes, dtype=np.int64),
        np.asarray(f_cat.codes, dtype=np.int64),
        np.asarray(caps, dtype=float),
        np.asarray(nodes, dtype=np.int64),
    )

"""How a plan and its alternatives read candidate rows (planner/plan/plans.py): a row read through ``Columns`` holds
what its pandas Series holds (so ``estimate_from_row`` and ``chosen_layout`` read the same), a row of the columns
``evaluate_space`` builds its table of (``space_columns``, read through ``ColumnsRow``) what the table's row holds,
``chosen_layouts`` is ``chosen_layout`` of every row, and ``explicit_space`` is the space ``evaluate_space`` makes of
the same table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.data import Catalog
from planner.physics import estimate_from_row, evaluate_space
from planner.physics.space import space_columns, space_from_frame
from planner.physics.tables import ColumnsRow
from planner.plan import PlanRequest
from planner.plan.candidates import physics_chunks, price_chunk
from planner.plan.limits import work_of
from planner.plan.plans import Columns, chosen_layout, chosen_layouts, explicit_space


@pytest.fixture(scope="module")
def rows(shipped: Catalog) -> pd.DataFrame:
    """Candidate rows of several servers, fabrics, caps, sites and purchase modes."""
    req = PlanRequest(
        model="mixtral-8x22b",
        tokens=1e10,
        deadline_days=30,
        max_nodes=24,
        sites=["us-colo", "coal-heavy"],
        purchase="either",
    )
    cand = price_chunk(shipped, req, next(physics_chunks(shipped, req, 1, 24)))
    pick = np.random.default_rng(3).choice(len(cand), size=40, replace=False)
    return cand.iloc[np.sort(pick)].reset_index(drop=True)


def test_a_row_read_through_columns_holds_what_its_series_holds(rows: pd.DataFrame) -> None:
    columns = Columns(rows)
    for k in range(len(rows)):
        series = rows.iloc[k]
        for name in rows.columns:
            got, want = columns.row(k)[name], series[name]
            assert got == want or (got != got and want != want), (k, name)
        assert "tensor_parallel" in columns.row(k) and "no such column" not in columns.row(k)
        assert chosen_layout(columns.row(k)) == chosen_layout(series)


def test_chosen_layouts_is_chosen_layout_of_every_row(rows: pd.DataFrame) -> None:
    assert chosen_layouts(rows) == [chosen_layout(r) for _, r in rows.iterrows()]
    assert chosen_layouts(rows[["server", "nodes"]]) == [None] * len(rows)


def test_an_estimate_read_from_the_columns_is_the_estimate_of_the_tables_row(
    shipped: Catalog, rows: pd.DataFrame
) -> None:
    """Every row of ``space_columns`` (scalars broadcast, categoricals by code) holds what the same row of
    ``evaluate_space``'s table holds, in every column; so the estimates read from either are equal."""
    req = PlanRequest(model="mixtral-8x22b", tokens=1e10, deadline_days=30)
    frame = rows[["server", "fabric", "power_cap", "nodes"]].astype({"server": str, "fabric": str})
    work = work_of(shipped, req)
    df = evaluate_space(shipped, req.model, work=work, space=frame)
    cols = space_columns(shipped, shipped.workload(req.model), space_from_frame(shipped, frame), "us-colo", "buy", work)
    assert list(cols) == list(df.columns)
    for k in range(len(df)):
        row, series = ColumnsRow(cols, k), df.iloc[k]
        for name in df.columns:
            got, want = row[name], series[name]
            assert got == want or (got != got and want != want), (k, name)
        assert estimate_from_row(row) == estimate_from_row(series)


def test_the_explicit_space_is_the_space_evaluate_space_makes_of_the_table(
    shipped: Catalog, rows: pd.DataFrame
) -> None:
    table = {
        "server": rows["server"].astype(str).to_numpy(),
        "fabric": rows["fabric"].astype(str).to_numpy(),
        "power_cap": rows["power_cap"].to_numpy(dtype=float),
        "nodes": rows["nodes"].to_numpy(dtype=np.int64),
    }
    got = explicit_space(*table.values())
    want = space_from_frame(shipped, pd.DataFrame(table))
    assert got.server_ids == want.server_ids and got.fabric_ids == want.fabric_ids
    for name in ("server_idx", "fabric_idx", "power_cap", "nodes"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name

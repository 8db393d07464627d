"""The per-chunk reduction (planner/plan/reduce.py) against plain loops: each option group's argmin under a mask
(`OptionGroups.argmin`, from a mask's minima plus a few extra rows: `argmin_with`, the first row: `first`), the limit
masks (`Masks`, against `within` row by row) and the rows `solve_reducer` keeps (the best plan, the best with each
limit relaxed, and each limit's least value under the others until a chunk has a plan) -- on random tables with
ties, NaN and infinities, and on a priced chunk of the shipped catalog with per-site power envelopes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from planner.data import Catalog
from planner.plan import PlanRequest
from planner.plan.candidates import physics_chunks, price_chunk
from planner.plan.formulation import OBJECTIVE_COLUMNS
from planner.plan.limits import LIMIT_NAMES, limit_columns, limits_for, within
from planner.plan.reduce import HARDWARE_KEY, Masks, OptionGroups, option_groups, solve_reducer


def loop_argmin(v: np.ndarray, mask: np.ndarray, starts: np.ndarray) -> list[int]:
    """Per group (rows starts[g]..starts[g+1]-1), the first row in mask with the least finite v."""
    out = []
    ends = [*starts[1:].tolist(), len(v)]
    for a, b in zip(starts.tolist(), ends, strict=True):
        rows = [i for i in range(a, b) if mask[i] and np.isfinite(v[i])]
        if rows:
            least = min(v[i] for i in rows)
            out.append(next(i for i in rows if v[i] == least))
    return out


def random_groups(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A table of n rows in contiguous option groups of random lengths (the hardware key columns only)."""
    lengths = rng.integers(1, 12, size=n)
    lengths = lengths[np.cumsum(lengths) <= n]
    lengths = np.append(lengths, n - lengths.sum()) if lengths.sum() < n else lengths
    group = np.repeat(np.arange(len(lengths)), lengths)
    return pd.DataFrame(
        {
            "server": pd.Categorical([f"s{g % 3}" for g in group]),
            "fabric": pd.Categorical([f"f{g // 3 % 2}" for g in group]),
            "power_cap": (group // 6 % 4) * 0.1 + 0.6,
            "site": pd.Categorical(["a"] * n),
            "purchase": pd.Categorical(["buy"] * n),
        }
    )


@pytest.mark.parametrize("seed", range(25))
def test_the_group_argmins_are_the_loops(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    table = random_groups(rng, n)
    groups = OptionGroups(table)
    v = rng.integers(0, 6, size=n).astype(float)  # small integers: many ties
    special = rng.random(n)
    v[special < 0.05] = np.nan
    v[(special >= 0.05) & (special < 0.08)] = np.inf
    v[(special >= 0.08) & (special < 0.1)] = -np.inf
    mask = rng.random(n) < 0.6
    assert groups.argmin(v, mask).tolist() == loop_argmin(v, mask, groups.starts)
    finite = np.where(np.isfinite(v), v, 0.0)
    assert groups.argmin(finite, mask, all_finite=True).tolist() == loop_argmin(finite, mask, groups.starts)
    # the minima of one mask and a few extra rows: the argmin over both
    extra = (rng.random(n) < 0.1) & ~mask
    base = groups.least(v, mask)
    assert groups.argmin_with(v, base, extra).tolist() == loop_argmin(v, mask | extra, groups.starts)
    # a column that grows within each group: its least is the first row in the mask
    rising = np.arange(n, dtype=float)
    assert groups.first(mask).tolist() == loop_argmin(rising, mask, groups.starts)


def test_option_groups_split_at_every_change_of_hardware_option() -> None:
    table = random_groups(np.random.default_rng(7), 300)
    groups = OptionGroups(table)
    key = list(zip(*(table[c].astype(str) for c in HARDWARE_KEY), strict=True))
    changes = [0] + [i for i in range(1, len(key)) if key[i] != key[i - 1]]
    assert groups.starts.tolist() == changes
    assert option_groups(table) is option_groups(table)  # kept while the table lives


@pytest.fixture(scope="module")
def chunk(shipped: Catalog) -> tuple[PlanRequest, pd.DataFrame]:
    """A priced chunk at two sites (power envelopes per site), bought or rented."""
    req = PlanRequest(
        model="llama3-8b",
        tokens=1e11,
        deadline_days=20,
        objective="energy",
        max_nodes=48,
        sites=["us-colo", "hydro-nordic"],
        purchase="either",
    )
    phys = next(physics_chunks(shipped, req, 1, 60))
    return req, price_chunk(shipped, req, phys)


@pytest.mark.parametrize("power_kw", [None, 150.0])
def test_the_masks_are_within_row_by_row(shipped: Catalog, chunk: Any, power_kw: float | None) -> None:
    req, cand = chunk
    req = req.model_copy(update={"power_kw": power_kw, "budget_usd": 2e6, "max_rack_units": 300})
    lim = limits_for(shipped, req)
    m = Masks(cand, lim, req, shipped)
    cols = limit_columns(lim)
    envelope = [shipped.site(str(s)).power_envelope_kw for s in cand["site"]]
    rhs = {
        "deadline": [lim.deadline_h] * len(cand),
        "budget": [lim.budget_usd] * len(cand),
        "power": envelope if power_kw is None else [power_kw] * len(cand),
        "nodes": [lim.max_nodes] * len(cand),
        "rack": [lim.max_rack_units] * len(cand),
    }
    usable = cand["usable"].to_numpy(dtype=bool)
    for k in LIMIT_NAMES:
        values = cand[cols[k]].to_numpy(dtype=float)
        ok = np.array([bool(within(v, b, k)) for v, b in zip(values, rhs[k], strict=True)])
        relaxed = np.array([bool(within(v, b, k, relaxed=True)) for v, b in zip(values, rhs[k], strict=True)])
        assert np.array_equal(m.ok[k], ok) and np.array_equal(m.relaxed[k], relaxed), k
        assert np.array_equal(m.values[k], values, equal_nan=True)
        assert m.nested[k]
    oks = {k: m.ok[k] for k in LIMIT_NAMES}
    assert np.array_equal(m.all, usable & np.logical_and.reduce(list(oks.values())))
    for k in LIMIT_NAMES:
        assert np.array_equal(m.all_but(k), usable & np.logical_and.reduce([oks[j] for j in LIMIT_NAMES if j != k]))


def loop_reducer(cand: pd.DataFrame, m: Masks, column: str, relaxations: bool) -> set[int]:
    """The rows solve_reducer keeps, by the loops: per option group the best plan under all limits, under all
    limits with each one relaxed, and (``relaxations``) each limit's least value under the others."""
    starts = OptionGroups(cand).starts
    obj = cand[column].to_numpy(dtype=float)
    picks = set(loop_argmin(obj, m.all, starts))
    for k in m.given:
        others = m.all_but(k)
        picks |= set(loop_argmin(obj, others & m.relaxed[k], starts))
        if relaxations:
            picks |= set(loop_argmin(m.values[k], others, starts))
    return picks


@pytest.mark.parametrize(
    ("objective", "deadline_days", "budget_usd"),
    [("energy", 20.0, None), ("cost", 20.0, 3e6), ("carbon", 9.0, 1e6), ("time", None, 5e5), ("energy", 0.01, None)],
)
def test_the_solve_reducer_keeps_what_the_loops_keep(
    shipped: Catalog, chunk: Any, objective: str, deadline_days: float | None, budget_usd: float | None
) -> None:
    req, cand = chunk
    req = req.model_copy(update={"objective": objective, "deadline_days": deadline_days, "budget_usd": budget_usd})
    lim = limits_for(shipped, req)
    column = OBJECTIVE_COLUMNS[objective]
    m = Masks(cand, lim, req, shipped)
    reduce = solve_reducer(shipped, req, lim, column)
    first = set(np.unique(reduce(cand)).tolist())
    # the first chunk keeps the relaxations; once a chunk has had a plan, the later ones do not
    assert first == loop_reducer(cand, m, column, relaxations=True)
    again = set(np.unique(reduce(cand)).tolist())
    assert again == loop_reducer(cand, m, column, relaxations=not m.all.any())

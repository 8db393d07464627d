"""The grouping primitives the search and the candidate tables rely on, against their definitions: row classes are
exactly the sets of equal rows (whichever of the two methods runs), and the option order sorts rows by (server,
fabric, cap, nodes) whatever order they come in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from planner.physics import tables
from planner.plan.candidates import option_keys, option_order

small_tables = st.integers(0, 40).flatmap(
    lambda n: arrays(np.float64, st.tuples(st.just(n), st.integers(1, 5)), elements=st.sampled_from([0.0, 1.5, 2.0]))
)


@pytest.mark.parametrize("few_rows", [0, 1_000_000], ids=["by-columns", "by-bytes"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(table=small_tables)
def test_row_classes_are_the_sets_of_equal_rows(few_rows: int, table: np.ndarray) -> None:
    before = tables.FEW_ROWS
    tables.FEW_ROWS = few_rows
    try:
        first, inverse = tables.row_classes(table)
    finally:
        tables.FEW_ROWS = before
    n = len(table)
    assert len(inverse) == n
    for i in range(n):
        for j in range(n):
            assert (inverse[i] == inverse[j]) == np.array_equal(table[i], table[j])
    # one representative per class: its first row
    assert [int(f) for f in first] == [int(np.flatnonzero(inverse == c)[0]) for c in range(len(first))]


def _table(rows: list[tuple[int, int, float, int]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["s", "f", "power_cap", "nodes"])
    return pd.DataFrame(
        {
            "server": pd.Categorical.from_codes(df["s"], categories=["a", "b", "c"]),
            "fabric": pd.Categorical.from_codes(df["f"], categories=["x", "y", "z"]),
            "power_cap": df["power_cap"],
            "nodes": df["nodes"],
            "row": np.arange(len(df)),
        }
    )


options = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from([0.5, 0.8, 1.0])), max_size=6)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(opts=options, data=st.data())
def test_option_order_sorts_rows_by_server_fabric_cap_nodes(
    opts: list[tuple[int, int, float]], data: st.DataObject
) -> None:
    rows = []
    for o in opts:  # blocks of options (evaluate_space's shape), options repeated or nodes shuffled sometimes
        nodes = data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=5, unique=True))
        rows += [(*o, n) for n in (nodes if data.draw(st.booleans()) else sorted(nodes))]
    df = _table(rows)
    order = option_order(*option_keys(df, np.arange(len(df))))
    got = df if order is None else df.iloc[order]
    key = ["server", "fabric", "power_cap", "nodes"]
    expected = df.sort_values(key, kind="stable")
    assert got[key].reset_index(drop=True).equals(expected[key].reset_index(drop=True))
    if not df.duplicated(key).any():
        assert got["row"].tolist() == expected["row"].tolist()


def test_option_order_moves_whole_option_blocks_in_catalog_fabric_order() -> None:
    # server a lists fabric y before x (the catalog's order): its y block comes second once sorted
    df = _table([(0, 1, 1.0, 1), (0, 1, 1.0, 2), (0, 0, 1.0, 1), (0, 0, 1.0, 3), (1, 0, 0.5, 2)])
    order = option_order(*option_keys(df, np.arange(len(df))))
    assert order is not None and order.tolist() == [2, 3, 0, 1, 4]
    assert option_order(*option_keys(df.iloc[[2, 3, 0, 1, 4]], np.arange(5))) is None

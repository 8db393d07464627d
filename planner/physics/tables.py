"""Columnar building blocks of the evaluated table: grouping integer keys without sorting, positions by value, and
categorical columns built from codes.

The model evaluates millions of configurations per call; these are the operations its inner steps repeat, written
so that none sorts when a presence table will do and none lets pandas re-check codes that are in range by
construction.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd


def categorical(codes: np.ndarray, categories: Any) -> pd.Categorical:
    """A categorical column from codes that are in range by construction (pandas' range check skipped). The
    dtype of a list of string categories is built once (``category_dtype``)."""
    if isinstance(categories, (list, tuple)) and all(isinstance(c, str) for c in categories):
        dtype = category_dtype(tuple(categories))
    else:
        dtype = pd.CategoricalDtype(categories)
    return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)


@functools.lru_cache(maxsize=4096)
def category_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The categorical dtype of these string categories: pandas validates and indexes the categories each time a
    dtype is built (about 0.3 ms), which small tables (one configuration, a plan's alternatives) would pay for
    every column."""
    return pd.CategoricalDtype(list(categories))


def group_keys(keys: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(number of distinct keys, group of each element in key order, first element of each group), like
    np.unique(return_inverse) but by a presence table, without sorting, when the keys are small integers."""
    n = len(keys)
    top = int(keys.max()) + 1 if n else 1
    if top > 8 * n + 1_000_000:
        uniq, inverse = np.unique(keys, return_inverse=True)
        count, inverse = len(uniq), inverse.ravel()
    else:
        present = np.zeros(top, dtype=bool)
        present[keys] = True
        ids = np.cumsum(present) - 1
        count, inverse = int(ids[-1]) + 1, ids[keys]
    first = np.zeros(count, dtype=np.int64)
    first[inverse[::-1]] = np.arange(n)[::-1]
    return count, inverse, first


FEW_ROWS = 2048  # row_classes groups tables of up to this many rows by their bytes


def row_classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(one row of each class, class of each row) where a class is the rows equal in every column of ``table``
    (2-D), like np.unique(axis=0, return_index, return_inverse) but a column at a time: each column's values as
    codes (a 1-D sort), combined with the codes so far into one integer key and regrouped (``group_keys``). A
    row-wise unique sorts rows as byte strings, many times slower on wide tables. A table of few rows (wide: a
    server's rows side by side) is grouped by each row's bytes instead, in a dict (rows equal in value but not in
    bytes, 0.0 and -0.0, stay apart: never a wrong merge)."""
    n = len(table)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if n <= FEW_ROWS:
        seen: dict[bytes, int] = {}
        inverse = np.asarray([seen.setdefault(r.tobytes(), len(seen)) for r in np.ascontiguousarray(table)])
        first = np.zeros(len(seen), dtype=np.int64)
        first[inverse[::-1]] = np.arange(n)[::-1]
        return first, inverse
    key = np.zeros(n, dtype=np.int64)
    for col in table.T:
        _, codes = np.unique(col, return_inverse=True)
        _, key, _ = group_keys(key * (int(codes.max()) + 1) + codes.ravel())
    _, inverse, first = group_keys(key)
    return first, inverse


def indices_by_value(values: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(value, positions holding it) for every value >= 0, positions ascending; one sort for all values."""
    pos = np.flatnonzero(values >= 0)
    if len(pos) == 0:
        return []
    vals = values[pos]
    order = np.argsort(vals, kind="stable")
    sorted_vals = vals[order]
    starts = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1]])
    ends = np.r_[starts[1:], len(order)]
    return [(int(sorted_vals[a]), pos[order[a:b]]) for a, b in zip(starts, ends, strict=True)]


class ColumnsRow:
    """Row ``k`` of a table given as its columns (a dict of NumPy arrays, pandas Categoricals and scalars, as
    ``space.space_columns`` returns them), read by column name: an array's entry ``k``, a scalar as it is (the
    value the table would broadcast to every row). Reading a few rows so costs less than building the table."""

    __slots__ = ("_columns", "_k")

    def __init__(self, columns: dict[str, Any], k: int) -> None:
        self._columns, self._k = columns, k

    def __getitem__(self, name: str) -> Any:
        v = self._columns[name]
        return v if np.isscalar(v) else v[self._k]

    def __contains__(self, name: str) -> bool:
        return name in self._columns
